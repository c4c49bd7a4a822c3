// Command oncebench compares oncekv's ONCE commands with what users build
// on a real redis-server without them, and prints a markdown report:
//
//   - claim+complete cycles/s on distinct keys from 50 clients, ONCE.CLAIM
//     and ONCE.COMPLETE against the go-redis + Lua baselines (SET NX or a
//     claim script, then a Lua compare-and-set; see workload.go and
//     goredis.go for exactly what each side runs), with go-redis on both
//     sides, and again with a minimal raw RESP client to show the
//     servers' cost without the client's;
//   - how long waiters take to learn the answer after it is completed:
//     pushed to ONCE.CLAIM … WAIT 0 callers, against GET polling every
//     10 ms (up to 1000 waiters); and, as a reference for what any server
//     pays to wake that many blocked clients, redis-server's own push
//     paths measured the same way: one PUBLISH to N subscribers of one
//     channel, and one RPUSH of N elements to N clients in BLPOP on one
//     list (see wakeref.go);
//   - the floors, what this machine allows any server (floor.go): a cycle
//     of two PINGs on each server, a wake-up with no server at all, this
//     process writing the reply to N loopback connections it accepted,
//     and one with no network either, N goroutines of this process woken
//     by closing one channel.
//
// By default it builds oncekv from the module it is run in and starts it
// and redis-server on free 127.0.0.1 ports, each in a temporary directory
// with AOF fsync everysec; -oncekv and -redis point it at running servers
// instead. Both servers and the client share the machine, so the numbers
// are only as steady as the machine is idle.
//
//	go run ./bench/oncebench                  # about 3 minutes
//	go run ./bench/oncebench -quick           # a few seconds, to check it runs
//	go run ./bench/oncebench -parts wakeup    # the wake-up latencies alone
package main

import (
	"encoding/json"
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

	"github.com/oncekv/oncekv/bench/internal/benchkit"
	"github.com/oncekv/oncekv/bench/internal/oncejson"
)

type options struct {
	onceAddr, redisAddr string
	onceBin, repo       string
	redisBin            string
	fsync               string
	clients             int
	clientLibs          []string
	duration, warmup    time.Duration
	rounds              int
	waiters             []int
	cycles, wakeups     bool     // the parts run
	floors              bool     // also run the PING + PING floors of the cycles
	wakeRefs            []string // the reference wake-ups run on redis-server
	wakeSamples         int
	wakeMinRounds       int
	poll                time.Duration
	timeout             time.Duration
	answerSize          int
	wakeReader          string
	out, jsonOut        string
}

func main() {
	o := options{}
	var waiters, libs, parts, refs string
	var quick bool
	flag.StringVar(&o.onceAddr, "oncekv", "", "address of a running oncekv to use (default: build and start one)")
	flag.StringVar(&o.redisAddr, "redis", "", "address of a running redis-server to use (default: start one)")
	flag.StringVar(&o.onceBin, "oncekv-bin", "", "oncekv binary to start (default: go build the module at -repo)")
	flag.StringVar(&o.repo, "repo", "", "root of the oncekv module to build (default: found from the working directory)")
	flag.StringVar(&o.redisBin, "redis-server", "redis-server", "redis-server binary to start")
	flag.StringVar(&o.fsync, "fsync", "everysec", "appendfsync policy of the servers started (always, everysec, no)")
	flag.IntVar(&o.clients, "clients", 50, "concurrent clients (goroutines, one connection each) for the cycle benchmark")
	flag.StringVar(&libs, "client", "go-redis,raw", "client libraries of the cycle benchmark: go-redis, raw or both")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "length of one timed cycle round per system")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "untimed cycle run per system before the rounds")
	flag.IntVar(&o.rounds, "rounds", 3, "timed cycle rounds per system, alternating between systems; the median counts")
	flag.BoolVar(&o.floors, "floors", true, "also measure the floor of a cycle: PING + PING on each server (the most two-round-trip cycles/s the client and machine allow)")
	flag.StringVar(&parts, "parts", "cycles,wakeup", "the parts to run: cycles (claim+complete cycles/s), wakeup (waiter wake-up latency) or both")
	flag.StringVar(&waiters, "waiters", "1,50,1000", "comma-separated waiter counts for the wake-up benchmark")
	flag.StringVar(&refs, "wake-refs", strings.Join(allWakeRefs, ","), "what the wake-up benchmark also measures: on redis-server publish (PUBLISH to N subscribers), blpop (one RPUSH to N clients in BLPOP), poll (GET polling); loopback (the floor: this process writes the reply to N connections it accepted, no server); goroutines (the floor with no network: N goroutines of this process woken by closing one channel); any of them or none")
	flag.IntVar(&o.wakeSamples, "wake-samples", 500, "wake-up samples wanted per waiter count and system (rounds = samples/waiters)")
	flag.IntVar(&o.wakeMinRounds, "wake-min-rounds", 10, "wake-up rounds (keys) at least, per waiter count and system")
	flag.DurationVar(&o.poll, "poll", 10*time.Millisecond, "baseline waiters' GET polling interval")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Second, "bound on any one wake-up round")
	flag.StringVar(&o.wakeReader, "wake-reader", defaultWakeReader(), "how the wake-up benchmark reads the waiters' replies: epoll (one goroutine, Linux) or goroutines (one per waiter)")
	flag.IntVar(&o.answerSize, "answer-size", 32, "bytes in each answer")
	flag.StringVar(&o.out, "o", "", "also write the markdown to this file")
	flag.StringVar(&o.jsonOut, "json", "", "also write the headline figures as JSON to this file")
	keep := flag.Duration("keep", time.Minute, "how long ONCE.COMPLETE (and the baseline's SET PX) keeps each answer")
	flag.BoolVar(&quick, "quick", false, "a short run to check that everything works (overrides sizes)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: go run ./bench/oncebench [flags]\n\n"+
			"Measures claim+complete cycles/s and waiter wake-up latency on oncekv (ONCE.*)\n"+
			"against the usual go-redis + Lua + GET polling on redis-server, and prints\n"+
			"a markdown report. Needs redis-server (apt-get install -y redis-server).\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if *keep < time.Millisecond {
		fmt.Fprintln(os.Stderr, "oncebench: -keep must be at least 1ms")
		os.Exit(2)
	}
	keepMs = strconv.FormatInt(keep.Milliseconds(), 10)
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
	for f := range strings.SplitSeq(parts, ",") {
		switch f = strings.TrimSpace(f); f {
		case "cycles":
			o.cycles = true
		case "wakeup":
			o.wakeups = true
		default:
			fatalf("-parts: %q is neither cycles nor wakeup", f)
		}
	}
	for f := range strings.SplitSeq(refs, ",") {
		switch f = strings.TrimSpace(f); {
		case f == "" || f == "none":
		case slices.Contains(allWakeRefs, f):
			if !slices.Contains(o.wakeRefs, f) {
				o.wakeRefs = append(o.wakeRefs, f)
			}
		default:
			fatalf("-wake-refs: %q is not one of %s", f, strings.Join(allWakeRefs, ", "))
		}
	}
	for f := range strings.SplitSeq(libs, ",") {
		switch f = strings.TrimSpace(f); f {
		case clientGoRedis, clientRaw:
			if !slices.Contains(o.clientLibs, f) {
				o.clientLibs = append(o.clientLibs, f)
			}
		default:
			fatalf("-client: %q is neither %s nor %s", f, clientGoRedis, clientRaw)
		}
	}
	if o.wakeReader != readerEpoll && o.wakeReader != readerGoroutines {
		fatalf("-wake-reader: %q is neither %s nor %s", o.wakeReader, readerEpoll, readerGoroutines)
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

// startServers starts the servers o does not name, and returns their
// addresses and how they were started.
func startServers(o options, tmp string, cl *cleanup) (onceAddr, redisAddr, onceNote, redisNote string, err error) {
	onceAddr, redisAddr = o.onceAddr, o.redisAddr
	onceNote, redisNote = "external", "external"
	if redisAddr == "" {
		p, err := benchkit.StartRedis(o.redisBin, filepath.Join(tmp, "redis"), o.fsync)
		if err != nil {
			return "", "", "", "", fmt.Errorf("%w (is redis-server installed? apt-get install -y redis-server)", err)
		}
		cl.add(p.Stop)
		redisAddr, redisNote = p.Addr, "started here: `"+p.CommandLine()+"`"
	}
	if onceAddr == "" {
		bin := o.onceBin
		if bin == "" {
			repo := o.repo
			if repo == "" {
				if repo, err = benchkit.FindRepo(); err != nil {
					return "", "", "", "", fmt.Errorf("%w: give -repo, -oncekv-bin or -oncekv", err)
				}
			}
			fmt.Fprintf(os.Stderr, "oncebench: building oncekv in %s\n", repo)
			if bin, err = benchkit.BuildOncekv(repo, filepath.Join(tmp, "bin")); err != nil {
				return "", "", "", "", err
			}
		}
		p, err := benchkit.StartOncekv(bin, filepath.Join(tmp, "oncekv"), o.fsync)
		if err != nil {
			return "", "", "", "", err
		}
		cl.add(p.Stop)
		onceAddr, onceNote = p.Addr, "started here: `"+p.CommandLine()+"`"
	}
	return onceAddr, redisAddr, onceNote, redisNote, nil
}

func run(o options) error {
	maxW := slices.Max(o.waiters)
	if err := benchkit.RaiseNofile(uint64(2*maxW + 8*o.clients + 256)); err != nil {
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
	onceAddr, redisAddr, onceNote, redisNote, err := startServers(o, tmp, &cl)
	if err != nil {
		return err
	}

	rc, err := dial(redisAddr)
	if err != nil {
		return err
	}
	defer rc.Close()
	sc, err := loadScripts(rc)
	if err != nil {
		return err
	}
	prefix := fmt.Sprintf("oncebench:%d:%d:", os.Getpid(), time.Now().UnixNano())
	answer := strings.Repeat("a", o.answerSize)
	var systems []system
	if !o.cycles {
		o.clientLibs = nil
	}
	for _, lib := range o.clientLibs {
		p := func() string { return prefix + "s" + strconv.Itoa(len(systems)) + ":" }
		switch lib {
		case clientGoRedis:
			systems = append(systems, newGoOnceSystem(onceAddr, p()))
			systems = append(systems, newGoKVSystem(onceAddr, p()))
			systems = append(systems, newGoLuaClaimSystem(redisAddr, p()))
			systems = append(systems, newGoSetNXSystem(redisAddr, p()))
			systems = append(systems, newGoIncrSystem(redisAddr, p()))
			if o.floors {
				systems = append(systems, newGoPingSystem(floorOncekv, true, onceAddr, p()))
				systems = append(systems, newGoPingSystem(floorRedis, false, redisAddr, p()))
			}
		case clientRaw:
			systems = append(systems, newOnceSystem(onceAddr, p()))
			systems = append(systems, newLuaClaimSystem(redisAddr, p(), sc))
			systems = append(systems, newBaseSystem(redisAddr, p(), sc))
			if o.floors {
				systems = append(systems, newPingSystem(floorOncekv, true, onceAddr, p()))
				systems = append(systems, newPingSystem(floorRedis, false, redisAddr, p()))
			}
		}
	}

	load0 := loadavg()
	start := time.Now()

	// Cycles: every system's workers opened (connections dialled) and
	// warmed up, then rounds alternating between the systems.
	workers := make([][]cycleFunc, len(systems))
	for i, s := range systems {
		fns, closeFn, err := s.open(o.clients)
		if err != nil {
			return fmt.Errorf("%s (%s): %w", s.name, s.client, err)
		}
		cl.add(closeFn)
		workers[i] = fns
		if o.warmup > 0 {
			if _, err := runCycles(fns, s.prefix, o.warmup, "warm", answer); err != nil {
				return fmt.Errorf("%s (%s): %w", s.name, s.client, err)
			}
		}
	}
	results := make([][]cycleResult, len(systems))
	for r := range o.rounds {
		for i, s := range systems {
			res, err := runCycles(workers[i], s.prefix, o.duration, "r"+strconv.Itoa(r), answer)
			if err != nil {
				return fmt.Errorf("%s (%s): %w", s.name, s.client, err)
			}
			results[i] = append(results[i], res)
			fmt.Fprintf(os.Stderr, "oncebench: cycles round %d %-8s %-50s %8.0f/s\n", r+1, s.client, s.name, res.rate())
		}
	}

	// Wake-ups: rounds alternating between oncekv, the references and the
	// baseline.
	var wakes []wakeResult
	if o.wakeups {
		if wakes, err = measureWakeups(o, onceAddr, redisAddr, sc, prefix, answer); err != nil {
			return err
		}
	}
	elapsed := time.Since(start)

	sum := summarize(o, systems, results, wakes)
	var b strings.Builder
	report(&b, o, systems, results, wakes, sum, reportInfo{
		onceAddr: onceAddr, redisAddr: redisAddr, onceNote: onceNote, redisNote: redisNote,
		onceVersion:  benchkit.InfoField(onceAddr, "server", "oncekv_version"),
		redisVersion: benchkit.InfoField(redisAddr, "server", "redis_version"),
		load0:        load0, load1: loadavg(), elapsed: elapsed,
	})
	fmt.Print(b.String())
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	if o.jsonOut != "" {
		j, err := json.MarshalIndent(sum, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.jsonOut, append(j, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// wakeResult holds the latencies of one waiter count: oncekv's, GET
// polling's (redis) and the redis-server references'.
type wakeResult struct {
	waiters        int
	rounds         int
	once, redis    []time.Duration
	publish, blpop []time.Duration
	loopback       []time.Duration // the floor: no server
	goroutines     []time.Duration // the floor with no network
	// onceExpired is how many keys oncekv expired while these rounds
	// ran (INFO stats expired_keys); -1 when unknown. The cycle part's
	// answers, kept -keep, expire during the wake-ups that follow it, and
	// the sweeper's and the deletions' work then shares the CPU.
	onceExpired int64
}

func measureWakeups(o options, onceAddr, redisAddr string, sc scripts, prefix, answer string) ([]wakeResult, error) {
	maxW := slices.Max(o.waiters)
	onceRun, err := dial(onceAddr)
	if err != nil {
		return nil, err
	}
	defer onceRun.Close()
	redisRun, err := dial(redisAddr)
	if err != nil {
		return nil, err
	}
	defer redisRun.Close()
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
	var lb *loopback
	if slices.Contains(o.wakeRefs, refLoopback) {
		if lb, err = openLoopback(maxW); err != nil {
			return nil, fmt.Errorf("loopback floor: %d connections: %w", maxW, err)
		}
		defer lb.close()
	}

	var out []wakeResult
	for _, n := range o.waiters {
		rounds := max(o.wakeMinRounds, (o.wakeSamples+n-1)/n)
		w := wakeResult{waiters: n, rounds: rounds}
		expired0 := expiredKeys(onceAddr)
		for r := range rounds {
			key := prefix + "wake:" + strconv.Itoa(n) + ":" + strconv.Itoa(r)
			lat, err := onceWakeRound(onceRun, onceWs[:n], key, answer, o.timeout, o.wakeReader)
			if err != nil {
				return nil, fmt.Errorf("oncekv wake-up, %d waiters: %w", n, err)
			}
			w.once = append(w.once, lat...)
			for _, ref := range o.wakeRefs {
				switch ref {
				case refPublish:
					lat, err = publishWakeRound(redisRun, redisWs[:n], key, answer, o.timeout, o.wakeReader)
					w.publish = append(w.publish, lat...)
				case refBlpop:
					lat, err = blpopWakeRound(redisRun, redisWs[:n], key+":list", answer, o.timeout, o.wakeReader)
					w.blpop = append(w.blpop, lat...)
				case refPoll:
					lat, err = pollWakeRound(redisRun, redisWs[:n], sc, prefix+"fence", key, answer, o.poll, o.timeout)
					w.redis = append(w.redis, lat...)
				case refLoopback:
					lat, err = loopbackWakeRound(lb, n, answer, o.timeout, o.wakeReader)
					w.loopback = append(w.loopback, lat...)
				case refGoroutines:
					w.goroutines = append(w.goroutines, goroutineWakeRound(n, goroutineSettle)...)
				}
				if err != nil {
					return nil, fmt.Errorf("redis %s wake-up, %d waiters: %w", ref, n, err)
				}
			}
		}
		w.onceExpired = -1
		if expired0 >= 0 {
			if e := expiredKeys(onceAddr); e >= expired0 {
				w.onceExpired = e - expired0
			}
		}
		line := fmt.Sprintf("oncebench: wake-up %4d waiters: oncekv p50 %s p99 %s", n, fmtDur(percentile(w.once, 0.5)), fmtDur(percentile(w.once, 0.99)))
		for _, r := range []struct {
			name string
			lat  []time.Duration
		}{{"redis PUBLISH", w.publish}, {"redis BLPOP", w.blpop}, {"GET polling", w.redis}, {"loopback floor", w.loopback}, {"goroutine floor", w.goroutines}} {
			if len(r.lat) > 0 {
				line += fmt.Sprintf(", %s p50 %s p99 %s", r.name, fmtDur(percentile(r.lat, 0.5)), fmtDur(percentile(r.lat, 0.99)))
			}
		}
		if w.onceExpired > 0 {
			line += fmt.Sprintf(" (oncekv expired %d keys meanwhile)", w.onceExpired)
		}
		fmt.Fprintln(os.Stderr, line)
		out = append(out, w)
	}
	return out, nil
}

// expiredKeys reads the keys a server has expired so far (INFO stats
// expired_keys); -1 when it cannot.
func expiredKeys(addr string) int64 {
	n, err := strconv.ParseInt(benchkit.InfoField(addr, "stats", "expired_keys"), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// The headline figures, written with -json for the harness that puts
// them in BENCHMARKS.md (package oncejson, which the harness reads with).
type (
	summary    = oncejson.Summary
	cycleRow   = oncejson.Cycle
	ratioRow   = oncejson.Ratio
	wakeRowSum = oncejson.Wakeup
)

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func summarize(o options, systems []system, results [][]cycleResult, wakes []wakeResult) summary {
	sum := summary{Clients: o.clients}
	for i, s := range systems {
		var rates []float64
		var lat []time.Duration
		for _, r := range results[i] {
			rates = append(rates, r.rate())
			lat = append(lat, r.lat...)
		}
		sum.Cycles = append(sum.Cycles, cycleRow{
			Client: s.client, System: s.name, Oncekv: s.oncekv, Floor: s.floor, RTTs: s.rtts, Median: median(rates),
			P50Micro: us(percentile(lat, 0.5)), P99Micro: us(percentile(lat, 0.99)),
		})
	}
	for _, lib := range o.clientLibs {
		r := ratioRow{Client: lib}
		for i, c := range sum.Cycles {
			switch {
			case c.Client != lib:
			case c.Floor && c.Oncekv:
				r.OncekvFloor = c.Median
			case c.Floor:
				r.RedisFloor = c.Median
			case c.Oncekv && !systems[i].extra:
				r.Oncekv = c.Median // plain ONCE.* commands
			case !c.Oncekv && c.Median > r.Baseline:
				r.Baseline, r.BestBaseline = c.Median, c.System
			}
		}
		if r.Baseline > 0 {
			r.Ratio = r.Oncekv / r.Baseline
		}
		sum.Ratios = append(sum.Ratios, r)
	}
	for _, w := range wakes {
		sum.Wakeups = append(sum.Wakeups, wakeRowSum{
			Waiters: w.waiters, Samples: len(w.once),
			OnceP50us: us(percentile(w.once, 0.5)), OnceP99us: us(percentile(w.once, 0.99)),
			PublishP50us: us(percentile(w.publish, 0.5)), PublishP99us: us(percentile(w.publish, 0.99)),
			BlpopP50us: us(percentile(w.blpop, 0.5)), BlpopP99us: us(percentile(w.blpop, 0.99)),
			PollP50us: us(percentile(w.redis, 0.5)), PollP99us: us(percentile(w.redis, 0.99)),
			LoopbackP50us: us(percentile(w.loopback, 0.5)), LoopbackP99us: us(percentile(w.loopback, 0.99)),
			GoroutinesP50us: us(percentile(w.goroutines, 0.5)), GoroutinesP99us: us(percentile(w.goroutines, 0.99)),
			PollPeriod: o.poll.String(), Reader: o.wakeReader,
			OnceExpiredKeys: max(w.onceExpired, 0),
		})
	}
	return sum
}

type reportInfo struct {
	onceAddr, redisAddr, onceNote, redisNote string
	onceVersion, redisVersion                string
	load0, load1                             string
	elapsed                                  time.Duration
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func report(w io.Writer, o options, systems []system, results [][]cycleResult, wakes []wakeResult, sum summary, in reportInfo) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	host, _ := os.Hostname()
	p("### Setup\n\n")
	p("- oncekv %s at %s, %s\n- redis-server %s at %s, %s\n", in.onceVersion, in.onceAddr, in.onceNote, in.redisVersion, in.redisAddr, in.redisNote)
	p("- client: this process, loopback; %d CPUs, GOMAXPROCS %d, %s/%s, host %s\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, host)
	p("- load average before %s, after %s; run took %s. Servers and client share the CPUs:\n"+
		"  other load on the machine moves these numbers, so compare rows of one run.\n\n", in.load0, in.load1, in.elapsed.Round(time.Second))

	if len(systems) > 0 {
		p("### Claim+complete cycles/s, distinct keys, %d clients\n\n", o.clients)
		p("Each cycle claims a fresh key and completes it. %d rounds of %s per system, alternating "+
			"between all systems (after a %s warm-up each); median of the rounds; latency over all cycles of all rounds. "+
			"go-redis: %d goroutines share one `*redis.Client` with a pool of %d connections (v9 defaults otherwise, RESP3); "+
			"raw: one connection per goroutine with a minimal RESP2 client, to show the servers' cost without go-redis's.\n\n",
			o.rounds, o.duration, o.warmup, o.clients, o.clients)
		p("| client | system | round trips | cycles/s (median) | min–max of rounds | cycle p50 | cycle p99 |\n")
		p("|---|---|---:|---:|---:|---:|---:|\n")
		for i, s := range systems {
			var rates []float64
			for _, r := range results[i] {
				rates = append(rates, r.rate())
			}
			c := sum.Cycles[i]
			p("| %s | %s | %d | %.0f | %.0f–%.0f | %s | %s |\n", s.client, s.name, s.rtts, c.Median,
				slices.Min(rates), slices.Max(rates), fmtUs(c.P50Micro), fmtUs(c.P99Micro))
		}
		p("\n")
		for _, r := range sum.Ratios {
			p("- **%s: oncekv / fastest baseline = %.2f×** (%.0f vs %.0f cycles/s, baseline: %s)\n",
				r.Client, r.Ratio, r.Oncekv, r.Baseline, r.BestBaseline)
			if r.RedisFloor > 0 {
				p("- %s, floor: two PINGs a cycle, no work, %.0f cycles/s on redis-server and %.0f on oncekv. "+
					"Twice the fastest baseline, %.0f cycles/s, is %.2f× what redis-server answers doing nothing with this client on this machine.\n",
					r.Client, r.RedisFloor, r.OncekvFloor, 2*r.Baseline, 2*r.Baseline/r.RedisFloor)
			}
		}
		p("\n")
		p("What each system runs (answer: %d bytes; lease 30 s, keep %s):\n\n", o.answerSize, keepText())
		p("- oncekv: `ONCE.CLAIM k LEASE 30000` → `[\"claimed\", tok]`; `ONCE.COMPLETE k tok <answer> KEEP %s` → `+OK`.\n", keepMs)
		p("- oncekv via kv.Once.Run: `kv.OpenOnce[string](kv.New(rdb), name, kv.Keep(%s), kv.Lease(30s)).Run(ctx, key, fn)`, "+
			"fn returning the answer at once: `ONCE.CLAIM name:k … WAIT …` then `ONCE.COMPLETE`, JSON-encoded answer.\n", keepText())
		p("- redis: EVALSHA claim + EVALSHA CAS: a claim script (`GET k`; if absent `INCR <fence>` and `SET k running:<tok> PX 30000`; "+
			"answers like ONCE.CLAIM), then the CAS script: if `GET k` is still `running:<tok>`, `SET k done:<answer> PX %s` and return 1, "+
			"else change nothing and return 0 (stale). Same answers and fencing as ONCE, two round trips.\n", keepMs)
		p("- redis: SET NX PX (random token) + EVALSHA CAS: `SET k running:<random> NX PX 30000`, then the CAS script. " +
			"The usual recipe; tokens do not grow, so no fencing.\n")
		p("- redis: INCR + SET NX PX + EVALSHA CAS: `INCR <fence>` → tok (one counter, so tokens only grow: fencing as in ONCE); " +
			"`SET k running:<tok> NX PX 30000`; the CAS script. Three round trips.\n")
		if o.floors {
			p("- %s and %s: `PING`, then `PING`: the round trips of a cycle without its work, "+
				"the most two-round-trip cycles/s that the client, the server's front end and this machine allow. Never a baseline.\n", floorOncekv, floorRedis)
		}
		p("\nThe go-redis baselines use `redis.NewScript(…).Run` (EVALSHA, EVAL on NOSCRIPT).\n\n")
	}
	if len(wakes) > 0 {
		wakeReport(p, o, wakes, sum)
	}
}

// wakeReport writes the wake-up section of the report.
func wakeReport(p func(string, ...any), o options, wakes []wakeResult, sum summary) {
	p("### Waiter wake-up latency after COMPLETE\n\n")
	p("Latency = arrival of a waiter's answer − the moment just before the completing command was written. "+
		"Raw RESP client, one connection per waiter. The waiters blocked on a server (all but GET polling's, which sleep in between) "+
		"are read by %s, so that the figure is the server's delivery time rather than the client's cost of waking a thousand goroutines.\n\n", wakeReaderText(o.wakeReader))
	p("- oncekv: N connections blocked in `ONCE.CLAIM k WAIT 0` (all N confirmed waiting with ONCE.STATUS), runner sends `ONCE.COMPLETE k tok <answer> KEEP %s`.\n", keepMs)
	if slices.Contains(o.wakeRefs, refPublish) {
		p("- redis PUBLISH (reference: how fast Redis itself wakes N blocked clients with one command): N connections `SUBSCRIBE`d to one channel " +
			"(all N confirmations read, PUBSUB NUMSUB = N), runner sends `PUBLISH channel <answer>`; each subscriber gets the message. Nothing is written to the AOF.\n")
	}
	if slices.Contains(o.wakeRefs, refBlpop) {
		p("- redis BLPOP (reference): N connections in `BLPOP k 0` on one list (INFO clients counts all N blocked), runner sends one " +
			"`RPUSH k <answer> … <answer>` with N elements; each waiter pops one. One key and one command, like ONCE.COMPLETE; the RPUSH goes to the AOF.\n")
	}
	if slices.Contains(o.wakeRefs, refPoll) {
		p("- redis GET poll (what users build without ONCE): N connections polling `GET k` with a %s sleep between polls, a goroutine each (random start phase; "+
			"once all have seen the key running, the runner waits a random fraction of the interval and sends the EVALSHA CAS).\n", o.poll)
	}
	if slices.Contains(o.wakeRefs, refLoopback) {
		p("- floor, no server: this process accepts the N connections itself and writes the same reply (ONCE's `[\"done\", <answer>]`) to each, " +
			"from as many goroutines as it has CPUs: what N loopback deliveries and the reader cost on this machine, which every server's figure includes.\n")
	}
	if slices.Contains(o.wakeRefs, refGoroutines) {
		p("- floor, no network: N goroutines of this process blocked receiving from one channel, woken by closing it; latency = when each runs again. " +
			"What this machine's scheduler alone takes to run N waiters once their answer exists, the least that waiters which are goroutines cost.\n")
	}
	p("\nEach round is a fresh key (channel, list); rounds alternate between oncekv and each other measurement, the same number of rounds each.\n\n")
	type col struct {
		name     string
		p50, p99 func(wakeRowSum) float64
	}
	cols := []col{{"oncekv", func(s wakeRowSum) float64 { return s.OnceP50us }, func(s wakeRowSum) float64 { return s.OnceP99us }}}
	for _, ref := range o.wakeRefs {
		switch ref {
		case refPublish:
			cols = append(cols, col{"redis PUBLISH", func(s wakeRowSum) float64 { return s.PublishP50us }, func(s wakeRowSum) float64 { return s.PublishP99us }})
		case refBlpop:
			cols = append(cols, col{"redis BLPOP", func(s wakeRowSum) float64 { return s.BlpopP50us }, func(s wakeRowSum) float64 { return s.BlpopP99us }})
		case refPoll:
			cols = append(cols, col{"redis GET poll", func(s wakeRowSum) float64 { return s.PollP50us }, func(s wakeRowSum) float64 { return s.PollP99us }})
		case refLoopback:
			cols = append(cols, col{"floor (no server)", func(s wakeRowSum) float64 { return s.LoopbackP50us }, func(s wakeRowSum) float64 { return s.LoopbackP99us }})
		case refGoroutines:
			cols = append(cols, col{"floor (no network)", func(s wakeRowSum) float64 { return s.GoroutinesP50us }, func(s wakeRowSum) float64 { return s.GoroutinesP99us }})
		}
	}
	p("| waiters | rounds | samples each |")
	for _, c := range cols {
		p(" %s p50 | %s p99 |", c.name, c.name)
	}
	p("\n|---:|---:|---:|%s\n", strings.Repeat("---:|---:|", len(cols)))
	for i, wk := range wakes {
		s := sum.Wakeups[i]
		p("| %d | %d | %d |", wk.waiters, wk.rounds, s.Samples)
		for _, c := range cols {
			p(" %s | %s |", fmtUs(c.p50(s)), fmtUs(c.p99(s)))
		}
		p("\n")
	}
	last := sum.Wakeups[len(sum.Wakeups)-1]
	p("\n- **%d waiters: oncekv p50 %s, p99 %s", last.Waiters, fmtUs(last.OnceP50us), fmtUs(last.OnceP99us))
	for _, c := range cols[1:] {
		switch c.name {
		case "redis GET poll":
		case "floor (no server)", "floor (no network)":
			p("; %s p50 %s, p99 %s", c.name, fmtUs(c.p50(last)), fmtUs(c.p99(last)))
		default:
			p("; reference %s p50 %s, p99 %s", c.name, fmtUs(c.p50(last)), fmtUs(c.p99(last)))
		}
	}
	p("**\n\n")
	if last.OnceExpiredKeys > 0 {
		p("- While the %d-waiter rounds ran, oncekv expired %d keys (the cycle part's answers, kept %s, expire during the wake-ups that follow it): "+
			"its sweeper and the deletions' work shared the CPU with the wake-ups. `-parts wakeup` on a fresh server measures them with nothing expiring.\n\n",
			last.Waiters, last.OnceExpiredKeys, keepText())
	}
}

func wakeReaderText(r string) string {
	if r == readerEpoll {
		return "one goroutine on one epoll (arrival = when epoll_wait reported the connection readable)"
	}
	return "a goroutine each, blocked in a read (arrival = when that goroutine got the reply; the scheduler's delay counts)"
}

func defaultWakeReader() string {
	if runtime.GOOS == "linux" {
		return readerEpoll
	}
	return readerGoroutines
}

func fmtUs(v float64) string { return fmtDur(time.Duration(v * float64(time.Microsecond))) }

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
