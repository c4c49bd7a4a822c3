package badgerdb

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"golang.org/x/sys/unix"
)

// trimTables hands the pages of Badger's table mappings back to the page
// cache: it unmaps them from this process (madvise MADV_DONTNEED), so that
// they no longer count in its resident memory, and the next read of such
// a page is a minor fault that maps it again from the page cache. Badger
// reads its tables (.sst) through shared, read-only file mappings, where
// MADV_DONTNEED drops no data. The effect is that of an engine that reads
// its tables with pread: the kernel's page cache holds the table pages,
// reclaimable under memory pressure, and the process's RSS is its own
// memory plus the table pages touched since the last trim.
//
// A mapping must not be unmapped and reused for other memory while it is
// trimmed, or MADV_DONTNEED would zero that memory. So only tables that
// stay mapped throughout are trimmed: those in Badger's levels both before
// and after an iterator is opened, which holds a reference to each of them
// (Badger unmaps a table only when its last reference goes).
//
// A trim costs a few milliseconds with a hundred tables (reading their
// list from Badger touches every table's index, which the trim then
// drops again), so a trim that finds the same table mappings as the last
// and no read of the tables since (lookups, iterators, value-log
// collections: tableReads) does nothing: an idle server with 3M keys
// spent 1.9% of a core on trims every second before. Badger's own reads
// of its tables count too: a compaction reads its input tables for as
// long as it runs, without a new mapping for a while (a harness reading
// after a 10M-key load found 437 MiB of table pages resident). They
// show as more resident file pages than the last trim left, which
// /proc/self/statm tells at the cost of one small read.
//
// It returns how many bytes of mappings it trimmed.
func (s *DB) trimTables() (int64, error) {
	reads := uint64(s.lookups.Load()) + s.tableReads.Load()
	file, err := residentFilePages()
	if err != nil {
		return 0, err
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	type mapping struct {
		id         uint64
		start, end uintptr
	}
	var tables []mapping
	var sig strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(maps))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		start, end, path, ok := parseMapsLine(sc.Bytes())
		if !ok || filepath.Ext(path) != ".sst" || filepath.Dir(path) != s.realDir {
			continue
		}
		id, err := strconv.ParseUint(filepath.Base(path[:len(path)-len(".sst")]), 10, 64)
		if err != nil {
			continue
		}
		tables = append(tables, mapping{id, start, end})
		fmt.Fprintf(&sig, "%d:%x-%x ", id, start, end)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if sig.String() == s.trimmedMaps && reads == s.trimmedReads && file <= s.trimmedFile {
		s.trimsIdle.Add(1)
		return 0, nil
	}
	// A table's mapping stays where it is while the table is open, and
	// a held table stays open: the ranges read above are the held
	// tables' ranges still.
	before := tableIDs(s.bdb)
	txn := s.bdb.NewTransaction(false)
	defer txn.Discard()
	it := txn.NewIterator(badger.IteratorOptions{})
	defer it.Close()
	held := tableIDs(s.bdb)
	for id := range held {
		if _, ok := before[id]; !ok {
			delete(held, id)
		}
	}
	var trimmed int64
	for _, m := range tables {
		if _, ok := held[m.id]; !ok {
			continue
		}
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_DONTNEED); e != 0 {
			return trimmed, e
		}
		trimmed += int64(m.end - m.start)
	}
	if file, err = residentFilePages(); err != nil {
		return trimmed, err
	}
	s.trimmedMaps, s.trimmedReads, s.trimmedFile = sig.String(), reads, file
	return trimmed, nil
}

// residentFilePages is how many pages of this process's memory are
// resident and backed by files (and shared memory): the third field of
// /proc/self/statm, which the kernel keeps counted.
func residentFilePages() (int64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0, fmt.Errorf("/proc/self/statm: %q", b)
	}
	return strconv.ParseInt(f[2], 10, 64)
}

// tableIDs is the set of the tables in Badger's levels.
func tableIDs(bdb *badger.DB) map[uint64]struct{} {
	tables := bdb.Tables()
	ids := make(map[uint64]struct{}, len(tables))
	for _, t := range tables {
		ids[t.ID] = struct{}{}
	}
	return ids
}

// parseMapsLine reads the address range and path of one line of
// /proc/self/maps ("start-end perms offset dev inode   path"). A file's
// path is all that follows the inode, from its leading '/'; no field
// before it holds a '/'.
func parseMapsLine(line []byte) (start, end uintptr, path string, ok bool) {
	slash := bytes.IndexByte(line, '/')
	sp := bytes.IndexByte(line, ' ')
	dash := bytes.IndexByte(line, '-')
	if slash < 0 || sp < 0 || dash < 0 || dash > sp {
		return 0, 0, "", false
	}
	a, err1 := strconv.ParseUint(string(line[:dash]), 16, 64)
	b, err2 := strconv.ParseUint(string(line[dash+1:sp]), 16, 64)
	if err1 != nil || err2 != nil || b <= a {
		return 0, 0, "", false
	}
	return uintptr(a), uintptr(b), string(line[slash:]), true
}
