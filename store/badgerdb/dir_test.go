package badgerdb

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// fillDir writes enough incompressible data through a store in dir that
// Badger flushes tables, then closes it cleanly. It returns the values
// written by key.
func fillDir(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	opts := DefaultOptions(dir)
	opts.SweepInterval, opts.GCInterval = 0, 0
	s, err := Open(opts)
	if err != nil {
		tb.Fatal(err)
	}
	s.Start()
	want := map[string]string{}
	for i := range 48 {
		v := make([]byte, 512<<10)
		rand.Read(v)
		k := "big" + string(rune('A'+i%26)) + string(rune('a'+i/26))
		set(tb, s, 0, k, str(string(v), 0))
		want[k] = string(v)
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	return want
}

func dirNames(tb testing.TB, dir string) []string {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func firstTable(tb testing.TB, dir string) string {
	tb.Helper()
	for _, n := range dirNames(tb, dir) {
		if strings.HasSuffix(n, ".sst") {
			return n
		}
	}
	tb.Fatalf("no .sst in %s: %v", dir, dirNames(tb, dir))
	return ""
}

// copyDir copies the regular files of src into a new directory.
func copyDir(tb testing.TB, src string) string {
	tb.Helper()
	dst := tb.TempDir()
	copyTree(tb, src, dst)
	return dst
}

func copyTree(tb testing.TB, src, dst string) {
	tb.Helper()
	for _, n := range dirNames(tb, src) {
		from, to := filepath.Join(src, n), filepath.Join(dst, n)
		if fi, err := os.Stat(from); err == nil && fi.IsDir() {
			if err := os.Mkdir(to, 0o755); err != nil {
				tb.Fatal(err)
			}
			copyTree(tb, from, to)
			continue
		}
		if err := copySparse(from, to); err != nil {
			tb.Fatal(err)
		}
	}
}

// copySparse copies a file, leaving holes where the source reads zeros
// (Badger's logs are large sparse files).
func copySparse(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer out.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	// Copy only the data extents where the system can say where they are
	// (SEEK_DATA, SEEK_HOLE).
	const seekData, seekHole = 3, 4
	if _, err := in.Seek(0, seekData); err == nil || errors.Is(err, syscall.ENXIO) {
		for pos := int64(0); pos < fi.Size(); {
			start, err := in.Seek(pos, seekData)
			if errors.Is(err, syscall.ENXIO) {
				break // only a hole is left
			}
			if err != nil {
				return err
			}
			end, err := in.Seek(start, seekHole)
			if err != nil {
				return err
			}
			if _, err := in.Seek(start, io.SeekStart); err != nil {
				return err
			}
			if _, err := io.Copy(io.NewOffsetWriter(out, start), io.LimitReader(in, end-start)); err != nil {
				return err
			}
			pos = end
		}
		return out.Truncate(fi.Size())
	}
	buf := make([]byte, 1<<20)
	var size int64
	for {
		n, err := io.ReadFull(in, buf)
		if n > 0 {
			if bytes.Count(buf[:n], []byte{0}) != n {
				if _, err := out.WriteAt(buf[:n], size); err != nil {
					return err
				}
			}
			size += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return err
		}
	}
	return out.Truncate(size)
}

// TestOwnerAndCorruptDirs: the store opens an empty, missing or own data
// directory, and refuses, naming the directory and what it found, a
// directory holding another program's files, another Badger database, a
// marker it does not understand, or a damaged Badger database, leaving it
// as it was: never starting empty over it.
func TestOwnerAndCorruptDirs(t *testing.T) {
	// One clean, filled oncekv directory that the corrupt cases copy.
	filled := t.TempDir()
	want := fillDir(t, filled)
	if !slices.ContainsFunc(dirNames(t, filled), func(n string) bool { return strings.HasSuffix(n, ".sst") }) {
		t.Fatalf("fill made no table: %v", dirNames(t, filled))
	}

	type tc struct {
		name string
		// setup returns the directory to open.
		setup func(t *testing.T) string
		// wantErr is nil for a directory that must open; found must
		// appear in the error text.
		wantErr error
		found   string
		// keep is checked after a successful open.
		keep bool
		// format is the marker's after a successful open (0: 2, the
		// format of a directory SWAPDB never swapped).
		format int
	}
	cases := []tc{
		{name: "missing dir", setup: func(t *testing.T) string { return filepath.Join(t.TempDir(), "new", "data") }},
		{name: "empty dir", setup: func(t *testing.T) string { return t.TempDir() }},
		{name: "mount point with lost+found", setup: func(t *testing.T) string {
			d := t.TempDir()
			os.Mkdir(filepath.Join(d, "lost+found"), 0o700)
			return d
		}},
		{name: "own dir", setup: func(t *testing.T) string { return copyDir(t, filled) }, keep: true},
		// KV-6: a kill -9 of the first start while it wrote the marker
		// (writeMarker: the temporary file, then the rename) leaves
		// the temporary file alone, empty or in part.
		{name: "kill -9 of the first start before the marker's temporary file was written", setup: func(t *testing.T) string {
			d := t.TempDir()
			os.WriteFile(filepath.Join(d, markerTmp), nil, 0o644)
			return d
		}},
		{name: "kill -9 of the first start before the marker was renamed", setup: func(t *testing.T) string {
			d := t.TempDir()
			os.WriteFile(filepath.Join(d, markerTmp), markerText(FormatVersion)[:10], 0o644)
			return d
		}},
		{name: "own dir after a crash (image of an open store)", setup: func(t *testing.T) string {
			src := copyDir(t, filled)
			opts := DefaultOptions(src)
			opts.SweepInterval, opts.GCInterval = 0, 0
			s, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			s.Start()
			set(t, s, 0, "after", str("crash", 0))
			if err := s.bdb.Sync(); err != nil {
				t.Fatal(err)
			}
			img := copyDir(t, src) // what a kill -9 leaves: .mem logs, LOCK
			s.Close()
			return img
		}, keep: true},
		{name: "foreign files", setup: func(t *testing.T) string {
			d := t.TempDir()
			os.WriteFile(filepath.Join(d, "notes.txt"), []byte("someone's notes"), 0o644)
			os.Mkdir(filepath.Join(d, "photos"), 0o755)
			return d
		}, wantErr: ErrForeignDir, found: "notes.txt"},
		{name: "another program's Badger database", setup: func(t *testing.T) string {
			d := t.TempDir()
			db, err := badger.Open(badger.DefaultOptions(d).WithLogger(nil))
			if err != nil {
				t.Fatal(err)
			}
			db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("theirs"), []byte("x")) })
			db.Close()
			return d
		}, wantErr: ErrForeignDir, found: "a Badger database"},
		{name: "another program's marker", setup: func(t *testing.T) string {
			d := copyDir(t, filled)
			os.WriteFile(filepath.Join(d, MarkerFile), []byte("something else\n"), 0o644)
			return d
		}, wantErr: ErrForeignDir, found: "something else"},
		{name: "format 1, read and raised to 2", setup: func(t *testing.T) string {
			d := copyDir(t, filled)
			os.WriteFile(filepath.Join(d, MarkerFile), markerText(formatStaleIndex), 0o644)
			return d
		}, keep: true},
		{name: "format 2 (no SWAPDB table), read and kept at 2", setup: func(t *testing.T) string {
			d := copyDir(t, filled)
			os.WriteFile(filepath.Join(d, MarkerFile), markerText(2), 0o644)
			return d
		}, keep: true},
		{name: "format 3 with no SWAPDB table (a build that always wrote 3), kept at 3", setup: func(t *testing.T) string {
			d := copyDir(t, filled)
			os.WriteFile(filepath.Join(d, MarkerFile), markerText(3), 0o644)
			return d
		}, keep: true, format: 3},
		{name: "newer format", setup: func(t *testing.T) string {
			d := copyDir(t, filled)
			os.WriteFile(filepath.Join(d, MarkerFile), []byte(markerHead+"\nformat 99\n"), 0o644)
			return d
		}, found: "format 99"},
		{name: "MANIFEST truncated inside its header", setup: func(t *testing.T) string {
			d := copyDir(t, filled)
			os.Truncate(filepath.Join(d, "MANIFEST"), 4)
			return d
		}, wantErr: ErrCorruptDir, found: "MANIFEST unreadable"},
		{name: "MANIFEST truncated to its header", setup: func(t *testing.T) string {
			d := copyDir(t, filled)
			os.Truncate(filepath.Join(d, "MANIFEST"), 8)
			return d
		}, wantErr: ErrCorruptDir, found: ".sst"},
		{name: "MANIFEST lost its last byte", setup: func(t *testing.T) string {
			d := copyDir(t, filled)
			fi, _ := os.Stat(filepath.Join(d, "MANIFEST"))
			os.Truncate(filepath.Join(d, "MANIFEST"), fi.Size()-1)
			return d
		}, wantErr: ErrCorruptDir, found: ".sst"},
		{name: "MANIFEST missing", setup: func(t *testing.T) string {
			d := copyDir(t, filled)
			os.Remove(filepath.Join(d, "MANIFEST"))
			return d
		}, wantErr: ErrCorruptDir, found: "no MANIFEST"},
		{name: "kill -9 while a compaction's tables were unrecorded and no memtable log was left", setup: func(t *testing.T) string {
			// KV-6: what a kill -9 leaves during FLUSHDB (DropPrefix) or
			// a shutdown: Badger flushed its memtables and deleted their
			// logs, then waited for a compaction whose tables are on disk
			// and not yet in the MANIFEST. The store was not closed
			// (RunningFile), so Badger's deleting them is its recovery.
			d := copyDir(t, filled)
			if slices.ContainsFunc(dirNames(t, d), func(n string) bool { return strings.HasSuffix(n, ".mem") }) {
				t.Fatalf("filled dir has a memtable log: %v", dirNames(t, d))
			}
			b, err := os.ReadFile(filepath.Join(d, firstTable(t, d)))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, "999999.sst"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, RunningFile), []byte(bootID()), 0o644); err != nil {
				t.Fatal(err)
			}
			return d
		}, keep: true},
		{name: "kill -9 while Badger deleted a flushed memtable's log", setup: func(t *testing.T) string {
			// KV-6: Badger deletes a log by truncating it to zero bytes,
			// closing and removing it; a kill -9 between the truncation
			// and the removal leaves an empty .mem file, which its Open
			// fails on (dgraph-io/badger#2207), and so did ours.
			d := copyDir(t, filled)
			if err := os.WriteFile(filepath.Join(d, "00099.mem"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, RunningFile), []byte(bootID()), 0o644); err != nil {
				t.Fatal(err)
			}
			return d
		}, keep: true},
		{name: "kill -9 while Badger deleted a value log", setup: func(t *testing.T) string {
			// The same for a value log file that GC deleted (or one
			// created and not yet sized).
			d := copyDir(t, filled)
			if err := os.WriteFile(filepath.Join(d, "000099.vlog"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, RunningFile), []byte(bootID()), 0o644); err != nil {
				t.Fatal(err)
			}
			return d
		}, keep: true},
		{name: "unrecorded table after a clean close", setup: func(t *testing.T) string {
			d := copyDir(t, filled)
			b, err := os.ReadFile(filepath.Join(d, firstTable(t, d)))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, "999999.sst"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			return d
		}, wantErr: ErrCorruptDir, found: "999999.sst"},
		{name: "table missing", setup: func(t *testing.T) string {
			d := copyDir(t, filled)
			os.Remove(filepath.Join(d, firstTable(t, d)))
			return d
		}, wantErr: ErrCorruptDir, found: "missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := c.setup(t)
			var before []string
			if _, err := os.Stat(dir); err == nil {
				before = dirNames(t, dir)
			}
			opts := DefaultOptions(dir)
			opts.SweepInterval, opts.GCInterval = 0, 0
			s, err := Open(opts)
			mustFail := c.wantErr != nil || c.found != ""
			if !mustFail {
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				defer s.Close()
				format := c.format
				if format == 0 {
					format = formatPlain
				}
				if b, err := os.ReadFile(filepath.Join(dir, MarkerFile)); err != nil || string(b) != string(markerText(format)) {
					t.Fatalf("marker = %q, %v; want format %d", b, err, format)
				}
				if c.keep {
					for k, v := range want {
						if got, ok := get(t, s, 0, k); !ok || got != v {
							t.Fatalf("%s lost after reopen (found %v, %d bytes)", k, ok, len(got))
						}
					}
				}
				set(t, s, 0, "k", str("v", 0))
				return
			}
			if err == nil {
				s.Close()
				t.Fatalf("opened %s (%v)", dir, before)
			}
			t.Logf("error: %v", err)
			if c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Errorf("error %v is not %v", err, c.wantErr)
			}
			if msg := err.Error(); !strings.Contains(msg, dir) || !strings.Contains(msg, c.found) {
				t.Errorf("error does not name the dir %s and %q: %v", dir, c.found, err)
			}
			if after := dirNames(t, dir); !slices.Equal(before, after) {
				t.Errorf("refused dir changed:\nbefore %v\n after %v", before, after)
			}
		})
	}
}

// TestOwnerMarkerWrittenFirst: a fresh directory is marked before Badger
// writes into it, so a crash during the first start leaves a directory
// that opens.
func TestOwnerMarkerWrittenFirst(t *testing.T) {
	dir := t.TempDir()
	if err := writeMarker(dir, formatPlain); err != nil {
		t.Fatal(err)
	}
	// Marker only: what a crash between the marker and Badger leaves.
	s := open(t, dir, FsyncAlways, nil)
	set(t, s, 0, "k", str("v", time.Now().Add(time.Hour).UnixMilli()))
	if v, ok := get(t, s, 0, "k"); !ok || v != "v" {
		t.Fatal("k missing")
	}
}

// TestOpenHeldDirChangesNothing: Open of a directory that another store
// holds open fails, and deletes none of its files first. A live Badger
// creates a memtable or value log before it sizes it, so an empty .mem or
// .vlog can be one it is writing, not one a crash left (KV-6).
func TestOpenHeldDirChangesNothing(t *testing.T) {
	for _, name := range []string{"000099.mem", "000099.vlog"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir, FsyncAlways, nil)
			set(t, s, 0, "k", str("v", 0))
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			opts := DefaultOptions(dir)
			opts.SweepInterval, opts.GCInterval = 0, 0
			if other, err := Open(opts); err == nil {
				other.Close()
				t.Fatal("a second store opened a directory the first holds")
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("the live store's empty %s is gone: %v", name, err)
			}
		})
	}
}
