// Command harness runs the benchmarks of oncekv against a real
// redis-server in one go and writes BENCHMARKS.md with SVG charts:
//
//   - throughput: redis-benchmark -c 50 -n 200000 -r 100000, SET, GET, INCR
//     and SET -d 256, each with and without -P 16, alternated between the
//     two servers started with the same appendfsync (everysec, then
//     always); requests/s, the ratio oncekv/redis and p50/p99 latency;
//     bench/ceiling (a minimal Go server, no storage engine, with the
//     same appendfsync) takes its turn too, as the ceiling of any Go
//     server here;
//   - once: bench/oncebench (ONCE claim+complete against the go-redis +
//     Lua baselines; waiter wake-up latency with up to 1000 waiters; the
//     floors of both: PING + PING cycles, and a wake-up with no server);
//   - memory: RSS idle and with 1M and 10M keys (16-byte keys, 100-byte
//     values), GETs over a keyspace larger than oncekv's cache, and the
//     time to the first GET after a restart, redis-server replaying its
//     AOF as the reference.
//
// bench/redis-benchmark.sh is the usual way to run it. It needs
// redis-server and redis-benchmark 7 (apt-get install -y redis-server
// redis-tools). Run it by hand on a quiet machine; it is not part of go
// test.
//
//	go run ./bench/harness                 # everything, about 20 minutes on 2 cores
//	go run ./bench/harness -smoke          # small sizes, under a minute, report in a temp dir
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/oncekv/oncekv/bench/internal/benchkit"
	"github.com/oncekv/oncekv/bench/internal/oncejson"
)

// harness holds a run's settings and where it works.
type harness struct {
	repo, work                  string
	onceBin, redisBin, benchBin string
	onceBenchBin                string
	// ceilingBin is bench/ceiling, built when -ceiling is on and the
	// throughput section runs ("" otherwise).
	ceilingBin string
	ceiling    bool
	redisExtra []string

	sections  []string
	fsyncs    []string
	requests  int
	keyspace  int
	clients   int
	rounds    int
	pipelines []int
	cells     []cell

	onceArgs []string

	memKeys       []int64
	memGets       int64
	memFsync      string
	valueSize     int
	loadConns     int
	settle        time.Duration
	restart       bool
	restartSignal string
	pauseIdle     bool

	out, chartDir string
	invocation    string
	machine       machine
	log           io.Writer
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.log, "harness: "+format+"\n", args...)
}

// interrupted is set when a signal stops the run: errors that follow
// are the servers being stopped.
var interrupted atomic.Bool

var allSections = []string{"throughput", "once", "memory"}

func main() {
	h := &harness{log: os.Stderr}
	var sections, fsyncs, tests, pipelines, onceArgs, memKeys, work, invokedAs string
	var smoke, keep, aofRewrite bool
	flag.StringVar(&sections, "sections", strings.Join(allSections, ","), "sections to run: throughput, once, memory")
	flag.StringVar(&fsyncs, "fsync", "everysec,always", "appendfsync policies of the throughput section")
	flag.IntVar(&h.requests, "requests", 200000, "redis-benchmark -n: requests per cell")
	flag.IntVar(&h.keyspace, "keyspace", 100000, "redis-benchmark -r of the throughput section")
	flag.IntVar(&h.clients, "clients", 50, "redis-benchmark -c")
	flag.IntVar(&h.rounds, "rounds", 3, "throughput rounds (alternations) per cell; the median counts")
	flag.StringVar(&tests, "tests", "set,get,incr,set-d256", "redis-benchmark tests; name-dN is the test with -d N")
	flag.StringVar(&pipelines, "pipelines", "1,16", "redis-benchmark -P depths (1: none)")
	flag.StringVar(&onceArgs, "once-args", "", "more arguments for bench/oncebench, space-separated (e.g. \"-rounds 5\")")
	flag.StringVar(&memKeys, "mem-keys", "1000000,10000000", "key counts of the memory section, ascending")
	flag.Int64Var(&h.memGets, "mem-gets", 200000, "redis-benchmark -n of the GETs over the loaded keyspace")
	flag.StringVar(&h.memFsync, "mem-fsync", "everysec", "appendfsync of the memory section's servers")
	flag.IntVar(&h.valueSize, "value-size", 100, "bytes per value in the memory section")
	flag.IntVar(&h.loadConns, "load-conns", 4, "connections loading keys")
	flag.DurationVar(&h.settle, "settle", 5*time.Second, "idle time before reading RSS")
	flag.BoolVar(&h.restart, "restart", true, "measure the restart with the largest key count")
	flag.StringVar(&h.restartSignal, "restart-signal", "term", "how the servers are stopped before the restart: term or kill")
	flag.BoolVar(&h.ceiling, "ceiling", true, "also run bench/ceiling, a minimal Go server (a map and a log written once per batch, no storage engine, the same appendfsync), in the throughput cells: what any Go server reaches on this machine")
	flag.BoolVar(&h.pauseIdle, "pause-idle", true, "pause (SIGSTOP) the server not being measured, so that its background work takes no CPU from the other")
	flag.BoolVar(&aofRewrite, "redis-aof-rewrite", true, "let redis-server rewrite its AOF automatically (its default); false adds --auto-aof-rewrite-percentage 0, so a restart replays commands only")
	flag.StringVar(&h.out, "out", "", "markdown file to write (default BENCHMARKS.md in the repository; with -smoke, in a temporary directory)")
	flag.StringVar(&h.chartDir, "charts", "", "directory of the SVG charts (default bench/ in the repository; with -smoke or -out, next to the markdown)")
	flag.StringVar(&work, "workdir", "", "directory for the servers' data (default: a new temporary directory, removed at the end)")
	flag.BoolVar(&keep, "keep", false, "keep the work directory")
	flag.StringVar(&h.repo, "repo", "", "root of the oncekv module (default: found from the working directory)")
	flag.StringVar(&h.onceBin, "oncekv-bin", "", "oncekv binary (default: go build the module)")
	flag.StringVar(&h.redisBin, "redis-server", "redis-server", "redis-server binary")
	flag.StringVar(&h.benchBin, "redis-benchmark", "redis-benchmark", "redis-benchmark binary")
	flag.BoolVar(&smoke, "smoke", false, "a quick run to check that everything works: -requests 20000 -rounds 1 -mem-keys 20000,400000 -mem-gets 20000 -settle 1s, oncebench -quick, unless given")
	flag.StringVar(&invokedAs, "invoked-as", "", "the command line to show in the report (set by bench/redis-benchmark.sh)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: go run ./bench/harness [flags]   (or bench/redis-benchmark.sh)\n\n"+
			"Benchmarks oncekv against redis-server and writes BENCHMARKS.md and SVG charts.\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if smoke {
		def := func(name string, apply func()) {
			if !set[name] {
				apply()
			}
		}
		def("requests", func() { h.requests = 20000 })
		def("rounds", func() { h.rounds = 1 })
		def("mem-keys", func() { memKeys = "20000,400000" }) // 46 MB of data: past oncekv's default 32 MB cache
		def("mem-gets", func() { h.memGets = 20000 })
		def("settle", func() { h.settle = time.Second })
		def("once-args", func() { onceArgs = "-quick" })
	}
	if invokedAs != "" {
		h.invocation = invokedAs
	} else {
		h.invocation = benchkit.ShellQuote(append([]string{"go", "run", "./bench/harness"}, os.Args[1:]...))
	}
	if err := h.configure(sections, fsyncs, tests, pipelines, onceArgs, memKeys, smoke); err != nil {
		fmt.Fprintf(os.Stderr, "harness: %v\n", err)
		os.Exit(2)
	}
	if !aofRewrite {
		h.redisExtra = []string{"--auto-aof-rewrite-percentage", "0"}
	}
	if err := h.main(work, keep); err != nil {
		if interrupted.Load() {
			select {} // the signal handler stops the servers and exits
		}
		fmt.Fprintf(os.Stderr, "harness: %v\n", err)
		os.Exit(1)
	}
}

// configure checks and parses the flags' lists.
func (h *harness) configure(sections, fsyncs, tests, pipelines, onceArgs, memKeys string, smoke bool) error {
	for s := range strings.SplitSeq(sections, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(allSections, s) {
			return fmt.Errorf("-sections: %q is not one of %v", s, allSections)
		}
		if !slices.Contains(h.sections, s) {
			h.sections = append(h.sections, s)
		}
	}
	for f := range strings.SplitSeq(fsyncs, ",") {
		f = strings.TrimSpace(f)
		if f != "always" && f != "everysec" && f != "no" {
			return fmt.Errorf("-fsync: %q is not always, everysec or no", f)
		}
		h.fsyncs = append(h.fsyncs, f)
	}
	for p := range strings.SplitSeq(pipelines, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			return fmt.Errorf("-pipelines: %q is not a positive depth", p)
		}
		h.pipelines = append(h.pipelines, n)
	}
	var err error
	if h.cells, err = parseCells(tests, h.pipelines); err != nil {
		return fmt.Errorf("-tests: %w", err)
	}
	var prev int64
	for k := range strings.SplitSeq(memKeys, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(k), 10, 64)
		if err != nil || n <= prev || checkKeyRange(n) != nil {
			return fmt.Errorf("-mem-keys: %q: want ascending positive counts", k)
		}
		h.memKeys, prev = append(h.memKeys, n), n
	}
	h.onceArgs = strings.Fields(onceArgs)
	switch {
	case h.requests < 1 || h.keyspace < 1 || h.clients < 1 || h.rounds < 1 || h.memGets < 1:
		return errors.New("-requests, -keyspace, -clients, -rounds and -mem-gets must be positive")
	case h.valueSize < 1 || h.loadConns < 1:
		return errors.New("-value-size and -load-conns must be positive")
	case h.restartSignal != "term" && h.restartSignal != "kill":
		return fmt.Errorf("-restart-signal: %q is not term or kill", h.restartSignal)
	}
	if h.repo == "" {
		if h.repo, err = benchkit.FindRepo(); err != nil {
			return fmt.Errorf("%w: give -repo", err)
		}
	}
	outGiven := h.out != ""
	if !outGiven {
		if smoke {
			h.out = filepath.Join(os.TempDir(), "oncekv-bench-smoke", "BENCHMARKS.md")
		} else {
			h.out = filepath.Join(h.repo, "BENCHMARKS.md")
		}
	}
	if h.chartDir == "" {
		if smoke || outGiven {
			h.chartDir = filepath.Dir(h.out)
		} else {
			h.chartDir = filepath.Join(h.repo, "bench")
		}
	}
	for _, b := range []*string{&h.redisBin, &h.benchBin} {
		p, err := exec.LookPath(*b)
		if err != nil {
			return fmt.Errorf("%s not found (apt-get install -y redis-server redis-tools): %w", *b, err)
		}
		*b = p
	}
	return nil
}

// main builds what it needs, runs the sections and writes the report.
func (h *harness) main(work string, keep bool) error {
	var err error
	if work == "" {
		if work, err = os.MkdirTemp("", "oncekv-bench-"); err != nil {
			return err
		}
		if !keep {
			defer os.RemoveAll(work)
		}
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	if h.work, err = filepath.Abs(work); err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		interrupted.Store(true)
		fmt.Fprintf(os.Stderr, "harness: %v: stopping the servers\n", s)
		benchkit.StopAll(15 * time.Second)
		if !keep {
			os.RemoveAll(h.work)
		}
		os.Exit(130)
	}()
	if err := benchkit.RaiseNofile(4096); err != nil {
		h.logf("raising the open-file limit: %v", err)
	}

	if h.onceBin == "" {
		h.logf("building oncekv in %s", h.repo)
		if h.onceBin, err = benchkit.BuildOncekv(h.repo, filepath.Join(h.work, "bin")); err != nil {
			return err
		}
	}
	if h.ceiling && slices.Contains(h.sections, "throughput") {
		if h.ceilingBin, err = benchkit.Build(h.repo, "./bench/ceiling", filepath.Join(h.work, "bin", "ceiling")); err != nil {
			return err
		}
	}
	if slices.Contains(h.sections, "once") {
		if h.onceBenchBin, err = benchkit.Build(h.repo, "./bench/oncebench", filepath.Join(h.work, "bin", "oncebench")); err != nil {
			return err
		}
	}
	h.machine = describeMachine(h)
	h.logf("work directory %s (%s); report %s", h.work, h.machine.DataFS, h.out)

	fresh := map[string]string{}
	var errs []error
	var charts []struct{ name, svg string }
	for _, s := range allSections {
		if !slices.Contains(h.sections, s) {
			continue
		}
		if interrupted.Load() {
			return errors.New("interrupted")
		}
		start, load0 := time.Now(), loadavg()
		head := func(title, command string) sectionHead {
			return sectionHead{title: title, runLine: h.machine.runLine(start, time.Now(), load0, loadavg()), command: command}
		}
		switch s {
		case "throughput":
			var pols []policyResult
			var err error
			for _, f := range h.fsyncs {
				var p policyResult
				if p, err = h.runThroughput(f); err != nil {
					err = fmt.Errorf("throughput, appendfsync %s: %w", f, err)
					break
				}
				pols = append(pols, p)
			}
			if err != nil {
				h.logf("%v", err)
				errs = append(errs, err)
				break
			}
			md := h.throughputMarkdown(head("Throughput: redis-benchmark, oncekv against redis-server", h.invocation), pols, h.chartRef("throughput.svg"))
			fresh[s] = md
			charts = append(charts, struct{ name, svg string }{"throughput.svg", h.throughputChart(pols).svg()})
		case "once":
			report, sum, err := h.runOnce()
			if err != nil {
				err = fmt.Errorf("once: %w", err)
				h.logf("%v", err)
				errs = append(errs, err)
				break
			}
			cmd := h.invocation + "`, which runs the equivalent of `" + benchkit.ShellQuote(append([]string{"go", "run", "./bench/oncebench"}, h.onceArgs...))
			fresh[s] = onceMarkdown(head("ONCE: claim+complete and waiter wake-up", cmd), report, sum)
		case "memory":
			m, err := h.runMemory()
			if err != nil {
				err = fmt.Errorf("memory: %w", err)
				h.logf("%v", err)
				errs = append(errs, err)
				break
			}
			fresh[s] = h.memoryMarkdown(head("Memory, keyspace larger than the cache, restart, idle", h.invocation), m, h.chartRef("memory.svg"))
			charts = append(charts, struct{ name, svg string }{"memory.svg", memoryChart(m).svg()})
		}
	}

	if interrupted.Load() {
		return errors.New("interrupted")
	}
	if len(fresh) > 0 {
		if err := os.MkdirAll(h.chartDir, 0o755); err != nil {
			return err
		}
		for _, c := range charts {
			if err := os.WriteFile(filepath.Join(h.chartDir, c.name), []byte(c.svg), 0o644); err != nil {
				return err
			}
		}
		if err := os.MkdirAll(filepath.Dir(h.out), 0o755); err != nil {
			return err
		}
		old, err := os.ReadFile(h.out)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		doc := mergeDoc(string(old), fresh)
		if err := os.WriteFile(h.out, []byte(doc), 0o644); err != nil {
			return err
		}
		secs := parseSections(doc)
		for _, name := range allSections {
			if _, ok := fresh[name]; ok {
				fmt.Print(stripComments(secs[name]), "\n")
			}
		}
		fmt.Print(secs["summary"])
		h.logf("wrote %s and %d chart(s) in %s", h.out, len(charts), h.chartDir)
	}
	return errors.Join(errs...)
}

// chartRef is the path of chart name relative to the markdown file.
func (h *harness) chartRef(name string) string {
	rel, err := filepath.Rel(filepath.Dir(h.out), filepath.Join(h.chartDir, name))
	if err != nil {
		return filepath.Join(h.chartDir, name)
	}
	return filepath.ToSlash(rel)
}

// onceSummary is the JSON that bench/oncebench writes with -json.
type onceSummary = oncejson.Summary

// runOnce runs bench/oncebench on the oncekv binary of this run.
func (h *harness) runOnce() (string, onceSummary, error) {
	var sum onceSummary
	md, js := filepath.Join(h.work, "once.md"), filepath.Join(h.work, "once.json")
	args := append([]string{"-oncekv-bin", h.onceBin, "-redis-server", h.redisBin, "-o", md, "-json", js}, h.onceArgs...)
	cmd := exec.Command(h.onceBenchBin, args...)
	cmd.Stdout = io.Discard
	cmd.Stderr = h.log
	cmd.Env = append(os.Environ(), "TMPDIR="+h.work)
	h.logf("once: %s", benchkit.ShellQuote(append([]string{"oncebench"}, args...)))
	p, err := benchkit.StartCmd("oncebench", cmd) // SIGTERM on an interrupt: it stops its servers
	if err != nil {
		return "", sum, err
	}
	if err := p.Wait(); err != nil {
		return "", sum, fmt.Errorf("oncebench: %w", err)
	}
	report, err := os.ReadFile(md)
	if err != nil {
		return "", sum, err
	}
	b, err := os.ReadFile(js)
	if err != nil {
		return "", sum, err
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		return "", sum, fmt.Errorf("oncebench -json: %w", err)
	}
	return string(report), sum, nil
}
