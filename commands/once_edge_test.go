package commands

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
	"github.com/oncekv/oncekv/store/badgerdb"
)

// gatedStore is a store whose writes become durable only while its gate
// is open (as under appendfsync always with a slow fsync), over a Badger
// store whose clock runs skew ms ahead of the wall clock. It offers
// neither Hold nor Prefetch, so every transaction goes through Update or
// View.
type gatedStore struct {
	inner  *badgerdb.DB
	closed atomic.Bool // gate closed: tickets of writes wait
	gate   chan struct{}
}

type gatedTicket struct {
	inner store.Ticket
	gate  chan struct{}
}

func (t gatedTicket) Wait(ctx context.Context) error {
	select {
	case <-t.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return t.inner.Wait(ctx)
}

func (g *gatedStore) wrap(t store.Ticket, err error) (store.Ticket, error) {
	if t != nil && g.closed.Load() {
		t = gatedTicket{inner: t, gate: g.gate}
	}
	return t, err
}

func (g *gatedStore) View(fn func(store.Tx) error) (store.Ticket, error) {
	return g.wrap(g.inner.View(fn))
}

func (g *gatedStore) Update(fn func(store.Tx) error) (store.Ticket, error) {
	return g.wrap(g.inner.Update(fn))
}

func (g *gatedStore) Databases() int { return g.inner.Databases() }
func (g *gatedStore) Close() error   { return g.inner.Close() }

// closeGate makes the tickets of the writes from now on wait until
// openGate.
func (g *gatedStore) closeGate() {
	g.gate = make(chan struct{})
	g.closed.Store(true)
}

func (g *gatedStore) openGate() {
	g.closed.Store(false)
	close(g.gate)
}

// gatedOnceServer is onceServer over a gatedStore with appendfsync always,
// whose clock the test moves with skew.
func gatedOnceServer(tb testing.TB, skew *atomic.Int64) (*Server, *gatedStore) {
	tb.Helper()
	opts := badgerdb.DefaultOptions(tb.TempDir())
	opts.Fsync = badgerdb.FsyncAlways
	opts.Clock = func() int64 { return time.Now().UnixMilli() + skew.Load() }
	st, err := badgerdb.Open(opts)
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	st.Start()
	g := &gatedStore{inner: st, gate: make(chan struct{})}
	close(g.gate)
	tb.Cleanup(func() { st.Close() })
	return onceServerOver(tb, g), g
}

// A CLAIM … WAIT whose WAIT runs out answers as if it had not waited: a
// second CLAIM, in a transaction of its own. When that CLAIM claims the
// key (the lease it waited on had lapsed, and the lapse timer had not run
// yet: here the store's clock is ahead of the timers'), the reply is an
// acknowledged claim, so it must wait until the claim is durable, as any
// acknowledged write (KV-6, KV-16; "a waiter is woken only with what is
// as durable as any acknowledged write"). Under appendfsync always a
// kill -9 right after the reply would otherwise lose a claim its client
// runs, and let a second runner in (KV-9).
func TestOnceWaitTimeoutReplyAwaitsDurability(t *testing.T) {
	var skew atomic.Int64
	srv, g := gatedOnceServer(t, &skew)
	runner := &resp.Conn{W: resp.NewWriter(2), Authed: true}
	waiter := &resp.Conn{W: resp.NewWriter(2), Authed: true}
	if r := send(srv, runner, "ONCE.CLAIM", "k", "LEASE", "60000"); !strings.HasPrefix(r, "*2\r\n$7\r\nclaimed\r\n:") {
		t.Fatalf("claim: %q", r)
	}
	if r := send(srv, waiter, "ONCE.CLAIM", "k", "WAIT", "50", "LEASE", "60000"); r != "" {
		t.Fatalf("a waiting claim answered at once: %q", r)
	}
	fn := waiter.TakeBlock()
	if fn == nil {
		t.Fatal("the waiting claim did not block")
	}
	if err := waiter.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The runner's lease lapses (by the store's clock) while the gate
	// holds every write back from durability.
	skew.Store(120_000)
	g.closeGate()
	defer g.openGate()
	fn(make(chan struct{}))
	out := string(waiter.W.Bytes())
	if !strings.HasPrefix(out, "*2\r\n$7\r\nclaimed\r\n:") {
		t.Fatalf("after its WAIT ran out on a lapsed lease: %q, want claimed", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := waiter.Settle(ctx); err == nil {
		t.Fatalf("the reply %q may be sent before the claim it acknowledges is durable", out)
	}
}

// Large LEASE, KEEP, WAIT and TIMEOUT values are positive milliseconds
// like any other: they must not wrap around. A deadline of now + ms that
// overflows int64 came out negative, in the past: a claim with LEASE
// 9223372036854775807 read as free at once and a second CLAIM was
// claimed too (KV-9); an answer kept with such a KEEP was gone at once
// (KV-8, KV-14); a WAIT whose milliseconds overflow a time.Duration ran
// out at once instead of waiting (WAIT 0 and large WAITs wait).
func TestOnceHugeMillisecondsDoNotWrap(t *testing.T) {
	const huge = "9223372036854775807"
	claimed := "*2\r\n$7\r\nclaimed\r\n:"
	cases := []struct {
		name string
		// steps run in order on one connection; want is the prefix of
		// each reply ("" skips the check).
		steps [][]string
		want  []string
	}{
		{"LEASE", [][]string{
			{"ONCE.CLAIM", "k", "LEASE", huge},
			{"ONCE.CLAIM", "k"},
		}, []string{claimed, "*2\r\n$7\r\nrunning\r\n"}},
		{"EXTEND", [][]string{
			{"ONCE.CLAIM", "k"},
			{"ONCE.EXTEND", "k", "$tok", "LEASE", huge},
			{"ONCE.CLAIM", "k"},
		}, []string{claimed, "+OK", "*2\r\n$7\r\nrunning\r\n"}},
		{"KEEP", [][]string{
			{"ONCE.CLAIM", "k"},
			{"ONCE.COMPLETE", "k", "$tok", "answer", "KEEP", huge},
			{"ONCE.CLAIM", "k"},
		}, []string{claimed, "+OK", "*2\r\n$4\r\ndone\r\n$6\r\nanswer\r\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := onceServer(t)
			conn := &resp.Conn{W: resp.NewWriter(2), Authed: true}
			var tok string
			for i, step := range c.steps {
				args := append([]string(nil), step...)
				for j := range args {
					if args[j] == "$tok" {
						args[j] = tok
					}
				}
				r := send(srv, conn, args...)
				if !strings.HasPrefix(r, c.want[i]) {
					t.Fatalf("%q: %q, want %q…", args, r, c.want[i])
				}
				if i == 0 {
					tok = strings.TrimSuffix(strings.TrimPrefix(r, claimed), "\r\n")
				}
			}
		})
	}
	waits := []struct {
		name string
		args []string
	}{
		{"CLAIM WAIT", []string{"ONCE.CLAIM", "w", "WAIT", huge}},
		{"ONCE.WAIT TIMEOUT", []string{"ONCE.WAIT", "w", "TIMEOUT", huge}},
	}
	for _, c := range waits {
		t.Run(c.name, func(t *testing.T) {
			srv := onceServer(t)
			runner := &resp.Conn{W: resp.NewWriter(2), Authed: true}
			waiter := &resp.Conn{W: resp.NewWriter(2), Authed: true}
			if r := send(srv, runner, "ONCE.CLAIM", "w", "LEASE", "60000"); !strings.HasPrefix(r, claimed) {
				t.Fatalf("claim: %q", r)
			}
			if r := send(srv, waiter, c.args...); r != "" {
				t.Fatalf("%q answered at once: %q", c.args, r)
			}
			fn := waiter.TakeBlock()
			if fn == nil {
				t.Fatalf("%q did not block", c.args)
			}
			gone := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				fn(gone)
			}()
			select {
			case <-done:
				t.Fatalf("%q stopped waiting at once: %q", c.args, waiter.W.Bytes())
			case <-time.After(200 * time.Millisecond):
			}
			close(gone) // the client leaves: the wait is dropped
			<-done
		})
	}
}
