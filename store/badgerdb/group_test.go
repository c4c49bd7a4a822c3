package badgerdb

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestAlwaysGroupsClosedLoopWriters runs writers that each send a write
// once the last is durable, under "always", with an fsync slow enough
// (3 ms) that scheduling noise is small beside it, and checks that one
// fsync serves nearly all of them (group.go): left to take turns, the
// writers split into two groups, one fsync for each, half the writers a
// fsync. Then a lone write after a pause is synced without a wait.
func TestAlwaysGroupsClosedLoopWriters(t *testing.T) {
	opts := DefaultOptions(t.TempDir())
	opts.Fsync = FsyncAlways
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
	s := openOpts(t, opts)
	s.wal.syncHook = func() { time.Sleep(3 * time.Millisecond) }
	const writers, each = 16, 25
	before := s.wal.syncs.Load()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				set(t, s, 0, fmt.Sprintf("w%d:%d", w, i), str("v", 0))
			}
		}()
	}
	wg.Wait()
	syncs := s.wal.syncs.Load() - before
	perSync := float64(writers*each) / float64(syncs)
	t.Logf("%d writes, %d fsyncs: %.1f a fsync; %d rounds waited, %d to their bound",
		writers*each, syncs, perSync, s.group.waits.Load(), s.group.bounded.Load())
	if perSync < 0.75*writers {
		t.Fatalf("%.1f writes a fsync with %d writers, want at least %d", perSync, writers, 3*writers/4)
	}

	time.Sleep(2 * groupIdle)
	waits := s.group.waits.Load()
	start := time.Now()
	set(t, s, 0, "lone", str("v", 0))
	if n := s.group.waits.Load() - waits; n != 0 {
		t.Fatalf("a lone write after a pause waited %d times (in %v) for writers that were gone", n, time.Since(start))
	}
	for w := range writers {
		if v, ok := get(t, s, 0, fmt.Sprintf("w%d:%d", w, each-1)); !ok || v != "v" {
			t.Fatalf("w%d's last write reads %q, %v", w, v, ok)
		}
	}
}

// Under everysec the syncer fsyncs the log once a second only when
// something was written since its last fsync: an idle server does none.
func TestEverysecSyncsOnlyAfterWrites(t *testing.T) {
	opts := DefaultOptions(t.TempDir())
	opts.Fsync = FsyncEverysec
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
	s := openOpts(t, opts)
	set(t, s, 0, "k", str("v", 0))
	deadline := time.Now().Add(5 * time.Second)
	for s.synced.Load() < s.logged.Load() || s.wal.syncs.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the write was never synced")
		}
		time.Sleep(50 * time.Millisecond)
	}
	before := s.wal.syncs.Load()
	time.Sleep(2500 * time.Millisecond) // two ticks of the syncer
	if n := s.wal.syncs.Load() - before; n != 0 {
		t.Fatalf("%d fsyncs of an unchanged log in 2.5 s", n)
	}
	set(t, s, 0, "k2", str("v", 0))
	for s.wal.syncs.Load() == before {
		if time.Now().After(deadline.Add(3 * time.Second)) {
			t.Fatal("a write after the idle seconds was never synced")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// bound: no wait after an fsync faster than groupMinFsync, after a pause,
// for a lone writer, or right after a wait that ended at its bound;
// otherwise the last fsync's duration, at most groupMaxWait.
func TestGroupBound(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name      string
		want      int           // writes expected
		took      time.Duration // the last fsync
		since     time.Duration // since it ended
		skip      bool
		wantBound time.Duration
	}{
		{name: "slow fsync", want: 20, took: time.Millisecond, wantBound: time.Millisecond},
		{name: "at the threshold", want: 20, took: groupMinFsync, wantBound: groupMinFsync},
		{name: "very slow fsync", want: 20, took: 10 * time.Millisecond, wantBound: groupMaxWait},
		{name: "fast fsync", want: 20, took: groupMinFsync - time.Microsecond},
		{name: "one writer", want: 1, took: 3 * time.Millisecond},
		{name: "after a pause", want: 20, took: 3 * time.Millisecond, since: 2 * groupIdle},
		{name: "after a bounded wait", want: 20, took: 3 * time.Millisecond, skip: true},
	} {
		g := &groupState{want: tc.want, took: tc.took, at: now.Add(-tc.since), skip: tc.skip}
		if got := g.bound(now); got != tc.wantBound {
			t.Errorf("%s: bound = %v, want %v", tc.name, got, tc.wantBound)
		}
	}
}

// The logger makes an fsync a raw system call only after a fast one
// (rawFsyncMax): never the first, never after a slow one.
func TestRawFsyncOnlyAfterAFastOne(t *testing.T) {
	for _, tc := range []struct {
		took time.Duration
		raw  bool
	}{
		{took: 0},
		{took: 120 * time.Microsecond, raw: true},
		{took: rawFsyncMax - time.Microsecond, raw: true},
		{took: rawFsyncMax},
		{took: 30 * time.Millisecond},
	} {
		g := &groupState{took: tc.took}
		if got := g.rawSync(); got != tc.raw {
			t.Errorf("after an fsync of %v: raw = %v, want %v", tc.took, got, tc.raw)
		}
	}
}

// On a disk whose fsyncs are slow (a hook makes each take 1 ms) every
// fsync of the logger under always stays an ordinary system call, which
// lets the scheduler give its processor to others meanwhile.
func TestSlowFsyncsStayOrdinary(t *testing.T) {
	opts := DefaultOptions(t.TempDir())
	opts.Fsync = FsyncAlways
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
	s := openOpts(t, opts)
	s.wal.syncHook = func() { time.Sleep(rawFsyncMax + 500*time.Microsecond) }
	before := s.wal.syncs.Load()
	for i := range 20 {
		set(t, s, 0, fmt.Sprintf("k%d", i), str("v", 0))
	}
	if n := s.wal.syncs.Load() - before; n < 20 {
		t.Fatalf("%d fsyncs for 20 writes each waited for, want 20", n)
	}
	if n := s.wal.rawSyncs.Load(); n != 0 {
		t.Fatalf("%d raw fsyncs on a disk whose fsyncs take over %v", n, rawFsyncMax)
	}
}
