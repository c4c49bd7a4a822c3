package testredis

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterTimeout bounds building the cluster and each wait for its health.
const clusterTimeout = 30 * time.Second

// Cluster is a Redis Cluster of real redis-server processes.
type Cluster struct {
	tb      testing.TB
	nodes   []*Server // masters first, then replicas (see the package doc)
	masters int
}

// StartCluster starts masters masters with replicas replicas each, spreads
// the 16384 slots evenly over the masters, and waits until every node says
// cluster_state:ok, all slots are ok and every replica is in sync with its
// master. args are appended to every node's command line. tb.Cleanup kills
// every node.
func StartCluster(tb testing.TB, masters, replicas int, args ...string) *Cluster {
	tb.Helper()
	if masters < 1 || replicas < 0 {
		tb.Fatalf("StartCluster: %d masters, %d replicas", masters, replicas)
	}
	bin := binary(tb)
	root := tb.TempDir()
	base := []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", "1000", "--cluster-replica-validity-factor", "0",
		"--cluster-allow-replica-migration", "no", "--repl-diskless-sync-delay", "0",
		"--repl-ping-replica-period", "1"}
	base = append(base, args...)
	c := &Cluster{tb: tb, masters: masters}
	n := masters * (1 + replicas)
	for i := 0; i < n; i++ {
		c.nodes = append(c.nodes, start(tb, bin, nodeDir(tb, root, i), true, base))
	}
	ids := make([]string, n)
	for i, s := range c.nodes {
		id, err := s.doString("cluster", "myid")
		if err != nil {
			tb.Fatalf("CLUSTER MYID on %s: %v", s.Addr(), err)
		}
		ids[i] = id
		if _, err := s.do("cluster", "set-config-epoch", i+1); err != nil {
			tb.Fatalf("CLUSTER SET-CONFIG-EPOCH on %s: %v", s.Addr(), err)
		}
	}
	for m := 0; m < masters; m++ {
		lo, hi := m*16384/masters, (m+1)*16384/masters-1
		if _, err := c.nodes[m].do("cluster", "addslotsrange", lo, hi); err != nil {
			tb.Fatalf("CLUSTER ADDSLOTSRANGE on %s: %v", c.nodes[m].Addr(), err)
		}
	}
	for _, s := range c.nodes[1:] {
		if _, err := s.do("cluster", "meet", "127.0.0.1", c.nodes[0].port); err != nil {
			tb.Fatalf("CLUSTER MEET from %s: %v", s.Addr(), err)
		}
	}
	c.waitFor("every node to know every other", func(s *Server) error {
		nodes, err := c.view(s)
		if err != nil {
			return err
		}
		if len(nodes) != n {
			return fmt.Errorf("knows %d nodes of %d", len(nodes), n)
		}
		for _, nd := range nodes {
			if nd.has("handshake") || nd.has("noaddr") {
				return fmt.Errorf("%s is %s", nd.addr, nd.flags)
			}
		}
		return nil
	})
	for m := 0; m < masters; m++ {
		for j := 0; j < replicas; j++ {
			r := c.nodes[masters+m*replicas+j]
			if _, err := r.do("cluster", "replicate", ids[m]); err != nil {
				tb.Fatalf("CLUSTER REPLICATE on %s: %v", r.Addr(), err)
			}
		}
	}
	c.waitFor("every replica to be known and in sync", func(s *Server) error {
		nodes, err := c.view(s)
		if err != nil {
			return err
		}
		slaves := 0
		for _, nd := range nodes {
			if nd.has("slave") && nd.master != "-" {
				slaves++
			}
		}
		if slaves != masters*replicas {
			return fmt.Errorf("sees %d replicas of %d", slaves, masters*replicas)
		}
		if me := nodes.self(); me != nil && me.has("slave") {
			info, err := s.doString("info", "replication")
			if err != nil {
				return err
			}
			if !strings.Contains(info, "master_link_status:up") {
				return fmt.Errorf("replica link not up")
			}
		}
		return nil
	})
	if err := c.WaitHealthy(clusterTimeout); err != nil {
		tb.Fatalf("cluster: %v", err)
	}
	return c
}

// Addrs returns every node's address, masters first as started, including
// nodes that were killed.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, s := range c.nodes {
		out[i] = s.Addr()
	}
	return out
}

// Node returns the node at addr, or nil.
func (c *Cluster) Node(addr string) *Server {
	for _, s := range c.nodes {
		if s.Addr() == addr {
			return s
		}
	}
	return nil
}

// KillNode kills the node at addr with SIGKILL.
func (c *Cluster) KillNode(addr string) {
	c.tb.Helper()
	s := c.Node(addr)
	if s == nil {
		c.tb.Fatalf("KillNode: no node %s", addr)
	}
	s.Kill()
}

// Masters returns the live masters with slots, as a live node sees them.
func (c *Cluster) Masters() []string { return c.role(true) }

// Replicas returns the live replicas, as a live node sees them.
func (c *Cluster) Replicas() []string { return c.role(false) }

func (c *Cluster) role(master bool) []string {
	c.tb.Helper()
	nodes := c.anyView()
	var out []string
	for _, nd := range nodes {
		if nd.has("fail") || nd.has("fail?") || !c.alive(nd.addr) {
			continue
		}
		if master && nd.has("master") && len(nd.slots) > 0 || !master && nd.has("slave") {
			out = append(out, nd.addr)
		}
	}
	return out
}

// ReplicasOf returns the live replicas of master, as a live node sees them.
func (c *Cluster) ReplicasOf(master string) []string {
	c.tb.Helper()
	nodes := c.anyView()
	id := ""
	for _, nd := range nodes {
		if nd.addr == master {
			id = nd.id
		}
	}
	var out []string
	for _, nd := range nodes {
		if id != "" && nd.master == id && nd.has("slave") && c.alive(nd.addr) {
			out = append(out, nd.addr)
		}
	}
	return out
}

// MasterForKey returns the address of the live master serving key now.
func (c *Cluster) MasterForKey(key string) string {
	c.tb.Helper()
	var slot int64
	for _, s := range c.nodes {
		if !s.Alive() {
			continue
		}
		v, err := s.do("cluster", "keyslot", key)
		if err == nil {
			slot = v.(int64)
			break
		}
	}
	for _, nd := range c.anyView() {
		if nd.has("master") && !nd.has("fail") && nd.serves(int(slot)) {
			return nd.addr
		}
	}
	c.tb.Fatalf("MasterForKey(%q): no master serves slot %d", key, slot)
	return ""
}

// WaitHealthy waits until every live node says cluster_state:ok with all
// 16384 slots assigned and ok.
func (c *Cluster) WaitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := c.eachLive(func(s *Server) error {
			info, err := s.doString("cluster", "info")
			if err != nil {
				return err
			}
			for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_slots_ok:16384"} {
				if !strings.Contains(info, want) {
					return fmt.Errorf("CLUSTER INFO lacks %s", want)
				}
			}
			return nil
		})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not healthy within %v: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitFailover waits, after master dead was killed, until every live node
// marks it failed, none of them gives it slots, and the cluster is healthy
// again (a replica took its slots).
func (c *Cluster) WaitFailover(dead string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := c.eachLive(func(s *Server) error {
			nodes, err := c.view(s)
			if err != nil {
				return err
			}
			for _, nd := range nodes {
				if nd.addr == dead && (!nd.has("fail") || len(nd.slots) > 0) {
					return fmt.Errorf("sees %s as %s with %d slot ranges", dead, nd.flags, len(nd.slots))
				}
			}
			return nil
		})
		if err == nil {
			return c.WaitHealthy(time.Until(deadline))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no failover of %s within %v: %v", dead, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Client returns a new *redis.ClusterClient over every node, closed by
// tb.Cleanup. It reloads the slot map every second: go-redis otherwise
// reloads it only on MOVED/ASK/READONLY replies or every 60 s, so after a
// master is killed it keeps dialing the dead node (connection refused)
// until someone calls ReloadState.
func (c *Cluster) Client() *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ClusterStateReloadInterval: time.Second})
	c.tb.Cleanup(func() { _ = cc.Close() })
	return cc
}

func (c *Cluster) alive(addr string) bool {
	s := c.Node(addr)
	return s != nil && s.Alive()
}

func (c *Cluster) eachLive(fn func(*Server) error) error {
	for _, s := range c.nodes {
		if !s.Alive() {
			continue
		}
		if err := fn(s); err != nil {
			return fmt.Errorf("%s: %w", s.Addr(), err)
		}
	}
	return nil
}

// waitFor waits until fn holds on every live node, failing the test after
// clusterTimeout.
func (c *Cluster) waitFor(what string, fn func(*Server) error) {
	c.tb.Helper()
	deadline := time.Now().Add(clusterTimeout)
	for {
		err := c.eachLive(fn)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("cluster: waiting for %s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// anyView is CLUSTER NODES as the first live node answers it.
func (c *Cluster) anyView() nodeList {
	c.tb.Helper()
	var last error
	for _, s := range c.nodes {
		if !s.Alive() {
			continue
		}
		nodes, err := c.view(s)
		if err == nil {
			return nodes
		}
		last = err
	}
	c.tb.Fatalf("cluster: no live node answers CLUSTER NODES: %v", last)
	return nil
}

// node is one line of CLUSTER NODES.
type node struct {
	id, addr, master string
	flags            string
	slots            [][2]int
}

func (n node) has(flag string) bool {
	for _, f := range strings.Split(n.flags, ",") {
		if f == flag {
			return true
		}
	}
	return false
}

func (n node) serves(slot int) bool {
	for _, r := range n.slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

type nodeList []node

func (l nodeList) self() *node {
	for i := range l {
		if l[i].has("myself") {
			return &l[i]
		}
	}
	return nil
}

// view parses s's CLUSTER NODES.
func (c *Cluster) view(s *Server) (nodeList, error) {
	text, err := s.doString("cluster", "nodes")
	if err != nil {
		return nil, err
	}
	var out nodeList
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("CLUSTER NODES line %q", line)
		}
		addr := f[1]
		if i := strings.IndexAny(addr, "@,"); i >= 0 {
			addr = addr[:i]
		}
		nd := node{id: f[0], addr: addr, flags: f[2], master: f[3]}
		for _, sl := range f[8:] {
			if strings.HasPrefix(sl, "[") { // a slot being migrated
				continue
			}
			lo, hi, ok := strings.Cut(sl, "-")
			a, err := strconv.Atoi(lo)
			if err != nil {
				return nil, fmt.Errorf("CLUSTER NODES slot %q", sl)
			}
			b := a
			if ok {
				if b, err = strconv.Atoi(hi); err != nil {
					return nil, fmt.Errorf("CLUSTER NODES slot %q", sl)
				}
			}
			nd.slots = append(nd.slots, [2]int{a, b})
		}
		out = append(out, nd)
	}
	return out, nil
}
