package proxy

// Pub/Sub through the proxy.
//
// A client's first SUBSCRIBE, PSUBSCRIBE or SSUBSCRIBE gives it an
// upstream connection of its own (subConn), of its protocol, pinned until
// it is no longer subscribed or leaves. Its commands of the Pub/Sub
// context go there unbatched, and a goroutine reads everything the
// upstream sends on it (confirmations, messages, replies) and hands each
// frame to the client's outbox (resp.Conn.Push), so that a message reaches
// the client when it is published, and in order with the replies. The
// outbox is bounded by the proxy's client-output-buffer-limit pubsub: a
// subscriber that does not read is closed, and the reader never waits for
// it, so the upstream connection is always drained.
//
// A command the Pub/Sub context does not take (RESP2), or that the proxy
// answers itself (RESP3), first waits for a barrier: an ECHO of a token
// on the subscribed connection, whose answer comes after every reply
// before it. When it comes back as a bulk string and no subscription is
// left, the connection was unsubscribed from everything: the reader stops
// and the connection goes back to its pool, and the command runs as
// usual. Otherwise the RESP2 command is sent to the subscribed connection,
// whose upstream answers it as Redis does in that context, and a RESP3
// one runs as usual after the messages relayed so far.
//
// An upstream connection that breaks closes the client's, as the
// upstream's restart would close a subscriber's.

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/oncekv/oncekv/resp"
)

// subConn is a subscribed client's own upstream connection.
type subConn struct {
	conn *upConn
	c    *resp.Conn

	mu sync.Mutex
	// total and shard count the subscriptions the upstream confirmed:
	// channels and patterns, and shard channels.
	total, shard int64
	// tok is the pending barrier's expected reply; ack receives its
	// outcome (ackRefused, ackSubscribed or ackStopped).
	tok []byte
	ack chan int
	// shown has an entry per command sent whose reply is not a RESP3
	// push, oldest first: false when that reply is not shown (a
	// SELECT or HELLO of the proxy's own, sent after a barrier, or a
	// command whose client turned its replies off with CLIENT REPLY).
	// The upstream sends such replies in order, pushes between them.
	shown []bool
	// resetting: a RESET was sent; its +RESET ends the reader.
	resetting bool

	// proto is the connection's protocol, for the reader (followProto
	// changes it).
	proto atomic.Int32

	leaving atomic.Bool   // the proxy closes the connection itself
	done    chan struct{} // closed when the reader returned
}

// barrierSeq numbers the barriers' tokens.
var barrierSeq atomic.Int64

// subscribe starts a client's subscription on a connection of its own
// (args is its first SUBSCRIBE, PSUBSCRIBE or SSUBSCRIBE).
func (p *Proxy) subscribe(s *session, args [][]byte) {
	n, bad := p.route(args)
	if bad != "" {
		s.c.W.Error(bad)
		return
	}
	conn, err := n.get(s.c.W.Proto)
	if err != nil {
		s.c.W.Error(p.upstreamError(n, err))
		return
	}
	if p.cl == nil && conn.db != s.c.DB {
		conn.db = s.c.DB
		if r, err := conn.do(nil, selectArgs(s.c.DB)...); err != nil || !isOK(r) {
			p.drop(conn) // its database is not known
			if err == nil {
				err = ErrUpstreamProtocol
			}
			s.c.W.Error(p.upstreamError(n, err))
			return
		}
	}
	sub := &subConn{conn: conn, c: s.c, done: make(chan struct{})}
	sub.proto.Store(int32(conn.proto))
	s.sub = sub
	p.stats.pinned.Add(1)
	p.stats.subscribers.Add(1)
	s.c.TakePushes()
	s.c.SetSubscribed(true)
	go sub.relay(p)
	sub.forward(p, args)
}

// send writes one command to the subscribed connection.
func (sub *subConn) send(p *Proxy, args [][]byte) {
	c := sub.conn
	p.stats.forwarded.Add(1)
	if err := writeCommand(c.bw, args); err == nil {
		_ = c.bw.Flush() // a failure: the reader sees the connection end
	}
}

// relay reads what the upstream sends on the subscribed connection and
// pushes it to the client, until the connection ends.
func (sub *subConn) relay(p *Proxy) {
	defer close(sub.done)
	var buf []byte
	for {
		var err error
		buf, err = readReply(sub.conn.br, buf[:0])
		if err != nil {
			if !sub.leaving.Load() {
				// The upstream closed or broke: so does the client.
				_ = p.upstreamError(sub.conn.node, err)
				sub.conn.nc.Close()
				sub.c.Server().Kill(sub.c.ID)
			}
			return
		}
		sub.mu.Lock()
		switch {
		case sub.resetting && string(buf) == "+RESET\r\n":
			sub.mu.Unlock()
			return
		case sub.tok != nil && bytes.Equal(buf, sub.tok):
			ack := sub.ack
			sub.tok, sub.ack = nil, nil
			if sub.total == 0 && sub.shard == 0 {
				sub.mu.Unlock()
				ack <- ackStopped
				return // the connection goes back to its pool
			}
			sub.mu.Unlock()
			ack <- ackSubscribed
			continue
		case sub.tok != nil && len(buf) > 0 && buf[0] == '-' && bytes.Contains(buf, []byte("'echo'")):
			// RESP2 and still subscribed: the barrier's ECHO is refused.
			ack := sub.ack
			sub.tok, sub.ack = nil, nil
			sub.mu.Unlock()
			ack <- ackRefused
			continue
		case len(sub.shown) > 0 && !sub.isPush(buf):
			show := sub.shown[0]
			sub.shown = sub.shown[1:]
			if !show {
				sub.mu.Unlock()
				continue
			}
		}
		sub.count(buf)
		sub.mu.Unlock()
		if !sub.c.Push(func(w *resp.Writer) {
			if w.Proto == 2 && buf[0] == '>' {
				// Sent before the upstream took the client's HELLO 2: a
				// message is a push of strings and integers, the same
				// as an array of them in RESP2.
				buf[0] = '*'
			}
			w.Raw(buf)
		}) {
			// The client is gone or over its output buffer limit.
			sub.leaving.Store(true)
			sub.conn.nc.Close()
			return
		}
	}
}

// count notes the subscription counts a (un)subscribe confirmation
// carries; sub.mu is held.
func (sub *subConn) count(b []byte) {
	if len(b) == 0 || (b[0] != '*' && b[0] != '>') {
		return
	}
	v, err := parseReply(b)
	if err != nil || len(v.elems) != 3 || v.elems[2].typ != ':' {
		return
	}
	switch strings.ToLower(v.elems[0].text()) {
	case "subscribe", "unsubscribe", "psubscribe", "punsubscribe":
		sub.total = v.elems[2].num
	case "ssubscribe", "sunsubscribe":
		sub.shard = v.elems[2].num
	}
}

// idle reports whether the confirmations relayed so far leave no
// subscription (more may be on their way).
func (sub *subConn) idle() bool {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	return sub.total == 0 && sub.shard == 0
}

// barrier waits until every reply sent before it on the subscribed
// connection was relayed (see the file's comment). It reports whether the
// connection is no longer subscribed (the reader stopped); false also when
// the connection ended.
func (sub *subConn) barrier(p *Proxy) bool {
	tok := "oncekv-proxy-barrier-" + strconv.FormatInt(barrierSeq.Add(1), 10)
	ack := make(chan int, 1)
	sub.mu.Lock()
	sub.tok = []byte("$" + strconv.Itoa(len(tok)) + "\r\n" + tok + "\r\n")
	sub.ack = ack
	sub.mu.Unlock()
	c := sub.conn
	if writeCommand(c.bw, bs("ECHO", tok)) != nil || c.bw.Flush() != nil {
		<-sub.done
		return false
	}
	var r int
	select {
	case r = <-ack:
	case <-sub.done:
		// The reader stopped: on the barrier's token (its ack is sent
		// before), or because the connection ended.
		select {
		case r = <-ack:
		default:
			return false
		}
	}
	if r != ackStopped {
		return false
	}
	<-sub.done
	return true
}

// The outcomes of a barrier.
const (
	ackRefused    = iota // RESP2, still subscribed: ECHO was refused
	ackSubscribed        // the token came back; subscriptions are left
	ackStopped           // the token came back, none left: the reader stopped
)

// syncDB switches the subscribed connection to the client's database
// (RESP3: its commands run there). It reports false when the connection
// turned out to be unsubscribed and went back (endSub): the caller then
// serves the command as usual.
func (s *session) syncDB() bool {
	sub := s.sub
	if s.p.cl != nil || sub.conn.db == s.c.DB {
		return true
	}
	if sub.barrier(s.p) {
		s.endSub(true)
		return false
	}
	sub.own(s.p, selectArgs(s.c.DB))
	sub.conn.db = s.c.DB
	return true
}

// own sends a command of the proxy's own after a barrier: its reply is
// not shown.
func (sub *subConn) own(p *Proxy, args [][]byte) {
	sub.mu.Lock()
	sub.shown = append(sub.shown, false)
	sub.mu.Unlock()
	sub.send(p, args)
}

// forward sends a client's command to the subscribed connection. A reply
// that is not a push is noted (shown), to be dropped when the client's
// CLIENT REPLY says so; pushes are sent whatever it says, as Redis 7.0
// sends them.
func (sub *subConn) forward(p *Proxy, args [][]byte) {
	if !pushReplies(args) {
		sub.mu.Lock()
		sub.shown = append(sub.shown, !sub.c.Silent())
		sub.mu.Unlock()
	}
	sub.send(p, args)
}

// isPush reports whether b is a push: a RESP3 push, or on a RESP2
// connection a Pub/Sub confirmation or message (Redis sends those as
// arrays).
func (sub *subConn) isPush(b []byte) bool {
	if len(b) == 0 || b[0] == '>' {
		return true
	}
	if b[0] != '*' || sub.proto.Load() != 2 {
		return false
	}
	v, err := parseReply(b)
	if err != nil || len(v.elems) == 0 {
		return false
	}
	switch strings.ToLower(v.elems[0].text()) {
	case "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe",
		"message", "pmessage", "smessage":
		return true
	}
	return false
}

// pushReplies reports whether the RESP3 replies to args are pushes: those
// of the (un)subscribe commands, but for a SUBSCRIBE without a channel
// (an arity error).
func pushReplies(args [][]byte) bool {
	switch string(lower(nil, args[0])) {
	case "unsubscribe", "punsubscribe", "sunsubscribe":
		return true
	case "subscribe", "psubscribe", "ssubscribe":
		return len(args) > 1
	}
	return false
}

// followProto switches the subscribed connection to the protocol the
// client's HELLO chose (after a barrier), so that the upstream answers it
// in its protocol and context from then on.
func (s *session) followProto() {
	sub := s.sub
	if sub == nil || sub.conn.proto == s.c.W.Proto {
		return
	}
	sub.conn.proto = s.c.W.Proto
	sub.own(s.p, bs("HELLO", strconv.Itoa(s.c.W.Proto)))
	sub.proto.Store(int32(s.c.W.Proto))
}

// endSub ends the client's subscribed connection: back to its pool when
// the reader stopped cleanly on an unsubscribed connection (pool), closed
// otherwise.
func (s *session) endSub(pool bool) {
	sub := s.sub
	if sub == nil {
		return
	}
	if !pool {
		sub.leaving.Store(true)
		sub.conn.nc.Close()
	}
	<-sub.done
	if pool {
		sub.conn.node.put(sub.conn)
	} else {
		s.p.drop(sub.conn)
	}
	s.sub = nil
	s.p.stats.pinned.Add(-1)
	s.p.stats.subscribers.Add(-1)
	s.c.SetSubscribed(false)
}

// serveSubscribed runs a command of a client that has a subscribed
// connection (outside MULTI).
func (p *Proxy) serveSubscribed(s *session, k kind, args [][]byte) {
	sub, c := s.sub, s.c
	name := string(lower(nil, args[0]))
	if k != kSubscribe && k != kReset && sub.idle() && sub.barrier(p) {
		// Unsubscribed from everything: the connection goes back.
		s.endSub(true)
		c.SyncPushes()
		p.serveCommand(s, k, args)
		return
	}
	switch {
	case k == kSubscribe && p.cl != nil:
		// One node takes the subscriptions; a shard channel's slot must
		// be one of its own (the node answers MOVED otherwise).
		if _, bad := p.route(args); bad != "" {
			if sub.barrier(p) {
				s.endSub(true) // it had unsubscribed from everything
			}
			c.SyncPushes()
			c.W.Error(bad)
			return
		}
		sub.forward(p, args)
		return
	case c.W.Proto == 3 && k == kForward:
		if !s.syncDB() {
			c.SyncPushes()
			p.serveCommand(s, k, args)
			return
		}
		sub.forward(p, args)
		return
	case k == kSubscribe, strings.HasSuffix(name, "unsubscribe") && k == kForward, name == "ping",
		c.W.Proto == 3 && k == kPure:
		sub.forward(p, args)
		return
	case k == kReset:
		// The upstream ends the subscriptions, after the replies before.
		sub.mu.Lock()
		sub.resetting = true
		sub.mu.Unlock()
		sub.send(p, args)
		<-sub.done
		s.endSub(false)
		c.SyncPushes()
		p.serveCommand(s, k, args)
		return
	}
	if sub.barrier(p) {
		s.endSub(true)
		c.SyncPushes()
		p.serveCommand(s, k, args)
		return
	}
	if c.W.Proto == 2 && k != kQuit {
		// The upstream refuses it in the Pub/Sub context, as Redis does.
		sub.forward(p, args)
		return
	}
	c.SyncPushes()
	p.serveCommand(s, k, args)
	s.followProto()
}
