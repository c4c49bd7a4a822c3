package badgerdb

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

// A log that holds a write of a value longer than Badger takes (servers
// before store.MaxValueLen logged them) opens: that write is dropped, with
// an error in the log, the key keeps what it held, and the writes around
// it are replayed. Before, every start failed on it. Badger's value limit
// is lowered to its smallest, 1 MiB, for the test.
func TestReplayDropsValuesBadgerRefuses(t *testing.T) {
	defer func(n int64) { valueLogFileSize = n }(valueLogFileSize)
	valueLogFileSize = 1 << 20
	dir := t.TempDir()
	opts := DefaultOptions(dir)
	opts.SweepInterval, opts.GCInterval = 0, 0
	s, _ := openHeldBack(t, opts)
	set(t, s, 0, "before", str("1", 0))
	set(t, s, 0, "big", str("small", 0))
	huge := encodeValue(str(strings.Repeat("v", 1<<20), 0))
	if err := s.wal.append([]op{{key: string(dataKey(0, []byte("big"))), val: huge}}); err != nil {
		t.Fatal(err)
	}
	set(t, s, 0, "after", str("2", 0))
	c := crashImage(t, dir)
	for k, want := range map[string]string{"before": "1", "big": "small", "after": "2"} {
		if got, ok := get(t, c, 0, k); !ok || got != want {
			t.Errorf("%s after replay: %q %v, want %q", k, got, ok, want)
		}
	}
}

// TestReplayCollapsesRewrites: a crash image whose log holds many
// rewrites of a few keys, none of them in Badger yet, reopens with the
// last write of each key (values, deadlines, deletions, counts), and the
// replay writes Badger one op per key and batch instead of every op.
func TestReplayCollapsesRewrites(t *testing.T) {
	defer func(k int) { replayKeys = k }(replayKeys)
	replayKeys = 32 // several batches: a key's last write may come in a later one
	dir := t.TempDir()
	opts := DefaultOptions(dir)
	opts.SweepInterval, opts.GCInterval = 0, 0
	s, _ := openHeldBack(t, opts) // nothing reaches Badger: all is replayed
	del := func(key string) {
		t.Helper()
		tk, err := s.Update(func(tx store.Tx) error { _, err := tx.Delete(0, []byte(key)); return err })
		if err == nil && tk != nil {
			err = tk.Wait(context.Background())
		}
		if err != nil {
			t.Fatalf("delete %s: %v", key, err)
		}
	}
	far := time.Now().Add(time.Hour).UnixMilli()
	const rounds = 60
	for i := range rounds {
		// hot's deadline changes every time: its expiry-index entries
		// come and go too.
		set(t, s, 0, "hot", str(fmt.Sprint(i), far+int64(i)))
		for k := range 5 {
			set(t, s, 0, fmt.Sprintf("k%d", k), str(fmt.Sprint(i*10+k), 0))
		}
		set(t, s, 0, "gone", str("x", far))
		del("gone")
		del("back")
		set(t, s, 0, "back", str(fmt.Sprint(i), 0))
	}
	c := crashImage(t, dir)
	want := map[string]string{"hot": fmt.Sprint(rounds - 1), "back": fmt.Sprint(rounds - 1)}
	for k := range 5 {
		want[fmt.Sprintf("k%d", k)] = fmt.Sprint((rounds-1)*10 + k)
	}
	for k, v := range want {
		if got, ok := get(t, c, 0, k); !ok || got != v {
			t.Errorf("%s after replay = %q %v, want %q", k, got, ok, v)
		}
	}
	if _, ok := get(t, c, 0, "gone"); ok {
		t.Error("gone, deleted last, is back after replay")
	}
	_, err := c.View(func(tx store.Tx) error {
		v, _, err := tx.Get(0, []byte("hot"))
		if v.ExpireAt != far+rounds-1 {
			t.Errorf("hot's deadline after replay = %d, want %d", v.ExpireAt, far+rounds-1)
		}
		if n, e := tx.Len(0), tx.Expiring(0); n != 7 || e != 1 {
			t.Errorf("after replay: %d keys, %d expiring; want 7 and 1", n, e)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	r := c.replayed
	if r.read < rounds*10 {
		t.Fatalf("replay read %d ops, want at least %d", r.read, rounds*10)
	}
	// Each batch holds up to replayKeys keys, each written once.
	if r.batches < 2 || r.written > r.batches*replayKeys || r.written*5 > r.read {
		t.Errorf("replay read %d ops and wrote %d in %d batches: rewrites not collapsed", r.read, r.written, r.batches)
	}
}

// BenchmarkReplay replays a log of 20,000 records of 50 ops each (1M
// SETs with 8-byte values, as redis-benchmark -r 100000 -P 16 would
// leave: 100k keys, each rewritten 10 times) into an open store: what a
// restart after a crash spends before its first command. ns/op is one
// whole replay.
func BenchmarkReplay(b *testing.B) {
	logDir := filepath.Join(b.TempDir(), "log")
	w, err := openWAL(logDir, nil, 1<<30)
	if err != nil {
		b.Fatal(err)
	}
	ops := make([]op, 50)
	for r := range 20000 {
		for i := range ops {
			n := (r*len(ops) + i) * 7919 % 100000 // a spread over the keys
			ops[i] = op{key: string(dataKey(0, []byte(fmt.Sprintf("key:%012d", n)))), val: []byte(fmt.Sprintf("%08d", r))}
		}
		if err := w.append(ops); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.close(); err != nil {
		b.Fatal(err)
	}
	opts := DefaultOptions(b.TempDir())
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
	s := openOpts(b, opts)
	b.ResetTimer()
	for b.Loop() {
		r := &replayer{s: s, at: make(map[string]int)}
		if _, err := replayWAL(logDir, walPos{}, r.add); err != nil {
			b.Fatal(err)
		}
		if err := r.flush(); err != nil {
			b.Fatal(err)
		}
		if r.stats.read != 20000*len(ops) {
			b.Fatalf("replayed %d ops", r.stats.read)
		}
	}
}

// TestWalkRecordAllOrNothing: a record whose payload does not parse
// (its checksum matched: written so by a bug, not torn) yields none of
// its ops, not the ones before the damage.
func TestWalkRecordAllOrNothing(t *testing.T) {
	good := []byte{0, 1, 'a', 1, 'x', 1, 1, 'b', 0} // set a=x, delete b
	var got []string
	walk := func(p []byte) error {
		got = got[:0]
		return walkRecord(p, func(del bool, k, v []byte) { got = append(got, fmt.Sprintf("%v %s %s", del, k, v)) })
	}
	if err := walk(good); err != nil || strings.Join(got, ",") != "false a x,true b " {
		t.Fatalf("good record: %q %v", got, err)
	}
	damaged := append(slices.Clone(good), 0, 9, 'c') // a key's length past the end
	if err := walk(damaged); err != errBadRecord || len(got) != 0 {
		t.Fatalf("damaged record: ops %q, err %v; want none and errBadRecord", got, err)
	}
}

// TestReplayStartsWhereBadgerIsSynced: once the applier has applied a
// round and synced Badger, it records the log position; a crash image
// then replays only the writes logged after it (those the applier had
// not applied), and opens with every write.
func TestReplayStartsWhereBadgerIsSynced(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions(dir)
	opts.SweepInterval, opts.GCInterval = 0, 0
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	var hold atomic.Bool
	release := make(chan struct{})
	s.applyHook = func([]op) {
		if hold.Load() {
			<-release
		}
	}
	s.Start()
	defer func() { close(release); s.Close() }()
	for i := range 500 {
		set(t, s, 0, fmt.Sprintf("a%d", i), str("v", 0))
	}
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	// The applier records the position after the round that drain
	// waited for.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		pos, err := s.loggedPosition()
		if err != nil {
			t.Fatal(err)
		}
		if pos.seg != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no log position recorded after an applied round")
		}
	}
	hold.Store(true) // the next writes stay in the log only
	for i := range 7 {
		set(t, s, 0, fmt.Sprintf("b%d", i), str("w", 0))
	}
	c := crashImage(t, dir)
	if r := c.replayed; r.read != 7 {
		t.Errorf("the replay read %d writes, want the 7 logged after the position", r.read)
	}
	if n := lenOf(t, c, 0); n != 507 {
		t.Fatalf("DBSIZE of the crash image = %d, want 507", n)
	}
	for _, k := range []string{"a0", "a499", "b0", "b6"} {
		if _, ok := get(t, c, 0, k); !ok {
			t.Errorf("%s lost", k)
		}
	}
}

func TestWALPosEncoding(t *testing.T) {
	for _, p := range []walPos{{}, {seg: 1, off: 0}, {seg: 1 << 40, off: 64 << 20}} {
		if got, ok := decodeWALPos(p.encode()); !ok || got != p {
			t.Errorf("%+v: decoded %+v %v", p, got, ok)
		}
	}
	for _, b := range [][]byte{nil, {0x80}, append(walPos{seg: 3, off: 9}.encode(), 0)} {
		if _, ok := decodeWALPos(b); ok {
			t.Errorf("%x decoded", b)
		}
	}
}

// TestPositionOutlivesTheLogItNamed: the recorded log position names a
// segment of an earlier run. After a clean restart (which leaves no
// segment) and a restore of a backup into a fresh directory, the new
// log's segments must still be replayed after a crash: their numbers
// come after the recorded one's, never below it.
func TestPositionOutlivesTheLogItNamed(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions(dir)
	opts.SweepInterval, opts.GCInterval = 0, 0
	opts.WALSegmentSize = 4 << 10 // the position names a segment past the first
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	val := string(make([]byte, 200))
	n := 0
	// Write and apply until a position past the first segment is
	// recorded (at most one a second).
	for deadline := time.Now().Add(10 * time.Second); ; n++ {
		set(t, s, 0, fmt.Sprintf("a%d", n), str(val, 0))
		if err := s.drainForTest(); err != nil {
			t.Fatal(err)
		}
		if pos, err := s.loggedPosition(); err != nil || pos.seg >= 2 {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no log position recorded past the first segment")
		}
		time.Sleep(20 * time.Millisecond)
	}
	n++
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, release := openHeldBack(t, opts) // the writes stay in the log only
	for i := range 5 {
		set(t, s2, 0, fmt.Sprintf("b%d", i), str("w", 0))
	}
	c := crashImage(t, dir)
	if got := lenOf(t, c, 0); got != n+5 {
		t.Fatalf("DBSIZE of the crash image after a clean restart = %d, want %d", got, n+5)
	}
	release()

	// A backup carries the position; a server restored from it starts
	// a log of its own.
	var buf bytes.Buffer
	if _, err := c.Backup(&buf); err != nil {
		t.Fatal(err)
	}
	rdir := filepath.Join(t.TempDir(), "restored")
	ropts := opts
	ropts.Dir = rdir
	if _, err := Restore(ropts, &buf); err != nil {
		t.Fatal(err)
	}
	r, _ := openHeldBack(t, ropts)
	for i := range 3 {
		set(t, r, 0, fmt.Sprintf("c%d", i), str("w", 0))
	}
	if got := lenOf(t, crashImage(t, rdir), 0); got != n+8 {
		t.Fatalf("DBSIZE of the restored server's crash image = %d, want %d", got, n+8)
	}
}

// TestCrashLosesWholeTransactions (KV-6): a log record holds whole
// transactions, so a crash, which may lose the last records, never keeps
// part of one. Here a transaction moves a key (RENAME's deletion, then
// its write) and wakes the logger between the two; a crash image taken
// then still has the key where it was, and the one taken after has it
// where it went. When the logger wrote the deletion alone, the first
// image had lost the key.
func TestCrashLosesWholeTransactions(t *testing.T) {
	dir := t.TempDir()
	opts := DefaultOptions(dir)
	opts.SweepInterval, opts.GCInterval = 0, 0
	s, _ := openHeldBack(t, opts)
	set(t, s, 0, "src", str("v", 0))
	var mid string
	if _, err := s.Update(func(tx store.Tx) error {
		if _, err := tx.Delete(0, []byte("src")); err != nil {
			return err
		}
		// Give the logger every chance to write what is staged: wake
		// it, and wait until it has logged more, or for 200 ms.
		before := s.logged.Load()
		s.poke()
		for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline) && s.logged.Load() == before; {
			time.Sleep(time.Millisecond)
		}
		mid = copyDir(t, dir)
		return tx.Set(0, []byte("dst"), str("v", 0))
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.waitFor(context.Background(), s.txDone.Load(), &s.logged); err != nil {
		t.Fatal(err)
	}
	after := copyDir(t, dir)
	for _, c := range []struct {
		image    string
		has, not string
	}{{mid, "src", "dst"}, {after, "dst", "src"}} {
		img := open(t, c.image, FsyncEverysec, nil)
		if _, ok := get(t, img, 0, c.has); !ok {
			t.Errorf("crash image lacks %s", c.has)
		}
		if _, ok := get(t, img, 0, c.not); ok {
			t.Errorf("crash image has %s", c.not)
		}
		if n := lenOf(t, img, 0); n != 1 {
			t.Errorf("crash image holds %d keys, want 1", n)
		}
	}
}

// TestLogRoundsHoldWholeTransactions (KV-6): under many concurrent
// transactions of several writes each, alone or in a hold, every log
// record holds each transaction's writes all or none.
func TestLogRoundsHoldWholeTransactions(t *testing.T) {
	s := open(t, t.TempDir(), FsyncEverysec, nil)
	var mu sync.Mutex
	var split []string
	s.writeHook = func(ops []op) error {
		// Each transaction writes keys t<i>/0, t<i>/1, t<i>/2 in order.
		seen := map[string]int{}
		for _, o := range ops {
			if i := strings.LastIndexByte(o.key, '/'); i > 0 {
				seen[o.key[:i]]++
			}
		}
		for tx, n := range seen {
			if n != 3 {
				mu.Lock()
				split = append(split, fmt.Sprintf("%s: %d of 3", tx, n))
				mu.Unlock()
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Half the writers go through a hold, as a pipeline does:
			// it keeps the lock across up to holdMax transactions.
			update := s.Update
			if w%2 == 1 {
				h := s.Hold()
				defer h.Release()
				update = h.Update
			}
			for i := range 50 {
				name := fmt.Sprintf("t%d-%d", w, i)
				if _, err := update(func(tx store.Tx) error {
					for j := range 3 {
						if err := tx.Set(0, []byte(fmt.Sprintf("%s/%d", name, j)), str("v", 0)); err != nil {
							return err
						}
						s.poke() // invite the logger in
						runtime.Gosched()
					}
					return nil
				}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(split) > 0 {
		t.Fatalf("%d log records held part of a transaction, e.g. %s", len(split), split[0])
	}
}

// TestBadgerGetsOnlySyncedWrites (KV-6): under everysec the applier syncs
// the log before it gives Badger a round, so Badger never holds a write
// that a power loss could take from the log (it would come back without
// the rest of its transaction, or newer than the log that replays
// around it). Here a round is applied at once, well within the syncer's
// second.
func TestBadgerGetsOnlySyncedWrites(t *testing.T) {
	s := open(t, t.TempDir(), FsyncEverysec, nil)
	for i := range 3 {
		set(t, s, 0, fmt.Sprintf("k%d", i), str("v", 0))
		if err := s.drainForTest(); err != nil {
			t.Fatal(err)
		}
		if c, sy := s.committed.Load(), s.synced.Load(); c == 0 || sy < c {
			t.Fatalf("Badger holds ops up to %d, the log is synced up to %d", c, sy)
		}
	}
}

// A FLUSHDB inside a transaction (EXEC) drains what the transaction
// staged before it, which the logger must then take although the
// transaction has not ended; otherwise the drain waits for ever.
func TestFlushInsideATransactionDrains(t *testing.T) {
	s := open(t, t.TempDir(), FsyncEverysec, nil)
	done := make(chan error, 1)
	go func() {
		_, err := s.Update(func(tx store.Tx) error {
			if err := tx.Set(0, []byte("before"), str("v", 0)); err != nil {
				return err
			}
			if err := tx.Flush(0); err != nil {
				return err
			}
			return tx.Set(0, []byte("after"), str("v", 0))
		})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a FLUSHDB inside a transaction did not return in 10 s")
	}
	if _, ok := get(t, s, 0, "before"); ok {
		t.Error("the write before FLUSHDB survived it")
	}
	if _, ok := get(t, s, 0, "after"); !ok {
		t.Error("the write after FLUSHDB is missing")
	}
}

// syncData reports the system call's error whichever way it makes it: a
// pipe cannot be synced (EINVAL).
func TestSyncDataReportsErrors(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, raw := range []bool{false, true} {
		if err := syncData(w, raw); err == nil {
			t.Errorf("raw=%v: syncing a pipe succeeded", raw)
		}
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []bool{false, true} {
		if err := syncData(f, raw); err != nil {
			t.Errorf("raw=%v: %v", raw, err)
		}
	}
	f.Close()
	for _, raw := range []bool{false, true} {
		if err := syncData(f, raw); err == nil {
			t.Errorf("raw=%v: syncing a closed file succeeded", raw)
		}
	}
}
