package testredis

import (
	"fmt"
	"net"
)

// Migration moves one hash slot from the master serving it to another, in
// the steps redis-cli --cluster reshard takes, so that a test can act
// between them: Begin (CLUSTER SETSLOT … IMPORTING on the target, then
// MIGRATING on the source: the source answers -ASK for the slot's keys it
// does not have, the target serves them after ASKING, and a multi-key
// command whose keys are not all on the node asked gets -TRYAGAIN from
// either, a key that exists nowhere counting as missing), Move (MIGRATE of some
// keys), and Finish (MIGRATE of the rest, then SETSLOT … NODE on the
// target, the source and every other master: the source answers -MOVED).
type Migration struct {
	c            *Cluster
	Slot         int
	From, To     string
	fromID, toID string
}

// KeySlot returns the hash slot of key, as a live node computes it.
func (c *Cluster) KeySlot(key string) int {
	c.tb.Helper()
	var last error
	for _, s := range c.nodes {
		if !s.Alive() {
			continue
		}
		v, err := s.do("cluster", "keyslot", key)
		if err == nil {
			return int(v.(int64))
		}
		last = err
	}
	c.tb.Fatalf("KeySlot(%q): %v", key, last)
	return 0
}

// OtherMaster returns a live master with slots other than addr.
func (c *Cluster) OtherMaster(addr string) string {
	c.tb.Helper()
	for _, m := range c.Masters() {
		if m != addr {
			return m
		}
	}
	c.tb.Fatalf("OtherMaster: no master other than %s", addr)
	return ""
}

// BeginMigration opens the migration of slot to master to, from the master
// serving it now.
func (c *Cluster) BeginMigration(slot int, to string) *Migration {
	c.tb.Helper()
	m := &Migration{c: c, Slot: slot, To: to}
	for _, nd := range c.anyView() {
		if nd.has("master") && nd.serves(slot) {
			m.From, m.fromID = nd.addr, nd.id
		}
		if nd.addr == to {
			m.toID = nd.id
		}
	}
	if m.From == "" || m.toID == "" || m.From == to {
		c.tb.Fatalf("BeginMigration(%d, %s): slot served by %q", slot, to, m.From)
	}
	m.on(to, "cluster", "setslot", slot, "importing", m.fromID)
	m.on(m.From, "cluster", "setslot", slot, "migrating", m.toID)
	return m
}

// Move migrates keys (all of the slot) from the source to the target.
func (m *Migration) Move(keys ...string) {
	m.c.tb.Helper()
	if len(keys) == 0 {
		return
	}
	host, port, _ := net.SplitHostPort(m.To)
	args := []any{"migrate", host, port, "", 0, 5000, "keys"}
	for _, k := range keys {
		args = append(args, k)
	}
	m.on(m.From, args...)
}

// MoveAll migrates every key left in the slot on the source.
func (m *Migration) MoveAll() {
	m.c.tb.Helper()
	for {
		v, err := m.c.Node(m.From).do("cluster", "getkeysinslot", m.Slot, 100)
		if err != nil {
			m.c.tb.Fatalf("CLUSTER GETKEYSINSLOT %d on %s: %v", m.Slot, m.From, err)
		}
		list, _ := v.([]any)
		if len(list) == 0 {
			return
		}
		keys := make([]string, len(list))
		for i, k := range list {
			keys[i] = fmt.Sprint(k)
		}
		m.Move(keys...)
	}
}

// Finish migrates the keys left and gives the slot to the target, telling
// the target first, then the source, then the other masters.
func (m *Migration) Finish() {
	m.c.tb.Helper()
	m.MoveAll()
	m.on(m.To, "cluster", "setslot", m.Slot, "node", m.toID)
	m.on(m.From, "cluster", "setslot", m.Slot, "node", m.toID)
	for _, a := range m.c.Masters() {
		if a != m.To && a != m.From {
			m.on(a, "cluster", "setslot", m.Slot, "node", m.toID)
		}
	}
}

// MoveSlot moves slot to master to at once (Begin, then Finish).
func (c *Cluster) MoveSlot(slot int, to string) *Migration {
	c.tb.Helper()
	m := c.BeginMigration(slot, to)
	m.Finish()
	return m
}

func (m *Migration) on(addr string, args ...any) {
	m.c.tb.Helper()
	s := m.c.Node(addr)
	if s == nil {
		m.c.tb.Fatalf("migration of slot %d: no node %s", m.Slot, addr)
	}
	if _, err := s.do(args...); err != nil {
		m.c.tb.Fatalf("migration of slot %d: %v on %s: %v", m.Slot, args, addr, err)
	}
}
