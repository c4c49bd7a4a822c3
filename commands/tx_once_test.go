package commands

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncekv/oncekv/resp"
)

// newConn is a connection made by hand, authenticated, speaking RESP2.
func newConn() *resp.Conn { return &resp.Conn{W: resp.NewWriter(2), Authed: true} }

// claimToken runs ONCE.CLAIM key args… on c and returns the token it
// claimed.
func claimToken(tb testing.TB, srv *Server, c *resp.Conn, key string, args ...string) string {
	tb.Helper()
	const claimed = "*2\r\n$7\r\nclaimed\r\n:"
	r := send(srv, c, append([]string{"ONCE.CLAIM", key}, args...)...)
	if !strings.HasPrefix(r, claimed) {
		tb.Fatalf("ONCE.CLAIM %s %q: %q, want claimed", key, args, r)
	}
	return strings.TrimSuffix(strings.TrimPrefix(r, claimed), "\r\n")
}

// blockedClaim sends ONCE.CLAIM key … WAIT 0 on a connection of its own and
// returns the blocking part, which the caller runs (or never runs).
func blockedClaim(tb testing.TB, srv *Server, key string) resp.BlockFunc {
	tb.Helper()
	w := newConn()
	if r := send(srv, w, "ONCE.CLAIM", key, "LEASE", "60000", "WAIT", "0"); r != "" {
		tb.Fatalf("a waiting claim answered at once: %q", r)
	}
	fn := w.TakeBlock()
	if fn == nil {
		tb.Fatal("the waiting claim did not block")
	}
	return fn
}

// awaitNoWaiters waits until key's record has no waiter left (the claim
// was handed over).
func awaitNoWaiters(tb testing.TB, srv *Server, key string) {
	tb.Helper()
	c := newConn()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st := send(srv, c, "ONCE.STATUS", key)
		if strings.Contains(st, "$7\r\nwaiters\r\n:0\r\n") {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the claim of %s was never handed over: %q", key, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WATCH on a ONCE key fails the EXEC after the key changed, also when the
// change is the engine's own doing rather than a command's: a claim handed
// over at a lapse (KV-13), by the lapse timer or by a FLUSHDB (contract:
// FLUSHDB of a running record acts as a lapse), or passed on by a waiter
// that left with it. Redis 7 fails EXEC once a watched key was created,
// changed or deleted; so must a record whose token changed, or the
// transaction acts on a claim that no longer stands (KV-9).
func TestWatchSeesTheEnginesOwnWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		// run makes the change, calling watch at the moment the watching
		// connection must WATCH key.
		run func(tb testing.TB, srv *Server, skew *atomic.Int64, key string, watch func())
	}{
		{"lapse timer hands the claim to a waiter", func(tb testing.TB, srv *Server, skew *atomic.Int64, key string, watch func()) {
			claimToken(tb, srv, newConn(), key, "LEASE", "300")
			blockedClaim(tb, srv, key)
			// The store sees the lease passed; the lapse timer has not
			// fired yet: WATCH finds the key free.
			skew.Store(1000)
			watch()
			awaitNoWaiters(tb, srv, key)
		}},
		{"FLUSHDB hands a passed lease to a waiter", func(tb testing.TB, srv *Server, skew *atomic.Int64, key string, watch func()) {
			claimToken(tb, srv, newConn(), key, "LEASE", "60000")
			blockedClaim(tb, srv, key)
			skew.Store(120_000)
			watch()
			if r := send(srv, newConn(), "FLUSHDB"); r != "+OK\r\n" {
				tb.Fatalf("FLUSHDB: %q", r)
			}
			awaitNoWaiters(tb, srv, key)
		}},
		{"a waiter that left passes its claim on", func(tb testing.TB, srv *Server, skew *atomic.Int64, key string, watch func()) {
			runner := newConn()
			tok := claimToken(tb, srv, runner, key, "LEASE", "60000")
			fn := blockedClaim(tb, srv, key)
			if r := send(srv, runner, "ONCE.EXTEND", key, tok, "LEASE", "1"); r != "+OK\r\n" {
				tb.Fatalf("extend: %q", r)
			}
			awaitNoWaiters(tb, srv, key)
			watch() // the waiter's claim, with a lease of 60 s
			gone := make(chan struct{})
			close(gone)
			fn(gone) // the waiter left: its claim is given up, the key freed
			if r := send(srv, runner, "EXISTS", key); r != ":0\r\n" {
				tb.Fatalf("EXISTS after the waiter left: %q, want 0", r)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var skew atomic.Int64
			srv, _ := gatedOnceServer(t, &skew)
			watcher := newConn()
			watch := func() {
				if r := send(srv, watcher, "WATCH", "k"); r != "+OK\r\n" {
					t.Fatalf("WATCH: %q", r)
				}
			}
			tc.run(t, srv, &skew, "k", watch)
			if r := send(srv, watcher, "MULTI"); r != "+OK\r\n" {
				t.Fatalf("MULTI: %q", r)
			}
			if r := send(srv, watcher, "SET", "x", "1"); r != "+QUEUED\r\n" {
				t.Fatalf("SET: %q", r)
			}
			if r := send(srv, watcher, "EXEC"); r != "*-1\r\n" {
				t.Errorf("EXEC after the watched key changed: %q, want *-1 (aborted)", r)
			}
			if r := send(srv, watcher, "EXISTS", "x"); r != ":0\r\n" {
				t.Errorf("EXISTS x: %q: the aborted transaction wrote", r)
			}
		})
	}
}
