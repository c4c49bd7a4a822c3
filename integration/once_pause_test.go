package integration

// CLIENT PAUSE with the ONCE engine: what only oncekv can do (Redis has
// no ONCE commands to compare with).

import (
	"strconv"
	"testing"
	"time"
)

// clientID returns c's CLIENT ID.
func clientID(t *testing.T, c *RawConn) string {
	t.Helper()
	f := rawFrame(t, c, "CLIENT", "ID")
	if _, ok := f.Int(); !ok {
		t.Fatalf("CLIENT ID: %q", f.Raw)
	}
	return f.Str
}

// blockedWaiter opens a connection, notes its ID and sends args (a
// blocking command), not reading the reply.
func blockedWaiter(t *testing.T, addr string, args ...string) (*RawConn, string) {
	t.Helper()
	c := DialRaw(t, addr)
	id := clientID(t, c)
	c.Send(EncodeCommand(args...))
	return c, id
}

// noReply checks that c receives nothing for d.
func noReply(t *testing.T, c *RawConn, d time.Duration, what string) {
	t.Helper()
	old := c.Timeout
	c.Timeout = d
	f, err := c.TryReadFrame()
	c.Timeout = old
	if err == nil {
		t.Fatalf("%s: got %q, want no reply yet", what, f.Raw)
	}
}

// wantRaw sends args on c and checks the raw reply.
func wantRaw(t *testing.T, c *RawConn, want string, args ...string) {
	t.Helper()
	if f := rawFrame(t, c, args...); string(f.Raw) != want {
		t.Fatalf("%v: %q, want %q", args, f.Raw, want)
	}
}

// TestClientPauseOnce: a pause holds the ONCE commands that write, lets
// ONCE.STATUS answer, and defers a lapse's handover until it ends
// (KV-13: the claim still passes to the waiter, once the pause is over);
// a client held by the pause is not one CLIENT UNBLOCK wakes.
func TestClientPauseOnce(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	ctl := DialRaw(t, addr)
	admin := DialRaw(t, addr)
	tok := rawOnce(t, ctl, "ONCE.CLAIM", "p", "LEASE", "300").Token
	w, _ := blockedWaiter(t, addr, "ONCE.CLAIM", "p", "WAIT", "0", "LEASE", "30000")
	awaitWaiting(t, ctl, 1)
	wantRaw(t, admin, "+OK\r\n", "CLIENT", "PAUSE", "100000", "WRITE")
	if f := rawFrame(t, ctl, "ONCE.STATUS", "p"); f.Type != '*' || len(f.Elems) < 2 || f.Elems[1].Str != "running" {
		t.Fatalf("ONCE.STATUS while paused: %q, want the running record", f.Raw)
	}
	h, hid := blockedWaiter(t, addr, "ONCE.CLAIM", "q")
	noReply(t, h, 300*time.Millisecond, "ONCE.CLAIM while paused")
	// Held by the pause is not blocked in a blocking command: UNBLOCK
	// answers 0 and leaves it held (Redis 7.0 crashes on it).
	wantRaw(t, admin, ":0\r\n", "CLIENT", "UNBLOCK", hid)
	wantRaw(t, admin, ":0\r\n", "CLIENT", "UNBLOCK", hid, "ERROR")
	// Past the lease: the handover waits for the end of the pause.
	noReply(t, w, 400*time.Millisecond, "waiter at a lapse while paused")
	// The lapsed record reads as gone, as any key past its deadline
	// (KV-4), but ONCE.STATUS tells what is true: it runs still, on the
	// old token with no lease left, while its waiter waits for the
	// handover.
	wantRaw(t, ctl, ":0\r\n", "EXISTS", "p")
	wantRaw(t, ctl, "*12\r\n$5\r\nstate\r\n$7\r\nrunning\r\n$5\r\ntoken\r\n:"+strconv.FormatInt(tok, 10)+
		"\r\n$8\r\nlease-ms\r\n:0\r\n$7\r\nkeep-ms\r\n:-1\r\n$7\r\nwaiters\r\n:1\r\n$11\r\nfingerprint\r\n$-1\r\n",
		"ONCE.STATUS", "p")
	if n := rawInfoInt(t, ctl, "lease_lapses"); n != 0 {
		t.Fatalf("lease_lapses while paused = %d, want 0", n)
	}
	wantRaw(t, admin, "+OK\r\n", "CLIENT", "UNPAUSE")
	if r, err := frameOnce(h.ReadFrame()); err != nil || r.State != "claimed" {
		t.Fatalf("held CLAIM after the pause: %v %v", r, err)
	}
	r, err := frameOnce(w.ReadFrame())
	if err != nil || r.State != "claimed" || r.Token <= tok {
		t.Fatalf("waiter after the pause: %v %v, want [claimed >%d]", r, err, tok)
	}
	awaitWaiting(t, ctl, 0)
}

// TestClientPauseOnceWaitTimeout: a CLAIM … WAIT whose wait runs out
// during a pause answers as if it had not waited, which may claim: that
// is a write, so the answer waits for the pause's end, as the command
// sent anew would be held.
func TestClientPauseOnceWaitTimeout(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	ctl := DialRaw(t, addr)
	admin := DialRaw(t, addr)
	tok := rawOnce(t, ctl, "ONCE.CLAIM", "t", "LEASE", "200").Token
	w, _ := blockedWaiter(t, addr, "ONCE.CLAIM", "t", "WAIT", "500", "LEASE", "30000")
	awaitWaiting(t, ctl, 1)
	wantRaw(t, admin, "+OK\r\n", "CLIENT", "PAUSE", "100000", "WRITE")
	// Past the lease and the wait: nothing is written, nothing answered.
	noReply(t, w, 800*time.Millisecond, "CLAIM … WAIT run out while paused")
	awaitWaiting(t, ctl, 0)
	wantRaw(t, ctl, "*-1\r\n", "ONCE.STATUS", "t")
	wantRaw(t, admin, "+OK\r\n", "CLIENT", "UNPAUSE")
	r, err := frameOnce(w.ReadFrame())
	if err != nil || r.State != "claimed" || r.Token <= tok {
		t.Fatalf("timed-out waiter after the pause: %v %v, want [claimed >%d]", r, err, tok)
	}
}
