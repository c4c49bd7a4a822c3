package main

import (
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestLoopbackWakeRound checks the wake-up floor: every waiter of a round
// gets the reply once (the reader checks its bytes), with either reader,
// round after round on the same connections, and with fewer waiters than
// were opened.
func TestLoopbackWakeRound(t *testing.T) {
	const n = 40
	l, err := openLoopback(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.close)
	for r, tc := range []struct {
		reader  string
		waiters int
	}{{readerGoroutines, n}, {defaultWakeReader(), n}, {defaultWakeReader(), 7}, {readerGoroutines, 1}} {
		lat, err := loopbackWakeRound(l, tc.waiters, "the answer", 10*time.Second, tc.reader)
		if err != nil || len(lat) != tc.waiters {
			t.Fatalf("round %d (%s, %d waiters): %d latencies, %v", r, tc.reader, tc.waiters, len(lat), err)
		}
		for _, d := range lat {
			if d <= 0 || d > 5*time.Second {
				t.Fatalf("round %d (%s): latencies %v", r, tc.reader, lat)
			}
		}
	}
	// Nothing is left unread: a waiter that got more than its reply
	// would hold the rest in its buffer.
	for i, w := range l.ws {
		if b := w.BufferedIn(); b != 0 {
			t.Fatalf("waiter %d: %d bytes left over", i, b)
		}
	}
}

// TestGoroutineWakeRound checks the in-process floor: one latency per
// goroutine, each measured from the close (a latency that counted the
// goroutines' start or the settle would be at least settle), and no
// goroutine left running after the rounds.
func TestGoroutineWakeRound(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, tc := range []struct {
		n      int
		settle time.Duration
	}{{1, time.Millisecond}, {7, time.Millisecond}, {300, time.Millisecond}, {50, 300 * time.Millisecond}} {
		lat := goroutineWakeRound(tc.n, tc.settle)
		if len(lat) != tc.n {
			t.Fatalf("%d goroutines: %d latencies", tc.n, len(lat))
		}
		for _, d := range lat {
			if d <= 0 || d > 5*time.Second {
				t.Fatalf("%d goroutines: latencies %v", tc.n, lat)
			}
		}
		if tc.settle >= 100*time.Millisecond && slices.Min(lat) >= tc.settle {
			t.Fatalf("%d goroutines, settled %v: the fastest woke %v after the close, so the settle was counted", tc.n, tc.settle, slices.Min(lat))
		}
	}
	// A goroutine that has called Done may not have exited yet.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines before the rounds, %d after", before, runtime.NumGoroutine())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSummarizeLeavesFloorsOut checks that the PING + PING floors, the
// fastest rows of any run, are reported as floors and never taken for
// oncekv's figure or for the fastest baseline.
func TestSummarizeLeavesFloorsOut(t *testing.T) {
	systems := []system{
		{name: "oncekv: ONCE", client: clientGoRedis, oncekv: true},
		{name: "oncekv: kv", client: clientGoRedis, oncekv: true, extra: true},
		{name: "redis: fast", client: clientGoRedis},
		{name: "redis: slow", client: clientGoRedis},
		{name: floorOncekv, client: clientGoRedis, oncekv: true, floor: true},
		{name: floorRedis, client: clientGoRedis, floor: true},
		{name: "oncekv: ONCE", client: clientRaw, oncekv: true},
		{name: "redis: lua", client: clientRaw},
	}
	rate := func(perSec ...int64) []cycleResult {
		var rs []cycleResult
		for _, p := range perSec {
			rs = append(rs, cycleResult{cycles: p, elapsed: time.Second, lat: []time.Duration{time.Millisecond}})
		}
		return rs
	}
	results := [][]cycleResult{rate(10), rate(9), rate(16), rate(8), rate(22), rate(25), rate(12), rate(15)}
	o := options{clientLibs: []string{clientGoRedis, clientRaw}}
	sum := summarize(o, systems, results, nil)
	want := []ratioRow{
		{Client: clientGoRedis, Oncekv: 10, BestBaseline: "redis: fast", Baseline: 16, Ratio: 10.0 / 16, OncekvFloor: 22, RedisFloor: 25},
		{Client: clientRaw, Oncekv: 12, BestBaseline: "redis: lua", Baseline: 15, Ratio: 12.0 / 15},
	}
	if !slices.Equal(sum.Ratios, want) {
		t.Fatalf("ratios %+v\nwant %+v", sum.Ratios, want)
	}
	if !sum.Cycles[4].Floor || !sum.Cycles[5].Floor || sum.Cycles[2].Floor {
		t.Fatalf("floor flags of the rows: %+v", sum.Cycles)
	}
}
