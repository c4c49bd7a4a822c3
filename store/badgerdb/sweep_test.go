package badgerdb

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncekv/oncekv/store"
)

// A sweep round scans the expiry index without the keyspace lock, so a
// deadline can be set during its scan and not be seen by it. The key is
// still swept once due, whether the round ends a backlog (it lowers the
// next scan's start to the deadline) or leaves one (the cursor moves on,
// and the round that ends the backlog goes back for it); and set before
// the scan's first entry or after it.
func TestSweepFindsDeadlinesSetDuringItsScan(t *testing.T) {
	for _, c := range []struct {
		name    string
		due     int   // keys due before the round (64 a round)
		setAt   int64 // the deadline set during the first round's scan
		wantNow int   // keys the first Sweep deletes
	}{
		{"last round, before the scan's entries", 10, 1_000_500, 10},
		{"last round, among them", 10, 1_001_005, 10},
		{"backlog, before the cursor", 3 * 64, 1_000_500, 3 * 64},
		{"backlog, among the first round's entries", 3 * 64, 1_001_010, 3 * 64},
	} {
		t.Run(c.name, func(t *testing.T) {
			var clock atomic.Int64
			clock.Store(1_000_000)
			s := open(t, t.TempDir(), FsyncEverysec, &clock)
			for i := range c.due {
				set(t, s, 0, fmt.Sprintf("k%05d", i), str("v", 1_001_000+int64(i)))
			}
			set(t, s, 0, "far", str("v", 2_000_000))
			clock.Store(1_001_000 + int64(c.due))
			hooked := 0
			s.scanHook = func() {
				if hooked++; hooked == 1 {
					set(t, s, 0, "during", str("v", c.setAt))
				}
			}
			if got := s.Sweep(time.Hour); got != c.wantNow {
				t.Fatalf("swept %d keys, want %d", got, c.wantNow)
			}
			// "during" was due at once: this Sweep or the next deletes it
			// (reads hide it either way: only the count tells).
			s.Sweep(time.Hour)
			if n := lenOf(t, s, 0); n != 1 {
				t.Fatalf("%d keys left after sweeping, want 1 (far): the sweeper lost a deadline set during its scan", n)
			}
		})
	}
}

// A key that a round's scan found due, then rewritten before the round
// takes the lock, is not deleted for the deadline the scan read: whether
// the rewrite is still in memory, or has been applied and left memory, in
// which case only the snapshot's generation, the one the scan read, tells
// the sweeper that the key may have changed.
func TestSweepRechecksKeysRewrittenDuringItsScan(t *testing.T) {
	for _, applied := range []bool{false, true} {
		t.Run(fmt.Sprintf("applied=%v", applied), func(t *testing.T) {
			var clock atomic.Int64
			opts := uncachedOpts(t, &clock)
			opts.ApplyDelay = time.Hour // applied only when drained
			opts.CalmApply = 0
			s := openOpts(t, opts)
			setDueUnheld(t, s, &clock, "kept", "expired")
			hooked := 0
			s.scanHook = func() {
				hooked++
				set(t, s, 0, "kept", str("w", 0))
				if applied {
					if err := s.drainForTest(); err != nil {
						t.Error(err)
					}
					waitGone(t, s, "kept")
				} else if !s.inMemory(dataKey(0, []byte("kept"))) {
					t.Error("the rewrite left memory before the sweep settled")
				}
			}
			if n := s.Sweep(time.Second); n != 1 {
				t.Errorf("swept %d keys, want 1 (expired)", n)
			}
			if hooked == 0 {
				t.Fatal("the scan hook never ran")
			}
			if v, ok := get(t, s, 0, "kept"); !ok || v != "w" {
				t.Fatalf("kept = %q, %v after the sweep; want w, without a deadline", v, ok)
			}
			if n := lenOf(t, s, 0); n != 1 {
				t.Fatalf("%d keys counted, want 1", n)
			}
		})
	}
}

// setDueUnheld sets keys with a deadline of 1,000,010 ms, has them
// applied and out of memory (a store without a cache), and moves the
// clock past it.
func setDueUnheld(tb testing.TB, s *DB, clock *atomic.Int64, keys ...string) {
	tb.Helper()
	for _, k := range keys {
		set(tb, s, 0, k, str("v", 1_000_010))
	}
	if err := s.drainForTest(); err != nil {
		tb.Fatal(err)
	}
	for _, k := range keys {
		waitGone(tb, s, k)
	}
	clock.Store(1_000_100)
}

// waitGone waits until memory does not hold key (the applier wrote it to
// Badger and dropped it).
func waitGone(tb testing.TB, s *DB, key string) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.inMemory(dataKey(0, []byte(key))) {
		if time.Now().After(deadline) {
			tb.Fatalf("%s never left memory", key)
		}
		time.Sleep(time.Millisecond)
	}
}

// While writers set, rewrite and delete keys with deadlines near the
// clock, a sweeper sweeps as the clock moves on. No key is deleted
// before its deadline, and once the clock passes every deadline, the
// sweeps leave exactly the keys without one: none is lost to the scans
// that run without the keyspace lock.
func TestSweepUnderConcurrentWrites(t *testing.T) {
	for _, cached := range []bool{true, false} {
		t.Run(fmt.Sprintf("cached=%v", cached), func(t *testing.T) {
			var clock atomic.Int64
			opts := uncachedOpts(t, &clock)
			if cached {
				opts.CacheSize = DefaultOptions("").CacheSize
			}
			opts.SweepKeys = 8 // many rounds, backlogs and cursors
			s := openOpts(t, opts)
			const writers, keys, ops = 4, 64, 1500
			type state struct {
				val string
				at  int64 // 0: no deadline
				ok  bool
			}
			model := make([][keys]state, writers)
			var wg sync.WaitGroup
			stop := make(chan struct{})
			var sweeps sync.WaitGroup
			sweeps.Add(1)
			go func() {
				defer sweeps.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					clock.Add(rand.Int64N(3))
					s.Sweep(time.Second)
				}
			}()
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(w), 1))
					for i := range ops {
						k := r.IntN(keys)
						key := fmt.Sprintf("w%d:k%02d", w, k)
						var st state
						if _, err := s.Update(func(tx store.Tx) error {
							switch op := r.IntN(10); {
							case op == 0:
								_, err := tx.Delete(0, []byte(key))
								return err
							case op < 3:
								st = state{val: fmt.Sprint(i), ok: true}
							default:
								// Near the clock: some already due.
								st = state{val: fmt.Sprint(i), at: tx.Now() + r.Int64N(20) - 5, ok: true}
							}
							return tx.Set(0, []byte(key), str(st.val, st.at))
						}); err != nil {
							t.Error(err)
							return
						}
						model[w][k] = st
						// Every key is read back as the model says, or
						// expired: a sweep that deleted it early shows.
						var v string
						var ok bool
						if _, err := s.View(func(tx store.Tx) error {
							got, found, err := tx.Get(0, []byte(key))
							v, ok = string(got.Data), found
							return err
						}); err != nil {
							t.Error(err)
							return
						}
						if st.ok && (st.at == 0 || st.at > clock.Load()) && (!ok || v != st.val) {
							t.Errorf("%s = %q, %v; want %q (deadline %d, now %d)", key, v, ok, st.val, st.at, clock.Load())
							return
						}
					}
				}()
			}
			wg.Wait()
			close(stop)
			sweeps.Wait()
			clock.Add(100)
			// Until two sweeps in a row delete nothing: the round that
			// ends a backlog may delete nothing and leave the deadlines
			// set behind its cursor to the next scan.
			for zeros := 0; zeros < 2; {
				if s.Sweep(time.Second) > 0 {
					zeros = 0
				} else {
					zeros++
				}
			}
			want := 0
			for w := range model {
				for k, st := range model[w] {
					key := fmt.Sprintf("w%d:k%02d", w, k)
					v, ok := get(t, s, 0, key)
					if keep := st.ok && st.at == 0; ok != keep || v != map[bool]string{true: st.val}[keep] {
						t.Errorf("%s = %q, %v at the end; want %+v", key, v, ok, st)
					}
					if st.ok && st.at == 0 {
						want++
					}
				}
			}
			if _, err := s.View(func(tx store.Tx) error {
				if n, e := tx.Len(0), tx.Expiring(0); n != want || e != 0 {
					t.Errorf("Len %d, Expiring %d after sweeping every deadline; want %d (the keys without one), 0", n, e, want)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Keys that memory no longer holds, with an exact index, are deleted
// without being read, their deletions and their entries' staged together
// at the end of the round (stageDeletes): every key and entry goes, the
// counts follow, and the deletions outlive a restart.
func TestSweepDeletesUnreadKeysTogether(t *testing.T) {
	var clock atomic.Int64
	opts := uncachedOpts(t, &clock)
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	const n = 3*64 + 5
	setEach(t, s, 0, n, func(i int) string { return fmt.Sprintf("k%04d", i) },
		func(i int) store.Value { return str("v", 1_000_010+int64(i)) })
	set(t, s, 0, "kept", str("v", 0))
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, s, "k0000")
	clock.Store(1_000_010 + n)
	if got := s.Sweep(time.Hour); got != n {
		t.Fatalf("swept %d keys, want %d", got, n)
	}
	if s.sweptUnread != n {
		t.Fatalf("%d keys deleted unread, want %d", s.sweptUnread, n)
	}
	counts := func(step string) {
		t.Helper()
		if _, err := s.View(func(tx store.Tx) error {
			if l, e := tx.Len(0), tx.Expiring(0); l != 1 || e != 0 {
				t.Errorf("%s: Len %d, Expiring %d; want 1 (kept), 0", step, l, e)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	counts("swept")
	entries := 0
	if _, err := s.scanAux(dbPrefix(spaceExpiry, 0), dbPrefix(spaceExpiry, 0), nil, func(raw, _ []byte) (bool, error) {
		entries++
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if entries != 0 {
		t.Fatalf("%d expiry index entries left after sweeping every key", entries)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openOpts(t, opts)
	counts("reopened")
	clock.Store(1_000_000) // before every deadline: a key that came back would show
	for i := range n {
		if _, ok := get(t, s, 0, fmt.Sprintf("k%04d", i)); ok {
			t.Fatalf("k%04d is back after a restart", i)
		}
	}
}
