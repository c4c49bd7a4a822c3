package badgerdb

import (
	"strconv"
	"testing"
	"time"
)

// openDelayed is a started store whose applier gathers for delay.
func openDelayed(tb testing.TB, delay time.Duration, maxPending int) *DB {
	tb.Helper()
	opts := DefaultOptions(tb.TempDir())
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
	opts.ApplyDelay = delay
	opts.MaxPending = maxPending
	s, err := Open(opts)
	if err != nil {
		tb.Fatal(err)
	}
	s.Start()
	tb.Cleanup(func() { s.Close() })
	return s
}

// Logged writes wait for the delay, then reach Badger by themselves.
func TestApplyGathersThenApplies(t *testing.T) {
	s := openDelayed(t, 300*time.Millisecond, 100000)
	start := time.Now()
	set(t, s, 0, "a", str("1", 0)) // returns once logged
	if c := s.committed.Load(); c != 0 && time.Since(start) < 250*time.Millisecond {
		t.Fatalf("applied (op %d) before the delay passed", c)
	}
	if v, ok := get(t, s, 0, "a"); !ok || v != "1" {
		t.Fatalf("a = %q, %v before it is applied; want 1 from memory", v, ok)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.committed.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the write was never applied to Badger")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// What needs Badger up to date (FLUSHDB, a backup: drain) and writers held
// back by MaxPending do not wait out the delay.
func TestApplyDelayCutShort(t *testing.T) {
	s := openDelayed(t, time.Hour, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Over MaxPending: back-pressure must get the applier going.
		for i := 0; i < 500; i++ {
			set(t, s, 0, "k"+strconv.Itoa(i), str("v", 0))
		}
		if err := s.drainForTest(); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("writes over MaxPending, or drain, waited for the hour-long apply delay")
	}
	s.omu.RLock()
	staged := s.staged
	s.omu.RUnlock()
	if c := s.committed.Load(); c != staged {
		t.Fatalf("after drain: committed %d of %d staged ops", c, staged)
	}
}
