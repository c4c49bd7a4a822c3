package badgerdb

import (
	"hash/maphash"
	"iter"
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
// A slot with hash 0 is empty (hashOf never returns 0). Deletion shifts
// the following slots of the run back, so there are no tombstones and a
// lookup stops at the first empty slot. Not safe for concurrent use: the
// store guards it with omu.
type entryTable struct {
	slots []tableSlot
	mask  uint64 // len(slots)-1; len(slots) is a power of two
	n     int
	seed  maphash.Seed
}

type tableSlot struct {
	h uint64
	e *entry
}

// tableMinSlots is the fewest slots a table has.
const tableMinSlots = 8

// newEntryTable returns a table with room for n entries before it grows.
func newEntryTable(n int) entryTable {
	t := entryTable{seed: maphash.MakeSeed()}
	t.alloc(slotsFor(n))
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

func (t *entryTable) alloc(size int) {
	t.slots = make([]tableSlot, size)
	t.mask = uint64(size - 1)
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
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.h == h && s.e.key == string(key) {
			return s.e
		}
		if s.h == 0 {
			return nil
		}
	}
}

// getString is get for a key held as a string.
func (t *entryTable) getString(key string) *entry {
	h := t.hashOf(key)
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.h == h && s.e.key == key {
			return s.e
		}
		if s.h == 0 {
			return nil
		}
	}
}

// put makes e the entry of e.key, in place of any other.
func (t *entryTable) put(e *entry) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.rehash(len(t.slots) * 2)
	}
	h := t.hashOf(e.key)
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.h == 0 {
			s.h, s.e = h, e
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
	i := h & t.mask
	for {
		s := &t.slots[i]
		if s.h == 0 {
			return
		}
		if s.h == h && s.e.key == key {
			break
		}
		i = (i + 1) & t.mask
	}
	t.n--
	// Shift back every later slot of the run that may move to the hole
	// (one whose home is not between the hole and itself), so that no
	// lookup meets an empty slot before its key.
	for j := (i + 1) & t.mask; ; j = (j + 1) & t.mask {
		s := t.slots[j]
		if s.h == 0 {
			break
		}
		home := s.h & t.mask
		stays := home > i && home <= j
		if i > j { // the run wrapped around the end
			stays = home > i || home <= j
		}
		if stays {
			continue
		}
		t.slots[i] = s
		i = j
	}
	t.slots[i] = tableSlot{}
}

// rehash moves the entries into a table of size slots.
func (t *entryTable) rehash(size int) {
	old := t.slots
	t.alloc(size)
	for _, s := range old {
		if s.h == 0 {
			continue
		}
		i := s.h & t.mask
		for t.slots[i].h != 0 {
			i = (i + 1) & t.mask
		}
		t.slots[i] = s
	}
}

// shrink rebuilds the table at the size its entries need, giving back
// the slots of its largest size (see DB.shrinkMapsLocked).
func (t *entryTable) shrink() { t.rehash(slotsFor(t.n)) }

// all yields every entry, in no order. The table must not change while
// it is ranged over.
func (t *entryTable) all() iter.Seq[*entry] {
	return func(yield func(*entry) bool) {
		for _, s := range t.slots {
			if s.h != 0 && !yield(s.e) {
				return
			}
		}
	}
}
