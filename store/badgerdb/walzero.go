package badgerdb

import (
	"os"
	"path/filepath"
)

// Zeroing the log ahead of its end, under appendfsync "always".
//
// An fdatasync after an append that grew the file must also commit the
// file's new size and the blocks allocated for it to the filesystem's
// journal. Measured here on ext4 (1.5 KB appends, each followed by
// fdatasync): 195–260 µs and 125–145 µs of CPU per call, against
// 135–143 µs and 80–95 µs when the blocks were written (with zeros) and
// synced before. Under "always" that is a sync per round, on the path of
// every acknowledgement; Redis's AOF grows with each write and pays it.
// With the zeros, redis-benchmark -c 50 (unpipelined, fresh servers)
// did 6-25% more SETs, INCRs and SET -d 256 a second.
//
// So a goroutine of the log's (zeroLoop) writes zeros ahead of the end of
// the open segment's records, a chunk at a time, and syncs them. Appends
// then land in blocks that exist already, and their syncs flush data
// only. A replay stops at the first zero header (a record of size 0), so
// the zeros after the last record read as the end of the segment, as
// the end of the file did. Under "everysec" the store runs no zeroer:
// one sync a second gains little from it, and writing the zeros cost
// pipelined writes (-P 16) 5-15% of their rate.
//
// The zeroer never writes where a record is or may be written meanwhile:
// it claims a range past the records' end, under mu, and an append that
// would reach into the range being zeroed waits for it (the zeroer keeps
// walZeroGap ahead of the appends, so in practice none does). It writes
// and syncs through its own descriptor: Linux reports a writeback error to
// each open file description once, so a sync of the zeroer's cannot take
// the report of an error in the log's records from the log's own sync.
const (
	// walZeroChunk is how much the zeroer writes (and syncs) at a time.
	walZeroChunk = 1 << 20
	// walZeroAhead is how far past the records' end it keeps zeros.
	walZeroAhead = 4 << 20
	// walZeroGap is how far past the records' end a chunk starts at
	// least, so that the appends of the next rounds need not wait for it.
	walZeroGap = 64 << 10
)

// zeroes is what the zeroer writes. Never written, its pages stay the
// kernel's shared zero page.
var zeroes [walZeroChunk]byte

// zeroState is the zeroer's part of the wal, under its mu.
type zeroState struct {
	on bool // zeroOn was called: a zeroer runs
	// upTo is where the zeros written (and synced) in the open segment
	// end; below it, past the records' end, the file holds zeros.
	upTo int64
	// busy is set while the zeroer writes the segment seg from from on.
	busy bool
	seg  uint64
	from int64
	// failed is the last segment a chunk could not be written to (a full
	// disk): it gets no more zeros, which would only eat the space left.
	failed uint64
}

// zeroOn tells the log that a zeroer runs (zeroLoop), and asks it for
// zeros in the open segment.
func (w *wal) zeroOn() {
	w.mu.Lock()
	w.zero.on = true
	w.mu.Unlock()
	w.kickZeroer()
}

// kickZeroer wakes the zeroer.
func (w *wal) kickZeroer() {
	select {
	case w.zeroKick <- struct{}{}:
	default:
	}
}

// wantsZeros reports whether the open segment needs another chunk of
// zeros. Called with mu held.
func (w *wal) wantsZeros() bool {
	return w.zero.on && w.f != nil && w.zero.failed != w.seg &&
		w.zero.upTo < w.size+walZeroAhead && w.zero.upTo < w.max
}

// waitZeroer waits until the zeroer no longer writes where n bytes
// appended now would go. Called with mu held.
func (w *wal) waitZeroer(n int64) {
	for w.zero.busy && w.zero.seg == w.seg && w.size+n > w.zero.from {
		w.zeroDone.Wait()
	}
}

// zeroLoop writes zeros ahead of the open segment's records whenever an
// append or a new segment asks for them (kickZeroer), until stop.
func (w *wal) zeroLoop(stop <-chan struct{}) {
	var zf *os.File // the zeroer's descriptor of segment zseg
	var zseg uint64
	defer func() {
		if zf != nil {
			zf.Close()
		}
	}()
	for {
		select {
		case <-w.zeroKick:
		case <-stop:
			return
		}
		for w.zeroChunk(&zf, &zseg) {
		}
	}
}

// zeroChunk writes one chunk of zeros if the open segment wants one, and
// reports whether it did.
func (w *wal) zeroChunk(zf **os.File, zseg *uint64) bool {
	w.mu.Lock()
	if !w.wantsZeros() {
		w.mu.Unlock()
		return false
	}
	const page = 4 << 10
	from := max(w.zero.upTo, w.size+walZeroGap)
	from = (from + page - 1) &^ (page - 1)
	to := min(from+walZeroChunk, w.max)
	if from >= to {
		w.mu.Unlock()
		return false
	}
	seg := w.seg
	w.zero.busy, w.zero.seg, w.zero.from = true, seg, from
	w.mu.Unlock()

	err := w.writeZeros(zf, zseg, seg, from, to)

	w.mu.Lock()
	w.zero.busy = false
	switch {
	case err != nil:
		w.zero.failed = seg
	case w.seg == seg:
		w.zero.upTo = to
	}
	w.zeroDone.Broadcast()
	w.mu.Unlock()
	return err == nil
}

// writeZeros writes zeros over [from, to) of segment seg, through the
// zeroer's own descriptor (opened anew when the segment changed), and
// syncs them. An error only means fewer zeros (none more in seg): appends
// grow the file as they would without.
func (w *wal) writeZeros(zf **os.File, zseg *uint64, seg uint64, from, to int64) error {
	if *zf == nil || *zseg != seg {
		if *zf != nil {
			(*zf).Close()
			*zf = nil
		}
		f, err := os.OpenFile(filepath.Join(w.dir, segName(seg)), os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		*zf, *zseg = f, seg
	}
	if w.zeroHook != nil {
		w.zeroHook()
	}
	if _, err := (*zf).WriteAt(zeroes[:to-from], from); err != nil {
		return err
	}
	return fdatasync(*zf)
}
