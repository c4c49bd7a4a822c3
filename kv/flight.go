package kv

import (
	"context"
	"time"
)

// In-process singleflight.
//
// All callers of one key (and fingerprint) on one Store form a flight.
// The flight's own goroutine, not any caller, sends ONCE.CLAIM … WAIT, in
// slices no longer than the longest deadline among the callers still
// there (or WaitSlice when one has none): so a thousand callers hold one
// connection, and no caller's context is the one the wait runs under. A
// caller whose context ends just leaves the flight and returns ctx.Err();
// the flight goes on for the others, and when the last one leaves it is
// abandoned: taken out of the store (a new caller starts a new flight) and
// it stops after the slice under way.
//
// The caller that starts a flight sends its first claim itself, without
// WAIT, so that a key that is free or kept costs no goroutine handoff: a
// free key's claim goes to that caller (the flight's oldest), which runs
// at once; a kept answer goes to every caller. Only when the key runs
// elsewhere (or the run here ends without an outcome for the others)
// does a runner take the flight over and wait. BenchmarkRun (50
// goroutines, fresh keys): 19.1-19.5k runs/s when a runner sent every
// claim, 23.5-24.0k with this, against 24-28k for the two commands sent
// directly.
//
// When the server answers "claimed", the flight hands the claim to its
// oldest caller, which runs its function in its own goroutine (so panics
// and the re-entrance marker stay with it) and reports back; the others
// get that run's answer as a replay. A caller handed the claim after its
// context ended gives it back and the next caller gets it; with no caller
// left the claim is released as a lapse (ONCE.EXTEND … LEASE 1), so that
// a waiter elsewhere takes it over, instead of being aborted, which would
// tell those waiters the run failed.
//
// A claim answered with a reply that says it did not run and may be sent
// again (retryableReply: TRYAGAIN while proxy mode moves a slot, LOADING,
// MASTERDOWN, CLUSTERDOWN, READONLY), after go-redis' own retries, is
// sent again as it was (without WAIT if it was the first), after a pause
// of claimRetryMin doubling up to claimRetryMax, for at most the store's
// retryFor from the first such reply in a row; then the callers fail with
// the last reply. A first claim so answered hands the flight to a runner,
// so that its caller waits under its own context like the others; callers
// leave when their context ends, and with none left the pause ends and
// the flight stops.

type flightKey struct {
	key   string
	fp    string
	hasFP bool
}

// flight is the shared wait of one key. Its fields below mu are guarded
// by the store's mu.
type flight struct {
	s       *Store
	k       flightKey
	lease   time.Duration
	reports chan runReport // the runner's outcome; one per handed claim
	abandon chan struct{}  // closed when the last caller left

	members []*member // callers waiting, oldest first
	running bool      // a caller holds the claim
	closed  bool      // no longer in s.flights
	// direct: no runner has the flight yet; its first caller claimed it
	// (claimFirst), and a report goes to report's own handling instead
	// of a runner.
	direct bool
	// handOn is a claim that the runner starting the flight hands on
	// first (a report of reportGiveBack in direct mode); 0 none.
	handOn int64

	// Used only by the goroutine sending the flight's claims (the first
	// caller in claimFirst, then a runner: startFlight hands them over).
	//
	// again: the first claim got a reply that says it did not run; the
	// runner sends it again, without WAIT, after pause.
	again bool
	pause time.Duration // before the next claim; 0 none
	pacer claimPacer
}

// Claims answered with a reply that says they did not run are sent again
// after a pause of claimRetryMin, doubling up to claimRetryMax, for at
// most claimRetryFor (proxy mode answers TRYAGAIN for a slot that
// moves for at most 5 s); the pauses match the TS client's.
const (
	claimRetryMin = 10 * time.Millisecond
	claimRetryMax = 200 * time.Millisecond
	claimRetryFor = 5 * time.Second
)

// claimPacer paces the claims sent again after replies that say they did
// not run (retryableReply).
type claimPacer struct {
	end  time.Time     // zero: the last claim got no such reply
	next time.Duration // the pause before the next try
}

// retry reports how long to pause before sending again a claim that got
// err at now; false when err is no such reply, or when the pause would
// end more than window after the first such reply in a row.
func (p *claimPacer) retry(err error, now time.Time, window time.Duration) (time.Duration, bool) {
	if !retryableReply(err) {
		return 0, false
	}
	if p.end.IsZero() {
		p.end, p.next = now.Add(window), claimRetryMin
	}
	d := p.next
	if now.Add(d).After(p.end) {
		return 0, false
	}
	p.next = min(2*d, claimRetryMax)
	return d, true
}

// reset starts a new window: a claim got an answer.
func (p *claimPacer) reset() { p.end = time.Time{} }

// member is one caller in a flight.
type member struct {
	deadline time.Time // zero: none
	ch       chan flightMsg
	served   bool // something was sent on ch
}

// flightMsg is what a flight tells a caller: either "run, you hold token"
// or the outcome.
type flightMsg struct {
	claimed bool
	token   int64
	out     outcome
}

// outcome is the end of a flight for its callers.
type outcome struct {
	answer []byte
	token  int64 // the run's token when it ran in this process
	failed bool  // the run failed with msg
	msg    string
	err    error
}

type reportKind int

const (
	reportDone     reportKind = iota // completed: answer
	reportFailed                     // aborted with msg
	reportRetry                      // the claim was lost or its end is unknown: claim again
	reportGiveBack                   // the caller did not run: hand the claim on
)

type runReport struct {
	kind   reportKind
	answer []byte
	token  int64
	msg    string
}

// join adds a caller to the key's flight. When none is under way it
// makes one and reports first: the caller must then call claimFirst.
func (s *Store) join(ctx context.Context, k flightKey, lease time.Duration) (f *flight, m *member, first bool) {
	d, _ := ctx.Deadline()
	m = &member{deadline: d, ch: make(chan flightMsg, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	f = s.flights[k]
	if f == nil {
		f = &flight{s: s, k: k, lease: lease, reports: make(chan runReport, 1), abandon: make(chan struct{}), direct: true}
		s.flights[k] = f
		first = true
	}
	f.members = append(f.members, m)
	return f, m, first
}

// claimFirst is the first claim of a flight, sent by the caller that
// started it, in its goroutine: ONCE.CLAIM without WAIT, on rdb. The
// outcome goes to the flight's callers, the claim to the oldest, this
// caller; a key running elsewhere is handed to a runner, which waits.
// The round trip is bounded by opTimeout, not by the caller's context:
// a claim cut short could hold the key, unknown to anyone, for a lease.
func (f *flight) claimFirst() {
	r, err := f.s.claim(f.s.rdb, f.k.key, f.lease, 0, f.fingerprint())
	if err != nil {
		if d, ok := f.pacer.retry(err, time.Now(), f.s.retryFor); ok {
			// Not run: a runner sends it again after d, while this
			// caller waits under its context.
			f.again, f.pause = true, d
			f.s.mu.Lock()
			f.direct = false
			f.s.startFlight(f)
			f.s.mu.Unlock()
			return
		}
	}
	f.pacer.reset()
	switch {
	case err != nil:
		f.finish(outcome{err: err})
	case r.state == "done":
		f.finish(outcome{answer: r.answer})
	case r.state == "failed":
		f.finish(outcome{failed: true, msg: string(r.answer)})
	case r.state == "claimed":
		if !f.assign(r.token) {
			f.s.release(f.k.key, r.token)
		}
	default: // running
		f.s.mu.Lock()
		f.direct = false
		f.s.startFlight(f)
		f.s.mu.Unlock()
	}
}

// runnerIdle is how long a runner (startFlight) waits for another
// flight before it exits.
const runnerIdle = 10 * time.Second

// startFlight runs f's loop on a runner: a goroutine of the store that
// ran a flight before and waits for the next, or a new one when none is
// idle. Each loop goes through go-redis' call chain, deeper than a new
// goroutine's stack: with a goroutine per flight, growing it (copying the
// stack, twice or more) was 14% of a client's CPU under 50 callers of
// fresh keys. Called with s.mu held.
func (s *Store) startFlight(f *flight) {
	select {
	case s.idle <- f:
	default:
		go s.runner(f)
	}
}

// runner runs flights until none came for runnerIdle, or the store is
// closed.
func (s *Store) runner(f *flight) {
	s.runners.Add(1)
	s.runnersStarted.Add(1)
	defer s.runners.Add(-1)
	t := time.NewTimer(runnerIdle)
	defer t.Stop()
	for {
		f.loop()
		t.Reset(runnerIdle)
		select {
		case f = <-s.idle:
		case <-t.C:
			return
		case <-s.done:
			return
		}
	}
}

// leave takes a caller whose context ended out of the flight. It reports
// false when the flight already sent it something, which it must then
// take from its channel.
func (f *flight) leave(m *member) bool {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if m.served {
		return false
	}
	for i, x := range f.members {
		if x == m {
			f.members = append(f.members[:i:i], f.members[i+1:]...)
			break
		}
	}
	if len(f.members) == 0 && !f.running && !f.closed {
		f.closeLocked()
		close(f.abandon)
	}
	return true
}

// closeLocked takes the flight out of the store: new callers start anew.
func (f *flight) closeLocked() {
	if f.s.flights[f.k] == f {
		delete(f.s.flights, f.k)
	}
	f.closed = true
}

// finish ends the flight, giving out to every caller still there.
func (f *flight) finish(out outcome) {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	f.closeLocked()
	f.running = false
	for _, m := range f.members {
		m.served = true
		m.ch <- flightMsg{out: out}
	}
	f.members = nil
}

// slice is how long the next wait may last; false when no caller is left.
func (f *flight) slice() (time.Duration, bool) {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if f.closed {
		return 0, false
	}
	if len(f.members) == 0 {
		f.closeLocked()
		return 0, false
	}
	var longest time.Time
	for _, m := range f.members {
		if m.deadline.IsZero() {
			return f.s.maxSlice(), true
		}
		if m.deadline.After(longest) {
			longest = m.deadline
		}
	}
	return max(min(f.s.maxSlice(), time.Until(longest)), time.Millisecond), true
}

// assign hands the claim to the oldest caller; false when none is left
// (the flight is then closed).
func (f *flight) assign(token int64) bool {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	if f.closed || len(f.members) == 0 {
		f.closeLocked()
		return false
	}
	m := f.members[0]
	f.members = f.members[1:]
	m.served = true
	m.ch <- flightMsg{claimed: true, token: token}
	f.running = true
	return true
}

// resume is called when a run ended without an outcome for the others;
// false when none is left to claim for.
func (f *flight) resume() bool {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	f.running = false
	if len(f.members) == 0 {
		f.closeLocked()
		return false
	}
	return true
}

// report is the runner's outcome. An outcome for the others is given out
// before report returns, so that a Run that starts after the runner's Run
// returned is not served the old run's outcome (a failure must free the
// key for the next caller, KV-12).
//
// In direct mode (claimFirst) no runner waits for the report: a run that
// ends without an outcome for the others starts one, which hands the
// claim on (reportGiveBack) or claims again (reportRetry).
func (f *flight) report(r runReport) {
	switch r.kind {
	case reportDone:
		f.finish(outcome{answer: r.answer, token: r.token})
	case reportFailed:
		f.finish(outcome{failed: true, msg: r.msg})
	}
	f.s.mu.Lock()
	direct := f.direct
	f.direct = false
	f.s.mu.Unlock()
	if !direct {
		f.reports <- r
		return
	}
	switch r.kind {
	case reportGiveBack:
		f.handOn = r.token
	case reportRetry:
		if !f.resume() {
			return
		}
	default:
		return
	}
	f.s.mu.Lock()
	f.s.startFlight(f)
	f.s.mu.Unlock()
}

// fingerprint is the flight's FINGERPRINT argument; nil for none.
func (f *flight) fingerprint() *string {
	if f.k.hasFP {
		return &f.k.fp
	}
	return nil
}

func (f *flight) loop() {
	fp := f.fingerprint()
	if tok := f.handOn; tok != 0 {
		f.handOn = 0
		if !f.runClaimed(tok) {
			return
		}
	}
	timeouts := 0 // in a row
	for {
		if d := f.pause; d > 0 {
			f.pause = 0
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-f.abandon:
				t.Stop()
				return
			}
		}
		slice, ok := f.slice()
		if !ok {
			return
		}
		var r claimReply
		var err error
		if f.again {
			r, err = f.s.claim(f.s.rdb, f.k.key, f.lease, 0, fp)
		} else {
			select {
			case f.s.sem <- struct{}{}:
			case <-f.abandon:
				return
			}
			r, err = f.s.claim(f.s.wait, f.k.key, f.lease, slice, fp)
			<-f.s.sem
		}
		if err != nil {
			if d, ok := f.pacer.retry(err, time.Now(), f.s.retryFor); ok {
				f.pause = d // the same claim again, after d
				continue
			}
			if f.again {
				f.finish(outcome{err: err}) // as claimFirst
				return
			}
		} else {
			f.pacer.reset()
		}
		f.again = false
		if err != nil && isTimeout(err) {
			// The connection was dropped, and with it the wait on the
			// server. When the slice fits under the client's read
			// timeout, the connection failed (after go-redis' own
			// retries): wait once more, the same slice; twice in a row
			// is a failure. Otherwise the client's read timeout, which
			// New could not see, is shorter than the wait: wait in
			// shorter slices.
			timeouts++
			if f.s.fitted && timeouts == 1 || !f.s.fitted && f.s.shrink(slice) {
				continue
			}
		}
		if err != nil {
			f.finish(outcome{err: err})
			return
		}
		timeouts = 0
		switch r.state {
		case "running":
			continue
		case "done":
			f.finish(outcome{answer: r.answer})
			return
		case "failed":
			f.finish(outcome{failed: true, msg: string(r.answer)})
			return
		case "claimed":
			if !f.runClaimed(r.token) {
				return
			}
		}
	}
}

// runClaimed hands a claim to callers until one of them ran it. It
// reports true when the flight must claim again.
func (f *flight) runClaimed(token int64) bool {
	for {
		if !f.assign(token) {
			f.s.release(f.k.key, token)
			return false
		}
		r := <-f.reports
		switch r.kind {
		case reportGiveBack:
			continue
		case reportDone, reportFailed:
			return false // report gave it out
		default:
			return f.resume()
		}
	}
}

// release gives up a claim no one here will run, as a lapse: a waiter
// elsewhere takes it over, or the key becomes free.
func (s *Store) release(key string, token int64) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	_ = s.do(ctx, "once.extend", key, token, "lease", 1)
}
