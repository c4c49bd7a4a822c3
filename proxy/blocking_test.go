package proxy

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/oncekv/oncekv/internal/testredis"
	"github.com/oncekv/oncekv/resp"
)

// closedIdle counts the idle connections of the proxy's pools that are
// closed (SetDeadline fails on a closed socket).
func closedIdle(tb testing.TB, p *Proxy) int {
	tb.Helper()
	n := 0
	p.nodesMu.Lock()
	defer p.nodesMu.Unlock()
	for _, nd := range p.nodes {
		nd.mu.Lock()
		for _, l := range nd.idle {
			for _, c := range l {
				if c.nc.SetDeadline(time.Time{}) != nil {
					n++
				}
			}
		}
		nd.mu.Unlock()
	}
	return n
}

// A client that leaves while its blocking command is being answered: the
// upstream connection the proxy closed to end the wait never goes back to
// the pool, even when the reply had arrived in the meantime (the next
// command on it would fail with "-ERR upstream …: use of closed network
// connection"), and its leaving is not an upstream error.
func TestBlockedClientLeavingAsTheReplyComes(t *testing.T) {
	t.Parallel()
	up := testredis.Standalone(t)
	p := startTestProxy(t, "redis://"+up.Addr(), "")
	for _, cmd := range [][]string{
		{"BLPOP", "q", "0"},
		{"WAIT", "0", "0"},
	} {
		t.Run(cmd[0], func(t *testing.T) {
			errsBefore := p.stats.upstreamErrors.Load()
			for i := 0; i < 300; i++ {
				c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
				if cmd[0] == "BLPOP" {
					p.Serve(c, bs("RPUSH", "q", "x"))
					c.Settle(context.Background())
				}
				c.W.Reset()
				p.Serve(c, bs(cmd...))
				fn := c.TakeBlock()
				if fn == nil {
					t.Fatalf("%v did not block", cmd)
				}
				gone := make(chan struct{})
				go func() {
					// Leave at varying moments around the reply.
					for k := 0; k < i%40; k++ {
						runtime.Gosched()
					}
					close(gone)
				}()
				fn(gone)
				p.Disconnected(c)
				if n := closedIdle(t, p.Proxy); n > 0 {
					t.Fatalf("round %d: %d closed connection(s) pooled after the client left", i, n)
				}
			}
			if n := p.stats.upstreamErrors.Load() - errsBefore; n != 0 {
				t.Errorf("%d upstream errors counted for clients that left", n)
			}
		})
	}
}
