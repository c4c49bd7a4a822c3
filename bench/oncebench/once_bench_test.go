package main

// Benchmarks of the ONCE commands against an in-process server, and a
// quick test that the baseline's Lua scripts are right on a real
// redis-server and that both sides' code paths work:
//
//	go test ./bench/oncebench                         # TestBaselineScript, ~1 s
//	go test ./bench/oncebench -run '^$' -bench .     # the benchmarks
//
// In process, b.ReportAllocs counts the server's allocations as well as
// the client's.

import (
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncekv/oncekv/bench/internal/benchkit"
	"github.com/oncekv/oncekv/internal/testserver"
)

// benchClients is the number of concurrent connections of the parallel
// benchmarks, as in the command's cycle benchmark.
const benchClients = 50

func startOnce(tb testing.TB) string {
	tb.Helper()
	return testserver.Start(tb, "--appendfsync", "everysec").Addr().String()
}

func mustDial(tb testing.TB, addr string) *conn {
	tb.Helper()
	c, err := dial(addr)
	if err != nil {
		tb.Fatalf("dial %s: %v", addr, err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

func mustDialN(tb testing.TB, addr string, n int) []*conn {
	tb.Helper()
	cs, err := dialN(addr, n)
	if err != nil {
		tb.Fatalf("dial %d connections to %s: %v", n, addr, err)
	}
	tb.Cleanup(func() { closeAll(cs) })
	return cs
}

// runParallel runs body on benchClients connections (rounded up to a
// multiple of GOMAXPROCS), each given its own connection.
func runParallel(b *testing.B, addr string, body func(c *conn, id int, pb *testing.PB) error) {
	procs := runtime.GOMAXPROCS(0)
	par := (benchClients + procs - 1) / procs
	pool := make(chan *conn, par*procs)
	for _, c := range mustDialN(b, addr, par*procs) {
		pool <- c
	}
	var ids atomic.Int64
	b.SetParallelism(par)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := <-pool
		defer func() { pool <- c }()
		if err := body(c, int(ids.Add(1)), pb); err != nil {
			b.Error(err)
		}
	})
}

// BenchmarkClaimComplete: one op is ONCE.CLAIM k LEASE 30000 then
// ONCE.COMPLETE k tok answer KEEP 60000 on a fresh key, from 50
// connections at once.
func BenchmarkClaimComplete(b *testing.B) {
	addr := startOnce(b)
	prefix := "bench:cc:" + strconv.FormatInt(time.Now().UnixNano(), 10) + ":"
	answer := strings.Repeat("a", 32)
	b.ReportAllocs()
	runParallel(b, addr, func(c *conn, id int, pb *testing.PB) error {
		base := prefix + strconv.Itoa(id) + ":"
		for n := 0; pb.Next(); n++ {
			if err := onceCycle(c, base+strconv.Itoa(n), answer); err != nil {
				return err
			}
		}
		return nil
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
}

// BenchmarkReplay: one op is ONCE.CLAIM on a done key (the kept answer is
// returned, nothing runs), from 50 connections at once.
func BenchmarkReplay(b *testing.B) {
	addr := startOnce(b)
	key := "bench:replay"
	answer := strings.Repeat("a", 32)
	if err := onceCycle(mustDial(b, addr), key, answer); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	runParallel(b, addr, func(c *conn, _ int, pb *testing.PB) error {
		for pb.Next() {
			r, err := c.Do("ONCE.CLAIM", key, "LEASE", leaseMs)
			if err != nil {
				return err
			}
			if a, ok := r.Pair("done"); !ok || a.Str != answer {
				return fmt.Errorf("ONCE.CLAIM %s: %v, want [done, answer]", key, r)
			}
		}
		return nil
	})
}

// BenchmarkWakeup: one op is a round on a fresh key: claim, N connections
// block in ONCE.CLAIM k WAIT 0, complete; p50-us and p99-us are the
// waiters' wake-up latencies (answer arrival − COMPLETE sent) over all
// rounds.
func BenchmarkWakeup(b *testing.B) {
	addr := startOnce(b)
	if err := benchkit.RaiseNofile(4096); err != nil {
		b.Logf("raise open-file limit: %v", err)
	}
	answer := strings.Repeat("a", 32)
	for _, n := range []int{1, 50, 1000} {
		b.Run("waiters="+strconv.Itoa(n), func(b *testing.B) {
			run := mustDial(b, addr)
			ws := mustDialN(b, addr, n)
			prefix := "bench:wake:" + strconv.Itoa(n) + ":" + strconv.FormatInt(time.Now().UnixNano(), 10) + ":"
			var lat []time.Duration
			r := 0
			for b.Loop() {
				l, err := onceWakeRound(run, ws, prefix+strconv.Itoa(r), answer, 30*time.Second, defaultWakeReader())
				if err != nil {
					b.Fatal(err)
				}
				lat = append(lat, l...)
				r++
			}
			b.ReportMetric(float64(percentile(lat, 0.5))/1e3, "p50-us")
			b.ReportMetric(float64(percentile(lat, 0.99))/1e3, "p99-us")
		})
	}
}

// TestBaselineScript checks the baseline's Lua scripts on a real
// redis-server (claim, complete, stale tokens, fencing, keep), the oncekv
// cycle the benchmark runs, and a very short run of each measurement.
func TestBaselineScript(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found (%v): the baseline runs on a real Redis 7; install it with `apt-get install -y redis-server` (or run ./test.sh, which does)", err)
	}
	rs, err := benchkit.StartRedis(bin, t.TempDir(), "everysec")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Stop)
	onceAddr := startOnce(t)
	answer := "the answer"

	rc := mustDial(t, rs.Addr)
	sc, err := loadScripts(rc)
	if err != nil {
		t.Fatal(err)
	}
	do := func(c *conn, args ...string) reply {
		t.Helper()
		r, err := c.Do(args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return r
	}
	const fence = "t:fence"

	t.Run("redis baseline", func(t *testing.T) {
		key := "t:base"
		tok, err := baseClaim(rc, fence, key)
		if err != nil || tok == "" {
			t.Fatalf("claim: %q, %v; want a token", tok, err)
		}
		if tok2, err := baseClaim(rc, fence, key); err != nil || tok2 != "" {
			t.Fatalf("second claim of a running key: %q, %v; want taken", tok2, err)
		}
		n, _ := strconv.Atoi(tok)
		stale := strconv.Itoa(n - 1)
		if ok, err := baseComplete(rc, sc, key, stale, "wrong"); err != nil || ok {
			t.Fatalf("complete with an older token: %v, %v; want stale", ok, err)
		}
		if r := do(rc, "GET", key); r.Str != runningPrefix+tok {
			t.Fatalf("after a stale complete: GET %v, want %q", r, runningPrefix+tok)
		}
		if ok, err := baseComplete(rc, sc, key, tok, answer); err != nil || !ok {
			t.Fatalf("complete: %v, %v; want ok", ok, err)
		}
		if r := do(rc, "GET", key); r.Str != donePrefix+answer {
			t.Fatalf("after complete: GET %v, want %q", r, donePrefix+answer)
		}
		if r := do(rc, "PTTL", key); r.N <= 30000 || r.N > 60000 {
			t.Fatalf("after complete: PTTL %v, want the keep (30000, 60000]", r)
		}
		if ok, err := baseComplete(rc, sc, key, tok, "again"); err != nil || ok {
			t.Fatalf("second complete: %v, %v; want stale", ok, err)
		}
		if tok2, err := baseClaim(rc, fence, key); err != nil || tok2 != "" {
			t.Fatalf("claim of a done key: %q, %v; want taken", tok2, err)
		}
		// A lapsed claim taken over: the old runner's token is stale.
		key = "t:lapse"
		old, _ := baseClaim(rc, fence, key)
		do(rc, "DEL", key)
		cur, _ := baseClaim(rc, fence, key)
		if o, c := atoi(old), atoi(cur); c <= o {
			t.Fatalf("tokens %s then %s: want growing", old, cur)
		}
		if ok, _ := baseComplete(rc, sc, key, old, "late"); ok {
			t.Fatal("complete with the lapsed runner's token succeeded")
		}
		if ok, _ := baseComplete(rc, sc, key, cur, answer); !ok {
			t.Fatal("complete by the new holder failed")
		}
		// EVALSHA falls back to EVAL when the script cache is flushed.
		do(rc, "SCRIPT", "FLUSH")
		if err := baseCycle(rc, sc, fence, "t:flushed:k", answer); err != nil {
			t.Fatalf("cycle after SCRIPT FLUSH: %v", err)
		}
	})

	t.Run("redis one-script claim", func(t *testing.T) {
		key := "t:lua"
		r, err := luaClaim(rc, sc, fence, key)
		tok, ok := r.Pair("claimed")
		if err != nil || !ok || tok.Kind != ':' {
			t.Fatalf("claim: %v, %v; want [claimed, token]", r, err)
		}
		r, _ = luaClaim(rc, sc, fence, key)
		if ms, ok := r.Pair("running"); !ok || ms.N <= 0 || ms.N > 30000 {
			t.Fatalf("claim of a running key: %v, want [running, ms-left]", r)
		}
		if ok, err := baseComplete(rc, sc, key, strconv.FormatInt(tok.N, 10), answer); err != nil || !ok {
			t.Fatalf("complete: %v, %v", ok, err)
		}
		r, _ = luaClaim(rc, sc, fence, key)
		if a, ok := r.Pair("done"); !ok || a.Str != answer {
			t.Fatalf("claim of a done key: %v, want [done, %q]", r, answer)
		}
	})

	t.Run("oncekv cycle", func(t *testing.T) {
		oc := mustDial(t, onceAddr)
		key := "t:once"
		tok, err := onceClaim(oc, key)
		if err != nil {
			t.Fatal(err)
		}
		if r := do(oc, "ONCE.CLAIM", key); r.Arr == nil || r.Arr[0].Str != "running" {
			t.Fatalf("claim of a running key: %v, want [running, ms]", r)
		}
		if err := onceComplete(oc, key, tok, answer); err != nil {
			t.Fatal(err)
		}
		if r := do(oc, "ONCE.CLAIM", key, "LEASE", leaseMs); r.Arr == nil || r.Arr[0].Str != "done" || r.Arr[1].Str != answer {
			t.Fatalf("claim of a done key: %v, want [done, %q]", r, answer)
		}
		if r := do(oc, "ONCE.COMPLETE", key, tok, "again"); !r.IsErr() || !strings.HasPrefix(r.Str, "STALE") {
			t.Fatalf("second complete: %v, want -STALE", r)
		}
		if r := do(oc, "PTTL", key); r.N <= 30000 || r.N > 60000 {
			t.Fatalf("PTTL %v, want the keep (30000, 60000]", r)
		}
	})

	t.Run("measurements", func(t *testing.T) {
		prefix := "t:m:"
		systems := []system{
			newOnceSystem(onceAddr, prefix+"raw-once:"), newBaseSystem(rs.Addr, prefix+"raw-base:", sc),
			newLuaClaimSystem(rs.Addr, prefix+"raw-lua:", sc),
			newGoOnceSystem(onceAddr, prefix+"go-once:"), newGoKVSystem(onceAddr, prefix+"go-kv:"),
			newGoLuaClaimSystem(rs.Addr, prefix+"go-lua:"), newGoSetNXSystem(rs.Addr, prefix+"go-setnx:"),
			newGoIncrSystem(rs.Addr, prefix+"go-incr:"),
			newPingSystem(floorOncekv, true, onceAddr, prefix+"raw-ping-once:"), newPingSystem(floorRedis, false, rs.Addr, prefix+"raw-ping-redis:"),
			newGoPingSystem(floorOncekv, true, onceAddr, prefix+"go-ping-once:"), newGoPingSystem(floorRedis, false, rs.Addr, prefix+"go-ping-redis:"),
		}
		oc := mustDial(t, onceAddr)
		for _, s := range systems {
			fns, closeFn, err := s.open(4)
			if err != nil {
				t.Fatalf("%s: open: %v", s.name, err)
			}
			res, err := runCycles(fns, s.prefix, 100*time.Millisecond, "r", answer)
			closeFn()
			if err != nil {
				t.Fatalf("%s (%s): %v", s.name, s.client, err)
			}
			if res.cycles == 0 || len(res.lat) != int(res.cycles) {
				t.Fatalf("%s (%s): %d cycles, %d latencies", s.name, s.client, res.cycles, len(res.lat))
			}
			// The first key of worker 0 was claimed and completed.
			key := s.prefix + "r:0:0"
			switch {
			case s.floor: // PING + PING: nothing is stored
			case s.extra: // kv: the key is the Once's name + ":" + key, the answer JSON
				key = prefix + "go-kv:kv:r:0:0"
				if r := do(oc, "ONCE.CLAIM", key); r.Arr == nil || r.Arr[0].Str != "done" || r.Arr[1].Str != `"`+answer+`"` {
					t.Fatalf("%s: ONCE.CLAIM %s: %v, want [done, JSON answer]", s.name, key, r)
				}
			case s.oncekv:
				if r := do(oc, "ONCE.CLAIM", key); r.Arr == nil || r.Arr[0].Str != "done" || r.Arr[1].Str != answer {
					t.Fatalf("%s: ONCE.CLAIM %s: %v, want [done, answer]", s.name, key, r)
				}
			default:
				if r := do(rc, "GET", key); r.Str != donePrefix+answer {
					t.Fatalf("%s: GET %s: %v, want %q", s.name, key, r, donePrefix+answer)
				}
			}
		}
		const n = 5
		ws := mustDialN(t, onceAddr, n)
		for r, reader := range []string{readerGoroutines, defaultWakeReader(), readerGoroutines} {
			lat, err := onceWakeRound(oc, ws, prefix+"wake:"+strconv.Itoa(r), answer, 10*time.Second, reader)
			if err != nil || len(lat) != n {
				t.Fatalf("oncekv wake-up round %d, %s: %d latencies, %v", r, reader, len(lat), err)
			}
			for _, l := range lat {
				if l <= 0 || l > 5*time.Second {
					t.Fatalf("oncekv wake-up round %d, %s: latencies %v", r, reader, lat)
				}
			}
		}
		// The redis-server references, on the same connections round after
		// round (and then polling on them: PUBLISH leaves them unsubscribed).
		rws := mustDialN(t, rs.Addr, n)
		for r, reader := range []string{readerGoroutines, defaultWakeReader(), readerGoroutines} {
			for _, ref := range []struct {
				name  string
				round func(run *conn, ws []*conn, key, answer string, timeout time.Duration, reader string) ([]time.Duration, error)
			}{{refPublish, publishWakeRound}, {refBlpop, blpopWakeRound}} {
				key := prefix + ref.name + ":" + strconv.Itoa(r)
				lat, err := ref.round(rc, rws, key, answer, 10*time.Second, reader)
				if err != nil || len(lat) != n {
					t.Fatalf("redis %s wake-up round %d, %s: %d latencies, %v", ref.name, r, reader, len(lat), err)
				}
				for _, l := range lat {
					if l <= 0 || l > 5*time.Second {
						t.Fatalf("redis %s wake-up round %d, %s: latencies %v", ref.name, r, reader, lat)
					}
				}
				// Nothing left behind: no subscribers, no list, nobody blocked.
				if r := do(rc, "PUBSUB", "NUMSUB", key); len(r.Arr) != 2 || r.Arr[1].N != 0 {
					t.Fatalf("after the %s round: PUBSUB NUMSUB %v, want 0", ref.name, r)
				}
				if r := do(rc, "EXISTS", key); r.N != 0 {
					t.Fatalf("after the %s round: EXISTS %s = %v, want 0", ref.name, key, r)
				}
				if b, err := blockedClients(rc); err != nil || b != 0 {
					t.Fatalf("after the %s round: %d blocked clients (%v), want 0", ref.name, b, err)
				}
			}
		}
		lat, err := pollWakeRound(mustDial(t, rs.Addr), rws, sc, fence, prefix+"wake", answer, 2*time.Millisecond, 10*time.Second)
		if err != nil || len(lat) != n {
			t.Fatalf("polling wake-up round: %d latencies, %v", len(lat), err)
		}
		for _, l := range lat {
			if l <= 0 || l > 5*time.Second {
				t.Fatalf("polling latencies %v", lat)
			}
		}
	})
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
