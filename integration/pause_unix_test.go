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

// calmPeriod is the server's CalmApply: an interval between two of its
// ticks, on time, in which fewer than 100 commands or writes came, is
// calm, and the writes waiting are applied.
const calmPeriod = 200 * time.Millisecond

// loadWatch measures the longest stretch in which the server ran without
// a whole pipeline of the test's load in it: the time from the start of
// one pipeline (or a resumption) to the end of the next (or a stop). A
// stretch as long as calmPeriod lets an on-time tick find the server
// calm, whatever the server's own merit: the client was starved, not
// the server stopped. While every stretch is shorter, every interval the
// server judges holds a pipeline of 100 SETs, and a calm verdict is the
// server's mistake.
type loadWatch struct {
	from  time.Time     // the start of the last pipeline, or the resumption
	worst time.Duration // the longest stretch since the last look
}

// resume notes that the server runs from t (taken before SIGCONT).
func (w *loadWatch) resume(t time.Time) { w.from = t }

// upTo closes the stretch at t (a stop, taken after SIGSTOP; a reading).
func (w *loadWatch) upTo(t time.Time) { w.worst = max(w.worst, t.Sub(w.from)) }

// sent notes a pipeline that was sent at start and answered at end.
func (w *loadWatch) sent(start, end time.Time) {
	w.upTo(end)
	w.from = start
}

// burst keeps the server busy for d with SETs of new keys: 100 at a time,
// at most every 5 ms, well above the 500 commands a second under which
// it counts as calm, and few enough that the writes it gathers stay far
// under the pending bound that would start an apply anyway. A client
// slower than that sends the next pipeline as soon as one is answered;
// w measures the pace it kept.
func burst(tb testing.TB, c *redis.Client, w *loadWatch, prefix string, d time.Duration) {
	tb.Helper()
	ctx := context.Background()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for i, end := 0, time.Now().Add(d); time.Now().Before(end); i++ {
		p := c.Pipeline()
		for j := range 100 {
			p.Set(ctx, fmt.Sprintf("%s:%d:%d", prefix, i, j), "v", 0)
		}
		start := time.Now()
		if _, err := p.Exec(ctx); err != nil {
			tb.Fatal(err)
		}
		w.sent(start, time.Now())
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
//
// The check holds only while the load was there whenever the server ran:
// a test process starved of CPU (a saturated CI machine) for a tick's
// period leaves the running server truly calm, and its apply is right.
// A burst and the stops before it are judged only when loadWatch saw no
// stretch of the server running without load as long as 3/4 of
// calmPeriod; others are logged and done again, until six pairs of stops
// were judged.
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
	stop := func(w *loadWatch) {
		signal(syscall.SIGSTOP)
		w.upTo(time.Now())
	}
	resume := func(w *loadWatch) {
		w.resume(time.Now())
		signal(syscall.SIGCONT)
	}

	const (
		want      = 6  // pairs of stops judged
		maxBursts = 20 // bursts, judged or not
		budget    = calmPeriod * 3 / 4
	)
	var w loadWatch
	w.resume(time.Now())
	last, judged := uint64(0), 0
	for b := 0; ; b++ {
		if b == maxBursts {
			t.Fatalf("only %d of %d bursts kept the load up whenever the server ran (a stretch under %v without a pipeline): the client was starved", judged, maxBursts-1, budget)
		}
		burst(t, c, &w, "k"+strconv.Itoa(b), 300*time.Millisecond)
		n := pendingWrites(t, c)
		w.upTo(time.Now())
		switch {
		case w.worst >= budget:
			t.Logf("burst %d: the server ran %v without the test's load, as long as a calm interval: not judged", b, w.worst.Round(time.Millisecond))
		case n <= last && b == 0:
			t.Fatalf("%d writes wait for Badger after the first burst: the server applied them while it was busy", n)
		case n <= last:
			t.Fatalf("burst %d: %d writes wait for Badger, %d before the stops and this burst: the server applied them while it was busy or stopped", b, n, last)
		case b > 0:
			judged++
		}
		last, w.worst = n, 0
		if judged == want {
			break
		}
		stop(&w)
		time.Sleep(500 * time.Millisecond)
		resume(&w)
		time.Sleep(5 * time.Millisecond) // the moment between two cells
		stop(&w)
		time.Sleep(300 * time.Millisecond)
		resume(&w)
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
