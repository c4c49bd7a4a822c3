package proxy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/oncekv/oncekv/resp"
)

// selectDB is SELECT outside MULTI. With one server the upstream judges
// the index (its databases setting is the one that counts) on the
// client's connection, and the proxy remembers the database on success;
// in a cluster any master answers, as Redis Cluster does: +OK for 0,
// "SELECT is not allowed in cluster mode" otherwise.
func (p *Proxy) selectDB(s *session, args [][]byte) {
	w := s.c.W
	n, bad := p.route(args)
	if bad != "" {
		w.Error(bad)
		return
	}
	if p.cl != nil {
		w.Raw(p.runOn(s, n, false, args))
		return
	}
	conn := s.pin
	if conn == nil {
		var err error
		if conn, err = n.get(s.c.W.Proto); err != nil {
			w.Error(p.upstreamError(n, err))
			return
		}
		defer n.put(conn)
	}
	r, err := conn.do(nil, args...)
	if err != nil {
		if conn == s.pin && s.holdsTx() {
			s.loseTx(w.Len())
		}
		w.Error(p.upstreamError(n, err))
		return
	}
	if isOK(r) {
		db, _ := resp.ParseInt(args[1])
		conn.db = int(db)
		s.c.Select(int(db))
	}
	w.Raw(r)
}

// blocking runs a command that may block (BLPOP, XREAD BLOCK, WAIT…) with
// resp's Conn.Block, so that the client's disconnect is noticed while it
// waits: the upstream connection is then closed, which ends the wait
// upstream too.
func (p *Proxy) blocking(s *session, args [][]byte) {
	p.stats.blockedCommands.Add(1)
	n, bad := p.route(args)
	if bad != "" {
		s.c.W.Error(bad)
		return
	}
	conn, own := s.pin, false
	if conn == nil || (p.cl != nil && conn.node != n) {
		var err error
		if conn, err = n.get(s.c.W.Proto); err != nil {
			s.c.W.Error(p.upstreamError(n, err))
			return
		}
		own = true
	}
	s.touch(args)
	s.c.Block(func(gone <-chan struct{}) {
		if p.cl == nil && conn.db != s.c.DB {
			conn.db = s.c.DB
			if r, err := conn.do(nil, selectArgs(s.c.DB)...); err == nil && !isOK(r) {
				conn.fail(fmt.Errorf("%w: SELECT %d answered %q", ErrUpstreamProtocol, s.c.DB, trimCRLF(r)))
			}
		}
		conn.send(args)
		p.stats.forwarded.Add(1)
		done := make(chan struct{})
		var r []byte
		var err error
		go func() {
			defer close(done)
			r, err = conn.read(nil)
		}()
		select {
		case <-done:
		case <-gone:
			leave(conn, done)
			if own {
				n.put(conn)
			}
			return // no one to answer, and no upstream error
		}
		if own {
			n.put(conn)
		}
		if err != nil {
			if conn == s.pin && s.holdsTx() {
				// WATCH's connection (loseTx): no reply, and the
				// connection closes once this returns.
				s.loseTx(s.c.W.Len())
				s.reset()
				_ = p.upstreamError(n, err) // counted; the idle ones go too
				return
			}
			s.c.W.Error(p.upstreamError(n, err))
			return
		}
		if t := errText(r); t != "" {
			if rr := p.onErrorReply(s, args, t, conn == s.pin); rr != nil {
				r = rr
			}
		}
		s.c.W.Raw(r)
	})
}

// leave ends the wait of a blocking command on conn whose client left:
// closing the connection ends it upstream too; done is closed once the
// goroutine reading conn returned. The connection is then marked broken,
// so that it is never pooled again, also when its reply came in the
// meantime (the read succeeded, on a connection closed under it).
func leave(conn *upConn, done <-chan struct{}) {
	conn.nc.Close()
	<-done
	conn.fail(ErrClientGone)
}

// waitChannel is the channel of the PUBLISH that WAIT sends first (one
// server), waitKey the prefix of the key it writes (cluster).
const (
	waitChannel = "oncekv:proxy:wait"
	waitKey     = "oncekv:proxy:wait:"
)

// wait is WAIT numreplicas timeout. Redis counts the replicas that have
// the writes of the connection WAIT is sent on; the client's writes went
// through pooled connections, so the proxy first makes a write of its own
// on one connection per master, which moves that connection's replication
// offset to the master's current one (covering every write the client
// made before), then sends WAIT there, and answers the smallest count:
// every master the client may have written to has its writes on that many
// replicas. The write is a PUBLISH with one server (Redis propagates it to
// the replicas); in a cluster, where PUBLISH goes over the cluster bus
// instead, a SET with a 1 s expiry of a key in the master's slots. The
// masters are asked at once; the wait ends early if the client leaves.
func (p *Proxy) wait(s *session, args [][]byte) {
	var nodes []*node
	if p.cl != nil {
		nodes = p.cl.mastersList()
		if len(nodes) == 0 {
			s.c.W.Error(replyClusterDown)
			return
		}
	} else {
		n, bad := p.route(args)
		if bad != "" {
			s.c.W.Error(bad)
			return
		}
		nodes = []*node{n}
	}
	if len(args) != 3 {
		s.c.W.Raw(p.runOn(s, nodes[0], false, args)) // the arity error
		return
	}
	proto := s.c.W.Proto
	s.c.Block(func(gone <-chan struct{}) {
		replies := make([][]byte, len(nodes))
		conns := make([]*upConn, len(nodes))
		var wg sync.WaitGroup
		for i, n := range nodes {
			conn, err := n.get(proto)
			if err != nil {
				replies[i] = appendError(nil, p.upstreamError(n, err))
				continue
			}
			conns[i] = conn
			wg.Add(1)
			go func() {
				defer wg.Done()
				replies[i] = p.waitOn(conn, n, args)
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-gone:
			for _, c := range conns {
				if c != nil {
					c.nc.Close()
				}
			}
			<-done
			for _, c := range conns {
				if c != nil {
					c.fail(ErrClientGone) // see leave
				}
			}
		}
		for i, c := range conns {
			if c != nil {
				nodes[i].put(c)
			}
		}
		p.stats.forwarded.Add(int64(len(nodes)))
		least := int64(-1)
		for _, r := range replies {
			v, err := parseReply(r)
			if err != nil || v.typ != ':' {
				s.c.W.Raw(r) // an error: the first one
				return
			}
			if least < 0 || v.num < least {
				least = v.num
			}
		}
		s.c.W.Int(least)
	})
}

// waitOn sends WAIT's own write, then WAIT (args), on conn, a connection
// of n, and returns WAIT's reply, or the error that kept it from
// counting. In a cluster the write is to a key of a slot the map gives n;
// when n answers it with MOVED (the slot moved: the map is behind) or ASK
// (the slot is moving away, and the key is not on n), the write did not
// happen on n and the WAIT after it counted nothing of the client's: the
// map learns of the MOVED, and both are sent again with a key of another
// slot, up to maxRedirects times. The redirection is never the client's
// answer (a client of the proxy is not a cluster client).
func (p *Proxy) waitOn(conn *upConn, n *node, args [][]byte) []byte {
	var avoid map[int]bool // the slots that redirected
	for try := 0; ; try++ {
		mark := bs("PUBLISH", waitChannel, "")
		if p.cl != nil {
			mark = bs("SET", p.waitKeyOn(n, avoid), "", "PX", "1000")
		}
		conn.send(mark)
		conn.send(args)
		r, err := conn.read(nil)
		if err != nil {
			_, _ = conn.read(nil)
			return appendError(nil, "ERR "+err.Error())
		}
		if t := errText(r); t != "" {
			_, _ = conn.read(nil) // WAIT's, which counted nothing of ours
			kind, slot, addr := parseRedirect(t)
			if p.cl == nil || (kind != "MOVED" && kind != "ASK") || try >= maxRedirects {
				return r
			}
			if kind == "MOVED" {
				p.stats.moved.Add(1)
				p.cl.slots[slot].Store(p.node(p.redirectAddr(addr)))
				p.refreshSoon()
			} else {
				p.stats.ask.Add(1)
			}
			if avoid == nil {
				avoid = map[int]bool{}
			}
			avoid[slot] = true
			continue
		}
		if r, err = conn.read(nil); err != nil {
			return appendError(nil, "ERR "+err.Error())
		}
		return r
	}
}

// waitKeyOn is a key of WAIT's write whose slot the map gives n, but for
// the slots in avoid.
func (p *Proxy) waitKeyOn(n *node, avoid map[int]bool) string {
	for i := 0; i < 1<<18; i++ {
		k := waitKey + "{" + strconv.Itoa(i) + "}"
		if slot := KeySlot([]byte(k)); p.cl.slots[slot].Load() == n && !avoid[slot] {
			return k
		}
	}
	return waitKey // no slot of n's found: the node answers MOVED
}

// The INFO sections the local command server shows in proxy mode (those
// about the store — persistence, replication, keyspace — are the
// upstream's; keyspace is read from it).
var localInfo = []struct {
	name string
	dflt bool
}{
	{"server", true}, {"clients", true}, {"memory", true}, {"stats", true}, {"cpu", true},
	{"modules", true}, {"commandstats", false}, {"errorstats", true}, {"cluster", true}, {"once", true}, {"proxy", true},
}

// info is INFO: the proxy's own sections, then the upstream's keyspace
// (summed over the masters of a cluster).
func (p *Proxy) info(s *session, args [][]byte) {
	want := map[string]bool{}
	all := len(args) == 1
	dflt := all
	for _, a := range args[1:] {
		switch name := strings.ToLower(string(a)); name {
		case "all", "everything":
			want["commandstats"] = true
			dflt = true
		case "default":
			dflt = true
		default:
			want[name] = true
		}
	}
	q := [][]byte{[]byte("INFO")}
	for _, sec := range localInfo {
		if want[sec.name] || (dflt && sec.dflt) {
			q = append(q, []byte(sec.name))
		}
	}
	var text string
	if len(q) > 1 {
		// The local server writes its reply; take its text.
		w := s.c.W
		tmp := resp.NewWriter(2)
		s.c.W = tmp
		p.local.Serve(s.c, q)
		s.c.W = w
		if v, err := parseReply(tmp.Bytes()); err == nil && v.typ == '$' {
			text = v.text()
		}
	}
	if want["keyspace"] || dflt {
		if text != "" {
			text += "\r\n"
		}
		text += "# Keyspace\r\n" + p.keyspace(s)
	}
	s.c.W.Verbatim(text)
}

// keyspace is the upstream's INFO keyspace lines, summed per database
// over a cluster's masters (avg_ttl is not summable: 0).
func (p *Proxy) keyspace(s *session) string {
	var nodes []*node
	if p.cl != nil {
		nodes = p.cl.mastersList()
	} else if n := p.master.Load(); n != nil {
		nodes = []*node{n}
	}
	type dbStat struct{ keys, expires int64 }
	sums := map[int]*dbStat{}
	var direct string
	for _, n := range nodes {
		r, err := p.oneShot(n, []byte("INFO"), []byte("keyspace"))
		if err != nil {
			continue
		}
		v, err := parseReply(r)
		if err != nil || v.typ != '$' {
			continue
		}
		body := v.text()
		if len(nodes) == 1 {
			_, direct, _ = strings.Cut(body, "\r\n") // after "# Keyspace"
			return direct
		}
		for _, line := range strings.Split(body, "\r\n") {
			name, rest, ok := strings.Cut(line, ":")
			if !ok || !strings.HasPrefix(name, "db") {
				continue
			}
			db, err := strconv.Atoi(name[2:])
			if err != nil {
				continue
			}
			st := sums[db]
			if st == nil {
				st = &dbStat{}
				sums[db] = st
			}
			for _, kv := range strings.Split(rest, ",") {
				k, val, _ := strings.Cut(kv, "=")
				x, _ := strconv.ParseInt(val, 10, 64)
				switch k {
				case "keys":
					st.keys += x
				case "expires":
					st.expires += x
				}
			}
		}
	}
	dbs := make([]int, 0, len(sums))
	for db := range sums {
		dbs = append(dbs, db)
	}
	slices.Sort(dbs)
	var b strings.Builder
	for _, db := range dbs {
		fmt.Fprintf(&b, "db%d:keys=%d,expires=%d,avg_ttl=0\r\n", db, sums[db].keys, sums[db].expires)
	}
	return b.String()
}

// infoLines is INFO's proxy section.
func (p *Proxy) infoLines() [][2]string {
	i := func(n int64) string { return strconv.FormatInt(n, 10) }
	out := [][2]string{
		{"proxy_mode", p.up.Mode.String()},
		{"proxy_upstream", p.up.String()},
	}
	switch {
	case p.cl != nil:
		masters := p.cl.mastersList()
		addrs := make([]string, len(masters))
		for k, n := range masters {
			addrs[k] = n.addr
		}
		served := 0
		for k := range p.cl.slots {
			if p.cl.slots[k].Load() != nil {
				served++
			}
		}
		out = append(out, [2]string{"proxy_cluster_masters", strings.Join(addrs, ",")},
			[2]string{"proxy_cluster_slots_served", strconv.Itoa(served)})
	default:
		m := ""
		if n := p.master.Load(); n != nil {
			m = n.addr
		}
		out = append(out, [2]string{"proxy_upstream_master", m})
	}
	p.liveMu.Lock()
	live := len(p.live)
	p.liveMu.Unlock()
	st := &p.stats
	return append(out,
		[2]string{"proxy_upstream_connections", strconv.Itoa(live)},
		[2]string{"proxy_upstream_dials", i(st.dials.Load())},
		[2]string{"proxy_upstream_dial_errors", i(st.dialErrors.Load())},
		[2]string{"proxy_upstream_errors", i(st.upstreamErrors.Load())},
		[2]string{"proxy_forwarded_commands", i(st.forwarded.Load())},
		[2]string{"proxy_fanout_commands", i(st.fanouts.Load())},
		[2]string{"proxy_blocking_commands", i(st.blockedCommands.Load())},
		[2]string{"proxy_once_commands", i(st.onceCommands.Load())},
		[2]string{"proxy_once_notices", i(st.noticesSent.Load())},
		[2]string{"proxy_once_notices_dropped", i(st.noticesDropped.Load())},
		[2]string{"proxy_refused_commands", i(st.refused.Load())},
		[2]string{"proxy_pinned_connections", i(st.pinned.Load())},
		[2]string{"proxy_pubsub_connections", i(st.subscribers.Load())},
		[2]string{"proxy_lost_transactions", i(st.lostTx.Load())},
		[2]string{"proxy_moved_redirections", i(st.moved.Load())},
		[2]string{"proxy_ask_redirections", i(st.ask.Load())},
		[2]string{"proxy_tryagain_retries", i(st.tryagain.Load())},
		[2]string{"proxy_crossslot_replies", i(st.crossslot.Load())},
		[2]string{"proxy_topology_refreshes", i(st.refreshes.Load())},
		[2]string{"proxy_topology_refresh_errors", i(st.refreshErrors.Load())},
	)
}
