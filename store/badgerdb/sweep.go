package badgerdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"

	"github.com/oncekv/oncekv/store"
)

// sweepBudget bounds one tick of the sweeper, as Redis bounds its active
// expire cycle to a share of each 100 ms.
const sweepBudget = 25 * time.Millisecond

// Sweep deletes expired keys for at most about budget, in rounds of at most
// SweepKeys keys, each round under the keyspace lock. It returns how many
// keys it deleted: none while expiry is paused (PauseExpiry).
func (s *DB) Sweep(budget time.Duration) int {
	if s.expiryPaused.Load() {
		return 0
	}
	deadline := time.Now().Add(budget)
	total := 0
	for db := 0; db < s.opts.Databases; db++ {
		for {
			n, more := s.sweepRound(db)
			total += n
			if !more || time.Now().After(deadline) {
				break
			}
		}
		if time.Now().After(deadline) {
			break
		}
	}
	return total
}

// PauseExpiry stops (paused) or resumes the deletion of expired keys, as
// Redis pauses its expiry during CLIENT PAUSE: the keys stay stored,
// hidden from reads as ever, until the sweeper runs again.
func (s *DB) PauseExpiry(paused bool) { s.expiryPaused.Store(paused) }

// sweepCand is an expiry index entry that a sweep found due.
type sweepCand struct {
	idx []byte // the index entry
	at  int64  // its deadline
	key []byte // the key, in idx
}

// sweepScratch is a sweep round's buffers, kept from round to round
// (under sweeping): while a million keys expired, the rounds' candidates,
// the copies of their index entries and of their keys were a fifth of
// what the server allocated, and collections ran every 0.4 s.
type sweepScratch struct {
	cands, later []sweepCand
	idx          []byte // the candidates' index entries
	keys         []byte // the Badger keys of later's
	raws         [][]byte
	dels         [][]byte // index entries and keys deleted unread
	check, found []bool
	held         []bool
	vals         [][]byte
	gens         []uint64
}

// scratchMax is the most bytes of keys a round's buffers keep for the
// next round.
const scratchMax = 1 << 16

// reset empties the buffers for a round, dropping any that a round of
// long keys grew past scratchMax.
func (b *sweepScratch) reset() {
	if cap(b.idx) > scratchMax || cap(b.keys) > scratchMax {
		*b = sweepScratch{}
	}
	clear(b.vals) // values read from Badger
	b.cands, b.later = b.cands[:0], b.later[:0]
	b.idx, b.keys = b.idx[:0], b.keys[:0]
}

// sweepRound deletes up to SweepKeys expired keys of db; more reports that
// the round was full, so more expired keys may be waiting.
//
// Each due entry's key is checked before it is deleted: an entry whose key
// has another deadline, or is gone, is stale, and only the entry goes. A
// key that memory holds is checked under the keyspace lock at once. A key
// that memory does not hold needs Badger, whose reads (tens of µs when the
// table pages must be mapped again) held up every command while keys
// expired en masse; those are read from the read snapshot after the lock
// is released, then checked under it again (sweepLater).
func (s *DB) sweepRound(db int) (deleted int, more bool) {
	s.sweeping.Lock()
	defer s.sweeping.Unlock()
	s.scratch.reset()
	later, now, gen, deleted, more := s.sweepDue(db)
	if len(later) > 0 {
		deleted += s.sweepLater(db, now, gen, later)
	}
	s.expired.Add(int64(deleted))
	return deleted, more
}

// sweepDue scans db's expiry index for due entries, settles those whose
// key memory holds, and returns the others, with the generation of the
// read snapshot the scan read.
//
// The scan runs without the keyspace lock: under mass expiry, opening
// Badger's iterator and reading the index's blocks took up to 25 ms a
// round, and every write waited for them (measured with a million keys
// expiring, while ONCE waiters were woken). Writes go on meanwhile, so
// what the scan found is only a candidate: each key is checked under the
// lock before it is deleted (here, and in sweepLater), and a deadline set
// during the scan that it did not see is in setSince (sweepStart), which
// the round that ends a backlog lowers nextSweep to.
func (s *DB) sweepDue(db int) (later []sweepCand, now int64, gen uint64, deleted int, more bool) {
	start, now, ok := s.sweepStart(db)
	if !ok {
		return nil, 0, 0, 0, false
	}
	cands, next, gen, steps, err := s.scanDue(db, start, now)
	if s.scanHook != nil {
		s.scanHook()
	}
	lockFresh(&s.mu)
	defer s.mu.Unlock()
	s.sweepSteps += steps
	if err != nil {
		s.log.Warn("sweep: scan expiry index", zap.Error(err))
		return nil, 0, 0, 0, false
	}
	if s.writeError() != nil {
		return nil, 0, 0, 0, false // writes are refused since the scan
	}
	t := &tx{s: s, now: now, nowSet: true, write: true}
	b := &s.scratch
	later, dels := b.later, b.dels[:0]
	defer func() { b.later, b.dels = later, dels }()
	removed := 0
	var kb []byte
	for _, c := range cands {
		kb = appendDataKey(kb[:0], db, c.key)
		if !s.inMemory(kb) {
			later = append(later, c)
			continue
		}
		v, raw, ok, err := t.getAny(db, c.key)
		if err != nil {
			// Nothing collected is staged, and the cursor stays: the
			// next round finds the same entries.
			s.log.Warn("sweep: read key", zap.Error(err))
			return nil, now, 0, 0, false
		}
		// As settle, with the deletions staged together at the end
		// (stageDeletes). A key's deletion does not change what a later
		// candidate of the same key reads, which only the key whose
		// deadline is the candidate's deletes.
		dels = append(dels, c.idx)
		if ok && v.ExpireAt == c.at {
			i := len(b.keys)
			b.keys = append(b.keys, raw...)
			dels = append(dels, b.keys[i:len(b.keys):len(b.keys)])
			removed++
		}
	}
	t.stageRemovals(db, dels, removed)
	deleted += removed
	s.endTx(t)
	full := len(cands) == s.opts.SweepKeys
	if full {
		// The next round starts where this one stopped, rather than
		// stepping again over the index entries this round and the
		// ones before it deleted (which linger in the overlay, then as
		// Badger tombstones). A deadline set meanwhile may sort before
		// the cursor (a wall clock stepped back, a transaction that
		// read the clock before this round, or a write during a scan):
		// setSince keeps the earliest, for the end of the backlog.
		// (A copy: the next round reuses the candidates' buffer.)
		s.sweepFrom[db] = bytes.Clone(cands[len(cands)-1].idx)
	} else {
		// Every entry from where the rounds since the last scan from
		// nextSweep began, to next, was due and is settled (sweepLater
		// lowers nextSweep again for one it cannot settle), except
		// those put meanwhile, the earliest of which is setSince.
		s.nextSweep[db] = min(next, s.setSince[db])
		s.sweepFrom[db] = nil
	}
	return later, now, gen, deleted, full
}

// sweepStart decides under the keyspace lock whether db has an expiry
// index entry that may be due at now, and where a scan for them starts:
// at the cursor of a backlog, or where nextSweep sorts in the index, in
// which case setSince starts again from the scan.
func (s *DB) sweepStart(db int) (start []byte, now int64, ok bool) {
	lockFresh(&s.mu)
	defer s.mu.Unlock()
	if !s.mayHaveKeys(db) || s.writeError() != nil {
		// Nothing to sweep, or writes are refused (a full disk): the
		// expired keys stay invisible until they can be deleted.
		return nil, 0, false
	}
	now = s.now()
	if now < s.nextSweep[db] {
		return nil, 0, false // no deadline has passed yet
	}
	s.sweepScans++
	if s.sweepFrom[db] != nil {
		return s.sweepFrom[db], now, true
	}
	s.setSince[db] = math.MaxInt64
	if s.nextSweep[db] > 0 {
		return expiryKey(db, s.nextSweep[db], nil), now, true
	}
	return dbPrefix(spaceExpiry, db), now, true
}

// scanDue reads db's expiry index from start for up to SweepKeys entries
// due at now, without the keyspace lock: the overlay a chunk at a time
// under omu, Badger in the read snapshot, whose generation it returns. It
// returns the first deadline after them (next; MaxInt64: none), and the
// overlay entries it stepped over (steps).
func (s *DB) scanDue(db int, start []byte, now int64) (cands []sweepCand, next int64, gen uint64, steps int, err error) {
	next = math.MaxInt64
	cands, buf := s.scratch.cands, s.scratch.idx
	defer func() { s.scratch.cands, s.scratch.idx = cands, buf }()
	gen, err = s.scanAux(dbPrefix(spaceExpiry, db), start, func(uint64) { steps++ }, func(raw, _ []byte) (bool, error) {
		if len(raw) < 11 {
			return true, nil
		}
		at := int64(binary.BigEndian.Uint64(raw[3:11]))
		if at > now {
			next = at
			return false, nil
		}
		i := len(buf)
		buf = append(buf, raw...)
		c := sweepCand{idx: buf[i:len(buf):len(buf)], at: at}
		c.key = c.idx[11:]
		cands = append(cands, c)
		return len(cands) < s.opts.SweepKeys, nil
	})
	return cands, next, gen, steps, err
}

// sweepLater settles due entries whose key memory did not hold at the
// scan, which saw the read snapshot of generation gen.
//
// Most need no read at all. The expiry index is exact (exactIndex): an
// entry is there exactly while its key has that deadline. A key that
// memory still does not hold, with the snapshot still gen, was not
// written since the scan (a write keeps the key in memory until the
// applier has written it to Badger and replaced the snapshot,
// refreshSnap, which changes its generation): so it has the entry's
// deadline, and goes. Reading each such key from Badger, to check it,
// was two thirds of the sweeper's CPU when keys left the cache before
// they expired.
//
// An entry the index may hold stale (from before it was exact) has its
// key read from the read snapshot first, without the keyspace lock; then,
// under the lock, what was read is used for each key that memory still
// does not hold, as long as the snapshot has not been replaced since.
// Any other key is read again, under the lock, as sweepDue does.
func (s *DB) sweepLater(db int, now int64, gen uint64, later []sweepCand) (deleted int) {
	b := &s.scratch
	raws, check := b.raws[:0], b.check[:0]
	for _, c := range later {
		i := len(b.keys)
		b.keys = appendDataKey(b.keys, db, c.key)
		raws = append(raws, b.keys[i:len(b.keys):len(b.keys)])
		check = append(check, !s.exactIndex(c.at))
	}
	b.raws, b.check = raws, check
	vals, found, gens := s.readSnapshot(raws, check)
	if s.sweepHook != nil {
		s.sweepHook()
	}
	lockFresh(&s.mu)
	defer s.mu.Unlock()
	t := &tx{s: s, now: now, nowSet: true, write: true}
	defer s.endTx(t)
	// Memory is asked about every key under one taking of omu, then the
	// snapshot's generation: a key written since the scan (which needs
	// mu, held here) is in memory until the applier has written it and
	// replaced the snapshot, so what memory said still holds when the
	// generation read after it is the scan's.
	held := resized(b.held, len(later))
	b.held = held
	s.omu.RLock()
	for i := range later {
		held[i] = s.mem.get(raws[i]) != nil
	}
	s.omu.RUnlock()
	snapGen := s.snapGen.Load()
	// The keys deleted unread, and their entries, are staged together at
	// the end (stageDeletes).
	dels := b.dels[:0]
	defer func() { b.dels = dels }()
	for i, c := range later {
		if s.writeError() != nil {
			// The deletions collected are not staged: the next scans
			// start before them again.
			s.sweepAgain(db, later[0].at)
			return deleted
		}
		if !check[i] && !held[i] && snapGen == gen {
			dels = append(dels, c.idx, raws[i])
			continue
		}
		if check[i] && gens[i] != 0 && !held[i] && snapGen == gens[i] {
			var v store.Value
			ok := found[i]
			if ok {
				v, ok = decodeValue(vals[i])
			}
			deleted += t.settle(db, c, raws[i], v, ok)
			continue
		}
		v, raw, ok, err := t.getAny(db, c.key)
		if err != nil {
			s.log.Warn("sweep: read key", zap.Error(err))
			s.sweepAgain(db, later[0].at)
			return deleted
		}
		deleted += t.settle(db, c, raw, v, ok)
	}
	// Each key has its entry's deadline (exactIndex).
	n := len(dels) / 2
	t.stageRemovals(db, dels, n)
	s.sweptUnread += n
	return deleted + n
}

// stageRemovals stages dels, index entries and keys to delete, together
// (stageDeletes), as removed keys each with a deadline (remove) and their
// entries, and the stale entries left.
func (t *tx) stageRemovals(db int, dels [][]byte, removed int) {
	if len(dels) == 0 {
		return
	}
	t.memo.ok = false
	t.last = t.s.stageDeletes(dels)
	// Deleted unread: any of them may have owned an object.
	t.s.objDue.Store(true)
	t.s.counts[db] -= removed
	t.s.expiring[db] -= removed
}

// sweepAgain makes the next round of db scan from the start of the index
// by the time deadline at passes: sweepDue, which moved on past the
// entries it handed to sweepLater, may have set the next scan later than
// the ones sweepLater could not settle. Called with mu held.
func (s *DB) sweepAgain(db int, at int64) {
	s.nextSweep[db] = min(s.nextSweep[db], at)
	s.sweepFrom[db] = nil
}

// settle deletes the key of due index entry c if it still has c's
// deadline (v, ok: the key's value, if any), and otherwise only the stale
// entry. It reports the keys deleted.
func (t *tx) settle(db int, c sweepCand, raw []byte, v store.Value, ok bool) int {
	if ok && v.ExpireAt == c.at {
		t.remove(db, c.key, raw, v)
		return 1
	}
	// A stale index entry: the key changed deadline or went away.
	t.stage(c.idx, nil, true, false)
	return 0
}

// inMemory reports whether memory holds raw's entry, dirty or clean.
func (s *DB) inMemory(raw []byte) bool {
	s.omu.RLock()
	ok := s.mem.get(raw) != nil
	s.omu.RUnlock()
	return ok
}

// readSnapshot reads the raw keys that read says to from the read
// snapshot: their values, whether each was found, and the generation of
// the snapshot each was read in (0 when there was none, the read failed,
// or the key was not read: it may not be used). It holds the snapshot for
// one read at a time, so that the applier, which waits for it to install
// a new one, holds up other readers no longer.
func (s *DB) readSnapshot(raws [][]byte, read []bool) (vals [][]byte, found []bool, gens []uint64) {
	b := &s.scratch
	b.vals, b.found, b.gens = resized(b.vals, len(raws)), resized(b.found, len(raws)), resized(b.gens, len(raws))
	vals, found, gens = b.vals, b.found, b.gens
	for i, raw := range raws {
		if !read[i] {
			continue
		}
		s.snapMu.RLock()
		if s.snap != nil {
			var err error
			vals[i], err = s.lookup(s.snap, raw)
			found[i] = err == nil
			if err == nil || errors.Is(err, badger.ErrKeyNotFound) {
				gens[i] = s.snapGen.Load()
			}
		}
		s.snapMu.RUnlock()
	}
	return vals, found, gens
}

// resized is b with length n, zeroed, in b's array if it has room.
func resized[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	b = b[:n]
	clear(b)
	return b
}

// sweepCheckMeta names the meta record that holds the last deadline
// whose expiry index entries may be stale (exactIndex).
const sweepCheckMeta = "sweep-check-up-to"

// exactIndex reports whether the expiry index entries at deadline at are
// exact: an entry is there exactly while its key has that deadline. Every
// write that changes a key's deadline, or deletes the key, changes its
// entry in the same transaction, and a log record holds whole
// transactions (txDone), so a process crash cannot part them. Entries up
// to checkUpTo may be stale (loadSweepCheck) and are checked against
// their key; so are all, once a round of writes was lost or requeued in
// this process (noSkip).
func (s *DB) exactIndex(at int64) bool {
	return at > s.checkUpTo && !s.noSkip.Load()
}

// loadSweepCheck sets checkUpTo from its meta record. It raises it to the
// last deadline the index holds now, and records that, when there is no
// record (a store's first Open by a build that keeps one), when the
// directory's format promised nothing (stale: format 1, which also means
// that a build that ignores the record may have run since it was
// written), and after the machine went down with the store open
// (crashed, lostPower). The applier gives Badger only what the log has
// synced (syncLogUpTo), so a power loss leaves Badger a prefix of the
// log, which the replay completes; but what Badger's own recovery makes
// of its unsynced files then is Badger's, and checking the entries held
// then costs only time. (A process that dies, kill -9, leaves the kernel
// everything it wrote: nothing to check.) Called by Open, after the log's
// replay, before anything is staged.
func (s *DB) loadSweepCheck(stale, crashed bool) error {
	rec, _, err := s.readRecord(metaKey(sweepCheckMeta))
	if err != nil {
		return err
	}
	found := len(rec) == 8 && !stale
	if found {
		s.checkUpTo = int64(binary.BigEndian.Uint64(rec))
		if !crashed {
			return nil
		}
	}
	last, err := s.lastDeadline()
	if err != nil {
		return err
	}
	s.checkUpTo = max(s.checkUpTo, last)
	err = s.bdb.Update(func(txn *badger.Txn) error {
		return txn.Set(metaKey(sweepCheckMeta), binary.BigEndian.AppendUint64(nil, uint64(s.checkUpTo)))
	})
	if err != nil {
		return err
	}
	// Synced before the format is raised, or a crash could leave format
	// 2 without the record (which a later Open would then make anew,
	// from a later, still safe, deadline).
	return s.syncBadger()
}

// lastDeadline is the latest deadline in the expiry index, in every
// database it holds entries of (not only the ones the configuration
// names now), or 0.
func (s *DB) lastDeadline() (last int64, err error) {
	err = s.bdb.View(func(txn *badger.Txn) error {
		o := badger.DefaultIteratorOptions
		o.Reverse, o.PrefetchValues = true, false
		it := txn.NewIterator(o)
		defer it.Close()
		space := []byte{spaceExpiry}
		// From the end of the space, one database at a time: the last
		// entry of each is its latest deadline.
		for it.Seek(append(slices.Clip(space), bytes.Repeat([]byte{0xff}, 11)...)); it.ValidForPrefix(space); {
			k := it.Item().Key()
			if len(k) >= 11 {
				last = max(last, int64(binary.BigEndian.Uint64(k[3:11])))
			}
			if len(k) < 3 {
				break
			}
			db := int(k[1])<<8 | int(k[2])
			if db == 0 {
				break
			}
			it.Seek(append(dbPrefix(spaceExpiry, db-1), bytes.Repeat([]byte{0xff}, 9)...))
		}
		return nil
	})
	return last, err
}
