package integration

// The ONCE promises KV-8…KV-15 through go-redis against a real server (in
// this process, assembled as main assembles it), in RESP3 (go-redis's
// default) and RESP2. KV-16 (restarts) is in once_restart_test.go, blocking
// and leaks in once_block_test.go, several processes in
// once_process_test.go, a randomized history check in once_stress_test.go.
// KV-11 (no waiting on yourself) is a client-library promise: the server
// has nothing to test.
//
// This file also holds the ONCE helpers the other once_*_test.go files
// share.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncekv/oncekv/internal/testserver"
)

// onceServer starts an in-process server (see testserver.Start) and returns
// its address.
func onceServer(tb testing.TB, args ...string) string {
	tb.Helper()
	return testserver.Start(tb, args...).Addr().String()
}

// onceClient returns a go-redis client of addr speaking RESP proto: no
// retries (a retried CLAIM is a second CLAIM) and no socket read timeout,
// so that blocking waits are bounded only by the context of each call, as
// the contract asks of clients. Cleanup closes it.
func onceClient(tb testing.TB, addr string, proto int, opts ...func(*redis.Options)) *redis.Client {
	tb.Helper()
	o := &redis.Options{
		Addr:                  addr,
		Protocol:              proto,
		MaxRetries:            -1,
		ReadTimeout:           -1,
		ContextTimeoutEnabled: true,
	}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// onceReply is a [state, detail] reply.
type onceReply struct {
	State string
	// Token is the detail of "claimed".
	Token int64
	// Ms is the detail of "running".
	Ms int64
	// Detail is the detail of "done", "failed" and "free".
	Detail string
}

func (r onceReply) String() string {
	switch r.State {
	case "claimed":
		return fmt.Sprintf("[claimed %d]", r.Token)
	case "running":
		return fmt.Sprintf("[running %d]", r.Ms)
	}
	return fmt.Sprintf("[%s %q]", r.State, r.Detail)
}

// parseOnce reads a go-redis reply as a [state, detail] pair, checking the
// detail's type: an integer for claimed and running, a string otherwise.
func parseOnce(v any) (onceReply, error) {
	a, ok := v.([]any)
	if !ok || len(a) != 2 {
		return onceReply{}, fmt.Errorf("reply %#v is not a two-element array", v)
	}
	st, ok := a[0].(string)
	if !ok {
		return onceReply{}, fmt.Errorf("state %#v is not a string", a[0])
	}
	r := onceReply{State: st}
	switch st {
	case "claimed", "running":
		n, ok := a[1].(int64)
		if !ok {
			return r, fmt.Errorf("[%s …]: detail %#v (%T) is not an integer reply", st, a[1], a[1])
		}
		if st == "claimed" {
			r.Token = n
		} else {
			r.Ms = n
		}
	case "done", "failed", "free":
		s, ok := a[1].(string)
		if !ok {
			return r, fmt.Errorf("[%s …]: detail %#v (%T) is not a bulk string", st, a[1], a[1])
		}
		r.Detail = s
	default:
		return r, fmt.Errorf("unknown state %q", st)
	}
	return r, nil
}

// onceDo sends a ONCE command whose reply is a [state, detail] pair.
func onceDo(ctx context.Context, c *redis.Client, args ...any) (onceReply, error) {
	v, err := c.Do(ctx, args...).Result()
	if err != nil {
		return onceReply{}, err
	}
	return parseOnce(v)
}

// onceMust is onceDo failing tb on an error.
func onceMust(tb testing.TB, ctx context.Context, c *redis.Client, args ...any) onceReply {
	tb.Helper()
	r, err := onceDo(ctx, c, args...)
	if err != nil {
		tb.Fatalf("%v: %v", args, err)
	}
	return r
}

// onceWant checks a reply's state and, for done/failed/free, its detail.
func onceWant(tb testing.TB, what string, r onceReply, state, detail string) {
	tb.Helper()
	if r.State != state || ((state == "done" || state == "failed" || state == "free") && r.Detail != detail) {
		tb.Fatalf("%s: got %v, want [%s %q]", what, r, state, detail)
	}
}

// onceClaim claims a free key and returns the token.
func onceClaim(tb testing.TB, ctx context.Context, c *redis.Client, key string, opts ...any) int64 {
	tb.Helper()
	r := onceMust(tb, ctx, c, append([]any{"ONCE.CLAIM", key}, opts...)...)
	if r.State != "claimed" || r.Token <= 0 {
		tb.Fatalf("ONCE.CLAIM %s %v: got %v, want [claimed token>0]", key, opts, r)
	}
	return r.Token
}

// onceOK sends a command that answers +OK.
func onceOK(tb testing.TB, ctx context.Context, c *redis.Client, args ...any) {
	tb.Helper()
	v, err := c.Do(ctx, args...).Result()
	if err != nil || v != "OK" {
		tb.Fatalf("%v: got %#v, %v; want OK", args, v, err)
	}
}

// onceErr checks that a command answers an error starting with prefix.
func onceErr(tb testing.TB, ctx context.Context, c *redis.Client, prefix string, args ...any) {
	tb.Helper()
	v, err := c.Do(ctx, args...).Result()
	var re redis.Error
	if err == nil || !errors.As(err, &re) || !strings.HasPrefix(err.Error(), prefix) {
		tb.Fatalf("%v: got %#v, %v; want an error starting with %q", args, v, err, prefix)
	}
}

// onceStatus returns ONCE.STATUS's fields (nil when the key is free),
// checking the reply's shape: a map in RESP3, a flat array of field/value
// pairs in RESP2, with the six fields in order.
func onceStatus(tb testing.TB, ctx context.Context, c *redis.Client, key string) map[string]any {
	tb.Helper()
	v, err := c.Do(ctx, "ONCE.STATUS", key).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		tb.Fatalf("ONCE.STATUS %s: %v", key, err)
	}
	out := map[string]any{}
	want := []string{"state", "token", "lease-ms", "keep-ms", "waiters", "fingerprint"}
	proto := c.Options().Protocol
	switch m := v.(type) {
	case map[any]any:
		if proto != 3 {
			tb.Fatalf("ONCE.STATUS %s in RESP%d: got a map %#v, want a flat array", key, proto, v)
		}
		for k, x := range m {
			ks, ok := k.(string)
			if !ok {
				tb.Fatalf("ONCE.STATUS %s: field %#v is not a string", key, k)
			}
			out[ks] = x
		}
	case []any:
		if proto == 3 {
			tb.Fatalf("ONCE.STATUS %s in RESP3: got an array %#v, want a map", key, v)
		}
		if len(m) != 12 {
			tb.Fatalf("ONCE.STATUS %s: %d elements, want 12 (six field/value pairs): %#v", key, len(m), m)
		}
		for i := 0; i < len(m); i += 2 {
			ks, ok := m[i].(string)
			if !ok || ks != want[i/2] {
				tb.Fatalf("ONCE.STATUS %s: element %d is %#v, want field %q", key, i, m[i], want[i/2])
			}
			out[ks] = m[i+1]
		}
	default:
		tb.Fatalf("ONCE.STATUS %s: reply %#v (%T)", key, v, v)
	}
	for _, f := range want {
		x, ok := out[f]
		if !ok {
			tb.Fatalf("ONCE.STATUS %s: no field %q in %#v", key, f, out)
		}
		switch f {
		case "state":
			if s, _ := x.(string); s != "running" && s != "done" {
				tb.Fatalf("ONCE.STATUS %s: state %#v", key, x)
			}
		case "fingerprint":
			if _, ok := x.(string); x != nil && !ok {
				tb.Fatalf("ONCE.STATUS %s: fingerprint %#v is neither a string nor nil", key, x)
			}
		default:
			if _, ok := x.(int64); !ok {
				tb.Fatalf("ONCE.STATUS %s: %s %#v (%T) is not an integer", key, f, x, x)
			}
		}
	}
	if len(out) != len(want) {
		tb.Fatalf("ONCE.STATUS %s: fields %v, want exactly %v", key, out, want)
	}
	return out
}

// statusInt is an integer field of a ONCE.STATUS reply.
func statusInt(st map[string]any, f string) int64 {
	n, _ := st[f].(int64)
	return n
}

// onceAwaitWaiters waits until key has n waiters (ONCE.STATUS).
func onceAwaitWaiters(tb testing.TB, ctx context.Context, c *redis.Client, key string, n int64) {
	tb.Helper()
	waitFor(tb, 5*time.Second, 2*time.Millisecond, fmt.Sprintf("%d waiters on %s", n, key), func() (bool, string) {
		st := onceStatus(tb, ctx, c, key)
		return statusInt(st, "waiters") == n, fmt.Sprint(st)
	})
}

// onceInfoFields are INFO's Once section fields.
var onceInfoFields = []string{"claims", "completes", "aborts", "replays", "waits", "wakeups",
	"lease_lapses", "handoffs", "stale_rejects", "mismatches", "waiting_clients", "running_keys"}

// onceInfo reads INFO once, checking the section's header and fields.
func onceInfo(tb testing.TB, ctx context.Context, c *redis.Client) map[string]int64 {
	tb.Helper()
	s, err := c.Info(ctx, "once").Result()
	if err != nil {
		tb.Fatalf("INFO once: %v", err)
	}
	if !strings.Contains(s, "# Once\r\n") {
		tb.Fatalf("INFO once: no \"# Once\" section header in %q", s)
	}
	out := map[string]int64{}
	for _, f := range onceInfoFields {
		v := infoField(s, f)
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			tb.Fatalf("INFO once: field %s = %q in %q", f, v, s)
		}
		out[f] = n
	}
	return out
}

// asyncOnce runs a ONCE command in a goroutine; the channel gets its result
// and the time it returned.
type onceOutcome struct {
	r   onceReply
	err error
	at  time.Time
}

func asyncOnce(ctx context.Context, c *redis.Client, args ...any) <-chan onceOutcome {
	ch := make(chan onceOutcome, 1)
	go func() {
		r, err := onceDo(ctx, c, args...)
		ch <- onceOutcome{r, err, time.Now()}
	}()
	return ch
}

// onceRecv waits up to d for an asyncOnce result.
func onceRecv(tb testing.TB, ch <-chan onceOutcome, d time.Duration, what string) onceOutcome {
	tb.Helper()
	select {
	case o := <-ch:
		if o.err != nil {
			tb.Fatalf("%s: %v", what, o.err)
		}
		return o
	case <-time.After(d):
		tb.Fatalf("%s: no reply within %v", what, d)
	}
	return onceOutcome{}
}

// onceQuiet checks that an asyncOnce call has not returned yet.
func onceQuiet(tb testing.TB, ch <-chan onceOutcome, d time.Duration, what string) {
	tb.Helper()
	select {
	case o := <-ch:
		tb.Fatalf("%s: returned %v, %v; want still blocked", what, o.r, o.err)
	case <-time.After(d):
	}
}

func forProtos(t *testing.T, fn func(t *testing.T, proto int)) {
	for _, p := range []int{3, 2} {
		t.Run(fmt.Sprintf("resp%d", p), func(t *testing.T) {
			t.Parallel()
			fn(t, p)
		})
	}
}

// TestOnceBasics: the state machine and every reply shape (KV-8).
func TestOnceBasics(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	forProtos(t, func(t *testing.T, proto int) {
		ctx := grCtx(t, 20*time.Second)
		c := onceClient(t, addr, proto)
		k := fmt.Sprintf("basics:%d", proto)

		if st := onceStatus(t, ctx, c, k); st != nil {
			t.Fatalf("ONCE.STATUS of a free key: %v, want nil", st)
		}
		onceWant(t, "ONCE.WAIT free", onceMust(t, ctx, c, "ONCE.WAIT", k), "free", "")
		onceWant(t, "ONCE.WAIT free TIMEOUT", onceMust(t, ctx, c, "ONCE.WAIT", k, "TIMEOUT", 5000), "free", "")
		tok := onceClaim(t, ctx, c, k, "LEASE", 10000)

		r := onceMust(t, ctx, c, "ONCE.CLAIM", k)
		if r.State != "running" || r.Ms <= 9000 || r.Ms > 10000 {
			t.Fatalf("second ONCE.CLAIM: %v, want [running ~10000]", r)
		}
		st := onceStatus(t, ctx, c, k)
		if st["state"] != "running" || statusInt(st, "token") != tok || statusInt(st, "waiters") != 0 || st["fingerprint"] != nil {
			t.Fatalf("ONCE.STATUS running: %v (token %d)", st, tok)
		}
		if l := statusInt(st, "lease-ms"); l <= 9000 || l > 10000 {
			t.Fatalf("ONCE.STATUS lease-ms %d, want ~10000", l)
		}
		onceOK(t, ctx, c, "ONCE.EXTEND", k, tok, "LEASE", 20000)
		if l := statusInt(onceStatus(t, ctx, c, k), "lease-ms"); l <= 19000 || l > 20000 {
			t.Fatalf("lease-ms after EXTEND 20000: %d", l)
		}
		onceOK(t, ctx, c, "ONCE.COMPLETE", k, tok, "the answer")
		for i := range 3 {
			r = onceMust(t, ctx, c, "ONCE.CLAIM", k, "LEASE", 100, "WAIT", 0)
			onceWant(t, fmt.Sprintf("ONCE.CLAIM #%d after COMPLETE", i), r, "done", "the answer")
		}
		onceWant(t, "ONCE.WAIT done", onceMust(t, ctx, c, "ONCE.WAIT", k), "done", "the answer")
		st = onceStatus(t, ctx, c, k)
		if st["state"] != "done" || statusInt(st, "token") != tok || statusInt(st, "keep-ms") != -1 {
			t.Fatalf("ONCE.STATUS done (kept forever): %v", st)
		}
		// A kept answer is binary safe.
		bin := "\x00\r\n\xff answer"
		tok = onceClaim(t, ctx, c, k+":bin")
		onceOK(t, ctx, c, "ONCE.COMPLETE", k+":bin", tok, bin)
		onceWant(t, "binary answer", onceMust(t, ctx, c, "ONCE.CLAIM", k+":bin"), "done", bin)

		// Tokens are integers that only grow.
		t2 := onceClaim(t, ctx, c, k+":2")
		t3 := onceClaim(t, ctx, c, k+":3")
		if !(t2 > tok && t3 > t2) {
			t.Fatalf("tokens %d, %d, %d do not grow", tok, t2, t3)
		}

		// Argument errors.
		onceErr(t, ctx, c, "ERR invalid lease", "ONCE.CLAIM", k+":e", "LEASE", 0)
		onceErr(t, ctx, c, "ERR invalid lease", "ONCE.CLAIM", k+":e", "LEASE", -5)
		onceErr(t, ctx, c, "ERR invalid lease", "ONCE.EXTEND", k+":2", t2, "LEASE", 0)
		onceErr(t, ctx, c, "ERR", "ONCE.CLAIM", k+":e", "LEASE", "abc")
		onceErr(t, ctx, c, "ERR", "ONCE.CLAIM", k+":e", "WAIT")
		onceErr(t, ctx, c, "ERR", "ONCE.CLAIM", k+":e", "BOGUS", 1)
		onceErr(t, ctx, c, "ERR", "ONCE.CLAIM")
		onceErr(t, ctx, c, "ERR", "ONCE.COMPLETE", k+":2", "notatoken", "x")
		onceErr(t, ctx, c, "ERR", "ONCE.WAIT", k+":2", "TIMEOUT")
		onceErr(t, ctx, c, "ERR", "ONCE.STATUS")
		if st := onceStatus(t, ctx, c, k+":e"); st != nil {
			t.Fatalf("a rejected CLAIM left %v", st)
		}
		// EXTEND after a rejected lease still holds.
		if got := statusInt(onceStatus(t, ctx, c, k+":2"), "token"); got != t2 {
			t.Fatalf("token after rejected EXTEND: %d, want %d", got, t2)
		}
	})
}

// TestOnceTypes: the record is its own type.
func TestOnceTypes(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	forProtos(t, func(t *testing.T, proto int) {
		ctx := grCtx(t, 20*time.Second)
		c := onceClient(t, addr, proto)
		p := fmt.Sprintf("types:%d:", proto)
		run, done, str := p+"running", p+"done", p+"string"
		onceClaim(t, ctx, c, run, "LEASE", 20000)
		dtok := onceClaim(t, ctx, c, done)
		onceOK(t, ctx, c, "ONCE.COMPLETE", done, dtok, "v")
		if err := c.Set(ctx, str, "plain", 0).Err(); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{run, done} {
			if got := c.Type(ctx, k).Val(); got != "once" {
				t.Fatalf("TYPE %s: %q, want once", k, got)
			}
			for _, args := range [][]any{{"GET", k}, {"INCR", k}, {"APPEND", k, "x"}, {"STRLEN", k}, {"GETRANGE", k, 0, 1}} {
				onceErr(t, ctx, c, "WRONGTYPE", args...)
			}
		}
		for _, args := range [][]any{
			{"ONCE.CLAIM", str}, {"ONCE.CLAIM", str, "WAIT", 100}, {"ONCE.WAIT", str}, {"ONCE.WAIT", str, "TIMEOUT", 100},
			{"ONCE.COMPLETE", str, 1, "x"}, {"ONCE.ABORT", str, 1}, {"ONCE.EXTEND", str, 1, "LEASE", 100},
			{"ONCE.STATUS", str},
		} {
			onceErr(t, ctx, c, "WRONGTYPE", args...)
		}
		if got := c.Get(ctx, str).Val(); got != "plain" {
			t.Fatalf("string after ONCE commands: %q", got)
		}
		// SET replaces a once record like any value.
		onceOK(t, ctx, c, "SET", done, "now a string")
		onceErr(t, ctx, c, "WRONGTYPE", "ONCE.CLAIM", done)

		// SCAN … TYPE once lists the once keys only.
		var got []string
		var cursor uint64
		for {
			keys, next, err := c.ScanType(ctx, cursor, p+"*", 100, "once").Result()
			if err != nil {
				t.Fatalf("SCAN TYPE once: %v", err)
			}
			got = append(got, keys...)
			if cursor = next; cursor == 0 {
				break
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, []string{run}) {
			t.Fatalf("SCAN TYPE once: %q, want [%q]", got, run)
		}
		keys, _, err := c.ScanType(ctx, 0, p+"*", 100, "string").Result()
		slices.Sort(keys)
		if err != nil || !slices.Equal(keys, []string{done, str}) {
			t.Fatalf("SCAN TYPE string: %q %v", keys, err)
		}
	})
}

// TestOnceKeyCommands: DEL, EXISTS, TTL, PTTL, EXPIRE, PERSIST on running
// and done records.
func TestOnceKeyCommands(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	forProtos(t, func(t *testing.T, proto int) {
		ctx := grCtx(t, 20*time.Second)
		c := onceClient(t, addr, proto)
		p := fmt.Sprintf("keys:%d:", proto)
		near := func(what string, got, want, tol int64) {
			t.Helper()
			if got < want-tol || got > want {
				t.Fatalf("%s: %d, want %d (-%d)", what, got, want, tol)
			}
		}
		pttl := func(k string) int64 {
			t.Helper()
			n, err := c.Do(ctx, "PTTL", k).Int64()
			if err != nil {
				t.Fatalf("PTTL %s: %v", k, err)
			}
			return n
		}
		intCmd := func(args ...any) int64 {
			t.Helper()
			n, err := c.Do(ctx, args...).Int64()
			if err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			return n
		}

		// Running: TTL shows the lease; EXPIRE/PEXPIRE/PERSIST answer 0
		// and change nothing.
		run := p + "running"
		tok := onceClaim(t, ctx, c, run, "LEASE", 30000)
		if n := intCmd("EXISTS", run); n != 1 {
			t.Fatalf("EXISTS running: %d", n)
		}
		near("PTTL running", pttl(run), 30000, 1000)
		if n := intCmd("TTL", run); n < 29 || n > 30 {
			t.Fatalf("TTL running: %d, want 30", n)
		}
		for _, args := range [][]any{
			{"EXPIRE", run, 100}, {"PEXPIRE", run, 100}, {"PERSIST", run},
			{"EXPIREAT", run, time.Now().Unix() + 5}, {"PEXPIREAT", run, time.Now().UnixMilli() + 5000},
			{"EXPIRE", run, 1, "GT"},
		} {
			if n := intCmd(args...); n != 0 {
				t.Fatalf("%v on a running record: %d, want 0", args, n)
			}
			near(fmt.Sprintf("PTTL after %v", args), pttl(run), 30000, 1000)
		}
		if n := intCmd("EXPIRE", run, 0); n != 0 {
			t.Fatalf("EXPIRE 0 on a running record: %d, want 0 (use EXTEND)", n)
		}
		if st := onceStatus(t, ctx, c, run); statusInt(st, "token") != tok {
			t.Fatalf("running record after EXPIRE: %v", st)
		}
		onceOK(t, ctx, c, "ONCE.EXTEND", run, tok, "LEASE", 5000)
		near("PTTL after EXTEND", pttl(run), 5000, 500)

		// Done: TTL shows the keep; EXPIRE/PERSIST change it.
		done := p + "done"
		dtok := onceClaim(t, ctx, c, done)
		onceOK(t, ctx, c, "ONCE.COMPLETE", done, dtok, "A", "KEEP", 60000)
		near("PTTL done", pttl(done), 60000, 1000)
		if st := onceStatus(t, ctx, c, done); statusInt(st, "keep-ms") > 60000 || statusInt(st, "keep-ms") < 59000 {
			t.Fatalf("ONCE.STATUS keep-ms: %v", st)
		}
		if n := intCmd("EXPIRE", done, 100); n != 1 {
			t.Fatalf("EXPIRE on a done record: %d, want 1", n)
		}
		if n := intCmd("TTL", done); n != 100 {
			t.Fatalf("TTL after EXPIRE 100: %d", n)
		}
		if n := intCmd("PERSIST", done); n != 1 {
			t.Fatalf("PERSIST on a done record: %d, want 1", n)
		}
		if n := pttl(done); n != -1 {
			t.Fatalf("PTTL after PERSIST: %d, want -1", n)
		}
		if st := onceStatus(t, ctx, c, done); statusInt(st, "keep-ms") != -1 {
			t.Fatalf("keep-ms after PERSIST: %v", st)
		}
		onceWant(t, "CLAIM after PERSIST", onceMust(t, ctx, c, "ONCE.CLAIM", done), "done", "A")
		if n := intCmd("PEXPIRE", done, 150); n != 1 {
			t.Fatalf("PEXPIRE on a done record: %d", n)
		}
		time.Sleep(250 * time.Millisecond)
		if n := intCmd("EXISTS", done); n != 0 {
			t.Fatalf("EXISTS after the keep set by PEXPIRE: %d", n)
		}
		if tok2 := onceClaim(t, ctx, c, done); tok2 <= dtok {
			t.Fatalf("token %d not above %d", tok2, dtok)
		}
		// A non-positive EXPIRE deletes a done record (KV-3).
		forever := p + "forever"
		ftok := onceClaim(t, ctx, c, forever)
		onceOK(t, ctx, c, "ONCE.COMPLETE", forever, ftok, "B")
		if n := pttl(forever); n != -1 {
			t.Fatalf("PTTL of an answer kept forever: %d", n)
		}
		if n := intCmd("EXPIRE", forever, 0); n != 1 {
			t.Fatalf("EXPIRE 0 on a done record: %d", n)
		}
		if n := intCmd("EXISTS", forever); n != 0 {
			t.Fatalf("EXISTS after EXPIRE 0: %d", n)
		}
		// DEL of a done record frees it.
		ftok = onceClaim(t, ctx, c, forever)
		onceOK(t, ctx, c, "ONCE.COMPLETE", forever, ftok, "C")
		if n := intCmd("DEL", forever); n != 1 {
			t.Fatalf("DEL done: %d", n)
		}
		onceClaim(t, ctx, c, forever)
		// DEL of a running record without waiters frees it; the old
		// token is stale.
		if n := intCmd("DEL", run); n != 1 {
			t.Fatalf("DEL running: %d", n)
		}
		if n := intCmd("EXISTS", run); n != 0 {
			t.Fatalf("EXISTS after DEL: %d", n)
		}
		onceErr(t, ctx, c, "STALE", "ONCE.COMPLETE", run, tok, "late")
		if n := intCmd("EXISTS", run); n != 0 {
			t.Fatalf("a STALE COMPLETE created the key")
		}
		if n := intCmd("TTL", run); n != -2 {
			t.Fatalf("TTL of a deleted record: %d", n)
		}
	})
}

// TestOnceKV9OneRunner: 200 goroutines on 20 connections race CLAIM on
// one key; exactly one gets claimed. Repeated on several keys, with and
// without WAIT.
func TestOnceKV9OneRunner(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	forProtos(t, func(t *testing.T, proto int) {
		ctx := grCtx(t, 60*time.Second)
		const goroutines, conns, rounds = 200, 20, 5
		c := onceClient(t, addr, proto, func(o *redis.Options) {
			o.PoolSize = conns
			o.MinIdleConns = conns
			o.PoolTimeout = 20 * time.Second
		})
		other := onceClient(t, addr, proto)
		for round := range rounds {
			wait := round%2 == 1
			key := fmt.Sprintf("kv9:%d:%d", proto, round)
			start := make(chan struct{})
			var wg sync.WaitGroup
			var claimed, running, done atomic.Int64
			var winner atomic.Int64
			errs := &errSink{}
			for g := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					args := []any{"ONCE.CLAIM", key, "LEASE", 10000}
					if wait {
						args = append(args, "WAIT", 10000)
					}
					r, err := onceDo(ctx, c, args...)
					if err != nil {
						errs.add("goroutine %d: %v", g, err)
						return
					}
					switch r.State {
					case "claimed":
						claimed.Add(1)
						winner.Store(r.Token)
						// The winner runs while the others wait: on
						// another client, as the pool may be full of
						// waiters.
						time.Sleep(20 * time.Millisecond)
						if err := other.Do(ctx, "ONCE.COMPLETE", key, r.Token, "won").Err(); err != nil {
							errs.add("COMPLETE: %v", err)
						}
					case "running":
						if wait {
							errs.add("goroutine %d: %v with WAIT 10000", g, r)
						}
						running.Add(1)
					case "done":
						if r.Detail != "won" {
							errs.add("goroutine %d: %v", g, r)
						}
						done.Add(1)
					default:
						errs.add("goroutine %d: %v", g, r)
					}
				}()
			}
			close(start)
			wg.Wait()
			errs.report(t)
			if n := claimed.Load(); n != 1 {
				t.Fatalf("round %d (wait=%v): %d claimed, want exactly 1 (running %d, done %d)", round, wait, n, running.Load(), done.Load())
			}
			if n := claimed.Load() + running.Load() + done.Load(); n != goroutines {
				t.Fatalf("round %d: %d answers, want %d", round, n, goroutines)
			}
			st := onceStatus(t, ctx, other, key)
			if st["state"] != "done" || statusInt(st, "token") != winner.Load() {
				t.Fatalf("round %d: status %v, winner %d", round, st, winner.Load())
			}
		}
	})
}

// TestOnceKV10Wakeups: waiters on several connections (CLAIM … WAIT and
// ONCE.WAIT, RESP2 and RESP3) are woken by one COMPLETE, at once.
func TestOnceKV10Wakeups(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	ctx := grCtx(t, 30*time.Second)
	ctl := onceClient(t, addr, 3)
	const waiters = 12
	for round := range 3 {
		key := fmt.Sprintf("kv10:%d", round)
		tok := onceClaim(t, ctx, ctl, key, "LEASE", 20000)
		var chans []<-chan onceOutcome
		for i := range waiters {
			c := onceClient(t, addr, 2+i%2, withOneConn())
			var args []any
			switch i % 3 {
			case 0:
				args = []any{"ONCE.CLAIM", key, "WAIT", 0}
			case 1:
				args = []any{"ONCE.CLAIM", key, "WAIT", 15000, "LEASE", 1000}
			case 2:
				args = []any{"ONCE.WAIT", key}
			}
			chans = append(chans, asyncOnce(ctx, c, args...))
		}
		onceAwaitWaiters(t, ctx, ctl, key, waiters)
		for i, ch := range chans {
			onceQuiet(t, ch, 0, fmt.Sprintf("waiter %d before COMPLETE", i))
		}
		answer := fmt.Sprintf("answer-%d", round)
		t0 := time.Now()
		onceOK(t, ctx, ctl, "ONCE.COMPLETE", key, tok, answer)
		t1 := time.Now()
		var worst time.Duration
		for i, ch := range chans {
			o := onceRecv(t, ch, 5*time.Second, fmt.Sprintf("waiter %d", i))
			onceWant(t, fmt.Sprintf("waiter %d", i), o.r, "done", answer)
			if o.at.Before(t0) {
				t.Fatalf("waiter %d answered before COMPLETE was sent", i)
			}
			worst = max(worst, o.at.Sub(t0))
		}
		t.Logf("round %d: COMPLETE round trip %v, slowest waiter woken %v after COMPLETE was sent", round, t1.Sub(t0), worst)
		// A correctness check, not a benchmark: one event, not a poll
		// interval or a lease later.
		if worst > 500*time.Millisecond {
			t.Fatalf("round %d: slowest waiter woken %v after COMPLETE (want well under 500ms: a push, not a poll)", round, worst)
		}
	}
}

// TestOnceWaitUnbounded: WAIT 0 and ONCE.WAIT without TIMEOUT wait as long
// as it takes (past the default lease, past any short client timeout),
// when the client lifts its read timeout.
func TestOnceWaitUnbounded(t *testing.T) {
	t.Parallel()
	addr := onceServer(t, "--once-lease-ms", "300")
	forProtos(t, func(t *testing.T, proto int) {
		ctx := grCtx(t, 20*time.Second)
		ctl := onceClient(t, addr, proto)
		key := fmt.Sprintf("unbounded:%d", proto)
		tok := onceClaim(t, ctx, ctl, key, "LEASE", 1500)
		w1 := asyncOnce(ctx, onceClient(t, addr, proto), "ONCE.CLAIM", key, "WAIT", 0, "LEASE", 5000)
		w2 := asyncOnce(ctx, onceClient(t, addr, proto), "ONCE.WAIT", key)
		onceAwaitWaiters(t, ctx, ctl, key, 2)
		// The runner keeps extending for 1.5 s: more than the default
		// lease, the runner's own lease and a short read timeout.
		deadline := time.Now().Add(1500 * time.Millisecond)
		for time.Now().Before(deadline) {
			onceOK(t, ctx, ctl, "ONCE.EXTEND", key, tok, "LEASE", 1500)
			time.Sleep(150 * time.Millisecond)
		}
		onceQuiet(t, w1, 0, "CLAIM … WAIT 0")
		onceQuiet(t, w2, 0, "ONCE.WAIT without TIMEOUT")
		onceOK(t, ctx, ctl, "ONCE.COMPLETE", key, tok, "late but there")
		onceWant(t, "CLAIM … WAIT 0", onceRecv(t, w1, 5*time.Second, "CLAIM … WAIT 0").r, "done", "late but there")
		onceWant(t, "ONCE.WAIT", onceRecv(t, w2, 5*time.Second, "ONCE.WAIT").r, "done", "late but there")
	})
}

// TestOnceWaitSemantics: ONCE.WAIT never claims.
func TestOnceWaitSemantics(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	forProtos(t, func(t *testing.T, proto int) {
		ctx := grCtx(t, 20*time.Second)
		c := onceClient(t, addr, proto)
		p := fmt.Sprintf("wait:%d:", proto)

		// Free: at once, and it stays free.
		start := time.Now()
		onceWant(t, "WAIT free", onceMust(t, ctx, c, "ONCE.WAIT", p+"free", "TIMEOUT", 2000), "free", "")
		onceWant(t, "WAIT 0 free", onceMust(t, ctx, c, "ONCE.WAIT", p+"free"), "free", "")
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("WAIT on a free key took %v", el)
		}
		if st := onceStatus(t, ctx, c, p+"free"); st != nil {
			t.Fatalf("WAIT claimed a free key: %v", st)
		}

		// Timeout: ["running", ms-left] after about TIMEOUT.
		k := p + "timeout"
		tok := onceClaim(t, ctx, c, k, "LEASE", 10000)
		start = time.Now()
		r := onceMust(t, ctx, c, "ONCE.WAIT", k, "TIMEOUT", 150)
		el := time.Since(start)
		if r.State != "running" || r.Ms <= 8000 || r.Ms > 10000 {
			t.Fatalf("WAIT TIMEOUT 150 on a running key: %v, want [running ~9850]", r)
		}
		if el < 140*time.Millisecond || el > 3*time.Second {
			t.Fatalf("WAIT TIMEOUT 150 returned after %v", el)
		}
		// CLAIM … WAIT runs out the same way.
		start = time.Now()
		r = onceMust(t, ctx, c, "ONCE.CLAIM", k, "WAIT", 150)
		if el := time.Since(start); r.State != "running" || el < 140*time.Millisecond || el > 3*time.Second {
			t.Fatalf("CLAIM WAIT 150: %v after %v, want [running …] after ~150ms", r, el)
		}
		if st := onceStatus(t, ctx, c, k); statusInt(st, "waiters") != 0 || statusInt(st, "token") != tok {
			t.Fatalf("after timeouts: %v", st)
		}

		// Done: woken with the answer.
		w := asyncOnce(ctx, onceClient(t, addr, proto), "ONCE.WAIT", k, "TIMEOUT", 10000)
		onceAwaitWaiters(t, ctx, c, k, 1)
		onceOK(t, ctx, c, "ONCE.COMPLETE", k, tok, "ans", "KEEP", 10000)
		onceWant(t, "WAIT woken by COMPLETE", onceRecv(t, w, 5*time.Second, "WAIT").r, "done", "ans")
		onceWant(t, "WAIT on done", onceMust(t, ctx, c, "ONCE.WAIT", k), "done", "ans")

		// Failed: woken with the message.
		k = p + "failed"
		tok = onceClaim(t, ctx, c, k)
		w = asyncOnce(ctx, onceClient(t, addr, proto), "ONCE.WAIT", k)
		onceAwaitWaiters(t, ctx, c, k, 1)
		onceOK(t, ctx, c, "ONCE.ABORT", k, tok, "boom")
		onceWant(t, "WAIT woken by ABORT", onceRecv(t, w, 5*time.Second, "WAIT").r, "failed", "boom")
		onceWant(t, "WAIT after ABORT", onceMust(t, ctx, c, "ONCE.WAIT", k), "free", "")

		// A lapse with nobody to take it over: free.
		k = p + "lapse"
		onceClaim(t, ctx, c, k, "LEASE", 200)
		w = asyncOnce(ctx, onceClient(t, addr, proto), "ONCE.WAIT", k, "TIMEOUT", 10000)
		start = time.Now()
		o := onceRecv(t, w, 5*time.Second, "WAIT through a lapse")
		onceWant(t, "WAIT through a lapse", o.r, "free", "")
		if el := o.at.Sub(start); el > 2*time.Second {
			t.Fatalf("WAIT woken %v after a 200ms lease", el)
		}
		if st := onceStatus(t, ctx, c, k); st != nil {
			t.Fatalf("after a lapse: %v, want free", st)
		}

		// A lapse handed over to a CLAIM waiter: WAIT keeps waiting.
		k = p + "handover"
		tok = onceClaim(t, ctx, c, k, "LEASE", 1000)
		heir := asyncOnce(ctx, onceClient(t, addr, proto), "ONCE.CLAIM", k, "WAIT", 0, "LEASE", 10000)
		onceAwaitWaiters(t, ctx, c, k, 1)
		w = asyncOnce(ctx, onceClient(t, addr, proto), "ONCE.WAIT", k)
		onceAwaitWaiters(t, ctx, c, k, 2)
		h := onceRecv(t, heir, 5*time.Second, "heir").r
		if h.State != "claimed" || h.Token <= tok {
			t.Fatalf("heir: %v, want [claimed >%d]", h, tok)
		}
		onceQuiet(t, w, 100*time.Millisecond, "WAIT through a handover")
		onceOK(t, ctx, c, "ONCE.COMPLETE", k, h.Token, "heir's")
		onceWant(t, "WAIT after the heir completes", onceRecv(t, w, 5*time.Second, "WAIT").r, "done", "heir's")

		// Inside MULTI, WAIT answers at once.
		k = p + "multi"
		onceClaim(t, ctx, c, k, "LEASE", 10000)
		cmds, err := c.TxPipelined(ctx, func(pp redis.Pipeliner) error {
			pp.Do(ctx, "ONCE.WAIT", k)
			pp.Do(ctx, "ONCE.WAIT", k, "TIMEOUT", 0)
			return nil
		})
		if err != nil {
			t.Fatalf("MULTI ONCE.WAIT: %v", err)
		}
		for i, cmd := range cmds {
			r, err := parseOnce(cmd.(*redis.Cmd).Val())
			if err != nil || r.State != "running" || r.Ms <= 0 {
				t.Fatalf("MULTI ONCE.WAIT #%d: %v %v, want [running ms]", i, r, err)
			}
		}
	})
}

// TestOnceMulti: inside MULTI, CLAIM … WAIT answers at once.
func TestOnceMulti(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	forProtos(t, func(t *testing.T, proto int) {
		ctx := grCtx(t, 20*time.Second)
		c := onceClient(t, addr, proto)
		k := fmt.Sprintf("multi:%d", proto)
		start := time.Now()
		cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "ONCE.CLAIM", k, "LEASE", 10000)
			p.Do(ctx, "ONCE.CLAIM", k, "WAIT", 0)
			p.Do(ctx, "ONCE.CLAIM", k, "WAIT", 5000)
			p.Do(ctx, "ONCE.STATUS", k)
			return nil
		})
		if err != nil {
			t.Fatalf("MULTI: %v", err)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("MULTI with CLAIM … WAIT took %v: it must not block", el)
		}
		var rs []onceReply
		for _, cmd := range cmds[:3] {
			r, err := parseOnce(cmd.(*redis.Cmd).Val())
			if err != nil {
				t.Fatalf("MULTI reply: %v", err)
			}
			rs = append(rs, r)
		}
		if rs[0].State != "claimed" || rs[1].State != "running" || rs[2].State != "running" || rs[1].Ms <= 9000 || rs[1].Ms > 10000 {
			t.Fatalf("MULTI replies %v, want [claimed] [running ~10000] [running ~10000]", rs)
		}
		st := onceStatus(t, ctx, c, k)
		if statusInt(st, "token") != rs[0].Token || statusInt(st, "waiters") != 0 {
			t.Fatalf("after MULTI: %v", st)
		}
		// A running key, claimed outside: CLAIM … WAIT inside MULTI on
		// another connection also answers at once.
		c2 := onceClient(t, addr, proto)
		cmds, err = c2.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "ONCE.CLAIM", k, "WAIT", 0)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		r, err := parseOnce(cmds[0].(*redis.Cmd).Val())
		if err != nil || r.State != "running" {
			t.Fatalf("MULTI CLAIM WAIT 0 on a running key: %v %v", r, err)
		}
		onceOK(t, ctx, c, "ONCE.COMPLETE", k, rs[0].Token, "x")
	})
}

// TestOnceKV12Abort: ABORT frees the key, keeps nothing, fails the waiters
// with its message ("aborted" without one); the next CLAIM runs again.
func TestOnceKV12Abort(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	forProtos(t, func(t *testing.T, proto int) {
		ctx := grCtx(t, 20*time.Second)
		c := onceClient(t, addr, proto)
		for _, tc := range []struct {
			name string
			msg  []any
			want string
		}{
			{"without message", nil, "aborted"},
			{"with message", []any{"payment provider down"}, "payment provider down"},
			{"empty message", []any{""}, ""},
		} {
			k := fmt.Sprintf("abort:%d:%s", proto, tc.name)
			tok := onceClaim(t, ctx, c, k)
			var ws []<-chan onceOutcome
			for i := range 4 {
				args := []any{"ONCE.CLAIM", k, "WAIT", 0}
				if i%2 == 1 {
					args = []any{"ONCE.WAIT", k}
				}
				ws = append(ws, asyncOnce(ctx, onceClient(t, addr, 2+i%2), args...))
			}
			onceAwaitWaiters(t, ctx, c, k, 4)
			onceOK(t, ctx, c, append([]any{"ONCE.ABORT", k, tok}, tc.msg...)...)
			for i, w := range ws {
				onceWant(t, fmt.Sprintf("%s: waiter %d", tc.name, i), onceRecv(t, w, 5*time.Second, "waiter").r, "failed", tc.want)
			}
			if st := onceStatus(t, ctx, c, k); st != nil {
				t.Fatalf("%s: ABORT kept %v", tc.name, st)
			}
			if n := c.Exists(ctx, k).Val(); n != 0 {
				t.Fatalf("%s: EXISTS after ABORT: %d", tc.name, n)
			}
			onceErr(t, ctx, c, "STALE", "ONCE.ABORT", k, tok)
			onceErr(t, ctx, c, "STALE", "ONCE.COMPLETE", k, tok, "late")
			onceErr(t, ctx, c, "STALE", "ONCE.EXTEND", k, tok, "LEASE", 1000)
			if st := onceStatus(t, ctx, c, k); st != nil {
				t.Fatalf("%s: a stale call after ABORT made %v", tc.name, st)
			}
			tok2 := onceClaim(t, ctx, c, k)
			if tok2 <= tok {
				t.Fatalf("token %d not above %d", tok2, tok)
			}
		}
	})
}

// TestOnceKV13Leases: a lapsed claim passes to the oldest CLAIM waiter with
// a new, larger token; old tokens are STALE and change nothing.
func TestOnceKV13Leases(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	forProtos(t, func(t *testing.T, proto int) {
		ctx := grCtx(t, 20*time.Second)
		c := onceClient(t, addr, proto)
		k := fmt.Sprintf("lease:%d", proto)
		tok := onceClaim(t, ctx, c, k, "LEASE", 1000)
		var ws []<-chan onceOutcome
		for i := range 3 {
			ws = append(ws, asyncOnce(ctx, onceClient(t, addr, proto), "ONCE.CLAIM", k, "WAIT", 0, "LEASE", 10000+i))
			// Order the waiters: each is registered before the next.
			onceAwaitWaiters(t, ctx, c, k, int64(i+1))
		}
		first := onceRecv(t, ws[0], 5*time.Second, "oldest waiter")
		if first.r.State != "claimed" || first.r.Token <= tok {
			t.Fatalf("oldest waiter: %v, want [claimed >%d]", first.r, tok)
		}
		onceQuiet(t, ws[1], 50*time.Millisecond, "second waiter")
		onceQuiet(t, ws[2], 0, "third waiter")
		st := onceStatus(t, ctx, c, k)
		if statusInt(st, "token") != first.r.Token || statusInt(st, "waiters") != 2 {
			t.Fatalf("after handover: %v", st)
		}
		// The heir got its own lease.
		if l := statusInt(st, "lease-ms"); l <= 9000 || l > 10000 {
			t.Fatalf("heir's lease-ms %d, want ~10000", l)
		}
		// The dead runner wakes up: every call is STALE and changes nothing.
		onceErr(t, ctx, c, "STALE", "ONCE.COMPLETE", k, tok, "late")
		onceErr(t, ctx, c, "STALE", "ONCE.EXTEND", k, tok, "LEASE", 100000)
		onceErr(t, ctx, c, "STALE", "ONCE.ABORT", k, tok, "late")
		if st2 := onceStatus(t, ctx, c, k); statusInt(st2, "token") != first.r.Token || st2["state"] != "running" {
			t.Fatalf("stale calls changed the record: %v", st2)
		}
		onceQuiet(t, ws[1], 0, "second waiter after stale calls")
		// The heir aborts: its waiters fail.
		onceOK(t, ctx, c, "ONCE.ABORT", k, first.r.Token, "heir failed")
		for i, w := range ws[1:] {
			onceWant(t, fmt.Sprintf("waiter %d", i+1), onceRecv(t, w, 5*time.Second, "waiter").r, "failed", "heir failed")
		}
	})
}

// TestOnceKV14Keep: an answer is kept KEEP ms, then the key runs again;
// KEEP 0 goes to the current waiters only.
func TestOnceKV14Keep(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	forProtos(t, func(t *testing.T, proto int) {
		ctx := grCtx(t, 20*time.Second)
		c := onceClient(t, addr, proto)
		k := fmt.Sprintf("keep:%d", proto)
		tok := onceClaim(t, ctx, c, k)
		onceOK(t, ctx, c, "ONCE.COMPLETE", k, tok, "memo", "KEEP", 1000)
		for range 3 {
			onceWant(t, "CLAIM within keep", onceMust(t, ctx, c, "ONCE.CLAIM", k), "done", "memo")
		}
		time.Sleep(1100 * time.Millisecond)
		if st := onceStatus(t, ctx, c, k); st != nil {
			t.Fatalf("after keep: %v", st)
		}
		tok2 := onceClaim(t, ctx, c, k)
		if tok2 <= tok {
			t.Fatalf("token %d not above %d", tok2, tok)
		}
		// KEEP 0: a singleflight.
		w1 := asyncOnce(ctx, onceClient(t, addr, proto), "ONCE.CLAIM", k, "WAIT", 0)
		w2 := asyncOnce(ctx, onceClient(t, addr, proto), "ONCE.WAIT", k)
		onceAwaitWaiters(t, ctx, c, k, 2)
		onceOK(t, ctx, c, "ONCE.COMPLETE", k, tok2, "flight", "KEEP", 0)
		onceWant(t, "CLAIM waiter", onceRecv(t, w1, 5*time.Second, "w1").r, "done", "flight")
		onceWant(t, "WAIT waiter", onceRecv(t, w2, 5*time.Second, "w2").r, "done", "flight")
		if n := c.Exists(ctx, k).Val(); n != 0 {
			t.Fatalf("KEEP 0 kept the key")
		}
		if tok3 := onceClaim(t, ctx, c, k); tok3 <= tok2 {
			t.Fatalf("token %d not above %d", tok3, tok2)
		}
		onceErr(t, ctx, c, "ERR", "ONCE.COMPLETE", k, tok2, "x", "KEEP", -1)
		onceErr(t, ctx, c, "ERR", "ONCE.COMPLETE", k, tok2, "x", "KEEP")
	})
}

// TestOnceKV15Fingerprint: a CLAIM whose fingerprint differs gets MISMATCH
// and changes nothing.
func TestOnceKV15Fingerprint(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	forProtos(t, func(t *testing.T, proto int) {
		ctx := grCtx(t, 20*time.Second)
		c := onceClient(t, addr, proto)
		k := fmt.Sprintf("fp:%d", proto)
		tok := onceClaim(t, ctx, c, k, "FINGERPRINT", "order-1:sum-42", "LEASE", 10000)
		if st := onceStatus(t, ctx, c, k); st["fingerprint"] != "order-1:sum-42" {
			t.Fatalf("STATUS fingerprint: %v", st)
		}
		onceErr(t, ctx, c, "MISMATCH", "ONCE.CLAIM", k, "FINGERPRINT", "order-1:sum-43")
		onceErr(t, ctx, c, "MISMATCH", "ONCE.CLAIM", k, "FINGERPRINT", "order-1:sum-43", "WAIT", 0)
		st := onceStatus(t, ctx, c, k)
		if statusInt(st, "token") != tok || statusInt(st, "waiters") != 0 || st["fingerprint"] != "order-1:sum-42" {
			t.Fatalf("MISMATCH changed the record: %v", st)
		}
		if r := onceMust(t, ctx, c, "ONCE.CLAIM", k, "FINGERPRINT", "order-1:sum-42"); r.State != "running" {
			t.Fatalf("same fingerprint: %v", r)
		}
		if r := onceMust(t, ctx, c, "ONCE.CLAIM", k); r.State != "running" {
			t.Fatalf("no fingerprint: %v", r)
		}
		onceOK(t, ctx, c, "ONCE.COMPLETE", k, tok, "receipt-1")
		onceErr(t, ctx, c, "MISMATCH", "ONCE.CLAIM", k, "FINGERPRINT", "other")
		onceWant(t, "same fingerprint on done", onceMust(t, ctx, c, "ONCE.CLAIM", k, "FINGERPRINT", "order-1:sum-42"), "done", "receipt-1")
		onceWant(t, "no fingerprint on done", onceMust(t, ctx, c, "ONCE.CLAIM", k), "done", "receipt-1")
		// A record without a fingerprint is never a mismatch.
		k2 := k + ":nofp"
		onceClaim(t, ctx, c, k2)
		if r := onceMust(t, ctx, c, "ONCE.CLAIM", k2, "FINGERPRINT", "any"); r.State != "running" {
			t.Fatalf("fingerprint against a record without: %v", r)
		}
		if st := onceStatus(t, ctx, c, k2); st["fingerprint"] != nil {
			t.Fatalf("a running CLAIM set the fingerprint: %v", st)
		}
	})
}

// TestOnceDeleteIsLapse: DEL, UNLINK, FLUSHDB and FLUSHALL of a running
// record with a waiting CLAIM hand the claim over at that moment.
func TestOnceDeleteIsLapse(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"DEL", "UNLINK", "FLUSHDB", "FLUSHALL"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			addr := onceServer(t)
			ctx := grCtx(t, 20*time.Second)
			c := onceClient(t, addr, 3)
			k := "dl:" + how
			tok := onceClaim(t, ctx, c, k, "LEASE", 30000)
			heir := asyncOnce(ctx, onceClient(t, addr, 2), "ONCE.CLAIM", k, "WAIT", 0, "LEASE", 20000)
			onceAwaitWaiters(t, ctx, c, k, 1)
			watcher := asyncOnce(ctx, onceClient(t, addr, 3), "ONCE.WAIT", k)
			onceAwaitWaiters(t, ctx, c, k, 2)
			start := time.Now()
			var args []any
			if how == "DEL" || how == "UNLINK" {
				args = []any{how, k}
			} else {
				args = []any{how}
			}
			if err := c.Do(ctx, args...).Err(); err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			o := onceRecv(t, heir, 5*time.Second, "heir")
			if o.r.State != "claimed" || o.r.Token <= tok {
				t.Fatalf("heir after %s: %v, want [claimed >%d]", how, o.r, tok)
			}
			if el := o.at.Sub(start); el > time.Second {
				t.Fatalf("heir claimed %v after %s: not at that moment", el, how)
			}
			st := onceStatus(t, ctx, c, k)
			if st["state"] != "running" || statusInt(st, "token") != o.r.Token || statusInt(st, "waiters") != 1 {
				t.Fatalf("after %s: %v", how, st)
			}
			if l := statusInt(st, "lease-ms"); l <= 19000 || l > 20000 {
				t.Fatalf("heir's lease %d, want ~20000", l)
			}
			onceErr(t, ctx, c, "STALE", "ONCE.COMPLETE", k, tok, "late")
			onceQuiet(t, watcher, 0, "ONCE.WAIT through the handover")
			// And with only ONCE.WAIT waiting, the key ends free.
			if err := c.Do(ctx, args...).Err(); err != nil {
				t.Fatal(err)
			}
			onceWant(t, "ONCE.WAIT after the second "+how, onceRecv(t, watcher, 5*time.Second, "watcher").r, "free", "")
			onceErr(t, ctx, c, "STALE", "ONCE.COMPLETE", k, o.r.Token, "late")
			if st := onceStatus(t, ctx, c, k); st != nil {
				t.Fatalf("after the second %s: %v", how, st)
			}
		})
	}
}

// TestOnceInfoRenamedRunning: a running record that RENAME or RENAMENX
// moves is still a running claim (its token holds under the new name), so
// INFO once's running_keys keeps counting it, under its new name: DEL of
// the new name stops the count, as DEL of any running record does.
func TestOnceInfoRenamedRunning(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"RENAME", "RENAMENX"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			addr := onceServer(t)
			ctx := grCtx(t, 20*time.Second)
			c := onceClient(t, addr, 3)
			running := func(step string, want int64) {
				t.Helper()
				if got := onceInfo(t, ctx, c)["running_keys"]; got != want {
					t.Fatalf("after %s: running_keys %d, want %d", step, got, want)
				}
			}
			tok := onceClaim(t, ctx, c, "src", "LEASE", 60000)
			onceClaim(t, ctx, c, "other", "LEASE", 60000)
			running("the claims", 2)
			if err := c.Do(ctx, how, "src", "dst").Err(); err != nil {
				t.Fatalf("%s src dst: %v", how, err)
			}
			running(how, 2)
			onceOK(t, ctx, c, "ONCE.EXTEND", "dst", tok, "LEASE", 60000)
			running("EXTEND of the renamed claim", 2)
			if err := c.Del(ctx, "dst").Err(); err != nil {
				t.Fatalf("DEL dst: %v", err)
			}
			running("DEL of the renamed claim", 1)
		})
	}
}

// TestOnceInfo: INFO's Once section has its twelve fields and they move as
// the commands go.
func TestOnceInfo(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	ctx := grCtx(t, 20*time.Second)
	c := onceClient(t, addr, 3)
	want := map[string]int64{}
	for _, f := range onceInfoFields {
		want[f] = 0
	}
	check := func(step string) {
		t.Helper()
		got := onceInfo(t, ctx, c)
		for _, f := range onceInfoFields {
			if want[f] >= 0 && got[f] != want[f] {
				t.Errorf("after %s: INFO once %s = %d, want %d", step, f, got[f], want[f])
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	check("start")
	// INFO and INFO all carry the section too.
	for _, args := range [][]any{{"INFO"}, {"INFO", "all"}, {"INFO", "everything"}} {
		s, err := c.Do(ctx, args...).Text()
		if err != nil || !strings.Contains(s, "# Once\r\n") || infoField(s, "running_keys") == "" {
			t.Fatalf("%v: no Once section (%v)", args, err)
		}
	}

	tok := onceClaim(t, ctx, c, "a")
	want["claims"], want["running_keys"] = 1, 1
	check("CLAIM a")
	onceMust(t, ctx, c, "ONCE.CLAIM", "a")
	check("CLAIM a (running)")
	w := asyncOnce(ctx, onceClient(t, addr, 2), "ONCE.CLAIM", "a", "WAIT", 0)
	onceAwaitWaiters(t, ctx, c, "a", 1)
	want["waits"], want["waiting_clients"] = 1, 1
	check("CLAIM a WAIT 0")
	onceOK(t, ctx, c, "ONCE.COMPLETE", "a", tok, "x")
	onceRecv(t, w, 5*time.Second, "waiter")
	want["completes"], want["wakeups"], want["waiting_clients"], want["running_keys"] = 1, 1, 0, 0
	check("COMPLETE a")
	onceWant(t, "replay", onceMust(t, ctx, c, "ONCE.CLAIM", "a"), "done", "x")
	want["replays"] = 1
	check("CLAIM a (done)")
	onceErr(t, ctx, c, "STALE", "ONCE.COMPLETE", "a", tok, "y")
	want["stale_rejects"] = 1
	check("stale COMPLETE")
	btok := onceClaim(t, ctx, c, "b", "FINGERPRINT", "f1")
	want["claims"], want["running_keys"] = 2, 1
	check("CLAIM b")
	onceErr(t, ctx, c, "MISMATCH", "ONCE.CLAIM", "b", "FINGERPRINT", "f2")
	want["mismatches"] = 1
	check("mismatch")
	onceOK(t, ctx, c, "ONCE.ABORT", "b", btok)
	want["aborts"], want["running_keys"] = 1, 0
	check("ABORT b")
	onceClaim(t, ctx, c, "c", "LEASE", 1000)
	want["claims"], want["running_keys"] = 3, 1
	check("CLAIM c")
	heir := asyncOnce(ctx, onceClient(t, addr, 2), "ONCE.CLAIM", "c", "WAIT", 0, "LEASE", 30000)
	h := onceRecv(t, heir, 5*time.Second, "heir")
	if h.r.State != "claimed" {
		t.Fatalf("heir: %v", h.r)
	}
	want["waits"], want["wakeups"], want["lease_lapses"], want["handoffs"], want["claims"] = 2, 2, 1, 1, 4
	check("lapse of c")
	onceClaim(t, ctx, c, "d", "LEASE", 1000)
	want["claims"], want["running_keys"] = 5, 2
	check("CLAIM d")
	time.Sleep(1100 * time.Millisecond)
	// Whether a lease that passed with nobody waiting counts as a lapse
	// is not specified.
	want["running_keys"], want["lease_lapses"] = 1, -1
	check("d's lease passed")
}
