package proxy

// Cluster routing: the slot map, key positions, redirections, and the
// commands that cover every master.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Replies worded as Redis Cluster words them.
const (
	replyCrossSlot    = "CROSSSLOT Keys in request don't hash to the same slot"
	replyNotServed    = "CLUSTERDOWN Hash slot not served"
	replyClusterDown  = "CLUSTERDOWN The cluster is down"
	replyInvalidCur   = "ERR invalid cursor"
	maxRedirects      = 5
	tryAgainBaseDelay = 25 * time.Millisecond
	tryAgainMaxDelay  = 200 * time.Millisecond
	// tryAgainFor bounds the retries of a command answered TRYAGAIN:
	// a multi-key command whose keys a slot's migration has split
	// between two nodes runs only once the move of the slot ends.
	tryAgainFor = 2 * time.Second
)

// clusterMap is the slot → master map. Each slot is its own atomic
// pointer, so that a MOVED updates one slot without copying the map.
type clusterMap struct {
	slots   [numSlots]atomic.Pointer[node]
	masters atomic.Pointer[[]*node] // sorted by address
	rr      atomic.Uint32
}

// mastersList returns the masters, sorted by address.
func (m *clusterMap) mastersList() []*node {
	if l := m.masters.Load(); l != nil {
		return *l
	}
	return nil
}

// anyMaster picks a master in turn, for commands without keys.
func (m *clusterMap) anyMaster() (*node, string) {
	l := m.mastersList()
	if len(l) == 0 {
		return nil, replyClusterDown
	}
	return l[int(m.rr.Add(1))%len(l)], ""
}

// loadSlots reads CLUSTER SLOTS from a known master or a seed, the first
// that answers.
func (p *Proxy) loadSlots() error {
	var cands []string
	for _, n := range p.cl.mastersList() {
		cands = append(cands, n.addr)
	}
	for _, a := range p.up.Addrs {
		if !slices.Contains(cands, a) {
			cands = append(cands, a)
		}
	}
	var last error
	for _, addr := range cands {
		r, err := p.oneShot(p.node(addr), []byte("CLUSTER"), []byte("SLOTS"))
		if err == nil {
			if err = p.applySlots(addr, r); err == nil {
				return nil
			}
		}
		last = err
	}
	return last
}

// applySlots installs a CLUSTER SLOTS reply got from addr: entries
// [start, end, [host, port, id…], replicas…].
func (p *Proxy) applySlots(from string, r []byte) error {
	v, err := parseReply(r)
	if err != nil {
		return err
	}
	if v.isError() {
		return fmt.Errorf("%w: CLUSTER SLOTS on %s: %s", ErrTopology, from, v.text())
	}
	if v.typ != '*' || len(v.elems) == 0 {
		return fmt.Errorf("%w: CLUSTER SLOTS on %s: no slot is served", ErrTopology, from)
	}
	fromHost, _, _ := net.SplitHostPort(from)
	var table [numSlots]*node
	seen := map[*node]bool{}
	var masters []*node
	for _, e := range v.elems {
		if len(e.elems) < 3 || len(e.elems[2].elems) < 2 {
			return fmt.Errorf("%w: CLUSTER SLOTS on %s: malformed entry", ErrTopology, from)
		}
		lo, hi := e.elems[0].num, e.elems[1].num
		m := e.elems[2]
		host := m.elems[0].text()
		if host == "" || host == "?" {
			host = fromHost
		}
		if lo < 0 || hi >= numSlots || lo > hi {
			return fmt.Errorf("%w: CLUSTER SLOTS on %s: bad range %d-%d", ErrTopology, from, lo, hi)
		}
		n := p.node(net.JoinHostPort(host, strconv.FormatInt(m.elems[1].num, 10)))
		for i := lo; i <= hi; i++ {
			table[i] = n
		}
		if !seen[n] {
			seen[n] = true
			masters = append(masters, n)
		}
	}
	slices.SortFunc(masters, func(a, b *node) int { return strings.Compare(a.addr, b.addr) })
	old := p.cl.mastersList()
	for i := range table {
		p.cl.slots[i].Store(table[i])
	}
	p.cl.masters.Store(&masters)
	if !slices.Equal(old, masters) {
		addrs := make([]string, len(masters))
		for i, n := range masters {
			addrs[i] = n.addr
		}
		p.log.Info("cluster masters", zap.Strings("masters", addrs))
	}
	return nil
}

// route picks the node for a command: the master of its keys' slot in a
// cluster (any master without keys), the one master otherwise. It
// returns an error reply's text when there is none.
func (p *Proxy) route(args [][]byte) (*node, string) {
	if p.cl == nil {
		n := p.master.Load()
		if n == nil {
			return nil, "ERR " + ErrNoMaster.Error() + ": the sentinels name no master for " + p.up.MasterName
		}
		return n, ""
	}
	slot := p.slotOf(args, false)
	switch slot {
	case -1:
		return p.cl.anyMaster()
	case -2:
		p.stats.crossslot.Add(1)
		return nil, replyCrossSlot
	}
	n := p.cl.slots[slot].Load()
	if n == nil {
		p.refreshSoon()
		return nil, replyNotServed
	}
	return n, ""
}

// routeFirstKey is route by the first key alone (WATCH pins the node of
// its first key; the upstream judges the others).
func (p *Proxy) routeFirstKey(args [][]byte) (*node, string) {
	if p.cl == nil {
		return p.route(args)
	}
	slot := p.slotOf(args, true)
	if slot < 0 {
		return p.cl.anyMaster()
	}
	n := p.cl.slots[slot].Load()
	if n == nil {
		p.refreshSoon()
		return nil, replyNotServed
	}
	return n, ""
}

// slotOf returns the slot of the keys of args: -1 when it has none, -2
// when they hash to different slots. firstOnly looks at the first key.
func (p *Proxy) slotOf(args [][]byte, firstOnly bool) int {
	first, last, step, keys := p.keySpec(args)
	slot := -1
	see := func(k []byte) bool {
		s := KeySlot(k)
		if slot == -1 {
			slot = s
		} else if s != slot {
			slot = -2
			return false
		}
		return !firstOnly
	}
	if keys != nil {
		for _, k := range keys {
			if !see(k) {
				break
			}
		}
		return slot
	}
	if first <= 0 {
		return -1
	}
	if last < 0 {
		last += len(args)
	}
	if step <= 0 {
		step = 1
	}
	for i := first; i <= last && i < len(args); i += step {
		if !see(args[i]) {
			break
		}
	}
	return slot
}

// keySpec locates a command's keys: positions first..last by step, or
// the keys themselves (scripts, and commands whose keys move, which the
// upstream finds with COMMAND GETKEYS).
func (p *Proxy) keySpec(args [][]byte) (first, last, step int, keys [][]byte) {
	var buf [16]byte
	if len(args[0]) <= len(buf) {
		switch string(lower(buf[:0], args[0])) {
		case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
			if len(args) < 3 {
				return 0, 0, 0, nil
			}
			n, err := strconv.Atoi(string(args[2]))
			if err != nil || n < 0 || 3+n > len(args) {
				return 0, 0, 0, nil // the upstream words the error
			}
			return 0, 0, 0, args[3 : 3+n]
		}
	}
	if cmd := p.table.Lookup(args[0]); cmd != nil && len(cmd.Subcommands) == 0 && cmd.KeyNum == 0 {
		return cmd.FirstKey, cmd.LastKey, cmd.Step, nil
	}
	e, ok := p.meta.Load().lookup(args)
	if !ok {
		return 0, 0, 0, nil
	}
	if e.movable {
		return 0, 0, 0, p.getKeys(args)
	}
	return e.first, e.last, e.step, nil
}

// getKeys asks any master which arguments of args are keys.
func (p *Proxy) getKeys(args [][]byte) [][]byte {
	n, bad := p.cl.anyMaster()
	if bad != "" {
		return nil
	}
	q := append([][]byte{[]byte("COMMAND"), []byte("GETKEYS")}, args...)
	r, err := p.oneShot(n, q...)
	if err != nil {
		return nil
	}
	v, err := parseReply(r)
	if err != nil || v.typ != '*' {
		return nil
	}
	keys := make([][]byte, 0, len(v.elems))
	for _, e := range v.elems {
		keys = append(keys, e.str)
	}
	if len(keys) == 0 {
		return nil
	}
	return keys
}

// onErrorReply looks at an upstream error reply: it follows MOVED and ASK
// (and retries TRYAGAIN) in a cluster, outside transactions, and asks for
// a topology refresh when the reply says the topology changed. It returns
// the reply to give instead, or nil to give the error as it is.
func (p *Proxy) onErrorReply(s *session, args [][]byte, text string, pinned bool) []byte {
	switch {
	case p.up.Mode == Sentinel && strings.HasPrefix(text, "READONLY"):
		p.refreshSoon() // the master was demoted
		return nil
	case p.cl == nil:
		return nil
	case strings.HasPrefix(text, "CLUSTERDOWN"):
		p.refreshSoon()
		return nil
	case pinned:
		return nil // a transaction's reply is the node's own
	case strings.HasPrefix(text, "MOVED "), strings.HasPrefix(text, "ASK "), strings.HasPrefix(text, "TRYAGAIN"):
		return p.redirect(s, args, text)
	}
	return nil
}

// redirect follows MOVED / ASK up to maxRedirects times in a row, and
// retries TRYAGAIN for up to tryAgainFor (a TRYAGAIN comes from the node a
// slot is migrating to, after an ASK: the hops start again).
func (p *Proxy) redirect(s *session, args [][]byte, text string) []byte {
	var r []byte
	start := time.Now()
	delay := tryAgainBaseDelay
	for hops := 0; hops < maxRedirects; hops++ {
		kind, slot, addr := parseRedirect(text)
		addr = p.redirectAddr(addr)
		switch kind {
		case "MOVED":
			p.stats.moved.Add(1)
			n := p.node(addr)
			p.cl.slots[slot].Store(n)
			p.refreshSoon()
			r = p.runOn(s, n, false, args)
		case "ASK":
			p.stats.ask.Add(1)
			r = p.runOn(s, p.node(addr), true, args)
		case "TRYAGAIN":
			// A multi-key command during a slot's migration (it did not
			// run): wait a little, as cluster clients do, for as long
			// as tryAgainFor allows.
			if time.Since(start)+delay > tryAgainFor {
				return r
			}
			p.stats.tryagain.Add(1)
			time.Sleep(delay)
			delay = min(2*delay, tryAgainMaxDelay)
			hops = -1
			n, bad := p.route(args)
			if bad != "" {
				return appendError(nil, bad)
			}
			r = p.runOn(s, n, false, args)
		default:
			return r
		}
		if text = errText(r); text == "" {
			return r
		}
		if k, _, _ := parseRedirect(text); k == "" {
			return r
		}
	}
	return r
}

// redirectAddr is the address of a MOVED or ASK reply, given a host when
// it has none (Redis sends ":port" when it does not know its address;
// the seeds' host is the best guess).
func (p *Proxy) redirectAddr(addr string) string {
	if strings.HasPrefix(addr, ":") {
		host, _, _ := net.SplitHostPort(p.up.Addrs[0])
		addr = net.JoinHostPort(host, addr[1:])
	}
	return addr
}

// parseRedirect splits "MOVED 3999 127.0.0.1:6381" / "ASK …" /
// "TRYAGAIN …"; kind is "" for any other error.
func parseRedirect(text string) (kind string, slot int, addr string) {
	f := strings.Fields(text)
	if len(f) > 0 && f[0] == "TRYAGAIN" {
		return "TRYAGAIN", 0, ""
	}
	if len(f) != 3 || (f[0] != "MOVED" && f[0] != "ASK") {
		return "", 0, ""
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 0 || n >= numSlots {
		return "", 0, ""
	}
	return f[0], n, f[2]
}

// runOn runs one command on a pooled connection of n in the client's
// protocol (after ASKING when asking), and returns its reply, or an error
// reply when the connection failed.
func (p *Proxy) runOn(s *session, n *node, asking bool, args [][]byte) []byte {
	conn, err := n.get(s.c.W.Proto)
	if err != nil {
		return appendError(nil, p.upstreamError(n, err))
	}
	defer n.put(conn)
	if asking {
		conn.send([][]byte{[]byte("ASKING")})
	}
	conn.send(args)
	p.stats.forwarded.Add(1)
	if asking {
		if r, err := conn.read(nil); err == nil && !isOK(r) {
			conn.fail(fmt.Errorf("%w: ASKING answered %q", ErrUpstreamProtocol, trimCRLF(r)))
		}
	}
	r, err := conn.read(nil)
	if err != nil {
		return appendError(nil, p.upstreamError(n, err))
	}
	return r
}

// fanout runs the commands that concern every master of a cluster.
func (p *Proxy) fanout(s *session, k kind, args [][]byte) {
	w := s.c.W
	masters := p.cl.mastersList()
	if len(masters) == 0 {
		p.refreshSoon()
		w.Error(replyClusterDown)
		return
	}
	p.stats.fanouts.Add(1)
	all := func() [][]byte {
		out := make([][]byte, len(masters))
		for i, n := range masters {
			out[i] = p.runOn(s, n, false, args)
		}
		return out
	}
	firstError := func(rs [][]byte) []byte {
		for _, r := range rs {
			if errText(r) != "" {
				return r
			}
		}
		return nil
	}
	switch k {
	case kDBSize:
		rs := all()
		if e := firstError(rs); e != nil {
			w.Raw(e)
			return
		}
		var sum int64
		for _, r := range rs {
			v, err := parseReply(r)
			if err != nil || v.typ != ':' {
				w.Raw(r)
				return
			}
			sum += v.num
		}
		w.Int(sum)
	case kKeys:
		rs := all()
		if e := firstError(rs); e != nil {
			w.Raw(e)
			return
		}
		var elems [][]byte
		for _, r := range rs {
			v, err := parseReply(r)
			if err != nil || v.typ != '*' {
				w.Raw(r)
				return
			}
			for _, e := range v.elems {
				elems = append(elems, e.raw)
			}
		}
		w.Array(len(elems))
		for _, e := range elems {
			w.Raw(e)
		}
	case kFlush:
		rs := all()
		if e := firstError(rs); e != nil {
			w.Raw(e)
			return
		}
		p.noteWrite(0, args, rs[len(rs)-1])
		w.Raw(rs[len(rs)-1])
	case kRandom:
		var r []byte
		for _, i := range rand.Perm(len(masters)) {
			r = p.runOn(s, masters[i], false, args)
			if v, err := parseReply(r); err != nil || !v.null {
				break // a key, or an error
			}
		}
		w.Raw(r)
	case kScript:
		if len(args) >= 2 && (strings.EqualFold(string(args[1]), "load") || strings.EqualFold(string(args[1]), "flush")) {
			rs := all()
			if e := firstError(rs); e != nil {
				w.Raw(e)
				return
			}
			w.Raw(rs[0])
			return
		}
		n, bad := p.cl.anyMaster()
		if bad != "" {
			w.Error(bad)
			return
		}
		w.Raw(p.runOn(s, n, false, args))
	case kScan:
		p.scan(s, masters, args)
	}
}

// scanShift: a proxy SCAN cursor is the master's cursor times 1024 plus
// the master's index in the address-sorted list (so up to 1024 masters).
// Cursor 0 starts at master 0; when a master's scan ends, the next call
// starts the next master; 0 comes back after the last.
const scanShift = 1024

func (p *Proxy) scan(s *session, masters []*node, args [][]byte) {
	w := s.c.W
	if len(args) < 2 {
		w.Raw(p.runOn(s, masters[0], false, args)) // the arity error
		return
	}
	cur, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		w.Error(replyInvalidCur)
		return
	}
	idx, nc := int(cur%scanShift), cur/scanShift
	if idx >= len(masters) {
		w.Error(replyInvalidCur)
		return
	}
	q := slices.Clone(args)
	q[1] = strconv.AppendUint(nil, nc, 10)
	r := p.runOn(s, masters[idx], false, q)
	v, err := parseReply(r)
	if err != nil || v.typ != '*' || len(v.elems) != 2 {
		w.Raw(r)
		return
	}
	next, err := strconv.ParseUint(v.elems[0].text(), 10, 64)
	if err != nil || next > (math.MaxUint64-uint64(scanShift))/scanShift {
		w.Raw(r)
		return
	}
	var out uint64
	switch {
	case next != 0:
		out = next*scanShift + uint64(idx)
	case idx+1 < len(masters):
		out = uint64(idx + 1)
	}
	w.Array(2)
	w.BulkString(strconv.FormatUint(out, 10))
	w.Raw(v.elems[1].raw)
}
