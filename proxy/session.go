package proxy

// A client's session: the upstream connections it uses and its
// transaction. It lives in resp.Conn.Watch, the slot resp keeps for the
// WATCH implementation's per-connection state (the proxy is the WATCH
// implementation here), and is only touched by the connection's goroutine.
//
// Pipelining. resp calls Serve once per command and sends the replies of a
// pipeline together, once no complete command is left in what it read,
// after waiting for every resp.Waiter the commands registered (Conn.Await).
// The proxy uses that: a forwarded command is only written to its upstream
// connection's buffer, and its place in the client's reply buffer
// remembered (an op). The session registers itself as a Waiter once per
// batch; when resp is about to send, Wait (settle) flushes every upstream
// connection of the batch, reads the replies in order and splices each
// into its place, between the replies the proxy wrote itself. So a client
// pipeline of N commands costs one upstream round trip, not N, and the
// replies keep their order. A command whose effect the next one depends on
// through another path (SELECT, a transaction, ONCE, a fan-out) settles
// the batch first.

import (
	"context"
	"fmt"
	"time"

	"github.com/oncekv/oncekv/resp"
)

// maxBatch bounds the commands of one batch: past it the batch is settled
// at once, so a client that pipelines a lot holds bounded memory.
const maxBatch = 1024

// op is one forwarded command waiting for its reply.
type op struct {
	// at is where its reply goes in the client's reply buffer.
	at   int
	conn *upConn
	// args are kept to follow a MOVED or ASK redirection.
	args [][]byte
	// internal marks a command the proxy sent itself (SELECT, ASKING,
	// MULTI): its reply must be +OK and is not shown.
	internal bool
	// queued marks a command queued in a cluster transaction that the
	// proxy may run again elsewhere (see session.txRedirected).
	queued bool
	// silent marks a command whose client turned its reply off (CLIENT
	// REPLY OFF or SKIP): it runs, and its reply is not shown.
	silent bool
}

type session struct {
	p *Proxy
	c *resp.Conn

	ops   []op
	held  []*upConn // the connections of the batch
	armed bool      // registered as the batch's Waiter
	buf   []byte    // the batch's replies
	ends  []int     // where each shown reply ends in buf
	tail  []byte    // the local replies after the batch's first op

	// The transaction: pin is the upstream connection WATCH or MULTI
	// pinned; watching after a successful WATCH; multi after MULTI was
	// accepted upstream; pendingMulti (cluster) after MULTI was accepted
	// here, before the first command tells which node runs it.
	pin          *upConn
	pinAsking    bool // the pin followed an ASK: MULTI needs ASKING
	watching     bool
	multi        bool
	pendingMulti bool
	// dirty: a command was refused while queueing (EXEC aborts).
	dirty bool
	// lostWatch: the WATCHed connection had to go (HELLO switched the
	// protocol in between): the next EXEC fails as if a watched key
	// changed, the one safe answer.
	lostWatch bool
	// queued counts the commands queued upstream; local are the commands
	// queued here (run at EXEC), selects the SELECTs queued upstream.
	queued  int
	local   []queuedLocal
	selects []queuedSelect
	// touches are the queued commands that remove keys (DEL, FLUSHDB…),
	// announced to the ONCE handler after EXEC.
	touches []queuedTouch
	// A cluster transaction without WATCH can run again where its slot
	// is when the slot moves (tx.go, replayMoved): replayable says it is
	// one, txSlot is its slot (that of its first command's keys), txCmds
	// its commands queued upstream, txMoved the first redirection a
	// queued command got for txSlot (answered +QUEUED), txErr that one
	// got another error.
	replayable bool
	txSlot     int
	txCmds     [][][]byte
	txMoved    string
	txErr      bool
	// lost: the pinned connection broke while it held the client's
	// WATCH or MULTI (the upstream restarted, the network failed), so
	// the upstream forgot them. The client's connection is closed, as
	// the upstream's own would have been, after the replies to the
	// commands before the one that found it broken (they end at lostAt
	// in c.W): see loseTx.
	lost   bool
	lostAt int
	// sub is the client's subscribed connection (pubsub.go).
	sub *subConn
}

// queuedTouch is a queued command that removes keys; pos is its index
// among the upstream's EXEC replies.
type queuedTouch struct {
	pos  int
	args [][]byte
}

// queuedLocal is a command the proxy answers itself, queued in MULTI; pos
// is its index in the EXEC reply.
type queuedLocal struct {
	pos  int
	args [][]byte
}

// queuedSelect is a SELECT queued upstream; pos is its index among the
// upstream's EXEC replies.
type queuedSelect struct {
	pos int
	db  int
}

func (p *Proxy) sessionOf(c *resp.Conn) *session {
	if s, ok := c.Watch.(*session); ok {
		return s
	}
	s := &session{p: p, c: c}
	c.Watch = s
	p.stats.sessions.Add(1)
	return s
}

func (s *session) inTx() bool { return s.multi || s.pendingMulti }

// holdsTx reports whether the pinned connection holds state of the
// client's that the upstream keeps per connection: WATCHed keys, or a
// MULTI with its queued commands.
func (s *session) holdsTx() bool { return s.pin != nil && (s.watching || s.multi) }

// loseTx handles the pinned connection's failure while it held the
// client's transaction (holdsTx): the WATCHes and queued commands are
// gone upstream, and no answer the proxy could give keeps the client's
// picture of its transaction right (an error to a queued command, or to
// EXEC, would read as "not run", and the commands after it would run
// outside the transaction the client believes open). So the proxy does
// what the upstream's restart does to its own clients: it closes the
// client's connection, without a reply to the command that found the
// connection broken (at, its place in c.W) or to any after it. Client
// libraries reconnect, and know their transaction is gone. The same holds
// when the connection of a cluster transaction run again where its slot
// went (runTx) breaks after its EXEC was written: it may have run, and an
// error reply would say it did not.
func (s *session) loseTx(at int) {
	if s.lost {
		return
	}
	s.lost, s.lostAt = true, at
	s.p.stats.lostTx.Add(1)
	s.c.CloseAfterReply()
}

// dropLost ends a session whose transaction was lost (loseTx), after the
// command that found out: its reply and any written after are dropped,
// and so is a blocking command it left to run.
func (s *session) dropLost() {
	if s.c.W.Len() > s.lostAt {
		s.c.W.Truncate(s.lostAt)
	}
	s.c.TakeBlock()
	s.reset()
}

// connFor returns the batch's connection to n, checking one out on first
// use. Between WATCH and MULTI the pinned connection serves its node (in
// a cluster, the other nodes' keys go through the pool as usual).
func (s *session) connFor(n *node) (*upConn, error) {
	if s.pin != nil && (s.p.cl == nil || s.pin.node == n) {
		return s.pin, nil
	}
	for _, c := range s.held {
		if c.node == n {
			return c, nil
		}
	}
	c, err := n.get(s.c.W.Proto)
	if err != nil {
		return nil, err
	}
	s.held = append(s.held, c)
	return c, nil
}

// enqueue sends args on conn as part of the batch.
func (s *session) enqueue(conn *upConn, args [][]byte, internal bool) {
	s.enqueueOp(op{conn: conn, args: args, internal: internal})
}

// enqueueOp sends o's command on its connection as part of the batch; its
// reply is not shown if its client turned replies off (CLIENT REPLY).
func (s *session) enqueueOp(o op) {
	conn, internal := o.conn, o.internal
	conn.send(o.args)
	o.at = s.c.W.Len()
	o.silent = !internal && s.c.Silent()
	s.ops = append(s.ops, o)
	if !internal {
		s.p.stats.forwarded.Add(1)
	}
	if s.pin == conn && !s.isHeld(conn) {
		s.held = append(s.held, conn)
	}
	if !s.armed {
		s.armed = true
		s.c.Await(s)
	}
	if len(s.ops) >= maxBatch {
		s.settle()
	}
}

func (s *session) isHeld(c *upConn) bool {
	for _, h := range s.held {
		if h == c {
			return true
		}
	}
	return false
}

// Wait settles the batch before resp sends the replies (resp.Waiter). It
// never fails: an upstream failure is an error reply, not a closed client.
func (s *session) Wait(context.Context) error {
	s.armed = false
	s.settle()
	if s.lost {
		s.reset() // settle ended the replies where the loss was found
	}
	return nil
}

// settle sends the batch, reads its replies and puts each in its place.
func (s *session) settle() {
	if len(s.ops) == 0 {
		return
	}
	p := s.p
	for _, c := range s.held {
		_ = c.flush()
	}
	buf, ends := s.buf[:0], s.ends[:0]
	cut := -1 // the first op that found the transaction's connection broken
	for i := range s.ops {
		o := &s.ops[i]
		mark := len(buf)
		var err error
		buf, err = o.conn.read(buf)
		if err != nil && cut < 0 && o.conn == s.pin && s.holdsTx() {
			cut = i
		}
		switch {
		case o.internal:
			if err == nil && !isOK(buf[mark:]) {
				o.conn.fail(fmt.Errorf("%w: %s answered %q", ErrUpstreamProtocol, o.args[0], trimCRLF(buf[mark:])))
			}
			buf = buf[:mark]
			continue
		case err != nil:
			buf = appendError(buf[:mark], p.upstreamError(o.conn.node, err))
		default:
			if re := errText(buf[mark:]); re != "" {
				if o.queued && s.txRedirected(o.args, re) {
					buf = append(buf[:mark], replyQueued...)
				} else if o.queued {
					s.txErr = true
				} else if r := p.onErrorReply(s, o.args, re, o.conn == s.pin); r != nil {
					buf = append(buf[:mark], r...)
				}
			} else if c := buf[mark]; c == ':' || c == '+' {
				p.noteWrite(s.c.DB, o.args, buf[mark:])
			}
		}
		if o.silent {
			buf = buf[:mark]
			continue
		}
		ends = append(ends, len(buf))
	}
	// Splice: the replies written locally since the first op move to
	// after the forwarded replies that precede them.
	w := s.c.W
	first := min(s.ops[0].at, w.Len())
	s.tail = append(s.tail[:0], w.Bytes()[first:]...)
	w.Truncate(first)
	prev, k := first, 0
	for i := range s.ops {
		o := &s.ops[i]
		if i == cut {
			// The replies end before this op's (loseTx).
			at := min(max(o.at, prev), first+len(s.tail))
			w.Raw(s.tail[prev-first : at-first])
			s.loseTx(w.Len())
			break
		}
		if o.internal || o.silent {
			continue
		}
		at := min(max(o.at, prev), first+len(s.tail))
		w.Raw(s.tail[prev-first : at-first])
		start := 0
		if k > 0 {
			start = ends[k-1]
		}
		w.Raw(buf[start:ends[k]])
		prev, k = at, k+1
	}
	if cut < 0 {
		w.Raw(s.tail[prev-first:])
	}
	// The replies written are the earlier commands': a command that
	// settles the batch and whose own reply is dropped (CLIENT REPLY)
	// keeps them.
	s.c.KeepReplies()
	s.release()
	clear(s.ops)
	s.ops = s.ops[:0]
	if cap(buf) > 1<<20 {
		buf = nil // a huge batch's buffer is not kept
	}
	s.buf, s.ends = buf, ends
}

// release gives back the batch's connections (not the pinned one).
func (s *session) release() {
	for i, c := range s.held {
		if c != s.pin {
			c.node.put(c)
		}
		s.held[i] = nil
	}
	s.held = s.held[:0]
}

// call runs one command synchronously on conn, after switching it to the
// client's database (standalone); it returns the reply's bytes, or an
// error reply when the connection failed.
func (s *session) call(conn *upConn, args [][]byte) []byte {
	if s.p.cl == nil && conn.db != s.c.DB {
		conn.db = s.c.DB
		r, err := conn.do(nil, selectArgs(s.c.DB)...)
		if err == nil && !isOK(r) {
			conn.fail(fmt.Errorf("%w: SELECT %d answered %q", ErrUpstreamProtocol, s.c.DB, trimCRLF(r)))
		}
	}
	conn.send(args)
	s.p.stats.forwarded.Add(1)
	r, err := conn.read(nil)
	if err != nil {
		if conn == s.pin && s.holdsTx() {
			s.loseTx(s.c.W.Len())
		}
		return appendError(nil, s.p.upstreamError(conn.node, err))
	}
	if re := errText(r); re != "" {
		if rr := s.p.onErrorReply(s, args, re, conn == s.pin); rr != nil {
			return rr
		}
	}
	return r
}

// forward sends a command to the node of its keys, as part of the batch.
func (p *Proxy) forward(s *session, args [][]byte) {
	n, errReply := p.route(args)
	if errReply != "" {
		s.c.W.Error(errReply)
		return
	}
	conn, err := s.connFor(n)
	if err != nil && p.retryAfterDialError(n, err) {
		if n, errReply = p.route(args); errReply == "" {
			conn, err = s.connFor(n)
		}
	}
	if errReply != "" {
		s.c.W.Error(errReply)
		return
	}
	if err != nil {
		s.c.W.Error(p.upstreamError(n, err))
		return
	}
	s.touch(args)
	s.switchDB(conn)
	s.enqueue(conn, args, false)
}

// switchDB queues a SELECT on conn when it uses another database than the
// client (standalone and sentinel upstreams: a cluster has only 0).
func (s *session) switchDB(conn *upConn) {
	if s.p.cl == nil && conn.db != s.c.DB {
		conn.db = s.c.DB
		s.enqueue(conn, selectArgs(s.c.DB), true)
	}
}

// touch records the command in CLIENT LIST (cmd=, idle=) when oncekv's
// table knows its name (whose string is not allocated per command).
func (s *session) touch(args [][]byte) {
	if cmd := s.p.table.Lookup(args[0]); cmd != nil {
		now := time.Now()
		s.c.Update(func(i *resp.Info) { i.LastCmd, i.LastActive = cmd.Name, now })
	}
}

// reset drops the transaction and the pinned connection (RESET): closing
// it is the one way to be sure nothing of the transaction survives.
func (s *session) reset() {
	if s.pin != nil {
		s.p.drop(s.pin)
		s.p.stats.pinned.Add(-1)
		s.pin, s.pinAsking = nil, false
	}
	s.endTx()
}

// endTx forgets the transaction's state (not the pinned connection).
func (s *session) endTx() {
	s.watching, s.multi, s.pendingMulti, s.dirty, s.lostWatch = false, false, false, false, false
	s.queued = 0
	s.local, s.selects, s.touches = nil, nil, nil
	s.replayable, s.txCmds, s.txMoved, s.txErr = false, nil, "", false
	s.c.Update(func(i *resp.Info) { i.Multi = -1 })
}

// protocolChanged drops a pinned connection of the other protocol after
// HELLO switched the client's (the upstream's WATCH state cannot move to
// another connection).
func (s *session) protocolChanged() {
	if s.pin == nil || s.pin.proto == s.c.W.Proto {
		return
	}
	watching := s.watching
	s.reset()
	s.lostWatch = watching
}

// pinTo pins conn to the session.
func (s *session) pinTo(conn *upConn) {
	s.pin = conn
	s.p.stats.pinned.Add(1)
}

// unpin gives the pinned connection back to its pool (it holds no
// transaction any more) or closes it when broken.
func (s *session) unpin() {
	if s.pin == nil {
		return
	}
	s.pin.node.put(s.pin)
	s.pin, s.pinAsking = nil, false
	s.p.stats.pinned.Add(-1)
}

// closeAll releases everything when the client is gone.
func (s *session) closeAll() {
	for _, c := range s.held {
		if c != s.pin {
			c.node.put(c) // closed if it owes replies
		}
	}
	s.held = nil
	s.ops = nil
	s.endSub(false)
	s.reset()
}

// appendError appends an error reply.
func appendError(b []byte, msg string) []byte {
	b = append(b, '-')
	b = append(b, msg...)
	return append(b, '\r', '\n')
}

// upstreamError words a failed upstream exchange for the client, and asks
// for a topology refresh (the node may be gone).
//
// The node's idle connections are closed: when one connection broke (the
// server restarted, the network failed), the idle ones most likely did
// too, and each would fail one more command.
func (p *Proxy) upstreamError(n *node, err error) string {
	p.stats.upstreamErrors.Add(1)
	if n != nil {
		n.closeIdle()
	}
	if p.up.Mode != Standalone {
		p.refreshSoon()
	}
	return "ERR " + err.Error()
}

// retryAfterDialError reports whether a command whose connection could
// not be dialed may be routed again: in a cluster or behind sentinels,
// after reading the topology again, when it changed.
func (p *Proxy) retryAfterDialError(n *node, err error) bool {
	if p.up.Mode == Standalone || p.closed.Load() {
		return false
	}
	old := n
	if err := p.refresh(); err != nil {
		return false
	}
	if p.up.Mode == Sentinel {
		return p.master.Load() != old
	}
	return true
}

var _ resp.Waiter = (*session)(nil)
