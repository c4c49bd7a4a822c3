package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/oncekv/oncekv/internal/testredis"
)

// WAIT in a cluster writes a key of its own on every master (a slot the
// proxy's map gives that master), then waits there. While that slot moves
// away (MIGRATING: the master answers ASK for a key it does not have; or
// moved, the map not yet read again: MOVED), WAIT still counts the
// replicas that have the client's writes, on every master: the proxy's
// own write goes to another slot of the master, never the redirection to
// the client (a client of the proxy is not a cluster client).
func TestWaitWhileASlotMoves(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t, 2, 1)
	p := startTestProxy(t, "redis-cluster://"+strings.Join(cl.Masters(), ","), "")
	c := dialRaw(t, p.addr)
	deadline := time.Now().Add(10 * time.Second)
	for c.do("SET", "k", "1") != "+OK\r\n" || c.do("WAIT", "1", "1000") != ":1\r\n" {
		if time.Now().After(deadline) {
			t.Fatal("the replicas never acknowledged")
		}
		time.Sleep(50 * time.Millisecond)
	}
	n := p.cl.mastersList()[0]
	waitKey := p.waitKeyOn(n, nil)
	slot := cl.KeySlot(waitKey)
	var m *testredis.Migration
	for _, step := range []struct {
		name string
		do   func()
	}{
		{"migrating", func() {
			// The proxy's key of the slot moves first (it may exist, from
			// the WAIT above): the source then answers ASK for it.
			m = cl.BeginMigration(slot, cl.OtherMaster(n.addr))
			m.MoveAll()
		}},
		{"moved-map-stale", func() {
			m.Finish()
			p.cl.slots[slot].Store(n) // as before the proxy reads the map again
		}},
	} {
		step.do()
		if got := c.do("WAIT", "1", "5000"); got != ":1\r\n" {
			t.Errorf("%s: WAIT 1 5000: %q, want :1", step.name, got)
		}
		// A write of the client's in the moving slot, and one elsewhere.
		for _, args := range [][]string{{"SET", waitKey + "x", "1"}, {"SET", "k", "2"}} {
			if got := c.do(args...); got != "+OK\r\n" {
				t.Errorf("%s: %v: %q", step.name, args, got)
			}
		}
		if got := c.do("WAIT", "1", "5000"); got != ":1\r\n" {
			t.Errorf("%s: WAIT 1 5000 after writes: %q, want :1", step.name, got)
		}
	}
	if got := c.do("GET", waitKey+"x"); got != "$1\r\n1\r\n" {
		t.Errorf("GET %sx after the move: %q", waitKey, got)
	}
}
