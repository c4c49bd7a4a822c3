package main

// The throughput section: redis-benchmark runs alternated between oncekv
// and redis-server, both started with the same appendfsync policy.

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oncekv/oncekv/bench/internal/benchkit"
	"github.com/oncekv/oncekv/internal/child"
)

// cell is one redis-benchmark test with one pipeline depth.
type cell struct {
	Label    string   // as shown: "SET -d 256"
	Test     string   // redis-benchmark -t name: "set"
	Extra    []string // more redis-benchmark arguments: -d 256
	Pipeline int
}

func (c cell) name() string {
	if c.Pipeline > 1 {
		return fmt.Sprintf("%s -P %d", c.Label, c.Pipeline)
	}
	return c.Label
}

// parseCells makes the cells of tests (comma-separated redis-benchmark
// test names; "set-d256" is SET with -d 256) at each pipeline depth,
// unpipelined first.
func parseCells(tests string, pipelines []int) ([]cell, error) {
	var base []cell
	for t := range strings.SplitSeq(tests, ",") {
		t = strings.ToLower(strings.TrimSpace(t))
		if t == "" {
			continue
		}
		name, size, ok := strings.Cut(t, "-d")
		c := cell{Label: strings.ToUpper(name), Test: name}
		if ok {
			n, err := strconv.Atoi(size)
			if err != nil || n < 1 || strings.ContainsAny(name, "-") {
				return nil, fmt.Errorf("test %q: want a redis-benchmark test name, or name-d<bytes> (set-d256)", t)
			}
			c.Label += " -d " + size
			c.Extra = []string{"-d", size}
		}
		if strings.Trim(name, "abcdefghijklmnopqrstuvwxyz_") != "" || name == "" {
			return nil, fmt.Errorf("test %q: want a redis-benchmark test name", t)
		}
		base = append(base, c)
	}
	if len(base) == 0 {
		return nil, errors.New("no tests")
	}
	var cells []cell
	for _, p := range pipelines {
		for _, c := range base {
			c.Pipeline = p
			cells = append(cells, c)
		}
	}
	return cells, nil
}

// sample is one redis-benchmark run's figures.
type sample struct {
	RPS, P50, P99 float64 // requests/s, latency in ms
}

// cellResult is a cell's samples, one per round and server; Ceiling is
// bench/ceiling's, when it ran.
type cellResult struct {
	Cell                 cell
	Ours, Redis, Ceiling []sample
}

// ratio is the median over rounds of ours/redis requests/s, each ratio
// taken within one round.
func (r cellResult) ratio() float64 { return roundRatio(r.Ours, r.Redis) }

// ceilingRatio is ratio for bench/ceiling (0 if it did not run).
func (r cellResult) ceilingRatio() float64 { return roundRatio(r.Ceiling, r.Redis) }

// roundRatio is the median over rounds of a/b requests/s, each ratio
// taken within one round.
func roundRatio(a, b []sample) float64 {
	var rs []float64
	for i := range min(len(a), len(b)) {
		if b[i].RPS > 0 {
			rs = append(rs, a[i].RPS/b[i].RPS)
		}
	}
	return median(rs)
}

func medianOf(s []sample, f func(sample) float64) float64 {
	xs := make([]float64, len(s))
	for i, x := range s {
		xs[i] = f(x)
	}
	return median(xs)
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

// policyResult is the throughput section's result for one fsync policy.
type policyResult struct {
	Fsync          string
	Cells          []cellResult
	OursCmd        string // how the servers were started
	RedisCmd       string
	CeilingCmd     string // "" when bench/ceiling did not run
	Started, Ended time.Time
}

// benchArgs are the redis-benchmark arguments of c against port: n
// requests over keyspace random keys.
func (h *harness) benchArgs(port string, c cell, n, keyspace int64) []string {
	args := []string{"-h", "127.0.0.1", "-p", port, "-c", strconv.Itoa(h.clients),
		"-n", strconv.FormatInt(n, 10), "-r", strconv.FormatInt(keyspace, 10), "-t", c.Test}
	args = append(args, c.Extra...)
	if c.Pipeline > 1 {
		args = append(args, "-P", strconv.Itoa(c.Pipeline))
	}
	return append(args, "--csv")
}

// runThroughput measures every cell on a fresh oncekv and redis-server
// with fsync, rounds times, alternating between the two servers.
func (h *harness) runThroughput(fsync string) (policyResult, error) {
	res := policyResult{Fsync: fsync, Started: time.Now()}
	dir := filepath.Join(h.work, "throughput-"+fsync)
	defer os.RemoveAll(dir)
	redis, err := benchkit.StartRedis(h.redisBin, filepath.Join(dir, "redis"), fsync, h.redisExtra...)
	if err != nil {
		return res, err
	}
	defer redis.Stop()
	ours, err := benchkit.StartOncekv(h.onceBin, filepath.Join(dir, "oncekv"), fsync)
	if err != nil {
		return res, err
	}
	defer ours.Stop()
	res.OursCmd, res.RedisCmd = genericCmd(ours, dir), genericCmd(redis, dir)
	procs := []*benchkit.Proc{ours, redis}
	var ceiling *benchkit.Proc
	if h.ceilingBin != "" {
		cdir := filepath.Join(dir, "ceiling")
		ceiling, err = benchkit.Start("ceiling", h.ceilingBin, cdir, func(port int) []string {
			return []string{"-addr", "127.0.0.1:" + strconv.Itoa(port), "-aof", filepath.Join(cdir, "ceiling.aof"), "-appendfsync", fsync}
		})
		if err != nil {
			return res, err
		}
		defer ceiling.Stop()
		res.CeilingCmd = strings.ReplaceAll(genericCmd(ceiling, dir), "127.0.0.1:"+strconv.Itoa(ceiling.Port), "127.0.0.1:<port>")
		procs = append(procs, ceiling)
	}

	// The GETs of redis-benchmark -r K read key:000000000000 … key:K-1:
	// set them all first (3-byte values, as redis-benchmark's SET), so
	// that every GET hits on every server.
	for _, p := range procs {
		if err := h.alone(p, others(procs, p), func() error {
			_, err := load(p.Addr, 0, int64(h.keyspace), 3, 4, p.Name, h.log)
			return err
		}); err != nil {
			return res, err
		}
	}

	res.Cells = make([]cellResult, len(h.cells))
	for ci, c := range h.cells {
		res.Cells[ci].Cell = c
	}
	for round := range h.rounds {
		for ci, c := range h.cells {
			// The order rotates from round to round: oncekv first in
			// the first, redis-server in the second, and so on.
			k := round % len(procs)
			order := append(slices.Clone(procs[k:]), procs[:k]...)
			for _, p := range order {
				var s sample
				err := h.alone(p, others(procs, p), func() (err error) {
					s, err = h.bench(p, c, int64(h.requests), int64(h.keyspace))
					return err
				})
				if err != nil {
					return res, err
				}
				switch p {
				case ours:
					res.Cells[ci].Ours = append(res.Cells[ci].Ours, s)
				case redis:
					res.Cells[ci].Redis = append(res.Cells[ci].Redis, s)
				default:
					res.Cells[ci].Ceiling = append(res.Cells[ci].Ceiling, s)
				}
				h.logf("throughput %s round %d/%d %-16s %-12s %12s req/s  p50 %.3f  p99 %.3f ms",
					fsync, round+1, h.rounds, c.name(), p.Name, thousands(s.RPS), s.P50, s.P99)
			}
		}
	}
	res.Ended = time.Now()
	return res, nil
}

// others is procs without p.
func others(procs []*benchkit.Proc, p *benchkit.Proc) []*benchkit.Proc {
	var out []*benchkit.Proc
	for _, q := range procs {
		if q != p {
			out = append(out, q)
		}
	}
	return out
}

// alone runs f with the others paused (SIGSTOP), unless -pause-idle=false,
// so that the idle servers' background work (Badger's compactions,
// Redis's AOF rewrites) takes no CPU from p's measurement.
func (h *harness) alone(p *benchkit.Proc, others []*benchkit.Proc, f func() error) error {
	if !h.pauseIdle {
		return f()
	}
	var paused []*benchkit.Proc
	var err error
	for _, o := range others {
		if err = o.Pause(); err != nil {
			break
		}
		paused = append(paused, o)
	}
	if err == nil {
		err = f()
	}
	for _, o := range paused {
		if rerr := o.Resume(); rerr != nil && err == nil {
			err = rerr
		}
	}
	if p.Exited() && err == nil {
		err = fmt.Errorf("%s exited (%s)\n%s", p.Name, p.Ended(), p.LogTail())
	}
	return err
}

// bench runs redis-benchmark for c against p: n requests over keyspace
// random keys.
func (h *harness) bench(p *benchkit.Proc, c cell, n, keyspace int64) (sample, error) {
	args := h.benchArgs(strconv.Itoa(p.Port), c, n, keyspace)
	cmd := exec.Command(h.benchBin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	bp, err := child.Start(cmd)
	if err == nil {
		err = bp.Wait()
	}
	out := stdout.Bytes()
	if p.Exited() {
		return sample{}, fmt.Errorf("%s exited during %s (%s)\n%s", p.Name, c.name(), p.Ended(), p.LogTail())
	}
	if err != nil {
		return sample{}, fmt.Errorf("%s %s: %w\n%s%s", h.benchBin, strings.Join(args, " "), err, out, stderr.Bytes())
	}
	rows, err := parseBenchCSV(out)
	if err != nil {
		return sample{}, fmt.Errorf("%s %s: %w\n%s%s", h.benchBin, strings.Join(args, " "), err, out, stderr.Bytes())
	}
	if len(rows) != 1 {
		return sample{}, fmt.Errorf("%s %s: %d result rows, want 1\n%s", h.benchBin, strings.Join(args, " "), len(rows), out)
	}
	return rows[0].sample, nil
}

// benchRow is one result line of redis-benchmark --csv.
type benchRow struct {
	test string
	sample
}

// parseBenchCSV reads redis-benchmark --csv output (7.0: a header
// "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
// "p95_latency_ms","p99_latency_ms","max_latency_ms", then a line per
// test), finding the columns by their names.
func parseBenchCSV(out []byte) ([]benchRow, error) {
	recs, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("redis-benchmark --csv output: %w", err)
	}
	if len(recs) < 1 {
		return nil, errors.New("redis-benchmark --csv output: empty")
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	for _, name := range []string{"test", "rps", "p50_latency_ms", "p99_latency_ms"} {
		if _, ok := col[name]; !ok {
			return nil, fmt.Errorf("redis-benchmark --csv output: no %q column in %q", name, recs[0])
		}
	}
	var rows []benchRow
	for _, rec := range recs[1:] {
		if len(rec) != len(recs[0]) {
			return nil, fmt.Errorf("redis-benchmark --csv output: line %q", rec)
		}
		var f [3]float64
		for k, name := range []string{"rps", "p50_latency_ms", "p99_latency_ms"} {
			v, err := strconv.ParseFloat(rec[col[name]], 64)
			if err != nil {
				return nil, fmt.Errorf("redis-benchmark --csv output: %s %q", name, rec[col[name]])
			}
			f[k] = v
		}
		rows = append(rows, benchRow{test: rec[col["test"]], sample: sample{RPS: f[0], P50: f[1], P99: f[2]}})
	}
	return rows, nil
}

// genericCmd is p's command line with its port and the run's directory
// replaced by placeholders, for the report.
func genericCmd(p *benchkit.Proc, dir string) string {
	line := benchkit.ShellQuote(append([]string{p.Name}, p.Args...))
	line = strings.ReplaceAll(line, "--port "+strconv.Itoa(p.Port), "--port <port>")
	return strings.ReplaceAll(line, dir, "<dir>")
}
