// Command oncesoak runs claim+complete cycles on distinct keys against a
// running oncekv for a while, and prints, every interval, the cycles per
// second, the server's CPU per cycle and the keys it has expired. With
// answers kept shorter than the run, it shows what the cycles cost once
// the first ones expire: the second half of the run pays for the
// deletions too (issue 6, where bench/oncebench's later rounds fell for
// that reason).
//
//	go run . --port 6390 --dir /tmp/soak &
//	go run ./bench/oncesoak -addr 127.0.0.1:6390 -pid $! -keep 20s -duration 60s
//
// -pid names the server's process, whose CPU time is read from
// /proc/PID/stat (Linux); without it the CPU column is left out. The
// clients share the machine with the server.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's times.
const clockTicks = 100

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:6379", "oncekv to run against")
	flag.IntVar(&cfg.pid, "pid", 0, "the server's process ID, for its CPU per cycle (0: not shown)")
	flag.IntVar(&cfg.clients, "clients", 50, "concurrent clients, a connection each")
	flag.DurationVar(&cfg.keep, "keep", 20*time.Second, "how long each answer is kept (COMPLETE … KEEP)")
	flag.DurationVar(&cfg.duration, "duration", 60*time.Second, "how long to run")
	flag.DurationVar(&cfg.every, "every", 5*time.Second, "interval between two lines")
	flag.Parse()
	if _, err := run(context.Background(), cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "oncesoak:", err)
		os.Exit(1)
	}
}

type config struct {
	addr            string
	pid, clients    int
	keep            time.Duration
	duration, every time.Duration
}

// interval is one printed line.
type interval struct {
	at        time.Duration // since the start
	cycles    int64         // completed in the interval
	perSecond float64
	cpuPer    time.Duration // server CPU per cycle; 0 when unknown
	expired   int64         // the server's expired_keys at the end
}

// run drives the cycles and writes a line per interval to out; it returns
// the intervals.
func run(ctx context.Context, cfg config, out io.Writer) ([]interval, error) {
	rdb := redis.NewClient(&redis.Options{Addr: cfg.addr, PoolSize: cfg.clients})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, err
	}
	prefix := "soak:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	var done atomic.Int64
	var failure atomic.Pointer[error]
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range cfg.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := cycle(ctx, rdb, prefix+strconv.Itoa(c)+":"+strconv.Itoa(i), cfg.keep); err != nil {
					failure.CompareAndSwap(nil, &err)
					return
				}
				done.Add(1)
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()

	fmt.Fprintf(out, "%d clients, answers kept %v, against %s\n", cfg.clients, cfg.keep, cfg.addr)
	var lines []interval
	start := time.Now()
	lastN, lastCPU, lastAt := int64(0), cpuTime(cfg.pid), start
	t := time.NewTicker(cfg.every)
	defer t.Stop()
	for time.Since(start) < cfg.duration {
		<-t.C
		if p := failure.Load(); p != nil {
			return lines, *p
		}
		now, n, cpu := time.Now(), done.Load(), cpuTime(cfg.pid)
		iv := interval{at: now.Sub(start).Round(time.Second), cycles: n - lastN}
		iv.perSecond = float64(iv.cycles) / now.Sub(lastAt).Seconds()
		if cfg.pid != 0 && iv.cycles > 0 {
			iv.cpuPer = (cpu - lastCPU) / time.Duration(iv.cycles)
		}
		iv.expired = expiredKeys(ctx, rdb)
		lines = append(lines, iv)
		fmt.Fprintf(out, "t=%4v  cycles/s %7.0f", iv.at, iv.perSecond)
		if cfg.pid != 0 {
			fmt.Fprintf(out, "  server CPU/cycle %6.1f µs", float64(iv.cpuPer)/float64(time.Microsecond))
		}
		fmt.Fprintf(out, "  expired keys %d\n", iv.expired)
		lastN, lastCPU, lastAt = n, cpu, now
	}
	return lines, nil
}

// cycle claims key and completes it, kept for keep.
func cycle(ctx context.Context, rdb *redis.Client, key string, keep time.Duration) error {
	r, err := rdb.Do(ctx, "once.claim", key, "lease", 30000).Slice()
	if err != nil {
		return err
	}
	if len(r) != 2 || r[0] != "claimed" {
		return fmt.Errorf("ONCE.CLAIM %s: %v", key, r)
	}
	return rdb.Do(ctx, "once.complete", key, r[1], "answer-of-"+key, "keep", keep.Milliseconds()).Err()
}

// cpuTime is the CPU time (user and system) of process pid so far; 0 when
// unknown.
func cpuTime(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	// The command name, in parentheses, may hold spaces; fields 14 and 15
	// (utime, stime) come after it.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	k, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0
	}
	return time.Duration(u+k) * time.Second / clockTicks
}

// expiredKeys reads expired_keys from INFO stats; -1 when it cannot.
func expiredKeys(ctx context.Context, rdb *redis.Client) int64 {
	info, err := rdb.Info(ctx, "stats").Result()
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "expired_keys:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}
