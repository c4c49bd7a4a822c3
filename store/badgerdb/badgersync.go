package badgerdb

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"
)

// syncBadger makes every write Badger has applied so far durable: what
// the store needs before it deletes log segments, or records a log
// position, that hold those writes (KV-6). Every such place calls it,
// never Badger's Sync alone.
//
// Badger's Sync (v4.9.6) syncs only its active memtable's log (the
// newest .mem file) and its current value log file. A full memtable is
// made immutable and handed to the flusher without a sync of its .mem
// file, which stays dirty in the page cache until the memtable is
// flushed to a table (tables are synced) and the file deleted: writes
// applied before the Sync may be in such a file only. So after Badger's
// Sync, syncBadger fsyncs every .mem file of the directory but the
// newest (syncImmutableMemtables). Older value log files need nothing:
// Badger truncates a value log file to its end when it moves on to the
// next, and that truncation syncs it first.
//
// Nor does Badger fsync its directory after it creates a .mem or .vlog
// file: on a filesystem where a file's fsync does not commit its
// directory entry, a power loss could lose the file's name, and the
// writes in it. So syncBadger also fsyncs the directory whenever a .mem
// or .vlog file is there that was not at its last fsync of it
// (syncNewNames): once per new file, not per checkpoint.
//
// It runs at checkpoints, not per write: after the applier finishes a
// log segment (checkpoint: one per WALSegmentSize written), at most once
// a second when the applier records the log position (recordPosition),
// for FLUSHDB / FLUSHALL (checkpointAll, dropDBs, endDrop), after a
// value-log GC rewrite (rewriteValueLog), and at Open and Close.
func (s *DB) syncBadger() error {
	if err := s.bdb.Sync(); err != nil {
		return err
	}
	names, err := readDirNames(s.opts.Dir)
	if err != nil {
		return fmt.Errorf("sync Badger: %w", err)
	}
	s.memMu.Lock()
	err = errors.Join(s.syncImmutableMemtables(names), s.syncNewNames(names))
	s.memMu.Unlock()
	if badgerSynced != nil {
		badgerSynced()
	}
	return err
}

// syncMemFile makes the data of one of Badger's .mem files durable. A
// variable for the tests, which record what it syncs.
//
// Badger writes a .mem file through a shared, writable mapping; on Linux
// an fsync or fdatasync of any descriptor of the file writes back its
// dirty pages, those dirtied through a mapping included (they are the
// file's page cache pages). fdatasync is enough: the file's size was set
// when it was created, and fdatasync writes a size change too.
var syncMemFile = fdatasync

// badgerSynced, when set (by tests), is called at the end of each
// syncBadger.
var badgerSynced func()

// syncBadgerDir fsyncs Badger's directory. A variable for the tests,
// which record when it runs.
var syncBadgerDir = syncDir

// syncNewNames fsyncs Badger's directory if names (its listing, made
// after Badger's Sync) holds a .mem or .vlog file that was not there at
// the last fsync of the directory: Badger creates them without one, so
// their names, and the writes in them, could be lost on a power loss
// where the file's own fsync does not commit its directory entry. The
// files' data are synced by Badger's Sync and syncImmutableMemtables. A
// file created after the listing is left to the next syncBadger, which
// lists it (it holds no write applied before this one began). Call it
// with memMu held.
func (s *DB) syncNewNames(names []string) error {
	now := make(map[string]bool, len(s.dirSynced))
	news := false
	for _, name := range names {
		if !strings.HasSuffix(name, memExt) && !strings.HasSuffix(name, vlogExt) {
			continue
		}
		now[name] = true
		news = news || !s.dirSynced[name]
	}
	if !news {
		return nil
	}
	if err := syncBadgerDir(s.opts.Dir); err != nil {
		return fmt.Errorf("sync Badger's directory: %w", err)
	}
	s.dirSynced = now
	return nil
}

// syncImmutableMemtables fsyncs each .mem file of Badger's directory
// but the newest, once: an older file belongs to an immutable memtable,
// which no write reaches any more (or to one already flushed, whose
// file is about to go). The newest is the active memtable's, which
// Badger's Sync, called before, synced.
//
// If a memtable is made immutable between Badger's Sync and the listing
// here, the newest file listed is the new active one, which holds only
// writes applied after that Sync began, and the one Badger synced is
// synced again here: every write applied before syncBadger was called is
// in a file synced by one or the other. A file deleted meanwhile was
// flushed to a table, synced, and needs nothing.
//
// The fids (the number a .mem file is named with) of the files synced
// are remembered, so that each immutable file is synced once, however
// many checkpoints it waits through: Badger numbers its memtables in
// increasing order and never writes to an older one again. Fids whose
// files are gone are forgotten. names is the directory's listing, made
// after Badger's Sync. Call it with memMu held.
func (s *DB) syncImmutableMemtables(names []string) error {
	var fids []uint64
	for _, name := range names {
		num, ok := strings.CutSuffix(name, memExt)
		if !ok {
			continue
		}
		fid, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			continue
		}
		fids = append(fids, fid)
	}
	newest := uint64(0)
	for _, fid := range fids {
		newest = max(newest, fid)
	}
	synced := make(map[uint64]bool, len(fids))
	var errs []error
	for _, fid := range fids {
		if fid == newest {
			continue
		}
		if s.memSynced[fid] {
			synced[fid] = true
			continue
		}
		err := syncMemtable(filepath.Join(s.opts.Dir, memName(fid)))
		switch {
		case err == nil:
			synced[fid] = true
		case errors.Is(err, os.ErrNotExist):
			// Flushed to a table meanwhile.
		default:
			errs = append(errs, fmt.Errorf("sync Badger's memtable %s: %w", memName(fid), err))
		}
	}
	s.memSynced = synced
	return errors.Join(errs...)
}

// memExt is the extension of Badger's memtable logs, vlogExt of its
// value log files.
const (
	memExt  = ".mem"
	vlogExt = ".vlog"
)

// memName is the name of Badger's memtable log fid (as Badger names it).
func memName(fid uint64) string { return fmt.Sprintf("%05d%s", fid, memExt) }

// syncMemtable fsyncs the file at path. Badger deleting it meanwhile
// does no harm: the descriptor keeps the file until it is closed.
func syncMemtable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = syncMemFile(f)
	return errors.Join(err, f.Close())
}

// readDirNames lists the names in dir, unsorted.
func readDirNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	return names, errors.Join(err, d.Close())
}

// collectValueLog garbage-collects Badger's value log, one file after
// another, while Badger finds one worth rewriting.
func (s *DB) collectValueLog() bool {
	s.tableReads.Add(1) // it looks each entry up in the tables
	for s.rewriteValueLog() {
	}
	return true
}

// rewriteValueLog has Badger rewrite one value log file, and reports
// whether it did.
//
// Badger's rewrite writes the file's live values anew, unsynced (the
// store's Badger does not sync its writes), then deletes the file at
// once, unless an iterator is open: then the deletion waits for the
// last open iterator's Close. A power loss after the deletion reached
// the disk but before the values' new copies did would lose them
// (KV-6). So an iterator is held open across the rewrite, Badger is
// synced (syncBadger: the new copies are in the current value log file
// and in memtables), and only then is the iterator closed, which deletes
// the file (or leaves that to the last other iterator open, later
// still).
//
// The iterator is never read. It picks no table (no table holds a
// version after math.MaxUint64), so it holds no table and reads none:
// no tableReads to count for trimTables. It does hold the memtables open
// at its start (their memory and .mem files stay until it closes) and
// its transaction's read timestamp (compactions keep the versions
// written since): both for one rewrite only, as the rewrite itself
// already holds back the discarding of versions while it runs. It is
// held per file rather than across the loop so that each rewritten
// file's space comes back as soon as it is synced, however many files a
// collection rewrites. It runs on the collection's goroutine, which
// Close waits for before it closes Badger.
func (s *DB) rewriteValueLog() bool {
	txn := s.bdb.NewTransaction(false)
	defer txn.Discard()
	it := txn.NewIterator(badger.IteratorOptions{SinceTs: math.MaxUint64})
	defer it.Close()
	if err := s.bdb.RunValueLogGC(0.5); err != nil {
		return false
	}
	if err := s.syncBadger(); err != nil {
		// The disk fails: the file goes anyway (the iterator cannot stay
		// open for good), but the collection stops here.
		s.log.Warn("value-log GC: could not sync Badger after a rewrite", zap.Error(err))
		return false
	}
	return true
}
