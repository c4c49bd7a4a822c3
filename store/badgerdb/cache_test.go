package badgerdb

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncekv/oncekv/store"
)

// checkCache checks the cache's books against mem: cacheBytes is the
// cost of mem's clean entries, each of which has exactly one live place
// in the clean queue, and the queue has no more places than its bound;
// dirty lists exactly mem's dirty entries, each at its index (seq).
func checkCache(tb testing.TB, s *DB, step string) {
	tb.Helper()
	s.omu.RLock()
	defer s.omu.RUnlock()
	var cost int64
	clean, dirty := 0, 0
	for e := range s.mem.all() {
		if e.n == 0 {
			cost += e.cost()
			clean++
			continue
		}
		dirty++
		if e.seq >= uint64(len(s.dirty)) || s.dirty[e.seq] != e {
			tb.Fatalf("%s: dirty entry %q is not at its index %d in dirty (%d entries)", step, e.key, e.seq, len(s.dirty))
		}
	}
	if dirty != len(s.dirty) {
		tb.Fatalf("%s: mem has %d dirty entries, dirty lists %d", step, dirty, len(s.dirty))
	}
	live := map[*entry]int{}
	for _, p := range s.clean.q[s.clean.head:] {
		if s.liveLocked(p) {
			live[p.e]++
		}
	}
	for e, k := range live {
		if k != 1 {
			tb.Fatalf("%s: entry %q has %d live places in the clean queue", step, e.key, k)
		}
	}
	if cost != s.cacheBytes || clean != len(live) {
		tb.Fatalf("%s: mem has %d clean entries costing %d; cacheBytes %d, %d live places",
			step, clean, cost, s.cacheBytes, len(live))
	}
	if n := s.clean.len(); n > 2*s.mem.len()+cleanQueueSlack+1 {
		tb.Fatalf("%s: %d places in the clean queue for %d entries in mem", step, n, s.mem.len())
	}
}

// setEach writes key(i) = val(i) for i in [from, to) in one transaction.
func setEach(tb testing.TB, s *DB, from, to int, key func(int) string, val func(int) store.Value) {
	tb.Helper()
	if _, err := s.Update(func(tx store.Tx) error {
		for i := from; i < to; i++ {
			if err := tx.Set(0, []byte(key(i)), val(i)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
}

func cached(s *DB, db int, key string) bool {
	s.omu.RLock()
	defer s.omu.RUnlock()
	e := s.mem.get(dataKey(db, []byte(key)))
	return e != nil && e.n == 0
}

// TestCacheEvictsOldestFirst fills a small cache in a known order and
// checks that what it keeps is the newest run of entries: the order that
// keeps survivors together in the heap (cache.go). Random eviction keeps
// some early keys and drops some late ones.
func TestCacheEvictsOldestFirst(t *testing.T) {
	opts := DefaultOptions(t.TempDir())
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
	opts.CacheSize = 64 << 10
	opts.ApplyDelay = time.Hour // applied by the drains, in order
	opts.CalmApply = 0          // no apply at calm: only the delay, the bounds and drains
	s := openOpts(t, opts)
	const n = 4000 // about ten times what the cache holds
	key := func(i int) string { return fmt.Sprintf("k%05d", i) }
	for i := 0; i < n; i += 100 {
		setEach(t, s, i, i+100, key, func(j int) store.Value { return str("value of "+key(j), 0) })
		if err := s.drainForTest(); err != nil {
			t.Fatal(err)
		}
	}
	checkCache(t, s, "after the load")
	first := -1
	for i := range n {
		if cached(s, 0, key(i)) {
			if first < 0 {
				first = i
			}
		} else if first >= 0 {
			t.Fatalf("%s is cached and %s, written after it, is not", key(first), key(i))
		}
	}
	if first <= 0 || first > n-n/20 {
		t.Fatalf("the cache keeps keys from %d of %d on; want a tail of them", first, n)
	}
	// Writing an early key again makes it the newest: it outlives the
	// keys cached before it.
	set(t, s, 0, key(0), str("again", 0))
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	for i := n; cached(s, 0, key(first)); i++ {
		set(t, s, 0, key(i), str("filler", 0))
		if err := s.drainForTest(); err != nil {
			t.Fatal(err)
		}
	}
	if !cached(s, 0, key(0)) {
		t.Fatalf("%s, written again, was evicted before %s, cached before it", key(0), key(first))
	}
	checkCache(t, s, "after the rewrite")
	for _, i := range []int{0, first, n - 1} {
		want := "value of " + key(i)
		if i == 0 {
			want = "again"
		}
		if v, ok := get(t, s, 0, key(i)); !ok || v != want {
			t.Fatalf("%s = %q, %v; want %q", key(i), v, ok, want)
		}
	}
}

// TestCleanQueueStaysBounded rewrites a few keys many times and flushes
// the keyspace: each rewrite and the flush leave stale places in the
// queue, which must be swept out rather than pile up (each holds its
// entry and the entry's value), and the books must stay exact.
func TestCleanQueueStaysBounded(t *testing.T) {
	opts := DefaultOptions(t.TempDir())
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
	opts.CacheSize = 1 << 20
	opts.ApplyDelay = time.Hour
	opts.CalmApply = 0 // no apply at calm: only the delay, the bounds and drains
	s := openOpts(t, opts)
	for round := range 3 * cleanQueueSlack {
		k := fmt.Sprintf("k%d", round%10)
		set(t, s, 0, k, str(fmt.Sprint(round), 0))
		if err := s.drainForTest(); err != nil {
			t.Fatal(err)
		}
	}
	checkCache(t, s, "after rewrites")
	if n := s.clean.len(); n > 2*10+cleanQueueSlack+1 {
		t.Fatalf("%d places in the queue for 10 keys", n)
	}
	if _, err := s.Update(func(tx store.Tx) error { return tx.Flush(0) }); err != nil {
		t.Fatal(err)
	}
	checkCache(t, s, "after FLUSHDB")
	s.omu.Lock()
	s.shrinkMapsLocked()
	s.omu.Unlock()
	if c := cap(s.clean.q); c > 2*s.clean.len()+cleanQueueSlack {
		t.Fatalf("queue capacity %d for %d places after a rebuild", c, s.clean.len())
	}
	if _, ok := get(t, s, 0, "k1"); ok {
		t.Fatal("k1 survived FLUSHDB")
	}
}

// TestCleanQueue drives the queue alone: order, stale places skipped by
// the live check, the front reused, and compact keeping order.
func TestCleanQueue(t *testing.T) {
	var c cleanQueue
	es := make([]*entry, 3*cleanQueueSlack)
	for i := range es {
		es[i] = &entry{key: fmt.Sprint(i)}
		c.push(es[i])
	}
	es[1].seq = 0 // as if queued again: place 1 is stale
	live := func(p queued) bool { return p.e.seq == p.seq }
	for i := 0; i < 2*cleanQueueSlack; i++ {
		p, ok := c.pop()
		if !ok || p.e != es[i] {
			t.Fatalf("pop %d: %v %v", i, p.e, ok)
		}
		if live(p) != (i != 1) {
			t.Fatalf("pop %d: live %v", i, live(p))
		}
	}
	c.push(&entry{key: "tail"}) // reuses the popped front
	if c.head != 0 || c.len() != cleanQueueSlack+1 {
		t.Fatalf("after the front's reuse: head %d, %d places", c.head, c.len())
	}
	es[2*cleanQueueSlack].seq = 0
	c.compact(live)
	if c.len() != cleanQueueSlack || c.q[0].e != es[2*cleanQueueSlack+1] || c.q[c.len()-1].e.key != "tail" {
		t.Fatalf("after compact: %d places, first %q", c.len(), c.q[0].e.key)
	}
	for c.len() > 0 {
		c.pop()
	}
	if _, ok := c.pop(); ok || len(c.q) != 0 {
		t.Fatal("pop of an empty queue")
	}
}

// BenchmarkCacheHeapAfterLoad loads b.N distinct keys (16-byte keys,
// 100-byte values) through a 4 MiB cache, applies them, and reports,
// after a collection, the heap's slack: the bytes of its spans in use
// that no live object fills, which count in RSS all the same. That is
// what the cache's eviction order decides (cache.go): with 1M keys,
// 4-7 MiB in this order, 22-44 MiB evicting at random (map order). Run
// it with a fixed count: go test -run X -bench CacheHeap -benchtime
// 1000000x ./store/badgerdb
func BenchmarkCacheHeapAfterLoad(b *testing.B) {
	opts := DefaultOptions(b.TempDir())
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
	opts.CacheSize = 4 << 20
	s := openOpts(b, opts)
	val := store.Value{Kind: store.KindString, Data: make([]byte, 100)}
	key := func(i int) string { return fmt.Sprintf("key:%012d", i) }
	b.ResetTimer()
	for i := 0; i < b.N; i += 1000 {
		setEach(b, s, i, min(i+1000, b.N), key, func(int) store.Value { return val })
	}
	if err := s.drainForTest(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	s.omu.Lock()
	s.shrinkMapsLocked()
	s.omu.Unlock()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse-ms.HeapAlloc)/(1<<20), "heap-slack-MiB")
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-live-MiB")
	b.ReportMetric(float64(s.cacheBytes)/(1<<20), "cache-MiB")
}

// TestDirtyList makes entries dirty and clean in a shuffled order and
// checks after each step that dirty lists exactly the dirty ones, each at
// its index.
func TestDirtyList(t *testing.T) {
	opts := DefaultOptions(t.TempDir())
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
	s := openOpts(t, opts)
	s.omu.Lock()
	defer s.omu.Unlock()
	es := make([]*entry, 300)
	for i := range es {
		es[i] = &entry{key: fmt.Sprintf("%ck%03d", spaceKeys, i), n: uint64(i + 1)}
		s.makeDirty(es[i])
	}
	check := func(step string) {
		t.Helper()
		want := 0
		for _, e := range es {
			if e.n == 0 {
				continue
			}
			want++
			if e.seq >= uint64(len(s.dirty)) || s.dirty[e.seq] != e {
				t.Fatalf("%s: %q is not at its index %d", step, e.key, e.seq)
			}
		}
		if want != len(s.dirty) {
			t.Fatalf("%s: %d dirty entries, dirty lists %d", step, want, len(s.dirty))
		}
	}
	check("all dirty")
	r := rand.New(rand.NewPCG(1, 2))
	for round, i := range r.Perm(len(es)) {
		e := es[i]
		e.n = 0
		s.undirtyLocked(e)
		if round%3 == 0 { // dirty again, at the end
			e.n = uint64(1000 + round)
			s.makeDirty(e)
		}
		check(fmt.Sprintf("step %d (%s)", round, e.key))
	}
}

// TestDeletionsLeaveMemoryOnceApplied deletes keys, some by DEL and some
// by expiring: once the deletions are applied, no entry of those keys
// stays in memory (they would fill the cache with the absences of keys
// nobody reads again, each one more object for the collector to mark),
// and the keys still read as absent, are written again as new keys, and
// their absence is cached once a read finds it in Badger.
func TestDeletionsLeaveMemoryOnceApplied(t *testing.T) {
	var clock atomic.Int64
	clock.Store(1_000_000)
	opts := DefaultOptions(t.TempDir())
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
	opts.ApplyDelay = time.Hour // applied by the drains
	opts.CalmApply = 0
	opts.Clock = clock.Load
	s := openOpts(t, opts)
	const n = 400
	key := func(i int) string { return fmt.Sprintf("k%04d", i) }
	setEach(t, s, 0, n, key, func(i int) store.Value {
		if i%2 == 1 {
			return str("expiring "+key(i), 1_001_000) // odd keys expire
		}
		return str("value of "+key(i), 0)
	})
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if !cached(s, 0, key(i)) {
			t.Fatalf("%s is not cached after its write was applied", key(i))
		}
	}
	if _, err := s.Update(func(tx store.Tx) error {
		for i := 0; i < n; i += 2 {
			if ok, err := tx.Delete(0, []byte(key(i))); err != nil || !ok {
				return fmt.Errorf("delete %s: %v, %v", key(i), ok, err)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	clock.Store(1_002_000)
	if got := s.Sweep(time.Second); got != n/2 {
		t.Fatalf("swept %d keys, want %d", got, n/2)
	}
	dbLen := func() (l int) {
		t.Helper()
		if _, err := s.View(func(tx store.Tx) error { l = tx.Len(0); return nil }); err != nil {
			t.Fatal(err)
		}
		return l
	}
	inMem := func() int {
		s.omu.RLock()
		defer s.omu.RUnlock()
		k := 0
		for i := range n {
			if s.mem.get(dataKey(0, []byte(key(i)))) != nil {
				k++
			}
		}
		return k
	}
	if k := inMem(); k != n {
		t.Fatalf("%d of the %d deleted keys are in memory before the apply, want all", k, n)
	}
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	checkCache(t, s, "after the deletions")
	if k := inMem(); k != 0 {
		t.Fatalf("%d of the %d deleted keys are still in memory after the apply", k, n)
	}
	if l := dbLen(); l != 0 {
		t.Fatalf("Len = %d after deleting every key, want 0", l)
	}
	for i := range n {
		if v, ok := get(t, s, 0, key(i)); ok {
			t.Fatalf("%s = %q after its deletion", key(i), v)
		}
		if !cached(s, 0, key(i)) {
			t.Fatalf("the absence of %s, read from Badger, is not cached", key(i))
		}
	}
	set(t, s, 0, key(0), str("again", 0))
	if l := dbLen(); l != 1 {
		t.Fatalf("Len = %d after writing one deleted key again, want 1", l)
	}
	if v, ok := get(t, s, 0, key(0)); !ok || v != "again" {
		t.Fatalf("%s = %q, %v after writing it again", key(0), v, ok)
	}
	checkCache(t, s, "after the reads")
}

// entrySink keeps TestNewEntryOwnsKey's entries on the heap, as memory's
// map keeps them.
var entrySink *entry

// TestNewEntryOwnsKey checks that an entry holds a copy of its key, in one
// allocation with the entry when the key is short (newEntry).
func TestNewEntryOwnsKey(t *testing.T) {
	for _, n := range []int{0, 1, 16, 17, 19, 32, 33, 48, 49, 64, 65, 80, 81, 96, 97, 112, 113, 128, 129, 300} {
		key := bytes.Repeat([]byte{'k'}, n)
		e := newEntry(key)
		for i := range key {
			key[i] = 'x' // the caller's buffer is reused
		}
		if want := strings.Repeat("k", n); e.key != want {
			t.Fatalf("len %d: key %q, want %q", n, e.key, want)
		}
		if e.val != nil || e.del || e.n != 0 || e.seq != 0 || e.queued != 0 {
			t.Fatalf("len %d: new entry not zero: %+v", n, *e)
		}
		want := 1.0
		if n > 128 {
			want = 2 // the entry, and the key apart
		}
		if got := testing.AllocsPerRun(100, func() { entrySink = newEntry(key) }); got != want {
			t.Fatalf("len %d: %v allocations, want %v", n, got, want)
		}
	}
}
