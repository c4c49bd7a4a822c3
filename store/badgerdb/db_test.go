package badgerdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/dgraph-io/badger/v4"

	"github.com/oncekv/oncekv/store"
)

// open returns a started store in dir with a controllable clock.
func open(tb testing.TB, dir string, fsync Fsync, clock *atomic.Int64) *DB {
	tb.Helper()
	opts := DefaultOptions(dir)
	opts.Fsync = fsync
	opts.SweepInterval = 0 // tests call Sweep themselves
	opts.GCInterval = 0
	if clock != nil {
		opts.Clock = clock.Load
	}
	s, err := Open(opts)
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	s.Start()
	tb.Cleanup(func() { s.Close() })
	return s
}

func str(data string, at int64) store.Value {
	return store.Value{Kind: store.KindString, Data: []byte(data), ExpireAt: at}
}

func set(tb testing.TB, s *DB, db int, key string, v store.Value) {
	tb.Helper()
	t, err := s.Update(func(tx store.Tx) error { return tx.Set(db, []byte(key), v) })
	if err != nil {
		tb.Fatalf("set %s: %v", key, err)
	}
	if t == nil {
		return // durable already
	}
	if err := t.Wait(context.Background()); err != nil {
		tb.Fatalf("wait %s: %v", key, err)
	}
}

func get(tb testing.TB, s *DB, db int, key string) (string, bool) {
	tb.Helper()
	var out string
	var found bool
	_, err := s.View(func(tx store.Tx) error {
		v, ok, err := tx.Get(db, []byte(key))
		out, found = string(v.Data), ok
		return err
	})
	if err != nil {
		tb.Fatalf("get %s: %v", key, err)
	}
	return out, found
}

func keys(tb testing.TB, s *DB, db int, from string) []string {
	tb.Helper()
	var out []string
	_, err := s.View(func(tx store.Tx) error {
		return tx.Scan(db, []byte(from), func(k []byte, _ store.Value) (bool, error) {
			out = append(out, string(k))
			return true, nil
		})
	})
	if err != nil {
		tb.Fatalf("scan: %v", err)
	}
	return out
}

func TestSetGetDeleteAcrossCommit(t *testing.T) {
	s := open(t, t.TempDir(), FsyncEverysec, nil)
	set(t, s, 0, "a", str("1", 0))
	if v, ok := get(t, s, 0, "a"); !ok || v != "1" {
		t.Fatalf("get a = %q %v", v, ok)
	}
	// Wait until the committer has applied it, so the read goes to Badger.
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	if v, ok := get(t, s, 0, "a"); !ok || v != "1" {
		t.Fatalf("after commit: get a = %q %v", v, ok)
	}
	if _, err := s.Update(func(tx store.Tx) error {
		ok, err := tx.Delete(0, []byte("a"))
		if !ok {
			t.Errorf("delete reported no key")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, ok := get(t, s, 0, "a"); ok {
		t.Fatal("a survived DEL")
	}
}

func (s *DB) drainForTest() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.drain()
}

// TestScanMergesOverlay checks KV-7's byte order over keys that are partly
// committed, partly staged, some deleted while staged: more of them than a
// scan reads from the overlay at once (overlayChunk).
func TestScanMergesOverlay(t *testing.T) {
	const n = 5*overlayChunk + 7
	s := open(t, t.TempDir(), FsyncEverysec, nil)
	for i := 0; i < n; i += 2 {
		set(t, s, 0, fmt.Sprintf("k%04d", i), str("x", 0))
	}
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	// Stage odd keys and delete every fourth even one without letting the
	// committer run: hold omu's batch by writing under the keyspace lock.
	s.mu.Lock()
	tx := &tx{s: s, now: s.now(), nowSet: true, write: true}
	for i := 1; i < n; i += 2 {
		if err := tx.Set(0, []byte(fmt.Sprintf("k%04d", i)), str("y", 0)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i += 4 {
		if _, err := tx.Delete(0, []byte(fmt.Sprintf("k%04d", i))); err != nil {
			t.Fatal(err)
		}
	}
	s.endTx(tx)
	s.mu.Unlock()
	var want []string
	for i := 0; i < n; i++ {
		if i%4 == 0 {
			continue
		}
		want = append(want, fmt.Sprintf("k%04d", i))
	}
	got := keys(t, s, 0, "")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("scan:\n got %v\nwant %v", got, want)
	}
	if got := keys(t, s, 0, "k0040"); got[0] != "k0041" || len(got) != len(want)-30 {
		t.Fatalf("scan from k0040 = %d keys from %v, want %d from k0041", len(got), got[0], len(want)-30)
	}
	if n := s.counts[0]; n != len(want) {
		t.Fatalf("count = %d, want %d", n, len(want))
	}
}

// TestExpiry checks KV-4: an expired key is invisible at once and the
// sweeper deletes it (DBSIZE falls) without anyone reading it.
func TestExpiry(t *testing.T) {
	var clock atomic.Int64
	clock.Store(1_000_000)
	s := open(t, t.TempDir(), FsyncEverysec, &clock)
	for i := 0; i < 300; i++ {
		set(t, s, 0, "tmp"+strconv.Itoa(i), str("v", 1_000_100))
	}
	set(t, s, 0, "keep", str("v", 0))
	set(t, s, 0, "later", str("v", 2_000_000))
	if _, ok := get(t, s, 0, "tmp1"); !ok {
		t.Fatal("tmp1 missing before its deadline")
	}
	clock.Store(1_000_100)
	if _, ok := get(t, s, 0, "tmp1"); ok {
		t.Fatal("tmp1 visible at its deadline")
	}
	if got := keys(t, s, 0, ""); len(got) != 2 {
		t.Fatalf("scan shows expired keys: %v", got)
	}
	if n := s.counts[0]; n != 302 {
		t.Fatalf("before sweep count = %d", n)
	}
	deleted := 0
	for i := 0; i < 100 && deleted < 300; i++ {
		deleted += s.Sweep(time.Second)
	}
	if deleted != 300 || s.counts[0] != 2 || s.expiring[0] != 1 {
		t.Fatalf("swept %d, count %d, expiring %d", deleted, s.counts[0], s.expiring[0])
	}
}

func TestRestartKeepsDataAndDeadlines(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions(dir)
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	far := time.Now().Add(time.Hour).UnixMilli()
	bin := "\x00\xff\r\nkey"
	set(t, s, 3, bin, str("val\x00", far))
	set(t, s, 0, "plain", str("p", 0))
	if _, err := s.Update(func(tx store.Tx) error { return tx.SetMeta("counter", []byte("42")) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, dir, FsyncEverysec, nil)
	_, err = s2.View(func(tx store.Tx) error {
		v, ok, err := tx.Get(3, []byte(bin))
		if err != nil || !ok || string(v.Data) != "val\x00" || v.ExpireAt != far {
			t.Errorf("binary key after restart: %+v %v %v", v, ok, err)
		}
		if tx.Len(3) != 1 || tx.Len(0) != 1 || tx.Expiring(3) != 1 {
			t.Errorf("counts after restart: %d %d %d", tx.Len(3), tx.Len(0), tx.Expiring(3))
		}
		m, err := tx.Meta("counter")
		if string(m) != "42" || err != nil {
			t.Errorf("meta = %q %v", m, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAtomicIncrement checks KV-1 at the store level: concurrent
// read-modify-writes in Update never lose an increment.
func TestAtomicIncrement(t *testing.T) {
	for _, fsync := range []Fsync{FsyncEverysec, FsyncAlways} {
		t.Run(fsync.String(), func(t *testing.T) {
			s := open(t, t.TempDir(), fsync, nil)
			const workers, each = 20, 50
			seen := make([]atomic.Bool, workers*each+1)
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < each; i++ {
						var n int
						tk, err := s.Update(func(tx store.Tx) error {
							v, _, err := tx.Get(0, []byte("ctr"))
							if err != nil {
								return err
							}
							n, _ = strconv.Atoi(string(v.Data))
							n++
							return tx.Set(0, []byte("ctr"), str(strconv.Itoa(n), 0))
						})
						if err == nil {
							err = tk.Wait(context.Background())
						}
						if err != nil {
							t.Error(err)
							return
						}
						if seen[n].Swap(true) {
							t.Errorf("value %d handed out twice", n)
						}
					}
				}()
			}
			wg.Wait()
			if v, _ := get(t, s, 0, "ctr"); v != strconv.Itoa(workers*each) {
				t.Fatalf("final = %s", v)
			}
		})
	}
}

func TestFlush(t *testing.T) {
	s := open(t, t.TempDir(), FsyncEverysec, nil)
	for i := 0; i < 20; i++ {
		set(t, s, 1, "k"+strconv.Itoa(i), str("v", time.Now().Add(time.Hour).UnixMilli()))
	}
	set(t, s, 2, "other", str("v", 0))
	if _, err := s.Update(func(tx store.Tx) error {
		// Staged in the same transaction as the flush: gone too.
		if err := tx.Set(1, []byte("staged"), str("v", 0)); err != nil {
			return err
		}
		return tx.Flush(1)
	}); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, s, 1, ""); len(got) != 0 || s.counts[1] != 0 || s.expiring[1] != 0 {
		t.Fatalf("after flush: %v count %d", got, s.counts[1])
	}
	if v, ok := get(t, s, 2, "other"); !ok || v != "v" {
		t.Fatal("flush of db 1 touched db 2")
	}
}

// TestAlwaysTicketIsDurable checks KV-6 under appendfsync always: once the
// ticket is done, the write is in the synced log, so an image of the
// directory taken at that moment (a crash: no Close, Badger perhaps not
// written yet) opens with it; and under everysec, once the ticket is done
// the write is in the log (in the kernel), so a process crash keeps it.
func TestAlwaysTicketIsDurable(t *testing.T) {
	for _, fsync := range []Fsync{FsyncAlways, FsyncEverysec} {
		t.Run(fsync.String(), func(t *testing.T) {
			dir := t.TempDir()
			opts := DefaultOptions(dir)
			opts.Fsync, opts.SweepInterval, opts.GCInterval = fsync, 0, 0
			// Hold the applier back, so Badger cannot have the writes.
			s, release := openHeldBack(t, opts)
			want := map[string]string{}
			for i := range 50 {
				k := fmt.Sprintf("k%02d", i)
				want[k] = string(bytes.Repeat([]byte{byte('a' + i%26)}, 100+i))
				set(t, s, 0, k, str(want[k], 0))
			}
			if fsync == FsyncAlways && s.synced.Load() == 0 {
				t.Fatalf("synced = %d after waited tickets", s.synced.Load())
			}
			image := copyDir(t, dir)
			release()

			c := open(t, image, fsync, nil)
			for k, v := range want {
				if got, ok := get(t, c, 0, k); !ok || got != v {
					t.Fatalf("after a crash %s = %q %v, want %q", k, got, ok, v)
				}
			}
			if n := lenOf(t, c, 0); n != len(want) {
				t.Fatalf("DBSIZE after replay = %d, want %d", n, len(want))
			}
		})
	}
}

func lenOf(tb testing.TB, s *DB, db int) int {
	tb.Helper()
	var n int
	if _, err := s.View(func(tx store.Tx) error { n = tx.Len(db); return nil }); err != nil {
		tb.Fatal(err)
	}
	return n
}

// TestReadOfStagedWriteWaitsForDurability: under appendfsync always, a
// transaction that reads a write not yet synced gets a ticket that is done
// only once that write is, so no client is told of it earlier (KV-6, and
// KV-8 replays of an answer).
func TestReadOfStagedWriteWaitsForDurability(t *testing.T) {
	opts := DefaultOptions(t.TempDir())
	opts.Fsync = FsyncAlways
	opts.SweepInterval, opts.GCInterval = 0, 0
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	s.writeHook = func([]op) error { <-release; return nil }
	s.Start()
	t.Cleanup(func() { s.Close() })

	wt, err := s.Update(func(tx store.Tx) error { return tx.Set(0, []byte("k"), str("v", 0)) })
	if err != nil || wt == nil {
		t.Fatalf("update: %v %v", wt, err)
	}
	rt, err := s.View(func(tx store.Tx) error {
		v, ok, err := tx.Get(0, []byte("k"))
		if !ok || string(v.Data) != "v" {
			t.Errorf("staged write not visible: %q %v", v.Data, ok)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if rt == nil {
		t.Fatal("a read of an unsynced write got no ticket")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := rt.Wait(ctx); err == nil {
		t.Fatal("the read's ticket was done before the write was synced")
	}
	close(release)
	if err := rt.Wait(context.Background()); err != nil {
		t.Fatalf("after the sync: %v", err)
	}
	// A read of durable data needs no ticket.
	rt, _ = s.View(func(tx store.Tx) error { _, _, err := tx.Get(0, []byte("k")); return err })
	if rt != nil {
		t.Fatalf("a read of synced data got a ticket: %v", rt)
	}
}

// TestMemoryLayerStaysTrue drives reads that fill memory with clean values
// and absences, under a cache small enough to evict, and checks every read
// against a model across commits, deletes, re-creations and a FLUSHDB.
func TestMemoryLayerStaysTrue(t *testing.T) {
	opts := DefaultOptions(t.TempDir())
	opts.SweepInterval, opts.GCInterval = 0, 0
	opts.CacheSize = 4 << 10 // a few dozen entries: eviction runs all the time
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Close() })

	model := map[string]string{}
	check := func(step string) {
		t.Helper()
		for i := 0; i < 200; i++ {
			k := fmt.Sprintf("k%03d", i)
			v, ok := get(t, s, 0, k)
			want, wok := model[k]
			if ok != wok || v != want {
				t.Fatalf("%s: get %s = %q %v, want %q %v", step, k, v, ok, want, wok)
			}
		}
		checkCache(t, s, step)
	}
	check("empty") // every key is now a cached absence (or evicted)
	for i := 0; i < 200; i += 2 {
		k := fmt.Sprintf("k%03d", i)
		model[k] = "v" + k
		set(t, s, 0, k, str(model[k], 0))
	}
	check("staged")
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	check("committed")
	for i := 0; i < 200; i += 4 {
		k := fmt.Sprintf("k%03d", i)
		delete(model, k)
		if _, err := s.Update(func(tx store.Tx) error { _, err := tx.Delete(0, []byte(k)); return err }); err != nil {
			t.Fatal(err)
		}
	}
	check("deleted, staged")
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	check("deleted, committed")
	for i := 0; i < 200; i += 8 {
		k := fmt.Sprintf("k%03d", i)
		model[k] = "again"
		set(t, s, 0, k, str("again", 0))
	}
	check("re-created")
	if _, err := s.Update(func(tx store.Tx) error { return tx.Flush(0) }); err != nil {
		t.Fatal(err)
	}
	clear(model)
	check("flushed")
	s.omu.RLock()
	over := s.cacheBytes > opts.CacheSize
	s.omu.RUnlock()
	if over {
		t.Fatalf("cache holds %d bytes, over its %d budget", s.cacheBytes, opts.CacheSize)
	}
}

// TestCountAfterReopenWithWritesDuringCount reopens a keyspace and writes
// to it at once, while the keys are still being counted in the background:
// DBSIZE (Len) and the expiry count must come out exact, neither missing
// nor double-counting the keys written meanwhile.
func TestCountAfterReopenWithWritesDuringCount(t *testing.T) {
	dir := t.TempDir()
	const n = 20000
	s := open(t, dir, FsyncEverysec, nil)
	if _, err := s.Update(func(tx store.Tx) error {
		for i := 0; i < n; i++ {
			v := str("x", 0)
			if i%10 == 0 {
				v.ExpireAt = time.Now().Add(time.Hour).UnixMilli()
			}
			if err := tx.Set(i%2, []byte(fmt.Sprintf("k%06d", i)), v); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopen without starting: the count runs when first needed, after
	// the writes below have reached Badger, and must still count the
	// keyspace as it was at Open.
	opts := DefaultOptions(dir)
	opts.SweepInterval, opts.GCInterval = 0, 0
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// At once: delete 100 old keys of db 0 (10 of them with a deadline),
	// add 50 new ones to db 1, overwrite 30 old ones of db 1.
	if _, err := s.Update(func(tx store.Tx) error {
		for i := 0; i < 200; i += 2 {
			if _, err := tx.Delete(0, []byte(fmt.Sprintf("k%06d", i))); err != nil {
				return err
			}
		}
		for i := 0; i < 50; i++ {
			if err := tx.Set(1, []byte(fmt.Sprintf("new%03d", i)), str("y", 0)); err != nil {
				return err
			}
		}
		for i := 1; i < 60; i += 2 {
			if err := tx.Set(1, []byte(fmt.Sprintf("k%06d", i)), str("z", 0)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	var lens, exps [2]int
	if _, err := s.View(func(tx store.Tx) error {
		for db := 0; db < 2; db++ {
			lens[db], exps[db] = tx.Len(db), tx.Expiring(db)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := [2]int{n/2 - 100, n/2 + 50}; lens != want {
		t.Fatalf("Len = %v, want %v", lens, want)
	}
	// db 0 held the keys i%10 == 0 with deadlines (2000), minus the 20
	// deleted; db 1 had none (odd i).
	if want := [2]int{n/10 - 20, 0}; exps != want {
		t.Fatalf("Expiring = %v, want %v", exps, want)
	}
}

// The sweeper scans the expiry index only once a deadline may have passed
// (the ONCE workload leaves hundreds of thousands of tombstones of lease
// deadlines there, which each scan skipped under the keyspace lock), and a
// deadline set after a scan, earlier than any the scan saw, still counts.
func TestSweepScansOnlyWhenADeadlineMayHavePassed(t *testing.T) {
	var clock atomic.Int64
	clock.Store(1_000_000)
	s := open(t, t.TempDir(), FsyncEverysec, &clock)
	set(t, s, 0, "late", str("v", 1_005_000))
	sweep := func(want int) {
		t.Helper()
		if got := s.Sweep(time.Second); got != want {
			t.Fatalf("at %d: swept %d keys, want %d", clock.Load(), got, want)
		}
	}
	scans := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.sweepScans
	}
	sweep(0) // the first sweep scans and learns 1_005_000
	before := scans()
	clock.Store(1_001_000)
	sweep(0)
	if scans() != before {
		t.Fatalf("the sweeper scanned the index %d time(s) before any deadline", scans()-before)
	}
	set(t, s, 0, "soon", str("v", 1_002_000))
	clock.Store(1_002_500)
	sweep(1) // "soon", though it is earlier than what the last scan saw
	if _, ok := get(t, s, 0, "late"); !ok {
		t.Fatal("late swept before its deadline")
	}
	clock.Store(1_005_000)
	sweep(1)
	if n := s.counts[0]; n != 0 {
		t.Fatalf("count after sweeping both = %d", n)
	}
}

// A View whose function panics still ends: the panic goes on to the
// caller (which answers it), and writers are not locked out.
func TestPanicInViewReleasesTheLock(t *testing.T) {
	s := open(t, t.TempDir(), FsyncEverysec, nil)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not reach View's caller")
			}
		}()
		_, _ = s.View(func(tx store.Tx) error { panic("boom") })
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		set(t, s, 0, "k", str("v", 0))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a write after a panicking View never ran: the shared lock was not released")
	}
}

// TestPointReadsUseTheSnapshot: a read that misses memory reads the
// snapshot taken at Start or after the applier's last round, rather than a
// new Badger transaction, which would wait for the commits in flight (a
// whole apply round) while its caller holds the keyspace lock. The
// snapshot is there from Start (a fresh server's first round is its
// largest) and follows every apply, deletion and flush.
func TestPointReadsUseTheSnapshot(t *testing.T) {
	opts := DefaultOptions(t.TempDir())
	opts.SweepInterval, opts.GCInterval = 0, 0
	opts.CacheSize = 0 // nothing stays in memory once applied: every read misses
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Close() })
	drain := func() {
		t.Helper()
		if err := s.drainForTest(); err != nil {
			t.Fatal(err)
		}
	}
	model := map[string]string{}
	check := func(step string) {
		t.Helper()
		for i := range 10 {
			k := fmt.Sprintf("k%d", i)
			v, ok := get(t, s, 0, k)
			want, wok := model[k]
			if ok != wok || v != want {
				t.Fatalf("%s: get %s = %q %v, want %q %v", step, k, v, ok, want, wok)
			}
		}
	}
	before := s.ownReads.Load()
	check("started, nothing applied")
	for i := range 10 {
		k := fmt.Sprintf("k%d", i)
		model[k] = "a"
		set(t, s, 0, k, str("a", 0))
	}
	drain()
	check("applied")
	for i := range 5 {
		k := fmt.Sprintf("k%d", i)
		model[k] = "b"
		set(t, s, 0, k, str("b", 0))
	}
	drain()
	check("rewritten, applied")
	if _, err := s.Update(func(tx store.Tx) error { _, err := tx.Delete(0, []byte("k5")); return err }); err != nil {
		t.Fatal(err)
	}
	delete(model, "k5")
	drain()
	check("deleted, applied")
	if _, err := s.Update(func(tx store.Tx) error { return tx.Flush(0) }); err != nil {
		t.Fatal(err)
	}
	clear(model)
	check("flushed")
	if n := s.ownReads.Load() - before; n != 0 {
		t.Fatalf("%d point reads opened their own Badger transaction", n)
	}
}

// TestSweepRoundsResumeWhereTheLastStopped: with many keys expired at
// once, each sweep round starts where the last one stopped rather than
// stepping again over the index entries already deleted (they linger in
// the overlay until applied, then as Badger tombstones): steps stay linear
// in the keys swept, not quadratic. A key given a deadline while the
// sweeper is behind is still swept.
func TestSweepRoundsResumeWhereTheLastStopped(t *testing.T) {
	var clock atomic.Int64
	clock.Store(1_000_000)
	s := open(t, t.TempDir(), FsyncEverysec, &clock)
	const n = 20 * 64 // 20 full rounds of SweepKeys
	for i := range n {
		set(t, s, 0, fmt.Sprintf("k%05d", i), str("v", 1_001_000+int64(i)))
	}
	clock.Store(1_001_000 + n)
	s.mu.Lock()
	s.sweepSteps = 0
	s.mu.Unlock()
	for range 3 {
		if deleted, more := s.sweepRound(0); deleted != 64 || !more {
			t.Fatalf("round: deleted %d, more %v; want 64, true", deleted, more)
		}
	}
	// A deadline set while the backlog is swept: later than now, so after
	// every entry the rounds skip.
	set(t, s, 0, "later", str("v", clock.Load()+10))
	if got := s.Sweep(time.Hour); got != n-3*64 {
		t.Fatalf("swept %d keys, want %d", got, n-3*64)
	}
	if c := s.counts[0]; c != 1 {
		t.Fatalf("%d keys left after sweeping, want 1 (later)", c)
	}
	s.mu.Lock()
	steps := s.sweepSteps
	s.mu.Unlock()
	if steps > 3*n {
		t.Fatalf("the sweep rounds stepped over %d index entries to sweep %d keys", steps, n)
	}
	clock.Add(10)
	if got := s.Sweep(time.Hour); got != 1 {
		t.Fatalf("swept %d keys, want 1 (later)", got)
	}
}

// TestSweepAfterClockStepBack: an index entry put before the sweep
// cursor (the wall clock stepped back while a backlog was swept) is still
// swept: the round that ends the backlog lowers the next deadline it found
// to the earliest one set since the backlog's rounds began.
func TestSweepAfterClockStepBack(t *testing.T) {
	var clock atomic.Int64
	clock.Store(1_000_000)
	s := open(t, t.TempDir(), FsyncEverysec, &clock)
	const n = 4 * 64
	for i := range n {
		set(t, s, 0, fmt.Sprintf("k%05d", i), str("v", 1_001_000+int64(i)))
	}
	set(t, s, 0, "far", str("v", 2_000_000))
	clock.Store(1_001_000 + n)
	for range 2 {
		if _, more := s.sweepRound(0); !more {
			t.Fatal("the backlog ended early")
		}
	}
	clock.Store(1_000_500) // stepped back
	set(t, s, 0, "early", str("v", 1_000_600))
	clock.Store(1_001_000 + n)
	s.Sweep(time.Hour)
	s.Sweep(time.Hour)
	if c := s.counts[0]; c != 1 {
		t.Fatalf("%d keys left, want 1 (far)", c)
	}
}

// TestSweepStartsAtTheEarliestDeadline: once a backlog is swept, the
// next scans start where the earliest remaining deadline sorts in the
// index, not at its start, where the entries swept so far lie as deletions
// (in the overlay until applied, then as Badger tombstones until
// compacted away): under a steady stream of expiring keys, every scan from
// the start stepped over all of them again, under the keyspace lock.
func TestSweepStartsAtTheEarliestDeadline(t *testing.T) {
	var clock atomic.Int64
	opts := uncachedOpts(t, &clock)
	opts.ApplyDelay = time.Hour // the deletions stay in the overlay, where steps counts them
	opts.CalmApply = 0          // no apply at calm: only the delay, the bounds and drains
	s := openOpts(t, opts)
	steps := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		n := s.sweepSteps
		s.sweepSteps = 0
		return n
	}
	const n = 10 * 64
	for i := range n {
		set(t, s, 0, fmt.Sprintf("k%05d", i), str("v", 1_001_000+int64(i)))
	}
	set(t, s, 0, "far", str("v", 2_000_000))
	clock.Store(1_001_000 + n)
	if got := s.Sweep(time.Hour); got != n {
		t.Fatalf("swept %d keys, want %d", got, n)
	}
	steps()
	for i := range 3 {
		at := clock.Load() + 10
		set(t, s, 0, fmt.Sprintf("next%d", i), str("v", at))
		clock.Store(at)
		if got := s.Sweep(time.Hour); got != 1 {
			t.Fatalf("round %d: swept %d keys, want 1", i, got)
		}
		if st := steps(); st > 4 {
			t.Fatalf("round %d: the scan stepped over %d index entries to sweep one key", i, st)
		}
	}
	if c := s.counts[0]; c != 1 {
		t.Fatalf("%d keys left, want 1 (far)", c)
	}
}

// The sweeper holds the keyspace lock, so it must not wait for the
// applier's cleaning of a round (cleanMu), which can take tens of
// milliseconds after a large one: every command would wait with it. It
// reads the shared snapshot, which is complete without cleanMu.
func TestSweepDoesNotWaitForCleaning(t *testing.T) {
	var clock atomic.Int64
	clock.Store(1_000_000)
	s := open(t, t.TempDir(), FsyncEverysec, &clock)
	for i := 0; i < 100; i++ {
		set(t, s, 0, fmt.Sprintf("k%03d", i), str("v", 1_001_000+int64(i)))
	}
	if err := s.drainForTest(); err != nil { // half in Badger, half staged
		t.Fatal(err)
	}
	for i := 100; i < 200; i++ {
		set(t, s, 0, fmt.Sprintf("k%03d", i), str("v", 1_001_000+int64(i)))
	}
	clock.Store(1_002_000)
	s.cleanMu.Lock() // the applier, cleaning a large round
	swept := make(chan int, 1)
	go func() { swept <- s.Sweep(time.Second) }()
	select {
	case n := <-swept:
		s.cleanMu.Unlock()
		if want := min(200, s.opts.SweepKeys*(1+200/s.opts.SweepKeys)); n < s.opts.SweepKeys || n > want {
			t.Fatalf("swept %d keys, want between %d and %d", n, s.opts.SweepKeys, want)
		}
	case <-time.After(10 * time.Second):
		s.cleanMu.Unlock()
		t.Fatal("the sweep waited for the applier's cleaning")
	}
	for s.Sweep(time.Second) > 0 {
	}
	if n := lenOf(t, s, 0); n != 0 {
		t.Fatalf("%d keys left after sweeping them all", n)
	}
}

// uncachedOpts are options for a store on clock (set to 1,000,000 ms)
// whose applied entries leave memory, that sweeps only when told to.
func uncachedOpts(tb testing.TB, clock *atomic.Int64) Options {
	clock.Store(1_000_000)
	opts := DefaultOptions(tb.TempDir())
	opts.Clock = clock.Load
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
	opts.CacheSize = 0
	return opts
}

// openOpts is a started store with opts, closed when the test ends.
func openOpts(tb testing.TB, opts Options) *DB {
	tb.Helper()
	s, err := Open(opts)
	if err != nil {
		tb.Fatal(err)
	}
	s.Start()
	tb.Cleanup(func() { s.Close() })
	return s
}

// A sweep reads the due keys that memory does not hold without the
// keyspace lock (a write goes on meanwhile: the hook's would hang
// otherwise), then checks them again under it: a key given another
// deadline meanwhile is not deleted for the deadline the sweep read,
// whether that write still waits in memory or has reached Badger and
// left memory before the sweep takes the lock.
//
// With an exact index (exactIndex), the sweep reads no key outside the
// lock, and deletes the ones that were not written since its scan
// unread; the rewritten key is read under the lock as before.
func TestSweepReadsOutsideTheLockThenRechecks(t *testing.T) {
	for _, c := range []struct{ applied, exact bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		applied := c.applied
		name := map[bool]string{false: "rewrite waiting", true: "rewrite applied"}[applied] +
			map[bool]string{false: ", index checked", true: ", index exact"}[c.exact]
		t.Run(name, func(t *testing.T) {
			var clock atomic.Int64
			opts := uncachedOpts(t, &clock)
			opts.ApplyDelay = time.Hour
			opts.CalmApply = 0 // no apply at calm: only the delay, the bounds and drains
			if applied {
				opts.ApplyDelay = 0
			}
			s := openOpts(t, opts)
			if !c.exact {
				s.checkUpTo = math.MaxInt64 // as an old store's entries are
			}
			setDueUnheld(t, s, &clock, "kept", "expired")
			hooked := 0
			s.sweepHook = func() {
				hooked++
				set(t, s, 0, "kept", str("w", 2_000_000))
				if applied {
					waitGone(t, s, "kept")
				} else if !s.inMemory(dataKey(0, []byte("kept"))) {
					t.Error("the rewrite left memory at once")
				}
			}
			before := s.Stats().Lookups
			if n := s.Sweep(time.Second); n != 1 {
				t.Errorf("swept %d keys, want 1 (expired)", n)
			}
			if hooked == 0 {
				t.Fatal("the sweep read no key outside the lock")
			}
			// Badger reads: both keys outside the lock (unless the index
			// is exact), and the hook's SET of kept; once kept's rewrite
			// is applied (a new snapshot), both again under the lock.
			want, unread := int64(3), 0
			switch {
			case applied && c.exact:
				want = 3
			case applied:
				want = 5
			case c.exact:
				want, unread = 1, 1
			}
			if d := s.Stats().Lookups - before; d != want {
				t.Errorf("%d Badger reads, want %d", d, want)
			}
			if s.sweptUnread != unread {
				t.Errorf("%d keys deleted unread, want %d", s.sweptUnread, unread)
			}
			if v, ok := get(t, s, 0, "kept"); !ok || v != "w" {
				t.Fatalf("kept = %q, %v after the sweep; want w, with its new deadline", v, ok)
			}
			if _, ok := get(t, s, 0, "expired"); ok {
				t.Fatal("expired survived the sweep")
			}
			if n := lenOf(t, s, 0); n != 1 {
				t.Fatalf("%d keys counted, want 1", n)
			}
		})
	}
}

// An expiry index entry that does not match its key's deadline (what an
// older version's crash, or a power loss, could leave) does not delete
// the key: the store checks every entry up to the last deadline its index
// holds when it opens a directory without the record of how far its
// index may be stale, one whose format (1) promised nothing, or one that
// was not closed before the machine went down (RunningFile, with another
// boot's ID); the last deadline counts databases past the configured
// number too. Planted in a store closed cleanly with its
// record, the same entry deletes the key unread: what the record guards.
func TestSweepChecksEntriesOlderThanTheExactIndex(t *testing.T) {
	cases := []struct {
		name    string
		damage  func(t *testing.T, dir string, txn *badger.Txn) error
		checked bool
	}{
		{"record kept, closed", nil, false},
		{"record missing", func(t *testing.T, dir string, txn *badger.Txn) error {
			return txn.Delete(metaKey(sweepCheckMeta))
		}, true},
		{"format 1, record kept", func(t *testing.T, dir string, txn *badger.Txn) error {
			return os.WriteFile(filepath.Join(dir, MarkerFile), markerText(formatStaleIndex), 0o644)
		}, true},
		{"not closed, the machine booted since", func(t *testing.T, dir string, txn *badger.Txn) error {
			return os.WriteFile(filepath.Join(dir, RunningFile), []byte("another boot"), 0o644)
		}, true},
		// A process that died (kill -9) left the kernel everything it
		// wrote: nothing to check, where the boot is known.
		{"not closed, same boot", func(t *testing.T, dir string, txn *badger.Txn) error {
			return os.WriteFile(filepath.Join(dir, RunningFile), []byte(bootID()), 0o644)
		}, bootID() == ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var clock atomic.Int64
			opts := uncachedOpts(t, &clock)
			s, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			s.Start()
			if s.checkUpTo != 0 {
				t.Fatalf("a new store checks entries up to %d, want 0", s.checkUpTo)
			}
			set(t, s, 0, "k", str("v", 2_000_000))
			set(t, s, 5, "far", str("v", 3_000_000)) // the index's last deadline
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(opts.Dir, RunningFile)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s left after Close: %v", RunningFile, err)
			}
			// An entry for k at a deadline k does not have.
			bdb, err := badger.Open(badgerOptions(opts))
			if err != nil {
				t.Fatal(err)
			}
			if err := bdb.Update(func(txn *badger.Txn) error {
				if c.damage != nil {
					if err := c.damage(t, opts.Dir, txn); err != nil {
						return err
					}
				}
				return txn.Set(expiryKey(0, 1_000_050, []byte("k")), []byte{})
			}); err != nil {
				t.Fatal(err)
			}
			if err := bdb.Close(); err != nil {
				t.Fatal(err)
			}
			opts.Databases = 1 // db 5's entries still count
			s = openOpts(t, opts)
			want := int64(0)
			if c.checked {
				want = 3_000_000
			}
			if s.checkUpTo != want {
				t.Fatalf("checks entries up to %d, want %d", s.checkUpTo, want)
			}
			if b, _ := os.ReadFile(filepath.Join(opts.Dir, MarkerFile)); string(b) != string(markerText(formatPlain)) {
				t.Fatalf("marker %q after Open, want format %d", b, formatPlain)
			}
			clock.Store(1_000_100)
			s.Sweep(time.Second)
			_, ok := get(t, s, 0, "k")
			if c.checked && !ok {
				t.Fatal("a stale entry deleted k")
			}
			if !c.checked && ok {
				t.Fatal("the planted entry did not delete k unread: the test no longer shows what the record guards")
			}
			// Entries set later, past the record, are exact.
			if !s.exactIndex(3_000_001) || s.exactIndex(2_000_000) != !c.checked {
				t.Fatalf("exactIndex wrong around checkUpTo %d", s.checkUpTo)
			}
			// The raised bound is recorded: a clean reopen keeps it.
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openOpts(t, opts)
			if s.checkUpTo != want {
				t.Fatalf("after a clean reopen, checks entries up to %d, want %d", s.checkUpTo, want)
			}
		})
	}
}

// Writes refused between a sweep's reads and its deletions leave the due
// keys for a later sweep, which deletes them once writes are accepted
// again: the sweep does not skip them until some later deadline.
func TestSweepRetriesKeysItCouldNotSettle(t *testing.T) {
	var clock atomic.Int64
	s := openOpts(t, uncachedOpts(t, &clock))
	set(t, s, 0, "a", str("v", 1_000_010))
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	clock.Store(1_000_100)
	refused := errors.New("disk full")
	s.sweepHook = func() { s.failure.Store(&refused) }
	if n := s.Sweep(time.Second); n != 0 {
		t.Fatalf("swept %d keys while writes were refused", n)
	}
	s.sweepHook = nil
	s.failure.Store(nil)
	clock.Store(1_000_200)
	if n := s.Sweep(time.Second); n != 1 {
		t.Fatalf("swept %d keys once writes were accepted again, want 1", n)
	}
}

// Memtables smaller than the 6.7 MiB that Badger's default value threshold
// needs open (config allows memtable-size from 1mb), and the entries that
// strain a write batch most reach Badger's tables and are there after a
// restart: the longest key, with a deadline (its expiry index entry is the
// longest key the store writes) and the largest value kept in the tables,
// and values on either side of the threshold. A longer key is refused at
// once, and the store goes on taking writes.
func TestSmallMemtables(t *testing.T) {
	for _, mt := range []int64{1 << 20, 4 << 20, 8 << 20} {
		t.Run(strconv.FormatInt(mt>>20, 10)+"MiB", func(t *testing.T) {
			opts := DefaultOptions(t.TempDir())
			opts.MemTableSize = mt
			opts.CacheSize = 0
			opts.SweepInterval, opts.GCInterval = 0, 0
			inTables := int(valueThreshold(mt)) - headerLen - 1 // encoded: threshold-1
			far := time.Now().Add(time.Hour).UnixMilli()
			longest := strings.Repeat("k", store.MaxKeyLen)
			want := map[string]store.Value{
				longest:      str(strings.Repeat("l", inTables), far),
				"in tables":  str(strings.Repeat("t", inTables), 0),
				"in the log": str(strings.Repeat("v", inTables+1), 0),
			}
			s, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			s.Start()
			for k, v := range want {
				set(t, s, 0, k, v)
			}
			_, err = s.Update(func(tx store.Tx) error {
				return tx.Set(0, []byte(longest+"k"), str("x", 0))
			})
			if !errors.Is(err, store.ErrKeyTooLong) {
				t.Fatalf("a key of %d bytes: %v, want %v", len(longest)+1, err, store.ErrKeyTooLong)
			}
			set(t, s, 0, "after", str("a", 0))
			want["after"] = str("a", 0)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openOpts(t, opts)
			for k, v := range want {
				if got, ok := get(t, s, 0, k); !ok || got != string(v.Data) {
					t.Errorf("key of %d bytes after restart: %d bytes, found %v; want %d", len(k), len(got), ok, len(v.Data))
				}
			}
			if n := lenOf(t, s, 0); n != len(want) {
				t.Errorf("%d keys after restart, want %d", n, len(want))
			}
			if _, err := s.View(func(tx store.Tx) error {
				v, ok, err := tx.Get(0, []byte(longest))
				if !ok || err != nil || v.ExpireAt != far || tx.Expiring(0) != 1 {
					t.Errorf("the longest key's deadline after restart: %d (found %v, %v), %d expiring; want %d, 1",
						v.ExpireAt, ok, err, tx.Expiring(0), far)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestTxReusesItsKeyBuffer checks that the buffer a transaction builds
// Badger keys in (tx.key) does not carry one key's bytes into another's
// write: one transaction reads and writes keys of different lengths and
// databases in turn, over keys both in memory and only in Badger, and
// every key ends with its own value (KV-1).
func TestTxReusesItsKeyBuffer(t *testing.T) {
	opts := DefaultOptions(t.TempDir())
	opts.CacheSize = 0 // a key that reached Badger is read from it
	s := openOpts(t, opts)
	set(t, s, 0, "long-key-in-badger", str("old", 0))
	set(t, s, 1, "k", str("old", 0))
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	ks := []struct {
		db  int
		key string
	}{{0, "long-key-in-badger"}, {1, "k"}, {0, "k"}, {0, "mid-key"}, {1, "long-key-in-badger"}}
	for round := range 3 {
		_, err := s.Update(func(tx store.Tx) error {
			for i, k := range ks {
				if _, _, err := tx.Get(k.db, []byte(k.key)); err != nil {
					return err
				}
				if i%2 == 1 {
					// A read of another key between Get and Set.
					if _, _, err := tx.Get(ks[0].db, []byte(ks[0].key)); err != nil {
						return err
					}
				}
				if err := tx.Set(k.db, []byte(k.key), str(fmt.Sprintf("%d-%d-%s", round, k.db, k.key), 0)); err != nil {
					return err
				}
			}
			_, err := tx.Delete(0, []byte("mid-key"))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			want, wantOK := fmt.Sprintf("%d-%d-%s", round, k.db, k.key), true
			if k.db == 0 && k.key == "mid-key" {
				want, wantOK = "", false
			}
			if v, ok := get(t, s, k.db, k.key); v != want || ok != wantOK {
				t.Fatalf("round %d: db %d %s = %q %v, want %q %v", round, k.db, k.key, v, ok, want, wantOK)
			}
		}
		if n := len(keys(t, s, 0, "")); n != 2 {
			t.Fatalf("round %d: db 0 has %d keys, want 2", round, n)
		}
	}
}

// TestTxMemoSurvivesNoFailedRead checks the memo of a transaction's last
// read (tx.memo) against the key buffer it shares (tx.key): a read that
// fails must not leave the memo pairing its key with the value of the
// key read before it. A later read of that key in the same transaction
// (EXEC goes on after an error) gets its own value.
func TestTxMemoSurvivesNoFailedRead(t *testing.T) {
	opts := DefaultOptions(t.TempDir())
	opts.CacheSize = 0 // reads go to Badger, where one can fail
	s := openOpts(t, opts)
	set(t, s, 0, "aa", str("value-of-aa", 0))
	set(t, s, 0, "bb", str("value-of-bb", 0))
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Update(func(tx store.Tx) error {
		if v, ok, err := tx.Get(0, []byte("aa")); err != nil || !ok || string(v.Data) != "value-of-aa" {
			t.Fatalf("get aa = %q %v %v", v.Data, ok, err)
		}
		// Break the read snapshot for one read: a discarded transaction.
		broken := s.bdb.NewTransaction(false)
		broken.Discard()
		s.snapMu.Lock()
		good := s.snap
		s.snap = broken
		s.snapMu.Unlock()
		_, _, failed := tx.Get(0, []byte("bb"))
		s.snapMu.Lock()
		s.snap = good
		s.snapMu.Unlock()
		if failed == nil {
			t.Fatal("the read through a discarded snapshot did not fail")
		}
		if v, ok, err := tx.Get(0, []byte("bb")); err != nil || !ok || string(v.Data) != "value-of-bb" {
			t.Fatalf("get bb after a failed read = %q %v %v, want value-of-bb", v.Data, ok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTicketCovers checks which tickets a later one stands for in a
// connection's pipeline (resp.Conn.Await): only a done one, or one of the
// same counter with a number no higher, which the counter reaches first;
// never one of the other counter (a change of appendfsync between
// commands: the synced counter lags the logged one) nor another kind.
func TestTicketCovers(t *testing.T) {
	s := &DB{}
	logged := func(n uint64) ticket { return ticket{s: s, n: n, c: &s.logged} }
	synced := func(n uint64) ticket { return ticket{s: s, n: n, c: &s.synced} }
	for _, tc := range []struct {
		name string
		t    interface{ Covers(any) bool }
		prev any
		want bool
	}{
		{"same number", logged(5), logged(5), true},
		{"lower number", logged(5), logged(3), true},
		{"higher number", logged(5), logged(6), false},
		{"other counter", synced(5), logged(3), false},
		{"other counter, reversed", logged(5), synced(3), false},
		{"done", logged(5), store.Done{}, true},
		{"nil", logged(5), nil, false},
		{"another kind", logged(5), "ticket", false},
		{"done covers done", store.Done{}, store.Done{}, true},
		{"done covers no ticket", store.Done{}, logged(1), false},
	} {
		if got := tc.t.Covers(tc.prev); got != tc.want {
			t.Errorf("%s: Covers = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestEntryHeadFollowsTheValue checks that the header an entry keeps
// (entry.head) says what its value does, through overwrites with and
// without a deadline, deletion, expiry and a restart (the cache fill):
// a stale header would show an expired key, or drop a deadline (KV-4).
func TestEntryHeadFollowsTheValue(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n != 64 {
		t.Errorf("entry is %d bytes; the header must fit in its padding (64)", n)
	}
	var clock atomic.Int64
	clock.Store(1_000_000)
	dir := t.TempDir()
	s := open(t, dir, FsyncEverysec, &clock)
	check := func(s *DB, key, data string, at int64, found bool) {
		t.Helper()
		_, err := s.View(func(tx store.Tx) error {
			v, ok, err := tx.Get(0, []byte(key))
			if ok != found || (ok && (string(v.Data) != data || v.ExpireAt != at || v.Kind != store.KindString)) {
				t.Errorf("%s: got %+v found=%v; want %q at %d found=%v", key, v, ok, data, at, found)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	set(t, s, 0, "k", str("a", 0))
	check(s, "k", "a", 0, true)
	set(t, s, 0, "k", str("b", 1_000_500))
	check(s, "k", "b", 1_000_500, true)
	set(t, s, 0, "k", str("c", 0))
	check(s, "k", "c", 0, true)
	set(t, s, 0, "k", str("d", 1_000_100))
	clock.Store(1_000_100)
	check(s, "k", "", 0, false) // expired: the header must not say "no deadline"
	set(t, s, 0, "k", str("e", 0))
	check(s, "k", "e", 0, true)
	if _, err := s.Update(func(tx store.Tx) error { _, err := tx.Delete(0, []byte("k")); return err }); err != nil {
		t.Fatal(err)
	}
	check(s, "k", "", 0, false)
	set(t, s, 0, "k", str("f", 3_000_000))
	set(t, s, 0, "plain", str("p", 0))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// After a restart, memory fills from Badger's values.
	s2 := open(t, dir, FsyncEverysec, &clock)
	check(s2, "k", "f", 3_000_000, true)
	check(s2, "plain", "p", 0, true)
	clock.Store(3_000_000)
	check(s2, "k", "", 0, false)
	check(s2, "plain", "p", 0, true)
}

// TestSetKeepsNeitherKeyNorValue: Set copies the key and the value it
// stores (store.Tx), and a transaction builds every expiry index entry it
// stages in one buffer: several keys given new deadlines, old deadlines
// replaced, from buffers the caller scribbles over between the calls,
// must each keep their own value and deadline, in memory, after a
// restart, and when the sweeper deletes them at their deadlines (KV-4,
// KV-5).
func TestSetKeepsNeitherKeyNorValue(t *testing.T) {
	var clock atomic.Int64
	clock.Store(1_000_000)
	dir := t.TempDir()
	s := open(t, dir, FsyncEverysec, &clock)
	set(t, s, 0, "moved", str("old", 1_000_900)) // its deadline moves below
	want := map[string]int64{"a": 1_000_100, "long-key-bb": 1_000_200, "moved": 1_000_300, "c": 0}
	scribble := func(b []byte) {
		for i := range b {
			b[i] = '#'
		}
	}
	key, val := make([]byte, 0, 32), make([]byte, 0, 32)
	_, err := s.Update(func(tx store.Tx) error {
		for _, k := range []string{"a", "long-key-bb", "moved", "c"} {
			key, val = append(key[:0], k...), append(val[:0], "value of "+k...)
			if err := tx.Set(0, key, store.Value{Kind: store.KindString, Data: val, ExpireAt: want[k]}); err != nil {
				return err
			}
			scribble(key)
			scribble(val)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	check := func(s *DB, when string) {
		t.Helper()
		_, err := s.View(func(tx store.Tx) error {
			for k, at := range want {
				v, ok, err := tx.Get(0, []byte(k))
				if err != nil || !ok || string(v.Data) != "value of "+k || v.ExpireAt != at {
					t.Errorf("%s: %s = %+v %v %v, want %q until %d", when, k, v, ok, err, "value of "+k, at)
				}
			}
			if n := tx.Len(0); n != len(want) {
				t.Errorf("%s: %d keys, want %d", when, n, len(want))
			}
			if n := tx.Expiring(0); n != 3 {
				t.Errorf("%s: %d keys with a deadline, want 3", when, n)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	check(s, "before a restart")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, FsyncEverysec, &clock)
	check(s, "after a restart")
	// The sweeper finds each key at its own deadline, and the old
	// deadline of "moved" no longer.
	for _, step := range []struct {
		at   int64
		gone []string
	}{{1_000_100, []string{"a"}}, {1_000_200, []string{"long-key-bb"}}, {1_000_300, []string{"moved"}}, {1_000_900, nil}} {
		clock.Store(step.at)
		n := 0
		for i := 0; i < 10; i++ {
			n += s.Sweep(time.Second)
		}
		if n != len(step.gone) {
			t.Fatalf("at %d the sweeper deleted %d keys, want %v", step.at, n, step.gone)
		}
		for _, k := range step.gone {
			delete(want, k)
		}
		if got := keys(t, s, 0, ""); len(got) != len(want) {
			t.Fatalf("at %d: keys %v, want %d", step.at, got, len(want))
		}
	}
	if _, ok := get(t, s, 0, "c"); !ok {
		t.Fatal("c, with no deadline, is gone")
	}
}

// While expiry is paused (CLIENT PAUSE), the sweeper deletes nothing; the
// expired key stays stored, and is swept once expiry resumes.
func TestSweepPausedByPauseExpiry(t *testing.T) {
	var clock atomic.Int64
	clock.Store(1_000_000)
	s := open(t, t.TempDir(), FsyncEverysec, &clock)
	set(t, s, 0, "k", str("v", 1_001_000))
	clock.Store(1_002_000)
	for _, step := range []struct {
		paused    bool
		swept     int
		wantCount int
	}{
		{paused: true, swept: 0, wantCount: 1},
		{paused: true, swept: 0, wantCount: 1},
		{paused: false, swept: 1, wantCount: 0},
	} {
		s.PauseExpiry(step.paused)
		if got := s.Sweep(time.Second); got != step.swept {
			t.Fatalf("paused %v: swept %d keys, want %d", step.paused, got, step.swept)
		}
		if n := s.counts[0]; n != step.wantCount {
			t.Fatalf("paused %v: %d keys stored, want %d", step.paused, n, step.wantCount)
		}
	}
}
