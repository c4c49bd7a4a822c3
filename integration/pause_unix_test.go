//go:build unix

package integration

// A server that was stopped (SIGSTOP: a paused container, a benchmark
// that measures another server meanwhile) does not take the time it spent
// stopped for calm. Had it, it would start applying the writes it gathered
// to Badger just as its load came back (issue 6).

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// pendingWrites reads INFO persistence's oncekv_pending_writes: the writes
// logged and not yet applied to Badger.
func pendingWrites(tb testing.TB, c *redis.Client) uint64 {
	tb.Helper()
	info, err := c.Info(context.Background(), "persistence").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "oncekv_pending_writes:"); ok {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				tb.Fatalf("oncekv_pending_writes %q: %v", v, err)
			}
			return n
		}
	}
	tb.Fatal("INFO persistence has no oncekv_pending_writes")
	return 0
}

// burst keeps the server busy for d with SETs of new keys: 100 every
// 5 ms, well above the 500 commands a second under which it counts as
// calm, and few enough that the writes it gathers stay far under the
// pending bound that would start an apply anyway.
func burst(tb testing.TB, c *redis.Client, prefix string, d time.Duration) {
	tb.Helper()
	ctx := context.Background()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for i, end := 0, time.Now().Add(d); time.Now().Before(end); i++ {
		p := c.Pipeline()
		for j := range 100 {
			p.Set(ctx, fmt.Sprintf("%s:%d:%d", prefix, i, j), "v", 0)
		}
		if _, err := p.Exec(ctx); err != nil {
			tb.Fatal(err)
		}
		<-tick.C
	}
}

// TestStopsAreNotCalm stops the server twice between two bursts of
// writes, as bench/harness does between two of its cells (a stop, a
// moment running, a second stop of a quarter of a second), and checks
// that none of the writes gathered during the bursts was applied: the
// server applies at once when calm, and a server that did not run was
// not calm. Before the store judged a tick by when it fell due, the tick
// received on the second resumption took the interval since the moment
// between the stops, all of it stopped, for calm.
func TestStopsAreNotCalm(t *testing.T) {
	s := StartOncekv(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 1})
	t.Cleanup(func() { c.Close() })
	signal := func(sig syscall.Signal) {
		t.Helper()
		if err := s.Cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = s.Cmd.Process.Signal(syscall.SIGCONT) })

	last := uint64(0)
	for cycle := range 6 {
		burst(t, c, "k"+strconv.Itoa(cycle), 300*time.Millisecond)
		n := pendingWrites(t, c)
		if n <= last {
			t.Fatalf("cycle %d: %d writes wait for Badger, %d before this burst: the server applied them while it was busy or stopped", cycle, n, last)
		}
		last = n
		signal(syscall.SIGSTOP)
		time.Sleep(500 * time.Millisecond)
		signal(syscall.SIGCONT)
		time.Sleep(5 * time.Millisecond) // the moment between two cells
		signal(syscall.SIGSTOP)
		time.Sleep(300 * time.Millisecond)
		signal(syscall.SIGCONT)
	}
	burst(t, c, "last", 300*time.Millisecond)
	if n := pendingWrites(t, c); n <= last {
		t.Fatalf("after the last stops: %d writes wait for Badger, %d before: the server applied them as it resumed", n, last)
	}
	// Calm now, it applies what waits.
	deadline := time.Now().Add(10 * time.Second)
	for pendingWrites(t, c) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes still wait for Badger 10 s after the load stopped", pendingWrites(t, c))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
