package badgerdb

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/oncekv/oncekv/internal/rawio"
)

// The write-ahead log is the store's own append-only log, as Redis's AOF
// is: each committer round appends one record holding the round's writes
// with one write(2), and under "always" one fsync, before any of them is
// acknowledged. Badger gets the writes afterwards, from a second goroutine,
// so neither its memtable insert nor its syncs (an msync of its memtable
// log and another of its value log per round) are on the acknowledgement
// path; and a process that dies after acknowledging a write under
// "everysec" has it in the kernel, as Redis does.
//
// The log is cut into segments. A segment whose writes are all in Badger,
// and Badger synced, is deleted (a checkpoint). Open replays the segments
// left, in order, into Badger: a record holds whole values and deletions,
// so replaying writes that Badger already has changes nothing.
//
// Record: u32 payload length, u32 CRC-32C of the payload, payload. Payload:
// for each write, a flag byte (1 = delete), uvarint key length, key,
// uvarint value length, value. A record that is cut short or fails its CRC
// ends its segment: it was never acknowledged (the append failed, or the
// process died while writing it).

const (
	walDirName = "wal"
	walExt     = ".log"
	// walSegmentSize is the default size after which the log moves to a
	// new segment, so the old one can be deleted once Badger has it. A
	// segment's worth of log since the last apply starts one (DB's
	// roundWritten), so it also bounds how many writes a round gathers,
	// and with them how many rewrites of a key collapse into one Badger
	// write: with 64 MiB, SET -d 256 over 100k keys
	// (redis-benchmark -r 100000 -P 16) applied a round every 220k writes,
	// about 2 writes per key, and Badger's flushes and compactions took
	// half of the server's CPU. With 256 MiB (and rounds that collapse
	// rewrites gathered up to three quarters of the pending bounds,
	// collapsedApply), 5.8-8.0 µs of server CPU per request against
	// 11.4-15.5, 184-248k requests/s against 107-141k (2-3M requests a
	// run, 2-3 rounds). The price: about two segments of log on disk,
	// and a replay after a crash under such a load of about a segment:
	// 1.1-1.16 s to the first GET (README, Restart).
	walSegmentSize = 256 << 20
	walHeader      = 8
)

// errBadRecord ends the replay of a segment.
var errBadRecord = errors.New("wal: damaged or incomplete record")

// wal is the log's open segment. mu serializes appends and rotations (the
// committer appends). A sync holds it only to find the open file: the
// syncer's once-a-second fsync, which can take tens of milliseconds, must
// not hold up the appends that acknowledge writes meanwhile, as Redis's
// background fsync does not hold up its AOF writes.
type wal struct {
	dir string
	max int64 // segment size
	mu  sync.Mutex
	// syncMu is held across a sync, and by rotate and close, so that the
	// file being synced is not closed under it.
	syncMu sync.Mutex
	f      *os.File
	seg    uint64 // number of the open segment
	size   int64  // bytes of the open segment that hold whole records
	// written counts the bytes of the records appended since the log
	// was opened, in every segment.
	written int64
	buf     []byte
	// lost is why a segment given up after a failed write could not be
	// synced (abandon), until sync reports it.
	lost error
	// syncHook, when set (by tests), runs in sync before the file is
	// synced.
	syncHook func()
	// syncs counts the fsyncs of the log (INFO), rawSyncs those made as
	// raw system calls (tests).
	syncs    atomic.Uint64
	rawSyncs atomic.Uint64
	// zero, zeroDone (on mu) and zeroKick are the zeroer's (walzero.go);
	// zeroHook, when set (by tests), runs before it writes a chunk.
	zero     zeroState
	zeroDone *sync.Cond
	zeroKick chan struct{}
	zeroHook func()
}

func segName(n uint64) string { return fmt.Sprintf("%016d%s", n, walExt) }

// walSegments lists the segment numbers in dir, oldest first.
func walSegments(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var segs []uint64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), walExt)
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(name, 10, 64); err == nil {
			segs = append(segs, n)
		}
	}
	slices.Sort(segs)
	return segs, nil
}

// replayWAL applies every whole record of the segments in dir, in order,
// with apply (the payload, valid during the call; walkRecord reads it),
// and returns the numbers of the segments it read. A record that apply
// finds damaged (errBadRecord) ends the replay, as a torn one does.
func replayWAL(dir string, from walPos, apply func(record []byte) error) ([]uint64, error) {
	segs, err := walSegments(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: list %s: %w", dir, err)
	}
	for _, n := range segs {
		var off int64
		switch {
		case n < from.seg:
			continue // Badger holds all of it
		case n == from.seg:
			off = from.off
		}
		if err := replaySegment(filepath.Join(dir, segName(n)), off, apply); err != nil {
			return nil, err
		}
	}
	return segs, nil
}

func replaySegment(path string, off int64, apply func(record []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	rd := bufio.NewReaderSize(f, 1<<20)
	var hdr [walHeader]byte
	var payload []byte
	for {
		if _, err := io.ReadFull(rd, hdr[:]); err != nil {
			return nil // the end, or a header cut short
		}
		size := binary.LittleEndian.Uint32(hdr[0:4])
		if size == 0 || size > 1<<31 {
			return nil
		}
		payload = slices.Grow(payload[:0], int(size))[:size]
		if _, err := io.ReadFull(rd, payload); err != nil {
			return nil
		}
		if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(hdr[4:8]) {
			return nil
		}
		if err := apply(payload); err != nil {
			if errors.Is(err, errBadRecord) {
				return nil // a damaged tail: nothing of it applied
			}
			return fmt.Errorf("wal: replay %s: %w", path, err)
		}
	}
}

// walkRecord calls fn with each op of a record's payload, in order, once
// the whole payload is known to parse (errBadRecord if not: none is
// called then). The slices passed to fn point into p.
func walkRecord(p []byte, fn func(del bool, key, val []byte)) error {
	for pass := range 2 {
		q := p
		for len(q) > 0 {
			del := q[0] == 1
			k, rest, ok := cutBytes(q[1:])
			if !ok {
				return errBadRecord
			}
			v, rest, ok := cutBytes(rest)
			if !ok {
				return errBadRecord
			}
			q = rest
			if pass == 1 {
				fn(del, k, v)
			}
		}
	}
	return nil
}

func cutBytes(p []byte) (b, rest []byte, ok bool) {
	n, w := binary.Uvarint(p)
	if w <= 0 || uint64(len(p)-w) < n {
		return nil, nil, false
	}
	return p[w : w+int(n)], p[w+int(n):], true
}

// openWAL starts a new segment after the ones listed in segs.
func openWAL(dir string, segs []uint64, max int64) (*wal, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	w := &wal{dir: dir, max: max, zeroKick: make(chan struct{}, 1)}
	w.zeroDone = sync.NewCond(&w.mu)
	next := uint64(1)
	if len(segs) > 0 {
		next = segs[len(segs)-1] + 1
	}
	if err := w.create(next); err != nil {
		return nil, err
	}
	return w, nil
}

// create opens segment n as the one appended to. Called with mu held (or
// before the log is shared).
func (w *wal) create(n uint64) error {
	f, err := os.OpenFile(filepath.Join(w.dir, segName(n)), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	// The new file's name must survive a crash before the records
	// written in it are acknowledged.
	if err := syncDir(w.dir); err != nil {
		f.Close()
		return fmt.Errorf("wal: %w", err)
	}
	w.f, w.seg, w.size = f, n, 0
	w.zero.upTo = 0
	if w.zero.on {
		w.kickZeroer()
	}
	return nil
}

// append writes ops as one record. On an error the segment is cut back to
// its last whole record (or, if that fails, the next append starts a new
// segment), so a retry never leaves a damaged record before good ones.
func (w *wal) append(ops []op) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		if err := w.create(w.seg + 1); err != nil {
			return err
		}
	}
	b := append(w.buf[:0], make([]byte, walHeader)...)
	for i := range ops {
		o := &ops[i]
		flag := byte(0)
		if o.del {
			flag = 1
		}
		b = append(b, flag)
		b = binary.AppendUvarint(b, uint64(len(o.key)))
		b = append(b, o.key...)
		b = binary.AppendUvarint(b, uint64(len(o.val)))
		b = append(b, o.val...)
	}
	binary.LittleEndian.PutUint32(b[0:4], uint32(len(b)-walHeader))
	binary.LittleEndian.PutUint32(b[4:8], crc32.Checksum(b[walHeader:], crcTable))
	if cap(b) <= 4<<20 {
		w.buf = b
	}
	w.waitZeroer(int64(len(b)))
	// Raw: a write the scheduler is told of wakes its monitor thread
	// (package rawio), and rounds came often enough to keep it polling.
	if _, err := rawio.WriteFile(w.f, b); err != nil {
		// Cutting the file back drops the zeros past the records too.
		w.zero.upTo = w.size
		if terr := w.f.Truncate(w.size); terr != nil {
			w.abandon()
		} else if _, serr := w.f.Seek(w.size, io.SeekStart); serr != nil {
			w.abandon()
		}
		return fmt.Errorf("wal: write: %w", err)
	}
	w.size += int64(len(b))
	w.written += int64(len(b))
	if w.wantsZeros() {
		w.kickZeroer()
	}
	return nil
}

// abandon gives up the open file after a failed append that could not be
// cut back to its last whole record; the next append starts a new
// segment. The file is synced first, as rotate does, since the syncer will
// only sync the new one; if that fails, the next sync reports it. Called
// with mu held.
func (w *wal) abandon() {
	if err := fdatasync(w.f); err != nil {
		w.lost = fmt.Errorf("wal: fsync of a segment given up after a failed write: %w", err)
	}
	w.f.Close()
	w.f = nil
}

// sync makes the open segment durable.
//
// It syncs what was appended before it was called (appends meanwhile may
// or may not be synced too). Records in the segments before the open one
// were synced when they were closed (rotate, abandon); if abandon could
// not, sync reports that instead, once.
func (w *wal) sync() error { return w.syncAs(false) }

// syncAs is sync, with a raw system call if raw is set (syncData).
func (w *wal) syncAs(raw bool) error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	w.mu.Lock()
	f, lost := w.f, w.lost
	w.lost = nil
	w.mu.Unlock()
	if lost != nil {
		return lost
	}
	if f == nil {
		return nil
	}
	if w.syncHook != nil {
		w.syncHook()
	}
	if err := syncData(f, raw); err != nil {
		return fmt.Errorf("wal: fsync: %w", err)
	}
	w.syncs.Add(1)
	if raw {
		w.rawSyncs.Add(1)
	}
	return nil
}

// full reports whether the open segment has reached its size.
func (w *wal) full() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size >= w.max
}

// rotate syncs and closes the open segment and starts the next one. It
// returns the number of the segment it closed.
func (w *wal) rotate() (uint64, error) {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	old := w.seg
	if w.f != nil {
		if err := w.f.Sync(); err != nil {
			return 0, fmt.Errorf("wal: fsync: %w", err)
		}
		w.f.Close()
		w.f = nil
	}
	if err := w.create(old + 1); err != nil {
		return 0, err
	}
	return old, nil
}

// removeSegment deletes a log segment: os.Remove, a variable for the
// tests, which record when segments go (badgersync_test.go).
var removeSegment = os.Remove

// remove deletes the segments up to and including n, which Badger holds
// and has synced (syncBadger).
func (w *wal) remove(upTo uint64) error {
	segs, err := walSegments(w.dir)
	if err != nil {
		return err
	}
	w.mu.Lock()
	cur := w.seg
	w.mu.Unlock()
	for _, n := range segs {
		if n > upTo || n >= cur {
			break
		}
		if err := removeSegment(filepath.Join(w.dir, segName(n))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("wal: %w", err)
		}
	}
	return nil
}

// walPos is a place in the log: the end of a record, offset off of
// segment seg. The zero walPos is before every segment.
type walPos struct {
	seg uint64
	off int64
}

func (p walPos) encode() []byte {
	b := binary.AppendUvarint(nil, p.seg)
	return binary.AppendUvarint(b, uint64(p.off))
}

func decodeWALPos(b []byte) (walPos, bool) {
	seg, n := binary.Uvarint(b)
	if n <= 0 {
		return walPos{}, false
	}
	off, m := binary.Uvarint(b[n:])
	if m <= 0 || n+m != len(b) || off > math.MaxInt64 {
		return walPos{}, false
	}
	return walPos{seg: seg, off: int64(off)}, true
}

// pos is where the log ends now.
func (w *wal) pos() walPos {
	w.mu.Lock()
	defer w.mu.Unlock()
	return walPos{seg: w.seg, off: w.size}
}

// total is how many bytes of records were appended since the log was
// opened.
func (w *wal) total() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written
}

func (w *wal) close() error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}
