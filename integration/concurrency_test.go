package integration

// KV-1 under concurrency: INCR from many connections gives distinct,
// consecutive values; MULTI/EXEC blocks are atomic for every reader; WATCH
// makes optimistic-lock loops correct. The servers these tests start are
// built with the race detector (go build -race), and any data race they
// report fails the test.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// raceBinary builds the server with -race into a directory that lives as
// long as tb. With ONCEKV_BIN set, it returns that binary instead.
func raceBinary(tb testing.TB) string {
	tb.Helper()
	if os.Getenv("ONCEKV_BIN") != "" {
		tb.Logf("ONCEKV_BIN is set: using it, not a -race build")
		return BuildOncekv(tb)
	}
	root, err := moduleRoot()
	if err != nil {
		tb.Fatalf("raceBinary: %v", err)
	}
	path := filepath.Join(tb.TempDir(), "oncekv-race")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "go", "build", "-race", "-o", path, ".")
	c.Dir = root
	if out, err := c.CombinedOutput(); err != nil {
		tb.Fatalf("go build -race in %s: %v\n%s", root, err, out)
	}
	return path
}

// startOncekvBin is StartOncekv with a given binary.
func startOncekvBin(tb testing.TB, bin string, extra ...string) *Oncekv {
	tb.Helper()
	dir := tb.TempDir()
	var last error
	for attempt := 0; attempt < 5; attempt++ {
		o, err := startOncekv(tb, bin, dir, FreePort(tb), extra)
		if err == nil {
			return o
		}
		last = err
		if !strings.Contains(err.Error(), "in use") {
			break
		}
	}
	tb.Fatalf("starting %s: %v", bin, last)
	return nil
}

// stopAndCheckRaces stops the server gracefully and fails tb if the race
// detector reported anything in its output.
func stopAndCheckRaces(tb testing.TB, o *Oncekv) {
	tb.Helper()
	o.Stop(tb)
	out := o.Output()
	i := strings.Index(out, "WARNING: DATA RACE")
	if i < 0 {
		return
	}
	report := out[i:]
	if j := strings.Index(report[1:], "=================="); j > 0 {
		report = report[:j+1]
	}
	if len(report) > 8000 {
		report = report[:8000] + "…"
	}
	tb.Errorf("the server (built with -race) reported %d data race(s); the first:\n%s",
		strings.Count(out, "WARNING: DATA RACE"), report)
}

// errSink collects the errors of many goroutines, keeping the first few.
type errSink struct {
	mu   sync.Mutex
	n    int
	msgs []string
}

func (e *errSink) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if len(e.msgs) < 15 {
		e.msgs = append(e.msgs, fmt.Sprintf(format, args...))
	}
}

// report fails tb with the collected errors, if any.
func (e *errSink) report(tb testing.TB) {
	tb.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, m := range e.msgs {
		tb.Error(m)
	}
	if e.n > len(e.msgs) {
		tb.Errorf("…and %d more errors", e.n-len(e.msgs))
	}
}

// rawDo sends one command on c and reads its reply, without touching a
// testing.TB (it runs in goroutines).
func rawDo(c *RawConn, args ...string) (*Frame, error) {
	if err := c.TrySend(EncodeCommand(args...)); err != nil {
		return nil, err
	}
	return c.TryReadFrame()
}

// frameInt reads an integer out of an integer reply or a bulk string
// holding one; a null counts as 0 (a missing counter).
func frameInt(f *Frame) (int64, error) {
	switch {
	case f.Null:
		return 0, nil
	case f.Type == ':':
		return strconv.ParseInt(f.Str, 10, 64)
	case f.Type == '$':
		return strconv.ParseInt(f.Str, 10, 64)
	}
	return 0, fmt.Errorf("reply %q is not an integer", f.Raw)
}

// dialRawN opens n raw connections to addr.
func dialRawN(tb testing.TB, addr string, n int) []*RawConn {
	tb.Helper()
	cs := make([]*RawConn, n)
	for i := range cs {
		cs[i] = DialRaw(tb, addr)
		cs[i].Timeout = 20 * time.Second
	}
	return cs
}

// checkConsecutive checks that got, sorted, is 1..n.
func checkConsecutive(tb testing.TB, what string, got []int64, n int) {
	tb.Helper()
	slices.Sort(got)
	if len(got) != n {
		tb.Errorf("%s: %d values, want %d", what, len(got), n)
	}
	for i, v := range got {
		if v != int64(i+1) {
			lo := max(0, i-3)
			tb.Errorf("%s: sorted values break at index %d: …%v…; want 1..%d each once (KV-1)", what, i, got[lo:min(len(got), i+4)], n)
			return
		}
	}
}

func TestConcurrency(t *testing.T) {
	t.Parallel()
	bin := raceBinary(t)
	// Under always, the replies of writes are sent by the store's logger
	// once synced (resp/handoff.go), from another goroutine than the
	// connection's: the same checks of order and count run there too.
	always := []string{"--appendfsync", "always"}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, addr string)
		args []string
	}{
		{"INCR-roundtrips", testIncrRoundtrips, nil},
		{"INCR-pipelined", testIncrPipelined, nil},
		{"INCR-run-once-guard", testIncrGuard, nil},
		{"INCRBY-with-GET", testIncrbyWithGet, nil},
		{"MULTI-EXEC-atomic", testMultiExecAtomic, nil},
		{"WATCH-optimistic-lock", testWatchLoop, nil},
		{"INCR-roundtrips-always", testIncrRoundtrips, always},
		{"INCR-pipelined-always", testIncrPipelined, always},
		{"INCRBY-with-GET-always", testIncrbyWithGet, always},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := startOncekvBin(t, bin, tc.args...)
			tc.run(t, o.Addr)
			stopAndCheckRaces(t, o)
		})
	}
}

// testIncrRoundtrips: 50 go-redis clients of one connection each, 100 INCRs
// each on one new key, all at once: the 5000 replies are 1..5000.
func testIncrRoundtrips(t *testing.T, addr string) {
	const conns, per = 50, 100
	ctx := grCtx(t, 60*time.Second)
	clients := make([]*redis.Client, conns)
	for i := range clients {
		// No retries: a retried INCR would count twice.
		clients[i] = grClient(t, addr, withOneConn(), withMaxRetries(-1), withReadTimeout(20*time.Second))
		if err := clients[i].Ping(ctx).Err(); err != nil {
			t.Fatalf("client %d: PING: %v", i, err)
		}
	}
	var (
		mu   sync.Mutex
		all  []int64
		errs errSink
		wg   sync.WaitGroup
	)
	start := make(chan struct{})
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			mine := make([]int64, 0, per)
			for range per {
				n, err := c.Incr(ctx, "hot").Result()
				if err != nil {
					errs.add("client %d: INCR hot: %v", i, err)
					return
				}
				if len(mine) > 0 && n <= mine[len(mine)-1] {
					errs.add("client %d: INCR hot = %d after %d on the same connection: want it to grow", i, n, mine[len(mine)-1])
				}
				mine = append(mine, n)
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	errs.report(t)
	checkConsecutive(t, "INCR replies of 50 connections", all, conns*per)
	if v, err := clients[0].Get(ctx, "hot").Result(); err != nil || v != strconv.Itoa(conns*per) {
		t.Errorf("GET hot = %q, %v; want %d", v, err, conns*per)
	}
}

// testIncrPipelined: 50 raw connections each write 200 INCRs in one go and
// then read the replies: 1..10000 overall, growing on each connection.
func testIncrPipelined(t *testing.T, addr string) {
	const conns, per = 50, 200
	cs := dialRawN(t, addr, conns)
	batch := make([]byte, 0, per*32)
	for range per {
		batch = append(batch, EncodeCommand("INCR", "piped")...)
	}
	var (
		mu   sync.Mutex
		all  []int64
		errs errSink
		wg   sync.WaitGroup
	)
	start := make(chan struct{})
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if err := c.TrySend(batch); err != nil {
				errs.add("conn %d: send: %v", i, err)
				return
			}
			mine := make([]int64, 0, per)
			for j := range per {
				f, err := c.TryReadFrame()
				if err != nil {
					errs.add("conn %d: reply %d of %d: %v", i, j, per, err)
					return
				}
				n, ok := f.Int()
				if !ok {
					errs.add("conn %d: INCR reply %q, want an integer", i, f.Raw)
					return
				}
				if len(mine) > 0 && n <= mine[len(mine)-1] {
					errs.add("conn %d: pipelined INCR replies out of order: %d after %d", i, n, mine[len(mine)-1])
				}
				mine = append(mine, n)
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	errs.report(t)
	checkConsecutive(t, "pipelined INCR replies of 50 connections", all, conns*per)
}

// testIncrGuard: the run-once guard `if INCR(k) == 1`: 50 connections
// INCR each of 100 new keys once, each in its own order; for every key
// exactly one connection gets 1, and the replies are 1..50.
func testIncrGuard(t *testing.T, addr string) {
	const conns, keys = 50, 100
	cs := dialRawN(t, addr, conns)
	got := make([][]int64, keys) // got[key] = the replies of all connections
	var (
		mu   sync.Mutex
		errs errSink
		wg   sync.WaitGroup
	)
	start := make(chan struct{})
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			order := rand.New(rand.NewPCG(uint64(i), 7)).Perm(keys)
			var batch []byte
			for _, k := range order {
				batch = append(batch, EncodeCommand("INCR", fmt.Sprintf("guard:%03d", k))...)
			}
			<-start
			if err := c.TrySend(batch); err != nil {
				errs.add("conn %d: send: %v", i, err)
				return
			}
			for _, k := range order {
				f, err := c.TryReadFrame()
				if err != nil {
					errs.add("conn %d: %v", i, err)
					return
				}
				n, ok := f.Int()
				if !ok {
					errs.add("conn %d: INCR guard:%03d = %q, want an integer", i, k, f.Raw)
					return
				}
				mu.Lock()
				got[k] = append(got[k], n)
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	errs.report(t)
	for k, vals := range got {
		ones := 0
		for _, v := range vals {
			if v == 1 {
				ones++
			}
		}
		if ones != 1 {
			t.Errorf("guard:%03d: %d connections got 1 from INCR, want exactly one (KV-1)", k, ones)
		}
		checkConsecutive(t, fmt.Sprintf("INCR guard:%03d replies", k), vals, conns)
	}
}

// testIncrbyWithGet: 20 writers INCRBY one key by their own positive step
// while 10 readers GET it. Every INCRBY reply is distinct (each is a state
// of the key), a writer's replies grow, the final value is the sum, and
// every value a reader sees is one of those states (or the missing key),
// never smaller than the one it saw before.
func testIncrbyWithGet(t *testing.T, addr string) {
	const writers, per, readers = 20, 100, 10
	ctx := grCtx(t, 60*time.Second)
	newClient := func() *redis.Client {
		c := grClient(t, addr, withOneConn(), withMaxRetries(-1), withReadTimeout(20*time.Second))
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatalf("PING: %v", err)
		}
		return c
	}
	var (
		mu      sync.Mutex
		states  = map[int64]int{0: 1} // INCRBY replies, and 0 for "missing"
		seen    [][]int64
		errs    errSink
		wg, rwg sync.WaitGroup
	)
	done := make(chan struct{})
	start := make(chan struct{})
	for r := range readers {
		c := newClient()
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			<-start
			var mine []int64
			defer func() {
				mu.Lock()
				seen = append(seen, mine)
				mu.Unlock()
			}()
			for {
				select {
				case <-done:
					return
				default:
				}
				s, err := c.Get(ctx, "counter").Result()
				if errors.Is(err, redis.Nil) {
					s, err = "0", nil
				}
				if err != nil {
					errs.add("reader %d: GET counter: %v", r, err)
					return
				}
				n, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					errs.add("reader %d: GET counter = %q, not an integer", r, s)
					return
				}
				if len(mine) > 0 && n < mine[len(mine)-1] {
					errs.add("reader %d: GET counter = %d after %d: the counter went back", r, n, mine[len(mine)-1])
				}
				mine = append(mine, n)
			}
		}()
	}
	var sum int64
	for w := range writers {
		step := int64(w + 1)
		sum += step * per
		c := newClient()
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var last int64
			for range per {
				n, err := c.IncrBy(ctx, "counter", step).Result()
				if err != nil {
					errs.add("writer %d: INCRBY counter %d: %v", w, step, err)
					return
				}
				if n <= last {
					errs.add("writer %d: INCRBY counter %d = %d after %d: want it to grow", w, step, n, last)
				}
				last = n
				mu.Lock()
				states[n]++
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	close(done)
	rwg.Wait()
	errs.report(t)

	for v, n := range states {
		if n > 1 {
			t.Errorf("INCRBY replied %d to %d callers: each state of the key must be seen by one INCRBY (KV-1)", v, n)
		}
	}
	if len(states) != writers*per+1 {
		t.Errorf("%d distinct INCRBY replies, want %d", len(states)-1, writers*per)
	}
	reads := 0
	for r, vals := range seen {
		reads += len(vals)
		for _, v := range vals {
			if states[v] == 0 {
				t.Errorf("reader %d: GET counter = %d, a value no INCRBY produced (a torn or lost update)", r, v)
				break
			}
		}
	}
	t.Logf("%d GETs interleaved with %d INCRBYs", reads, writers*per)
	if v, err := newClient().Get(ctx, "counter").Result(); err != nil || v != strconv.FormatInt(sum, 10) {
		t.Errorf("GET counter = %q, %v; want %d (the sum of all increments)", v, err, sum)
	}
}

// txInvariant is a MULTI/EXEC workload with a property every snapshot of
// its keys must have.
type txInvariant struct {
	name  string
	setup [][]string
	// keys are the keys a snapshot reads.
	keys []string
	// body returns the commands of one transaction.
	body func(rng *rand.Rand) [][]string
	// execOK checks one EXEC's replies ("" if fine).
	execOK func(replies []*Frame) string
	// check checks a snapshot of keys ("" if fine).
	check func(vals []int64) string
	// final checks the keys at the end, after txs transactions.
	final func(vals []int64, txs int) string
}

// testMultiExecAtomic: writers run MULTI … EXEC blocks (sent in one write,
// as pipelining clients do) while checkers take snapshots of the same keys
// both with MULTI GET … EXEC and with one MGET; no snapshot may see a
// transaction half done.
func testMultiExecAtomic(t *testing.T, addr string) {
	const writers, txs, checkers = 16, 60, 6
	var pairMu sync.Mutex
	var pairVals []int64
	invariants := []txInvariant{
		{
			// a and b are incremented together: always a == b.
			name: "pair",
			keys: []string{"pair:a", "pair:b"},
			body: func(*rand.Rand) [][]string {
				return [][]string{{"INCR", "pair:a"}, {"INCR", "pair:b"}}
			},
			execOK: func(r []*Frame) string {
				a, err1 := frameInt(r[0])
				b, err2 := frameInt(r[1])
				if err1 != nil || err2 != nil || a != b {
					return fmt.Sprintf("EXEC of INCR pair:a, INCR pair:b replied %q, %q: want equal integers", r[0].Raw, r[1].Raw)
				}
				pairMu.Lock()
				pairVals = append(pairVals, a)
				pairMu.Unlock()
				return ""
			},
			check: func(v []int64) string {
				if v[0] != v[1] {
					return fmt.Sprintf("pair:a = %d, pair:b = %d: a transaction was seen half done", v[0], v[1])
				}
				return ""
			},
			final: func(v []int64, n int) string {
				if v[0] != int64(n) || v[1] != int64(n) {
					return fmt.Sprintf("pair:a = %d, pair:b = %d after %d transactions", v[0], v[1], n)
				}
				return ""
			},
		},
		{
			// Transfers between 8 accounts: the total never changes.
			name: "bank",
			setup: func() [][]string {
				var s [][]string
				for i := range 8 {
					s = append(s, []string{"SET", fmt.Sprintf("acct:%d", i), "1000"})
				}
				return s
			}(),
			keys: []string{"acct:0", "acct:1", "acct:2", "acct:3", "acct:4", "acct:5", "acct:6", "acct:7"},
			body: func(rng *rand.Rand) [][]string {
				from := rng.IntN(8)
				to := (from + 1 + rng.IntN(7)) % 8
				amt := strconv.Itoa(1 + rng.IntN(100))
				return [][]string{
					{"DECRBY", fmt.Sprintf("acct:%d", from), amt},
					{"INCRBY", fmt.Sprintf("acct:%d", to), amt},
				}
			},
			check: func(v []int64) string {
				var sum int64
				for _, x := range v {
					sum += x
				}
				if sum != 8000 {
					return fmt.Sprintf("accounts %v sum to %d, want 8000: a transfer was seen half done", v, sum)
				}
				return ""
			},
			final: func(v []int64, _ int) string {
				var sum int64
				for _, x := range v {
					sum += x
				}
				if sum != 8000 {
					return fmt.Sprintf("accounts %v sum to %d at the end, want 8000", v, sum)
				}
				return ""
			},
		},
	}
	for _, inv := range invariants {
		t.Run(inv.name, func(t *testing.T) {
			runTxInvariant(t, addr, inv, writers, txs, checkers)
		})
	}
	pairMu.Lock()
	defer pairMu.Unlock()
	checkConsecutive(t, "EXEC replies of INCR pair:a", pairVals, writers*txs)
}

func runTxInvariant(t *testing.T, addr string, inv txInvariant, writers, txs, checkers int) {
	setup := DialRaw(t, addr)
	for _, s := range inv.setup {
		if f, err := rawDo(setup, s...); err != nil || f.Type == '-' {
			t.Fatalf("%s: %v", fmtArgs(s), errOrReply(err, f))
		}
	}
	snapshot := func(c *RawConn, useMulti bool) ([]int64, error) {
		var elems []*Frame
		if useMulti {
			var b []byte
			b = append(b, EncodeCommand("MULTI")...)
			for _, k := range inv.keys {
				b = append(b, EncodeCommand("GET", k)...)
			}
			b = append(b, EncodeCommand("EXEC")...)
			replies, err := sendReadN(c, b, len(inv.keys)+2)
			if err != nil {
				return nil, err
			}
			if err := checkQueued(replies, len(inv.keys)); err != nil {
				return nil, fmt.Errorf("MULTI GET… EXEC: %v", err)
			}
			elems = replies[len(replies)-1].Elems
		} else {
			f, err := rawDo(c, append([]string{"MGET"}, inv.keys...)...)
			if err != nil {
				return nil, err
			}
			if !f.IsAggregate() || len(f.Elems) != len(inv.keys) {
				return nil, fmt.Errorf("MGET replied %q", f.Raw)
			}
			elems = f.Elems
		}
		vals := make([]int64, len(elems))
		for i, e := range elems {
			v, err := frameInt(e)
			if err != nil {
				return nil, fmt.Errorf("GET %s: %v", inv.keys[i], err)
			}
			vals[i] = v
		}
		return vals, nil
	}

	var (
		errs     errSink
		wg, cwg  sync.WaitGroup
		mu       sync.Mutex
		nChecks  int
		deadline = time.Now().Add(60 * time.Second)
	)
	done := make(chan struct{})
	start := make(chan struct{})
	for i, c := range dialRawN(t, addr, checkers) {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			<-start
			n := 0
			defer func() { mu.Lock(); nChecks += n; mu.Unlock() }()
			for {
				select {
				case <-done:
					return
				default:
				}
				if time.Now().After(deadline) {
					errs.add("checker %d: still running at the deadline", i)
					return
				}
				useMulti := (i+n)%2 == 0
				vals, err := snapshot(c, useMulti)
				if err != nil {
					errs.add("checker %d: %v", i, err)
					return
				}
				if msg := inv.check(vals); msg != "" {
					how := "MGET"
					if useMulti {
						how = "MULTI GET… EXEC"
					}
					errs.add("checker %d (%s): %s", i, how, msg)
				}
				n++
			}
		}()
	}
	for i, c := range dialRawN(t, addr, writers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			<-start
			for range txs {
				body := inv.body(rng)
				b := EncodeCommand("MULTI")
				for _, command := range body {
					b = append(b, EncodeCommand(command...)...)
				}
				b = append(b, EncodeCommand("EXEC")...)
				replies, err := sendReadN(c, b, len(body)+2)
				if err != nil {
					errs.add("writer %d: %v", i, err)
					return
				}
				if err := checkQueued(replies, len(body)); err != nil {
					errs.add("writer %d: MULTI %v EXEC: %v", i, body, err)
					return
				}
				if inv.execOK != nil {
					if msg := inv.execOK(replies[len(replies)-1].Elems); msg != "" {
						errs.add("writer %d: %s", i, msg)
					}
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(done)
	cwg.Wait()
	errs.report(t)
	vals, err := snapshot(setup, false)
	if err != nil {
		t.Fatalf("final snapshot: %v", err)
	}
	if msg := inv.final(vals, writers*txs); msg != "" {
		t.Error(msg)
	}
	t.Logf("%d snapshots taken during %d transactions", nChecks, writers*txs)
}

// sendReadN writes b and reads n replies.
func sendReadN(c *RawConn, b []byte, n int) ([]*Frame, error) {
	if err := c.TrySend(b); err != nil {
		return nil, err
	}
	out := make([]*Frame, n)
	for i := range out {
		f, err := c.TryReadFrame()
		if err != nil {
			return nil, fmt.Errorf("reply %d of %d: %v", i+1, n, err)
		}
		out[i] = f
	}
	return out, nil
}

// checkQueued checks the replies of MULTI, n commands, EXEC: +OK, n ×
// +QUEUED, and an array of n replies none of which is an error.
func checkQueued(r []*Frame, n int) error {
	if r[0].Type != '+' || r[0].Str != "OK" {
		return fmt.Errorf("MULTI replied %q, want +OK", r[0].Raw)
	}
	for _, f := range r[1 : n+1] {
		if f.Type != '+' || f.Str != "QUEUED" {
			return fmt.Errorf("a queued command replied %q, want +QUEUED", f.Raw)
		}
	}
	exec := r[n+1]
	if !exec.IsAggregate() || len(exec.Elems) != n {
		return fmt.Errorf("EXEC replied %q, want an array of %d replies", exec.Raw, n)
	}
	for _, e := range exec.Elems {
		if e.Type == '-' {
			return fmt.Errorf("EXEC replied %q: a command failed", exec.Raw)
		}
	}
	return nil
}

func errOrReply(err error, f *Frame) any {
	if err != nil {
		return err
	}
	return string(f.Raw)
}

// testWatchLoop: 20 go-redis clients each make 10 increments with the
// optimistic-lock loop WATCH k; GET k; MULTI; SET k v+1; EXEC, retrying when
// EXEC answers nil. The values the successful EXECs set are exactly 1..200,
// and k ends at 200.
func testWatchLoop(t *testing.T, addr string) {
	const clients, per = 20, 10
	ctx := grCtx(t, 60*time.Second)

	// First the rule itself: a watched key written by another connection
	// makes EXEC fail; an untouched one lets it succeed.
	c1 := grClient(t, addr, withOneConn(), withMaxRetries(-1))
	c2 := grClient(t, addr, withOneConn(), withMaxRetries(-1))
	err := c1.Watch(ctx, func(tx *redis.Tx) error {
		if err := c2.Set(ctx, "w:probe", "by c2", 0).Err(); err != nil {
			return err
		}
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "w:probe", "by c1", 0)
			return nil
		})
		return err
	}, "w:probe")
	if !errors.Is(err, redis.TxFailedErr) {
		t.Errorf("WATCH w:probe; (another client SETs it); MULTI; SET; EXEC = %v; want a nil EXEC (redis.TxFailedErr)", err)
	}
	if v, _ := c1.Get(ctx, "w:probe").Result(); v != "by c2" {
		t.Errorf("GET w:probe = %q after the failed EXEC, want \"by c2\"", v)
	}
	err = c1.Watch(ctx, func(tx *redis.Tx) error {
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "w:probe", "by c1", 0)
			return nil
		})
		return err
	}, "w:probe")
	if err != nil {
		t.Errorf("WATCH w:probe; MULTI; SET; EXEC with no other writer = %v; want success", err)
	}

	var (
		mu      sync.Mutex
		set     []int64
		retries int
		errs    errSink
		wg      sync.WaitGroup
	)
	start := make(chan struct{})
	for i := range clients {
		c := grClient(t, addr, withOneConn(), withMaxRetries(-1), withReadTimeout(20*time.Second))
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for made := 0; made < per; {
				if ctx.Err() != nil {
					errs.add("client %d: out of time after %d increments", i, made)
					return
				}
				var next int64
				err := c.Watch(ctx, func(tx *redis.Tx) error {
					v, err := tx.Get(ctx, "w:k").Int64()
					if err != nil && !errors.Is(err, redis.Nil) {
						return err
					}
					next = v + 1
					_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Set(ctx, "w:k", next, 0)
						return nil
					})
					return err
				}, "w:k")
				if errors.Is(err, redis.TxFailedErr) {
					mu.Lock()
					retries++
					mu.Unlock()
					continue
				}
				if err != nil {
					errs.add("client %d: %v", i, err)
					return
				}
				made++
				mu.Lock()
				set = append(set, next)
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	errs.report(t)
	t.Logf("%d increments, %d retries after a nil EXEC", len(set), retries)
	checkConsecutive(t, "values set by successful WATCH/MULTI/EXEC", set, clients*per)
	if v, err := c1.Get(ctx, "w:k").Result(); err != nil || v != strconv.Itoa(clients*per) {
		t.Errorf("GET w:k = %q, %v; want %d", v, err, clients*per)
	}
}
