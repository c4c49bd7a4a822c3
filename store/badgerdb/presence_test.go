package badgerdb

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncekv/oncekv/store"
)

// The filter never forgets a key, and its false positives stay near what
// its size promises: about 2.5% at its capacity, 15% at twice it, when it
// is rebuilt.
func TestPresenceFalsePositives(t *testing.T) {
	const n = 100000
	p := newPresence(n, presenceMinKeys)
	falsePositives := func() float64 {
		fp := 0
		for i := range n {
			if p.mayHave([]byte("absent:" + strconv.Itoa(i))) {
				fp++
			}
		}
		return float64(fp) / n
	}
	for round, limit := range []float64{0.035, 0.18} {
		for i := range n {
			p.add([]byte("key:" + strconv.Itoa(round) + ":" + strconv.Itoa(i)))
		}
		for r := 0; r <= round; r++ {
			for i := range n {
				if k := "key:" + strconv.Itoa(r) + ":" + strconv.Itoa(i); !p.mayHave([]byte(k)) {
					t.Fatalf("%s was added, and the filter lost it", k)
				}
			}
		}
		if fp := falsePositives(); fp > limit {
			t.Errorf("%d keys in a filter for %d: %.1f%% false positives, want at most %.1f%%", (round+1)*n, n, 100*fp, 100*limit)
		}
		if f, want := p.fresh.Load(), int64((round+1)*n); f < want*9/10 || f > want {
			t.Errorf("fresh = %d after %d distinct keys", f, want)
		}
		if full := p.full(); full != (round == 1 && p.fresh.Load() > 2*n) {
			t.Errorf("full() = %v with %d fresh keys in a filter for %d", full, p.fresh.Load(), n)
		}
	}
	// A key added again sets no bit: rewrites of a key do not fill it.
	before := p.fresh.Load()
	p.add([]byte("key:0:1"))
	if p.fresh.Load() != before {
		t.Error("adding a key again counted as a fresh key")
	}
}

// Reads of keys that were never written skip Badger once the keys are
// counted, and reads of keys Badger holds still find them, after a
// restart too (the count fills the filter).
func TestPresenceSparesLookupsOfNewKeys(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, FsyncEverysec, nil)
	for i := range 100 {
		set(t, s, 0, "k"+strconv.Itoa(i), str("v", 0))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, FsyncEverysec, nil)
	s.awaitCount()
	before := s.Stats()
	for i := range 100 {
		if _, ok := get(t, s, 0, "new"+strconv.Itoa(i)); ok {
			t.Fatalf("new%d found", i)
		}
	}
	after := s.Stats()
	if d := after.Lookups - before.Lookups; d > 10 {
		t.Errorf("100 reads of new keys went to Badger %d times; want a few false positives at most", d)
	}
	if d := after.LookupsSkipped - before.LookupsSkipped; d < 90 {
		t.Errorf("the filter spared %d of 100 lookups of new keys", d)
	}
	if after.FilterBytes < presenceMinKeys*presenceBitsPerKey/8 {
		t.Errorf("FilterBytes = %d", after.FilterBytes)
	}
	for i := range 100 {
		if v, ok := get(t, s, 0, "k"+strconv.Itoa(i)); !ok || v != "v" {
			t.Fatalf("k%d = %q, %v after a restart; want v", i, v, ok)
		}
	}
	// Another database's keys are other keys.
	if _, ok := get(t, s, 1, "k1"); ok {
		t.Fatal("k1 found in database 1")
	}
}

// While keys pour in, and older ones are rewritten, the filter is rebuilt
// again and again, with writes waiting for the applier meanwhile and a
// cache too small to keep them:
// no read of a key that was written may miss it (KV-1), then or after a
// restart.
func TestPresenceRebuildKeepsEveryKey(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions(dir)
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0 // here and at the restart
	opts.ApplyDelay = 20 * time.Millisecond                          // many writes wait when a rebuild starts
	opts.CacheSize = 4 << 10                                         // and few stay cached once applied
	s, first := openSmallFilter(t, opts)
	// Writes go on while a rebuild holds its snapshot: only stage can
	// add them to the new filter.
	s.presHook = func() { time.Sleep(30 * time.Millisecond) }
	s.Start()
	defer s.Close()

	const writers, perWriter, batch = 4, 3000, 10
	var written [writers]atomic.Int64 // keys w:i below this are written
	key := func(w, i int) []byte { return []byte("w" + strconv.Itoa(w) + ":" + strconv.Itoa(i)) }
	stop := make(chan struct{})
	var readers sync.WaitGroup
	var misses atomic.Int64
	for r := range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				w := rng.IntN(writers)
				n := written[w].Load()
				if n == 0 {
					continue
				}
				k := key(w, rng.IntN(int(n)))
				_, err := s.View(func(tx store.Tx) error {
					if _, ok, err := tx.Get(0, k); err != nil || !ok {
						misses.Add(1)
						t.Errorf("%s was written, and a read missed it (err %v)", k, err)
					}
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i += batch {
				_, err := s.Update(func(tx store.Tx) error {
					for j := i; j < i+batch; j++ {
						if err := tx.Set(0, key(w, j), str("v", 0)); err != nil {
							return err
						}
					}
					// And a rewrite of an older key, which memory may
					// hold (stage adds it to no filter then), or not.
					if i == 0 {
						return nil
					}
					return tx.Set(0, key(w, i/2), str("v2", 0))
				})
				if err != nil {
					t.Error(err)
					return
				}
				written[w].Store(int64(i + batch))
			}
		}()
	}
	wg.Wait()
	// Let the applier empty memory and the rebuilds settle while the
	// readers go on.
	time.Sleep(200 * time.Millisecond)
	// A filter made for c keys is rebuilt once it has taken 2c, so the
	// last one is made for at least half the keys there are, less the
	// adds that found their bits set already (up to 15% at 2c): a third
	// is what the design promises on any schedule. (Half failed on a
	// loaded machine: a rebuild that started at 4,630 keys, made for
	// 5,787, took the other 7,370 keys without filling.)
	waitSized(t, s, first, writers*perWriter/3)
	close(stop)
	readers.Wait()
	if misses.Load() > 0 {
		t.Fatalf("%d reads missed written keys", misses.Load())
	}
	check := func(s *DB, when string) {
		t.Helper()
		for w := range writers {
			for i := range perWriter {
				if _, ok := get(t, s, 0, string(key(w, i))); !ok {
					t.Fatalf("%s: %s missing", when, key(w, i))
				}
			}
		}
	}
	check(s, "after the writes")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	s2.Start()
	s2.awaitCount()
	check(s2, "after a restart")
}

// Close does not hang when a command that holds the keyspace lock waits
// for the applier (FLUSHDB, BACKUP) while a background task waits for that
// lock: a filter rebuild here, a sweep likewise.
func TestCloseWhileALockHolderDrains(t *testing.T) {
	for _, task := range []string{"rebuild", "sweep"} {
		t.Run(task, func(t *testing.T) {
			opts := DefaultOptions(t.TempDir())
			opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
			if task == "sweep" {
				opts.SweepInterval = time.Millisecond
			}
			s, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			applying := make(chan struct{}, 1)
			s.applyHook = func([]op) { // no round reaches Badger before Close
				kickChan(applying)
				<-s.stop
			}
			s.Start()
			s.awaitCount()
			set(t, s, 0, "a", str("1", 1)) // expired: a sweep has work, and waits for mu
			<-applying
			flushed := make(chan error, 1)
			go func() {
				_, err := s.Update(func(tx store.Tx) error {
					if task == "rebuild" {
						kickChan(s.rebuildPres) // it waits for mu
					}
					return tx.Flush(0) // which FLUSHDB holds while it drains
				})
				flushed <- err
			}()
			time.Sleep(100 * time.Millisecond)
			closed := make(chan error, 1)
			go func() { closed <- s.Close() }()
			select {
			case <-closed:
			case <-time.After(5 * time.Second):
				t.Fatal("Close hung")
			}
			select {
			case <-flushed:
			case <-time.After(5 * time.Second):
				t.Fatal("FLUSHDB never returned")
			}
		})
	}
}

// openSmallFilter opens a store (not started) without background sweeps,
// and gives it a first key filter of 256 keys, so that writes fill it
// soon; it returns that filter too.
func openSmallFilter(t testing.TB, opts Options) (*DB, *presence) {
	t.Helper()
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.presMin = 256
	s.pres.Store(newPresence(0, s.presMin))
	return s, s.pres.Load()
}

// waitSized waits until s's presence filter is no longer first and is
// sized for at least keys.
func waitSized(t testing.TB, s *DB, first *presence, keys int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p := s.pres.Load()
		if p != first && p.capacity >= keys {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the filter was not rebuilt for the keys there are (capacity %d, first %d, want %d)", p.capacity, first.capacity, keys)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPresenceRebuildCatchesUp: keys written while a rebuild scans fill
// the new filter without a check (the filter in use is the one checked);
// once it is in use, the store rebuilds again without waiting for another
// write, which may not come. A CI run on a loaded machine ended with the
// filter sized for half the keys.
func TestPresenceRebuildCatchesUp(t *testing.T) {
	s, first := openSmallFilter(t, DefaultOptions(t.TempDir()))
	var scans atomic.Int32
	s.presHook = func() {
		if scans.Add(1) == 1 {
			time.Sleep(300 * time.Millisecond) // the writes below land meanwhile
		}
	}
	s.Start()
	defer s.Close()
	const keys = 3000
	waited := false
	for i := 0; i < keys; i += 100 {
		if !waited && first.full() {
			// The first filter is full (twice its 256 keys, counted as
			// keys that set a bit: 600 keys or a few hundred more, as
			// its seed falls): wait for its rebuild to be scanning,
			// sized for the keys so far.
			waited = true
			deadline := time.Now().Add(5 * time.Second)
			for scans.Load() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no rebuild started once the first filter was full")
				}
				time.Sleep(time.Millisecond)
			}
			// A write between the kick and the rebuild's start may have
			// kicked again, and that stale kick would rebuild once more
			// by chance; drop it, as when no write came in between.
			select {
			case <-s.rebuildPres:
			default:
			}
		}
		if _, err := s.Update(func(tx store.Tx) error {
			for j := i; j < i+100; j++ {
				if err := tx.Set(0, []byte("k"+strconv.Itoa(j)), str("v", 0)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if !waited {
		t.Fatalf("the first filter never filled: %d fresh adds for capacity %d", first.fresh.Load(), first.capacity)
	}
	if scans.Load() != 1 {
		t.Fatalf("%d rebuilds started while the keys were written, want the first still scanning", scans.Load())
	}
	waitSized(t, s, first, keys)
}

// TestPresenceFilledDuringCountIsRebuilt: puts staged before the keys
// are counted fill the filter while it is not ready, when stage does
// not kick a rebuild; the count's end does, without waiting for another
// put. A CI run failed TestPresenceRebuildCatchesUp when its writes
// overtook the count.
func TestPresenceFilledDuringCountIsRebuilt(t *testing.T) {
	s, first := openSmallFilter(t, DefaultOptions(t.TempDir()))
	defer s.Close()
	const keys = 2000
	// Before Start nothing counts: the writes are committed by the
	// caller, and the filter stays not ready.
	if _, err := s.Update(func(tx store.Tx) error {
		for j := range keys {
			if err := tx.Set(0, []byte("k"+strconv.Itoa(j)), str("v", 0)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if first.ready.Load() || !first.full() {
		t.Fatalf("before the count: ready %v, full %v; want a full filter not ready", first.ready.Load(), first.full())
	}
	s.Start()
	waitSized(t, s, first, keys)
}
