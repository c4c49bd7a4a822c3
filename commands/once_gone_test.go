package commands

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/once"
	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
)

// onceServer is a command server with the ONCE engine over a fresh store,
// attached to a resp server that is never started; its connections are
// made by hand.
func onceServer(tb testing.TB) *Server {
	tb.Helper()
	return onceServerOver(tb, openTestStore(tb))
}

// onceServerOver is onceServer over st.
func onceServerOver(tb testing.TB, st store.Store) *Server {
	tb.Helper()
	eng := once.New(st, once.Config{DefaultLease: time.Second, Logger: zap.NewNop()})
	if err := eng.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(eng.Close)
	srv := New(Config{Logger: zap.NewNop()}, st)
	srv.EnableOnce(eng)
	srv.Attach(resp.NewServer(resp.Config{}, srv))
	return srv
}

// send runs one command on c and returns its reply, leaving a blocking
// command's function to the caller.
func send(srv *Server, c *resp.Conn, args ...string) string {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	srv.Serve(c, b)
	srv.BeforeReply(c) // as the wire does before it sends
	out := string(c.W.Bytes())
	c.W.Reset()
	return out
}

// A ONCE.CLAIM … WAIT whose client is gone by the time its blocking part
// runs (its earlier replies could not be sent, or the command panicked)
// passes a claim it was handed on at once, rather than answering it to
// no one, which held the key for the whole lease: the blocking part
// checks gone before it takes a result.
func TestGoneWaiterPassesItsClaimOn(t *testing.T) {
	srv := onceServer(t)
	for i := range 20 {
		key := "k" + strconv.Itoa(i)
		runner := &resp.Conn{W: resp.NewWriter(2), Authed: true}
		waiter := &resp.Conn{W: resp.NewWriter(2), Authed: true}
		r := send(srv, runner, "ONCE.CLAIM", key, "LEASE", "60000")
		if !strings.HasPrefix(r, "*2\r\n$7\r\nclaimed\r\n:") {
			t.Fatalf("claim: %q", r)
		}
		tok := strings.TrimSuffix(strings.TrimPrefix(r, "*2\r\n$7\r\nclaimed\r\n:"), "\r\n")
		if r := send(srv, waiter, "ONCE.CLAIM", key, "LEASE", "60000", "WAIT", "0"); r != "" {
			t.Fatalf("a waiting claim answered at once: %q", r)
		}
		fn := waiter.TakeBlock()
		if fn == nil {
			t.Fatal("the waiting claim did not block")
		}
		// The runner lets its lease lapse: the claim goes to the waiter.
		if r := send(srv, runner, "ONCE.EXTEND", key, tok, "LEASE", "1"); r != "+OK\r\n" {
			t.Fatalf("extend: %q", r)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(send(srv, runner, "ONCE.STATUS", key), "$7\r\nwaiters\r\n:0\r\n") {
			if time.Now().After(deadline) {
				t.Fatal("the claim was never handed to the waiter")
			}
			time.Sleep(time.Millisecond)
		}
		gone := make(chan struct{})
		close(gone)
		fn(gone)
		if out := waiter.W.Bytes(); len(out) != 0 {
			t.Fatalf("round %d: the gone waiter was answered %q", i, out)
		}
		if r := send(srv, runner, "ONCE.CLAIM", key, "LEASE", "1000"); !strings.HasPrefix(r, "*2\r\n$7\r\nclaimed\r\n") {
			t.Fatalf("round %d: the key is not free after its waiter left with the claim: %q", i, r)
		}
	}
}
