package onceup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncekv/oncekv/resp"
)

// blockedCall is a blocking ONCE command run on a bare connection, its
// blocked part on a goroutine, with a gone the test closes.
type blockedCall struct {
	c    *resp.Conn
	gone chan struct{}
	done chan struct{}
}

// startBlocked runs args through e; it fails tb if the command did not
// block.
func startBlocked(tb testing.TB, e *Engine, args ...any) *blockedCall {
	tb.Helper()
	b := &blockedCall{c: &resp.Conn{W: resp.NewWriter(2)}, gone: make(chan struct{}), done: make(chan struct{})}
	bs := make([][]byte, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			bs[i] = []byte(v)
		case int:
			bs[i] = []byte(strconv.Itoa(v))
		}
	}
	e.Command(b.c, b.c.W, 0, bs)
	fn := b.c.TakeBlock()
	if fn == nil {
		tb.Fatalf("%v did not block: %q", args, b.c.W.Bytes())
	}
	go func() {
		defer close(b.done)
		fn(b.gone)
	}()
	tb.Cleanup(func() {
		b.leave()
		<-b.done
	})
	return b
}

func (b *blockedCall) leave() {
	select {
	case <-b.gone:
	default:
		close(b.gone)
	}
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

// claimedToken parses a RESP2 ["claimed", token] reply.
func claimedToken(out string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(out, "*2\r\n$7\r\nclaimed\r\n:"), "\r\n"), 10, 64)
	return n, err == nil
}

// TestTakeoverPassesALeftWaiterBy: a lease lapses (KV-13) while a
// CLAIM … WAIT caller's connection is closed but the caller has not
// withdrawn yet (a test hook holds its withdrawal): the takeover is run
// for the next live CLAIM waiter, oldest first, or the key is found free
// and ONCE.WAIT callers get ["free",""], at once. The claim is never
// taken for the caller that left, not even for the moment its withdrawal
// takes (a takeover, a token and a write that no one runs, then the wait
// for its release), and no two callers hold it (KV-9).
func TestTakeoverPassesALeftWaiterBy(t *testing.T) {
	up := standaloneUpstream(t)
	p := startProxy(t, up, Config{})
	e := p.e
	ctx := context.Background()
	c := dial(t, p)
	rc := up.client(t)
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
			k := key(t, "k")
			tok := do(ctx, c, "ONCE.CLAIM", k, "LEASE", 60000).n
			if tok == 0 {
				t.Fatal("the runner's CLAIM failed")
			}
			// A left caller's withdrawal waits until the outcome is
			// checked (or the test ends).
			hold, leaving := make(chan struct{}), make(chan struct{}, len(tc.waiters))
			var held bool
			release := func() {
				if !held {
					held = true
					close(hold)
				}
			}
			e.mu.Lock()
			e.leaving = func() {
				leaving <- struct{}{}
				<-hold
			}
			e.mu.Unlock()
			t.Cleanup(func() {
				e.mu.Lock()
				e.leaving = nil
				e.mu.Unlock()
			})
			var calls []*blockedCall
			left := 0
			for _, kind := range tc.waiters {
				args := []any{"ONCE.CLAIM", k, "WAIT", 0, "LEASE", 60000}
				if kind == "wait" {
					args = []any{"ONCE.WAIT", k}
				} else if kind == "left" {
					left++
				}
				calls = append(calls, startBlocked(t, e, args...))
			}
			// Registered after the calls' own cleanups, so run before
			// them: they wait for the calls to end.
			t.Cleanup(release)
			if n := e.Waiting(); n != int64(len(tc.waiters)) {
				t.Fatalf("%d waiting, want %d", n, len(tc.waiters))
			}
			// Each left caller's blocked part runs (and has told the
			// engine its connection) once it begins to withdraw.
			for i, kind := range tc.waiters {
				if kind == "left" {
					calls[i].leave()
				}
			}
			for range left {
				select {
				case <-leaving:
				case <-time.After(5 * time.Second):
					t.Fatal("a left caller never began to withdraw")
				}
			}
			handoffs := e.Stats.Handoffs.Load()
			// The runner's lease lapses now.
			if err := rc.PExpire(ctx, k, time.Millisecond).Err(); err != nil {
				t.Fatal(err)
			}
			if err := e.Touched(ctx, 0, []byte(k)); err != nil {
				t.Fatal(err)
			}
			var heirTok int64
			for i, kind := range tc.waiters {
				switch {
				case i == tc.heir:
					out := calls[i].reply(t, 3*time.Second, "the heir")
					got, ok := claimedToken(out)
					if !ok || got <= tok {
						t.Fatalf("heir (waiter %d): %q, want [claimed >%d]", i, out, tok)
					}
					heirTok = got
				case kind == "wait" && tc.heir < 0:
					if out := calls[i].reply(t, 3*time.Second, "ONCE.WAIT"); out != "*2\r\n$4\r\nfree\r\n$0\r\n\r\n" {
						t.Errorf("ONCE.WAIT caller once only left waiters were left: %q, want [free, \"\"]", out)
					}
				}
			}
			wantHandoffs := int64(1)
			if tc.heir < 0 {
				wantHandoffs = 0
				if n := rc.Exists(ctx, k).Val(); n != 0 {
					t.Errorf("EXISTS after a lapse with only left waiters: %d, want 0", n)
				}
			} else {
				// The record holds the heir's claim (field t, its token).
				if got, err := rc.HGet(ctx, k, "t").Result(); err != nil || got != strconv.FormatInt(heirTok, 10) {
					t.Errorf("the record's token after the handover: %q %v, want the heir's %d", got, err, heirTok)
				}
			}
			if n := e.Stats.Handoffs.Load() - handoffs; n != wantHandoffs {
				t.Errorf("handoffs: %d, want %d (a claim was taken for a waiter that had left)", n, wantHandoffs)
			}
			release()
			for i, kind := range tc.waiters {
				if kind == "left" {
					if out := calls[i].reply(t, 5*time.Second, "a left caller"); out != "" {
						t.Errorf("waiter %d, which left, was answered %q", i, out)
					}
				}
			}
			if tc.heir >= 0 {
				// The heir's run ends; the callers still there get its
				// answer.
				if err := c.Do(ctx, "ONCE.COMPLETE", k, heirTok, "ans").Err(); err != nil {
					t.Fatalf("the heir's COMPLETE: %v", err)
				}
				for i, kind := range tc.waiters {
					if kind != "left" && i != tc.heir {
						if out := calls[i].reply(t, 3*time.Second, "a caller after the heir's run"); out != "*2\r\n$4\r\ndone\r\n$3\r\nans\r\n" {
							t.Errorf("waiter %d after the heir's run: %q, want [done, ans]", i, out)
						}
					}
				}
			}
			eventually(t, 5*time.Second, "no waiter left", func() bool { return e.Waiting() == 0 })
		})
	}
}

// TestClaimReplyNotSentIsReleased: a lapse's claim is handed to a
// CLAIM … WAIT caller whose client leaves as the reply is written (a test
// hook closes the client's connection then, and waits until the server
// has seen it close): the reply is not sent, and the claim is released at
// once, so the next waiter gets it, rather than held by no one for the
// whole LEASE (KV-13). A caller that reads its reply keeps the claim
// (KV-9: the next waiter does not get it).
func TestClaimReplyNotSentIsReleased(t *testing.T) {
	up := standaloneUpstream(t)
	p := startProxy(t, up, Config{})
	e := p.e
	ctx := context.Background()
	c := dial(t, p)
	rc := up.client(t)
	cases := []struct {
		name  string
		leave bool
	}{
		{"the client leaves as the claim is handed over", true},
		{"the client stays and reads the claim", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := key(t, "k")
			tok := do(ctx, c, "ONCE.CLAIM", k, "LEASE", 60000).n
			if tok == 0 {
				t.Fatal("the runner's CLAIM failed")
			}
			nc, err := net.Dial("tcp", p.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			var once sync.Once
			hooked := make(chan error, 1)
			e.mu.Lock()
			e.replied = func(gone <-chan struct{}) {
				once.Do(func() {
					if !tc.leave {
						hooked <- nil
						return
					}
					nc.Close()
					select {
					case <-gone:
						hooked <- nil
					case <-time.After(5 * time.Second):
						hooked <- errors.New("the server never saw the client's connection close")
					}
				})
			}
			e.mu.Unlock()
			t.Cleanup(func() {
				e.mu.Lock()
				e.replied = nil
				e.mu.Unlock()
			})
			fmt.Fprintf(nc, "*6\r\n$10\r\nONCE.CLAIM\r\n$%d\r\n%s\r\n$4\r\nWAIT\r\n$1\r\n0\r\n$5\r\nLEASE\r\n$5\r\n60000\r\n", len(k), k)
			eventually(t, 5*time.Second, "the raw client waiting", func() bool { return e.Waiting() == 1 })
			next := make(chan reply, 1)
			go func() { next <- do(ctx, dial(t, p), "ONCE.CLAIM", k, "WAIT", 20000, "LEASE", 60000) }()
			eventually(t, 5*time.Second, "the next waiter", func() bool { return e.Waiting() == 2 })
			// The runner's lease lapses now.
			if err := rc.PExpire(ctx, k, time.Millisecond).Err(); err != nil {
				t.Fatal(err)
			}
			if err := e.Touched(ctx, 0, []byte(k)); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-hooked:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the claim was not handed to the first waiter")
			}
			if tc.leave {
				select {
				case r := <-next:
					if r.err != nil || r.state != "claimed" || r.n <= tok {
						t.Fatalf("the next waiter got %v, want [claimed >%d]", r, tok)
					}
					if got := rc.HGet(ctx, k, "t").Val(); got != strconv.FormatInt(r.n, 10) {
						t.Errorf("the record's token %q, want the next waiter's %d", got, r.n)
					}
				case <-time.After(3 * time.Second):
					t.Fatal("the claim whose reply was not sent is held by no one: the next waiter did not get it")
				}
				return
			}
			line, err := bufio.NewReader(nc).ReadString('\n')
			if err != nil || line != "*2\r\n" {
				t.Fatalf("the first waiter read %q %v, want its claim", line, err)
			}
			first := rc.HGet(ctx, k, "t").Val()
			if n, err := strconv.ParseInt(first, 10, 64); err != nil || n <= tok {
				t.Fatalf("the record's token %q, want the first waiter's (>%d)", first, tok)
			}
			select {
			case r := <-next:
				t.Fatalf("the next waiter got %v while the first holds the claim", r)
			case <-time.After(300 * time.Millisecond):
			}
			if err := c.Do(ctx, "ONCE.COMPLETE", k, first, "ans").Err(); err != nil {
				t.Fatalf("the first waiter's claim: COMPLETE: %v", err)
			}
			if r := <-next; r.state != "done" || r.detail != "ans" {
				t.Fatalf("the next waiter got %v, want [done ans]", r)
			}
		})
	}
}
