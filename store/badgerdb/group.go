package badgerdb

import (
	"sync/atomic"
	"time"
)

// Grouping commits under appendfsync "always".
//
// Each write waits for the fsync of the log round that holds it, and the
// logger starts the next round as soon as one ends, with the writes that
// came during its fsync. With clients that each send a write once the
// last one is answered (redis-benchmark -c 50, and most applications),
// that splits them into two groups that take turns: the writers a round
// releases come back while the next round, which holds the others, is
// already in its fsync, so each waits for two fsyncs, and each fsync
// serves half the clients. Redis's event loop reads every ready client
// before it writes and syncs its AOF, and serves them all with one.
//
// So before a round after an fsync slower than groupMinFsync, the
// logger waits for the writers the last fsync released: until the batch
// holds as many writes as that round synced plus those that came during
// its fsync, or for at most the last fsync's duration. The groups merge into one within a round. When clients leave,
// the count is not reached and the wait ends at its bound; the round
// after such a wait does not wait, so writers that come at random (each
// on its own schedule) wait at most half an fsync more on average. After
// a pause longer than groupIdle, a round does not wait either: the first
// write after it is synced at once.

// groupMaxWait bounds the wait, whatever the fsync took.
const groupMaxWait = 2 * time.Millisecond

// groupIdle is how long after the last fsync the writers it released
// are no longer expected.
const groupIdle = 20 * time.Millisecond

// groupMinFsync is the shortest fsync worth waiting after. Waiting merges
// the two groups, so each fsync serves twice the writers; it pays when
// the released writers come back well within an fsync, and costs when
// they take as long: the disk then stands idle for the wait. On the
// 2-core development machine (fsyncs of 0.19–0.22 ms on average, and
// clients that share the cores) redis-benchmark SET -c 50 under always
// ran faster without the wait in nine of eleven alternations, by 5–7%
// (docs/performance-notes.md). Their return takes a few hundred
// microseconds there, so after a faster fsync a round does not wait.
const groupMinFsync = 500 * time.Microsecond

// rawFsyncMax is the longest an fsync may have taken for the logger to
// make the next one a raw system call. An ordinary call wakes the
// runtime's monitor thread, which then polls every 20 µs for a
// millisecond or more: under always, with rounds a few hundred
// microseconds apart, it never slept, and the wake-ups it and the
// scheduler made cost an unpipelined write a fifth of its server CPU
// (docs/performance-notes.md, "A raw fsync on a fast disk"). A raw call
// holds the logger's processor until the disk answers, though: the other
// goroutines move to the other processors, and a collection's
// stop-the-world waits for it. So only while the disk answers fast: one
// slow fsync makes the next an ordinary call, until one is fast again.
// Redis's event loop holds every client for the same fsync.
const rawFsyncMax = 500 * time.Microsecond

// groupState is what the logger knows of the last round it synced.
type groupState struct {
	want    int           // writes expected: that round's and those that came during its fsync
	took    time.Duration // its fsync's duration
	at      time.Time     // when its fsync ended
	skip    bool          // the last wait ended at its bound
	timer   *time.Timer
	waits   atomic.Int64 // rounds that waited (tests)
	bounded atomic.Int64 // waits that ended at their bound (tests)
}

// synced records a round of n writes whose fsync ran from start to end,
// with ahead writes staged meanwhile.
func (g *groupState) synced(n, ahead int, start, end time.Time) {
	g.want, g.took, g.at = n+ahead, end.Sub(start), end
}

// rawSync reports whether the next fsync is to be a raw system call
// (rawFsyncMax): the last one was fast. The first one is not: the disk is
// not known yet.
func (g *groupState) rawSync() bool { return g.took > 0 && g.took < rawFsyncMax }

// bound is how long the next round may wait at now, 0 for not at all.
func (g *groupState) bound(now time.Time) time.Duration {
	if g.skip {
		g.skip = false
		return 0
	}
	if g.want <= 1 || g.took < groupMinFsync || now.Sub(g.at) > groupIdle {
		return 0
	}
	return min(g.took, groupMaxWait)
}

// gatherGroup waits, before a round under "always", for the writers the
// last fsync released (see above).
func (s *DB) gatherGroup() {
	g := &s.group
	now := time.Now()
	limit := g.bound(now)
	if limit <= 0 {
		return
	}
	deadline := now.Add(limit)
	counted := false
	for {
		s.omu.Lock()
		n := len(s.batch)
		s.omu.Unlock()
		if n >= g.want {
			break
		}
		if !counted {
			g.waits.Add(1)
			counted = true
		}
		left := time.Until(deadline)
		if left <= 0 {
			g.bounded.Add(1)
			g.skip = true
			break
		}
		g.timer = armTimer(g.timer, left)
		select {
		case <-s.kick: // a write was staged
		case <-g.timer.C:
		case <-s.stop:
			return
		}
	}
}
