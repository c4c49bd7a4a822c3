package badgerdb

import (
	"slices"
	"strings"
	"time"

	"github.com/tidwall/btree"
)

// Scans merge Badger's keys with the overlay of dirty entries in key
// order. Writes waiting for Badger can number hundreds of thousands, so a
// scan cannot sort them all for each call (a SCAN with COUNT 10 would pay
// for every waiting write). Instead, while scans run, the dirty entries are
// also indexed in key order (DB.order): the first scan builds the index,
// writes and the applier keep it, and the applier drops it once no scan
// has used it for orderIdle, so that writes pay for it only while someone
// scans.

// orderIdle is how long the ordered index outlives the last scan.
const orderIdle = time.Second

// overlayChunk is how many overlay entries a scan copies under one lock.
const overlayChunk = 64

// makeDirty indexes an entry that has just become dirty. Called with omu
// held.
func (s *DB) makeDirty(e *entry) {
	s.dirty[e.key] = e
	if s.order != nil {
		s.order.Set(e.key, e)
	}
}

// ordered makes sure the ordered index exists, for a scan that holds
// cleanMu shared (so the applier cannot drop it before the scan ends).
func (s *DB) ordered() {
	s.lastScan.Store(time.Now().UnixNano())
	s.omu.RLock()
	built := s.order != nil
	s.omu.RUnlock()
	if built {
		return
	}
	s.omu.Lock()
	defer s.omu.Unlock()
	if s.order != nil {
		return
	}
	keys := make([]string, 0, len(s.dirty))
	for k := range s.dirty {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	s.order = new(btree.Map[string, *entry])
	for _, k := range keys {
		s.order.Load(k, s.dirty[k]) // in order: appends
	}
}

// dropOrderLocked drops the ordered index once no scan has used it for
// orderIdle. Called with cleanMu and omu held exclusively, so no scan is
// reading it.
func (s *DB) dropOrderLocked() {
	if s.order != nil && time.Since(time.Unix(0, s.lastScan.Load())) > orderIdle {
		s.order = nil
	}
}

// overlay reads the dirty entries with a prefix in key order, from a key
// on, overlayChunk copies at a time (under omu each time), from the
// ordered index.
type overlay struct {
	s      *DB
	prefix string
	from   string // the next chunk starts at from (inclusive)...
	after  bool   // ...or just after it
	buf    []entry
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

func (o *overlay) fill() {
	o.buf, o.i = o.buf[:0], 0
	o.s.omu.RLock()
	o.s.order.Ascend(o.from, func(k string, e *entry) bool {
		if o.after && k == o.from {
			return true
		}
		if !strings.HasPrefix(k, o.prefix) {
			o.done = true
			return false
		}
		o.buf = append(o.buf, *e)
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
