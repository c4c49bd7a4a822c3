package once_test

// A model-based test of the ONCE engine: a fuzz input (or a random seed) is
// read as a sequence of operations by a few simulated clients on a few
// keys, run against the engine over a real Badger store, and every reply,
// every wake-up and the state STATUS shows are checked, after each step,
// against a small reference model of the contract's ONCE section (KV-8,
// KV-9, KV-10, KV-12, KV-13, KV-14, KV-15).
//
// Time. The store's clock (badgerdb.Options.Clock) is the test's, and only
// ADVANCE moves it. It starts a year ahead of the wall clock, so that the
// engine's lapse timers, armed on wall-clock deadlines, never fire during
// a run: a lapse happens when the test says so, through whatever settles
// the key (CLAIM, WAIT, COMPLETE, ABORT, EXTEND, a DEL of the running
// record) or through TICK, which runs what the lapse timer runs
// (Engine.Lapse, export_test.go). The model lapses a key at exactly those
// steps, so the heir's lease is counted from the step that hands it over.
//
// Clients. A client with a waiter is blocked, as a connection is: it sends
// nothing until its waiter is answered or withdrawn (CANCEL: its WAIT ran
// out, and it asks again without waiting as the commands do, or it went
// away, and a claim it was handed is passed on). RACE withdraws a waiter
// in the same moment as another client's step may answer it, as a WAIT
// timeout can race the wake-up: Cancel must hand back the answer it was
// given, and pass on a claim that a gone client was handed.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncekv/oncekv/once"
	"github.com/oncekv/oncekv/store"
	"github.com/oncekv/oncekv/store/badgerdb"
)

const (
	modelKeys    = 3
	modelClients = 4
	modelMaxOps  = 400
	defaultLease = 30_000 // ms, the engine's configured default in this test
)

// The choices the input's bytes pick from.
var (
	// math.MaxInt64 ms is a deadline past the end of time: the largest
	// one, not one that wraps into the past.
	claimLeases  = []int64{0, 1, 1000, 5000, 60_000, math.MaxInt64} // 0: the default
	extendLeases = []int64{0, -1, 1, 1000, 60_000, math.MaxInt64}   // 0 and -1 are invalid
	keeps        = []int64{-1, 0, 1, 1000, 30_000, math.MaxInt64}   // -1: no KEEP, 0: KEEP 0
	advances     = []int64{1, 10, 999, 1000, 5000, 30_000, 30_001, 100_000}
	fingerprints = []struct {
		fp    string
		hasFP bool
	}{{"", false}, {"", false}, {"", false}, {"x", true}, {"x", true}, {"y", true}, {"y", true}, {"", true}}
)

// modelHarness is one store and engine, shared by the runs of a test or of
// a fuzzing process (opening a store per input would make the fuzzer
// slow); each run uses keys of its own, and leaves no waiter behind.
type modelHarness struct {
	st    *badgerdb.DB
	e     *once.Engine
	clock atomic.Int64
	runs  int
	ops   map[string]int // steps run, by kind ("->": answers taken)
}

func newModelHarness(tb testing.TB) *modelHarness {
	tb.Helper()
	h := &modelHarness{ops: make(map[string]int)}
	h.clock.Store(time.Now().Add(365 * 24 * time.Hour).UnixMilli())
	opts := badgerdb.DefaultOptions(tb.TempDir())
	opts.Clock = h.clock.Load
	opts.Fsync = badgerdb.FsyncNo
	opts.SweepInterval = 0 // expiry is seen on read; nothing runs behind the test
	opts.GCInterval = 0
	st, err := badgerdb.Open(opts)
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	st.Start()
	e := once.New(st, once.Config{DefaultLease: defaultLease * time.Millisecond})
	if err := e.Start(); err != nil {
		st.Close()
		tb.Fatalf("start engine: %v", err)
	}
	h.st, h.e = st, e
	tb.Cleanup(func() {
		h.e.Close()
		if err := st.Close(); err != nil {
			tb.Errorf("close store: %v", err)
		}
	})
	return h
}

// restart closes the engine, which wakes its waiters with ErrShutdown,
// and starts another over the same store, as a server restart does
// (without the store's: the records are the store's either way, and
// KV-16's crash durability is the store's tests').
func (h *modelHarness) restart(tb testing.TB) {
	tb.Helper()
	h.e.Close()
	e := once.New(h.st, once.Config{DefaultLease: defaultLease * time.Millisecond})
	if err := e.Start(); err != nil {
		tb.Fatalf("restart engine: %v", err)
	}
	h.e = e
}

// mres is a result the model expects.
type mres struct {
	state  string // claimed, done, running, failed, free; "" with err
	answer string
	msLeft int64
	err    error
}

func (r mres) String() string {
	switch {
	case r.err != nil:
		return "error " + r.err.Error()
	case r.state == "running":
		return fmt.Sprintf("running %d", r.msLeft)
	case r.state == "claimed":
		return "claimed <new token>"
	}
	return fmt.Sprintf("%s %q", r.state, r.answer)
}

func resString(r once.Result, err error) string {
	switch {
	case err != nil:
		return "error " + err.Error()
	case r.Err != nil:
		return "error " + r.Err.Error()
	case r.State == "running":
		return fmt.Sprintf("running %d", r.MsLeft)
	case r.State == "claimed":
		return fmt.Sprintf("claimed %d", r.Token)
	}
	return fmt.Sprintf("%s %q", r.State, r.Answer)
}

// mrec is a key's record in the model.
type mrec struct {
	state    once.State
	token    uint64
	heir     *mwaiter // set until the heir's claim (and its token) is seen
	fp       string
	hasFP    bool
	answer   string
	deadline int64 // 0: kept until deleted (done only)
	// restored is set on the records of before a restart, which the
	// new engine's count of running keys (INFO) does not know of.
	restored bool
}

type mkey struct {
	name string
	rec  *mrec // the stored record, which may have expired
	q    []*mwaiter
	// ksFP is the fingerprint the engine keeps with the waiters, for a
	// handover after the record is gone.
	ksFP    string
	ksHasFP bool
}

type mwaiter struct {
	id     int
	client int
	key    int
	claim  bool
	args   once.ClaimArgs
	w      *once.Waiter
	expect *mres // what the model delivered, not yet seen
	done   bool  // answered (seen) or withdrawn
}

type mclient struct {
	blocked *mwaiter
	held    [modelKeys]uint64 // the last token the client was given per key
}

// modelRun is one input's run.
type modelRun struct {
	t       testing.TB
	h       *modelHarness
	e       *once.Engine
	now     int64
	step    int
	keys    [modelKeys]*mkey
	clients [modelClients]*mclient
	waiters []*mwaiter
	maxTok  uint64
	stepMax uint64 // maxTok before the step
	seen    []uint64
	trace   []string
}

func (m *modelRun) fail(format string, args ...any) {
	m.t.Helper()
	tr := m.trace
	if len(tr) > 80 {
		tr = tr[len(tr)-80:]
	}
	m.t.Fatalf("step %d: %s\nlast steps:\n  %s", m.step, fmt.Sprintf(format, args...), strings.Join(tr, "\n  "))
}

func (m *modelRun) logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	m.trace = append(m.trace, fmt.Sprintf("%3d ", m.step)+msg)
	if f := strings.Fields(msg); len(f) > 0 {
		m.h.ops[f[0]]++
	}
}

// update runs fn in an exclusive transaction and delivers its wake-ups
// with the transaction's ticket, as commands/once.go does.
func (m *modelRun) update(fn func(tx store.Tx)) {
	m.t.Helper()
	var after func(store.Ticket)
	t, err := m.h.st.Update(func(tx store.Tx) error {
		fn(tx)
		after = m.e.Commit()
		return nil
	})
	if err != nil {
		m.fail("update: %v", err)
	}
	if after != nil {
		after(t)
	}
}

// keyArg is a fresh copy of a key's name, scribbled over after the call:
// a command's arguments are buffers the connection reuses.
func keyArg(name string) []byte { return []byte(name) }

func scribble(b []byte) {
	for i := range b {
		b[i] = '#'
	}
}

// newToken checks a token the engine handed out: tokens only grow (KV-13),
// and none is handed out twice. A FLUSHDB hands over the claims of its
// keys in the engine's order, not the model's: within a step the tokens
// are only checked to be above those of the steps before.
func (m *modelRun) newToken(tok uint64, what string) {
	if tok <= m.stepMax {
		m.fail("%s: token %d, not above %d handed out before", what, tok, m.stepMax)
	}
	for _, t := range m.seen[len(m.seen)-min(len(m.seen), 8):] {
		if t == tok {
			m.fail("%s: token %d handed out twice", what, tok)
		}
	}
	m.maxTok = max(m.maxTok, tok)
	m.seen = append(m.seen, tok)
}

// live is the key's record unless it is missing or its deadline passed.
func (m *modelRun) live(k *mkey) *mrec {
	if k.rec == nil || (k.rec.deadline != 0 && k.rec.deadline <= m.now) {
		return nil
	}
	return k.rec
}

// after is the deadline ms after now, or the largest one.
func after(now, ms int64) int64 {
	if ms > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + ms
}

func leaseOf(ms int64) int64 {
	if ms > 0 {
		return ms
	}
	return defaultLease
}

// deliver is the model's wake-up of w.
func (m *modelRun) deliver(w *mwaiter, r mres) {
	if w.expect != nil || w.done {
		m.fail("model: waiter %d delivered twice", w.id)
	}
	w.expect = &r
}

func (m *modelRun) wakeAll(k *mkey, r mres) {
	for _, w := range k.q {
		m.deliver(w, r)
	}
	k.q = nil
}

// settle is the engine's settle: a key whose waiters have not been told of
// a lapse (the lease passed, or the record was deleted) is handed over.
func (m *modelRun) settle(k *mkey) {
	if len(k.q) == 0 {
		return
	}
	r := m.live(k)
	switch {
	case r != nil && r.state == once.Running:
		return
	case r != nil:
		m.fail("model: waiters on a done record")
	}
	m.handOver(k)
}

// handOver passes the claim to the oldest CLAIM waiter with a new token, or
// frees the key and tells the WAIT waiters so (KV-13).
func (m *modelRun) handOver(k *mkey) {
	var heir *mwaiter
	for i, w := range k.q {
		if w.claim {
			heir = w
			k.q = append(k.q[:i:i], k.q[i+1:]...)
			break
		}
	}
	if heir == nil {
		k.rec = nil
		m.wakeAll(k, mres{state: "free"})
		return
	}
	r := &mrec{state: once.Running, heir: heir, fp: k.ksFP, hasFP: k.ksHasFP, deadline: after(m.now, leaseOf(heir.args.Lease))}
	if !r.hasFP && heir.args.HasFP {
		r.fp, r.hasFP = string(heir.args.FP), true
	}
	k.rec = r
	m.deliver(heir, mres{state: "claimed"})
	k.ksFP, k.ksHasFP = r.fp, r.hasFP
	if r.hasFP {
		// A CLAIM waiter whose fingerprint differs from the one the
		// claim now carries reused the key for another request (KV-15).
		kept := k.q[:0]
		for _, w := range k.q {
			if w.claim && w.args.HasFP && string(w.args.FP) != r.fp {
				m.deliver(w, mres{err: once.ErrMismatch})
				continue
			}
			kept = append(kept, w)
		}
		k.q = kept
	}
}

// release is Engine.Release: a claim handed to a caller that has gone is
// passed on as at a lapse.
func (m *modelRun) release(k *mkey, tok uint64) {
	r := m.live(k)
	if r == nil || r.state != once.Running || r.heir != nil || r.token != tok {
		return
	}
	if len(k.q) == 0 {
		k.rec = nil
		return
	}
	m.handOver(k)
}

func (m *modelRun) addWaiter(c, ki int, k *mkey, r *mrec, claim bool, a once.ClaimArgs, w *once.Waiter) {
	mw := &mwaiter{id: len(m.waiters), client: c, key: ki, claim: claim, args: a, w: w}
	m.waiters = append(m.waiters, mw)
	k.q = append(k.q, mw)
	k.ksFP, k.ksHasFP = r.fp, r.hasFP
	m.clients[c].blocked = mw
}

// check compares a reply with the model's.
func (m *modelRun) check(what string, got once.Result, err error, want mres) {
	m.t.Helper()
	bad := false
	switch {
	case want.err != nil:
		if err == nil {
			err = got.Err
		}
		bad = !errors.Is(err, want.err)
	case err != nil || got.Err != nil:
		bad = true
	case got.State != want.state:
		bad = true
	case want.state == "running":
		bad = got.MsLeft != want.msLeft
	case want.state == "done" || want.state == "failed":
		bad = string(got.Answer) != want.answer
	case want.state == "free":
		bad = len(got.Answer) != 0
	}
	if bad {
		m.fail("%s: got %s, model says %s", what, resString(got, err), want)
	}
}

// checkErr compares an OK-or-error reply with the model's.
func (m *modelRun) checkErr(what string, err, want error) {
	m.t.Helper()
	if (want == nil) != (err == nil) || (want != nil && !errors.Is(err, want)) {
		m.fail("%s: got error %v, model says %v", what, err, want)
	}
}

// tokenArg picks the token a COMPLETE, ABORT or EXTEND sends: the one the
// client was last given for the key, the key's current one (passed on
// from another process), any earlier one, or one never handed out.
func (m *modelRun) tokenArg(c, ki int, b byte) uint64 {
	switch b & 7 {
	case 0, 1, 2:
		if t := m.clients[c].held[ki]; t != 0 {
			return t
		}
		fallthrough
	case 3, 4, 5:
		if r := m.keys[ki].rec; r != nil && r.token != 0 {
			return r.token
		}
		fallthrough
	case 6:
		if len(m.seen) > 0 {
			return m.seen[int(b>>3)%len(m.seen)]
		}
		return 0
	}
	if b&8 != 0 {
		return 0
	}
	return m.maxTok + 1<<40
}

// holder is the engine's holder check, after a settle: ok is false for
// -STALE.
func (m *modelRun) holder(k *mkey, tok uint64) (*mrec, bool) {
	m.settle(k)
	r := m.live(k)
	if r == nil || r.state != once.Running || r.heir != nil || r.token != tok {
		return r, false
	}
	return r, true
}

// claim runs ONCE.CLAIM for client c and checks its reply.
func (m *modelRun) claim(c, ki int, a once.ClaimArgs) {
	k := m.keys[ki]
	what := fmt.Sprintf("CLAIM %s client %d lease %d wait %v fp %q/%v", k.name, c, a.Lease, a.Wait, a.FP, a.HasFP)
	m.logf("%s", what)
	var (
		got once.Result
		w   *once.Waiter
		err error
	)
	key := keyArg(k.name)
	m.update(func(tx store.Tx) { got, w, err = m.e.Claim(tx, 0, key, a) })
	scribble(key)

	m.settle(k)
	r := m.live(k)
	switch {
	case r == nil:
		m.check(what, got, err, mres{state: "claimed"})
		if w != nil {
			m.fail("%s: a waiter with the claim", what)
		}
		m.newToken(got.Token, what)
		k.rec = &mrec{state: once.Running, token: got.Token, fp: string(a.FP), hasFP: a.HasFP, deadline: after(m.now, leaseOf(a.Lease))}
		m.clients[c].held[ki] = got.Token
	case r.hasFP && a.HasFP && r.fp != string(a.FP):
		m.check(what, got, err, mres{err: once.ErrMismatch})
	case r.state == once.Done:
		m.check(what, got, err, mres{state: "done", answer: r.answer})
	case !a.Wait:
		m.check(what, got, err, mres{state: "running", msLeft: r.deadline - m.now})
	default:
		if w == nil || err != nil {
			m.fail("%s: got %s and no waiter, model says it waits", what, resString(got, err))
		}
		m.addWaiter(c, ki, k, r, true, a, w)
		return
	}
	if w != nil {
		m.fail("%s: got a waiter as well as %s", what, resString(got, err))
	}
}

// wait runs ONCE.WAIT (block) or its non-blocking form.
func (m *modelRun) wait(c, ki int, block bool) {
	k := m.keys[ki]
	what := fmt.Sprintf("WAIT %s client %d block %v", k.name, c, block)
	m.logf("%s", what)
	var (
		got once.Result
		w   *once.Waiter
		err error
	)
	key := keyArg(k.name)
	m.update(func(tx store.Tx) { got, w, err = m.e.Wait(tx, 0, key, block) })
	scribble(key)

	m.settle(k)
	r := m.live(k)
	switch {
	case r == nil:
		m.check(what, got, err, mres{state: "free"})
	case r.state == once.Done:
		m.check(what, got, err, mres{state: "done", answer: r.answer})
	case !block:
		m.check(what, got, err, mres{state: "running", msLeft: r.deadline - m.now})
	default:
		if w == nil || err != nil {
			m.fail("%s: got %s and no waiter, model says it waits", what, resString(got, err))
		}
		m.addWaiter(c, ki, k, r, false, once.ClaimArgs{}, w)
		return
	}
	if w != nil {
		m.fail("%s: got a waiter as well as %s", what, resString(got, err))
	}
}

func (m *modelRun) complete(c, ki int, tok uint64, answer string, keep int64) {
	k := m.keys[ki]
	what := fmt.Sprintf("COMPLETE %s client %d token %d answer %q keep %d", k.name, c, tok, answer, keep)
	m.logf("%s", what)
	key, ans := keyArg(k.name), []byte(answer)
	var err error
	m.update(func(tx store.Tx) { err = m.e.Complete(tx, 0, key, tok, ans, keep) })
	// The answer is a command's argument too: the waiters and the
	// record must have their own copy.
	scribble(key)
	scribble(ans)

	r, ok := m.holder(k, tok)
	if !ok {
		m.checkErr(what, err, once.ErrStale)
		return
	}
	m.checkErr(what, err, nil)
	switch {
	case keep == 0:
		k.rec = nil
	case keep > 0:
		k.rec = &mrec{state: once.Done, token: r.token, fp: r.fp, hasFP: r.hasFP, answer: answer, deadline: after(m.now, keep)}
	default:
		k.rec = &mrec{state: once.Done, token: r.token, fp: r.fp, hasFP: r.hasFP, answer: answer}
	}
	m.wakeAll(k, mres{state: "done", answer: answer})
}

func (m *modelRun) abort(c, ki int, tok uint64, msg string) {
	k := m.keys[ki]
	what := fmt.Sprintf("ABORT %s client %d token %d message %q", k.name, c, tok, msg)
	m.logf("%s", what)
	key, b := keyArg(k.name), []byte(msg)
	var err error
	m.update(func(tx store.Tx) { err = m.e.Abort(tx, 0, key, tok, b) })
	scribble(key)
	scribble(b)

	if _, ok := m.holder(k, tok); !ok {
		m.checkErr(what, err, once.ErrStale)
		return
	}
	m.checkErr(what, err, nil)
	k.rec = nil
	m.wakeAll(k, mres{state: "failed", answer: msg})
}

func (m *modelRun) extend(c, ki int, tok uint64, lease int64) {
	k := m.keys[ki]
	what := fmt.Sprintf("EXTEND %s client %d token %d lease %d", k.name, c, tok, lease)
	m.logf("%s", what)
	key := keyArg(k.name)
	var err error
	m.update(func(tx store.Tx) { err = m.e.Extend(tx, 0, key, tok, lease) })
	scribble(key)

	if lease <= 0 {
		m.checkErr(what, err, once.ErrInvalidLease)
		return
	}
	r, ok := m.holder(k, tok)
	if !ok {
		m.checkErr(what, err, once.ErrStale)
		return
	}
	m.checkErr(what, err, nil)
	r.deadline, r.restored = after(m.now, lease), false
}

// del is DEL as the commands run it: the delete, then Touched, in one
// transaction. A DEL of a running record is a lapse at that moment.
func (m *modelRun) del(ki int) {
	k := m.keys[ki]
	m.logf("DEL %s", k.name)
	key := keyArg(k.name)
	var found bool
	m.update(func(tx store.Tx) {
		var err error
		if found, err = tx.Delete(0, key); err != nil {
			m.fail("DEL %s: %v", k.name, err)
		}
		if found && m.e.Active() {
			m.e.Touched(tx, 0, key)
		}
	})
	scribble(key)

	want := m.live(k) != nil
	if found != want {
		m.fail("DEL %s: found %v, model says %v", k.name, found, want)
	}
	if !found {
		// Nothing to delete: a record past its deadline is gone
		// already. A lapse its waiters have not been told of is still
		// to be handed over (STATUS shows it running meanwhile).
		if k.rec != nil && (k.rec.state != once.Running || len(k.q) == 0) {
			k.rec = nil
		}
		return
	}
	k.rec = nil
	m.settle(k)
}

// flush is FLUSHDB as the commands run it: the flush, then Flushed, in
// one transaction. It is a lapse of every running record at that moment.
func (m *modelRun) flush() {
	m.logf("FLUSHDB")
	m.update(func(tx store.Tx) {
		if err := tx.Flush(0); err != nil {
			m.fail("FLUSHDB: %v", err)
		}
		m.e.Flushed(tx, 0)
	})
	for _, k := range m.keys {
		k.rec = nil
		m.settle(k)
	}
}

// tick fires the key's lapse timer.
func (m *modelRun) tick(ki int) {
	k := m.keys[ki]
	m.logf("TICK %s", k.name)
	key := keyArg(k.name)
	if err := m.e.Lapse(0, key); err != nil {
		m.fail("TICK %s: %v", k.name, err)
	}
	scribble(key)
	m.settle(k)
}

// restart restarts the engine: every waiter is told the server is
// shutting down; records and the token counter stay (KV-16).
func (m *modelRun) restart() {
	m.logf("RESTART")
	m.h.restart(m.t)
	m.e = m.h.e
	for _, k := range m.keys {
		for _, w := range k.q {
			m.deliver(w, mres{err: once.ErrShutdown})
		}
		k.q = nil
		if k.rec != nil {
			k.rec.restored = true
		}
	}
}

func (m *modelRun) advance(ms int64) {
	m.logf("ADVANCE %d", ms)
	m.now += ms
	m.h.clock.Store(m.now)
}

// cancel withdraws client c's waiter: its wait ran out (gone false: it then
// asks again without waiting, as the commands do) or the client went away
// (gone true). With race, the waiter may have been answered by the step
// just run, and Cancel must hand that answer back.
func (m *modelRun) cancel(c int, gone bool) {
	mw := m.clients[c].blocked
	k := m.keys[mw.key]
	what := fmt.Sprintf("CANCEL waiter %d (client %d, %s, claim %v) gone %v", mw.id, c, k.name, mw.claim, gone)
	m.logf("%s", what)
	got, ok := m.e.Cancel(mw.w, gone)
	m.clients[c].blocked = nil
	mw.done = true // withdrawn or answered: no second Cancel
	if mw.expect != nil {
		if !ok {
			m.fail("%s: the waiter was answered, model says with %s, but Cancel did not return it", what, *mw.expect)
		}
		m.received(mw, got)
		if gone && got.State == "claimed" {
			m.clients[c].held[mw.key] = 0
			m.release(k, got.Token)
		}
		return
	}
	if ok {
		m.fail("%s: Cancel returned %s, model says the waiter was not answered", what, resString(got, nil))
	}
	mw.done = true
	for i, x := range k.q {
		if x == mw {
			k.q = append(k.q[:i:i], k.q[i+1:]...)
			break
		}
	}
	if gone {
		return
	}
	if mw.claim {
		a := mw.args
		a.Wait = false
		m.claim(c, mw.key, a)
	} else {
		m.wait(c, mw.key, false)
	}
}

// received checks a waiter's answer against what the model delivered.
func (m *modelRun) received(mw *mwaiter, got once.Result) {
	m.t.Helper()
	what := fmt.Sprintf("waiter %d (client %d, %s, claim %v)", mw.id, mw.client, m.keys[mw.key].name, mw.claim)
	want := *mw.expect
	mw.expect, mw.done = nil, true
	if m.clients[mw.client].blocked == mw {
		m.clients[mw.client].blocked = nil
	}
	m.check(what, got, nil, want)
	if got.Ticket == nil {
		m.fail("%s: answered without a ticket", what)
	}
	m.logf("  -> %s: %s", what, resString(got, nil))
	if want.state != "claimed" {
		return
	}
	m.newToken(got.Token, what)
	m.clients[mw.client].held[mw.key] = got.Token
	if r := m.keys[mw.key].rec; r != nil && r.heir == mw {
		r.token, r.heir = got.Token, nil
	}
}

// drain takes the answers of the step just run: every waiter the model
// answered has exactly one, every other none (KV-10: the wake-up is in
// the step that completes, aborts or hands over; a waiter is answered
// once).
func (m *modelRun) drain(except *mwaiter) {
	m.t.Helper()
	for _, mw := range m.waiters {
		if mw == except {
			continue
		}
		n := len(mw.w.C())
		switch {
		case mw.done && n > 0:
			m.fail("waiter %d (client %d, %s) answered a second time: %s", mw.id, mw.client, m.keys[mw.key].name, resString(<-mw.w.C(), nil))
		case mw.done:
		case mw.expect != nil && n == 0:
			m.fail("waiter %d (client %d, %s, claim %v) not answered, model says %s", mw.id, mw.client, m.keys[mw.key].name, mw.claim, *mw.expect)
		case mw.expect != nil:
			m.received(mw, <-mw.w.C())
		case n > 0:
			mw.done = true
			m.fail("waiter %d (client %d, %s, claim %v) answered %s, model says it still waits", mw.id, mw.client, m.keys[mw.key].name, mw.claim, resString(<-mw.w.C(), nil))
		}
	}
}

// verify compares what STATUS shows of every key with the model, and the
// engine's counts of waiters and running keys.
func (m *modelRun) verify() {
	m.t.Helper()
	var (
		sts     [modelKeys]once.Status
		oks     [modelKeys]bool
		errs    [modelKeys]error
		running int
	)
	m.update(func(tx store.Tx) {
		for i, k := range m.keys {
			sts[i], oks[i], errs[i] = m.e.Status(tx, 0, []byte(k.name))
		}
		running = m.e.RunningKeys(tx.Now())
	})
	waiting, liveRunning := 0, 0
	for i, k := range m.keys {
		waiting += len(k.q)
		st, ok, err := sts[i], oks[i], errs[i]
		if err != nil {
			m.fail("STATUS %s: %v", k.name, err)
		}
		r := m.live(k)
		if r == nil && k.rec != nil && k.rec.state == once.Running && len(k.q) > 0 {
			// The lease passed and nothing has settled the lapse yet
			// (no TICK): the key still runs, with no lease left, for
			// its waiters, until the handover.
			lr := k.rec
			if !ok || st.State != once.Running || st.Token != lr.token || st.HasFP != lr.hasFP ||
				(lr.hasFP && string(st.Fingerprint) != lr.fp) || st.LeaseMs != 0 || st.KeepMs != -1 || st.Waiters != len(k.q) {
				m.fail("STATUS %s of a lapse not settled yet: ok %v %+v; model: running, token %d fp %q/%v lease-ms 0 keep-ms -1 waiters %d",
					k.name, ok, st, lr.token, lr.fp, lr.hasFP, len(k.q))
			}
			continue
		}
		if r == nil {
			if ok {
				m.fail("STATUS %s: %+v, model says free", k.name, st)
			}
			continue
		}
		if r.heir != nil {
			m.fail("model: %s's heir %d was never told", k.name, r.heir.id)
		}
		leaseMs, keepMs := int64(-1), int64(-1)
		if r.state == once.Running {
			if !r.restored {
				liveRunning++
			}
			leaseMs = r.deadline - m.now
		} else if r.deadline != 0 {
			keepMs = r.deadline - m.now
		}
		bad := !ok || st.State != r.state || st.Token != r.token || st.HasFP != r.hasFP ||
			(r.hasFP && string(st.Fingerprint) != r.fp) || st.LeaseMs != leaseMs || st.KeepMs != keepMs ||
			st.Waiters != len(k.q) || (r.state == once.Done && string(st.Answer) != r.answer)
		if bad {
			m.fail("STATUS %s: ok %v state %v token %d fp %q/%v lease-ms %d keep-ms %d waiters %d answer %q; model: state %v token %d fp %q/%v lease-ms %d keep-ms %d waiters %d answer %q",
				k.name, ok, st.State, st.Token, st.Fingerprint, st.HasFP, st.LeaseMs, st.KeepMs, st.Waiters, st.Answer,
				r.state, r.token, r.fp, r.hasFP, leaseMs, keepMs, len(k.q), r.answer)
		}
		// One holder (KV-9, KV-13): tokens are never handed out twice,
		// so the current one is held by one client at most.
		if r.state == once.Running {
			holders := 0
			for _, c := range m.clients {
				if c.held[i] == st.Token {
					holders++
				}
			}
			if holders > 1 {
				m.fail("%s: %d clients hold token %d", k.name, holders, st.Token)
			}
		}
	}
	if got := m.e.Waiting(); got != int64(waiting) {
		m.fail("engine counts %d waiting callers, model %d", got, waiting)
	}
	if running != liveRunning {
		m.fail("engine counts %d running keys, model %d", running, liveRunning)
	}
}

// byteSource reads an input's bytes; past the end it reads zeros.
type byteSource struct {
	b []byte
	i int
}

func (s *byteSource) more() bool { return s.i < len(s.b) }

func (s *byteSource) next() byte {
	if s.i >= len(s.b) {
		return 0
	}
	s.i++
	return s.b[s.i-1]
}

// runModel runs one input against the harness's engine.
func runModel(t testing.TB, h *modelHarness, data []byte) {
	t.Helper()
	h.runs++
	m := &modelRun{t: t, h: h, e: h.e, now: h.clock.Load()}
	for i := range m.keys {
		m.keys[i] = &mkey{name: fmt.Sprintf("run%d:k%d", h.runs, i)}
	}
	for i := range m.clients {
		m.clients[i] = &mclient{}
	}
	defer m.cleanup()
	src := &byteSource{b: data}
	for m.step = 0; m.step < modelMaxOps && src.more(); m.step++ {
		m.stepMax = m.maxTok
		op := src.next()
		if op%16 == 14 { // RACE
			a := src.next()
			c := int(a) % modelClients
			mw := m.clients[c].blocked
			if mw == nil {
				continue
			}
			m.logf("RACE waiter %d with the next step", mw.id)
			next := src.next()
			if next%16 == 14 {
				next = 9
			}
			m.exec(next, src, mw)
			m.drain(mw)
			m.cancel(c, a&0x10 != 0)
		} else {
			m.exec(op, src, nil)
		}
		m.drain(nil)
		m.verify()
	}
}

// exec decodes and runs one step. A client that race excludes, or that is
// blocked, sends nothing: a step of its becomes a step of the next client,
// or the withdrawal of its waiter.
func (m *modelRun) exec(op byte, src *byteSource, race *mwaiter) {
	a, b := src.next(), src.next()
	c := int(a & 3)
	ki := int((a>>2)&3) % modelKeys
	if race != nil && c == race.client {
		c = (c + 1) % modelClients
	}
	switch op % 16 {
	case 9, 10, 11, 12, 13, 14:
	default:
		if m.clients[c].blocked == nil {
			break
		}
		// Most often the step is another client's; sometimes the
		// blocked client's wait runs out, or it goes away.
		if b&0xc0 != 0 {
			for i := 1; i < modelClients; i++ {
				d := (c + i) % modelClients
				if m.clients[d].blocked == nil && (race == nil || d != race.client) {
					c = d
					break
				}
			}
		}
		if m.clients[c].blocked != nil {
			m.cancel(c, a&0x10 != 0)
			return
		}
	}
	switch op % 16 {
	case 0, 1, 2, 15:
		f := fingerprints[(b>>3)&7]
		args := once.ClaimArgs{Lease: claimLeases[int(b&7)%len(claimLeases)], Wait: op%16 == 15 || a&0x20 != 0}
		if f.hasFP {
			args.FP, args.HasFP = []byte(f.fp), true
		}
		m.claim(c, ki, args)
	case 3, 4:
		answer := fmt.Sprintf("a%d", m.step)
		if a&0xc0 == 0xc0 {
			answer = ""
		}
		m.complete(c, ki, m.tokenArg(c, ki, b), answer, keeps[int(a>>5&7)%len(keeps)])
	case 5:
		msg := fmt.Sprintf("m%d", m.step)
		if a&0x10 != 0 {
			msg = "aborted"
		}
		m.abort(c, ki, m.tokenArg(c, ki, b), msg)
	case 6:
		m.extend(c, ki, m.tokenArg(c, ki, b), extendLeases[int(a>>4)%len(extendLeases)])
	case 7, 8:
		m.wait(c, ki, a&0x10 == 0)
	case 9:
		if a&0xf0 == 0xf0 {
			m.restart()
		} else {
			m.tick(ki)
		}
	case 10:
		if a&0xf0 == 0xf0 && b >= 0xf0 { // rare: a flush costs a store drain
			m.flush()
		} else {
			m.del(ki)
		}
	case 11, 12:
		m.advance(advances[int(b)%len(advances)])
	case 13:
		if m.clients[c].blocked != nil {
			m.cancel(c, a&0x10 != 0)
		} else {
			m.wait(c, ki, false)
		}
	case 14:
		m.tick(ki)
	}
}

// cleanup withdraws every waiter still waiting and deletes the run's keys,
// so that the next run on the harness starts from nothing.
func (m *modelRun) cleanup() {
	for _, mw := range m.waiters {
		if mw.done {
			continue
		}
		mw.done = true
		// Cancel waits for an answer the engine says it gave: bounded,
		// for a run that failed on a waiter the engine got wrong.
		type res struct {
			r  once.Result
			ok bool
		}
		ch := make(chan res, 1)
		go func() {
			r, ok := m.e.Cancel(mw.w, false)
			ch <- res{r, ok}
		}()
		select {
		case x := <-ch:
			if x.ok && !m.t.Failed() {
				m.t.Errorf("cleanup: waiter %d was answered %s unseen", mw.id, resString(x.r, nil))
			}
		case <-time.After(5 * time.Second):
			m.t.Errorf("cleanup: withdrawing waiter %d hangs: the engine marked it answered but sent nothing", mw.id)
			return
		}
	}
	m.update(func(tx store.Tx) {
		for _, k := range m.keys {
			key := []byte(k.name)
			if found, _ := tx.Delete(0, key); found && m.e.Active() {
				m.e.Touched(tx, 0, key)
			}
		}
	})
}

// modelSeeds are hand-written inputs for the fuzzer's corpus: each op is
// three bytes (op, a, b), see exec.
var modelSeeds = [][]byte{
	// claim, a claim waiter, a wait waiter, complete with the token
	{0, 0x00, 0x02, 15, 0x01, 0x00, 7, 0x02, 0, 3, 0x00, 0x00},
	// claim, two claim waiters, the lease lapses, TICK hands it over
	{0, 0x00, 0x01, 15, 0x01, 0x02, 15, 0x02, 0x03, 11, 0, 7, 9, 0, 0},
	// fingerprints: claim without, waiters with x and y, DEL hands over
	{0, 0x00, 0x00, 15, 0x01, 0x08, 15, 0x02, 0x10, 7, 0x03, 0, 10, 0, 0},
	// abort with waiters, stale complete
	{0, 0x00, 0x00, 15, 0x01, 0x00, 5, 0x00, 0x00, 3, 0x00, 0x06},
	// keep 0 and keep 1000 then advance
	{0, 0x00, 0x00, 15, 0x01, 0x00, 3, 0x20, 0x00, 0, 0x00, 0x00, 3, 0x60, 0x00, 11, 0, 3, 7, 0x01, 0},
	// race: a claim waiter withdrawn as the lease lapses, gone
	{0, 0x00, 0x01, 15, 0x01, 0x00, 15, 0x02, 0x00, 11, 0, 7, 14, 0x11, 10, 0x00, 0x00},
}

func FuzzEngineModel(f *testing.F) {
	for _, s := range modelSeeds {
		f.Add(s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		f.Add(randomInput(rng, 300))
	}
	h := newModelHarness(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		runModel(t, h, data)
	})
}

func randomInput(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// TestEngineModel runs the model on a fixed set of random inputs.
func TestEngineModel(t *testing.T) {
	h := newModelHarness(t)
	seeds := 300
	if testing.Short() {
		seeds = 50
	}
	if s := os.Getenv("ONCE_MODEL_SEEDS"); s != "" {
		fmt.Sscan(s, &seeds)
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
		data := randomInput(rng, 3*150)
		ok := t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) { runModel(t, h, data) })
		if !ok {
			t.Logf("input: %x", data)
			return
		}
	}
	t.Logf("%d runs, steps by kind: %v", seeds, h.ops)
}
