package badgerdb

import (
	"encoding/binary"
	"errors"
	"math"
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
// keys it deleted.
func (s *DB) Sweep(budget time.Duration) int {
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

// sweepCand is an expiry index entry that a sweep found due.
type sweepCand struct {
	idx []byte // the index entry
	at  int64  // its deadline
	key []byte // the key, in idx
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
	later, now, deleted, more := s.sweepDue(db)
	if len(later) > 0 {
		deleted += s.sweepLater(db, now, later)
	}
	s.expired.Add(int64(deleted))
	return deleted, more
}

// sweepDue scans db's expiry index for due entries under the keyspace
// lock, settles those whose key memory holds, and returns the others.
func (s *DB) sweepDue(db int) (later []sweepCand, now int64, deleted int, more bool) {
	lockFresh(&s.mu)
	defer s.mu.Unlock()
	if !s.mayHaveKeys(db) || s.writeError() != nil {
		// Nothing to sweep, or writes are refused (a full disk): the
		// expired keys stay invisible until they can be deleted.
		return nil, 0, 0, false
	}
	t := &tx{s: s, now: s.now(), nowSet: true, write: true}
	if t.Now() < s.nextSweep[db] {
		return nil, 0, 0, false // no deadline has passed yet
	}
	s.sweepScans++
	prefix := dbPrefix(spaceExpiry, db)
	start := prefix
	fromLow := s.sweepFrom[db] == nil
	switch {
	case !fromLow:
		start = s.sweepFrom[db]
	case s.nextSweep[db] > 0:
		start = expiryKey(db, s.nextSweep[db], nil)
	}
	var cands []sweepCand
	next := int64(math.MaxInt64) // the first deadline still ahead
	err := s.scanAux(prefix, start, func(uint64) { s.sweepSteps++ }, func(raw, _ []byte) (bool, error) {
		if len(raw) < 11 {
			return true, nil
		}
		at := int64(binary.BigEndian.Uint64(raw[3:11]))
		if at > t.Now() {
			next = at
			return false, nil
		}
		c := sweepCand{idx: append([]byte(nil), raw...), at: at}
		c.key = c.idx[11:]
		cands = append(cands, c)
		return len(cands) < s.opts.SweepKeys, nil
	})
	if err != nil {
		s.log.Warn("sweep: scan expiry index", zap.Error(err))
		return nil, 0, 0, false
	}
	for _, c := range cands {
		if !s.inMemory(dataKey(db, c.key)) {
			later = append(later, c)
			continue
		}
		v, raw, ok, err := t.getAny(db, c.key)
		if err != nil {
			s.log.Warn("sweep: read key", zap.Error(err))
			if t.last != 0 {
				s.poke()
			}
			return nil, t.Now(), deleted, false
		}
		deleted += t.settle(db, c, raw, v, ok)
	}
	if t.last != 0 {
		s.poke()
	}
	full := len(cands) == s.opts.SweepKeys
	switch {
	case full:
		// The next round starts where this one stopped, rather than
		// stepping again over the index entries this round and the
		// ones before it deleted (which linger in the overlay, then as
		// Badger tombstones). A deadline set meanwhile may sort before
		// the cursor (a wall clock stepped back, or a transaction that
		// read the clock before this round took the lock): setSince
		// keeps the earliest, for the end of the backlog.
		if fromLow {
			s.setSince[db] = math.MaxInt64
		}
		s.sweepFrom[db] = cands[len(cands)-1].idx
	case fromLow:
		// Every entry before next was due and is settled (sweepLater
		// lowers nextSweep again for one it cannot settle).
		s.nextSweep[db] = next
	default:
		// The backlog is swept: the rounds since the last scan from
		// nextSweep settled every entry from there to next, except
		// those put meanwhile, the earliest of which is setSince.
		s.nextSweep[db] = min(next, s.setSince[db])
		s.sweepFrom[db] = nil
	}
	return later, t.Now(), deleted, full
}

// sweepLater settles due entries whose key memory did not hold: it reads
// the keys from the read snapshot without the keyspace lock, then takes
// the lock and uses what it read for each key that memory still does not
// hold, as long as the snapshot has not been replaced since. Checked in
// that order, this is what the key holds: a write after the read keeps
// the key in memory until the applier has written it to Badger and
// replaced the snapshot (refreshSnap), which changes its generation. Any
// other key is read again, under the lock, as sweepDue does.
func (s *DB) sweepLater(db int, now int64, later []sweepCand) (deleted int) {
	raws := make([][]byte, len(later))
	for i, c := range later {
		raws[i] = dataKey(db, c.key)
	}
	vals, found, gens := s.readSnapshot(raws)
	if s.sweepHook != nil {
		s.sweepHook()
	}
	lockFresh(&s.mu)
	defer s.mu.Unlock()
	t := &tx{s: s, now: now, nowSet: true, write: true}
	defer func() {
		if t.last != 0 {
			s.poke()
		}
	}()
	for i, c := range later {
		if s.writeError() != nil {
			s.sweepAgain(db, c.at)
			return deleted
		}
		if gens[i] != 0 && !s.inMemory(raws[i]) && s.snapGen.Load() == gens[i] {
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
			s.sweepAgain(db, c.at)
			return deleted
		}
		deleted += t.settle(db, c, raw, v, ok)
	}
	return deleted
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
	_, ok := s.mem[string(raw)]
	s.omu.RUnlock()
	return ok
}

// readSnapshot reads raw keys from the read snapshot: their values,
// whether each was found, and the generation of the snapshot each was read
// in (0 when there was none, or the read failed: it may not be used). It
// holds the snapshot for one read at a time, so that the applier, which
// waits for it to install a new one, holds up other readers no longer.
func (s *DB) readSnapshot(raws [][]byte) (vals [][]byte, found []bool, gens []uint64) {
	vals, found, gens = make([][]byte, len(raws)), make([]bool, len(raws)), make([]uint64, len(raws))
	for i, raw := range raws {
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
