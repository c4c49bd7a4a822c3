package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oncekv/oncekv/internal/testredis"
)

// closed stands for "the connection was closed" in a transcript.
const closed = "(closed)"

// runRestartScript runs steps on a new connection to addr; the step
// "RESTART" calls restart (kill -9 of the server, then start it again on
// the same port and data, which appendfsync always keeps). A step is one command, or several
// separated by " | " sent as one pipeline. It returns what the client saw,
// one entry per command, ending with closed when the connection was
// closed, and then the values of keys, read on a new connection.
func runRestartScript(tb testing.TB, addr string, restart func(), steps []string, keys ...string) []string {
	tb.Helper()
	setup := dialRaw(tb, addr)
	setup.do("FLUSHALL")
	setup.do("SET", "a", "0")
	c := dialRaw(tb, addr)
	var seen []string
run:
	for _, step := range steps {
		if step == "RESTART" {
			restart()
			continue
		}
		var cmds [][]string
		for _, cmd := range strings.Split(step, " | ") {
			cmds = append(cmds, strings.Fields(cmd))
		}
		c.send(cmds...)
		for range cmds {
			r, err := c.tryRead()
			if err != nil {
				if !isClosedErr(err) {
					tb.Fatalf("%s: %v", step, err)
				}
				seen = append(seen, closed)
				break run
			}
			seen = append(seen, r)
		}
	}
	after := dialRaw(tb, addr)
	for _, k := range keys {
		seen = append(seen, k+"="+after.do("GET", k))
	}
	return seen
}

// isClosedErr reports whether err is the peer closing the connection.
func isClosedErr(err error) bool {
	var ne net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		!(errors.As(err, &ne) && ne.Timeout()) && strings.Contains(err.Error(), "closed")
}

// An upstream restart in the middle of a client's transaction (after
// MULTI, or after WATCH) loses the transaction's state upstream. The
// client sees what it sees when the Redis it talks to restarts: its
// connection is closed, at the first command after the restart, with no
// reply to it. So no command the client believes queued runs at a later
// EXEC, and no transaction runs without the WATCH the client believes
// holds: the keys read afterwards are as before. Both are compared with a
// redis-server restarted at the same step.
func TestUpstreamRestartMidTransaction(t *testing.T) {
	t.Parallel()
	durable := []string{"--appendonly", "yes", "--appendfsync", "always"}
	direct, up := testredis.Standalone(t, durable...), testredis.Standalone(t, durable...)
	p := startTestProxy(t, "redis://"+up.Addr(), "")
	for _, tc := range []struct {
		name  string
		steps []string
		want  []string
	}{
		{"multi-then-queue", []string{"MULTI", "INCR a", "RESTART", "INCR a", "SET b 1", "EXEC"},
			[]string{"+OK\r\n", "+QUEUED\r\n", closed}},
		{"multi-then-exec", []string{"MULTI", "SET b 1", "RESTART", "EXEC"},
			[]string{"+OK\r\n", "+QUEUED\r\n", closed}},
		{"multi-then-pipeline", []string{"MULTI", "INCR a", "RESTART", "INCR a | SET b 1 | EXEC", "GET a"},
			[]string{"+OK\r\n", "+QUEUED\r\n", closed}},
		{"multi-then-discard", []string{"MULTI", "INCR a", "RESTART", "DISCARD", "INCR a"},
			[]string{"+OK\r\n", "+QUEUED\r\n", closed}},
		{"watch-then-watch", []string{"WATCH a", "RESTART", "WATCH b", "MULTI", "INCR a", "EXEC"},
			[]string{"+OK\r\n", closed}},
		{"watch-then-read", []string{"WATCH a", "RESTART", "GET a", "MULTI", "INCR a", "EXEC"},
			[]string{"+OK\r\n", closed}},
		{"watch-then-multi", []string{"WATCH a", "RESTART", "MULTI", "INCR a", "EXEC"},
			[]string{"+OK\r\n", closed}},
		{"watch-then-pipeline", []string{"WATCH a", "RESTART", "MULTI | INCR a | EXEC"},
			[]string{"+OK\r\n", closed}},
		{"watch-then-blocking", []string{"WATCH a", "RESTART", "BLPOP q 1", "MULTI", "INCR a", "EXEC"},
			[]string{"+OK\r\n", closed}},
		{"watch-then-select", []string{"WATCH a", "RESTART", "SELECT 1", "MULTI", "INCR a", "EXEC"},
			[]string{"+OK\r\n", closed}},
		{"watch-then-unwatch", []string{"WATCH a", "GET a", "RESTART", "UNWATCH", "INCR a"},
			[]string{"+OK\r\n", "$1\r\n0\r\n", closed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := append(tc.want, "a=$1\r\n0\r\n", "b=$-1\r\n")
			ref := runRestartScript(t, direct.Addr(), direct.Restart, tc.steps, "a", "b")
			lost := p.stats.lostTx.Load()
			got := runRestartScript(t, p.addr, up.Restart, tc.steps, "a", "b")
			if n := p.stats.lostTx.Load() - lost; n != 1 {
				t.Errorf("proxy_lost_transactions grew by %d, want 1", n)
			}
			if fmt.Sprint(ref) != fmt.Sprint(want) {
				t.Errorf("redis-server restarted: %q, want %q", ref, want)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("through the proxy, upstream restarted: %q, want %q (as redis-server: %q)", got, want, ref)
			}
			// The proxy goes on serving its other clients, and this one
			// once it connects again.
			c := dialRaw(t, p.addr)
			if r := c.do("INCR", "n"); !strings.HasPrefix(r, ":") {
				t.Errorf("INCR after the restart: %q", r)
			}
			if n := p.stats.pinned.Load(); n != 0 {
				t.Errorf("%d connections still pinned", n)
			}
		})
	}
}

// The same in a cluster, where MULTI without WATCH is answered by the
// proxy and pins the node of the first queued command's keys, and a
// transaction whose slot moves is run again elsewhere: a restart of that
// node closes the client's connection too, and nothing of the
// transaction runs.
func TestClusterNodeRestartMidTransaction(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t, 1, 0, "--appendonly", "yes", "--appendfsync", "always")
	node := cl.Node(cl.Addrs()[0])
	p := startTestProxy(t, "redis-cluster://"+node.Addr(), "")
	for _, tc := range []struct {
		name  string
		steps []string
		want  []string
	}{
		{"multi-then-queue", []string{"MULTI", "INCR a", "RESTART", "INCR a", "EXEC"},
			[]string{"+OK\r\n", "+QUEUED\r\n", closed}},
		{"multi-then-exec", []string{"MULTI", "SET b 1", "RESTART", "EXEC"},
			[]string{"+OK\r\n", "+QUEUED\r\n", closed}},
		{"watch-then-watch", []string{"WATCH a", "RESTART", "WATCH b", "MULTI", "INCR a", "EXEC"},
			[]string{"+OK\r\n", closed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := append(tc.want, "a=$1\r\n0\r\n", "b=$-1\r\n")
			restart := func() {
				node.Restart()
				if err := cl.WaitHealthy(10 * time.Second); err != nil {
					t.Fatal(err)
				}
			}
			if got := runRestartScript(t, p.addr, restart, tc.steps, "a", "b"); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("through the proxy, node restarted: %q, want %q", got, want)
			}
		})
	}
}

// A cluster transaction whose slot moved before EXEC is run again where
// the slot went (replayMoved). When the connection of that re-run breaks
// after its EXEC was written, the node may have run it: here it has (the
// proxy stops reading, the node goes on). An "-ERR upstream …" would read
// as "did not run"; the client's connection is closed instead, without a
// reply to EXEC, as when the Redis it talks to restarts mid-EXEC. The
// script's "RESTART" step moves the slot (finished: MOVED at EXEC; or
// begun: ASK while queueing, EXECABORT at EXEC) and arms the break.
func TestClusterTxReplayBrokenAfterExec(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t, 2, 0)
	p := startTestProxy(t, "redis-cluster://"+cl.Addrs()[0], "")
	var broken atomic.Int64
	// The proxy's read of the re-run's replies fails at once; the node,
	// whose connection stays open, runs what it was sent.
	brk := func(c *upConn) {
		broken.Add(1)
		_ = c.nc.SetReadDeadline(time.Now())
	}
	p.txSent.Store(&brk)
	for _, tc := range []struct {
		name string
		key  string
		move func(slot int, to string)
	}{
		{"moved", "{moved}k", func(slot int, to string) { cl.MoveSlot(slot, to) }},
		{"ask", "{ask}k", func(slot int, to string) { cl.BeginMigration(slot, to) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slot := cl.KeySlot(tc.key)
			restart := func() {
				tc.move(slot, cl.OtherMaster(p.cl.slots[slot].Load().addr))
			}
			lost, sent := p.stats.lostTx.Load(), broken.Load()
			got := runRestartScript(t, p.addr, restart, []string{"MULTI", "SET " + tc.key + " v", "RESTART", "EXEC"}, tc.key)
			want := []string{"+OK\r\n", "+QUEUED\r\n", closed, tc.key + "=$1\r\nv\r\n"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("EXEC re-run where the slot went, connection broken after EXEC: %q, want %q", got, want)
			}
			if n := broken.Load() - sent; n != 1 {
				t.Errorf("the transaction was run again %d times, want 1", n)
			}
			if n := p.stats.lostTx.Load() - lost; n != 1 {
				t.Errorf("proxy_lost_transactions grew by %d, want 1", n)
			}
			if n := p.stats.pinned.Load(); n != 0 {
				t.Errorf("%d connections still pinned", n)
			}
		})
	}
}
