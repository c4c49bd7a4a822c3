package badgerdb

import (
	"hash/maphash"
	"iter"
	"unsafe"
)

// entryTable is memory's index of its entries by raw key (DB.mem): an
// open-addressing hash table with linear probing, whose slots hold each
// key's hash next to its entry.
//
// It replaces a Go map[string]*entry, which a read paid for in cache
// misses: a pipelined GET's lookup was a fifth of the server's CPU, in
// the map's control word, its slot and then the key's bytes, each in its
// own cache line. Here a lookup reads one slot (four share a line),
// compares the stored hash, and only then the entry it points to, whose
// key is in the entry's own allocation (newEntry): one line fewer than
// the map, and no string header to follow.
//
// It is cut into shards (tableShards) that grow one by one. A slot with
// hash 0 is empty (hashOf never returns 0). Deletion shifts the
// following slots of the run back, so there are no tombstones and a
// lookup stops at the first empty slot. Not safe for concurrent use: the
// store guards it with omu.
type entryTable struct {
	shards [tableShards]tableShard
	n      int
	seed   maphash.Seed
}

// tableShards is the number of shards a table is cut into, each an
// open-addressing table of its own that grows by itself: growing one
// table of 1.5M entries held omu for 250 ms (every reader and writer
// waited), where a shard's growth moves 1/256 of that. The shard is
// chosen by bits of the hash that the slot's index does not use.
const (
	tableShardBits = 8
	tableShards    = 1 << tableShardBits
)

type tableShard struct {
	slots []tableSlot
	mask  uint64 // len(slots)-1; len(slots) is a power of two
	n     int
}

type tableSlot struct {
	h uint64
	e *entry
}

// tableMinSlots is the fewest slots a shard has.
const tableMinSlots = 8

// newEntryTable returns an empty table.
func newEntryTable() entryTable {
	t := entryTable{seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].alloc(tableMinSlots)
	}
	return t
}

// slotsFor is the number of slots that holds n entries at most 3/4 full.
func slotsFor(n int) int {
	size := tableMinSlots
	for size*3/4 < n {
		size *= 2
	}
	return size
}

func (sh *tableShard) alloc(size int) {
	sh.slots = make([]tableSlot, size)
	sh.mask = uint64(size - 1)
}

// shardOf is the shard of hash h: bits below the top one, which every
// hash has set, and above those that index a slot.
func (t *entryTable) shardOf(h uint64) *tableShard {
	return &t.shards[(h>>(63-tableShardBits))&(tableShards-1)]
}

// hashOf is key's hash, never 0: its top bit is set, as the slot's index
// comes from its low bits (setting the lowest instead would leave every
// even slot without a key whose home it is).
func (t *entryTable) hashOf(key string) uint64 { return maphash.String(t.seed, key) | hashSet }

// hashSet is the bit every stored hash has.
const hashSet = 1 << 63

// len is the number of entries.
func (t *entryTable) len() int { return t.n }

// get returns key's entry, or nil.
func (t *entryTable) get(key []byte) *entry {
	h := maphash.Bytes(t.seed, key) | hashSet
	sh := t.shardOf(h)
	for i := h & sh.mask; ; i = (i + 1) & sh.mask {
		s := &sh.slots[i]
		if s.h == h && s.e.key == string(key) {
			return s.e
		}
		if s.h == 0 {
			return nil
		}
	}
}

// getString is get for a key held as a string, read in place (get keeps
// nothing of its key, and hashes and compares bytes and strings alike).
func (t *entryTable) getString(key string) *entry {
	return t.get(unsafe.Slice(unsafe.StringData(key), len(key)))
}

// put makes e the entry of e.key, in place of any other.
func (t *entryTable) put(e *entry) {
	h := t.hashOf(e.key)
	sh := t.shardOf(h)
	if (sh.n+1)*4 > len(sh.slots)*3 {
		sh.rehash(len(sh.slots) * 2)
	}
	for i := h & sh.mask; ; i = (i + 1) & sh.mask {
		s := &sh.slots[i]
		if s.h == 0 {
			s.h, s.e = h, e
			sh.n++
			t.n++
			return
		}
		if s.h == h && s.e.key == e.key {
			s.e = e
			return
		}
	}
}

// del removes key's entry, if any.
func (t *entryTable) del(key string) {
	h := t.hashOf(key)
	sh := t.shardOf(h)
	i := h & sh.mask
	for {
		s := &sh.slots[i]
		if s.h == 0 {
			return
		}
		if s.h == h && s.e.key == key {
			break
		}
		i = (i + 1) & sh.mask
	}
	sh.n--
	t.n--
	// Shift back every later slot of the run that may move to the hole
	// (one whose home is not between the hole and itself), so that no
	// lookup meets an empty slot before its key.
	for j := (i + 1) & sh.mask; ; j = (j + 1) & sh.mask {
		s := sh.slots[j]
		if s.h == 0 {
			break
		}
		home := s.h & sh.mask
		stays := home > i && home <= j
		if i > j { // the run wrapped around the end
			stays = home > i || home <= j
		}
		if stays {
			continue
		}
		sh.slots[i] = s
		i = j
	}
	sh.slots[i] = tableSlot{}
}

// rehash moves the shard's entries into size slots.
func (sh *tableShard) rehash(size int) {
	old := sh.slots
	sh.alloc(size)
	for _, s := range old {
		if s.h == 0 {
			continue
		}
		i := s.h & sh.mask
		for sh.slots[i].h != 0 {
			i = (i + 1) & sh.mask
		}
		sh.slots[i] = s
	}
}

// shrink rebuilds each shard at the size its entries need, giving back
// the slots of its largest size (see DB.shrinkMapsLocked).
func (t *entryTable) shrink() {
	for i := range t.shards {
		sh := &t.shards[i]
		if size := slotsFor(sh.n); size < len(sh.slots) {
			sh.rehash(size)
		}
	}
}

// all yields every entry, in no order. The table must not change while
// it is ranged over.
func (t *entryTable) all() iter.Seq[*entry] {
	return func(yield func(*entry) bool) {
		for i := range t.shards {
			for _, s := range t.shards[i].slots {
				if s.h != 0 && !yield(s.e) {
					return
				}
			}
		}
	}
}

// aheadMax is the most keys touch takes at once.
const aheadMax = 32

// hashBytes is get's hash of key.
func (t *entryTable) hashBytes(key []byte) uint64 { return maphash.Bytes(t.seed, key) | hashSet }

// touch reads, for each hash in hs, what get would read to find its
// entry and the entry's key and value, one step at a time over all the
// hashes: their home slots, then the entries, then the keys' and values'
// bytes. The reads of one step do not depend on each other, so the
// processor has their cache misses outstanding together, where get,
// called for one key after another, waits for each miss in turn (a
// slot, an entry, a value: three a key). It returns a sum of what it
// read, for the caller to keep, so that no read is left out as unused.
func (t *entryTable) touch(hs []uint64) uintptr {
	var sink uintptr
	for _, h := range hs {
		sh := t.shardOf(h)
		sink += uintptr(sh.slots[h&sh.mask].h)
	}
	var es [aheadMax]*entry
	for i, h := range hs[:min(len(hs), aheadMax)] {
		sh := t.shardOf(h)
		for j := h & sh.mask; ; j = (j + 1) & sh.mask {
			s := &sh.slots[j]
			if s.h == h {
				es[i] = s.e
				sink += uintptr(len(s.e.val))
				break
			}
			if s.h == 0 {
				break
			}
		}
	}
	for _, e := range es[:min(len(hs), aheadMax)] {
		if e == nil {
			continue
		}
		if len(e.key) > 0 {
			sink += uintptr(e.key[0])
		}
		if len(e.val) > 0 {
			sink += uintptr(e.val[0])
		}
	}
	return sink
}
