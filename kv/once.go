package kv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultLease is the lease of a Once opened without Lease: how long a
// claim holds without being extended. A running function's lease is
// extended every third of it, so it only lapses when the process dies or
// cannot reach the server.
const DefaultLease = 30 * time.Second

// opTimeout bounds the short ONCE commands (COMPLETE, ABORT, EXTEND …
// LEASE 1) sent after a run, whatever the caller's context.
const opTimeout = 10 * time.Second

// Once runs functions once per key and keeps their answers, of type T,
// on the server. Open one with OpenOnce; it is safe for concurrent use.
type Once[T any] struct {
	s      *Store
	name   string
	keep   time.Duration
	kept   bool // keep was given: COMPLETE … KEEP
	lease  time.Duration
	codec  Codec
	fpFunc func(key string) string
	fp     *string // set by WithFingerprint

	// noExtend turns the lease extension off (tests).
	noExtend bool
}

// RunInfo is a Run's value with how it was obtained.
type RunInfo[T any] struct {
	// Value is the answer.
	Value T
	// Replayed is true when this call did not run the function: the
	// answer is a kept one, or the one of a run it waited for.
	Replayed bool
	// Token is the run's fencing token (KV-13) when known: always when
	// this call ran the function, and when it shared a run made by another
	// caller in this process; 0 for answers replayed by the server, whose
	// reply does not carry it.
	Token int64
}

// Option configures a Once.
type Option func(*onceConfig) error

type onceConfig struct {
	keep   time.Duration
	kept   bool
	lease  time.Duration
	codec  Codec
	fpFunc func(string) string
}

// Keep keeps each answer for d after its run completes (KEEP, KV-14); then
// the key is free and the next Run runs again. Keep(0) gives the answer
// only to the callers waiting for the run at that moment, in this process
// and others, and keeps nothing: a cross-process singleflight. Without
// Keep an answer is kept until its key is deleted.
func Keep(d time.Duration) Option {
	return func(c *onceConfig) error {
		if d < 0 {
			return fmt.Errorf("kv: negative keep %v", d)
		}
		c.keep, c.kept = d, true
		return nil
	}
}

// Lease sets how long a claim holds without being extended (default
// DefaultLease). The runner extends it every d/3 while its function runs;
// if the process dies, another caller takes over after at most d.
func Lease(d time.Duration) Option {
	return func(c *onceConfig) error {
		if d < time.Millisecond {
			return fmt.Errorf("kv: lease %v is under a millisecond", d)
		}
		c.lease = d
		return nil
	}
}

// WithCodec sets how answers are encoded (default JSONCodec).
func WithCodec(codec Codec) Option {
	return func(c *onceConfig) error {
		if codec == nil {
			return errors.New("kv: nil codec")
		}
		c.codec = codec
		return nil
	}
}

// Fingerprint derives each call's fingerprint from its key (KV-15); an
// empty result means none. WithFingerprint overrides it for a call.
func Fingerprint(f func(key string) string) Option {
	return func(c *onceConfig) error {
		c.fpFunc = f
		return nil
	}
}

// OpenOnce returns the Once named name on s: its keys are "name:key" on
// the server. Opening the same name twice gives handles that share keys
// (and, on one Store, in-process waits); give them the same options.
func OpenOnce[T any](s *Store, name string, opts ...Option) (*Once[T], error) {
	if s == nil {
		return nil, errors.New("kv: nil store")
	}
	if name == "" {
		return nil, errors.New("kv: empty name")
	}
	c := onceConfig{lease: DefaultLease, codec: JSONCodec{}}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	return &Once[T]{s: s, name: name, keep: c.keep, kept: c.kept, lease: c.lease, codec: c.codec, fpFunc: c.fpFunc}, nil
}

// Name is the name the Once was opened with.
func (o *Once[T]) Name() string { return o.name }

// WithFingerprint returns a handle on the same keys whose calls carry the
// fingerprint fp, typically a hash of the request the key stands for: a
// Run whose fingerprint differs from the one stored with the key's claim
// or answer fails with ErrMismatch instead of returning someone else's
// answer (KV-15). An empty fp means no fingerprint.
//
//	receipt, err := charges.WithFingerprint(sha256hex(order)).Run(ctx, order.ID, charge)
func (o *Once[T]) WithFingerprint(fp string) *Once[T] {
	c := *o
	c.fp = &fp
	return &c
}

func (o *Once[T]) fingerprint(key string) (string, bool) {
	switch {
	case o.fp != nil:
		return *o.fp, *o.fp != ""
	case o.fpFunc != nil:
		fp := o.fpFunc(key)
		return fp, fp != ""
	}
	return "", false
}

// Run returns the answer of key: the kept one, or the one of the run under
// way (waiting for it), or the one fn computes now, once, for everyone.
// See RunInfo for the details and the package documentation for what it
// promises.
func (o *Once[T]) Run(ctx context.Context, key string, fn func(ctx context.Context) (T, error)) (T, error) {
	info, err := o.RunInfo(ctx, key, fn)
	return info.Value, err
}

// RunInfo is Run that also tells whether this call ran fn, and the run's
// token.
//
// The first caller of the key on the Store sends ONCE.CLAIM "name:key"
// without WAIT; if the key runs elsewhere, ONCE.CLAIM … WAIT follows,
// shared with every other caller of the key on the same Store (see
// Store), for as long as ctx allows:
//
//   - a kept answer, or the answer of a run it waited for, is decoded and
//     returned with Replayed true;
//   - when this call gets the claim, fn runs with a context that carries
//     the key (for re-entrance) and that is cancelled, with cause
//     ErrLeaseLost, if the claim is lost; the lease is extended meanwhile.
//     If fn succeeds, its value is stored (ONCE.COMPLETE, with Keep); if
//     the server refuses it because the claim was lost, the value is
//     returned with an error wrapping ErrLeaseLost. If fn fails, the key
//     is freed with fn's error message (ONCE.ABORT) and fn's error is
//     returned; if fn panics, the key is freed with "panic: …" and the
//     panic goes on;
//   - when the run it waited for failed, the error is a *FailedError
//     (ErrRunFailed) with that run's message; the key is free again;
//   - a Run of key inside fn (through fn's context) fails at once with
//     ErrReentrant; a fingerprint that differs from the key's fails with
//     ErrMismatch;
//   - when ctx ends first, ctx.Err() is returned at once (after the
//     first claim's round trip, for the caller that sent it); a run under
//     way is not affected, and a claim handed to this call is passed on.
func (o *Once[T]) RunInfo(ctx context.Context, key string, fn func(ctx context.Context) (T, error)) (RunInfo[T], error) {
	var zero RunInfo[T]
	if fn == nil {
		return zero, errors.New("kv: nil function")
	}
	full := o.name + ":" + key
	if inRun(ctx, o.s, full) {
		return zero, fmt.Errorf("%w: %q", ErrReentrant, full)
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	fp, hasFP := o.fingerprint(key)
	f, m, first := o.s.join(ctx, flightKey{key: full, fp: fp, hasFP: hasFP}, o.lease)
	if first {
		f.claimFirst()
	}
	var msg flightMsg
	select {
	case msg = <-m.ch:
	case <-ctx.Done():
		if f.leave(m) {
			return zero, ctx.Err()
		}
		msg = <-m.ch
	}
	if msg.claimed {
		return o.runClaimed(ctx, f, key, full, msg.token, fn)
	}
	out := msg.out
	switch {
	case out.err != nil:
		return zero, out.err
	case out.failed:
		return zero, &FailedError{Key: key, Message: out.msg}
	}
	var v T
	if err := o.codec.Unmarshal(out.answer, &v); err != nil {
		return zero, fmt.Errorf("kv: decode the answer of %q: %w", full, err)
	}
	return RunInfo[T]{Value: v, Replayed: true, Token: out.token}, nil
}

// runClaimed runs fn under the claim token holds and tells the flight.
func (o *Once[T]) runClaimed(ctx context.Context, f *flight, key, full string, token int64, fn func(context.Context) (T, error)) (info RunInfo[T], err error) {
	if err := ctx.Err(); err != nil {
		f.report(runReport{kind: reportGiveBack, token: token})
		return info, err
	}
	runCtx, cancel := context.WithCancelCause(withRun(ctx, o.s, full))
	defer cancel(nil)
	run := &claimRun{f: f, cancel: cancel}
	report := run.report
	stop := o.extend(full, token, run)

	returned := false
	defer func() {
		if returned {
			return
		}
		// fn (or the codec encoding its value) panicked, or fn called
		// runtime.Goexit (t.FailNow…).
		stop()
		p := recover()
		msg := "aborted: the function exited without returning"
		if p != nil {
			msg = fmt.Sprintf("panic: %v", p)
		}
		rep, _ := o.abort(ctx, full, token, msg)
		report(rep)
		if p != nil {
			panic(p)
		}
	}()
	v, ferr := fn(runCtx)
	stop()

	if ferr != nil {
		returned = true
		if ctx.Err() != nil && !errors.Is(context.Cause(runCtx), ErrLeaseLost) {
			// The caller gave up (its context is done) and fn stopped
			// with it: the run was left, not failed. Aborting would tell
			// every caller waiting for this key that it failed; the claim
			// is handed on instead, as by a caller that never started fn
			// (to the next caller here, or released as a lapse for the
			// waiters elsewhere).
			report(runReport{kind: reportGiveBack, token: token})
			return info, ferr
		}
		rep, aerr := o.abort(ctx, full, token, ferr.Error())
		report(rep)
		if errors.Is(aerr, errStale) || errors.Is(context.Cause(runCtx), ErrLeaseLost) {
			return info, leaseLost(full, ferr)
		}
		return info, ferr
	}
	// Encoding runs under the handler above too: a MarshalJSON or a
	// codec that panics aborts the claim and tells the flight, as a
	// panic of fn does, rather than leaving both waiting.
	data, err := o.codec.Marshal(v)
	returned = true
	if err != nil {
		err = fmt.Errorf("kv: encode the answer of %q: %w", full, err)
		rep, _ := o.abort(ctx, full, token, err.Error())
		report(rep)
		return info, err
	}
	info = RunInfo[T]{Value: v, Token: token}
	err = o.complete(ctx, full, token, data)
	var aborted string
	if err != nil {
		err, aborted = o.settle(ctx, full, token, data, err)
	}
	switch {
	case err == nil:
		report(runReport{kind: reportDone, answer: data, token: token})
		return info, nil
	case errors.Is(err, errStale):
		report(runReport{kind: reportRetry})
		return info, leaseLost(full, nil)
	case aborted != "":
		report(runReport{kind: reportFailed, msg: aborted})
		return info, fmt.Errorf("kv: store the answer of %q: %w", full, err)
	default:
		// The answer was not stored, or whether it was is unknown: the
		// others ask again.
		report(runReport{kind: reportRetry})
		return info, fmt.Errorf("kv: store the answer of %q: %w", full, err)
	}
}

// claimRun is a run under a claim, as the flight and the extender see it.
type claimRun struct {
	f        *flight
	cancel   context.CancelCauseFunc // fn's context
	reported atomic.Bool
}

// report tells the flight r, once per handed claim: the extender reports
// a lost lease at once, and what the run does after that is its
// caller's alone.
func (c *claimRun) report(r runReport) {
	if c.reported.CompareAndSwap(false, true) {
		c.f.report(r)
	}
}

// lost is the extender's: the claim is gone (another caller holds it, or
// the key was deleted). fn is told, and the flight's other callers claim
// again now instead of waiting for fn to notice (KV-13).
func (c *claimRun) lost(err error) {
	c.cancel(err)
	c.report(runReport{kind: reportRetry})
}

// settle decides a COMPLETE that failed with err, by asking the server
// (ONCE.STATUS) what it holds:
//
//   - the answer, completed under token: the reply was lost, and the
//     client's resend (go-redis retries on network errors) found the
//     claim done by this run. It counts as stored (nil);
//   - the claim, still held by token, and err an error reply: the server
//     refused the answer (too long, a full disk). Sent again, or computed
//     again by another caller, it would be refused too: the claim is
//     aborted with a message saying so (returned as aborted), and the
//     callers waiting for the run fail with it (KV-12);
//   - the claim, still held by token, and err the network's, or an error
//     reply that says the command did not run and may be sent again
//     (retryableReply: TRYAGAIN while a slot moves, LOADING …): the
//     COMPLETE never took effect. It is sent once more; if that fails too,
//     the claim is released as a lapse, so that a waiter elsewhere takes
//     it over now rather than when the lease runs out;
//   - anything else, or no answer: err.
func (o *Once[T]) settle(ctx context.Context, full string, token int64, data []byte, err error) (_ error, aborted string) {
	for resent := false; ; resent = true {
		state, tok, ok := o.status(ctx, full)
		switch {
		case !ok || tok != token:
			return err, ""
		case state == "done":
			return nil, ""
		case state != "running":
			return err, ""
		}
		var reply redis.Error
		if errors.As(err, &reply) && !retryableReply(err) {
			msg := "the answer could not be stored: " + err.Error()
			if _, aerr := o.abort(ctx, full, token, msg); aerr == nil {
				return err, msg
			}
			resent = true
		}
		if resent {
			o.s.release(full, token)
			return err, ""
		}
		if err = o.complete(ctx, full, token, data); err == nil {
			return nil, ""
		}
	}
}

// status is the state of full on the server and the token it holds
// (ONCE.STATUS); ok is false when it could not be read.
func (o *Once[T]) status(ctx context.Context, full string) (state string, token int64, ok bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
	defer cancel()
	v, err := o.s.rdb.Do(ctx, "once.status", full).Result()
	if err != nil {
		return "", 0, false
	}
	token = -1
	field := func(k, x any) {
		switch k {
		case "state":
			state, _ = x.(string)
		case "token":
			token, _ = x.(int64)
		}
	}
	switch v := v.(type) {
	case map[any]any: // RESP3
		for k, x := range v {
			field(k, x)
		}
	case []any: // RESP2: field, value, …
		for i := 0; i+1 < len(v); i += 2 {
			field(v[i], v[i+1])
		}
	}
	return state, token, true
}

// complete sends ONCE.COMPLETE.
func (o *Once[T]) complete(ctx context.Context, full string, token int64, data []byte) error {
	args := []any{"once.complete", full, token, data}
	if o.kept {
		keep := int64(0)
		if o.keep > 0 {
			keep = ms(o.keep)
		}
		args = append(args, "keep", keep)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
	defer cancel()
	return o.s.do(ctx, args...)
}

// abort sends ONCE.ABORT and says what the flight's other callers get.
func (o *Once[T]) abort(ctx context.Context, full string, token int64, msg string) (runReport, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
	defer cancel()
	if err := o.s.do(ctx, "once.abort", full, token, msg); err != nil {
		return runReport{kind: reportRetry}, err
	}
	return runReport{kind: reportFailed, msg: msg}, nil
}

// extend keeps the claim alive while fn runs: ONCE.EXTEND every third of
// the lease. When the server says the claim is gone, it tells run (lost,
// with ErrLeaseLost). The returned function stops it and waits for
// an extension under way to end.
//
// It is a timer, not a goroutine with a ticker: most functions return
// well within a third of the lease, and then no goroutine was started,
// nor synchronised with, for a run (BenchmarkRun).
func (o *Once[T]) extend(full string, token int64, run *claimRun) (stop func()) {
	if o.noExtend {
		return func() {}
	}
	x := &extender{every: max(o.lease/3, time.Millisecond)}
	x.mu.Lock()
	x.t = time.AfterFunc(x.every, func() {
		x.mu.Lock()
		if x.stopped {
			x.mu.Unlock()
			return
		}
		x.running.Add(1)
		x.mu.Unlock()
		defer x.running.Done()
		start := time.Now()
		ctx, c := context.WithTimeout(context.Background(), o.lease)
		err := o.s.do(ctx, "once.extend", full, token, "lease", ms(o.lease))
		c()
		if errors.Is(err, errStale) {
			run.lost(leaseLost(full, nil))
			return
		}
		// Other errors (the network): try again at the next tick; the
		// lease is three ticks long. Ticks are a third of the lease
		// apart from when each extension started, as a ticker's are: an
		// extension that failed after more than a third goes again at
		// once, while the lease the last one set still runs.
		x.mu.Lock()
		if !x.stopped {
			x.t.Reset(max(x.every-time.Since(start), 0))
		}
		x.mu.Unlock()
	})
	x.mu.Unlock()
	return x.stop
}

// extender is extend's timer and what stops it.
type extender struct {
	every   time.Duration
	mu      sync.Mutex
	t       *time.Timer
	stopped bool
	running sync.WaitGroup // an extension under way
}

// stop stops the timer and waits for an extension under way; once is
// enough, more are harmless.
func (x *extender) stop() {
	x.mu.Lock()
	if x.stopped {
		x.mu.Unlock()
		return
	}
	x.stopped = true
	x.t.Stop()
	x.mu.Unlock()
	x.running.Wait()
}

// Re-entrance (KV-11): the context given to a running function carries
// the keys it runs, with the server they run on (Store.server), so a Run
// of one of them inside it fails at once, through any Store made on the
// same client.

type runKey struct{}

type runMark struct {
	server any
	key    string
	parent *runMark
}

func withRun(ctx context.Context, s *Store, key string) context.Context {
	p, _ := ctx.Value(runKey{}).(*runMark)
	return context.WithValue(ctx, runKey{}, &runMark{server: s.server, key: key, parent: p})
}

func inRun(ctx context.Context, s *Store, key string) bool {
	m, _ := ctx.Value(runKey{}).(*runMark)
	for ; m != nil; m = m.parent {
		if m.server == s.server && m.key == key {
			return true
		}
	}
	return false
}
