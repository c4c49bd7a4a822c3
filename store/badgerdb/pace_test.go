package badgerdb

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncekv/oncekv/store"
)

// rest is one rest of the applier: how long in all, in how many steps,
// how many entries were still dirty then (all of the round's while it is
// written to Badger, fewer once it is being cleaned), and whether a step
// found cleanMu held (a scan would have waited for the rest).
type rest struct {
	d           time.Duration
	steps       int
	dirty       int
	cleanMuHeld bool
}

// pacedStore opens a store whose applier's rests are recorded, not slept
// (paceSleep, step by step), with no background work but the log and the
// applier.
func pacedStore(t *testing.T, opts Options) (*DB, func() []rest) {
	t.Helper()
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var rests []rest
	var last int64 // paceRests at the last step recorded
	s.paceSleep = func(d time.Duration) {
		held := !s.cleanMu.TryLock()
		if !held {
			s.cleanMu.Unlock()
		}
		s.omu.RLock()
		dirty := len(s.dirty)
		s.omu.RUnlock()
		mu.Lock()
		if n := s.paceRests.Load(); n != last || len(rests) == 0 {
			last = n
			rests = append(rests, rest{dirty: dirty})
		}
		r := &rests[len(rests)-1]
		r.d += d
		r.steps++
		r.cleanMuHeld = r.cleanMuHeld || held
		mu.Unlock()
	}
	s.Start()
	t.Cleanup(func() { s.Close() })
	return s, func() []rest {
		mu.Lock()
		defer mu.Unlock()
		return append([]rest(nil), rests...)
	}
}

// writeKeys sets keys k0…k(n-1) to "v<i>", a thousand to a transaction,
// and waits until they are logged.
func writeKeys(t *testing.T, s *DB, n int) {
	t.Helper()
	key := func(i int) []byte { return fmt.Appendf(nil, "k%d", i) }
	val := func(i int) store.Value { return str(fmt.Sprintf("v%d", i), 0) }
	var last store.Ticket
	for k := 0; k < n; k += 1000 {
		last = setRange(t, s, k, min(k+1000, n), key, val)
	}
	if err := last.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// waitApplied waits, without a drain (which would end the pace), until
// everything logged is in Badger.
func waitApplied(t *testing.T, s *DB) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); s.committed.Load() < s.logged.Load(); {
		if time.Now().After(deadline) {
			t.Fatalf("applied up to op %d of %d after 20 s", s.committed.Load(), s.logged.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// busy is an Activity that moves at every call: a server serving
// commands all along.
func busy() func() int64 {
	var n atomic.Int64
	return func() int64 { return n.Add(1) }
}

// TestBusyApplyRoundsRest: a round of a server that serves commands all
// along (started by the pending bounds: kicked here, after every write is
// logged) rests between stretches of its work, each rest as long as the
// stretch before it (up to paceMaxRest), while it writes to Badger (in
// chunks, each written before the rest) as well as while it cleans, never
// holding cleanMu (which scans need) and not after its last slice; and
// still writes every key to Badger: read back with no cache, so from
// Badger, after the round made them clean.
func TestBusyApplyRoundsRest(t *testing.T) {
	const keys = 50000
	opts := DefaultOptions(t.TempDir())
	opts.ApplyDelay, opts.CalmApply = time.Hour, 0
	opts.CacheSize = 0
	opts.Activity = busy()
	s, rests := pacedStore(t, opts)
	writeKeys(t, s, keys)
	kickChan(s.applyNow) // what a log round does at half the bounds
	waitApplied(t, s)
	got := rests()
	if len(got) == 0 {
		t.Fatalf("a busy round of %d keys never rested", keys)
	}
	if n := s.paceRests.Load(); n != int64(len(got)) {
		t.Errorf("paceRests counts %d rests, the hook saw %d", n, len(got))
	}
	writing, cleaning := 0, 0
	for _, r := range got {
		if r.d < paceStep || r.d > paceMaxRest {
			t.Fatalf("a rest of %v: want none shorter than paceStep (%v), as long as the work before it, up to paceMaxRest (%v)", r.d, paceStep, paceMaxRest)
		}
		if r.cleanMuHeld {
			t.Fatalf("a rest (%d entries dirty) held cleanMu: a scan would have waited for it", r.dirty)
		}
		if r.dirty == 0 {
			t.Fatal("a rest after the round's last slice was cleaned: nothing was left to pace")
		}
		if r.dirty == keys {
			writing++
		} else {
			cleaning++
		}
	}
	if writing == 0 || cleaning == 0 {
		t.Fatalf("%d rests while the round was written to Badger and %d while it was cleaned: want both", writing, cleaning)
	}
	for i := 0; i < keys; i += 997 {
		if v, ok := get(t, s, 0, fmt.Sprintf("k%d", i)); !ok || v != fmt.Sprintf("v%d", i) {
			t.Fatalf("k%d = %q %v after a paced round, want v%d", i, v, ok, i)
		}
	}
}

// TestQuietApplyRoundsDoNotRest: a round during which no command comes
// in takes nothing from anyone, so it goes at full speed; so does one a
// drain waits for, however busy the server.
func TestQuietApplyRoundsDoNotRest(t *testing.T) {
	t.Run("calm", func(t *testing.T) {
		opts := DefaultOptions(t.TempDir())
		opts.ApplyDelay, opts.CalmApply = time.Hour, 20*time.Millisecond
		s, rests := pacedStore(t, opts)
		writeKeys(t, s, 50000)
		waitApplied(t, s)
		if got := rests(); len(got) != 0 {
			t.Fatalf("a calm round rested %d times", len(got))
		}
	})
	t.Run("drained", func(t *testing.T) {
		opts := DefaultOptions(t.TempDir())
		opts.ApplyDelay, opts.CalmApply = time.Hour, 0
		opts.Activity = busy()
		s, rests := pacedStore(t, opts)
		writeKeys(t, s, 50000)
		if err := s.drainForTest(); err != nil {
			t.Fatal(err)
		}
		if got := rests(); len(got) != 0 {
			t.Fatalf("a round a drain waited for rested %d times", len(got))
		}
	})
}

// TestCalmRoundRestsOnceLoadReturns: a round started because the server
// was calm rests once commands come in again while it runs.
func TestCalmRoundRestsOnceLoadReturns(t *testing.T) {
	opts := DefaultOptions(t.TempDir())
	opts.ApplyDelay, opts.CalmApply = time.Hour, 20*time.Millisecond
	var back atomic.Bool
	load := busy()
	opts.Activity = func() int64 {
		if back.Load() {
			return load()
		}
		return 0
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.applyHook = func([]op) { back.Store(true) } // commands come in as the round starts
	var rests atomic.Int64
	s.paceSleep = func(time.Duration) { rests.Add(1) }
	s.Start()
	t.Cleanup(func() { s.Close() })
	writeKeys(t, s, 50000)
	waitApplied(t, s)
	if s.calmApplies.Load() == 0 {
		t.Fatal("no calm round: the test did not test")
	}
	if rests.Load() == 0 {
		t.Fatal("a calm round did not rest once commands came in")
	}
}

// TestPaceGivesWay: a paced round stops resting, for good, once something
// needs it done: writers held by the pending bounds, pending writes near
// those bounds, a drain, Close. A store never started is not paced.
func TestPaceGivesWay(t *testing.T) {
	s, err := Open(DefaultOptions(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if s.newPacer().pacing() {
		t.Error("a store never started paces its rounds")
	}
	s.Close()
	cases := []struct {
		name string
		make func(s *DB) // makes the round needed
	}{
		{"writers held", func(s *DB) { s.held.Add(1) }},
		{"a drain waits", func(s *DB) { s.drainTo.Store(s.committed.Load() + 1) }},
		{"closing", func(s *DB) { s.closed.Store(true) }},
		{"pending near the bounds", func(s *DB) {
			for i := range s.opts.MaxPending * paceNear / (paceNear + 1) {
				if _, err := s.Update(func(tx store.Tx) error {
					return tx.Set(0, fmt.Appendf(nil, "p%d", i), str("v", 0))
				}); err != nil {
					panic(err)
				}
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := DefaultOptions(t.TempDir())
			opts.ApplyDelay, opts.CalmApply = time.Hour, 0 // nothing applies by itself
			opts.MaxPending = 64
			s, _ := pacedStore(t, opts)
			p := s.newPacer()
			if !p.pacing() {
				t.Fatal("a round with nothing waiting for it is not paced")
			}
			c.make(s)
			if p.pacing() {
				t.Fatalf("%s: the round is still paced", c.name)
			}
			s.held.Store(0)
			s.drainTo.Store(0)
			s.closed.Store(false)
			if p.pacing() {
				t.Fatalf("%s: the round is paced again once that is over; want full speed to its end", c.name)
			}
		})
	}
}

// TestRestIsBoundedAndGivesWayMidway: a rest after a long stretch (one
// that waited on something: an fsync, a stalled write) lasts paceMaxRest
// at most, in steps of paceStep; and a rest under way ends at the step
// during which something came to need the round (a held writer, a drain:
// FLUSHDB and BACKUP drain under the keyspace lock), not at its end.
func TestRestIsBoundedAndGivesWayMidway(t *testing.T) {
	needs := []struct {
		name string
		make func(s *DB)
	}{
		{"nothing", func(*DB) {}},
		{"writers held", func(s *DB) { s.held.Add(1) }},
		{"a drain waits", func(s *DB) { s.drainTo.Store(s.committed.Load() + 1) }},
	}
	for _, c := range needs {
		t.Run(c.name, func(t *testing.T) {
			opts := DefaultOptions(t.TempDir())
			opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
			opts.ApplyDelay, opts.CalmApply = time.Hour, 0 // no round of its own
			opts.Activity = busy()
			s, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			var steps []time.Duration
			s.paceSleep = func(d time.Duration) {
				if len(steps) == 0 {
					c.make(s)
				}
				steps = append(steps, d)
			}
			s.Start()
			t.Cleanup(func() {
				s.held.Store(0)
				s.drainTo.Store(0)
				s.Close()
			})
			p := s.newPacer()
			p.since = time.Now().Add(-time.Second) // a stretch that waited a second
			p.rest()
			var total time.Duration
			for _, d := range steps {
				if d > paceStep {
					t.Fatalf("a step of %v: want none longer than paceStep (%v)", d, paceStep)
				}
				total += d
			}
			if c.name == "nothing" {
				if total != paceMaxRest {
					t.Fatalf("a rest after a one-second stretch lasted %v in %d steps, want paceMaxRest (%v)", total, len(steps), paceMaxRest)
				}
				return
			}
			if len(steps) != 1 {
				t.Fatalf("%s during the first step: the rest went on for %d steps (%v), want it to end after that step", c.name, len(steps), total)
			}
		})
	}
}
