package commands

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/oncekv/oncekv/once"
	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
)

// EnableOnce registers the ONCE commands, run by engine e, with the INFO
// section and the hooks they need.
func (s *Server) EnableOnce(e *once.Engine) {
	s.once = e
	if e != nil {
		// The engine's own writes (a lapse's handover) reach the hooks
		// too: a WATCH of the key fails its EXEC, as after a command's
		// write.
		e.SetUpdater(s.hookedUpdate)
		// A CLIENT PAUSE defers the engine's own writes (pause.go).
		e.SetHold(s.pause.writesHeld)
	}
	s.KeepDeadline = once.IsRunning
	s.AddHook(onceHook{e})
	s.table.Register(onceCommands()...)
	s.table.attachDocs()
	s.AddInfoSection(InfoSection{Name: "once", Lines: s.onceInfo, LinesIn: s.onceInfoIn})
}

func onceCommands() []*Command {
	cat := []string{"write", "once"}
	return []*Command{
		{Name: "once.claim", Arity: -2, Flags: Write | DenyOOM | Blocking | Borrows, FirstKey: 1, LastKey: 1, Categories: append(cat, "blocking", "slow"), Run: onceClaim},
		{Name: "once.complete", Arity: -4, Flags: Write | DenyOOM | Borrows, FirstKey: 1, LastKey: 1, Categories: append(cat, "slow"), Run: onceComplete},
		{Name: "once.abort", Arity: -3, Flags: Write | Fast | Borrows, FirstKey: 1, LastKey: 1, Categories: append(cat, "fast"), Run: onceAbort},
		{Name: "once.extend", Arity: 5, Flags: Write | Fast | Borrows, FirstKey: 1, LastKey: 1, Categories: append(cat, "fast"), Run: onceExtend},
		{Name: "once.wait", Arity: -2, Flags: Write | Blocking | Borrows, FirstKey: 1, LastKey: 1, Categories: append(cat, "blocking", "slow"), Run: onceWait},
		{Name: "once.status", Arity: 2, Flags: ReadOnly | Fast | Borrows, FirstKey: 1, LastKey: 1, Categories: []string{"read", "once", "fast"}, Run: onceStatus},
	}
}

// onceError maps engine errors to RESP error text.
func onceError(err error) error {
	switch {
	case errors.Is(err, once.ErrStale):
		return errorf("STALE token no longer holds the claim (it completed, was aborted, lapsed or was handed over)")
	case errors.Is(err, once.ErrMismatch):
		return errorf("MISMATCH fingerprint differs from the one stored with this key")
	case errors.Is(err, once.ErrWrongType):
		return ErrWrongType
	case errors.Is(err, once.ErrInvalidLease):
		return errorf("ERR invalid lease")
	case errors.Is(err, once.ErrShutdown):
		return errorf("ERR server is shutting down")
	}
	return err
}

// msArg parses a millisecond option value.
func msArg(b []byte) (int64, error) {
	n, ok := parseInt(b)
	if !ok {
		return 0, ErrNotInteger
	}
	return n, nil
}

// token parses the token argument (the third), writing the error reply if
// it is not one.
func (x *Ctx) token() (uint64, bool) {
	n, ok := parseInt(x.Args[2])
	if !ok || n < 0 {
		x.Fail(ErrNotInteger)
		return 0, false
	}
	return uint64(n), true
}

// okOr answers +OK, or the engine's error.
func (x *Ctx) okOr(err error) {
	if err != nil {
		x.Fail(onceError(err))
		return
	}
	x.W.OK()
}

// claimOpts is ONCE.CLAIM's parsed arguments.
type claimOpts struct {
	once.ClaimArgs
	waitMs int64
}

func parseClaim(args [][]byte) (claimOpts, error) {
	var o claimOpts
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return o, ErrSyntax
		}
		v := args[i+1]
		switch {
		case eq(args[i], "lease"):
			n, err := msArg(v)
			if err != nil {
				return o, err
			}
			if n <= 0 {
				return o, errorf("ERR invalid lease")
			}
			o.Lease = n
		case eq(args[i], "wait"):
			n, err := msArg(v)
			if err != nil {
				return o, ErrTimeout
			}
			if n < 0 {
				return o, errorf("ERR timeout is negative")
			}
			o.Wait, o.waitMs = true, n
		case eq(args[i], "fingerprint"):
			o.FP, o.HasFP = append([]byte(nil), v...), true
		default:
			return o, ErrSyntax
		}
	}
	return o, nil
}

func onceClaim(x *Ctx) {
	o, err := parseClaim(x.Args[2:])
	if err != nil {
		x.Fail(err)
		return
	}
	if x.InExec {
		o.Wait = false
	}
	r, w, err := x.S.once.Claim(x.Tx, x.DB, x.Args[1], o.ClaimArgs)
	if err != nil {
		x.Fail(onceError(err))
		return
	}
	if w == nil {
		writeResult(x.W, r)
		return
	}
	x.blockOn(w, o.waitMs, func() (once.Result, error) {
		a := o.ClaimArgs
		a.Wait = false
		var r once.Result
		var err error
		t, serr := x.S.updateAndDeliver(func(tx store.Tx) {
			r, _, err = x.S.once.Claim(tx, x.DB, x.Args[1], a)
		})
		if serr != nil {
			return r, serr
		}
		r.Ticket = t
		return r, err
	})
}

func onceWait(x *Ctx) {
	var timeout int64
	switch len(x.Args) {
	case 2:
	case 4:
		if !eq(x.Args[2], "timeout") {
			x.Fail(ErrSyntax)
			return
		}
		n, err := msArg(x.Args[3])
		if err != nil {
			x.Fail(ErrTimeout)
			return
		}
		if n < 0 {
			x.W.Error("ERR timeout is negative")
			return
		}
		timeout = n
	default:
		x.Fail(ErrSyntax)
		return
	}
	r, w, err := x.S.once.Wait(x.Tx, x.DB, x.Args[1], !x.InExec)
	if err != nil {
		x.Fail(onceError(err))
		return
	}
	if w == nil {
		writeResult(x.W, r)
		return
	}
	x.blockOn(w, timeout, func() (once.Result, error) {
		var r once.Result
		var err error
		t, serr := x.S.updateAndDeliver(func(tx store.Tx) {
			r, _, err = x.S.once.Wait(tx, x.DB, x.Args[1], false)
		})
		if serr != nil {
			return r, serr
		}
		r.Ticket = t
		return r, err
	})
}

// blockOn makes the connection wait for w's result, for at most timeoutMs
// (0: no limit). At the timeout the waiter is withdrawn and again answers
// the call as if it did not wait. If the client goes away, the waiter is
// withdrawn and a claim it was handed is passed on. CLIENT UNBLOCK ends
// the wait as its timeout would (TIMEOUT), or with an -UNBLOCKED error
// after withdrawing as a client that left (ERROR): either way the waiter
// leaves its key's line, and no later outcome is delivered to it.
func (x *Ctx) blockOn(w *once.Waiter, timeoutMs int64, again func() (once.Result, error)) {
	e := x.S.once
	c, wr := x.Conn, x.W
	c.Block(func(gone <-chan struct{}) {
		timer, stop := x.S.blockTimer(timeoutMs)
		defer stop()
		var r once.Result
		select {
		case <-gone:
			// Gone already (its earlier replies could not be sent, or
			// the command panicked): withdraw, rather than let the
			// select below take a claim at random and answer no one
			// with it, which would hold the key for a whole lease.
			e.Cancel(w, true)
			return
		default:
		}
		// From now on a lapse's handover passes this waiter by once its
		// client has left, even before it withdraws (KV-13).
		e.Watch(w, gone)
		if x.S.onceWatched != nil {
			x.S.onceWatched()
		}
		unblock := c.Unblockable()
		timedOut := false
		var um resp.UnblockMode
		select {
		case r = <-w.C():
		case <-gone:
			e.Cancel(w, true)
			return
		case <-timer:
			timedOut = true
		case um = <-unblock:
		}
		if m, ok := c.EndUnblockable(); ok {
			um = m
		}
		if um != 0 {
			// An UNBLOCK answered 1: it decides, even if the result or
			// the timeout came in the same instant.
			m := um
			got := r.State != "" || r.Err != nil
			if m == resp.UnblockError {
				switch {
				case !got:
					e.Cancel(w, true) // passes on a claim handed to it
				case r.State == "claimed":
					e.Release(x.DB, x.Args[1], r.Token)
				}
				wr.Error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
				return
			}
			timedOut = !got
		}
		if timedOut {
			var ok bool
			if r, ok = e.Cancel(w, false); !ok {
				// The command runs again, and it writes (a claim, a
				// lapse's handover): under CLIENT PAUSE it waits for
				// the pause's end, as a new one would be held.
				if ch := x.S.pause.writesHeld(); ch != nil {
					select {
					case <-ch:
					case <-gone:
						return
					}
				}
				var err error
				if r, err = again(); err != nil {
					wr.Error(errorText(onceError(err)))
					return
				}
			}
		}
		if r.Err != nil {
			wr.Error(errorText(onceError(r.Err)))
			return
		}
		c.Await(r.Ticket)
		writeResult(wr, r)
		if r.State == "claimed" {
			// A claim whose reply cannot be sent (the client left as
			// it was handed over) goes on to the next waiter at once,
			// not after its whole lease. Once sent, it is the
			// client's, as any claim: if the client then leaves, the
			// lease lapses.
			db, key, tok := x.DB, bytes.Clone(x.Args[1]), r.Token
			c.OnUnsent(func() { e.Release(db, key, tok) })
		}
	})
}

// updateAndDeliver runs fn in an exclusive transaction, delivers the
// wake-ups it caused and returns its ticket: a reply that tells what fn
// wrote or read must wait for it (KV-6). The error is the store's when it
// refused the transaction, and fn did not run.
func (s *Server) updateAndDeliver(fn func(tx store.Tx)) (store.Ticket, error) {
	ran := false
	t, err := s.hookedUpdate(func(tx store.Tx) error {
		ran = true
		fn(tx)
		return nil
	})
	if !ran {
		return nil, err
	}
	return t, nil
}

// hookedUpdate is the store's Update with the writes of fn shown to the
// hooks, and their after-commit work run once it commits.
func (s *Server) hookedUpdate(fn func(tx store.Tx) error) (store.Ticket, error) {
	var after []func(store.Ticket)
	t, err := s.store.Update(func(tx store.Tx) error {
		defer func() { after = s.commit() }()
		return fn(s.wrap(tx))
	})
	runAfter(after, t)
	return t, err
}

// writeResult writes a [state, detail] pair.
func writeResult(w *resp.Writer, r once.Result) {
	w.Array(2)
	w.BulkString(r.State)
	switch r.State {
	case "claimed":
		w.Int(int64(r.Token))
	case "running":
		w.Int(max(r.MsLeft, 0))
	default:
		w.Bulk(r.Answer)
	}
}

func onceComplete(x *Ctx) {
	tok, ok := x.token()
	if !ok {
		return
	}
	keep := int64(-1)
	switch len(x.Args) {
	case 4:
	case 6:
		if !eq(x.Args[4], "keep") {
			x.Fail(ErrSyntax)
			return
		}
		var err error
		if keep, err = msArg(x.Args[5]); err != nil {
			x.Fail(err)
			return
		}
		if keep < 0 {
			x.W.Error("ERR invalid keep")
			return
		}
	default:
		x.Fail(ErrSyntax)
		return
	}
	x.okOr(x.S.once.Complete(x.Tx, x.DB, x.Args[1], tok, x.Args[3], keep))
}

func onceAbort(x *Ctx) {
	tok, ok := x.token()
	if !ok {
		return
	}
	msg := []byte("aborted")
	switch len(x.Args) {
	case 3:
	case 4:
		msg = x.Args[3]
	default:
		x.Fail(ErrSyntax)
		return
	}
	x.okOr(x.S.once.Abort(x.Tx, x.DB, x.Args[1], tok, msg))
}

func onceExtend(x *Ctx) {
	tok, ok := x.token()
	if !ok {
		return
	}
	if !eq(x.Args[3], "lease") {
		x.Fail(ErrSyntax)
		return
	}
	lease, err := msArg(x.Args[4])
	if err != nil {
		x.Fail(err)
		return
	}
	x.okOr(x.S.once.Extend(x.Tx, x.DB, x.Args[1], tok, lease))
}

func onceStatus(x *Ctx) {
	st, ok, err := x.S.once.Status(x.Tx, x.DB, x.Args[1])
	if err != nil {
		x.Fail(onceError(err))
		return
	}
	if !ok {
		x.W.NullArray()
		return
	}
	WriteOnceStatus(x.W, st.State.String(), st.Token, st.LeaseMs, st.KeepMs, st.Waiters, st.Fingerprint, st.HasFP)
}

// WriteOnceStatus writes ONCE.STATUS's reply for a key that has a record:
// a map of state, token, lease-ms, keep-ms, waiters and fingerprint (null
// when hasFP is false). Proxy mode's ONCE engine answers with it too, so
// that both reply alike.
func WriteOnceStatus(w *resp.Writer, state string, token uint64, leaseMs, keepMs int64, waiters int, fp []byte, hasFP bool) {
	w.Map(6)
	w.BulkString("state")
	w.BulkString(state)
	w.BulkString("token")
	w.Int(int64(token))
	w.BulkString("lease-ms")
	w.Int(leaseMs)
	w.BulkString("keep-ms")
	w.Int(keepMs)
	w.BulkString("waiters")
	w.Int(int64(waiters))
	w.BulkString("fingerprint")
	if hasFP {
		w.Bulk(fp)
	} else {
		w.Null()
	}
}

// onceInfo is INFO's once section, in an exclusive transaction of its own.
func (s *Server) onceInfo() [][2]string {
	var out [][2]string
	_, _ = s.store.Update(func(tx store.Tx) error {
		out = s.onceInfoIn(tx)
		return nil
	})
	return out
}

// onceInfoIn is INFO's once section, in tx, an exclusive transaction
// (the engine's running records are the store lock's).
func (s *Server) onceInfoIn(tx store.Tx) [][2]string {
	e := s.once
	running := e.RunningKeys(tx.Now())
	st := &e.Stats
	f := func(n int64) string { return strconv.FormatInt(n, 10) }
	return [][2]string{
		{"claims", f(st.Claims.Load())},
		{"completes", f(st.Completes.Load())},
		{"aborts", f(st.Aborts.Load())},
		{"replays", f(st.Replays.Load())},
		{"waits", f(st.Waits.Load())},
		{"wakeups", f(st.Wakeups.Load())},
		{"lease_lapses", f(st.LeaseLapses.Load())},
		{"handoffs", f(st.Handoffs.Load())},
		{"stale_rejects", f(st.StaleRejects.Load())},
		{"mismatches", f(st.Mismatches.Load())},
		{"waiting_clients", f(e.Waiting())},
		{"running_keys", strconv.Itoa(running)},
	}
}

// onceHook adapts the engine to TxHook and SetHook.
type onceHook struct{ e *once.Engine }

var (
	_ SetHook  = onceHook{}
	_ SwapHook = onceHook{}
)

func (h onceHook) Active() bool                            { return h.e.Active() }
func (h onceHook) Touched(tx store.Tx, db int, key []byte) { h.e.Touched(tx, db, key) }
func (h onceHook) Flushing(store.Tx, int)                  {}
func (h onceHook) Flushed(tx store.Tx, db int)             { h.e.Flushed(tx, db) }
func (h onceHook) Commit() func(store.Ticket)              { return h.e.Commit() }

func (h onceHook) Swapping(store.Tx, int, int)   {}
func (h onceHook) Swapped(tx store.Tx, a, b int) { h.e.Swapped(tx, a, b) }

func (h onceHook) Stored(tx store.Tx, db int, key []byte, v store.Value) {
	h.e.Stored(tx, db, key, v)
}
