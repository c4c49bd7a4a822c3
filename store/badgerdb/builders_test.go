package badgerdb

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/ristretto/v2/z"
)

// pooled puts n arenas of 1 MiB in s's builder pool, as builders done
// with them do, and returns them.
func pooled(s *DB, n int) []*z.Allocator {
	var arenas []*z.Allocator
	for range n {
		a := z.NewAllocator(1<<20, "test")
		s.builders.Return(a)
		arenas = append(arenas, a)
	}
	return arenas
}

// alive is how many of arenas are not released (z keeps a registry of
// the arenas alive, by reference).
func alive(arenas []*z.Allocator) int {
	n := 0
	for _, a := range arenas {
		if z.AllocatorFrom(a.Ref) != nil {
			n++
		}
	}
	return n
}

// The store finds the pool Badger's table builders take their arenas
// from: this fails if a Badger upgrade renames or retypes it, and the
// store would stop emptying it.
func TestBuilderPoolFound(t *testing.T) {
	var clock atomic.Int64
	s := openOpts(t, uncachedOpts(t, &clock))
	if s.builders == nil {
		t.Fatal("Badger's builder pool (field allocPool of *z.AllocatorPool) not found")
	}
}

// drainBuilders releases every arena in the pool, and counts them.
func TestDrainBuildersReleasesPooledArenas(t *testing.T) {
	var clock atomic.Int64
	s := openOpts(t, uncachedOpts(t, &clock))
	arenas := pooled(s, 3)
	if n := alive(arenas); n != 3 {
		t.Fatalf("%d of 3 pooled arenas alive before the drain", n)
	}
	if n := s.drainBuilders(); n != 3 {
		t.Fatalf("drained %d arenas, want 3", n)
	}
	if n := alive(arenas); n != 0 {
		t.Fatalf("%d of 3 arenas alive after the drain", n)
	}
	if n := s.drainBuilders(); n != 0 {
		t.Fatalf("drained %d arenas from an empty pool", n)
	}
}

// The periodic trim empties the pool (TrimInterval), long before the
// pool would by itself (one arena per 2 s without a builder asking).
func TestTrimDrainsBuilders(t *testing.T) {
	var clock atomic.Int64
	opts := uncachedOpts(t, &clock)
	opts.TrimInterval = 10 * time.Millisecond
	s := openOpts(t, opts)
	arenas := pooled(s, 3)
	deadline := time.Now().Add(1500 * time.Millisecond)
	for alive(arenas) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 arenas still pooled after %d trims", alive(arenas), s.trims.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Badger's builders do leave their arenas in the pool the store drains:
// memtables flushed one after another leave at least one there.
func TestFlushesLeaveArenasToDrain(t *testing.T) {
	var clock atomic.Int64
	opts := uncachedOpts(t, &clock)
	opts.MemTableSize = 1 << 20
	s := openOpts(t, opts)
	value := strings.Repeat("v", int(valueThreshold(opts.MemTableSize))-headerLen-1)
	drained := 0
	for round := 0; round < 50 && drained == 0; round++ {
		// Each round writes more than a memtable holds.
		for i := range (2 << 20) / len(value) {
			set(t, s, 0, "k"+strconv.Itoa(round)+":"+strconv.Itoa(i), str(value, 0))
		}
		if err := s.drainForTest(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		drained += s.drainBuilders()
	}
	if drained == 0 {
		t.Fatal("50 rounds of 2 MiB with 1 MiB memtables left no arena to drain")
	}
}
