package badgerdb

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oncekv/oncekv/store"
)

// crashImage opens a copy of dir taken now, as a crash would leave it.
func crashImage(tb testing.TB, dir string) *DB {
	tb.Helper()
	return open(tb, copyDir(tb, dir), FsyncEverysec, nil)
}

// TestWALTornTailIsDropped: a record cut short at the end of the log (the
// process died while writing it) is dropped at replay; every record before
// it is replayed.
func TestWALTornTailIsDropped(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions(dir)
	opts.SweepInterval, opts.GCInterval = 0, 0
	s, _ := openHeldBack(t, opts)
	for i := range 10 {
		set(t, s, 0, fmt.Sprintf("k%d", i), str("v", 0))
	}
	image := copyDir(t, dir)
	segs, err := walSegments(filepath.Join(image, walDirName))
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments %v %v", segs, err)
	}
	last := filepath.Join(image, walDirName, segName(segs[len(segs)-1]))
	fi, err := os.Stat(last)
	if err != nil {
		t.Fatal(err)
	}
	// Each set was one record (the test waited for each); cut the last
	// one in its middle.
	if err := os.Truncate(last, fi.Size()-3); err != nil {
		t.Fatal(err)
	}
	c := open(t, image, FsyncEverysec, nil)
	for i := range 9 {
		if _, ok := get(t, c, 0, fmt.Sprintf("k%d", i)); !ok {
			t.Fatalf("k%d lost at replay", i)
		}
	}
	if _, ok := get(t, c, 0, "k9"); ok {
		t.Fatal("the torn record was replayed")
	}
	if n := lenOf(t, c, 0); n != 9 {
		t.Fatalf("DBSIZE = %d, want 9", n)
	}
}

// TestWALSegmentsAreCheckpointed: the log moves to new segments as it
// grows and deletes the ones Badger holds, so it does not grow without
// bound; a crash image taken at any point still opens with every write.
func TestWALSegmentsAreCheckpointed(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions(dir)
	opts.SweepInterval, opts.GCInterval = 0, 0
	opts.WALSegmentSize = 4 << 10
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	defer s.Close()
	val := string(make([]byte, 200))
	for i := range 400 {
		set(t, s, 0, fmt.Sprintf("k%04d", i), str(val, 0))
	}
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	// One more round lets the applier pass the last full segment.
	set(t, s, 0, "last", str("x", 0))
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	segs, err := walSegments(filepath.Join(dir, walDirName))
	if err != nil {
		t.Fatal(err)
	}
	// 400 records of ~220 bytes make ~22 segments of 4 KiB; only the
	// ones not yet checkpointed may remain.
	if len(segs) > 3 {
		t.Fatalf("%d log segments left after checkpoints: %v", len(segs), segs)
	}
	c := crashImage(t, dir)
	if n := lenOf(t, c, 0); n != 401 {
		t.Fatalf("DBSIZE of the crash image = %d, want 401", n)
	}
}

// TestFlushIsNotUndoneByReplay: FLUSHDB drops keys behind Badger's back;
// a crash right after must not replay the flushed keys' writes from the
// log.
func TestFlushIsNotUndoneByReplay(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, FsyncEverysec, nil)
	for i := range 20 {
		set(t, s, 0, fmt.Sprintf("gone%d", i), str("v", 0))
	}
	if _, err := s.Update(func(tx store.Tx) error { return tx.Flush(0) }); err != nil {
		t.Fatal(err)
	}
	set(t, s, 0, "kept", str("v", 0))
	c := crashImage(t, dir)
	if n := lenOf(t, c, 0); n != 1 {
		t.Fatalf("DBSIZE after FLUSHDB and a crash = %d, want 1 (flushed keys came back)", n)
	}
	if _, ok := get(t, c, 0, "kept"); !ok {
		t.Fatal("the write after FLUSHDB was lost")
	}
}

// TestWALSyncDoesNotHoldUpAppends: under everysec the syncer's fsync,
// which can take tens of milliseconds on a real disk, runs while the
// committer goes on appending (and so acknowledging writes), as Redis's
// background fsync does; and a rotation meanwhile waits for it rather than
// closing the file under it.
func TestWALSyncDoesNotHoldUpAppends(t *testing.T) {
	w, err := openWAL(t.TempDir(), nil, walSegmentSize)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	inSync, release := make(chan struct{}), make(chan struct{})
	w.syncHook = func() { close(inSync); <-release }
	synced := make(chan error, 1)
	go func() { synced <- w.sync() }()
	<-inSync

	appended := make(chan error, 1)
	go func() { appended <- w.append([]op{{key: "k", val: []byte("v"), n: 1}}) }()
	select {
	case err := <-appended:
		if err != nil {
			close(release)
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("an append waited for the fsync in progress")
	}

	rotated := make(chan error, 1)
	go func() { _, err := w.rotate(); rotated <- err }()
	select {
	case <-rotated:
		t.Error("the log rotated (closing the file) during an fsync of it")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-synced; err != nil {
		t.Fatalf("sync: %v", err)
	}
	if err := <-rotated; err != nil {
		t.Fatalf("rotate: %v", err)
	}
}

// TestWALAbandonedSegmentSyncFailureIsReported: when an append fails and
// its segment cannot be cut back, the segment is given up; the syncer syncs
// only the next one, so a segment that could not be synced when given up
// must fail the next sync (everysec then refuses writes for a moment)
// rather than count as synced.
func TestWALAbandonedSegmentSyncFailureIsReported(t *testing.T) {
	w, err := openWAL(t.TempDir(), nil, walSegmentSize)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	if err := w.append([]op{{key: "a", val: []byte("1"), n: 1}}); err != nil {
		t.Fatal(err)
	}
	// A broken file: its write, truncate and sync all fail.
	w.f.Close()
	if err := w.append([]op{{key: "b", val: []byte("2"), n: 2}}); err == nil {
		t.Fatal("append to a broken file succeeded")
	}
	if err := w.sync(); err == nil {
		t.Fatal("sync succeeded though the given-up segment could not be synced")
	}
	if err := w.append([]op{{key: "b", val: []byte("2"), n: 2}}); err != nil {
		t.Fatalf("append to the next segment: %v", err)
	}
	if err := w.sync(); err != nil {
		t.Fatalf("sync of the next segment: %v", err)
	}
}

// A log that holds a write of a key longer than Badger takes (servers
// before store.MaxKeyLen logged them) opens: that write is dropped, with
// an error in the log, and the writes around it are replayed. Before,
// every start failed on it.
func TestReplayDropsKeysBadgerRefuses(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions(dir)
	opts.SweepInterval, opts.GCInterval = 0, 0
	s, _ := openHeldBack(t, opts)
	set(t, s, 0, "before", str("1", 0))
	long := string(dataKey(0, []byte(strings.Repeat("k", badgerMaxKey))))
	if err := s.wal.append([]op{{key: long, val: encodeValue(str("x", 0))}}); err != nil {
		t.Fatal(err)
	}
	set(t, s, 0, "after", str("2", 0))
	c := crashImage(t, dir)
	for k, want := range map[string]string{"before": "1", "after": "2"} {
		if got, ok := get(t, c, 0, k); !ok || got != want {
			t.Errorf("%s after replay: %q %v, want %q", k, got, ok, want)
		}
	}
}
