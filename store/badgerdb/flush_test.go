package badgerdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/oncekv/oncekv/store"
)

// TestFlushInterruptedByACrash: a crash in the middle of FLUSHDB or
// FLUSHALL, once the flush is recorded and before Badger's DropPrefix has
// dropped every key, leaves an image whose Open completes the flush: the
// flushed databases are empty, the others whole (KV-6, KV-7). The record
// is gone afterwards, so the next Open drops nothing written since.
func TestFlushInterruptedByACrash(t *testing.T) {
	const keysPerDB = 50
	cases := []struct {
		name string
		dbs  []int
	}{
		{name: "FLUSHDB", dbs: []int{1}},
		{name: "FLUSHALL", dbs: []int{0, 1, 2, 3}},
		{name: "two of four", dbs: []int{0, 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := t.TempDir()
			s := open(t, src, FsyncAlways, nil)
			for db := range 4 {
				for i := range keysPerDB {
					at := int64(0)
					if i%2 == 0 {
						at = time.Now().Add(time.Hour).UnixMilli()
					}
					set(t, s, db, fmt.Sprintf("k%03d", i), str("v", at))
				}
			}
			// The store's state once the flush is recorded (written
			// directly, as the store writes it): what a kill -9 during
			// the drop leaves, whichever keys the drop took already.
			var rec []byte
			for _, db := range c.dbs {
				rec = binary.AppendUvarint(rec, uint64(db))
			}
			if err := s.bdb.Update(func(txn *badger.Txn) error {
				return txn.Set(metaKey("\x00store:flushing"), rec)
			}); err != nil {
				t.Fatal(err)
			}
			if err := s.bdb.Sync(); err != nil {
				t.Fatal(err)
			}
			img := copyDir(t, src)
			s.Close()

			r := open(t, img, FsyncAlways, nil)
			for db := range 4 {
				want := keysPerDB
				if slices.Contains(c.dbs, db) {
					want = 0
				}
				got := keys(t, r, db, "")
				var n int
				r.View(func(tx store.Tx) error { n = tx.Len(db); return nil })
				if len(got) != want || n != want {
					t.Errorf("db %d: %d keys (DBSIZE %d) after the crash, want %d", db, len(got), n, want)
				}
			}
			set(t, r, c.dbs[0], "after", str("v", 0))
			r.Close()
			r = open(t, img, FsyncAlways, nil)
			if v, ok := get(t, r, c.dbs[0], "after"); !ok || v != "v" {
				t.Errorf("a write after the completed flush is gone at the next open (%q, %v)", v, ok)
			}
		})
	}
}

// TestFlushThatFailedIsNotCompletedLater: a flush whose DropPrefix fails
// answers the error and leaves no record of itself, so the next Open does
// not complete it over the writes acknowledged after it (KV-6).
func TestFlushThatFailedIsNotCompletedLater(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, FsyncAlways, nil)
	set(t, s, 1, "before", str("v", 0))
	s.dropErr = func() error { return errors.New("disk broken") }
	if _, err := s.Update(func(tx store.Tx) error { return tx.Flush(1) }); err == nil {
		t.Fatal("Flush succeeded with DropPrefix failing")
	}
	s.dropErr = nil
	set(t, s, 1, "after", str("v", 0))
	if err := s.bdb.Sync(); err != nil {
		t.Fatal(err)
	}
	img := copyDir(t, dir) // a kill -9 now
	r := open(t, img, FsyncAlways, nil)
	if v, ok := get(t, r, 1, "after"); !ok || v != "v" {
		t.Errorf("a write acknowledged after a failed FLUSHDB is gone after a crash (%q, %v)", v, ok)
	}
}

// A flush whose drop succeeded but whose record could not be deleted at
// first (a disk error) deletes it once the disk lets it, writes refused
// meanwhile; it then ends as any flush does (the flushed keys gone from
// reads too). Left on disk, the record would have the next Open drop the
// database again, over the writes acknowledged after the flush.
func TestFlushRecordDeletedDespiteADiskError(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, FsyncAlways, nil)
	set(t, s, 1, "before", str("v", 0))
	var fails atomic.Int32
	var refused atomic.Bool
	s.endErr = func() error {
		if fails.Add(1) <= 2 {
			return errors.New("disk broken")
		}
		refused.Store(s.WriteErr() != nil) // the state while it failed
		return nil
	}
	if _, err := s.Update(func(tx store.Tx) error { return tx.Flush(1) }); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	s.endErr = nil
	if n := fails.Load(); n != 3 {
		t.Errorf("the record's deletion was tried %d times, want 3", n)
	}
	if !refused.Load() {
		t.Error("writes were not refused while the record could not be deleted")
	}
	if err := s.WriteErr(); err != nil {
		t.Errorf("writes still refused after the record was deleted: %v", err)
	}
	if _, ok := get(t, s, 1, "before"); ok {
		t.Error("the flushed key is still read")
	}
	set(t, s, 1, "after", str("v", 0))
	if err := s.bdb.Sync(); err != nil {
		t.Fatal(err)
	}
	img := copyDir(t, dir) // a kill -9 now
	r := open(t, img, FsyncAlways, nil)
	if v, ok := get(t, r, 1, "after"); !ok || v != "v" {
		t.Errorf("a write acknowledged after the flush is gone after a crash (%q, %v)", v, ok)
	}
}
