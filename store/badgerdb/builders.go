package badgerdb

import (
	"reflect"
	"unsafe"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/ristretto/v2/z"
)

// Badger builds each table it writes (a memtable flushed, a compaction's
// output) in an arena from a pool of eight, and a builder done with its
// arena puts it back, grown to the table's size. The pool lets one go
// only after 2 s in which no builder asked for one, so after a burst of
// writes it holds tens of megabytes (measured after redis-benchmark SET
// -P 16: 52 MB, 40 from flushes and 12 from compactions) for up to 16 s.
// Those arenas are Go heap (Badger is built without jemalloc), live to
// the collector: with the memory limit back at its base once the load
// stops (internal/memlimit), the live heap sat at the limit and the
// collector ran every 50 ms, 90% of the idle server's CPU for 3 to 15 s
// after each burst (GODEBUG=gctrace=1, a CPU profile of the idle server).
//
// Badger offers no option for the pool's size, so the store empties it
// itself, with the pool's own methods (drainBuilders). Reusing an arena
// saves a builder little: with the pool emptied every second, a write
// load of 1.2M SET, INCR and SET -d 256 at -P 16 took the server 35–40%
// less CPU in all, and as many requests per second or more.

// builderPoolSize is how many arenas Badger's pool holds at most, and
// builderArena the least an arena allocates (z.NewAllocator): a builder
// starts its arena at twice the table size, so a pooled one has more.
const (
	builderPoolSize = 8
	builderArena    = 512
)

// poolOf returns the pool of b's table builders, or nil if this Badger
// keeps none where this version does (a field allocPool of type
// *z.AllocatorPool, which TestBuilderPoolFound checks). Badger writes the
// field in Open and only reads it after, so reading it here races with
// nothing.
func poolOf(b *badger.DB) *z.AllocatorPool {
	f := reflect.ValueOf(b).Elem().FieldByName("allocPool")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*z.AllocatorPool]() {
		return nil
	}
	return *(**z.AllocatorPool)(unsafe.Pointer(f.UnsafeAddr()))
}

// drainBuilders releases the arenas in Badger's builder pool, and
// returns how many it released. A builder at work keeps its own; the
// next one to start allocates a new one. It must not run once Badger is
// closed, which closes the pool's channel: the store's loops, which call
// it, stop first (Close).
func (s *DB) drainBuilders() int {
	if s.builders == nil {
		return 0
	}
	n := 0
	for range builderPoolSize {
		a := s.builders.Get(0, "drained")
		pooled := a.Allocated() > builderArena
		a.Release()
		if !pooled {
			break
		}
		n++
	}
	return n
}
