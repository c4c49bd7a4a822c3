package badgerdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/oncekv/oncekv/store"
)

// openWithHook opens an unstarted store whose Badger writes fail while
// *failing is set, then starts it.
func openWithHook(tb testing.TB, dir string, fsync Fsync, failing *atomic.Bool, calls *atomic.Int64) *DB {
	tb.Helper()
	opts := DefaultOptions(dir)
	opts.Fsync = fsync
	opts.SweepInterval, opts.GCInterval = 0, 0
	s, err := Open(opts)
	if err != nil {
		tb.Fatal(err)
	}
	s.writeHook = func([]op) error {
		calls.Add(1)
		if failing.Load() {
			return fmt.Errorf("write vlog: %w", syscall.ENOSPC)
		}
		return nil
	}
	s.Start()
	tb.Cleanup(func() { s.Close() })
	return s
}

func trySet(s *DB, db int, key, val string) (store.Ticket, error) {
	return s.Update(func(tx store.Tx) error { return tx.Set(db, []byte(key), str(val, 0)) })
}

// waitWritable polls until the store accepts writes again.
func waitWritable(tb testing.TB, s *DB, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for s.writeError() != nil {
		if time.Now().After(deadline) {
			tb.Fatalf("still refusing writes after %v: %v", timeout, s.writeError())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDiskWriteFailure: while Badger's writes fail (a full disk), a write
// that could not be persisted is never reported durable (its ticket fails:
// the connection is closed, never +OK), later writes are refused with
// store.ErrWrite (MISCONF) naming the cause, reads keep working and see
// everything acknowledged before; once the disk accepts writes again the
// store recovers by itself, and after a reopen every acknowledged write is
// there.
func TestDiskWriteFailure(t *testing.T) {
	for _, fsync := range []Fsync{FsyncAlways, FsyncEverysec} {
		t.Run(fsync.String(), func(t *testing.T) {
			dir := t.TempDir()
			var failing atomic.Bool
			var calls atomic.Int64
			s := openWithHook(t, dir, fsync, &failing, &calls)
			acked := map[string]string{}
			for i := range 20 {
				k, v := fmt.Sprintf("before:%02d", i), fmt.Sprintf("v%d", i)
				set(t, s, 0, k, str(v, 0))
				acked[k] = v
			}
			if err := s.drainForTest(); err != nil {
				t.Fatal(err)
			}

			failing.Store(true)
			n := calls.Load()
			tk, err := trySet(s, 0, "during", "x")
			if err != nil {
				t.Fatalf("the write that meets the failure is staged before it is known: %v", err)
			}
			// Under both policies a write is acknowledged only once its log
			// record is written (and, under always, synced): one that
			// cannot be written is never acknowledged.
			if werr := tk.Wait(context.Background()); !errors.Is(werr, store.ErrWrite) {
				t.Fatalf("ticket of an unpersisted write under %s: %v, want ErrWrite", fsync, werr)
			}
			// Wait until the committer has met the failure.
			deadline := time.Now().Add(5 * time.Second)
			for s.writeError() == nil && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if calls.Load() == n || s.writeError() == nil {
				t.Fatalf("committer did not meet the failure (calls %d→%d)", n, calls.Load())
			}

			_, err = trySet(s, 0, "refused", "y")
			if !errors.Is(err, store.ErrWrite) || !strings.Contains(err.Error(), "no space left on device") {
				t.Fatalf("write while failing: %v, want ErrWrite naming the cause", err)
			}
			_, err = s.Update(func(tx store.Tx) error { _, err := tx.Delete(0, []byte("before:00")); return err })
			if !errors.Is(err, store.ErrWrite) {
				t.Fatalf("DEL while failing: %v, want ErrWrite", err)
			}
			if st := s.Stats(); st.LastError == nil {
				t.Fatal("Stats().LastError empty while failing")
			}
			for k, v := range acked {
				if got, ok := get(t, s, 0, k); !ok || got != v {
					t.Fatalf("read %s while failing = %q %v, want %q", k, got, ok, v)
				}
			}
			if _, ok := get(t, s, 0, "refused"); ok {
				t.Fatal("a refused write is visible")
			}
			// Retries keep going (and keep failing) while the disk is full.
			time.Sleep(300 * time.Millisecond)
			if s.writeError() == nil {
				t.Fatal("failure cleared while writes still fail")
			}

			failing.Store(false)
			waitWritable(t, s, 5*time.Second)
			set(t, s, 0, "after", str("z", 0))
			acked["after"] = "z"
			if got, ok := get(t, s, 0, "during"); fsync == FsyncEverysec && (!ok || got != "x") {
				t.Fatalf("the acknowledged everysec write made during the failure: %q %v", got, ok)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			r := open(t, dir, fsync, nil)
			for k, v := range acked {
				if got, ok := get(t, r, 0, k); !ok || got != v {
					t.Fatalf("after reopen %s = %q %v, want %q", k, got, ok, v)
				}
			}
		})
	}
}

// TestDiskReserve: below the free-space reserve the store refuses writes
// before Badger's memory-mapped files could hit a full disk (which would
// crash the process), with an error naming the directory and the figures.
func TestDiskReserve(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions(dir)
	opts.Fsync = FsyncAlways
	opts.SweepInterval, opts.GCInterval = 0, 0
	opts.MinFreeDisk = 1 << 62 // more than any disk has
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	defer s.Close()
	tk, err := trySet(s, 0, "k", "v")
	if err != nil {
		t.Fatal(err)
	}
	werr := tk.Wait(context.Background())
	if !errors.Is(werr, store.ErrWrite) {
		t.Fatalf("ticket below the reserve: %v", werr)
	}
	_, err = trySet(s, 0, "k2", "v")
	if !errors.Is(err, store.ErrWrite) || !strings.Contains(err.Error(), "min-free-disk") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("write below the reserve: %v", err)
	}
	t.Logf("refused: %v", err)
	if _, ok := get(t, s, 0, "missing"); ok {
		t.Fatal("read failed")
	}
}

// TestDiskFailureBackup: a backup needs the staged writes committed; while
// the disk fails it reports the failure instead of a partial snapshot.
func TestDiskFailureBackup(t *testing.T) {
	var failing atomic.Bool
	var calls atomic.Int64
	s := openWithHook(t, t.TempDir(), FsyncEverysec, &failing, &calls)
	set(t, s, 0, "a", str("1", 0))
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	failing.Store(true)
	if _, err := trySet(s, 0, "b", "2"); err != nil { // staged, not committed
		t.Fatal(err)
	}
	var sink strings.Builder
	if _, err := s.Backup(&sink); !errors.Is(err, store.ErrWrite) {
		t.Fatalf("backup while failing: %v", err)
	}
	failing.Store(false)
	waitWritable(t, s, 5*time.Second)
	sink.Reset()
	st, err := s.Backup(&sink)
	if err != nil || st.Keys != 2 {
		t.Fatalf("backup after recovery: %+v %v", st, err)
	}
}

// TestCloseAfterTheDirectoryIsDeleted: a store whose data directory is
// deleted while it runs still closes, with an error: Badger's flush of a
// memtable retries for good once it cannot create its table file, and
// Close (a server's shutdown) hung with it.
func TestCloseAfterTheDirectoryIsDeleted(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions(dir)
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	for i := range 100 {
		set(t, s, 0, fmt.Sprintf("k%d", i), str("v", 0))
	}
	if err := s.drainForTest(); err != nil { // Badger's memtable holds them
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err == nil || !strings.Contains(err.Error(), "was deleted") {
			t.Fatalf("Close: %v, want an error saying the directory was deleted", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close hangs once the data directory is deleted")
	}
}

// TestThinReserveWarns checks that a free-space reserve under its default
// (DefaultMinFreeDisk) is logged as a warning, at start and when it
// changes, and that the default or no check at all is not.
func TestThinReserveWarns(t *testing.T) {
	for _, tc := range []struct {
		name     string
		memtable int64
		reserve  int64 // at Open
		warns    bool
	}{
		{"40 MiB with 4 MiB memtables", 4 << 20, 40 << 20, true},
		{"100 MiB with 16 MiB memtables", 16 << 20, 100 << 20, true},
		{"the default", 16 << 20, 0, false},
		{"no check", 16 << 20, -1, false},
		{"the floor with 1 MiB memtables", 1 << 20, 64 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core, logs := observer.New(zap.WarnLevel)
			opts := DefaultOptions(t.TempDir())
			opts.Logger = zap.New(core)
			opts.MemTableSize = tc.memtable
			opts.MinFreeDisk = tc.reserve
			s := openOpts(t, opts)
			warned := func() int {
				return logs.FilterMessageSnippet("min-free-disk is under its default").Len()
			}
			want := 0
			if tc.warns {
				want = 1
			}
			if warned() != want {
				t.Fatalf("at Open: %d warnings, want %d", warned(), want)
			}
			for _, n := range []int64{0, -1, DefaultMinFreeDisk(tc.memtable), 1 << 40} {
				s.SetMinFreeDisk(n)
				if warned() != want {
					t.Fatalf("SetMinFreeDisk(%d) warned", n)
				}
			}
			s.SetMinFreeDisk(DefaultMinFreeDisk(tc.memtable) - 1)
			if warned() != want+1 {
				t.Fatalf("SetMinFreeDisk(default - 1): %d warnings in all, want %d", warned(), want+1)
			}
		})
	}
}
