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
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Subscriptions. An instance subscribes to a slot's channel (one per
// database: the subscriptions are numbered by chanID) while it has
// waiters on keys of that slot (and for unsubscribeAfter more, to spare
// churn), over one connection per upstream master of its own (go-redis's
// PubSub resubscribes every channel in one command after a reconnection,
// which a cluster node refuses when they span slots). A slot is routed to
// the master the client's slot map names; a lost connection, a MOVED reply
// or an unsubscription the server sends (the slot moved) routes it again,
// after asking the cluster client to reload its map; with a Sentinel
// upstream, a connection opened while another master was named is closed
// (Config.MasterAddr). Once a subscription is confirmed, every waiting key
// of the slot is checked. Every connection also listens to flushChannel.
// "slot" below means a slot's channel in one database.

const (
	unsubscribeAfter = 2 * time.Second
	nodeIdleClose    = 10 * time.Second
	pingEvery        = 5 * time.Second
	readDeadline     = 3 * pingEvery
	tickEvery        = 500 * time.Millisecond
)

type subState int

const (
	subIdle          subState = iota // not subscribed
	subRouting                       // waiting to be given a node
	subSubscribing                   // SSUBSCRIBE sent, or sent once the node's connection is up
	subActive                        // confirmed
	subUnsubscribing                 // SUNSUBSCRIBE sent
)

// slotSub is the subscription of one slot's channel.
type slotSub struct {
	id        int // chanID
	state     subState
	node      *nodeConn
	keys      map[*keyState]struct{} // waited keys of the slot
	idleSince time.Time              // when keys became empty
}

// slotRefLocked counts ks in (add) or out of its slot, subscribing when the
// slot gets its first waited key.
func (e *Engine) slotRefLocked(ks *keyState, add bool) {
	id := chanID(ks.db, ks.slot)
	sub := e.slots[id]
	if sub == nil {
		if !add {
			return
		}
		sub = &slotSub{id: id, keys: make(map[*keyState]struct{})}
		e.slots[id] = sub
	}
	if !add {
		delete(sub.keys, ks)
		if len(sub.keys) == 0 {
			sub.idleSince = time.Now()
		}
		return
	}
	sub.keys[ks] = struct{}{}
	if sub.state == subIdle {
		e.routeLocked(sub)
	}
}

func (e *Engine) routeLocked(sub *slotSub) {
	sub.state = subRouting
	sub.node = nil
	e.toRoute[sub.id] = true
	select {
	case e.routeWake <- struct{}{}:
	default:
	}
}

// router gives slots to node connections and keeps the subscriptions
// tidy.
func (e *Engine) router() {
	defer e.wg.Done()
	tick := time.NewTicker(tickEvery)
	defer tick.Stop()
	backoff := time.Duration(0)
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-e.routeWake:
		case <-tick.C:
			e.sweep()
		}
		if backoff > 0 {
			select {
			case <-e.ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
		if e.routePending() || e.takeRetry() {
			backoff = min(max(2*backoff, 50*time.Millisecond), time.Second)
			select {
			case e.routeWake <- struct{}{}:
			default:
			}
		} else {
			backoff = 0
		}
	}
}

// takeRetry reports (and clears) that a routed slot failed at its node
// since the last pass, so that the router pauses before routing it again.
func (e *Engine) takeRetry() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := e.routeRetry
	e.routeRetry = false
	return r
}

// routePending routes the slots waiting for a node; it reports whether
// some could not be routed (to retry after a pause).
func (e *Engine) routePending() (failed bool) {
	e.mu.Lock()
	var slots []int
	for s := range e.toRoute {
		slots = append(slots, s)
	}
	e.mu.Unlock()
	if len(slots) == 0 {
		return false
	}
	type routed struct {
		slot int // chanID
		opt  *redis.Options
	}
	var ok []routed
	for _, s := range slots {
		ctx, cancel := context.WithTimeout(e.ctx, e.cfg.Timeout)
		c, err := e.master(ctx, TokenKey(s%Slots))
		cancel()
		if err != nil {
			failed = true
			e.upstreamError(err)
			continue
		}
		ok = append(ok, routed{s, c.Options()})
	}
	send := map[*nodeConn][]int{}
	e.mu.Lock()
	for _, r := range ok {
		sub := e.slots[r.slot]
		delete(e.toRoute, r.slot)
		if sub == nil || sub.state != subRouting {
			continue
		}
		if len(sub.keys) == 0 {
			sub.state = subIdle
			continue
		}
		n := e.nodes[r.opt.Addr]
		if n == nil {
			if e.closed {
				continue
			}
			n = &nodeConn{e: e, addr: r.opt.Addr, opt: r.opt, slots: make(map[int]bool), quit: make(chan struct{})}
			if e.cfg.MasterAddr != nil {
				n.master = e.cfg.MasterAddr()
			}
			e.nodes[n.addr] = n
			e.wg.Add(1)
			go n.run()
		}
		sub.node = n
		sub.state = subSubscribing
		n.slots[r.slot] = true
		if n.ready {
			send[n] = append(send[n], r.slot)
		}
	}
	e.mu.Unlock()
	for n, slots := range send {
		n.subscribe("ssubscribe", slots...)
	}
	return failed
}

// sweep unsubscribes from slots without waiters for a while, closes idle
// node connections, moves subscriptions whose slot moved to another master
// in the client's map, and closes the connections to a master the
// sentinels no longer name.
func (e *Engine) sweep() {
	now := time.Now()
	unsub := map[*nodeConn][]int{}
	var idle []*nodeConn
	var check []*slotSub
	master := ""
	if e.cfg.MasterAddr != nil {
		master = e.cfg.MasterAddr()
	}
	e.mu.Lock()
	for _, sub := range e.slots {
		switch {
		case len(sub.keys) == 0 && sub.state == subActive && now.Sub(sub.idleSince) >= unsubscribeAfter:
			sub.state = subUnsubscribing
			unsub[sub.node] = append(unsub[sub.node], sub.id)
		case len(sub.keys) == 0 && sub.state == subIdle:
			delete(e.slots, sub.id)
		case e.cc != nil && (sub.state == subActive || sub.state == subSubscribing) && sub.node != nil:
			check = append(check, sub)
		}
	}
	for _, n := range e.nodes {
		if master != "" && n.master == "" {
			n.master = master
		}
		if master != "" && n.master != master {
			e.log.Info("onceup: the sentinels name another master: subscribing there", zap.String("was", n.master), zap.String("master", master))
			idle = append(idle, n) // run() routes its slots again
			delete(e.nodes, n.addr)
			continue
		}
		if len(n.slots) > 0 {
			n.idleSince = time.Time{}
		} else if n.idleSince.IsZero() {
			n.idleSince = now
		} else if now.Sub(n.idleSince) >= nodeIdleClose {
			idle = append(idle, n)
			delete(e.nodes, n.addr)
		}
	}
	type moved struct {
		sub  *slotSub
		node *nodeConn
	}
	var addrs []string
	for _, sub := range check {
		addrs = append(addrs, sub.node.addr)
	}
	e.mu.Unlock()
	var mv []moved
	for i, sub := range check {
		ctx, cancel := context.WithTimeout(e.ctx, e.cfg.Timeout)
		c, err := e.master(ctx, TokenKey(sub.id%Slots))
		cancel()
		if err == nil && c.Options().Addr != addrs[i] {
			mv = append(mv, moved{sub: sub})
		}
	}
	e.mu.Lock()
	for i := range mv {
		sub := mv[i].sub
		if sub.node == nil || (sub.state != subActive && sub.state != subSubscribing) {
			continue
		}
		mv[i].node = sub.node
		delete(sub.node.slots, sub.id)
		e.routeLocked(sub)
	}
	e.mu.Unlock()
	for _, m := range mv {
		if m.node != nil {
			m.node.subscribe("sunsubscribe", m.sub.id)
		}
	}
	for n, slots := range unsub {
		n.subscribe("sunsubscribe", slots...)
	}
	for _, n := range idle {
		n.close()
	}
}

// nodeConn is this instance's subscription connection to one master.
type nodeConn struct {
	e    *Engine
	addr string
	opt  *redis.Options

	wmu sync.Mutex // serializes writes
	nc  net.Conn
	bw  *bufio.Writer

	// Under e.mu:
	slots     map[int]bool // slots routed here (chanIDs)
	master    string       // Sentinel: the master named when it was opened
	ready     bool         // connected: subscriptions can be sent
	idleSince time.Time

	closeOnce sync.Once
	quit      chan struct{}
}

func (n *nodeConn) close() {
	n.closeOnce.Do(func() {
		close(n.quit)
		n.wmu.Lock()
		if n.nc != nil {
			n.nc.Close()
		}
		n.wmu.Unlock()
	})
}

// run connects, subscribes the node's slots and reads what comes until the
// connection fails; then its slots are routed again.
func (n *nodeConn) run() {
	e := n.e
	defer e.wg.Done()
	err := n.serve()
	n.close()
	e.mu.Lock()
	if e.nodes[n.addr] == n {
		delete(e.nodes, n.addr)
	}
	n.ready = false
	for s := range n.slots {
		if sub := e.slots[s]; sub != nil && sub.node == n {
			if len(sub.keys) > 0 {
				e.routeLocked(sub)
			} else {
				sub.state, sub.node = subIdle, nil
			}
		}
	}
	n.slots = map[int]bool{}
	e.routeRetry = true
	closed := e.closed
	e.mu.Unlock()
	if !closed {
		e.log.Info("onceup: subscription connection lost", zap.String("addr", n.addr), zap.Error(err))
		if e.cc != nil {
			e.cc.ReloadState(context.Background())
		}
	}
}

func (n *nodeConn) serve() error {
	e := n.e
	ctx, cancel := context.WithTimeout(e.ctx, e.cfg.Timeout)
	nc, err := dialNode(ctx, n.opt)
	cancel()
	if err != nil {
		return err
	}
	n.wmu.Lock()
	select {
	case <-n.quit:
		n.wmu.Unlock()
		nc.Close()
		return errors.New("closed")
	default:
	}
	n.nc, n.bw = nc, bufio.NewWriter(nc)
	n.wmu.Unlock()

	e.mu.Lock()
	n.ready = true
	var slots []int
	for s := range n.slots {
		slots = append(slots, s)
	}
	e.mu.Unlock()
	n.send("subscribe", flushChannel)
	n.subscribe("ssubscribe", slots...)

	e.wg.Add(1)
	go n.pinger()
	rd := &replyReader{r: bufio.NewReader(nc)}
	for {
		_ = nc.SetReadDeadline(time.Now().Add(readDeadline))
		v, err := rd.read()
		if err != nil {
			return err
		}
		if err := n.handle(v); err != nil {
			return err
		}
	}
}

func (n *nodeConn) pinger() {
	defer n.e.wg.Done()
	t := time.NewTicker(pingEvery)
	defer t.Stop()
	for {
		select {
		case <-n.quit:
			return
		case <-t.C:
			n.send("ping")
		}
	}
}

// subscribe sends one SSUBSCRIBE or SUNSUBSCRIBE per slot (a cluster node
// refuses one command over channels of several slots).
func (n *nodeConn) subscribe(cmd string, slots ...int) {
	if h := n.e.holdSubscribe.Load(); h != nil && cmd == "ssubscribe" && len(slots) > 0 {
		select {
		case <-*h:
		case <-n.quit:
		}
	}
	for _, s := range slots {
		n.send(cmd, channelOf(s))
	}
}

func (n *nodeConn) send(args ...string) {
	n.wmu.Lock()
	defer n.wmu.Unlock()
	if n.bw == nil {
		return
	}
	writeCommand(n.bw, args...)
	if err := n.bw.Flush(); err != nil {
		n.nc.Close() // the reader notices
	}
}

// handle acts on one reply or message of the subscription connection.
func (n *nodeConn) handle(v any) error {
	e := n.e
	switch v := v.(type) {
	case respError:
		msg := string(v)
		if strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ") {
			f := strings.Fields(msg)
			if s, err := strconv.Atoi(f[1]); err == nil && s >= 0 && s < Slots {
				n.lostSlot(s)
				return nil
			}
		}
		return fmt.Errorf("subscription: %s", msg)
	case []any:
		if len(v) < 2 {
			return nil
		}
		kind, _ := v[0].([]byte)
		ch, _ := v[1].([]byte)
		switch string(kind) {
		case "smessage":
			if id := chanIDOf(string(ch)); id >= 0 && len(v) == 3 {
				if msg, ok := v[2].([]byte); ok {
					e.dispatch(id/Slots, msg)
				}
			}
		case "message":
			if string(ch) == flushChannel && len(v) == 3 {
				if msg, ok := v[2].([]byte); ok {
					e.flushEvent(msg)
				}
			}
		case "ssubscribe":
			n.confirmed(chanIDOf(string(ch)))
		case "sunsubscribe":
			n.unsubscribed(chanIDOf(string(ch)))
		}
	}
	return nil
}

// confirmed: the subscription of slot s is up; its waited keys are
// checked, so that an outcome announced before it is not missed.
func (n *nodeConn) confirmed(s int) {
	e := n.e
	if s < 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	sub := e.slots[s]
	if sub == nil || sub.node != n || sub.state != subSubscribing {
		return
	}
	e.Stats.Subscribes.Add(1)
	sub.state = subActive
	if len(sub.keys) == 0 {
		sub.idleSince = time.Now()
	}
	for ks := range sub.keys {
		e.kickLocked(ks)
	}
}

// unsubscribed: our SUNSUBSCRIBE was done, or the server dropped the
// subscription (the slot moved).
func (n *nodeConn) unsubscribed(s int) {
	e := n.e
	if s < 0 {
		return
	}
	e.mu.Lock()
	sub := e.slots[s]
	if sub == nil || sub.node != n {
		e.mu.Unlock()
		return
	}
	resub := false
	switch {
	case sub.state == subUnsubscribing && len(sub.keys) == 0:
		sub.state, sub.node = subIdle, nil
		delete(n.slots, s)
	case sub.state == subUnsubscribing:
		sub.state = subSubscribing // waiters came back meanwhile
		resub = true
	case sub.state == subSubscribing:
		// An answer to an older SUNSUBSCRIBE; the SSUBSCRIBE sent after
		// it is still to be confirmed.
	default:
		e.mu.Unlock()
		n.lost(s)
		return
	}
	e.mu.Unlock()
	if resub {
		n.subscribe("ssubscribe", s)
	}
}

// lostSlot routes every channel of hash slot s again (a MOVED: only a
// cluster, whose only database is 0, sends one).
func (n *nodeConn) lostSlot(s int) {
	e := n.e
	e.mu.Lock()
	var ids []int
	for id := range n.slots {
		if id%Slots == s {
			ids = append(ids, id)
		}
	}
	e.mu.Unlock()
	if len(ids) == 0 {
		ids = []int{s}
	}
	for _, id := range ids {
		n.lost(id)
	}
}

// lost routes slot s (a chanID) again: it is not (or no longer) served
// here.
func (n *nodeConn) lost(s int) {
	e := n.e
	e.mu.Lock()
	e.routeRetry = true
	if sub := e.slots[s]; sub != nil && sub.node == n {
		delete(n.slots, s)
		if len(sub.keys) > 0 {
			e.routeLocked(sub)
		} else {
			sub.state, sub.node = subIdle, nil
		}
	}
	e.mu.Unlock()
	if e.cc != nil {
		e.cc.ReloadState(context.Background())
	}
}
