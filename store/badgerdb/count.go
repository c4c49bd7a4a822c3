package badgerdb

import (
	"go.uber.org/zap"

	"github.com/dgraph-io/badger/v4"

	"github.com/oncekv/oncekv/store"
)

// countKeys counts, once, the keys and the keys with a deadline of every
// database on the snapshot taken at Open, into base and baseExp, and then
// closes counted. Start runs it in the background, so that a large
// keyspace serves its first command at once instead of after a walk of all
// its keys; what needs the numbers (DBSIZE, INFO keyspace, FLUSHDB) waits
// for them, and every other command goes on meanwhile.
//
// It also shows the values of the keyspace to the WalkKind callers that
// came before it.
func (s *DB) countKeys() {
	s.counting.Do(func() {
		defer close(s.counted)
		defer s.countTxn.Discard()
		ws := s.beginWalk()
		complete := true
		defer func() {
			for _, w := range ws {
				w.done(complete)
			}
		}()
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
					complete = false
					return
				}
				s.trimWhileScanning(n)
				k := it.Item().Key()
				if sp.space == spaceKeys {
					s.pres.Load().add(k)
					if len(ws) > 0 && !s.showKinds(ws, it.Item()) {
						complete = false
					}
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

// kindWalk is a WalkKind caller.
type kindWalk struct {
	kind store.Kind
	fn   func(db int, key []byte, v store.Value)
	done func(complete bool)
}

// WalkKind shows fn the values of kind k (store.KindWalker): those of the
// count's walk when called before Start, else those of a walk of its own
// over a snapshot of Badger, which takes no lock of the keyspace (a value
// staged and not yet in Badger is not seen: a caller that needs it saw it
// written).
func (s *DB) WalkKind(k store.Kind, fn func(db int, key []byte, v store.Value), done func(complete bool)) {
	w := kindWalk{kind: k, fn: fn, done: done}
	s.walkMu.Lock()
	if !s.walkBegun {
		s.walks = append(s.walks, w)
		s.walkMu.Unlock()
		return
	}
	s.walkMu.Unlock()
	if s.closed.Load() {
		done(false)
		return
	}
	txn := s.bdb.NewTransaction(false)
	defer txn.Discard()
	it := s.newIterator(txn, badger.IteratorOptions{Prefix: []byte{spaceKeys}})
	defer it.Close()
	ws := []kindWalk{w}
	complete := true
	n := 0
	for it.Rewind(); it.Valid(); it.Next() {
		if n++; n%4096 == 0 && s.closed.Load() {
			complete = false
			break
		}
		if !s.showKinds(ws, it.Item()) {
			complete = false
		}
	}
	done(complete)
}

// beginWalk takes the WalkKind callers that the count's walk serves: any
// later one walks on its own.
func (s *DB) beginWalk() []kindWalk {
	s.walkMu.Lock()
	defer s.walkMu.Unlock()
	s.walkBegun = true
	ws := s.walks
	s.walks = nil
	return ws
}

// showKinds shows the value of item, a key of the keyspace, to the walks
// ws of its kind. It reads the value: from Badger's table for a short one
// (the iterator has it already), from the mapped value log for a long
// one, whose first bytes only are touched unless a walk wants its kind.
// It reports false when the value could not be read.
func (s *DB) showKinds(ws []kindWalk, item *badger.Item) bool {
	k := item.Key()
	if len(k) < 3 {
		return true
	}
	err := item.Value(func(val []byte) error {
		v, ok := decodeValue(val)
		if !ok {
			return nil
		}
		db := s.logicalDB(int(k[1])<<8 | int(k[2]))
		for _, w := range ws {
			if w.kind == v.Kind {
				w.fn(db, k[3:], v)
			}
		}
		return nil
	})
	if err != nil {
		s.log.Warn("walk of the keyspace: cannot read a value", zap.Error(err))
		return false
	}
	return true
}
