package badgerdb

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// ErrNoSpace is wrapped by the write error of a store whose disk is (about
// to be) full.
var ErrNoSpace = errors.New("no space left on the data directory's disk")

// opCost is what a staged write is charged against the free-space reserve:
// its bytes as Badger logs them, plus a header.
func opCost(o *op) int64 { return int64(len(o.key)+len(o.val)) + 32 }

// spaceRecheck is how long a free-space figure is trusted while it is far
// above the reserve.
const spaceRecheck = 100 * time.Millisecond

// spaceState is the committer's last look at the disk (only the committer
// uses it).
type spaceState struct {
	free  int64     // free bytes at the last statfs
	at    time.Time // of the last statfs
	since int64     // bytes written since
}

// checkSpace refuses a write that would leave less than MinFreeDisk free.
// Far from the reserve it trusts its last statfs for spaceRecheck, counting
// what it wrote since; near it, it looks at the disk before every write.
func (s *DB) checkSpace(ops []op) error {
	reserve := s.minFree.Load()
	if reserve < 0 {
		return nil
	}
	var need int64
	for i := range ops {
		need += opCost(&ops[i])
	}
	sp := &s.space
	if !sp.at.IsZero() && time.Since(sp.at) < spaceRecheck && sp.free-sp.since-need >= 2*reserve {
		sp.since += need
		return nil
	}
	free, ok := diskFree(s.opts.Dir)
	if !ok {
		return nil
	}
	sp.free, sp.at, sp.since = free, time.Now(), 0
	if free-need >= reserve {
		sp.since = need
		return nil
	}
	return fmt.Errorf("%w: %s has %s free, less than the %s kept in reserve (min-free-disk) plus %s to write",
		ErrNoSpace, s.opts.Dir, bytesText(free), bytesText(reserve), bytesText(need))
}

// SetMinFreeDisk changes the free-space reserve while the store runs
// (CONFIG SET min-free-disk): 0 is DefaultMinFreeDisk of the memtable
// size, negative turns the check off. It applies from the next write the
// committer makes, including the retry of a write refused for space.
func (s *DB) SetMinFreeDisk(n int64) {
	if n == 0 {
		n = DefaultMinFreeDisk(s.opts.MemTableSize)
	}
	s.warnThinReserve(n)
	s.minFree.Store(n)
}

// warnThinReserve logs a warning when the reserve n is under
// DefaultMinFreeDisk: what Badger may still write through memory maps
// after the check (its memtable logs, a flush, compactions). A disk that
// fills within the reserve then crashes the process (SIGBUS) where it
// should refuse writes. The default is generous (sixteen memtables), so a
// reserve under it is not necessarily unsafe, but one chosen for small
// memtables may be thin for larger ones: integration's TestDiskFull, 40
// MiB with 4 MiB memtables, crashed the server once they were 16 MiB.
func (s *DB) warnThinReserve(n int64) {
	if want := DefaultMinFreeDisk(s.opts.MemTableSize); n > 0 && n < want {
		s.log.Warn("min-free-disk is under its default, max(64mb, 16 x memtable-size): a disk that fills may crash the server instead of refusing writes",
			zap.String("min-free-disk", bytesText(n)), zap.String("advised", bytesText(want)))
	}
}

// MinFreeDisk is the free-space reserve in force.
func (s *DB) MinFreeDisk() int64 { return s.minFree.Load() }

func bytesText(n int64) string {
	switch {
	case n >= 10<<30:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 10<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 10<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
