package badgerdb

import (
	"go.uber.org/zap"

	"github.com/dgraph-io/badger/v4"
)

// countKeys counts, once, the keys and the keys with a deadline of every
// database on the snapshot taken at Open, into base and baseExp, and then
// closes counted. Start runs it in the background, so that a large
// keyspace serves its first command at once instead of after a walk of all
// its keys; what needs the numbers (DBSIZE, INFO keyspace, FLUSHDB) waits
// for them, and every other command goes on meanwhile.
func (s *DB) countKeys() {
	s.counting.Do(func() {
		defer close(s.counted)
		defer s.countTxn.Discard()
		for _, sp := range []struct {
			space  byte
			counts []int
		}{{spaceKeys, s.base}, {spaceExpiry, s.baseExp}} {
			it := s.newIterator(s.countTxn, badger.IteratorOptions{Prefix: []byte{sp.space}})
			n := 0
			for it.Rewind(); it.Valid(); it.Next() {
				if n++; n%4096 == 0 && s.closed.Load() {
					it.Close()
					s.log.Warn("store closed while counting keys")
					return
				}
				s.trimWhileScanning(n)
				k := it.Item().Key()
				if sp.space == spaceKeys {
					s.pres.Load().add(k)
				}
				if len(k) < 3 {
					continue
				}
				if db := int(k[1])<<8 | int(k[2]); db < len(sp.counts) {
					sp.counts[db]++
				}
			}
			it.Close()
		}
		p := s.pres.Load()
		p.ready.Store(true)
		if p.full() {
			// Puts staged during the count filled it, and stage
			// kicks a rebuild only once the filter is ready: one
			// now, not at the next put, which may not come.
			kickChan(s.rebuildPres)
		}
		s.log.Debug("keys counted", zap.Ints("keys", s.base))
	})
}

// awaitCount waits until the keys are counted.
func (s *DB) awaitCount() {
	if !s.started {
		s.countKeys()
	}
	<-s.counted
}

// keyCount is the number of keys of db, waiting for the count. Called with
// mu held.
func (s *DB) keyCount(db int) int {
	s.awaitCount()
	return s.base[db] + s.counts[db]
}

// expiringCount is the number of keys of db with a deadline, waiting for
// the count. Called with mu held.
func (s *DB) expiringCount(db int) int {
	s.awaitCount()
	return s.baseExp[db] + s.expiring[db]
}

// mayHaveKeys reports, without waiting, whether db may hold keys.
// Called with mu held.
func (s *DB) mayHaveKeys(db int) bool {
	select {
	case <-s.counted:
		return s.base[db]+s.counts[db] > 0
	default:
		return true
	}
}
