package badgerdb

import "time"

// Apply rounds are paced while the server serves commands: the applier
// rests, between two stretches of its work, as long as the stretch took,
// so that writing a round to Badger and cleaning it takes at most half of
// a core while commands wait for the CPU.
//
// Go's scheduler has no priorities. Unpaced, a round of a ONCE load (the
// applier, Badger's writer and its memtable flush running flat out for
// 0.5-0.7 s, and with them a collection) left the connections and their
// clients so little of two cores that 50 clients completed 3-9% of
// their usual cycles in the worst 100 ms, and each round put most of a
// second of slow cycles into the p99. Paced, the round takes about twice
// as long, and the worst 100 ms kept 22-33% of the usual cycles
// (docs/performance-notes.md, "A fresh server's first apply, and apply
// rounds paced").
//
// A round rests only after a stretch during which commands came in
// (Activity moved): a round started because the server was calm runs
// flat out while it stays calm, and rests once load returns, as it did
// when redis-benchmark's next load met the calm round of the last one.
// The pace gives way, for the rest of the round, to anything that needs
// the round done: writers held by the pending bounds (or the pending
// writes near them), a drain (FLUSHDB, a backup), Close. A rest under way
// gives way too: it sleeps in steps of paceStep and looks again between
// them, so that a FLUSHDB or BACKUP (which drains under the keyspace
// lock) or a held writer waits a step at most, not the rest.
//
// A stretch is measured by the clock, so waits that are not the round's
// work would count as work: the log's fsync before the round, a scan
// holding cleanMu, Badger stalling a write, a retry's backoff. The
// applier starts a new stretch after the waits it knows of (restart),
// and no rest is longer than paceMaxRest whatever the stretch: before
// both, a 300 ms fsync was followed by a 300 ms rest, and a FLUSHDB that
// came meanwhile held the keyspace lock through it.

// paceStep is the least work between two rests: shorter stretches would
// rest more often than the timer's precision serves.
const paceStep = time.Millisecond

// paceMaxRest bounds one rest. A round's stretches of work take 1-3 ms
// here (a chunk, a run of cleaning slices); the bound is for those that
// took longer because something blocked them.
const paceMaxRest = 4 * paceStep

// paceChunk is how many ops the applier hands Badger at a time while it
// paces. Each chunk is written (flushed) before the rest, or Badger's
// writer goroutine would do the work while the applier rests: about 2 ms
// of work here.
const paceChunk = 1024

// paceNear is, as n/(n+1), the share of the pending bounds from which a
// round is no longer paced: writers are held at the bound.
const paceNear = 7

// pacer spaces one apply round's work.
type pacer struct {
	s     *DB
	on    bool
	since time.Time // when the current stretch of work began
	act   int64     // Activity then
	timer *time.Timer
}

// newPacer returns the pacer of an apply round.
func (s *DB) newPacer() *pacer {
	return &pacer{s: s, on: true, since: time.Now(), act: s.Activity()}
}

// pacing reports whether the round is still paced: once something waits
// for it, it goes at full speed to its end. A store that was never
// started (its rounds run in the writer's call) is not paced.
func (p *pacer) pacing() bool {
	if !p.on {
		return false
	}
	s := p.s
	if !s.started || s.closed.Load() || s.held.Load() > 0 || s.drainTo.Load() > s.committed.Load() ||
		s.overPending(paceNear, paceNear+1) {
		p.on = false
	}
	return p.on
}

// restart starts a new stretch of work after a wait that was not work
// (the log's fsync, cleanMu): the next rest is as long as the work after
// it only.
func (p *pacer) restart() { p.since = time.Now() }

// due reports whether the stretch of work under way is long enough to
// end with a rest, if commands came in: a caller that holds what others
// may need lets go of it for rest only then.
func (p *pacer) due() bool { return p.on && time.Since(p.since) >= paceStep }

// rest ends a stretch of work: once it has lasted paceStep, and if
// commands came in meanwhile, the applier rests as long (at most
// paceMaxRest), until the round is needed, or until the store stops.
func (p *pacer) rest() {
	if !p.due() {
		return
	}
	d := time.Since(p.since)
	act := p.s.Activity()
	busy := act != p.act
	p.act = act
	if busy && p.pacing() {
		p.s.paceRests.Add(1)
		p.sleep(min(d, paceMaxRest))
	}
	p.since = time.Now()
}

// sleep rests d, in steps of paceStep at most, looking between them
// whether the round is still paced.
func (p *pacer) sleep(d time.Duration) {
	for d > 0 && p.pacing() {
		step := min(d, paceStep)
		d -= step
		if p.s.paceSleep != nil {
			p.s.paceSleep(step)
			continue
		}
		p.timer = armTimer(p.timer, step)
		select {
		case <-p.timer.C:
		case <-p.s.stop:
			p.timer.Stop()
			return
		}
	}
}

// armTimer returns t set to fire after d, or a new timer if t is nil: a
// loop that waits again and again keeps one timer.
func armTimer(t *time.Timer, d time.Duration) *time.Timer {
	if t == nil {
		return time.NewTimer(d)
	}
	t.Reset(d)
	return t
}
