package badgerdb

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/oncekv/oncekv/store"
)

// syncEvents is the order in which, while a test runs, Badger's .mem
// files are fsynced ("sync 00002.mem"), its directory is fsynced ("sync
// dir", with the .mem and .vlog files there then), syncBadger ends
// ("synced", with the .vlog files there then) and log segments are
// deleted ("remove 0000000000000001.wal").
type syncEvents struct {
	mu     sync.Mutex
	events []string
}

func (ev *syncEvents) add(e string) {
	ev.mu.Lock()
	ev.events = append(ev.events, e)
	ev.mu.Unlock()
}

func (ev *syncEvents) list() []string {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return slices.Clone(ev.events)
}

// recordSyncs records the syncs and deletions of the store in dir through
// the package's hooks, until the test ends. Call it before the store is
// opened (so that its goroutines start after the hooks are set, and the
// hooks are restored after its Close).
func recordSyncs(tb testing.TB, dir string) *syncEvents {
	tb.Helper()
	ev := &syncEvents{}
	syncFile, remove, synced, syncD := syncMemFile, removeSegment, badgerSynced, syncBadgerDir
	syncMemFile = func(f *os.File) error {
		ev.add("sync " + filepath.Base(f.Name()))
		return syncFile(f)
	}
	syncBadgerDir = func(d string) error {
		mems, _ := filesWith(d, memExt)
		vlogs, _ := filesWith(d, ".vlog")
		ev.add("sync dir " + strings.Join(append(mems, vlogs...), " "))
		return syncD(d)
	}
	removeSegment = func(path string) error {
		ev.add("remove " + filepath.Base(path))
		return remove(path)
	}
	badgerSynced = func() {
		names, _ := filesWith(dir, ".vlog") // an error shows as no file
		ev.add("synced " + strings.Join(names, " "))
	}
	tb.Cleanup(func() { syncMemFile, removeSegment, badgerSynced, syncBadgerDir = syncFile, remove, synced, syncD })
	return ev
}

// filesWith lists the names in dir that end with ext, sorted (Badger's
// names sort by number).
func filesWith(dir, ext string) ([]string, error) {
	names, err := readDirNames(dir)
	var out []string
	for _, name := range names {
		if strings.HasSuffix(name, ext) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, err
}

// mustFilesWith is filesWith for the test's goroutine.
func mustFilesWith(tb testing.TB, dir, ext string) []string {
	tb.Helper()
	names, err := filesWith(dir, ext)
	if err != nil {
		tb.Fatal(err)
	}
	return names
}

// holdMemtable opens a Badger iterator, which holds the memtables there
// now, until the test ends: once flushed, their .mem files stay until it
// closes, so that a test finds them whatever Badger's flusher does.
func holdMemtable(tb testing.TB, s *DB) {
	tb.Helper()
	txn := s.bdb.NewTransaction(false)
	it := txn.NewIterator(badger.IteratorOptions{SinceTs: math.MaxUint64})
	tb.Cleanup(func() {
		it.Close()
		txn.Discard()
	})
}

// TestCheckpointSyncsImmutableMemtables checks KV-6 across Badger's
// memtable rotations: Badger's Sync syncs only the active memtable's
// .mem file, and a full memtable's file waits unsynced until its flush,
// so a checkpoint that deleted log segments after Badger's Sync alone
// could lose, on a power loss, acknowledged writes only such a file held.
// Each checkpoint path must fsync every .mem file but the newest before
// it deletes a segment. The memtables are 1 MiB, and each is held by an
// iterator before the writes that fill it, so that their files are still
// there at the checkpoint.
func TestCheckpointSyncsImmutableMemtables(t *testing.T) {
	for _, tc := range []struct {
		name       string
		checkpoint func(tb testing.TB, s *DB)
	}{
		{"FLUSHDB's checkpointAll", func(tb testing.TB, s *DB) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if err := s.checkpointAll(); err != nil {
				tb.Fatal(err)
			}
		}},
		{"the applier's checkpoint", func(tb testing.TB, s *DB) {
			s.mu.Lock()
			defer s.mu.Unlock()
			seg, err := s.wal.rotate()
			if err != nil {
				tb.Fatal(err)
			}
			s.checkpoint(seg)
		}},
		{"Close", func(tb testing.TB, s *DB) {
			if err := s.Close(); err != nil {
				tb.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions(t.TempDir())
			opts.MemTableSize = 1 << 20
			opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
			ev := recordSyncs(t, opts.Dir)
			s := openOpts(t, opts)
			value := strings.Repeat("v", 64<<10) // kept in the memtable
			n := 0
			for range 2 {
				holdMemtable(t, s)
				mems := len(mustFilesWith(t, opts.Dir, memExt))
				for len(mustFilesWith(t, opts.Dir, memExt)) == mems {
					if n == 200 {
						t.Fatalf("%d writes of 64 KiB made no new memtable", n)
					}
					set(t, s, 0, "k"+strconv.Itoa(n), str(value, 0))
					n++
					if err := s.drainForTest(); err != nil {
						t.Fatal(err)
					}
				}
			}
			mems := mustFilesWith(t, opts.Dir, memExt)
			immutable := mems[:len(mems)-1]
			from := len(ev.list())
			tc.checkpoint(t, s)
			events := ev.list()
			removed := slices.IndexFunc(events[from:], func(e string) bool { return strings.HasPrefix(e, "remove ") })
			if removed < 0 {
				t.Fatalf("the checkpoint deleted no log segment; events %q", events[from:])
			}
			removed += from
			for _, mem := range immutable {
				if i := slices.Index(events, "sync "+mem); i < 0 || i > removed {
					t.Errorf("%s (immutable, of %q) not fsynced before the %s; events %q", mem, mems, events[removed], events)
				}
			}
		})
	}
}

// applierCheckpoint runs the applier's checkpoint: the log segment is
// rotated, and the finished one deleted once Badger is synced.
func applierCheckpoint(tb testing.TB, s *DB) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	seg, err := s.wal.rotate()
	if err != nil {
		tb.Fatal(err)
	}
	s.checkpoint(seg)
}

// TestCheckpointSyncsTheDirectoryOfNewFiles checks KV-6 across the files
// Badger creates: it fsyncs no directory after it creates a .mem or
// .vlog file, so on a filesystem where a file's fsync does not commit
// its name, a power loss after a checkpoint deleted the log segments
// could lose the new file, and the acknowledged writes in it. The
// directory must be fsynced after the new file is there and before the
// segment is deleted; with no new file, a checkpoint fsyncs no
// directory. Memtables and value log files are 1 MiB.
func TestCheckpointSyncsTheDirectoryOfNewFiles(t *testing.T) {
	defer func(n int64) { valueLogFileSize = n }(valueLogFileSize)
	valueLogFileSize = 1 << 20
	for _, tc := range []struct {
		name string
		// ext is the kind of file the writes make anew ("" none), and
		// size the length of each value (64 KiB stays in the memtable,
		// 100 KB goes to the value log).
		ext  string
		size int
	}{
		{"no new file", "", 10},
		{"a new memtable", memExt, 64 << 10},
		{"a new value log file", ".vlog", 100_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions(t.TempDir())
			opts.MemTableSize = 1 << 20
			opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
			ev := recordSyncs(t, opts.Dir)
			s := openOpts(t, opts)
			set(t, s, 0, "first", str("v", 0))
			if err := s.drainForTest(); err != nil {
				t.Fatal(err)
			}
			applierCheckpoint(t, s)
			value := str(strings.Repeat("v", tc.size), 0)
			var made []string
			for n := 0; n == 0 || tc.ext != "" && len(made) == 0; n++ {
				if n == 200 {
					t.Fatalf("%d writes of %d bytes made no new %s file", n, tc.size, tc.ext)
				}
				var before []string
				if tc.ext != "" {
					before = mustFilesWith(t, opts.Dir, tc.ext)
				}
				set(t, s, 0, "k"+strconv.Itoa(n), value)
				if err := s.drainForTest(); err != nil {
					t.Fatal(err)
				}
				if tc.ext != "" {
					for _, f := range mustFilesWith(t, opts.Dir, tc.ext) {
						if !slices.Contains(before, f) {
							made = append(made, f)
						}
					}
				}
			}
			from := len(ev.list())
			applierCheckpoint(t, s)
			events := ev.list()
			removed := slices.IndexFunc(events[from:], func(e string) bool { return strings.HasPrefix(e, "remove ") })
			if removed < 0 {
				t.Fatalf("the checkpoint deleted no log segment; events %q", events[from:])
			}
			removed += from
			if tc.ext == "" {
				if i := slices.IndexFunc(events[from:], func(e string) bool { return strings.HasPrefix(e, "sync dir") }); i >= 0 {
					t.Errorf("a checkpoint with no new file fsynced the directory: %q", events[from:])
				}
				return
			}
			for _, f := range made {
				if !slices.ContainsFunc(events[:removed], func(e string) bool {
					return strings.HasPrefix(e, "sync dir ") && slices.Contains(strings.Fields(e), f)
				}) {
					t.Errorf("the checkpoint deleted a log segment (%s) with no fsync of the directory since %s was made; events %q", events[removed], f, events)
				}
			}
		})
	}
}

// TestValueLogGCSyncsBeforeDeleting checks KV-6 across Badger's
// value-log GC: its rewrite writes a file's live values anew, unsynced,
// and deleted the file at once, so a power loss could keep the deletion
// and lose the values' new copies. Badger must be synced after the
// rewrite while the rewritten file is still there, and the file go after.
// Value log files are 1 MiB (100 KB values live there with 1 MiB
// memtables); database 1's values are flushed, which leaves their files
// garbage, and database 0's live values are in the files after them.
func TestValueLogGCSyncsBeforeDeleting(t *testing.T) {
	defer func(n int64) { valueLogFileSize = n }(valueLogFileSize)
	valueLogFileSize = 1 << 20
	opts := DefaultOptions(t.TempDir())
	opts.MemTableSize = 1 << 20
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
	opts.CacheSize = 0 // the reads after the GC read Badger
	ev := recordSyncs(t, opts.Dir)
	s := openOpts(t, opts)
	value := func(key string) store.Value { return str(strings.Repeat(key, 100_000/len(key)), 0) }
	for i := range 30 {
		set(t, s, 1, "garbage"+strconv.Itoa(i), value("garbage"+strconv.Itoa(i)))
		if i%3 == 0 {
			set(t, s, 0, "live"+strconv.Itoa(i), value("live"+strconv.Itoa(i)))
		}
	}
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(func(tx store.Tx) error { return tx.Flush(1) }); err != nil {
		t.Fatal(err)
	}
	before := mustFilesWith(t, opts.Dir, ".vlog")
	from := len(ev.list())
	s.collectValueLog()
	after := mustFilesWith(t, opts.Dir, ".vlog")
	var gone []string
	for _, f := range before {
		if !slices.Contains(after, f) {
			gone = append(gone, f)
		}
	}
	if len(gone) == 0 {
		t.Fatalf("the GC deleted no value log file of %q", before)
	}
	events := ev.list()[from:]
	for _, f := range gone {
		if !slices.ContainsFunc(events, func(e string) bool {
			return strings.HasPrefix(e, "synced ") && slices.Contains(strings.Fields(e), f)
		}) {
			t.Errorf("%s deleted by the GC without a sync of Badger while it was there; events %q", f, events)
		}
	}
	for i := 0; i < 30; i += 3 {
		key := "live" + strconv.Itoa(i)
		if got, ok := get(t, s, 0, key); !ok || got != string(value(key).Data) {
			t.Errorf("%s after the GC: %d bytes, found %v", key, len(got), ok)
		}
	}
}
