package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// refuser answers, on the wire, the ONCE.CLAIMs sent on the connections
// it dials with an error reply instead of the server: the claims it
// matches (all, or only those with WAIT), up to limit of them (0: all).
// The replies are numbered ("TRYAGAIN … (reply 3)") so that a test can
// tell the last one. Everything else goes to the real server.
type refuser struct {
	reply    string // the reply's text, without "-" and CRLF
	waitOnly bool   // refuse only ONCE.CLAIM … WAIT
	limit    int64

	sent   atomic.Int64 // refusals sent
	claims atomic.Int64 // claims matched, refused or not
}

func (r *refuser) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &refusingConn{Conn: c, r: r}, nil
}

// last is the text of the last refusal sent.
func (r *refuser) last() string { return fmt.Sprintf("%s (reply %d)", r.reply, r.sent.Load()) }

type refusingConn struct {
	net.Conn
	r       *refuser
	mu      sync.Mutex
	pending []byte // a refusal for the next Read
}

// Write holds back a matched claim and queues the refusal instead.
// go-redis writes one command per Write and reads its reply before it
// writes the next on a connection, so the refusal comes in its place.
func (c *refusingConn) Write(b []byte) (int, error) {
	low := bytes.ToLower(b)
	if bytes.Contains(low, []byte("once.claim")) && (!c.r.waitOnly || bytes.Contains(low, []byte("\r\nwait\r\n"))) {
		c.r.claims.Add(1)
		if c.r.limit == 0 || c.r.sent.Load() < c.r.limit {
			n := c.r.sent.Add(1)
			c.mu.Lock()
			c.pending = fmt.Appendf(c.pending, "-%s (reply %d)\r\n", c.r.reply, n)
			c.mu.Unlock()
			return len(b), nil
		}
	}
	return c.Conn.Write(b)
}

func (c *refusingConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	if len(c.pending) > 0 {
		n := copy(b, c.pending)
		c.pending = c.pending[n:]
		c.mu.Unlock()
		return n, nil
	}
	c.mu.Unlock()
	return c.Conn.Read(b)
}

// retryFor shortens the store's window for claims sent again.
func retryFor(d time.Duration) StoreOption {
	return func(c *storeConfig) { c.retryFor = d }
}

// notRun are replies that say a command did not run and may be sent
// again (retryableReply).
var notRun = []string{
	"TRYAGAIN the slot of the key is moving, try again",
	"LOADING Redis is loading the dataset in memory",
	"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
	"CLUSTERDOWN The cluster is down",
	"READONLY You can't write against a read only replica.",
}

// TestClaimSentAgainWhileNotRun (KV-9, KV-10): proxy mode in front of
// Redis Cluster answers ONCE.CLAIM -TRYAGAIN while a slot moves, for up
// to 5 s; a server loading its data or an upstream failing over answers
// likewise. The claim did not run: the store sends it again, paced, and
// the Run gets the run (a free key) or the answer it waits for (a key
// running elsewhere), whether the refused claim was the first (without
// WAIT) or a wait. Before, go-redis' own retries (4 tries in some 100 ms)
// were all, and Run failed with the reply.
func TestClaimSentAgainWhileNotRun(t *testing.T) {
	addr := server(t)
	for _, reply := range notRun {
		for _, wait := range []bool{false, true} {
			name := reply[:bytes.IndexByte([]byte(reply), ' ')]
			if wait {
				name += " WAIT"
			}
			t.Run(name, func(t *testing.T) {
				// 12 refusals: three rounds of go-redis' 4 tries.
				r := &refuser{reply: reply, waitOnly: wait, limit: 12}
				rdb := client(t, addr, func(o *redis.Options) { o.Dialer = r.dial })
				o := open[string](t, store(t, rdb), "again")
				key := name
				if !wait {
					info, err := o.RunInfo(ctxFor(t, 10*time.Second), key, func(context.Context) (string, error) { return "ran", nil })
					if err != nil || info.Value != "ran" || info.Replayed {
						t.Fatalf("Run after %d refused claims: %+v, %v", r.sent.Load(), info, err)
					}
				} else {
					runner := open[string](t, store(t, client(t, addr)), "again")
					release, _ := hold(t, runner, key, "answer")
					got := make(chan result[string], 1)
					go func() {
						v, err := o.Run(ctxFor(t, 10*time.Second), key, nil2[string]())
						got <- result[string]{info: RunInfo[string]{Value: v}, err: err}
					}()
					var res result[string]
					eventually(t, 10*time.Second, "the wait on the server after the refusals", func() bool {
						select {
						case res = <-got:
							t.Fatalf("Run before the run ended, after %d refused waits: %q, %v", r.sent.Load(), res.info.Value, res.err)
						default:
						}
						return serverWaiters(t, client(t, addr), "again:"+key) == 1
					})
					release()
					if res = recv(t, got); res.err != nil || res.info.Value != "answer" {
						t.Fatalf("Run after %d refused waits: %q, %v", r.sent.Load(), res.info.Value, res.err)
					}
				}
				if n := r.sent.Load(); n != r.limit {
					t.Fatalf("%d claims refused, want %d: the test did not test", n, r.limit)
				}
			})
		}
	}
}

// TestClaimRetriesEnd (KV-9, KV-10): claims answered TRYAGAIN are not
// sent again forever. After the store's window (5 s; 400 ms here) the
// Run fails with the last reply; a caller whose context ends meanwhile
// (the window 10 s then) returns ctx.Err() at once, and with no caller
// left no more claims go out.
func TestClaimRetriesEnd(t *testing.T) {
	addr := server(t)
	for _, tc := range []struct {
		name   string
		wait   bool          // refuse the waits of a key running elsewhere, else the first claim
		cancel time.Duration // the caller's context ends after this; 0 never
		window time.Duration // the store's retryFor
	}{
		{"first claim, window", false, 0, 400 * time.Millisecond},
		{"wait, window", true, 0, 400 * time.Millisecond},
		{"first claim, caller leaves", false, 300 * time.Millisecond, 10 * time.Second},
		{"wait, caller leaves", true, 300 * time.Millisecond, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &refuser{reply: "TRYAGAIN the slot of the key is moving, try again", waitOnly: tc.wait}
			rdb := client(t, addr, func(o *redis.Options) { o.Dialer = r.dial })
			s := store(t, rdb, retryFor(tc.window))
			o := open[string](t, s, "giveup")
			key := tc.name
			if tc.wait {
				release, _ := hold(t, open[string](t, store(t, client(t, addr)), "giveup"), key, "answer")
				defer release()
			}
			ctx := ctxFor(t, 10*time.Second)
			if tc.cancel > 0 {
				ctx = ctxFor(t, tc.cancel)
			}
			t0 := time.Now()
			_, err := o.Run(ctx, key, nil2[string]())
			took := time.Since(t0)
			if tc.cancel > 0 {
				// The first caller returns after its first claim's
				// round trip (go-redis' tries, some 100 ms) at the latest.
				if !errors.Is(err, context.DeadlineExceeded) || took > tc.cancel+time.Second {
					t.Fatalf("Run: %v after %v, want %v when its context ended (%v)", err, took, context.DeadlineExceeded, tc.cancel)
				}
				eventually(t, 5*time.Second, "the flight to stop", func() bool { return flights(s) == 0 })
				// The claim under way when the caller left may still go
				// through go-redis' own retries (4 tries, some 100 ms);
				// then nothing more goes out.
				left := r.claims.Load()
				time.Sleep(time.Second)
				n := r.claims.Load()
				time.Sleep(3 * claimRetryMax)
				if m := r.claims.Load(); m != n || n-left > 4 {
					t.Fatalf("%d claims sent after the last caller left, %d of them more than a second after", m-left, m-n)
				}
				return
			}
			var re redis.Error
			if !errors.As(err, &re) || err.Error() != r.last() {
				t.Fatalf("Run: %v, want the last reply %q", err, r.last())
			}
			// A pause that would end past the window is not taken.
			if took < tc.window-claimRetryMax {
				t.Fatalf("Run gave up after %v, before the window (%v)", took, tc.window)
			}
			if flights(s) != 0 {
				t.Fatal("the flight is still under way")
			}
		})
	}
}
