package commands

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
	"github.com/oncekv/oncekv/store/badgerdb"
)

// blockedCall is a blocking ONCE command whose function runs on a
// goroutine of its own, as the wire runs it, with a gone the test closes.
type blockedCall struct {
	c    *resp.Conn
	gone chan struct{}
	done chan struct{}
}

// startBlocked sends args on a new connection and runs the blocking part
// on a goroutine; it fails tb if the command did not block.
func startBlocked(tb testing.TB, srv *Server, args ...string) *blockedCall {
	tb.Helper()
	b := &blockedCall{c: &resp.Conn{W: resp.NewWriter(2), Authed: true}, gone: make(chan struct{}), done: make(chan struct{})}
	if r := send(srv, b.c, args...); r != "" {
		tb.Fatalf("%v answered at once: %q", args, r)
	}
	fn := b.c.TakeBlock()
	if fn == nil {
		tb.Fatalf("%v did not block", args)
	}
	go func() {
		defer close(b.done)
		fn(b.gone)
	}()
	tb.Cleanup(func() {
		select {
		case <-b.gone:
		default:
			close(b.gone)
		}
		<-b.done
	})
	return b
}

// reply waits up to d for the blocked call to end and returns what it
// wrote.
func (b *blockedCall) reply(tb testing.TB, d time.Duration, what string) string {
	tb.Helper()
	select {
	case <-b.done:
	case <-time.After(d):
		tb.Fatalf("%s: not answered within %v", what, d)
	}
	return string(b.c.W.Bytes())
}

// TestLapseHandoverPassesALeftWaiterBy: a lease lapses (KV-13) at the
// instant a CLAIM … WAIT caller's connection is known closed, before the
// caller has withdrawn: the claim goes straight to the next live CLAIM
// waiter, oldest first, or the key becomes free and ONCE.WAIT callers get
// ["free",""], at once. It is never handed to the caller that left, not
// even for the moment its withdrawal takes (a handover, a token and a
// write that no one runs), and no two callers hold it (KV-9). The
// instant is made exact: the test closes the callers' connections and
// lets the lease lapse (by the store's clock) inside one transaction,
// which their withdrawals wait for.
func TestLapseHandoverPassesALeftWaiterBy(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// waiters, oldest first: "left" and "live" CLAIM … WAIT
		// callers, "wait" a ONCE.WAIT caller.
		waiters []string
		// heir is the index of the caller that gets the claim, -1 for
		// none (the key ends free).
		heir int
	}{
		{"a left waiter, then a live one", []string{"left", "live"}, 1},
		{"left waiters, a ONCE.WAIT caller, then live ones", []string{"left", "wait", "left", "live", "live"}, 3},
		{"left waiters and a ONCE.WAIT caller only", []string{"left", "wait", "left"}, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var skew atomic.Int64
			opts := badgerdb.DefaultOptions(t.TempDir())
			opts.Clock = func() int64 { return time.Now().UnixMilli() + skew.Load() }
			st, err := badgerdb.Open(opts)
			if err != nil {
				t.Fatalf("open store: %v", err)
			}
			st.Start()
			t.Cleanup(func() { st.Close() })
			srv := onceServerOver(t, st)
			watched := make(chan struct{}, len(tc.waiters))
			srv.onceWatched = func() { watched <- struct{}{} }
			runner := &resp.Conn{W: resp.NewWriter(2), Authed: true}
			r := send(srv, runner, "ONCE.CLAIM", "k", "LEASE", "60000")
			tok, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(r, "*2\r\n$7\r\nclaimed\r\n:"), "\r\n"), 10, 64)
			if err != nil {
				t.Fatalf("runner's claim: %q", r)
			}
			var calls []*blockedCall
			for _, kind := range tc.waiters {
				args := []string{"ONCE.CLAIM", "k", "WAIT", "0", "LEASE", "60000"}
				if kind == "wait" {
					args = []string{"ONCE.WAIT", "k"}
				}
				calls = append(calls, startBlocked(t, srv, args...))
			}
			for range tc.waiters {
				select {
				case <-watched:
				case <-time.After(5 * time.Second):
					t.Fatal("a waiter never started to wait")
				}
			}
			lapses, handoffs := srv.once.Stats.LeaseLapses.Load(), srv.once.Stats.Handoffs.Load()
			// The runner's lease has run out by the store's clock (its
			// timer, on the wall clock, is a minute away), and the lapse
			// is noticed in the transaction that closes the connections,
			// as its timer would notice it.
			skew.Store(61_000)
			_, err = srv.updateAndDeliver(func(tx store.Tx) {
				for i, kind := range tc.waiters {
					if kind == "left" {
						close(calls[i].gone)
					}
				}
				srv.once.Touched(tx, 0, []byte("k"))
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, kind := range tc.waiters {
				switch {
				case kind == "left":
					if out := calls[i].reply(t, 5*time.Second, "a left waiter"); out != "" {
						t.Errorf("waiter %d, which left, was answered %q", i, out)
					}
				case i == tc.heir:
					out := calls[i].reply(t, 2*time.Second, "the heir")
					got, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(out, "*2\r\n$7\r\nclaimed\r\n:"), "\r\n"), 10, 64)
					if err != nil || got <= tok {
						t.Fatalf("heir (waiter %d): %q, want [claimed >%d]", i, out, tok)
					}
					st := send(srv, runner, "ONCE.STATUS", "k")
					if !strings.Contains(st, "$5\r\ntoken\r\n:"+strconv.FormatUint(got, 10)+"\r\n") {
						t.Errorf("STATUS after the handover: %q, want the heir's token %d", st, got)
					}
				case kind == "wait" && tc.heir < 0:
					if out := calls[i].reply(t, 2*time.Second, "ONCE.WAIT"); out != "*2\r\n$4\r\nfree\r\n$0\r\n\r\n" {
						t.Errorf("ONCE.WAIT caller once only left waiters were left: %q, want [free, \"\"]", out)
					}
				}
			}
			wantHandoffs := int64(1)
			if tc.heir < 0 {
				wantHandoffs = 0
				if r := send(srv, runner, "EXISTS", "k"); r != ":0\r\n" {
					t.Errorf("EXISTS after a lapse with only left waiters: %q, want 0", r)
				}
			}
			if n := srv.once.Stats.Handoffs.Load() - handoffs; n != wantHandoffs {
				t.Errorf("handoffs: %d, want %d (a claim was handed to a waiter that had left)", n, wantHandoffs)
			}
			if n := srv.once.Stats.LeaseLapses.Load() - lapses; n != 1 {
				t.Errorf("lease lapses: %d, want 1", n)
			}
		})
	}
}
