package onceup

import (
	"context"
	"errors"
	"math"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncekv/oncekv/commands"
	"github.com/oncekv/oncekv/resp"
)

// CommandSpec describes a ONCE command for the proxy's command table
// (COMMAND, COMMAND INFO, key extraction), as commands/once.go registers
// it in the embedded server.
type CommandSpec struct {
	Name  string
	Arity int // Redis's convention: -n means at least n
	// Flags and Categories as COMMAND shows them.
	Flags                   []string
	FirstKey, LastKey, Step int
	Categories              []string
}

// Commands are the ONCE commands Engine.Command runs.
var Commands = []CommandSpec{
	{Name: "once.claim", Arity: -2, Flags: []string{"write", "denyoom", "blocking"}, FirstKey: 1, LastKey: 1, Step: 1, Categories: []string{"write", "once", "blocking", "slow"}},
	{Name: "once.complete", Arity: -4, Flags: []string{"write", "denyoom"}, FirstKey: 1, LastKey: 1, Step: 1, Categories: []string{"write", "once", "slow"}},
	{Name: "once.abort", Arity: -3, Flags: []string{"write", "fast"}, FirstKey: 1, LastKey: 1, Step: 1, Categories: []string{"write", "once", "fast"}},
	{Name: "once.extend", Arity: 5, Flags: []string{"write", "fast"}, FirstKey: 1, LastKey: 1, Step: 1, Categories: []string{"write", "once", "fast"}},
	{Name: "once.wait", Arity: -2, Flags: []string{"write", "blocking"}, FirstKey: 1, LastKey: 1, Step: 1, Categories: []string{"write", "once", "blocking", "slow"}},
	{Name: "once.status", Arity: 2, Flags: []string{"readonly", "fast"}, FirstKey: 1, LastKey: 1, Step: 1, Categories: []string{"read", "once", "fast"}},
}

// IsCommand reports whether name (any case) is a ONCE command.
func IsCommand(name []byte) bool { return lookup(name) != nil }

func lookup(name []byte) *CommandSpec {
	n := strings.ToLower(string(name))
	for i := range Commands {
		if Commands[i].Name == n {
			return &Commands[i]
		}
	}
	return nil
}

// ErrorText is the RESP error reply (code first) for an error of the
// engine or of the upstream: the engine's sentinels as they are, the
// upstream's own error replies (CLUSTERDOWN, READONLY, OOM…) as it sent
// them, anything else (the network) as ERR upstream: ….
func ErrorText(err error) string {
	var re redis.Error
	switch {
	case errors.As(err, &re):
		return err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "ERR upstream: timed out"
	case errors.Is(err, context.Canceled):
		return ErrShutdown.Error()
	}
	for _, s := range []error{ErrStale, ErrMismatch, ErrWrongType, ErrInvalidLease, ErrShutdown,
		errSyntax, errNotInteger, errTimeout, errNegTimeout, errInvalidKeep, errReply} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return "ERR upstream: " + err.Error()
}

// Command runs one ONCE command (args[0] is its name, in any case) in
// database db (the caller's SELECT; 0 in a cluster) and writes its reply
// with w, in w's protocol. A CLAIM … WAIT or ONCE.WAIT
// that has to wait makes c a blocked client with c.Block, as BLPOP does:
// the connection sends nothing else until it is answered, and if it
// disconnects its wait is dropped (a claim handed to it is passed on).
// With c nil (inside MULTI/EXEC), they answer at once as if WAIT ran out.
func (e *Engine) Command(c *resp.Conn, w *resp.Writer, db int, args [][]byte) {
	if len(args) == 0 {
		return
	}
	spec := lookup(args[0])
	if spec == nil {
		w.Error("ERR unknown command '" + string(args[0]) + "'")
		return
	}
	if n := len(args); spec.Arity > 0 && n != spec.Arity || spec.Arity < 0 && n < -spec.Arity {
		w.Error("ERR wrong number of arguments for '" + spec.Name + "' command")
		return
	}
	ctx, cancel := context.WithTimeout(e.ctx, e.cfg.Timeout)
	defer cancel()
	key := args[1]
	switch spec.Name {
	case "once.claim":
		e.cmdClaim(ctx, c, w, db, key, args[2:])
	case "once.wait":
		e.cmdWait(ctx, c, w, db, key, args[2:])
	case "once.complete":
		tok, ok := tokenArg(w, args[2])
		if !ok {
			return
		}
		keep, err := optionalInt(args[4:], "keep", -1, errNotInteger, errInvalidKeep)
		if err != nil {
			w.Error(err.Error())
			return
		}
		okOr(w, e.complete(ctx, db, key, tok, args[3], keep))
	case "once.abort":
		tok, ok := tokenArg(w, args[2])
		if !ok {
			return
		}
		msg := []byte("aborted")
		switch len(args) {
		case 3:
		case 4:
			msg = args[3]
		default:
			w.Error(errSyntax.Error())
			return
		}
		okOr(w, e.abort(ctx, db, key, tok, msg))
	case "once.extend":
		tok, ok := tokenArg(w, args[2])
		if !ok {
			return
		}
		if !eq(args[3], "lease") {
			w.Error(errSyntax.Error())
			return
		}
		lease, ok := resp.ParseInt(args[4])
		if !ok {
			w.Error(errNotInteger.Error())
			return
		}
		okOr(w, e.extend(ctx, db, key, tok, lease))
	case "once.status":
		e.cmdStatus(ctx, w, db, key)
	}
}

// eq compares an argument with a lower-case keyword, ignoring case.
func eq(arg []byte, lower string) bool {
	return len(arg) == len(lower) && strings.ToLower(string(arg)) == lower
}

// optionalInt parses an optional trailing `NAME n` (name in lower case):
// no opts gives dflt; n must be an integer (else notInt) and not negative
// (else neg); anything else is a syntax error.
func optionalInt(opts [][]byte, name string, dflt int64, notInt, neg error) (int64, error) {
	switch {
	case len(opts) == 0:
		return dflt, nil
	case len(opts) != 2 || !eq(opts[0], name):
		return 0, errSyntax
	}
	n, ok := resp.ParseInt(opts[1])
	if !ok {
		return 0, notInt
	}
	if n < 0 {
		return 0, neg
	}
	return n, nil
}

func tokenArg(w *resp.Writer, b []byte) (uint64, bool) {
	n, ok := resp.ParseInt(b)
	if !ok || n < 0 {
		w.Error(errNotInteger.Error())
		return 0, false
	}
	return uint64(n), true
}

func okOr(w *resp.Writer, err error) {
	if err != nil {
		w.Error(ErrorText(err))
		return
	}
	w.OK()
}

// parseClaim parses ONCE.CLAIM's options.
func parseClaim(args [][]byte) (claimArgs, int64, error) {
	var a claimArgs
	var waitMs int64
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return a, 0, errSyntax
		}
		v := args[i+1]
		switch {
		case eq(args[i], "lease"):
			n, ok := resp.ParseInt(v)
			if !ok {
				return a, 0, errNotInteger
			}
			if n <= 0 {
				return a, 0, ErrInvalidLease
			}
			a.lease = n
		case eq(args[i], "wait"):
			n, ok := resp.ParseInt(v)
			if !ok {
				return a, 0, errTimeout
			}
			if n < 0 {
				return a, 0, errNegTimeout
			}
			a.wait, waitMs = true, n
		case eq(args[i], "fingerprint"):
			a.fp, a.hasFP = append([]byte(nil), v...), true
		default:
			return a, 0, errSyntax
		}
	}
	return a, waitMs, nil
}

func (e *Engine) cmdClaim(ctx context.Context, c *resp.Conn, w *resp.Writer, db int, key []byte, opts [][]byte) {
	a, waitMs, err := parseClaim(opts)
	if err != nil {
		w.Error(err.Error())
		return
	}
	if c == nil {
		a.wait = false
	}
	r, wt, err := e.claim(ctx, db, key, a)
	if err != nil {
		w.Error(ErrorText(err))
		return
	}
	if wt == nil {
		writeResult(w, r)
		return
	}
	k := append([]byte(nil), key...)
	e.block(c, w, wt, waitMs, func(ctx context.Context) (result, error) {
		b := a
		b.wait = false
		r, _, err := e.claim(ctx, db, k, b)
		return r, err
	})
}

func (e *Engine) cmdWait(ctx context.Context, c *resp.Conn, w *resp.Writer, db int, key []byte, opts [][]byte) {
	timeout, err := optionalInt(opts, "timeout", 0, errTimeout, errNegTimeout)
	if err != nil {
		w.Error(err.Error())
		return
	}
	r, wt, err := e.wait(ctx, db, key, c != nil)
	if err != nil {
		w.Error(ErrorText(err))
		return
	}
	if wt == nil {
		writeResult(w, r)
		return
	}
	k := append([]byte(nil), key...)
	e.block(c, w, wt, timeout, func(ctx context.Context) (result, error) {
		r, _, err := e.wait(ctx, db, k, false)
		return r, err
	})
}

// block makes the connection wait for wt's result, for at most timeoutMs
// (0: no limit). At the timeout the waiter is withdrawn and the call is
// answered as if it had not waited (again). If the client goes away, the
// waiter is withdrawn and a claim it was handed is released, as is a claim
// whose reply the connection could not send (OnUnsent).
func (e *Engine) block(c *resp.Conn, w *resp.Writer, wt *waiter, timeoutMs int64, again func(context.Context) (result, error)) {
	c.Block(func(gone <-chan struct{}) {
		e.mu.Lock()
		wt.left = gone
		leaving, replied := e.leaving, e.replied
		e.mu.Unlock()
		var timer <-chan time.Time
		// A timeout too long for a time.Duration (some 292 years) is as
		// good as none, as in the embedded server: it must not wrap into
		// one that runs out at once.
		if timeoutMs > 0 && timeoutMs <= math.MaxInt64/int64(time.Millisecond) {
			t := time.NewTimer(time.Duration(timeoutMs) * time.Millisecond)
			defer t.Stop()
			timer = t.C
		}
		var r result
		select {
		case r = <-wt.ch:
		case <-gone:
			if leaving != nil {
				leaving()
			}
			e.cancel(wt, true)
			return
		case <-timer:
			var ok bool
			if r, ok = e.cancel(wt, false); !ok {
				ctx, cancel := context.WithTimeout(e.ctx, e.cfg.Timeout)
				defer cancel()
				var err error
				if r, err = again(ctx); err != nil {
					w.Error(ErrorText(err))
					return
				}
			}
		}
		if r.err != nil {
			w.Error(ErrorText(r.err))
			return
		}
		writeResult(w, r)
		if r.state == "claimed" {
			// A claim whose reply cannot be sent (the client left as
			// it was handed over) goes on to the next waiter at once,
			// not after its whole lease (KV-13). Once sent, it is the
			// client's, as any claim: if the client then leaves, the
			// lease lapses.
			ks, t := wt.ks, r.token
			c.OnUnsent(func() { e.releaseLater(ks, t) })
			if replied != nil {
				replied(gone)
			}
		}
	})
}

// writeResult writes a [state, detail] pair, as commands/once.go does.
func writeResult(w *resp.Writer, r result) {
	w.Array(2)
	w.BulkString(r.state)
	switch r.state {
	case "claimed":
		w.Int(int64(r.token))
	case "running":
		w.Int(max(r.msLeft, 0))
	default:
		w.Bulk(r.answer)
	}
}

func (e *Engine) cmdStatus(ctx context.Context, w *resp.Writer, db int, key []byte) {
	st, ok, err := e.status(ctx, db, key)
	if err != nil {
		w.Error(ErrorText(err))
		return
	}
	if !ok {
		w.NullArray()
		return
	}
	commands.WriteOnceStatus(w, st.state, st.token, st.leaseMs, st.keepMs, st.waiters, st.fp, st.hasFP)
}
