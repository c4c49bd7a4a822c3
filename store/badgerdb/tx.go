package badgerdb

import (
	"bytes"
	"slices"
	"strings"

	"github.com/dgraph-io/badger/v4"

	"github.com/oncekv/oncekv/store"
)

// tx is a transaction over the keyspace; the caller holds s.mu.
type tx struct {
	s *DB
	// now is the time of the tx (Now), read from the clock on first use:
	// a read of a key without a deadline needs none.
	now    int64
	nowSet bool
	write  bool
	last   uint64 // the number of the last op this tx staged
	// readMax is the highest staged op whose value this tx read: the
	// reply must wait until it is durable.
	readMax uint64
	// memo is the last key getAny looked up, until anything is staged or
	// flushed: INCR, APPEND, SET … GET and the like read a key, then Set
	// reads it again for its old deadline and existence.
	memo memo
	// key is the buffer getAny builds Badger keys in: the key it returns
	// is valid until the next getAny. It outlives the tx in txPool.
	key []byte
	// xkey is the buffer expiry index entries are built in (indexKey):
	// stage copies the key it keeps (an entry holds its own), so one
	// buffer serves every entry the tx stages. It outlives the tx too.
	xkey []byte
}

// indexKey is key's expiry index entry in db at deadline at, in t's
// buffer: valid until the next indexKey.
func (t *tx) indexKey(db int, at int64, key []byte) []byte {
	if cap(t.xkey) < 11+len(key) {
		t.xkey = make([]byte, 0, max(64, 11+len(key)))
	}
	t.xkey = appendExpiryKey(t.xkey[:0], db, at, key)
	return t.xkey
}

// keyBufMax is the largest key buffer a pooled tx keeps.
const keyBufMax = 1 << 10

type memo struct {
	ok      bool // memo holds a lookup
	db      int
	raw     []byte
	v       store.Value
	existed bool
}

func (t *tx) read(n uint64) {
	if n > t.readMax {
		t.readMax = n
	}
}

var _ store.Tx = (*tx)(nil)

func (t *tx) Now() int64 {
	if !t.nowSet {
		t.now, t.nowSet = t.s.now(), true
	}
	return t.now
}

// expired reports whether v's deadline has passed at the tx's time.
func (t *tx) expired(v store.Value) bool { return v.ExpireAt != 0 && v.Expired(t.Now()) }

func (t *tx) checkDB(db int) error {
	if db < 0 || db >= len(t.s.counts) {
		return store.ErrBadDB
	}
	return nil
}

// getAny returns the stored value even when it has expired, and its
// Badger key, valid until the next getAny.
func (t *tx) getAny(db int, key []byte) (store.Value, []byte, bool, error) {
	if m := &t.memo; m.ok && m.db == db && bytes.Equal(m.raw[3:], key) {
		return m.v, m.raw, m.existed, nil
	}
	// The memo's key is the buffer about to be overwritten: it must not
	// outlive it, whether or not this read succeeds.
	t.memo.ok = false
	raw := appendDataKey(t.key[:0], db, key)
	t.key = raw
	b, ok, n, h, err := t.s.getRaw(raw)
	t.read(n)
	if err != nil {
		return store.Value{}, raw, false, err
	}
	var v store.Value
	switch {
	case ok && h.ok && h.noExpiry && h.kind&objFlag == 0:
		// Known from the entry: the value's bytes are not touched
		// until a caller reads its data.
		v = store.Value{Kind: h.kind, Data: b[headerLen:]}
	case ok:
		v, ok = decodeValue(b)
	}
	t.memo = memo{ok: true, db: db, raw: raw, v: v, existed: ok}
	return v, raw, ok, nil
}

func (t *tx) Get(db int, key []byte) (store.Value, bool, error) {
	db, err := t.physDB(db)
	if err != nil {
		return store.Value{}, false, err
	}
	v, _, ok, err := t.getAny(db, key)
	if !ok || err != nil || t.expired(v) {
		return store.Value{}, false, err
	}
	return v, true, nil
}

// stage stages a write; absent says that key is absent before it (op).
func (t *tx) stage(key, val []byte, del, absent bool) {
	t.memo.ok = false
	t.last = t.s.stage(key, val, del, absent)
}

func (t *tx) Set(db int, key []byte, v store.Value) error {
	if !t.write {
		return store.ErrReadOnly
	}
	db, err := t.physDB(db)
	if err != nil {
		return err
	}
	if len(key) > store.MaxKeyLen {
		// Badger would refuse it in the applier, for good, after the
		// log holds it: every later write would wait behind it, and the
		// log's replay at the next start would fail on it again.
		return store.ErrKeyTooLong
	}
	if len(v.Data) > store.MaxValueLen {
		return store.ErrValueTooLong
	}
	old, raw, existed, err := t.getAny(db, key)
	if err != nil {
		return err
	}
	if existed && old.ExpireAt != 0 && old.ExpireAt != v.ExpireAt {
		t.stage(t.indexKey(db, old.ExpireAt, key), nil, true, false)
		t.s.expiring[db]--
	}
	if v.ExpireAt != 0 && (!existed || old.ExpireAt != v.ExpireAt) {
		// The key has no entry at this deadline: a lease's entry that
		// a completion replaces within one apply round never reaches
		// Badger. (Were a stale entry there, the sweeper would still
		// delete it when it finds it.)
		t.stage(t.indexKey(db, v.ExpireAt, key), []byte{}, false, true)
		t.s.expiring[db]++
		t.s.nextSweep[db] = min(t.s.nextSweep[db], v.ExpireAt)
		t.s.setSince[db] = min(t.s.setSince[db], v.ExpireAt)
	}
	if !existed {
		t.s.counts[db]++
	}
	if existed && old.Obj != v.Obj {
		t.s.markObjDue(old.Obj)
	}
	if v.Obj != 0 && (!existed || old.Obj != v.Obj) {
		// The object moves to key (RENAME, MOVE, a first Set): its
		// owner record names it, so that the collector keeps it.
		t.stage(ownerKey(v.Obj), ownerRef(db, key), false, false)
	}
	t.stage(raw, encodeValue(v), false, !existed)
	return nil
}

func (t *tx) Delete(db int, key []byte) (bool, error) {
	if !t.write {
		return false, store.ErrReadOnly
	}
	db, err := t.physDB(db)
	if err != nil {
		return false, err
	}
	old, raw, existed, err := t.getAny(db, key)
	if err != nil || !existed {
		return false, err
	}
	t.remove(db, key, raw, old)
	return !t.expired(old), nil
}

func (t *tx) remove(db int, key, raw []byte, old store.Value) {
	if old.ExpireAt != 0 {
		t.stage(t.indexKey(db, old.ExpireAt, key), nil, true, false)
		t.s.expiring[db]--
	}
	t.stage(raw, nil, true, false)
	t.s.counts[db]--
	t.s.markObjDue(old.Obj)
}

func (t *tx) Scan(db int, from []byte, fn func(key []byte, v store.Value) (bool, error)) error {
	db, err := t.physDB(db)
	if err != nil {
		return err
	}
	prefix := dbPrefix(spaceKeys, db)
	start := append(slices.Clip(prefix), from...)
	return t.s.scanRaw(prefix, start, t.read, func(raw, val []byte) (bool, error) {
		v, ok := decodeValue(val)
		if !ok || t.expired(v) {
			return true, nil
		}
		return fn(raw[len(prefix):], v)
	})
}

func (t *tx) Len(db int) int {
	db, err := t.physDB(db)
	if err != nil {
		return 0
	}
	return t.s.keyCount(db)
}

func (t *tx) Expiring(db int) int {
	db, err := t.physDB(db)
	if err != nil {
		return 0
	}
	return t.s.expiringCount(db)
}

func (t *tx) Flush(dbs ...int) error {
	if !t.write {
		return store.ErrReadOnly
	}
	t.memo.ok = false
	dbs = slices.Clone(dbs)
	for i, db := range dbs {
		p, err := t.physDB(db)
		if err != nil {
			return err
		}
		dbs[i] = p
	}
	if len(dbs) == 0 {
		return nil
	}
	if err := t.s.checkpointAll(); err != nil {
		return err
	}
	if err := t.s.dropDBs(dbs); err != nil {
		return err
	}
	t.s.refreshSnap()
	t.s.omu.Lock()
	var drop []*entry // not dropped while ranging: that moves slots
	prefixes := make([]string, len(dbs))
	for i, db := range dbs {
		prefixes[i] = string(dbPrefix(spaceKeys, db))
	}
	for e := range t.s.mem.all() {
		// drain left no dirty entry behind: these are clean copies.
		for _, p := range prefixes {
			if strings.HasPrefix(e.key, p) {
				drop = append(drop, e)
				break
			}
		}
	}
	for _, e := range drop {
		t.s.dropLocked(e)
		t.s.cacheBytes -= e.cost()
	}
	t.s.omu.Unlock()
	t.s.awaitCount()
	t.s.objDue.Store(true) // the objects of the values dropped
	for _, db := range dbs {
		t.s.counts[db] = -t.s.base[db]
		t.s.expiring[db] = -t.s.baseExp[db]
	}
	return nil
}

func (t *tx) Meta(name string) ([]byte, error) {
	b, ok, n, _, err := t.s.getRaw(metaKey(name))
	t.read(n)
	if !ok {
		return nil, err
	}
	return bytes.Clone(b), err
}

func (t *tx) SetMeta(name string, value []byte) error {
	if !t.write {
		return store.ErrReadOnly
	}
	t.stage(metaKey(name), bytes.Clone(value), false, false)
	return nil
}

// scanRaw visits the Badger keys with prefix from start on, merged with the
// overlay (which wins), skipping deleted keys. The slices passed to fn are
// valid only during the call.
//
// staged, if not nil, is told the op number of each overlay entry used.
//
// The overlay is read in key order, a few entries at a time, as the merge
// reaches them, so a scan that stops early costs little however many
// writes wait for Badger. cleanMu keeps every entry that is in the overlay
// when the Badger iterator opens there until the scan ends (the applier
// waits to make entries clean), so none can leave it for a write in
// Badger that the iterator does not see. Callers hold mu, so the only
// entries that join the overlay meanwhile are those fn itself stages.
func (s *DB) scanRaw(prefix, start []byte, staged func(n uint64), fn func(raw, val []byte) (bool, error)) error {
	s.cleanMu.RLock()
	defer s.cleanMu.RUnlock()
	return s.scanIn(s.bdb.View, prefix, start, false, staged, fn)
}

// scanAux is scanRaw for the spaces whose ordered index always exists
// (auxOrder: the expiry index), in the shared read snapshot, whose
// generation it returns: it waits neither for Badger's commits in flight,
// as a new read transaction does, nor for the applier's cleaning
// (cleanMu), which can take tens of milliseconds after a large round.
//
// The snapshot is as complete without cleanMu: readBadger holds snapMu
// shared for the whole scan, and the applier takes a new snapshot (which
// needs snapMu) before it makes a round's entries clean, so an entry that
// leaves the overlay during the scan is one the snapshot holds. It holds
// up the applier's next round while it runs, so it suits short scans.
//
// The sweeper calls it without the keyspace lock, so entries staged
// meanwhile may or may not be seen: what it finds is checked again under
// the lock.
func (s *DB) scanAux(prefix, start []byte, staged func(n uint64), fn func(raw, val []byte) (bool, error)) (gen uint64, err error) {
	if len(prefix) > 0 && prefix[0] == spaceKeys {
		panic("badgerdb: scanAux of the keyspace, whose ordered index comes and goes")
	}
	view := func(fn func(*badger.Txn) error) error {
		return s.readBadger(func(txn *badger.Txn) error {
			gen = s.snapGen.Load() // steady while readBadger holds snapMu
			return fn(txn)
		})
	}
	err = s.scanIn(view, prefix, start, false, staged, fn)
	return gen, err
}

// scanAuxRev is scanAux in descending order of key, from the last key
// before before (exclusive; nil: from the prefix's last key).
func (s *DB) scanAuxRev(prefix, before []byte, staged func(n uint64), fn func(raw, val []byte) (bool, error)) error {
	if len(prefix) > 0 && prefix[0] == spaceKeys {
		panic("badgerdb: scanAuxRev of the keyspace, whose ordered index comes and goes")
	}
	return s.scanIn(s.readBadger, prefix, before, true, staged, fn)
}

// scanIn merges the overlay with Badger's keys from view: a new read
// transaction or the read snapshot. In descending order (rev), start is
// exclusive, the first key visited the last one before it, and nil
// starts at the prefix's last key.
func (s *DB) scanIn(view func(func(*badger.Txn) error) error, prefix, start []byte, rev bool, staged func(n uint64), fn func(raw, val []byte) (bool, error)) error {
	s.ordered(prefix)
	ov := overlay{s: s, prefix: string(prefix), from: string(start), rev: rev}
	seek := start
	if rev {
		ov.after = true // start, or the prefix's end, is exclusive
		if start == nil {
			seek = prefixEnd(prefix)
			ov.from = string(seek)
		}
	}
	defer ov.release()
	// before reports whether overlay key o comes before Badger's key b in
	// the walk's order.
	before := func(o string, b []byte) bool {
		if rev {
			return o >= string(b)
		}
		return o <= string(b)
	}
	return view(func(txn *badger.Txn) error {
		opts := badger.IteratorOptions{Prefix: prefix, PrefetchValues: false, Reverse: rev}
		if rev && start == nil {
			// Reversed, Seek lands on seek itself if it is there, the
			// prefix's end too, which an iterator given the prefix
			// calls the end of the walk: the prefix is checked here.
			// (An iterator without it reads every table, not only
			// those that may hold the prefix: a step took 17 µs.)
			opts.Prefix = nil
		}
		it := s.newIterator(txn, opts)
		defer it.Close()
		it.Seek(seek)
		if rev && it.Valid() && bytes.Equal(it.Item().Key(), seek) {
			it.Next() // exclusive
		}
		for {
			var bkey []byte
			if it.Valid() {
				if bkey = it.Item().Key(); rev && !bytes.HasPrefix(bkey, prefix) {
					bkey = nil
				}
			}
			o, ok := ov.peek()
			if bkey == nil && !ok {
				return nil
			}
			if ok && (bkey == nil || before(o.key, bkey)) {
				ov.next()
				if bkey != nil && o.key == string(bkey) {
					it.Next()
				}
				if staged != nil {
					staged(o.n)
				}
				if o.del {
					continue
				}
				more, err := fn([]byte(o.key), o.val)
				if err != nil || !more {
					return err
				}
				continue
			}
			// Value, not ValueCopy: fn may not keep it, and a copy was
			// an allocation per key walked.
			more := false
			err := it.Item().Value(func(val []byte) error {
				var err error
				more, err = fn(bkey, val)
				return err
			})
			if err != nil || !more {
				return err
			}
			it.Next()
		}
	})
}

// prefixEnd is the least key after every key with prefix: the prefix
// with its last byte below 0xff raised by one, the rest cut; all 0xff
// (or none) has no end, and is answered as prefix and 0xff bytes past any
// key's length.
func prefixEnd(prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xff {
			end := bytes.Clone(prefix[:i+1])
			end[i]++
			return end
		}
	}
	return append(bytes.Clone(prefix), bytes.Repeat([]byte{0xff}, 1<<16)...)
}
