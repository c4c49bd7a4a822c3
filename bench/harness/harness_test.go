package main

// Tests of the harness's parts: parsing redis-benchmark's output, the
// cells, the keys and values, loading and checking them on a real
// redis-server, the first-GET probe of a restart, the report file and
// the chart. The harness itself is run by hand (bench/redis-benchmark.sh -q).

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oncekv/oncekv/bench/internal/benchkit"
	"github.com/oncekv/oncekv/internal/testserver"
)

func TestParseBenchCSV(t *testing.T) {
	out := []byte(`"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"SET","50000.00","0.786","0.008","0.583","1.975","2.807","3.047"
"GET","125000.50","0.300","0.008","0.255","0.500","0.911","1.047"
`)
	rows, err := parseBenchCSV(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []benchRow{
		{"SET", sample{RPS: 50000, P50: 0.583, P99: 2.807}},
		{"GET", sample{RPS: 125000.5, P50: 0.255, P99: 0.911}},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %v, want %v", rows, want)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, rows[i], want[i])
		}
	}
	for name, bad := range map[string]string{
		"empty":        "",
		"no p99":       "\"test\",\"rps\",\"p50_latency_ms\"\n\"SET\",\"1\",\"2\"\n",
		"not a number": "\"test\",\"rps\",\"p50_latency_ms\",\"p99_latency_ms\"\n\"SET\",\"x\",\"2\",\"3\"\n",
		"short line":   "\"test\",\"rps\",\"p50_latency_ms\",\"p99_latency_ms\"\n\"SET\",\"1\"\n",
	} {
		if _, err := parseBenchCSV([]byte(bad)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestParseCells(t *testing.T) {
	cells, err := parseCells("set,get,incr,set-d256", []int{1, 16})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cells {
		names = append(names, c.name())
	}
	want := "SET|GET|INCR|SET -d 256|SET -P 16|GET -P 16|INCR -P 16|SET -d 256 -P 16"
	if got := strings.Join(names, "|"); got != want {
		t.Fatalf("cells %s, want %s", got, want)
	}
	h := &harness{clients: 50}
	args := strings.Join(h.benchArgs("7000", cells[7], 200000, 100000), " ")
	if want := "-h 127.0.0.1 -p 7000 -c 50 -n 200000 -r 100000 -t set -d 256 -P 16 --csv"; args != want {
		t.Fatalf("args %q, want %q", args, want)
	}
	for _, bad := range []string{"", "set-dx", "se t", "set-d0", "a-b-d3"} {
		if _, err := parseCells(bad, []int{1}); err == nil {
			t.Errorf("parseCells(%q): no error", bad)
		}
	}
}

func TestCellRatioIsTheMedianOfRoundRatios(t *testing.T) {
	r := cellResult{
		Ours:  []sample{{RPS: 100}, {RPS: 300}, {RPS: 90}},
		Redis: []sample{{RPS: 100}, {RPS: 100}, {RPS: 100}},
	}
	if got := r.ratio(); got != 1 {
		t.Fatalf("ratio %v, want 1 (median of 1, 3, 0.9)", got)
	}
	r.Ours, r.Redis = r.Ours[:2], r.Redis[:2]
	if got := r.ratio(); got != 2 {
		t.Fatalf("ratio %v, want 2 (median of 1 and 3)", got)
	}
}

func TestKeysAndValues(t *testing.T) {
	if got := keyName(0); got != "key:000000000000" {
		t.Fatalf("key 0: %q", got)
	}
	if got := keyName(9_999_999); got != "key:000009999999" || len(got) != 16 {
		t.Fatalf("key 9999999: %q", got)
	}
	seen := map[string]bool{}
	for i := range int64(1000) {
		v := valueOf(i, 100)
		if len(v) != 100 || strings.Trim(v, valueAlphabet) != "" {
			t.Fatalf("value %d: %q", i, v)
		}
		if v != valueOf(i, 100) {
			t.Fatalf("value %d differs between calls", i)
		}
		if seen[v] {
			t.Fatalf("value %d repeats an earlier one", i)
		}
		seen[v] = true
	}
	want := "*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000042\r\n$7\r\n" + valueOf(42, 7) + "\r\n"
	if got := string(appendSet(nil, 42, 7)); got != want {
		t.Fatalf("SET command %q, want %q", got, want)
	}
	if checkKeyRange(1_000_000_000_000) == nil {
		t.Fatal("a key count past 12 digits accepted")
	}
}

func startRedis(tb testing.TB, dir string) *benchkit.Proc {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatalf("redis-server not found (%v): install it with `apt-get install -y redis-server` (./test.sh does)", err)
	}
	p, err := benchkit.StartRedis(bin, dir, "everysec")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Stop)
	return p
}

// TestLoadVerifyAndFirstGet loads keys into a real redis-server, checks
// them, restarts it and probes it as the restart measurement does.
func TestLoadVerifyAndFirstGet(t *testing.T) {
	dir := t.TempDir()
	p := startRedis(t, dir)
	const n = 5000
	st, err := load(p.Addr, 0, 3000, 100, 3, "redis", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if st.keys != 3000 || st.elapsed <= 0 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := load(p.Addr, 3000, n, 100, 2, "redis", io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := dbsize(p.Addr); got != n {
		t.Fatalf("DBSIZE %d, want %d", got, n)
	}
	if err := verify(p.Addr, n, 100, 300); err != nil {
		t.Fatal(err)
	}
	c, err := benchkit.Dial(p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Do("SET", keyName(0), "changed"); err != nil {
		t.Fatal(err)
	}
	if err := verify(p.Addr, n, 100, 5); err == nil {
		t.Fatal("verify accepted a changed value")
	}
	if _, err := c.Do("SET", keyName(0), valueOf(0, 100)); err != nil {
		t.Fatal(err)
	}
	if got := configGet(p.Addr, "appendfsync"); got != "everysec" {
		t.Fatalf("CONFIG GET appendfsync: %q", got)
	}
	if err := waitAOFRewrite(p.Addr, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	p.Stop()
	port, err := benchkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	bin, _ := exec.LookPath("redis-server")
	p2, err := benchkit.Spawn("redis-server", bin, dir, port, benchkit.RedisArgs(port, dir, "everysec"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p2.Stop)
	var sr startResult
	if err := firstGet(p2, keyName(n/2), valueOf(n/2, 100), 30*time.Second, &sr); err != nil {
		t.Fatal(err)
	}
	if sr.Listen <= 0 || sr.FirstReply < sr.Listen || sr.FirstGet < sr.FirstReply {
		t.Fatalf("restart times %+v: want 0 < accept ≤ first reply ≤ first GET", sr)
	}
	if err := verify(p2.Addr, n, 100, 100); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	files := strings.Join(listDir(filepath.Join(dir, "appendonlydir")), ", ")
	if !strings.Contains(files, ".incr.aof") {
		t.Fatalf("appendonlydir: %s", files)
	}
	// A wrong expected value is an error, not a wait.
	var sr2 startResult
	if err := firstGet(p2, keyName(1), "not the value", 5*time.Second, &sr2); err == nil {
		t.Fatal("firstGet accepted a different value")
	}
	m, err := benchkit.ReadMem(p2.PID())
	if err != nil || m.RSS <= 0 || m.HWM < m.RSS {
		t.Fatalf("ReadMem: %+v, %v", m, err)
	}
}

func TestMergeDoc(t *testing.T) {
	yes, no := met(true), met(false)
	tp := "## T\n\nfirst\n" + targetComments([]target{{Section: "throughput", Name: "t1", Measured: "1.2×", Met: yes}})
	mem := "## M\n" + targetComments([]target{{Section: "memory", Name: "m1", Measured: "3 MiB", Met: no}, {Section: "memory", Name: "idle", Measured: "1 MiB"}})
	doc := mergeDoc("", map[string]string{"throughput": tp, "memory": mem})
	for _, want := range []string{"| t1 | 1.2× | **yes** |", "| m1 | 3 MiB | no |", "| idle | 1 MiB | (reported) |", "first\n"} {
		if !strings.Contains(doc, want) {
			t.Fatalf("doc lacks %q:\n%s", want, doc)
		}
	}
	if strings.Index(doc, "begin:summary") > strings.Index(doc, "begin:throughput") ||
		strings.Index(doc, "begin:throughput") > strings.Index(doc, "begin:memory") {
		t.Fatalf("sections out of order:\n%s", doc)
	}
	// Measuring the throughput again replaces it and keeps the memory section.
	tp2 := "## T\n\nsecond\n" + targetComments([]target{{Section: "throughput", Name: "t1", Measured: "0.5×", Met: no}})
	doc2 := mergeDoc(doc, map[string]string{"throughput": tp2})
	if strings.Contains(doc2, "first\n") || !strings.Contains(doc2, "second\n") || !strings.Contains(doc2, "## M\n") {
		t.Fatalf("after a second run:\n%s", doc2)
	}
	if strings.Contains(doc2, "| t1 | 1.2×") || !strings.Contains(doc2, "| t1 | 0.5× | no |") {
		t.Fatalf("summary not rebuilt:\n%s", doc2)
	}
	if again := mergeDoc(doc2, nil); again != doc2 {
		t.Fatalf("merging nothing changed the file:\n%s\nvs\n%s", again, doc2)
	}
	if got := stripComments("a\n<!-- x -->\nb\n"); got != "a\nb\n\n" {
		t.Fatalf("stripComments: %q", got)
	}
}

func TestChartIsWellFormedSVG(t *testing.T) {
	c := barChart{
		Title: "a <title> & more", Groups: []string{"everysec", "always"}, Series: []string{"SET", "GET", "INCR"},
		Values: [][]float64{{0.5, 1.25, math.NaN()}, {2, 0.75, 1}}, Format: ratio, RefLine: 1, RefLabel: "1.0×",
	}
	svg := c.svg()
	d := xml.NewDecoder(strings.NewReader(svg))
	rects, titles := 0, 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "rect":
				rects++
			case "title":
				titles++
			}
		}
	}
	// 5 bars (one NaN), 3 legend swatches, the background.
	if rects != 5+3+1 || titles != 5 {
		t.Fatalf("%d rects and %d titles, want 9 and 5:\n%s", rects, titles, svg)
	}
	for _, want := range []string{"2.00×", "1.25×", "stroke-dasharray", "a &lt;title&gt; &amp; more"} {
		if !bytes.Contains([]byte(svg), []byte(want)) {
			t.Fatalf("svg lacks %q", want)
		}
	}
}

func TestFormats(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{thousands(1234567.4), "1,234,567"}, {thousands(999), "999"}, {thousands(-1000), "-1,000"},
		{count(1_000_000), "1M"}, {count(10_000_000), "10M"}, {count(20_000), "20k"}, {count(1_500_000), "1.5M"}, {count(999), "999"},
		{mib(3 << 20), "3.0 MiB"}, {mib(1500 << 20), "1,500 MiB"}, {mib(2048), "2 KiB"},
		{ms(81800 * time.Microsecond), "81.8 ms"}, {ms(2500 * time.Millisecond), "2.50 s"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	if s := niceStep(0.23); s != 0.25 {
		t.Errorf("niceStep(0.23) = %v", s)
	}
}

// TestThroughputChartCeiling checks that the chart has a group of
// bench/ceiling's ratios for each policy it ran under, after oncekv's.
func TestThroughputChartCeiling(t *testing.T) {
	set := cell{Label: "SET", Test: "set", Pipeline: 1}
	get := cell{Label: "GET", Test: "get", Pipeline: 16}
	h := &harness{rounds: 2, clients: 50, requests: 1000, keyspace: 10, cells: []cell{set, get}}
	rps := func(vs ...float64) []sample {
		var s []sample
		for _, v := range vs {
			s = append(s, sample{RPS: v})
		}
		return s
	}
	pols := []policyResult{
		{Fsync: "everysec", CeilingCmd: "ceiling …", Cells: []cellResult{
			{Cell: set, Ours: rps(50, 60), Redis: rps(100, 100), Ceiling: rps(90, 80)},
			{Cell: get, Ours: rps(120, 110), Redis: rps(100, 100), Ceiling: rps(150, 130)},
		}},
		{Fsync: "always", Cells: []cellResult{
			{Cell: set, Ours: rps(50, 50), Redis: rps(100, 100)},
			{Cell: get, Ours: rps(100, 100), Redis: rps(100, 100)},
		}},
	}
	c := h.throughputChart(pols)
	if !strings.Contains(c.Subtitle, "Go ceiling") {
		t.Errorf("subtitle %q does not say what the ceiling's groups are", c.Subtitle)
	}
	if want := []string{"appendfsync everysec", "appendfsync always", "Go ceiling, everysec"}; !slices.Equal(c.Groups, want) {
		t.Fatalf("groups %q, want %q", c.Groups, want)
	}
	for g, want := range [][]float64{{0.55, 1.15}, {0.5, 1}, {0.85, 1.4}} {
		for i, w := range want {
			if got := c.Values[g][i]; math.Abs(got-w) > 1e-9 {
				t.Errorf("%s, %s: %v, want %v", c.Groups[g], c.Series[i], got, w)
			}
		}
	}
	pols[0].CeilingCmd = "" // a run with -ceiling=false
	if c := h.throughputChart(pols); len(c.Groups) != 2 || strings.Contains(c.Subtitle, "ceiling") {
		t.Errorf("without bench/ceiling: groups %q, subtitle %q", c.Groups, c.Subtitle)
	}
}

// TestThroughputMarkdownCeiling checks that the throughput section shows
// bench/ceiling's column and command for each policy it ran under, and not
// for one it did not run under (here always, as in a run of an older
// harness or with -ceiling=false), and that a target names its cells
// only where it ran, while the target itself still counts oncekv's cells
// only.
func TestThroughputMarkdownCeiling(t *testing.T) {
	h := &harness{rounds: 2, clients: 50, requests: 1000, keyspace: 10, pauseIdle: true}
	set := cell{Label: "SET", Test: "set", Pipeline: 1}
	get := cell{Label: "GET", Test: "get", Pipeline: 16}
	rps := func(vs ...float64) []sample {
		var s []sample
		for _, v := range vs {
			s = append(s, sample{RPS: v, P50: 1, P99: 2})
		}
		return s
	}
	pols := []policyResult{
		{Fsync: "everysec", OursCmd: "oncekv …", RedisCmd: "redis-server …", CeilingCmd: "ceiling -addr 127.0.0.1:<port> -aof <dir>/ceiling/ceiling.aof -appendfsync everysec", Cells: []cellResult{
			{Cell: set, Ours: rps(50, 60), Redis: rps(100, 100), Ceiling: rps(90, 80)},
			{Cell: get, Ours: rps(120, 110), Redis: rps(100, 100), Ceiling: rps(150, 130)},
		}},
		{Fsync: "always", OursCmd: "oncekv …", RedisCmd: "redis-server …", Cells: []cellResult{
			{Cell: set, Ours: rps(50, 50), Redis: rps(100, 100)},
		}},
	}
	md := h.throughputMarkdown(sectionHead{title: "Throughput", runLine: "run", command: "bench"}, pols, "")
	checkText(t, "section", md, []string{
		"Under appendfsync everysec a third server takes its turn in every cell: `bench/ceiling`, a deliberately minimal Go server",
		"under everysec it fdatasyncs the log every second.",
		"    ceiling -addr 127.0.0.1:<port> -aof <dir>/ceiling/ceiling.aof -appendfsync everysec\n",
		"| ratio per round | Go ceiling req/s | ceiling/redis |\n|---|--:|--:|--:|--:|--:|--:|---|--:|--:|\n",
		"| SET | 1 | 55 | 100 | **0.55×** | 1.000 / 2.000 | 1.000 / 2.000 | 0.50, 0.60 | 85 | 0.85× |\n",
		"| GET | 16 | 115 | 100 | **1.15×** | 1.000 / 2.000 | 1.000 / 2.000 | 1.20, 1.10 | 140 | 1.40× |\n",
		"1 of 2 cells ≥ 1.0×; lowest 0.55× (SET). A minimal Go server with no storage engine (bench/ceiling), same run: 1 of 2 cells ≥ 1.0×, lowest 0.85× (SET)",
		"### appendfsync always\n\n| test | -P | oncekv req/s | redis req/s | oncekv/redis | oncekv p50 / p99 ms | redis p50 / p99 ms | ratio per round |\n|---|--:|--:|--:|--:|--:|--:|---|\n| SET |",
	}, []string{
		// The always target naming bench/ceiling, which did not run there,
		// or the text describing it there.
		"0 of 1 cells ≥ 1.0×; lowest 0.50× (SET). A minimal",
		"under always a connection",
	})

	// Under both policies: both commands, once each, and both columns.
	pols[1].CeilingCmd = "ceiling -addr 127.0.0.1:<port> -aof <dir>/ceiling/ceiling.aof -appendfsync always"
	pols[1].Cells[0].Ceiling = rps(70, 80)
	md = h.throughputMarkdown(sectionHead{title: "Throughput", runLine: "run", command: "bench"}, pols, "")
	checkText(t, "section with the ceiling under both policies", md, []string{
		"Under appendfsync everysec and always a third server",
		"under everysec it fdatasyncs the log every second; under always a connection runs the next fdatasync",
		"    ceiling -addr 127.0.0.1:<port> -aof <dir>/ceiling/ceiling.aof -appendfsync everysec\n    ceiling -addr 127.0.0.1:<port> -aof <dir>/ceiling/ceiling.aof -appendfsync always\n\n",
		"### appendfsync always\n\n| test | -P | oncekv req/s | redis req/s | oncekv/redis | oncekv p50 / p99 ms | redis p50 / p99 ms | ratio per round | Go ceiling req/s | ceiling/redis |\n",
		"| SET | 1 | 50 | 100 | **0.50×** | 1.000 / 2.000 | 1.000 / 2.000 | 0.50, 0.50 | 75 | 0.75× |\n",
		"0 of 1 cells ≥ 1.0×; lowest 0.50× (SET). A minimal Go server with no storage engine (bench/ceiling), same run: 0 of 1 cells ≥ 1.0×, lowest 0.75× (SET)",
	}, nil)
	if n := strings.Count(md, "a deliberately minimal Go server"); n != 1 {
		t.Errorf("bench/ceiling is described %d times, want once:\n%s", n, md)
	}
}

// The caches the report sums are the value cache, and the block cache only
// where tables are compressed (uncompressed tables are read without it).
func TestCacheConfigCountsTheBlockCacheOfCompressedTables(t *testing.T) {
	for _, tc := range []struct {
		compression string
		want        int64
	}{
		{"none", 5 << 20},
		{"zstd", 5<<20 + 3<<20},
	} {
		a := testserver.Start(t, "--value-cache-size", "5mb", "--block-cache-size", "3mb", "--table-compression", tc.compression)
		directives, got := cacheConfig(a.Addr().String())
		if got != tc.want {
			t.Fatalf("%s: caches %d bytes, want %d (%q)", tc.compression, got, tc.want, directives)
		}
	}
}

// TestGitCommitLeavesOwnFilesOut checks that the commit line calls a
// checkout modified when a tracked file differs, but not when only the
// files the harness writes itself do (a run just before leaves them so).
func TestGitCommitLeavesOwnFilesOut(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q")
	for _, f := range []string{"BENCHMARKS.md", "bench/throughput.svg", "main.go"} {
		write(f, "before\n")
	}
	git("add", ".")
	git("commit", "-q", "-m", "one")
	own := []string{filepath.Join(repo, "BENCHMARKS.md"), filepath.Join(repo, "bench", "throughput.svg")}
	clean := gitCommit(repo, own...)
	if len(clean) != 12 {
		t.Fatalf("clean checkout: %q, want a 12-digit commit alone", clean)
	}
	write("BENCHMARKS.md", "after\n")
	write("bench/throughput.svg", "after\n")
	write("untracked.txt", "new\n")
	if got := gitCommit(repo, own...); got != clean {
		t.Errorf("only the harness's own files changed: %q, want %q", got, clean)
	}
	if got := gitCommit(repo); got != clean+" with uncommitted changes" {
		t.Errorf("the same, with no files named as own: %q", got)
	}
	write("main.go", "after\n")
	if got := gitCommit(repo, own...); got != clean+" with uncommitted changes" {
		t.Errorf("main.go changed: %q", got)
	}
}
