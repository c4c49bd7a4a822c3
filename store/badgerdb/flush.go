package badgerdb

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"

	"github.com/oncekv/oncekv/store"
)

// Flushing databases (FLUSHDB, FLUSHALL) drops their keys in Badger
// (DropPrefix), outside the log. DropPrefix is not atomic: it flushes the
// memtables without the keys, then drops them level after level, so a
// crash in the middle of it left part of a database flushed, or some of
// FLUSHALL's databases and not the others. So the databases being flushed
// are recorded in Badger, synced, before the drop, and the record is
// deleted, synced, once it is done; Open completes a drop it finds
// recorded (finishFlush). Nothing else writes meanwhile (the flush holds
// the keyspace lock), so the completed drop takes nothing written after
// the flush.

// flushKey is the meta key naming the databases a flush is dropping.
var flushKey = metaKey("\x00store:flushing")

// encodeDBs and decodeDBs are flushKey's value: uvarint database numbers.
func encodeDBs(dbs []int) []byte {
	var b []byte
	for _, db := range dbs {
		b = binary.AppendUvarint(b, uint64(db))
	}
	return b
}

func decodeDBs(b []byte) ([]int, bool) {
	var dbs []int
	for len(b) > 0 {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > 1<<16 {
			return nil, false
		}
		dbs = append(dbs, int(n))
		b = b[w:]
	}
	return dbs, true
}

// dbPrefixes are the Badger prefixes of the keys and expiry index
// entries of dbs.
func dbPrefixes(dbs []int) [][]byte {
	var p [][]byte
	for _, db := range dbs {
		p = append(p, dbPrefix(spaceKeys, db), dbPrefix(spaceExpiry, db))
	}
	return p
}

// dropDBs drops every key of dbs from Badger, as one step across a crash.
// Badger must hold, synced, every write staged before (checkpointAll).
func (s *DB) dropDBs(dbs []int) error {
	if err := s.bdb.Update(func(txn *badger.Txn) error { return txn.Set(flushKey, encodeDBs(dbs)) }); err != nil {
		return fmt.Errorf("record the flush: %w", err)
	}
	if err := s.syncBadger(); err != nil {
		return fmt.Errorf("record the flush: %w", err)
	}
	err := s.endDrop(dbs, true)
	if errors.Is(err, errDrop) {
		// The flush failed and its client is told so: the next Open
		// must not complete it over the writes that come after. (Badger
		// may have dropped some of the keys: as it was without the
		// record.)
		err = errors.Join(err, s.bdb.Update(func(txn *badger.Txn) error { return txn.Delete(flushKey) }), s.syncBadger())
	}
	return err
}

// errDrop wraps the error of a flush's DropPrefix.
var errDrop = errors.New("flush")

// endDrop drops dbs and deletes the record of the flush. Once the drop
// is done, with retry (a flush of the running store), the record's
// deletion is tried until it succeeds, writes refused meanwhile (retry):
// a record left behind would have the next Open drop dbs again, over
// writes acknowledged after the flush.
func (s *DB) endDrop(dbs []int, retry bool) error {
	drop := func() error {
		if s.dropErr != nil {
			if err := s.dropErr(); err != nil {
				return err
			}
		}
		return s.bdb.DropPrefix(dbPrefixes(dbs)...)
	}
	if err := drop(); err != nil {
		return fmt.Errorf("%w: %w", errDrop, err)
	}
	end := func() error {
		if s.endErr != nil {
			if err := s.endErr(); err != nil {
				return err
			}
		}
		if err := s.bdb.Update(func(txn *badger.Txn) error { return txn.Delete(flushKey) }); err != nil {
			return fmt.Errorf("end the flush: %w", err)
		}
		if err := s.syncBadger(); err != nil {
			return fmt.Errorf("end the flush: %w", err)
		}
		return nil
	}
	if !retry {
		return end()
	}
	if !s.retry(end) {
		return fmt.Errorf("end the flush: %w", store.ErrClosed)
	}
	return nil
}

// finishFlush completes the flush a crash interrupted, if Badger records
// one. Called by Open, after the log's replay, before anything else reads
// or writes the keyspace.
func (s *DB) finishFlush() error {
	rec, found, err := s.readRecord(flushKey)
	if err != nil || !found {
		return err
	}
	dbs, ok := decodeDBs(rec)
	if !ok {
		return fmt.Errorf("damaged record of a flush: %x", rec)
	}
	s.log.Warn("completing a FLUSHDB or FLUSHALL that a crash interrupted", zap.Ints("databases", dbs))
	return s.endDrop(dbs, false)
}
