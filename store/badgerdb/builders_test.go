package badgerdb

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
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

// Badger builds the tables of every level at the base table size
// (tableSizeMultiplier), so that a compaction's builders, an arena of
// twice a table each, hold little however deep the tree is: with
// Badger's default, the tables double at each level below the base
// level, and a compaction into the last level of 10M keys held over
// 100 MB of arenas. Small sizes make the levels of a large keyspace
// with a few megabytes: the last level takes the first flushes, and
// the base level moves up as it grows.
func TestEveryLevelKeepsTheBaseTableSize(t *testing.T) {
	const base = 64 << 10
	opts := DefaultOptions(t.TempDir())
	opts.MemTableSize = 256 << 10
	bopts := badgerOptions(opts).
		WithValueThreshold(1 << 10).
		WithBaseTableSize(base).
		WithBaseLevelSize(256 << 10)
	db, err := badger.Open(bopts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	value := []byte(strings.Repeat("v", 100))
	baseLevel := func() int {
		for _, l := range db.Levels() {
			if l.IsBaseLevel {
				return l.Level
			}
		}
		return 0
	}
	for round := 0; baseLevel() >= bopts.MaxLevels-2; round++ {
		if round == 40 {
			t.Fatalf("80 MB written, and the base level is still the last but one:\n%s", db.LevelsToString())
		}
		wb := db.NewWriteBatch()
		for i := range 20000 {
			if err := wb.Set([]byte(fmt.Sprintf("key:%02d:%08d", round, i)), value); err != nil {
				t.Fatal(err)
			}
		}
		if err := wb.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range db.Levels()[1:] {
		if l.TargetFileSize != base {
			t.Errorf("level %d builds tables of %d bytes, not the base size, %d:\n%s",
				l.Level, l.TargetFileSize, base, db.LevelsToString())
		}
	}
	for _, ti := range db.Tables() {
		if limit := uint32(base * 5 / 4); ti.Level > 0 && ti.OnDiskSize > limit {
			t.Errorf("a table of level %d holds %d bytes, over %d", ti.Level, ti.OnDiskSize, limit)
		}
	}
}
