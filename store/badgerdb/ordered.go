package badgerdb

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/btree"
)

// Scans merge Badger's keys with the overlay of dirty entries in key
// order. Writes waiting for Badger can number hundreds of thousands, so a
// scan cannot sort them all for each call (a SCAN with COUNT 10 would pay
// for every waiting write). Instead the dirty entries are also indexed in
// key order. Those of the expiry index, which the sweeper scans ten times
// a second, always are (auxOrder). Those of the keyspace are only while
// SCAN, KEYS and the like run (keyOrder): the first scan builds the
// index, writes and the applier keep it, and the applier drops it once no
// scan has used it for orderIdle, so that writes pay for it only while
// someone scans.

// orderIdle is how long the ordered index outlives the last scan.
const orderIdle = time.Second

// overlayChunk is how many overlay entries a scan copies under one lock.
const overlayChunk = 64

// orderOf is the ordered index that holds key when it is dirty, or nil
// (a keyspace key while no scan runs). Called with omu held.
func (s *DB) orderOf(key string) *btree.Map[string, *entry] {
	if key != "" && key[0] == spaceKeys {
		return s.keyOrder
	}
	return &s.auxOrder
}

// makeDirty indexes an entry that has just become dirty. Called with omu
// held.
func (s *DB) makeDirty(e *entry) {
	e.seq = uint64(len(s.dirty))
	s.dirty = append(s.dirty, e)
	s.dirtyPeak = max(s.dirtyPeak, len(s.dirty))
	if o := s.orderOf(e.key); o != nil {
		o.Set(e.key, e)
	}
}

// undirtyLocked takes e, just made clean, out of dirty: the last entry
// there takes its index. Called with omu held.
func (s *DB) undirtyLocked(e *entry) {
	i, last := e.seq, len(s.dirty)-1
	moved := s.dirty[last]
	s.dirty[i], moved.seq = moved, i
	s.dirty[last] = nil
	s.dirty = s.dirty[:last]
}

// ordered makes sure that the ordered index of prefix's space exists, for
// a scan that holds cleanMu shared (so that the applier cannot drop it
// before the scan ends).
//
// The scan's caller holds mu too, so while it runs no write is staged and
// no entry is made clean: the dirty set cannot change. The index is
// therefore built from a copy of the keys taken under omu shared and
// sorted without a lock, so that reads (which take omu shared) do not wait
// for the sort; omu is taken exclusively only to publish the index.
func (s *DB) ordered(prefix []byte) {
	if len(prefix) == 0 || prefix[0] != spaceKeys {
		return // auxOrder, always there
	}
	s.lastScan.Store(time.Now().UnixNano())
	s.omu.RLock()
	if s.keyOrder != nil {
		s.omu.RUnlock()
		return
	}
	var dirty []*entry
	for _, e := range s.dirty {
		if e.key[0] == spaceKeys {
			dirty = append(dirty, e)
		}
	}
	s.omu.RUnlock()
	slices.SortFunc(dirty, func(a, b *entry) int { return strings.Compare(a.key, b.key) })
	o := new(btree.Map[string, *entry])
	for _, e := range dirty {
		o.Load(e.key, e) // in order: appends
	}
	s.omu.Lock()
	if s.keyOrder == nil { // another scan may have built it meanwhile
		s.keyOrder = o
	}
	s.omu.Unlock()
}

// dropOrderLocked drops the keyspace's ordered index once no scan has
// used it for orderIdle. Called with cleanMu and omu held exclusively, so
// no scan is reading it.
func (s *DB) dropOrderLocked() {
	if s.keyOrder != nil && time.Since(time.Unix(0, s.lastScan.Load())) > orderIdle {
		s.keyOrder = nil
	}
}

// overlay reads the dirty entries with a prefix in key order, from a key
// on, overlayChunk copies at a time (under omu each time), from the
// ordered index of the prefix's space.
type overlay struct {
	s      *DB
	prefix string
	from   string // the next chunk starts at from (inclusive)...
	after  bool   // ...or just after it (before it, rev)
	rev    bool   // in descending order of key
	buf    []entry
	pooled *[]entry // where buf came from (overlayBufs)
	i      int
	done   bool
}

// peek returns the next entry without consuming it; false at the end.
func (o *overlay) peek() (entry, bool) {
	if o.i == len(o.buf) && !o.done {
		o.fill()
	}
	if o.i == len(o.buf) {
		return entry{}, false
	}
	return o.buf[o.i], true
}

func (o *overlay) next() { o.i++ }

// overlayBufs keeps the overlays' chunk buffers: a sweep round's scan,
// ten a second and hundreds while keys expire en masse, allocated one.
var overlayBufs = sync.Pool{New: func() any { b := make([]entry, 0, overlayChunk); return &b }}

// release returns the overlay's buffer, emptied (its entries hold keys and
// values), for another scan.
func (o *overlay) release() {
	if o.pooled != nil {
		clear(o.buf[:cap(o.buf)])
		*o.pooled = o.buf[:0]
		overlayBufs.Put(o.pooled)
		o.pooled, o.buf = nil, nil
	}
}

func (o *overlay) fill() {
	if o.pooled == nil {
		o.pooled = overlayBufs.Get().(*[]entry)
		o.buf = *o.pooled
	}
	o.buf, o.i = o.buf[:0], 0
	o.s.omu.RLock()
	walk := o.s.orderOf(o.prefix).Ascend
	if o.rev {
		walk = o.s.orderOf(o.prefix).Descend
	}
	walk(o.from, func(k string, e *entry) bool {
		if o.after && k == o.from {
			return true
		}
		if !strings.HasPrefix(k, o.prefix) {
			o.done = true
			return false
		}
		// Field by field: queued is the applier's, under applyMu.
		o.buf = append(o.buf, entry{key: e.key, val: e.val, del: e.del, n: e.n})
		return len(o.buf) < overlayChunk
	})
	o.s.omu.RUnlock()
	if len(o.buf) < overlayChunk {
		o.done = true
	}
	if len(o.buf) > 0 {
		o.from, o.after = o.buf[len(o.buf)-1].key, true
	}
}
