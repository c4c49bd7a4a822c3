// Package once is the ONCE engine: run a function once per key and keep its
// answer. It knows records, leases, tokens and waiters; it knows nothing of
// RESP.
//
// A key is free (no record), running (a claim: token, lease deadline,
// fingerprint) or done (an answer with its keep deadline). Records live in
// the store, so they persist and expire like any key (KV-16, KV-14).
//
// The engine promises, when every call on a key is made inside an exclusive
// store transaction (store.Update):
//
//   - One runner (KV-9): a free key is claimed by exactly one Claim.
//   - Kept answers (KV-8): while a done record lives, Claim returns it.
//   - Push wake-ups (KV-10): Complete and Abort hand their outcome to every
//     waiter of the key in the same transaction; it reaches them, through
//     the function returned by Commit, with the transaction's durability
//     ticket, so a waiter replies only with what is as durable as any
//     acknowledged write.
//   - Leases (KV-13): a timer fires at the lease deadline of a key that has
//     waiters; the claim passes to the oldest Claim waiter with a new token,
//     or the key becomes free. A waiter whose caller has left (Watch) is
//     passed by, even before it withdraws (Cancel). Tokens come from one counter that only grows,
//     also across restarts: a block of tokens is reserved in the store
//     before any of it is handed out.
//
// It does not promise anything to waiters of another process: waiters are
// in memory, and a restart drops them (their connections are gone anyway).
package once

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/store"
)

// tokenBlock is how many tokens are reserved in the store at a time.
const tokenBlock = 1 << 16

const metaTokens = "once:token-hwm"

// Config configures the engine.
type Config struct {
	// DefaultLease is the lease of a claim that names none.
	DefaultLease time.Duration
	Logger       *zap.Logger
}

// DefaultConfig is the contract's default: 30 s leases.
func DefaultConfig() Config {
	return Config{DefaultLease: 30 * time.Second, Logger: zap.NewNop()}
}

// Stats are the counters INFO's Once section shows.
type Stats struct {
	Claims, Completes, Aborts, Replays, Waits, Wakeups atomic.Int64
	LeaseLapses, Handoffs, StaleRejects, Mismatches    atomic.Int64
	waiting                                            atomic.Int64
}

// Engine runs ONCE operations against a store.
type Engine struct {
	st  store.Store
	cfg Config
	// updateTx runs the engine's own transactions (update): the store's
	// Update, or what SetUpdater set.
	updateTx Updater
	// hold, if set, says whether the engine's own writes must wait (a
	// CLIENT PAUSE): see SetHold.
	hold  func() <-chan struct{}
	log   *zap.Logger
	Stats Stats

	// These are touched only inside exclusive store transactions (or by
	// Start/Close): the store's lock serializes them. mu guards keys
	// against the timer goroutines' reads of a key's state.
	mu      sync.Mutex
	keys    map[wkey]*keyState
	running map[wkey]int64 // running records' lease deadlines, for INFO
	next    uint64
	hwm     uint64
	pending []delivery
	self    bool // the engine itself is writing (ignore Touched)
	closed  bool
	// keyBuf and valBuf are where save builds the key and the record it
	// stores: the store copies both (store.Tx.Set), so the buffers serve
	// every save, where each was an allocation per ONCE command. save is
	// not re-entrant: the hooks its Set calls reach the engine only
	// through Touched, which returns at once while self is set.
	keyBuf, valBuf []byte

	// keysPeak and runningPeak are the most entries each map held since
	// it was last rebuilt, and rebuilds counts the rebuilds (maps.go).
	keysPeak, runningPeak, rebuilds int

	// adopting is the goroutine that adds the running records of before
	// the start to running (adopt), which Close waits for.
	adopting sync.WaitGroup
	// unadopted is set from Start, with a store.KindWalker, until adopt
	// ends: the running records of before are not all in running yet, so
	// the writes of other commands must reach Stored (Active), or a
	// RENAME of one after the walk found it, under a name the walk had
	// passed, would be counted under neither name.
	unadopted atomic.Bool
	// toAdopt is what the walk found and adopt has not checked yet,
	// under e.mu: a SWAPDB meanwhile renumbers it (Swapped), as it
	// renumbers running.
	toAdopt []wkey
}

type wkey struct {
	db  int
	key string
}

// bytes is k's key as a byte slice that shares the string's memory, for
// a store read, which neither keeps nor changes the key it is given: a
// copy was an allocation of every ONCE command.
func (k wkey) bytes() []byte { return unsafe.Slice(unsafe.StringData(k.key), len(k.key)) }

type keyState struct {
	waiters []*Waiter
	timer   *time.Timer
	// fp is the running record's fingerprint, kept for a handover after
	// the record itself has expired.
	fp    []byte
	hasFP bool
	// token and deadline are the running record's, kept for Status
	// after the record has expired and before its lapse is handed over
	// (a pause defers it).
	token    uint64
	deadline int64
}

// track notes what ks must remember of r, the key's running record.
func (ks *keyState) track(r Record) { ks.token, ks.deadline = r.Token, r.Deadline }

type delivery struct {
	w *Waiter
	r Result
}

// Result is the outcome of a ONCE call: a state and its detail.
type Result struct {
	// State is "done", "claimed", "running", "failed" or "free".
	State string
	// Answer is the kept answer (done) or the failure message (failed).
	Answer []byte
	// Token is the claim's token (claimed).
	Token uint64
	// MsLeft is the lease left (running).
	MsLeft int64
	// Err is set when the wait ended with an error (shutdown, wrong type).
	Err error
	// Ticket is done when the result is durable; wait for it before
	// telling a client.
	Ticket store.Ticket
}

// Waiter is a blocked CLAIM … WAIT or WAIT caller.
type Waiter struct {
	claim bool
	lease int64
	fp    []byte
	hasFP bool
	k     wkey
	ch    chan Result
	gone  bool // removed from its key (delivered or cancelled)
	// left, once Watch set it, is closed when the caller has left (its
	// connection closed): a handover passes it by.
	left <-chan struct{}
}

// C delivers the waiter's one result.
func (w *Waiter) C() <-chan Result { return w.ch }

// Watch tells the engine that w's caller has left once left is closed
// (a blocked client's connection). A lapse's handover (KV-13) then passes
// a waiter whose caller has left by, to the next one or to freeing the
// key, rather than handing it a claim that only its withdrawal (Cancel)
// would give back, a transaction and a token later. The caller must still
// Cancel w once it sees left closed: it then gets ErrGone.
func (e *Engine) Watch(w *Waiter, left <-chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	w.left = left
}

// hasLeft reports whether w's caller has left (Watch). Call it with e.mu
// held.
func (w *Waiter) hasLeft() bool {
	if w.left == nil {
		return false
	}
	select {
	case <-w.left:
		return true
	default:
		return false
	}
}

// New returns an engine over st. It starts nothing: call Start.
func New(st store.Store, cfg Config) *Engine {
	if cfg.DefaultLease <= 0 {
		cfg.DefaultLease = DefaultConfig().DefaultLease
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Engine{st: st, cfg: cfg, log: cfg.Logger, updateTx: st.Update,
		keys: make(map[wkey]*keyState), running: make(map[wkey]int64)}
}

// Updater runs fn in an exclusive transaction, as store.Store's Update
// does.
type Updater func(fn func(store.Tx) error) (store.Ticket, error)

// SetUpdater makes the engine run the transactions it starts by itself (a
// lapse's handover at its timer, a claim given up by a waiter that left)
// through u rather than its store's Update: a command server's u shows
// their writes to whoever watches the keys (WATCH) as it shows a
// command's. The engine takes its own wake-ups (Commit) inside fn. Call
// it before Start.
func (e *Engine) SetUpdater(u Updater) { e.updateTx = u }

// SetHold makes the engine defer the writes it makes on its own (a
// lapse's handover at its timer, the release of a claim handed to a
// waiter that left) while hold returns a channel, until that channel is
// closed: a command server's CLIENT PAUSE, during which nothing writes
// but the commands it lets through, as in Redis (which neither expires
// nor evicts keys during a pause). A lease that lapses during a pause is
// handed over, or the key freed, when it ends; its waiters go on waiting
// meanwhile. Call it before Start.
func (e *Engine) SetHold(hold func() <-chan struct{}) { e.hold = hold }

// held returns the channel the engine's own writes wait for, or nil.
func (e *Engine) held() <-chan struct{} {
	if e.hold == nil {
		return nil
	}
	return e.hold()
}

// Start loads the token counter: tokens continue above every token that
// may have been handed out before.
//
// It also has the running records stored before it started (a runner
// or the server stopped mid-lease) counted as running (RunningKeys), in
// the background: it asks a store.KindWalker for them, which finds them
// in the walk it makes anyway, so that a restart is not slowed down by a
// walk of the keyspace. Call it before the store's Start, so that the
// store's first walk serves it; after, the store walks for it at once.
// Until the walk ends, a running record of before is counted once a ONCE
// command saves it (EXTEND, a handover) or another command moves it
// (RENAME: Stored), and not once deleted.
func (e *Engine) Start() error {
	_, err := e.st.Update(func(tx store.Tx) error {
		b, err := tx.Meta(metaTokens)
		if err != nil {
			return err
		}
		if len(b) == 8 {
			e.next = binary.BigEndian.Uint64(b)
			e.hwm = e.next
		}
		return nil
	})
	if err != nil {
		return err
	}
	w, ok := e.st.(store.KindWalker)
	if !ok {
		return nil
	}
	e.unadopted.Store(true)
	w.WalkKind(store.KindOnce, func(db int, key []byte, v store.Value) {
		if IsRunning(v) {
			e.mu.Lock()
			e.toAdopt = append(e.toAdopt, wkey{db, string(key)})
			e.mu.Unlock()
		}
	}, func(bool) {
		// On the store's walk, which may hold the store's lock: adopt
		// runs transactions, so it runs on a goroutine of its own.
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.closed {
			e.unadopted.Store(false)
			return
		}
		e.adopting.Add(1)
		go func() {
			defer e.adopting.Done()
			defer e.unadopted.Store(false)
			e.adopt()
		}()
	})
	return nil
}

// adoptBatch is how many records adopt checks in one transaction: each
// check may read Badger (a restart left the record on disk only), and
// commands wait for the transaction, so a few milliseconds' worth at most.
const adoptBatch = 128

// adopt adds to running the keys of toAdopt, which held running records
// at some moment since the store opened, whose records are running
// still. A key that is in running already has been saved since: what
// running says of it is newer than what the walk found.
func (e *Engine) adopt() {
	for {
		e.mu.Lock()
		none := len(e.toAdopt) == 0
		e.mu.Unlock()
		if none {
			return
		}
		stop := false
		err := e.update(func(tx store.Tx) {
			// The batch is taken in the transaction, so that no SWAPDB
			// renumbers it between the taking and the checks.
			e.mu.Lock()
			stop = e.closed
			n := min(len(e.toAdopt), adoptBatch)
			batch := e.toAdopt[:n:n]
			e.toAdopt = e.toAdopt[n:]
			if len(e.toAdopt) == 0 {
				e.toAdopt = nil
			}
			e.mu.Unlock()
			if stop {
				return
			}
			for _, k := range batch {
				if _, ok := e.running[k]; ok {
					continue
				}
				v, ok, err := tx.Get(k.db, k.bytes())
				if err != nil {
					e.log.Warn("once: count running records", zap.Error(err))
					continue
				}
				if ok && IsRunning(v) {
					e.running[k] = v.ExpireAt
					grown(&e.runningPeak, len(e.running))
				}
			}
		})
		if err != nil || stop {
			return
		}
	}
}

// Close wakes every waiter with ErrShutdown and stops the timers.
func (e *Engine) Close() {
	var wake []*Waiter
	shut := func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.closed = true
		for k, ks := range e.keys {
			if ks.timer != nil {
				ks.timer.Stop()
			}
			for _, w := range ks.waiters {
				w.gone = true
				wake = append(wake, w)
			}
			delete(e.keys, k)
		}
	}
	ran := false
	_, _ = e.st.Update(func(store.Tx) error {
		ran = true
		shut()
		return nil
	})
	if !ran {
		// The store refuses transactions (a full disk, or it is closed
		// already), so none runs now, but a lapse it refused would be
		// tried again for good: the timers stop and the waiters are
		// woken all the same.
		shut()
	}
	for _, w := range wake {
		e.Stats.waiting.Add(-1)
		w.ch <- Result{Err: ErrShutdown, Ticket: store.Done{}}
	}
	e.adopting.Wait()
}

// Commit takes the wake-ups gathered by the current transaction; call it
// at the end of the transaction, and the returned function after it, with
// its ticket. It returns nil when there is nothing to deliver.
func (e *Engine) Commit() func(store.Ticket) {
	if len(e.pending) == 0 {
		return nil
	}
	ds := e.pending
	e.pending = nil
	return func(t store.Ticket) {
		if t == nil {
			t = store.Done{}
		}
		for _, d := range ds {
			d.r.Ticket = t
			d.w.ch <- d.r
		}
	}
}

// update runs fn in the engine's own transaction and delivers its wake-ups.
//
// It returns the store's error when the store refused the transaction
// (fn did not run: a full disk, a closed store).
func (e *Engine) update(fn func(tx store.Tx)) error {
	var after func(store.Ticket)
	ran := false
	t, err := e.updateTx(func(tx store.Tx) error {
		ran = true
		fn(tx)
		after = e.Commit()
		return nil
	})
	if err != nil && t == nil {
		e.log.Warn("once: transaction failed", zap.Error(err))
	}
	if after != nil {
		after(t)
	}
	if ran {
		return nil
	}
	return err
}

func (e *Engine) now(tx store.Tx) int64 { return tx.Now() }

// load reads the record of a key; ok is false when the key is free.
func (e *Engine) load(tx store.Tx, k wkey) (Record, bool, error) {
	v, ok, err := tx.Get(k.db, k.bytes())
	if err != nil || !ok {
		return Record{}, false, err
	}
	if v.Kind != store.KindOnce {
		return Record{}, false, ErrWrongType
	}
	r, err := decode(v)
	return r, err == nil, err
}

func (e *Engine) save(tx store.Tx, k wkey, r Record) error {
	e.self = true
	defer func() { e.self = false }()
	if r.State == Running {
		e.running[k] = r.Deadline
		grown(&e.runningPeak, len(e.running))
	} else {
		e.forgetRunning(k)
	}
	e.keyBuf = append(e.keyBuf[:0], k.key...)
	v := r.appendTo(e.valBuf[:0])
	e.valBuf = v.Data
	if cap(e.keyBuf) > bufKeep {
		defer func() { e.keyBuf = nil }()
	}
	if cap(e.valBuf) > bufKeep {
		defer func() { e.valBuf = nil }()
	}
	return tx.Set(k.db, e.keyBuf, v)
}

// bufKeep is the largest key or record buffer the engine keeps for the
// next save: a large answer's buffer is not worth holding on to.
const bufKeep = 4 << 10

func (e *Engine) remove(tx store.Tx, k wkey) error {
	e.self = true
	defer func() { e.self = false }()
	e.forgetRunning(k)
	_, err := tx.Delete(k.db, []byte(k.key))
	return err
}

// newToken draws the next token, reserving a new block in the store first
// when the current one is used up.
func (e *Engine) newToken(tx store.Tx) (uint64, error) {
	if e.next+1 > e.hwm {
		hwm := e.next + tokenBlock
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], hwm)
		if err := tx.SetMeta(metaTokens, b[:]); err != nil {
			return 0, err
		}
		e.hwm = hwm
	}
	e.next++
	return e.next, nil
}

// after is the deadline ms (> 0) after now, both Unix ms: the largest
// deadline rather than one that wraps into the past, which would free a
// claim or drop an answer at once (KV-9, KV-14).
func after(now, ms int64) int64 {
	if ms > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + ms
}

func (e *Engine) lease(ms int64) int64 {
	if ms > 0 {
		return ms
	}
	return e.cfg.DefaultLease.Milliseconds()
}

// ClaimArgs are ONCE.CLAIM's options.
type ClaimArgs struct {
	// Lease in ms; 0 means the default.
	Lease int64
	// Wait asks to wait for a running claim (the caller blocks on the
	// returned Waiter); CLAIM without WAIT, or inside MULTI, sets false.
	Wait  bool
	FP    []byte
	HasFP bool
}

func fpDiffers(r Record, a ClaimArgs) bool {
	return r.HasFP && a.HasFP && string(r.Fingerprint) != string(a.FP)
}

// Claim claims a free key, returns a kept answer, or reports (or, with
// Wait, waits for) someone else's run.
func (e *Engine) Claim(tx store.Tx, db int, key []byte, a ClaimArgs) (Result, *Waiter, error) {
	k := wkey{db, string(key)}
	r, ok, err := e.settle(tx, k)
	if err != nil {
		return Result{}, nil, err
	}
	now := e.now(tx)
	if !ok {
		tok, err := e.newToken(tx)
		if err != nil {
			return Result{}, nil, err
		}
		r = Record{State: Running, Token: tok, Fingerprint: a.FP, HasFP: a.HasFP, Deadline: after(now, e.lease(a.Lease))}
		if err := e.save(tx, k, r); err != nil {
			return Result{}, nil, err
		}
		e.Stats.Claims.Add(1)
		return Result{State: "claimed", Token: tok}, nil, nil
	}
	if fpDiffers(r, a) {
		e.Stats.Mismatches.Add(1)
		return Result{}, nil, ErrMismatch
	}
	if r.State == Done {
		e.Stats.Replays.Add(1)
		return Result{State: "done", Answer: r.Answer}, nil, nil
	}
	if !a.Wait {
		return Result{State: "running", MsLeft: r.Deadline - now}, nil, nil
	}
	w := &Waiter{claim: true, lease: a.Lease, fp: a.FP, hasFP: a.HasFP, k: k, ch: make(chan Result, 1)}
	e.addWaiter(r, w)
	return Result{}, w, nil
}

// Wait reports a key's outcome, or (with block) waits for its run.
func (e *Engine) Wait(tx store.Tx, db int, key []byte, block bool) (Result, *Waiter, error) {
	k := wkey{db, string(key)}
	r, ok, err := e.settle(tx, k)
	if err != nil {
		return Result{}, nil, err
	}
	switch {
	case !ok:
		return Result{State: "free"}, nil, nil
	case r.State == Done:
		e.Stats.Replays.Add(1)
		return Result{State: "done", Answer: r.Answer}, nil, nil
	case !block:
		return Result{State: "running", MsLeft: r.Deadline - e.now(tx)}, nil, nil
	}
	w := &Waiter{k: k, ch: make(chan Result, 1)}
	e.addWaiter(r, w)
	return Result{}, w, nil
}

func (e *Engine) addWaiter(r Record, w *Waiter) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ks := e.keys[w.k]
	if ks == nil {
		ks = &keyState{}
		e.keys[w.k] = ks
		grown(&e.keysPeak, len(e.keys))
	}
	ks.fp, ks.hasFP = r.Fingerprint, r.HasFP
	if r.HasFP {
		ks.fp = append([]byte(nil), r.Fingerprint...)
	}
	ks.track(r)
	ks.waiters = append(ks.waiters, w)
	e.Stats.Waits.Add(1)
	e.Stats.waiting.Add(1)
	e.armLocked(w.k, ks, r.Deadline)
}

// armLocked sets the key's lapse timer to fire at deadline (Unix ms).
func (e *Engine) armLocked(k wkey, ks *keyState, deadline int64) {
	d := time.Until(time.UnixMilli(deadline))
	if ks.timer != nil {
		ks.timer.Reset(d)
		return
	}
	ks.timer = time.AfterFunc(d, func() {
		if ch := e.held(); ch != nil {
			// Paused: fire again once the pause ends.
			go func() {
				<-ch
				e.mu.Lock()
				defer e.mu.Unlock()
				if !e.closed && e.keys[k] == ks {
					ks.timer.Reset(0)
				}
			}()
			return
		}
		var serr error
		err := e.update(func(tx store.Tx) {
			if _, _, serr = e.settle(tx, k); serr == ErrWrongType {
				serr = nil
			}
		})
		if err == nil {
			err = serr
		}
		if err == nil {
			return
		}
		// The lapse could not be written (the store refuses writes: a
		// full disk). Its waiters were told nothing, and no one else
		// may touch the key: try again until it is written.
		e.log.Warn("once: lapse", zap.Error(err))
		e.mu.Lock()
		defer e.mu.Unlock()
		if !e.closed && e.keys[k] == ks {
			ks.timer.Reset(lapseRetry)
		}
	})
}

// lapseRetry is how soon a lapse that could not be written is tried again.
const lapseRetry = 500 * time.Millisecond

// settle loads a key's record after first resolving a lapse that its
// waiters have not been told of yet: the lease passed (or the record was
// deleted) while callers wait, so the claim is handed over now.
func (e *Engine) settle(tx store.Tx, k wkey) (Record, bool, error) {
	r, ok, err := e.load(tx, k)
	if err == ErrWrongType {
		e.failWaiters(k, ErrWrongType)
		return r, ok, err
	}
	if err != nil {
		return r, ok, err
	}
	e.mu.Lock()
	ks := e.keys[k]
	e.mu.Unlock()
	if ks == nil {
		return r, ok, nil
	}
	switch {
	case ok && r.State == Running:
		e.mu.Lock()
		ks.track(r)
		if r.HasFP != ks.hasFP || !bytes.Equal(r.Fingerprint, ks.fp) {
			// Another run than the one the waiters joined (a SWAPDB,
			// MOVE or RENAME brought it): a handover keeps its
			// fingerprint, and a CLAIM waiter of another request
			// is one (KV-15).
			ks.fp, ks.hasFP = bytes.Clone(r.Fingerprint), r.HasFP
			e.mismatchLocked(ks, r)
		}
		if len(ks.waiters) == 0 {
			e.dropLocked(k, ks)
		} else {
			e.armLocked(k, ks, r.Deadline)
		}
		e.mu.Unlock()
		return r, ok, nil
	case ok && r.State == Done:
		// Not reachable through the engine (Complete wakes everyone),
		// but a restored, renamed or swapped record could get here:
		// its answer is not for a CLAIM waiter of another request.
		e.mu.Lock()
		e.mismatchLocked(ks, r)
		e.mu.Unlock()
		e.wakeAll(k, Result{State: "done", Answer: r.Answer})
		return r, ok, nil
	}
	if err := e.lapse(tx, k, ks); err != nil {
		return r, ok, err
	}
	return e.load(tx, k)
}

// lapse hands a lapsed claim to the oldest Claim waiter with a new token,
// or frees the key and tells the WAIT waiters so.
func (e *Engine) lapse(tx store.Tx, k wkey, ks *keyState) error {
	e.Stats.LeaseLapses.Add(1)
	return e.handOver(tx, k, ks)
}

// handOver is lapse's work: the claim goes to the oldest Claim waiter, or
// the key becomes free.
func (e *Engine) handOver(tx store.Tx, k wkey, ks *keyState) error {
	e.mu.Lock()
	var next *Waiter
	for i := 0; i < len(ks.waiters); {
		w := ks.waiters[i]
		if !w.claim {
			i++
			continue
		}
		ks.waiters = append(ks.waiters[:i:i], ks.waiters[i+1:]...)
		if w.hasLeft() {
			// Its caller has left and has not withdrawn yet: the
			// claim is not its own, not even for a moment.
			e.drop(w)
			continue
		}
		next = w
		break
	}
	e.mu.Unlock()
	if next == nil {
		if err := e.remove(tx, k); err != nil {
			return err
		}
		e.wakeAll(k, Result{State: "free"})
		return nil
	}
	// A handover that cannot be written leaves the heir first in line
	// for the next try, rather than waiting for an answer that no one
	// will send it.
	requeue := func(err error) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		ks.waiters = append([]*Waiter{next}, ks.waiters...)
		return err
	}
	tok, err := e.newToken(tx)
	if err != nil {
		return requeue(err)
	}
	r := Record{State: Running, Token: tok, Fingerprint: ks.fp, HasFP: ks.hasFP,
		Deadline: after(e.now(tx), e.lease(next.lease))}
	if !r.HasFP && next.hasFP {
		r.Fingerprint, r.HasFP = next.fp, true
	}
	if err := e.save(tx, k, r); err != nil {
		if errors.Is(err, store.ErrValueTooLong) {
			// The heir's own fingerprint makes the record longer than
			// the store takes: that is for good, not for a while (a
			// full disk). The heir gets the error its CLAIM would have
			// had on a free key, and the claim goes to the next one.
			e.mu.Lock()
			e.deliver(next, Result{Err: err})
			e.mu.Unlock()
			return e.handOver(tx, k, ks)
		}
		return requeue(err)
	}
	e.Stats.Handoffs.Add(1)
	e.Stats.Claims.Add(1)
	e.mu.Lock()
	defer e.mu.Unlock()
	// Under e.mu, as Cancel reads gone without a transaction when the
	// store refuses one.
	e.deliver(next, Result{State: "claimed", Token: tok})
	ks.fp, ks.hasFP = r.Fingerprint, r.HasFP
	ks.track(r)
	// The waiters joined a record that may have had no fingerprint.
	e.mismatchLocked(ks, r)
	if len(ks.waiters) == 0 {
		e.dropLocked(k, ks)
		return nil
	}
	e.armLocked(k, ks, r.Deadline)
	return nil
}

// mismatchLocked answers -MISMATCH to the CLAIM waiters of ks whose
// fingerprint differs from r's, the record they now wait on: each is a
// reused key (KV-15), not an heir of r's claim, nor a taker of its answer.
// Call it with e.mu held.
func (e *Engine) mismatchLocked(ks *keyState, r Record) {
	if !r.HasFP {
		return
	}
	kept := ks.waiters[:0]
	for _, w := range ks.waiters {
		if w.claim && w.hasFP && !bytes.Equal(w.fp, r.Fingerprint) {
			e.Stats.Mismatches.Add(1)
			e.deliver(w, Result{Err: ErrMismatch})
			continue
		}
		kept = append(kept, w)
	}
	clear(ks.waiters[len(kept):])
	ks.waiters = kept
}

// drop takes w, whose caller has left, out of the line; its Cancel gets
// ErrGone. Call it with e.mu held.
func (e *Engine) drop(w *Waiter) {
	w.gone = true
	e.Stats.waiting.Add(-1)
	e.pending = append(e.pending, delivery{w, Result{Err: ErrGone}})
}

func (e *Engine) deliver(w *Waiter, r Result) {
	w.gone = true
	e.Stats.waiting.Add(-1)
	e.Stats.Wakeups.Add(1)
	e.pending = append(e.pending, delivery{w, r})
}

// wakeAll delivers r to every waiter of k and forgets the key.
func (e *Engine) wakeAll(k wkey, r Result) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ks := e.keys[k]
	if ks == nil {
		return
	}
	if len(ks.waiters) > 0 && r.Answer != nil {
		// The caller's answer may be a command's argument, which the
		// connection reuses: the waiters get their own copy.
		r.Answer = bytes.Clone(r.Answer)
	}
	for _, w := range ks.waiters {
		e.deliver(w, r)
	}
	ks.waiters = nil
	e.dropLocked(k, ks)
}

func (e *Engine) failWaiters(k wkey, err error) { e.wakeAll(k, Result{Err: err}) }

func (e *Engine) dropLocked(k wkey, ks *keyState) {
	if ks.timer != nil {
		ks.timer.Stop()
	}
	delete(e.keys, k)
	e.keys = shrunk(e.keys, &e.keysPeak, &e.rebuilds)
}

// forgetRunning deletes k from running. Call it inside an exclusive store
// transaction.
func (e *Engine) forgetRunning(k wkey) {
	delete(e.running, k)
	e.running = shrunk(e.running, &e.runningPeak, &e.rebuilds)
}

// holder loads the running record that token must hold.
func (e *Engine) holder(tx store.Tx, k wkey, token uint64) (Record, error) {
	r, ok, err := e.settle(tx, k)
	if err != nil {
		return r, err
	}
	if !ok || r.State != Running || r.Token != token {
		e.Stats.StaleRejects.Add(1)
		return r, ErrStale
	}
	return r, nil
}

// Complete stores the answer of the run token holds and wakes its waiters.
// keep < 0 keeps the answer until deleted; keep == 0 gives it to the
// current waiters only.
func (e *Engine) Complete(tx store.Tx, db int, key []byte, token uint64, answer []byte, keep int64) error {
	k := wkey{db, string(key)}
	r, err := e.holder(tx, k, token)
	if err != nil {
		return err
	}
	if keep == 0 {
		err = e.remove(tx, k)
	} else {
		done := Record{State: Done, Token: r.Token, Fingerprint: r.Fingerprint, HasFP: r.HasFP, Answer: answer}
		if keep > 0 {
			done.Deadline = after(e.now(tx), keep)
		}
		err = e.save(tx, k, done)
	}
	if err != nil {
		return err
	}
	e.Stats.Completes.Add(1)
	e.wakeAll(k, Result{State: "done", Answer: answer})
	return nil
}

// Abort frees the key, keeping nothing, and fails its waiters (KV-12).
func (e *Engine) Abort(tx store.Tx, db int, key []byte, token uint64, msg []byte) error {
	k := wkey{db, string(key)}
	if _, err := e.holder(tx, k, token); err != nil {
		return err
	}
	if err := e.remove(tx, k); err != nil {
		return err
	}
	e.Stats.Aborts.Add(1)
	e.wakeAll(k, Result{State: "failed", Answer: msg})
	return nil
}

// Extend moves the lease deadline of the run token holds to now + lease.
func (e *Engine) Extend(tx store.Tx, db int, key []byte, token uint64, lease int64) error {
	if lease <= 0 {
		return ErrInvalidLease
	}
	k := wkey{db, string(key)}
	r, err := e.holder(tx, k, token)
	if err != nil {
		return err
	}
	r.Deadline = after(e.now(tx), lease)
	if err := e.save(tx, k, r); err != nil {
		return err
	}
	e.mu.Lock()
	if ks := e.keys[k]; ks != nil {
		ks.track(r)
		e.armLocked(k, ks, r.Deadline)
	}
	e.mu.Unlock()
	return nil
}

// Status describes a key for ONCE.STATUS.
type Status struct {
	Record
	LeaseMs, KeepMs int64
	Waiters         int
}

// Status reports a key's record; ok is false when it is free.
//
// A running record whose lease passed while callers wait for it is
// running still, until its lapse is handed over (at once, or when a
// CLIENT PAUSE ends: SetHold): Status reports it so, with its token and
// a LeaseMs of 0, although reads see the record gone (KV-4).
func (e *Engine) Status(tx store.Tx, db int, key []byte) (Status, bool, error) {
	k := wkey{db, string(key)}
	r, ok, err := e.load(tx, k)
	if err != nil {
		return Status{}, false, err
	}
	if !ok {
		e.mu.Lock()
		defer e.mu.Unlock()
		ks := e.keys[k]
		if ks == nil || len(ks.waiters) == 0 {
			return Status{}, false, nil
		}
		r = Record{State: Running, Token: ks.token, Fingerprint: ks.fp, HasFP: ks.hasFP, Deadline: ks.deadline}
		return Status{Record: r, LeaseMs: 0, KeepMs: -1, Waiters: len(ks.waiters)}, true, nil
	}
	st := Status{Record: r, LeaseMs: -1, KeepMs: -1}
	left := r.Deadline - e.now(tx)
	if r.State == Running {
		st.LeaseMs = left
	} else if r.Deadline != 0 {
		st.KeepMs = left
	}
	e.mu.Lock()
	if ks := e.keys[k]; ks != nil {
		st.Waiters = len(ks.waiters)
	}
	e.mu.Unlock()
	return st, true, nil
}

// Cancel withdraws a waiter whose wait ended (timeout or disconnect). It
// runs its own transaction. If the waiter had already been given a result,
// Cancel returns it (ok true); a claim handed to a caller that has gone is
// passed on at once, so no claim waits out a lease on a dead waiter.
func (e *Engine) Cancel(w *Waiter, gone bool) (r Result, ok bool) {
	delivered := false
	withdraw := func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if w.gone {
			delivered = true
			return
		}
		w.gone = true
		e.Stats.waiting.Add(-1)
		if ks := e.keys[w.k]; ks != nil {
			for i, x := range ks.waiters {
				if x == w {
					ks.waiters = append(ks.waiters[:i:i], ks.waiters[i+1:]...)
					break
				}
			}
			if len(ks.waiters) == 0 {
				e.dropLocked(w.k, ks)
			}
		}
	}
	if e.update(func(store.Tx) { withdraw() }) != nil {
		// The store refuses transactions (a full disk): the waiter must
		// leave its line all the same, or a later lapse hands the claim
		// to no one. It writes nothing, and the waiters are e.mu's.
		withdraw()
	}
	if !delivered {
		return Result{}, false
	}
	// The transaction that delivered it sends it right after committing.
	r = <-w.ch
	if gone && r.State == "claimed" {
		e.Release(w.k.db, []byte(w.k.key), r.Token)
	}
	return r, true
}

// Release gives up a claim as a lapse would: the next Claim waiter takes
// it over, or the key becomes free.
func (e *Engine) Release(db int, key []byte, token uint64) {
	k := wkey{db, string(key)}
	if ch := e.held(); ch != nil {
		// Paused (SetHold): released once the pause ends.
		go func() {
			<-ch
			e.Release(k.db, k.bytes(), token)
		}()
		return
	}
	e.update(func(tx store.Tx) {
		r, ok, err := e.load(tx, k)
		if err != nil || !ok || r.State != Running || r.Token != token {
			return
		}
		e.mu.Lock()
		ks := e.keys[k]
		e.mu.Unlock()
		if ks == nil {
			_ = e.remove(tx, k)
			return
		}
		if err := e.lapse(tx, k, ks); err != nil {
			e.log.Warn("once: release", zap.Error(err))
		}
	})
}

// Touched tells the engine that a command other than ONCE wrote key (DEL,
// SET, RENAME, EXPIRE…) inside tx. A running record deleted under its
// waiters is a lapse at that moment.
func (e *Engine) Touched(tx store.Tx, db int, key []byte) {
	if e.self {
		return
	}
	k := wkey{db, string(key)}
	e.mu.Lock()
	ks := e.keys[k]
	e.mu.Unlock()
	if ks == nil {
		if _, ok := e.running[k]; ok {
			v, found, _ := tx.Get(db, key)
			if !found || !IsRunning(v) {
				delete(e.running, k)
			}
		}
		return
	}
	if _, _, err := e.settle(tx, k); err != nil && err != ErrWrongType {
		e.log.Warn("once: settle after write", zap.Error(err))
	}
}

// Stored is Touched after a command other than ONCE stored v under key:
// a running record stored so (RENAME moves one) is a running claim still,
// under its new name, and RunningKeys counts it.
func (e *Engine) Stored(tx store.Tx, db int, key []byte, v store.Value) {
	if e.self {
		return
	}
	if IsRunning(v) {
		e.running[wkey{db, string(key)}] = v.ExpireAt
		grown(&e.runningPeak, len(e.running))
	}
	e.Touched(tx, db, key)
}

// Flushed tells the engine that db was emptied: its running keys lapse.
func (e *Engine) Flushed(tx store.Tx, db int) {
	var ks []wkey
	e.mu.Lock()
	for k := range e.keys {
		if k.db == db {
			ks = append(ks, k)
		}
	}
	e.mu.Unlock()
	for k := range e.running {
		if k.db == db {
			delete(e.running, k)
		}
	}
	e.running = shrunk(e.running, &e.runningPeak, &e.rebuilds)
	for _, k := range ks {
		if _, _, err := e.settle(tx, k); err != nil && err != ErrWrongType {
			e.log.Warn("once: settle after flush", zap.Error(err))
		}
	}
}

// Swapped tells the engine that databases a and b swapped what they hold
// (SWAPDB). A running record went whole to the other database, with its
// token and lease, and RunningKeys counts it there. The waiters of a key
// of a or b keep waiting on that key in their own database, as Redis's
// blocked clients do, and see what it holds now: a run of the other
// database (they wait on it), a kept answer (they get it), or nothing,
// which is a lapse at once, as DEL's (KV-13: a waiting CLAIM takes a
// new claim, with a greater token).
func (e *Engine) Swapped(tx store.Tx, a, b int) {
	if a == b {
		return
	}
	var moved []wkey
	var deadlines []int64
	for k, d := range e.running {
		if k.db == a || k.db == b {
			moved = append(moved, k)
			deadlines = append(deadlines, d)
			delete(e.running, k)
		}
	}
	for i, k := range moved {
		if k.db == a {
			k.db = b
		} else {
			k.db = a
		}
		e.running[k] = deadlines[i]
	}
	var ks []wkey
	e.mu.Lock()
	// What the start-up walk found and adopt has not checked yet moved
	// too: adopt must look for it in the other database.
	for i, k := range e.toAdopt {
		switch k.db {
		case a:
			e.toAdopt[i].db = b
		case b:
			e.toAdopt[i].db = a
		}
	}
	for k := range e.keys {
		if k.db == a || k.db == b {
			ks = append(ks, k)
		}
	}
	e.mu.Unlock()
	for _, k := range ks {
		if _, _, err := e.settle(tx, k); err != nil && err != ErrWrongType {
			e.log.Warn("once: settle after swapdb", zap.Error(err))
		}
	}
}

// Active reports whether Touched and Flushed have anything to do.
func (e *Engine) Active() bool {
	return len(e.running) > 0 || e.Waiting() > 0 || e.unadopted.Load()
}

// Waiting is the number of blocked callers.
func (e *Engine) Waiting() int64 { return e.Stats.waiting.Load() }

// RunningKeys counts running records whose lease has not passed, forgetting
// the rest. Call it inside an exclusive store transaction.
func (e *Engine) RunningKeys(now int64) int {
	n := 0
	for k, d := range e.running {
		if d > now {
			n++
		} else if _, waited := e.keys[k]; !waited {
			delete(e.running, k)
		}
	}
	e.running = shrunk(e.running, &e.runningPeak, &e.rebuilds)
	return n
}
