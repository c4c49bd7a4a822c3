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
// goroutine, each measured from the close (none before it: a goroutine
// that ran before the close would read a negative or absurd time), and
// no goroutine left running after the round.
func TestGoroutineWakeRound(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, n := range []int{1, 7, 300} {
		lat := goroutineWakeRound(n, time.Millisecond)
		if len(lat) != n {
			t.Fatalf("%d goroutines: %d latencies", n, len(lat))
		}
		for _, d := range lat {
			if d <= 0 || d > 5*time.Second {
				t.Fatalf("%d goroutines: latencies %v", n, lat)
			}
		}
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("%d goroutines before the rounds, %d after", before, after)
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
