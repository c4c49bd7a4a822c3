package badgerdb

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// openTestWAL opens a log in dir, closed when the test ends.
func openTestWAL(tb testing.TB, dir string) *wal {
	tb.Helper()
	w, err := openWAL(dir, nil, walSegmentSize)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { w.close() })
	return w
}

// startZeroer turns the zeroer of w on and runs it until the test ends.
func startZeroer(tb testing.TB, w *wal) {
	tb.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.zeroLoop(stop)
	}()
	w.zeroOn()
	tb.Cleanup(func() {
		close(stop)
		wg.Wait()
	})
}

// zeroedUpTo waits until the zeroer has written zeros up to want in the
// open segment, and returns where they end.
func zeroedUpTo(tb testing.TB, w *wal, want int64) int64 {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		up, busy := w.zero.upTo, w.zero.busy
		w.mu.Unlock()
		if up >= want && !busy {
			return up
		}
		if time.Now().After(deadline) {
			tb.Fatalf("zeros up to %d, want %d", up, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// replayAll returns the values of the records in dir, in order.
func replayAll(tb testing.TB, dir string) []string {
	tb.Helper()
	var got []string
	if _, err := replayWAL(dir, walPos{}, func(rec []byte) error {
		return walkRecord(rec, func(_ bool, _, val []byte) { got = append(got, string(val)) })
	}); err != nil {
		tb.Fatal(err)
	}
	return got
}

// TestWALZerosAhead: under "always" the open segment holds zeros past its
// last record (so the syncs of appends commit no new size or blocks), and
// a replay of it, as after a crash, reads the records and stops at the
// zeros.
func TestWALZerosAhead(t *testing.T) {
	dir := t.TempDir()
	w := openTestWAL(t, dir)
	startZeroer(t, w)
	var want []string
	for i := range 100 {
		v := fmt.Sprintf("value-%03d", i)
		want = append(want, v)
		if err := w.append([]op{{key: "k", val: []byte(v), n: uint64(i + 1)}}); err != nil {
			t.Fatal(err)
		}
		if err := w.sync(); err != nil {
			t.Fatal(err)
		}
	}
	w.mu.Lock()
	end := w.size
	w.mu.Unlock()
	up := zeroedUpTo(t, w, end+walZeroAhead)

	b, err := os.ReadFile(filepath.Join(dir, segName(1)))
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != up {
		t.Fatalf("segment is %d bytes, want %d (records end at %d)", len(b), up, end)
	}
	if i := bytes.IndexFunc(b[end:], func(r rune) bool { return r != 0 }); i >= 0 {
		t.Fatalf("byte %d past the records is not zero", end+int64(i))
	}
	if got := replayAll(t, dir); !slices.Equal(got, want) {
		t.Fatalf("replayed %d records, want %d", len(got), len(want))
	}
}

// TestWALZeroerNeverOverwritesRecords: appends that reach the range the
// zeroer is writing wait until it is done, so zeros never land on a
// record. The zeroer is held in its first chunk (zeroHook) while records
// are appended through that chunk and past it; then every record replays
// intact, in order. Without the wait (waitZeroer) the zeros, written
// last, cut the log after the first record.
func TestWALZeroerNeverOverwritesRecords(t *testing.T) {
	dir := t.TempDir()
	w := openTestWAL(t, dir)
	claimed, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	w.zeroHook = func() {
		once.Do(func() {
			close(claimed)
			<-release
		})
	}
	startZeroer(t, w)
	<-claimed

	var want []string
	val := bytes.Repeat([]byte{'x'}, 48<<10)
	for i := range (walZeroChunk + 2*walZeroGap) / len(val) {
		v := fmt.Sprintf("%06d", i)
		want = append(want, v+string(val[len(v):]))
	}
	appended := make(chan error, 1)
	go func() {
		for i, v := range want {
			if err := w.append([]op{{key: "k", val: []byte(v), n: uint64(i + 1)}}); err != nil {
				appended <- err
				return
			}
		}
		appended <- nil
	}()
	select {
	case err := <-appended:
		close(release)
		t.Fatalf("appends crossed the range being zeroed without waiting (err %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	if err := w.sync(); err != nil {
		t.Fatal(err)
	}
	got := replayAll(t, dir)
	if len(got) != len(want) {
		t.Fatalf("replayed %d records, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("record %d differs", i)
		}
	}
}

// TestStoreZerosLogOnlyUnderAlways: the store runs the zeroer under
// "always" only; under "everysec" the log is exactly its records. Either
// way a crash image, taken before Badger has any of the writes, replays
// them all from the log.
func TestStoreZerosLogOnlyUnderAlways(t *testing.T) {
	for _, tc := range []struct {
		fsync Fsync
		zeros bool
	}{
		{FsyncAlways, true},
		{FsyncEverysec, false},
	} {
		t.Run(tc.fsync.String(), func(t *testing.T) {
			dir := t.TempDir()
			opts := DefaultOptions(dir)
			opts.Fsync = tc.fsync
			opts.SweepInterval, opts.GCInterval = 0, 0
			s, _ := openHeldBack(t, opts)
			const n = 20
			for i := range n {
				set(t, s, 0, fmt.Sprintf("k%d", i), str("v", 0))
			}
			if err := s.wal.sync(); err != nil {
				t.Fatal(err)
			}
			s.wal.mu.Lock()
			end, seg := s.wal.size, s.wal.seg
			s.wal.mu.Unlock()
			if tc.zeros {
				zeroedUpTo(t, s.wal, end+walZeroAhead)
			}
			fi, err := os.Stat(filepath.Join(s.wal.dir, segName(seg)))
			if err != nil {
				t.Fatal(err)
			}
			if zeroed := fi.Size() > end; zeroed != tc.zeros {
				t.Fatalf("segment %d bytes, records end at %d: zeros %v, want %v", fi.Size(), end, zeroed, tc.zeros)
			}
			c := crashImage(t, dir)
			if got := lenOf(t, c, 0); got != n {
				t.Fatalf("the crash image holds %d keys, want %d", got, n)
			}
		})
	}
}

// TestWALZeroerGivesUpOnASegmentItCannotWrite: a chunk that cannot be
// written (here the zeroer cannot open the segment, as with a full disk
// it could not write it) ends the zeros of that segment, so the zeroer
// does not retry at every append; appends go on; the next segment gets
// zeros again.
func TestWALZeroerGivesUpOnASegmentItCannotWrite(t *testing.T) {
	dir := t.TempDir()
	w := openTestWAL(t, dir)
	if err := os.Remove(filepath.Join(dir, segName(1))); err != nil {
		t.Fatal(err)
	}
	startZeroer(t, w)
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		failed, busy := w.zero.failed, w.zero.busy
		w.mu.Unlock()
		if failed == 1 && !busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the zeroer did not give up on the segment it cannot open")
		}
		time.Sleep(time.Millisecond)
	}
	for i := range 10 {
		if err := w.append([]op{{key: "k", val: []byte("v"), n: uint64(i + 1)}}); err != nil {
			t.Fatal(err)
		}
		w.mu.Lock()
		wants := w.wantsZeros()
		w.mu.Unlock()
		if wants {
			t.Fatal("the zeroer is asked again for a segment it gave up")
		}
	}
	if _, err := w.rotate(); err != nil {
		t.Fatal(err)
	}
	zeroedUpTo(t, w, walZeroAhead)
}
