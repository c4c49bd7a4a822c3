// Command oncebench compares oncekv's ONCE commands with what users build
// on a real redis-server without them, and prints a markdown table:
//
//   - claim+complete cycles/s on distinct keys from many clients
//     (ONCE.CLAIM + ONCE.COMPLETE against INCR + SET NX PX + a Lua
//     compare-and-set, see workload.go for exactly what each side runs);
//   - how long waiters take to learn the answer after it is completed
//     (pushed to ONCE.CLAIM … WAIT 0 callers, against GET polling every
//     10 ms).
//
// By default it builds oncekv from the module it is run in and starts it
// and redis-server on free 127.0.0.1 ports, each in a temporary directory
// with AOF fsync everysec; -oncekv and -redis point it at running servers
// instead. Both servers and the client share the machine, so the numbers
// are only as steady as the machine is idle.
//
//	go run ./bench/oncebench            # about 1.5 minutes
//	go run ./bench/oncebench -quick     # a few seconds, to check it runs
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type options struct {
	onceAddr, redisAddr string
	onceBin, repo       string
	redisBin            string
	fsync               string
	clients             int
	duration, warmup    time.Duration
	rounds              int
	luaClaim            bool
	waiters             []int
	wakeSamples         int
	wakeMinRounds       int
	poll                time.Duration
	timeout             time.Duration
	answerSize          int
	out                 string
}

func main() {
	o := options{}
	var waiters string
	var quick bool
	flag.StringVar(&o.onceAddr, "oncekv", "", "address of a running oncekv to use (default: build and start one)")
	flag.StringVar(&o.redisAddr, "redis", "", "address of a running redis-server to use (default: start one)")
	flag.StringVar(&o.onceBin, "oncekv-bin", "", "oncekv binary to start (default: go build the module at -repo)")
	flag.StringVar(&o.repo, "repo", "", "root of the oncekv module to build (default: found from the working directory)")
	flag.StringVar(&o.redisBin, "redis-server", "redis-server", "redis-server binary to start")
	flag.StringVar(&o.fsync, "fsync", "everysec", "appendfsync policy of the servers started (always, everysec, no)")
	flag.IntVar(&o.clients, "clients", 50, "concurrent clients (one connection each) for the cycle benchmark")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "length of one timed cycle round per system")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "untimed cycle run per system before the rounds")
	flag.IntVar(&o.rounds, "rounds", 3, "timed cycle rounds per system, alternating between systems; the median counts")
	flag.BoolVar(&o.luaClaim, "lua-claim", true, "also measure the baseline with its claim in one Lua script (2 round trips)")
	flag.StringVar(&waiters, "waiters", "1,50,1000", "comma-separated waiter counts for the wake-up benchmark")
	flag.IntVar(&o.wakeSamples, "wake-samples", 500, "wake-up samples wanted per waiter count and system (rounds = samples/waiters)")
	flag.IntVar(&o.wakeMinRounds, "wake-min-rounds", 10, "wake-up rounds (keys) at least, per waiter count and system")
	flag.DurationVar(&o.poll, "poll", 10*time.Millisecond, "baseline waiters' GET polling interval")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Second, "bound on any one wake-up round")
	flag.IntVar(&o.answerSize, "answer-size", 32, "bytes in each answer")
	flag.StringVar(&o.out, "o", "", "also write the markdown to this file")
	flag.BoolVar(&quick, "quick", false, "a short run to check that everything works (overrides sizes)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: go run ./bench/oncebench [flags]\n\n"+
			"Measures claim+complete cycles/s and waiter wake-up latency on oncekv (ONCE.*)\n"+
			"against the usual SET NX + Lua CAS + GET polling on redis-server, and prints\n"+
			"a markdown table. Needs redis-server (apt-get install -y redis-server).\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if quick {
		o.duration, o.warmup, o.rounds = 500*time.Millisecond, 200*time.Millisecond, 1
		o.wakeSamples, o.wakeMinRounds = 20, 3
	}
	for f := range strings.SplitSeq(waiters, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fatalf("-waiters: %q is not a positive count", f)
		}
		o.waiters = append(o.waiters, n)
	}
	if o.clients < 1 || o.rounds < 1 || o.duration <= 0 || o.answerSize < 1 {
		fatalf("-clients, -rounds, -duration and -answer-size must be positive")
	}
	if err := run(o); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "oncebench: "+format+"\n", args...)
	os.Exit(1)
}

// cleanup runs registered functions once, at the end or on a signal.
type cleanup struct {
	mu  sync.Mutex
	fns []func()
}

func (c *cleanup) add(f func()) {
	c.mu.Lock()
	c.fns = append(c.fns, f)
	c.mu.Unlock()
}

func (c *cleanup) run() {
	c.mu.Lock()
	fns := c.fns
	c.fns = nil
	c.mu.Unlock()
	for _, f := range slices.Backward(fns) {
		f()
	}
}

func run(o options) error {
	maxW := slices.Max(o.waiters)
	if err := raiseNofile(uint64(2*maxW + 2*o.clients + 256)); err != nil {
		fmt.Fprintf(os.Stderr, "oncebench: raising the open-file limit: %v\n", err)
	}
	var cl cleanup
	defer cl.run()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "oncebench: %v, stopping the servers\n", s)
		cl.run()
		os.Exit(130)
	}()

	tmp, err := os.MkdirTemp("", "oncebench-")
	if err != nil {
		return err
	}
	cl.add(func() { os.RemoveAll(tmp) })

	onceAddr, redisAddr := o.onceAddr, o.redisAddr
	onceNote, redisNote := "external", "external"
	if redisAddr == "" {
		dir := filepath.Join(tmp, "redis")
		p, err := startRedis(o.redisBin, dir, o.fsync)
		if err != nil {
			return fmt.Errorf("%w (is redis-server installed? apt-get install -y redis-server)", err)
		}
		cl.add(p.stop)
		redisAddr, redisNote = p.addr, "started here, appendonly yes, appendfsync "+o.fsync+", save \"\""
	}
	if onceAddr == "" {
		bin := o.onceBin
		if bin == "" {
			repo := o.repo
			if repo == "" {
				if repo, err = findRepo(); err != nil {
					return err
				}
			}
			fmt.Fprintf(os.Stderr, "oncebench: building oncekv in %s\n", repo)
			if bin, err = buildOncekv(repo, filepath.Join(tmp, "bin")); err != nil {
				return err
			}
		}
		p, err := startOncekv(bin, filepath.Join(tmp, "oncekv"), o.fsync)
		if err != nil {
			return err
		}
		cl.add(p.stop)
		onceAddr, onceNote = p.addr, "started here, appendfsync "+o.fsync
	}

	rc, err := dial(redisAddr)
	if err != nil {
		return err
	}
	defer rc.close()
	sc, err := loadScripts(rc)
	if err != nil {
		return err
	}
	prefix := fmt.Sprintf("oncebench:%d:%d:", os.Getpid(), time.Now().UnixNano())
	answer := strings.Repeat("a", o.answerSize)
	systems := []system{newOnceSystem(onceAddr, prefix), newBaseSystem(redisAddr, prefix, sc)}
	if o.luaClaim {
		systems = append(systems, newLuaClaimSystem(redisAddr, prefix+"lua:", sc))
	}

	load0 := loadavg()
	start := time.Now()

	// Cycles: a warm-up per system, then rounds alternating between them.
	results := make([][]cycleResult, len(systems))
	for _, s := range systems {
		if o.warmup > 0 {
			if _, err := runCycles(s, o.clients, o.warmup, "warm", answer); err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
		}
	}
	for r := range o.rounds {
		for i, s := range systems {
			res, err := runCycles(s, o.clients, o.duration, "r"+strconv.Itoa(r), answer)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			results[i] = append(results[i], res)
			fmt.Fprintf(os.Stderr, "oncebench: cycles round %d %-60s %8.0f/s\n", r+1, s.name, res.rate())
		}
	}

	// Wake-ups: rounds alternating between oncekv and the baseline.
	wakes, err := measureWakeups(o, onceAddr, redisAddr, sc, prefix, answer)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)

	var b strings.Builder
	report(&b, o, systems, results, wakes, reportInfo{
		onceAddr: onceAddr, redisAddr: redisAddr, onceNote: onceNote, redisNote: redisNote,
		onceVersion:  infoField(onceAddr, "oncekv_version"),
		redisVersion: infoField(redisAddr, "redis_version"),
		load0:        load0, load1: loadavg(), elapsed: elapsed,
	})
	fmt.Print(b.String())
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// wakeResult holds the latencies of one waiter count.
type wakeResult struct {
	waiters     int
	rounds      int
	once, redis []time.Duration
}

func measureWakeups(o options, onceAddr, redisAddr string, sc scripts, prefix, answer string) ([]wakeResult, error) {
	maxW := slices.Max(o.waiters)
	onceRun, err := dial(onceAddr)
	if err != nil {
		return nil, err
	}
	defer onceRun.close()
	redisRun, err := dial(redisAddr)
	if err != nil {
		return nil, err
	}
	defer redisRun.close()
	onceWs, err := dialN(onceAddr, maxW)
	if err != nil {
		return nil, fmt.Errorf("oncekv: %d waiter connections: %w", maxW, err)
	}
	defer closeAll(onceWs)
	redisWs, err := dialN(redisAddr, maxW)
	if err != nil {
		return nil, fmt.Errorf("redis: %d poller connections: %w", maxW, err)
	}
	defer closeAll(redisWs)

	var out []wakeResult
	for _, n := range o.waiters {
		rounds := max(o.wakeMinRounds, (o.wakeSamples+n-1)/n)
		w := wakeResult{waiters: n, rounds: rounds}
		for r := range rounds {
			key := prefix + "wake:" + strconv.Itoa(n) + ":" + strconv.Itoa(r)
			lat, err := onceWakeRound(onceRun, onceWs[:n], key, answer, o.timeout)
			if err != nil {
				return nil, fmt.Errorf("oncekv wake-up, %d waiters: %w", n, err)
			}
			w.once = append(w.once, lat...)
			lat, err = pollWakeRound(redisRun, redisWs[:n], sc, prefix+"fence", key, answer, o.poll, o.timeout)
			if err != nil {
				return nil, fmt.Errorf("redis polling wake-up, %d waiters: %w", n, err)
			}
			w.redis = append(w.redis, lat...)
		}
		fmt.Fprintf(os.Stderr, "oncebench: wake-up %4d waiters: oncekv p50 %s, polling p50 %s\n",
			n, fmtDur(percentile(w.once, 0.5)), fmtDur(percentile(w.redis, 0.5)))
		out = append(out, w)
	}
	return out, nil
}

type reportInfo struct {
	onceAddr, redisAddr, onceNote, redisNote string
	onceVersion, redisVersion                string
	load0, load1                             string
	elapsed                                  time.Duration
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func report(w io.Writer, o options, systems []system, results [][]cycleResult, wakes []wakeResult, in reportInfo) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	host, _ := os.Hostname()
	p("## ONCE benchmark: oncekv %s vs redis-server %s\n\n", in.onceVersion, in.redisVersion)
	p("- oncekv %s (%s); redis-server %s (%s)\n", in.onceAddr, in.onceNote, in.redisAddr, in.redisNote)
	p("- client: this process, one connection per client, RESP2, loopback; %d CPUs, GOMAXPROCS %d, %s/%s, host %s\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, host)
	p("- load average before %s, after %s; run took %s. Servers and client share the CPUs:\n"+
		"  other load on the machine moves these numbers, so compare rows of one run.\n\n", in.load0, in.load1, in.elapsed.Round(time.Second))

	p("### Claim+complete cycles/s, distinct keys, %d clients\n\n", o.clients)
	p("%d rounds of %s per system, alternating (after %s warm-up each); median round; latency over all cycles of all rounds.\n\n",
		o.rounds, o.duration, o.warmup)
	p("| system | round trips/cycle | cycles/s (median) | min–max of rounds | cycle p50 | cycle p99 |\n")
	p("|---|---:|---:|---:|---:|---:|\n")
	medians := make([]float64, len(systems))
	for i, s := range systems {
		var rates []float64
		var lat []time.Duration
		for _, r := range results[i] {
			rates = append(rates, r.rate())
			lat = append(lat, r.lat...)
		}
		medians[i] = median(rates)
		p("| %s | %d | %.0f | %.0f–%.0f | %s | %s |\n", s.name, s.rtts, medians[i],
			slices.Min(rates), slices.Max(rates), fmtDur(percentile(lat, 0.5)), fmtDur(percentile(lat, 0.99)))
	}
	p("\n**Ratio oncekv / redis baseline (cycles/s): %.2f×**", medians[0]/medians[1])
	if len(systems) > 2 {
		p(" (oncekv / one-script-claim variant: %.2f×)", medians[0]/medians[2])
	}
	p("\n\n")

	p("### Waiter wake-up latency after COMPLETE\n\n")
	p("Latency = arrival of a waiter's answer − the moment just before the completing command was written.\n")
	p("oncekv: N connections blocked in `ONCE.CLAIM k WAIT 0` (all N confirmed waiting with ONCE.STATUS), runner sends `ONCE.COMPLETE`.\n")
	p("redis: N connections polling `GET k` with a %s sleep between polls (random start phase; once all have seen the key running, the runner waits a random fraction of the interval and sends the EVALSHA CAS).\n", o.poll)
	p("Each round is a fresh key; rounds alternate between the two servers.\n\n")
	p("| waiters | rounds | samples each | oncekv p50 | oncekv p99 | redis GET poll p50 | redis GET poll p99 |\n")
	p("|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, wk := range wakes {
		p("| %d | %d | %d | %s | %s | %s | %s |\n", wk.waiters, wk.rounds, len(wk.once),
			fmtDur(percentile(wk.once, 0.5)), fmtDur(percentile(wk.once, 0.99)),
			fmtDur(percentile(wk.redis, 0.5)), fmtDur(percentile(wk.redis, 0.99)))
	}
	p("\nWhat each side runs (answer: %d bytes):\n\n", o.answerSize)
	p("- oncekv cycle: `ONCE.CLAIM k LEASE 30000` → `[\"claimed\", tok]`; `ONCE.COMPLETE k tok <answer> KEEP 60000` → `+OK`.\n")
	p("- redis baseline cycle: `INCR <fence>` → tok (one counter, so tokens only grow: fencing as in ONCE); " +
		"`SET k running:<tok> NX PX 30000` → `OK`; `EVALSHA <cas> 1 k tok <answer> 60000`, where the script, " +
		"if `GET k` is still `running:<tok>`, does `SET k done:<answer> PX 60000` and returns 1, else changes nothing and returns 0 (stale).\n")
	if len(systems) > 2 {
		p("- one-script-claim variant (extra row): `EVALSHA <claim> 2 k <fence> 30000` does the GET, INCR and SET … PX in one call " +
			"and answers like ONCE.CLAIM; then the same CAS script.\n")
	}
	p("\n")
}

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
