package onceup

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncekv/oncekv/internal/testredis"
)

// cutter is a TCP relay to a redis-server that, once armed with a
// pattern, forwards the next request containing it, swallows its reply and
// closes the connection: the command ran, its caller never hears so.
type cutter struct {
	ln      net.Listener
	target  string
	pattern atomic.Pointer[[]byte]
	cuts    atomic.Int32
	wg      sync.WaitGroup
}

func startCutter(tb testing.TB, target string) *cutter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	c := &cutter{ln: ln, target: target}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				c.relay(nc)
			}()
		}
	}()
	tb.Cleanup(func() {
		ln.Close()
		c.wg.Wait()
	})
	return c
}

func (c *cutter) addr() string { return c.ln.Addr().String() }

// arm cuts the next request that contains p.
func (c *cutter) arm(p []byte) { c.pattern.Store(&p) }

func (c *cutter) relay(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", c.target)
	if err != nil {
		return
	}
	defer server.Close()
	var cut atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 && cut.Load() {
				// The reply of the cut request: swallowed.
				client.Close()
				return
			}
			if n > 0 {
				if _, err := client.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				client.Close()
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := client.Read(buf)
		if n > 0 {
			if p := c.pattern.Load(); p != nil && bytes.Contains(buf[:n], *p) && c.pattern.CompareAndSwap(p, nil) {
				cut.Store(true)
				c.cuts.Add(1)
			}
			if _, err := server.Write(buf[:n]); err != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	server.Close()
	<-done
	_, _ = io.Copy(io.Discard, client)
}

// A COMPLETE or ABORT that ran upstream but whose reply was lost is not
// sent again by go-redis (even by a client with retries on): it would
// answer -STALE for a completion that succeeded. The caller gets the
// upstream error instead, and the run's outcome holds.
func TestNoRetryOfCompletions(t *testing.T) {
	s := testredis.Standalone(t)
	cut := startCutter(t, s.Addr())
	up := &upstream{name: "cut", server: s, client: func(tb testing.TB) redis.UniversalClient {
		// go-redis's default: 3 retries.
		c := redis.NewClient(&redis.Options{Addr: cut.addr(), Protocol: 2})
		tb.Cleanup(func() { c.Close() })
		return c
	}}
	p := startProxy(t, up, Config{})
	c := dial(t, p)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		script *script
		end    func(k string, tok int64) error
		after  string
	}{
		{"complete", completeScript, func(k string, tok int64) error { return c.Do(ctx, "ONCE.COMPLETE", k, tok, "ans").Err() }, "done"},
		{"abort", abortScript, func(k string, tok int64) error { return c.Do(ctx, "ONCE.ABORT", k, tok, "boom").Err() }, "claimed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := key(t, "k")
			r := do(ctx, c, "ONCE.CLAIM", k)
			if r.state != "claimed" {
				t.Fatalf("CLAIM = %v", r)
			}
			// The script is loaded: the cut request is the one that runs it.
			if err := s.Client().ScriptLoad(ctx, tc.script.src).Err(); err != nil {
				t.Fatal(err)
			}
			before := cut.cuts.Load()
			cut.arm([]byte(tc.script.hash))
			err := tc.end(k, r.n)
			if cut.cuts.Load() != before+1 {
				t.Fatalf("the request was not cut")
			}
			if err == nil || strings.HasPrefix(err.Error(), "STALE") || !strings.HasPrefix(err.Error(), "ERR upstream") {
				t.Fatalf("%s whose reply was lost: %v, want the upstream's error (not -STALE: it was retried)", tc.name, err)
			}
			if r2 := do(ctx, c, "ONCE.CLAIM", k); r2.state != tc.after || (tc.after == "done" && r2.detail != "ans") {
				t.Fatalf("CLAIM after the cut %s = %v, want %s", tc.name, r2, tc.after)
			}
		})
	}
}

// With WaitReplicas, only scripts that wrote wait for the replicas: on a
// master without replicas, a claim that finds the key running or done, a
// stale COMPLETE and STATUS answer at once; a claim and a completion wait
// the WAIT timeout (and count as short).
func TestWaitOnlyAfterWrites(t *testing.T) {
	up := standaloneUpstream(t)
	const timeout = 400 * time.Millisecond
	p := startProxy(t, up, Config{WaitReplicas: 1, WaitTimeout: timeout})
	c := dial(t, p)
	ctx := context.Background()
	k := key(t, "k")
	timed := func(want string, slow bool, args ...any) reply {
		t.Helper()
		short := p.e.Stats.ReplicaShort.Load()
		start := time.Now()
		var r reply
		if want == "ok" || want == "stale" {
			if err := c.Do(ctx, args...).Err(); err != nil {
				r = reply{err: err}
			}
		} else {
			r = do(ctx, c, args...)
		}
		el := time.Since(start)
		switch {
		case want == "stale" && (r.err == nil || !strings.HasPrefix(r.err.Error(), "STALE")):
			t.Fatalf("%v = %v, want -STALE", args, r)
		case want != "stale" && want != "ok" && r.state != want:
			t.Fatalf("%v = %v, want %s", args, r, want)
		case want == "ok" && r.err != nil:
			t.Fatalf("%v: %v", args, r.err)
		}
		if slow && (el < timeout || p.e.Stats.ReplicaShort.Load() != short+1) {
			t.Fatalf("%v answered after %v (short %d → %d): a write must wait for the replicas", args, el, short, p.e.Stats.ReplicaShort.Load())
		}
		if !slow && (el >= timeout/2 || p.e.Stats.ReplicaShort.Load() != short) {
			t.Fatalf("%v answered after %v: a read must not wait for the replicas", args, el)
		}
		return r
	}
	tok := timed("claimed", true, "ONCE.CLAIM", k).n
	timed("running", false, "ONCE.CLAIM", k)
	timed("stale", false, "ONCE.COMPLETE", k, tok+1, "x")
	timed("ok", true, "ONCE.COMPLETE", k, tok, "ans")
	timed("done", false, "ONCE.CLAIM", k)
	timed("done", false, "ONCE.WAIT", k)
	timed("stale", false, "ONCE.ABORT", k, tok)
}
