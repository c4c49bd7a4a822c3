package badgerdb

import "time"

// A busy server's apply rounds are paced: the applier rests, between two
// stretches of its work, as long as the stretch took, so that writing a
// round to Badger and cleaning it takes at most half of a core while
// commands wait for the CPU.
//
// Go's scheduler has no priorities. Unpaced, a round of a ONCE load (the
// applier, Badger's writer and its memtable flush running flat out for
// 0.5-0.7 s, and with them a collection) left the connections and their
// clients so little of two cores that 50 clients completed 3-9% of
// their usual cycles in the worst 100 ms, and each round put most of a
// second of slow cycles into the p99. Paced, the round takes about twice
// as long, and the worst 100 ms kept 22-33% of the usual cycles
// (docs/performance-notes.md, "An apply round paced").
//
// The pace gives way to anything that needs the round done: writers held
// by the pending bounds (or the pending writes near them), a drain
// (FLUSHDB, a backup), Close. A calm server's rounds, and Close's, are not
// paced at all: nothing waits for the CPU then.

// paceStep is the least work between two rests: shorter stretches would
// rest more often than the timer's precision serves.
const paceStep = time.Millisecond

// paceChunk is how many ops the applier hands Badger at a time while it
// paces. Each chunk is written (flushed) before the rest, or Badger's
// writer goroutine would do the work while the applier rests: about 2 ms
// of work here.
const paceChunk = 1024

// pacer spaces one apply round's work; the zero pacer never rests.
type pacer struct {
	s     *DB
	on    bool
	since time.Time // when the current stretch of work began
}

// newPacer returns the pacer of a round: on unless the server is calm.
func (s *DB) newPacer(calm bool) *pacer {
	return &pacer{s: s, on: !calm, since: time.Now()}
}

// pacing reports whether the round is still paced: once something waits
// for it, it goes at full speed to its end.
func (p *pacer) pacing() bool {
	if !p.on {
		return false
	}
	s := p.s
	if s.closed.Load() || s.held.Load() > 0 || s.drainTo.Load() > s.committed.Load() ||
		s.overPending(paceNear, paceNear+1) {
		p.on = false
	}
	return p.on
}

// paceNear is, as n/(n+1), the share of the pending bounds from which a
// round is no longer paced: writers are held at the bound.
const paceNear = 7

// rest ends a stretch of work: once it has lasted paceStep, the applier
// rests as long (or until the store stops).
func (p *pacer) rest() {
	if !p.on {
		return
	}
	d := time.Since(p.since)
	if d < paceStep {
		return
	}
	if p.pacing() {
		p.s.paceRests.Add(1)
		if p.s.paceSleep != nil {
			p.s.paceSleep(d)
		} else {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-p.s.stop:
				t.Stop()
			}
		}
	}
	p.since = time.Now()
}
