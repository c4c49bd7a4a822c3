package badgerdb

import (
	"encoding/binary"
	"math"
	"time"

	"go.uber.org/zap"
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

// sweepRound deletes up to SweepKeys expired keys of db; more reports that
// the round was full, so more expired keys may be waiting.
func (s *DB) sweepRound(db int) (deleted int, more bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.mayHaveKeys(db) || s.writeError() != nil {
		// Nothing to sweep, or writes are refused (a full disk): the
		// expired keys stay invisible until they can be deleted.
		return 0, false
	}
	t := &tx{s: s, now: s.now(), write: true}
	if t.now < s.nextSweep[db] {
		return 0, false // no deadline has passed yet
	}
	s.sweepScans++
	prefix := dbPrefix(spaceExpiry, db)
	start := prefix
	if from := s.sweepFrom[db]; from != nil {
		start = from
	}
	type cand struct {
		idx []byte
		at  int64
		key []byte
	}
	var cands []cand
	next := int64(math.MaxInt64) // the first deadline still ahead
	err := s.scanAux(prefix, start, func(uint64) { s.sweepSteps++ }, func(raw, _ []byte) (bool, error) {
		if len(raw) < 11 {
			return true, nil
		}
		at := int64(binary.BigEndian.Uint64(raw[3:11]))
		if at > t.now {
			next = at
			return false, nil
		}
		c := cand{idx: append([]byte(nil), raw...), at: at}
		c.key = c.idx[11:]
		cands = append(cands, c)
		return len(cands) < s.opts.SweepKeys, nil
	})
	if err != nil {
		s.log.Warn("sweep: scan expiry index", zap.Error(err))
		return 0, false
	}
	for _, c := range cands {
		v, raw, ok, err := t.getAny(db, c.key)
		if err != nil {
			s.log.Warn("sweep: read key", zap.Error(err))
			return deleted, false
		}
		if ok && v.ExpireAt == c.at {
			t.remove(db, c.key, raw, v)
			deleted++
			continue
		}
		// A stale index entry: the key changed deadline or went away.
		t.stage(c.idx, nil, true, false)
	}
	if t.last != 0 {
		s.poke()
	}
	s.expired.Add(int64(deleted))
	full := len(cands) == s.opts.SweepKeys
	if full {
		// The next round starts where this one stopped, rather than
		// stepping again over the index entries this round and the
		// ones before it deleted (which linger in the overlay, then as
		// Badger tombstones): every deadline set since is later than
		// now, so its entry sorts after these.
		s.sweepFrom[db] = cands[len(cands)-1].idx
	} else {
		// The backlog is swept. Only a scan from the start of the index
		// may skip the scans until the next deadline: one that started
		// at the cursor would miss an entry put before it (a wall clock
		// stepped back), so the next tick scans from the start.
		if s.sweepFrom[db] == nil {
			s.nextSweep[db] = next
		}
		s.sweepFrom[db] = nil
	}
	return deleted, full
}
