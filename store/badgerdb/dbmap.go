package badgerdb

import (
	"encoding/binary"
	"fmt"

	"github.com/oncekv/oncekv/store"
)

// SWAPDB swaps two databases by swapping them in a table, not by moving
// their keys: the table maps each database a client names (logical) to
// the number its keys are stored under (physical). Everything below the
// transaction's methods (keys, the expiry index, counts, the sweeper,
// FLUSHDB's record) works with physical numbers; the methods map the
// number they are given once, at their start. The table is one of the
// store's own records, written through the log as any write, so a swap
// is as durable as a write acknowledged with it, and a crash keeps it or
// loses it whole, with the writes after it.
//
// The identity table is no table (nil): a store that never swapped pays
// one atomic load per call, nothing more.

// dbMapKey is the record of the table: one big-endian uint16 per
// database, its physical number.
var dbMapKey = metaKey("\x00store:dbmap")

// dbMap is the table and its inverse.
type dbMap struct {
	phys, logical []uint16
}

// identity reports whether m maps every database to itself (swapped,
// then swapped back).
func (m *dbMap) identity() bool {
	for i, p := range m.phys {
		if int(p) != i {
			return false
		}
	}
	return true
}

// physDB checks a database number and maps it to the one its keys are
// stored under.
func (t *tx) physDB(db int) (int, error) {
	if err := t.checkDB(db); err != nil {
		return 0, err
	}
	if m := t.s.dbMap.Load(); m != nil {
		return int(m.phys[db]), nil
	}
	return db, nil
}

// logicalDB is the database a client names for physical database db.
func (s *DB) logicalDB(db int) int {
	if m := s.dbMap.Load(); m != nil && db < len(m.logical) {
		return int(m.logical[db])
	}
	return db
}

var _ store.DBSwapper = (*tx)(nil)

// SwapDBs swaps databases a and b whole (store.DBSwapper).
func (t *tx) SwapDBs(a, b int) error {
	if !t.write {
		return store.ErrReadOnly
	}
	if err := t.checkDB(a); err != nil {
		return err
	}
	if err := t.checkDB(b); err != nil {
		return err
	}
	if a == b {
		return nil
	}
	if err := t.s.raiseFormat(formatSwapTable, "swapdb"); err != nil {
		return err
	}
	n := len(t.s.counts)
	m := &dbMap{phys: make([]uint16, n), logical: make([]uint16, n)}
	if old := t.s.dbMap.Load(); old != nil {
		copy(m.phys, old.phys)
	} else {
		for i := range m.phys {
			m.phys[i] = uint16(i)
		}
	}
	m.phys[a], m.phys[b] = m.phys[b], m.phys[a]
	rec := make([]byte, 0, 2*n)
	for i, p := range m.phys {
		m.logical[p] = uint16(i)
		rec = binary.BigEndian.AppendUint16(rec, p)
	}
	t.stage(dbMapKey, rec, false, false)
	t.s.dbMap.Store(m)
	return nil
}

// formatRaised, when set (by tests), runs once raiseFormat has made the
// marker name a higher format, before the write that needs it is staged.
var formatRaised func()

// raiseFormat makes the directory's marker name format to (or a higher
// one), durably (written to a temporary file, synced, renamed, the
// directory synced), before what needs it is staged (what): SWAPDB's
// table (formatSwapTable), which a build that knows only format 2 would
// ignore, showing each swapped database's keys under the other's
// number; an object (formatObjects), which a build that knows only
// format 3 would misread. Only the first such write of a directory does
// it. Call it with s.mu held (a write transaction).
func (s *DB) raiseFormat(to int, what string) error {
	if s.format >= to {
		return nil
	}
	if err := writeMarker(s.opts.Dir, to); err != nil {
		return fmt.Errorf("%s: raise the data format to %d: %w", what, to, err)
	}
	s.format = to
	if formatRaised != nil {
		formatRaised()
	}
	return nil
}

// loadDBMap reads the table at Open, and reports whether there is one.
// A table of more databases than the store has now is kept when the
// databases the store has are all mapped among themselves, and refused
// otherwise (their keys would be out of reach); a table of fewer is
// extended with the identity.
func (s *DB) loadDBMap() (bool, error) {
	rec, found, err := s.readRecord(dbMapKey)
	if err != nil || !found {
		return false, err
	}
	if len(rec)%2 != 0 {
		return true, fmt.Errorf("damaged SWAPDB table (%d bytes)", len(rec))
	}
	stored := make([]uint16, len(rec)/2)
	seen := make(map[uint16]bool, len(stored))
	for i := range stored {
		p := binary.BigEndian.Uint16(rec[2*i:])
		if int(p) >= len(stored) || seen[p] {
			return true, fmt.Errorf("damaged SWAPDB table")
		}
		seen[p] = true
		stored[i] = p
	}
	n := s.opts.Databases
	m := &dbMap{phys: make([]uint16, n), logical: make([]uint16, n)}
	identity := true
	for i := range m.phys {
		p := uint16(i)
		if i < len(stored) {
			p = stored[i]
		}
		if int(p) >= n {
			return true, fmt.Errorf("SWAPDB moved the keys of database %d to %d: start with at least %d databases", i, p, len(stored))
		}
		m.phys[i] = p
		m.logical[p] = uint16(i)
		identity = identity && int(p) == i
	}
	if !identity {
		s.dbMap.Store(m)
	}
	return true, nil
}
