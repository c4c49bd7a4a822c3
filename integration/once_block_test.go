package integration

// A waiting client is a blocked client, as in BLPOP: if it disconnects its
// wait is dropped and no claim is handed to it; it never holds up other
// connections; when the server closes it is woken with an error; and
// nothing of it is left behind (no goroutine leaks once the server is
// closed). The servers run in this process so that goleak sees their
// goroutines; these tests are not parallel, so the goroutines of other
// tests do not come and go while they check.

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/oncekv/oncekv/internal/app"
	"github.com/oncekv/oncekv/internal/testserver"
)

// blockServer starts an in-process server that the test closes itself
// (closeServer), so that goleak can check after it.
func blockServer(t *testing.T, args ...string) (*app.App, string) {
	t.Helper()
	a, err := testserver.StartErr(t, args...)
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { a.Close() }) // Close is idempotent
	return a, a.Addr().String()
}

// closeServer closes a, failing the test if that takes more than 10 s.
func closeServer(t *testing.T, a *app.App) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- a.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("close server: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("server Close did not return within 10s")
	}
}

// frameOnce reads a raw [state, detail] reply.
func frameOnce(f *Frame) (onceReply, error) {
	if f.Type == '-' {
		return onceReply{}, fmt.Errorf("error reply: %s", f.Str)
	}
	if f.Type != '*' || len(f.Elems) != 2 {
		return onceReply{}, fmt.Errorf("reply %q is not a two-element array", f.Raw)
	}
	r := onceReply{State: f.Elems[0].Str}
	d := f.Elems[1]
	switch r.State {
	case "claimed", "running":
		n, ok := d.Int()
		if !ok {
			return r, fmt.Errorf("reply %q: detail is not an integer", f.Raw)
		}
		r.Token, r.Ms = n, n
	default:
		if d.Type != '$' {
			return r, fmt.Errorf("reply %q: detail is not a bulk string", f.Raw)
		}
		r.Detail = d.Str
	}
	return r, nil
}

// rawOnce sends a ONCE command on c and reads its [state, detail] reply.
func rawOnce(t *testing.T, c *RawConn, args ...string) onceReply {
	t.Helper()
	r, err := frameOnce(rawFrame(t, c, args...))
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return r
}

// rawFrame sends args on c and reads one frame, failing t on error.
func rawFrame(t *testing.T, c *RawConn, args ...string) *Frame {
	t.Helper()
	f, err := c.TryReadFrameAfter(EncodeCommand(args...))
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return f
}

// rawInfoInt reads one field of INFO once over c.
func rawInfoInt(t *testing.T, c *RawConn, field string) int64 {
	t.Helper()
	f := rawFrame(t, c, "INFO", "once")
	if !strings.Contains(f.Str, "# Once") {
		t.Fatalf("INFO once: no Once section in %q", f.Str)
	}
	n, err := strconv.ParseInt(infoField(f.Str, field), 10, 64)
	if err != nil {
		t.Fatalf("INFO once %s: %v in %q", field, err, f.Str)
	}
	return n
}

// awaitWaiting waits until INFO once shows n waiting clients.
func awaitWaiting(t *testing.T, ctl *RawConn, n int64) {
	t.Helper()
	waitFor(t, 5*time.Second, 5*time.Millisecond, fmt.Sprintf("waiting_clients = %d", n), func() (bool, string) {
		got := rawInfoInt(t, ctl, "waiting_clients")
		return got == n, fmt.Sprintf("waiting_clients = %d", got)
	})
}

// sendWaiters opens n connections, each blocked in args (sent, not read).
func sendWaiters(t *testing.T, addr string, n int, args ...string) []*RawConn {
	t.Helper()
	cs := make([]*RawConn, n)
	for i := range cs {
		cs[i] = DialRaw(t, addr)
		cs[i].Send(EncodeCommand(args...))
	}
	return cs
}

func closeAll(cs []*RawConn) {
	for _, c := range cs {
		c.Close()
	}
}

func verifyNoLeaks(t *testing.T, ignore goleak.Option) {
	t.Helper()
	if err := goleak.Find(ignore); err != nil {
		t.Errorf("goroutines left after the server closed: %v", err)
	}
}

// TestOnceBlockDisconnect: waiters that disconnect are dropped, and a claim
// never goes to a dead waiter.
func TestOnceBlockDisconnect(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	a, addr := blockServer(t)
	ctl := DialRaw(t, addr)

	t.Run("dropped before the lapse; a live waiter after them gets the claim", func(t *testing.T) {
		tok := rawOnce(t, ctl, "ONCE.CLAIM", "a", "LEASE", "1500").Token
		dead := sendWaiters(t, addr, 5, "ONCE.CLAIM", "a", "WAIT", "0", "LEASE", "30000")
		awaitWaiting(t, ctl, 5)
		closeAll(dead)
		awaitWaiting(t, ctl, 0)
		live := DialRaw(t, addr)
		live.Send(EncodeCommand("ONCE.CLAIM", "a", "WAIT", "0", "LEASE", "30000"))
		awaitWaiting(t, ctl, 1)
		r, err := frameOnce(live.ReadFrame())
		if err != nil || r.State != "claimed" || r.Token <= tok {
			t.Fatalf("live waiter: %v %v, want [claimed >%d]", r, err, tok)
		}
		f := rawFrame(t, ctl, "ONCE.COMPLETE", "a", strconv.FormatInt(r.Token, 10), "live")
		if f.Str != "OK" {
			t.Fatalf("live waiter's COMPLETE: %q (the claim did not stay with it)", f.Raw)
		}
		live.Close()
	})

	t.Run("only dead waiters: the key ends free", func(t *testing.T) {
		tok := rawOnce(t, ctl, "ONCE.CLAIM", "b", "LEASE", "1000").Token
		dead := sendWaiters(t, addr, 3, "ONCE.CLAIM", "b", "WAIT", "0", "LEASE", "30000")
		awaitWaiting(t, ctl, 3)
		closeAll(dead)
		awaitWaiting(t, ctl, 0)
		time.Sleep(1100 * time.Millisecond)
		if f := rawFrame(t, ctl, "EXISTS", "b"); f.Str != "0" {
			t.Fatalf("EXISTS b after the lease, dead waiters only: %q (a dead waiter holds the claim)", f.Raw)
		}
		r := rawOnce(t, ctl, "ONCE.CLAIM", "b")
		if r.State != "claimed" || r.Token <= tok {
			t.Fatalf("CLAIM after: %v", r)
		}
	})

	t.Run("dead waiters then ABORT", func(t *testing.T) {
		tok := rawOnce(t, ctl, "ONCE.CLAIM", "c", "LEASE", "30000").Token
		dead := sendWaiters(t, addr, 3, "ONCE.CLAIM", "c", "WAIT", "0")
		dead = append(dead, sendWaiters(t, addr, 3, "ONCE.WAIT", "c")...)
		awaitWaiting(t, ctl, 6)
		closeAll(dead)
		awaitWaiting(t, ctl, 0)
		if f := rawFrame(t, ctl, "ONCE.ABORT", "c", strconv.FormatInt(tok, 10)); f.Str != "OK" {
			t.Fatalf("ABORT: %q", f.Raw)
		}
		if f := rawFrame(t, ctl, "EXISTS", "c"); f.Str != "0" {
			t.Fatalf("EXISTS after ABORT: %q", f.Raw)
		}
	})

	t.Run("dead waiters close shortly before the lapse; the live one gets it at once", func(t *testing.T) {
		// The disconnects are not awaited: the server has the 200 ms or
		// more before the lapse to notice them. The live waiter must not wait
		// out a dead waiter's 30 s lease.
		for round := range 3 {
			key := fmt.Sprintf("d%d", round)
			tok := rawOnce(t, ctl, "ONCE.CLAIM", key, "LEASE", "600").Token
			claimed := time.Now()
			dead := sendWaiters(t, addr, 3, "ONCE.CLAIM", key, "WAIT", "0", "LEASE", "30000")
			awaitWaiting(t, ctl, 3)
			live := DialRaw(t, addr)
			live.Send(EncodeCommand("ONCE.CLAIM", key, "WAIT", "0", "LEASE", "30000"))
			awaitWaiting(t, ctl, 4)
			if el := time.Since(claimed); el > 400*time.Millisecond {
				t.Logf("round %d: setup took %v, too close to the lapse; skipping the round", round, el)
				closeAll(dead)
				live.Close()
				continue
			}
			closeAll(dead)
			r, err := frameOnce(live.ReadFrame())
			if err != nil || r.State != "claimed" || r.Token <= tok {
				t.Fatalf("round %d: live waiter: %v %v, want [claimed >%d] within the 5s read timeout", round, r, err, tok)
			}
			if el := time.Since(claimed); el > 2*time.Second {
				t.Fatalf("round %d: live waiter claimed %v after the runner's claim (lease 600 ms)", round, el)
			}
			st := rawFrame(t, ctl, "ONCE.STATUS", key)
			if !strings.Contains(string(st.Raw), ":"+strconv.FormatInt(r.Token, 10)+"\r\n") {
				t.Fatalf("round %d: status %q, want token %d", round, st.Raw, r.Token)
			}
			live.Close()
		}
		awaitWaiting(t, ctl, 0)
	})

	t.Run("dead waiters close as the lease lapses; the claim reaches the live one", func(t *testing.T) {
		// A claim handed to a waiter just before it disconnects is its
		// own (it was alive): it comes back at that waiter's lease (400
		// ms here) or sooner if the server notices. Either way the live
		// waiter ends up with it, within the dead waiters' leases.
		for round := range 4 {
			key := fmt.Sprintf("r%d", round)
			tok := rawOnce(t, ctl, "ONCE.CLAIM", key, "LEASE", "600").Token
			claimed := time.Now()
			dead := sendWaiters(t, addr, 3, "ONCE.CLAIM", key, "WAIT", "0", "LEASE", "400")
			awaitWaiting(t, ctl, 3)
			live := DialRaw(t, addr)
			live.Send(EncodeCommand("ONCE.CLAIM", key, "WAIT", "0", "LEASE", "30000"))
			awaitWaiting(t, ctl, 4)
			if el := time.Since(claimed); el > 500*time.Millisecond {
				t.Logf("round %d: setup took %v, too close to the lapse; skipping the round", round, el)
				closeAll(dead)
				live.Close()
				continue
			}
			time.Sleep(time.Until(claimed.Add(time.Duration(580+round*15) * time.Millisecond)))
			closeAll(dead)
			r, err := frameOnce(live.ReadFrame())
			if err != nil || r.State != "claimed" || r.Token <= tok {
				t.Fatalf("round %d: live waiter: %v %v", round, r, err)
			}
			el := time.Since(claimed)
			t.Logf("round %d: live waiter claimed after %v", round, el)
			if el > 600*time.Millisecond+3*400*time.Millisecond+time.Second {
				t.Fatalf("round %d: live waiter claimed after %v", round, el)
			}
			live.Close()
		}
		awaitWaiting(t, ctl, 0)
	})

	t.Run("waiters closed, then the lease lapses: the claim goes straight to the live one", func(t *testing.T) {
		// KV-13: the claim is handed over once, to the oldest live
		// waiter, as the lease lapses; never to a waiter whose socket
		// was closed, and not a dead waiter's 30 s lease later. The
		// lapse comes once the server has seen the sockets close: a
		// close it has not read yet is a client still there (README;
		// the instant in between is TestLapseHandoverPassesALeftWaiterBy's,
		// in commands, where it is made deterministic).
		tok := rawOnce(t, ctl, "ONCE.CLAIM", "h", "LEASE", "30000").Token
		dead := sendWaiters(t, addr, 2, "ONCE.CLAIM", "h", "WAIT", "0", "LEASE", "30000")
		awaitWaiting(t, ctl, 2)
		live := sendWaiters(t, addr, 2, "ONCE.CLAIM", "h", "WAIT", "0", "LEASE", "30000")
		awaitWaiting(t, ctl, 4)
		handoffs := rawInfoInt(t, ctl, "handoffs")
		closeAll(dead)
		awaitWaiting(t, ctl, 2)
		// The lease lapses now.
		if f := rawFrame(t, ctl, "ONCE.EXTEND", "h", strconv.FormatInt(tok, 10), "LEASE", "1"); f.Str != "OK" {
			t.Fatalf("EXTEND: %q", f.Raw)
		}
		start := time.Now()
		r, err := frameOnce(live[0].ReadFrame())
		if err != nil || r.State != "claimed" || r.Token <= tok {
			t.Fatalf("oldest live waiter: %v %v, want [claimed >%d]", r, err, tok)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("oldest live waiter claimed %v after the lapse", el)
		}
		if n := rawInfoInt(t, ctl, "handoffs") - handoffs; n != 1 {
			t.Errorf("handoffs: %d, want 1 (straight to the live waiter)", n)
		}
		if f := rawFrame(t, ctl, "ONCE.COMPLETE", "h", strconv.FormatInt(r.Token, 10), "done"); f.Str != "OK" {
			t.Fatalf("heir's COMPLETE: %q", f.Raw)
		}
		if r, err := frameOnce(live[1].ReadFrame()); err != nil || r.State != "done" || r.Detail != "done" {
			t.Fatalf("second live waiter: %v %v, want [done done]", r, err)
		}
		closeAll(live)
		awaitWaiting(t, ctl, 0)
	})

	t.Run("a waiter that pipelined more commands and left", func(t *testing.T) {
		rawOnce(t, ctl, "ONCE.CLAIM", "e", "LEASE", "30000")
		c := DialRaw(t, addr)
		c.Send(append(EncodeCommand("ONCE.CLAIM", "e", "WAIT", "0"), EncodeCommand("SET", "after-wait", "1")...))
		awaitWaiting(t, ctl, 1)
		c.Close()
		awaitWaiting(t, ctl, 0)
	})

	ctl.Close()
	closeServer(t, a)
	verifyNoLeaks(t, ignore)
}

// TestOnceBlockNoStarve: while 100 clients wait, other connections are
// served at once; then one COMPLETE per key answers all of them.
func TestOnceBlockNoStarve(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	a, addr := blockServer(t)
	ctl := DialRaw(t, addr)
	tokA := rawOnce(t, ctl, "ONCE.CLAIM", "ka", "LEASE", "30000").Token
	tokB := rawOnce(t, ctl, "ONCE.CLAIM", "kb", "LEASE", "30000").Token
	var waiters []*RawConn
	waiters = append(waiters, sendWaiters(t, addr, 40, "ONCE.CLAIM", "ka", "WAIT", "0")...)
	waiters = append(waiters, sendWaiters(t, addr, 10, "ONCE.WAIT", "ka")...)
	waiters = append(waiters, sendWaiters(t, addr, 40, "ONCE.CLAIM", "kb", "WAIT", "20000")...)
	waiters = append(waiters, sendWaiters(t, addr, 10, "ONCE.WAIT", "kb", "TIMEOUT", "20000")...)
	awaitWaiting(t, ctl, 100)

	// Other connections, old and new, are served promptly.
	var worst time.Duration
	other := DialRaw(t, addr)
	for i := range 200 {
		start := time.Now()
		switch i % 3 {
		case 0:
			if f := rawFrame(t, other, "PING"); f.Str != "PONG" {
				t.Fatalf("PING: %q", f.Raw)
			}
		case 1:
			rawFrame(t, other, "SET", "plain", strconv.Itoa(i))
		case 2:
			if f := rawFrame(t, other, "GET", "plain"); f.Str != strconv.Itoa(i-1) {
				t.Fatalf("GET: %q", f.Raw)
			}
		}
		worst = max(worst, time.Since(start))
	}
	for range 10 {
		start := time.Now()
		c := DialRaw(t, addr)
		if f := rawFrame(t, c, "PING"); f.Str != "PONG" {
			t.Fatalf("PING on a new connection: %q", f.Raw)
		}
		c.Close()
		worst = max(worst, time.Since(start))
	}
	t.Logf("slowest command while 100 clients wait: %v", worst)
	if worst > 500*time.Millisecond {
		t.Fatalf("a command took %v while clients waited: waiting connections hold up others", worst)
	}
	// ONCE commands on other keys go on too.
	tokC := rawOnce(t, other, "ONCE.CLAIM", "kc").Token
	rawFrame(t, other, "ONCE.COMPLETE", "kc", strconv.FormatInt(tokC, 10), "c")

	start := time.Now()
	if f := rawFrame(t, ctl, "ONCE.COMPLETE", "ka", strconv.FormatInt(tokA, 10), "A"); f.Str != "OK" {
		t.Fatalf("COMPLETE ka: %q", f.Raw)
	}
	if f := rawFrame(t, ctl, "ONCE.COMPLETE", "kb", strconv.FormatInt(tokB, 10), "B"); f.Str != "OK" {
		t.Fatalf("COMPLETE kb: %q", f.Raw)
	}
	var wg sync.WaitGroup
	errs := &errSink{}
	for i, w := range waiters {
		want := "A"
		if i >= 50 {
			want = "B"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := w.TryReadFrame()
			if err != nil {
				errs.add("waiter %d: %v", i, err)
				return
			}
			r, err := frameOnce(f)
			if err != nil || r.State != "done" || r.Detail != want {
				errs.add("waiter %d: %v %v, want [done %q]", i, r, err, want)
			}
			// The connection serves again after its wait.
			if f, err := w.TryReadFrameAfter(EncodeCommand("PING")); err != nil || f.Str != "PONG" {
				errs.add("waiter %d: PING after the wait: %v %v", i, f, err)
			}
		}()
	}
	wg.Wait()
	errs.report(t)
	t.Logf("100 waiters answered %v after the first COMPLETE was sent", time.Since(start))
	if n := rawInfoInt(t, ctl, "waiting_clients"); n != 0 {
		t.Fatalf("waiting_clients %d after the answers", n)
	}
	closeAll(waiters)
	other.Close()
	ctl.Close()
	closeServer(t, a)
	verifyNoLeaks(t, ignore)
}

// TestOnceBlockServerClose: closing the server wakes its waiters with an
// error (or a closed connection), promptly, and leaves nothing behind.
func TestOnceBlockServerClose(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	a, addr := blockServer(t)
	ctl := DialRaw(t, addr)
	rawOnce(t, ctl, "ONCE.CLAIM", "k", "LEASE", "30000")
	var waiters []*RawConn
	waiters = append(waiters, sendWaiters(t, addr, 10, "ONCE.CLAIM", "k", "WAIT", "0")...)
	waiters = append(waiters, sendWaiters(t, addr, 5, "ONCE.WAIT", "k")...)
	waiters = append(waiters, sendWaiters(t, addr, 5, "ONCE.WAIT", "k", "TIMEOUT", "60000")...)
	awaitWaiting(t, ctl, 20)
	ctl.Close()

	start := time.Now()
	closeServer(t, a)
	t.Logf("Close took %v with 20 waiters", time.Since(start))
	replies, closed := 0, 0
	for i, w := range waiters {
		w.Timeout = 5 * time.Second
		f, err := w.TryReadFrame()
		switch {
		case err == nil && f.Type == '-':
			// An error reply is a fine way to be woken.
			replies++
		case err != nil && !isTimeout(err):
			// So is a closed connection.
			closed++
		case err != nil:
			t.Errorf("waiter %d: still blocked 5s after the server closed: %v", i, err)
		default:
			t.Errorf("waiter %d: got %q at server close, want an error", i, f.Raw)
		}
	}
	t.Logf("at server close: %d waiters got an error reply, %d a closed connection", replies, closed)
	closeAll(waiters)
	verifyNoLeaks(t, ignore)
}

// TestOnceBlockCloseRace: the server closes while clients are just
// entering their waits; Close returns and every client is released.
func TestOnceBlockCloseRace(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	for round := range 10 {
		a, addr := blockServer(t)
		ctl := DialRaw(t, addr)
		rawOnce(t, ctl, "ONCE.CLAIM", "k", "LEASE", "30000")
		ctl.Close()
		waiters := sendWaiters(t, addr, 20, "ONCE.CLAIM", "k", "WAIT", "0")
		time.Sleep(time.Duration(round) * 200 * time.Microsecond)
		closeServer(t, a)
		for i, w := range waiters {
			w.Timeout = 5 * time.Second
			if f, err := w.TryReadFrame(); err == nil && f.Type != '-' {
				t.Errorf("round %d: waiter %d: %q at server close", round, i, f.Raw)
			} else if isTimeout(err) {
				t.Errorf("round %d: waiter %d still blocked 5s after the server closed", round, i)
			}
		}
		closeAll(waiters)
	}
	verifyNoLeaks(t, ignore)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestClientPauseCloseLeaksNothing: a server closed during a CLIENT PAUSE
// ends it: the held commands and the ONCE lapse it deferred leave nothing
// behind.
func TestClientPauseCloseLeaksNothing(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	a, addr := blockServer(t)
	ctl := DialRaw(t, addr)
	rawOnce(t, ctl, "ONCE.CLAIM", "k", "LEASE", "200")
	waiters := sendWaiters(t, addr, 2, "ONCE.CLAIM", "k", "WAIT", "0")
	awaitWaiting(t, ctl, 2)
	if f := rawFrame(t, ctl, "CLIENT", "PAUSE", "100000", "WRITE"); f.Str != "OK" {
		t.Fatalf("CLIENT PAUSE: %q", f.Raw)
	}
	held := sendWaiters(t, addr, 2, "SET", "x", "y")
	time.Sleep(400 * time.Millisecond) // past the lease: its lapse waits
	closeServer(t, a)
	closeAll(waiters)
	closeAll(held)
	ctl.Close()
	verifyNoLeaks(t, ignore)
}
