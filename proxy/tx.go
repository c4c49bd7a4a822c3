package proxy

// Transactions. WATCH and MULTI pin one upstream connection to the client;
// the commands of the transaction are forwarded on it as they come (the
// upstream answers QUEUED, or the error that makes its EXEC abort), so its
// replies, its WATCH conflicts and its atomicity are the upstream's own.
// EXEC, DISCARD and UNWATCH (outside MULTI) give the connection back.
//
// In a cluster, MULTI without WATCH cannot pick a node yet: the proxy
// answers +OK itself (pendingMulti) and sends MULTI to the node of the
// first command's keys together with that command.
//
// The commands the proxy answers itself are queued here and run at EXEC,
// their replies spliced into the upstream's EXEC array at their places.

import (
	"fmt"
	"strings"
	"time"

	"github.com/oncekv/oncekv/commands"
	"github.com/oncekv/oncekv/resp"
)

// Replies of the transaction commands the proxy words itself, as Redis 7.
var (
	replyQueued    = []byte("+QUEUED\r\n")
	replyExecAbort = commands.ErrExecAbort.Error()
)

// localArityOK reports whether args have the number of arguments oncekv's
// table says; when not, the local server answers the error (which, for
// EXEC, is Redis's EXECABORT wording).
func (p *Proxy) localArityOK(args [][]byte) bool {
	cmd := p.table.Lookup(args[0])
	return cmd == nil || arityOK(cmd.Arity, len(args))
}

// pinNode pins s to a connection of n, the node a route gave (with
// errReply, its error reply, if any). It answers the error and returns
// false when there is one or no connection can be had.
func (p *Proxy) pinNode(s *session, n *node, errReply string) bool {
	if errReply != "" {
		s.c.W.Error(errReply)
		return false
	}
	conn, err := n.get(s.c.W.Proto)
	if err != nil {
		s.c.W.Error(p.upstreamError(n, err))
		return false
	}
	s.pinTo(conn)
	return true
}

// multi is MULTI outside a transaction.
func (p *Proxy) multi(s *session, args [][]byte) {
	if !p.localArityOK(args) {
		p.local.Serve(s.c, args)
		return
	}
	if s.pin == nil && p.cl != nil {
		s.pendingMulti = true
		s.c.Update(func(i *resp.Info) { i.Multi = 0 })
		s.c.W.OK()
		return
	}
	if s.pin == nil {
		if n, errReply := p.route(args); !p.pinNode(s, n, errReply) {
			return
		}
	}
	s.asking()
	r := s.call(s.pin, args)
	if isOK(r) {
		s.multi = true
		s.c.Update(func(i *resp.Info) { i.Multi = 0 })
	} else if !s.watching {
		s.unpin()
	}
	s.c.W.Raw(r)
}

// watch is WATCH outside MULTI: it pins the connection of its first key's
// node.
func (p *Proxy) watch(s *session, args [][]byte) {
	if !p.localArityOK(args) {
		p.local.Serve(s.c, args)
		return
	}
	if s.pin == nil {
		if n, errReply := p.routeFirstKey(args); !p.pinNode(s, n, errReply) {
			return
		}
	}
	r := s.call(s.pin, args)
	if !s.watching {
		r = p.watchMoved(s, args, r)
	}
	if isOK(r) {
		s.watching = true
	} else if !s.watching || s.pin.err != nil {
		s.unpinOrDrop()
	}
	s.c.W.Raw(r)
}

// watchMoved follows the MOVED or ASK that a first WATCH got (r) because
// its key's slot moved (the map was stale) or is moving (the key left): it
// did nothing there, so the session is pinned to the node named and WATCH
// sent again, after ASKING for ASK (and MULTI will be too: a client's
// ASKING lasts one command, or until EXEC once in MULTI). It returns the
// reply to give.
func (p *Proxy) watchMoved(s *session, args [][]byte, r []byte) []byte {
	for hops := 0; hops < maxRedirects && p.cl != nil; hops++ {
		kind, slot, addr := parseRedirect(errText(r))
		if kind != "MOVED" && kind != "ASK" {
			return r
		}
		n := p.node(p.redirectAddr(addr))
		if kind == "MOVED" {
			p.stats.moved.Add(1)
			p.cl.slots[slot].Store(n)
			p.refreshSoon()
		} else {
			p.stats.ask.Add(1)
		}
		s.unpin()
		conn, err := n.get(s.c.W.Proto)
		if err != nil {
			return appendError(nil, p.upstreamError(n, err))
		}
		s.pinTo(conn)
		s.pinAsking = kind == "ASK"
		if !s.asking() {
			return appendError(nil, p.upstreamError(n, s.pin.err))
		}
		r = s.call(s.pin, args)
	}
	return r
}

// asking sends ASKING on the pinned connection when the pin follows an
// ASK; it reports false when the connection failed.
func (s *session) asking() bool {
	if !s.pinAsking {
		return true
	}
	r, err := s.pin.do(nil, []byte("ASKING"))
	if err == nil && !isOK(r) {
		s.pin.fail(fmt.Errorf("%w: ASKING answered %q", ErrUpstreamProtocol, trimCRLF(r)))
	}
	return s.pin.err == nil
}

// unwatch is UNWATCH outside MULTI.
func (p *Proxy) unwatch(s *session, args [][]byte) {
	if p.localArityOK(args) {
		s.lostWatch = false
	}
	if !p.localArityOK(args) || s.pin == nil {
		p.local.Serve(s.c, args) // the arity error, or +OK
		return
	}
	r := s.call(s.pin, args)
	s.watching = false
	s.unpinOrDrop()
	s.c.W.Raw(r)
}

// unpinOrDrop gives the pinned connection back, or closes it if it may
// still hold a transaction (its last reply was not understood).
func (s *session) unpinOrDrop() {
	if s.pin != nil && (s.pin.err != nil || s.multi || s.watching) {
		s.reset()
		return
	}
	s.unpin()
}

// serveTx serves a command inside MULTI.
func (p *Proxy) serveTx(s *session, k kind, args [][]byte) {
	c := s.c
	switch k {
	case kExec:
		s.settle()
		p.exec(s, args)
		return
	case kDiscard:
		s.settle()
		p.discard(s, args)
		return
	case kQuit:
		s.settle()
		p.local.Serve(c, args)
		return
	case kShutdown:
		// Refused inside MULTI, and the transaction with it, as Redis
		// does: the proxy must not stop because a transaction named it.
		s.dirty = true
		c.W.Error(commands.ErrNotInMulti.Error())
		return
	case kReset:
		s.settle()
		s.reset()
		p.local.Serve(c, args)
		return
	case kMulti, kWatch:
		if !s.pendingMulti {
			// Run at once by the upstream (never queued): nested MULTI or
			// WATCH inside MULTI is an error there too.
			s.enqueue(s.pin, args, false)
			return
		}
		{
			// Not queued, as in Redis: the arity error spoils the
			// transaction, the nested MULTI / WATCH inside MULTI error
			// does not.
			if !p.localArityOK(args) {
				s.dirty = true
				p.local.Serve(c, args)
			} else if k == kMulti {
				c.W.Error(commands.ErrNestedMulti.Error())
			} else {
				c.W.Error(commands.ErrWatchInMulti.Error())
			}
			return
		}
	case kLocal, kInfo:
		p.queueLocal(s, args)
		return
	case kOnce:
		s.dirty = true
		c.W.Error("ERR ONCE commands cannot be queued in MULTI through the oncekv proxy (run them outside the transaction)")
		return
	case kRefused:
		s.dirty = true
		p.stats.refused.Add(1)
		c.W.Error(refusedText(args))
		return
	case kSubscribe:
		s.dirty = true
		p.stats.refused.Add(1)
		c.W.Error("ERR '" + string(lower(nil, args[0])) + "' cannot be queued in MULTI through the oncekv proxy (subscribe outside the transaction)")
		return
	}
	// Everything else is queued upstream on the pinned connection.
	if s.pendingMulti && !p.startPendingMulti(s, args) {
		return
	}
	if k == kSelect && len(args) == 2 {
		if db, ok := resp.ParseInt(args[1]); ok && db == int64(int(db)) {
			s.selects = append(s.selects, queuedSelect{pos: s.queued, db: int(db)})
		}
	}
	if p.notices != nil && removesKeys(args[0]) {
		s.touches = append(s.touches, queuedTouch{pos: s.queued, args: args})
	}
	s.queued++
	c.Update(func(i *resp.Info) { i.Multi = s.queued + len(s.local) })
	if s.replayable {
		s.txCmds = append(s.txCmds, args)
	}
	s.enqueueOp(op{conn: s.pin, args: args, queued: s.replayable})
}

// startPendingMulti sends MULTI (cluster) to the node of the first queued
// command's keys, pins that connection, and reports whether the command
// can be queued there; if not, it answered the client.
func (p *Proxy) startPendingMulti(s *session, args [][]byte) bool {
	if n, errReply := p.route(args); !p.pinNode(s, n, errReply) {
		// As Redis Cluster: CROSSSLOT (or no connection) while queueing
		// spoils the transaction.
		s.dirty = true
		return false
	}
	s.pendingMulti, s.multi = false, true
	if slot := p.slotOf(args, false); slot >= 0 {
		s.replayable, s.txSlot = true, slot
	}
	s.enqueue(s.pin, [][]byte{[]byte("MULTI")}, true)
	return true
}

// txRedirected reports whether a reply to a command of a replayable
// transaction says the transaction's slot moved (MOVED or ASK for its
// slot, TRYAGAIN for a command of its slot, or, for EXEC, args nil): then
// the node could not run it, and the proxy runs it again where the slot
// is (replayMoved). It notes the first such reply.
func (s *session) txRedirected(args [][]byte, text string) bool {
	if !s.replayable {
		return false
	}
	kind, slot, _ := parseRedirect(text)
	switch {
	case (kind == "MOVED" || kind == "ASK") && slot == s.txSlot:
	case kind == "TRYAGAIN" && (args == nil || s.p.slotOf(args, false) == s.txSlot):
	default:
		return false
	}
	if s.txMoved == "" {
		s.txMoved = text
	}
	return true
}

// replayMoved runs a cluster transaction again where its slot is, when
// the node it was queued on could not run it because the slot moved: a
// queued command was redirected (EXEC r is then EXECABORT), or EXEC
// itself was (a key left between the queueing and EXEC: the node
// discarded the transaction). None of it ran there. It follows MOVED and
// ASK (ASKING before MULTI: a client's ASKING flag lasts until EXEC) up
// to maxRedirects times in a row and retries TRYAGAIN for up to
// tryAgainFor, and returns the EXEC reply to give.
func (p *Proxy) replayMoved(s *session, exec [][]byte, r []byte) []byte {
	text := errText(r)
	switch {
	case text == "" || !s.replayable || s.txErr:
		return r
	case strings.HasPrefix(text, "EXECABORT") && s.txMoved != "":
		text = s.txMoved
	case !s.txRedirected(nil, text):
		return r
	}
	start, delay := time.Now(), tryAgainBaseDelay
	for hops := 0; hops < maxRedirects; hops++ {
		kind, slot, addr := parseRedirect(text)
		addr = p.redirectAddr(addr)
		var n *node
		switch kind {
		case "MOVED":
			p.stats.moved.Add(1)
			n = p.node(addr)
			p.cl.slots[slot].Store(n)
			p.refreshSoon()
		case "ASK":
			p.stats.ask.Add(1)
			n = p.node(addr)
		default: // TRYAGAIN
			if time.Since(start)+delay > tryAgainFor {
				return r
			}
			p.stats.tryagain.Add(1)
			time.Sleep(delay)
			delay = min(2*delay, tryAgainMaxDelay)
			hops = -1
			if n = p.cl.slots[s.txSlot].Load(); n == nil {
				return r
			}
		}
		r, text = p.runTx(s, n, kind == "ASK", exec)
		if text == "" {
			return r
		}
	}
	return r
}

// runTx runs the transaction's queued commands on a connection of n, in
// MULTI/EXEC (after ASKING when asking). It returns EXEC's reply and, when
// the slot's move kept n from running it, the redirection to follow.
//
// Until the whole batch is written none of it can have run (EXEC, last,
// never arrived whole), and a failure is an error reply. Once it is
// written, a broken connection leaves unknown whether EXEC ran, as a
// Redis that restarts mid-EXEC does: an error reply would read as "did not
// run", so the client's connection is closed instead, without a reply to
// EXEC (session.loseTx).
func (p *Proxy) runTx(s *session, n *node, asking bool, exec [][]byte) ([]byte, string) {
	conn, err := n.get(s.c.W.Proto)
	if err != nil {
		return appendError(nil, p.upstreamError(n, err)), ""
	}
	defer n.put(conn)
	var pre [][][]byte
	if asking {
		pre = append(pre, [][]byte{[]byte("ASKING")})
	}
	pre = append(pre, [][]byte{[]byte("MULTI")})
	for _, a := range pre {
		conn.send(a)
	}
	for _, a := range s.txCmds {
		conn.send(a)
	}
	conn.send(exec)
	p.stats.forwarded.Add(int64(len(s.txCmds)))
	if err := conn.flush(); err != nil {
		return appendError(nil, p.upstreamError(n, err)), ""
	}
	if f := p.txSent.Load(); f != nil {
		(*f)(conn)
	}
	lost := func(err error) ([]byte, string) {
		s.loseTx(s.c.W.Len())
		return appendError(nil, p.upstreamError(n, err)), ""
	}
	for _, a := range pre {
		r, err := conn.read(nil)
		if err != nil {
			return lost(err)
		}
		if !isOK(r) {
			// The commands may have run outside a transaction.
			conn.fail(fmt.Errorf("%w: %s answered %q", ErrUpstreamProtocol, a[0], trimCRLF(r)))
			return lost(conn.err)
		}
	}
	moved, other := "", false
	for _, a := range s.txCmds {
		r, err := conn.read(nil)
		if err != nil {
			return lost(err)
		}
		if t := errText(r); t != "" {
			kind, slot, _ := parseRedirect(t)
			if (kind == "MOVED" || kind == "ASK") && slot == s.txSlot || kind == "TRYAGAIN" && p.slotOf(a, false) == s.txSlot {
				if moved == "" {
					moved = t
				}
			} else {
				other = true
			}
		}
	}
	r, err := conn.read(nil)
	if err != nil {
		return lost(err)
	}
	t := errText(r)
	switch {
	case t == "":
		return r, ""
	case moved != "" && !other && strings.HasPrefix(t, "EXECABORT"):
		return r, moved
	}
	if kind, slot, _ := parseRedirect(t); (kind == "MOVED" || kind == "ASK") && slot == s.txSlot || kind == "TRYAGAIN" {
		return r, t
	}
	return r, ""
}

// queueLocal queues a command the proxy answers itself, after checking it
// as Redis checks a command before queueing it (a bad one spoils the
// transaction).
func (p *Proxy) queueLocal(s *session, args [][]byte) {
	if msg := p.validate(args); msg != "" {
		s.dirty = true
		s.c.W.Error(msg)
		return
	}
	s.local = append(s.local, queuedLocal{pos: s.queued + len(s.local), args: args})
	s.c.Update(func(i *resp.Info) { i.Multi = s.queued + len(s.local) })
	s.c.W.Raw(replyQueued)
}

// validate checks a command of oncekv's table as commands.Server does
// before running it: the subcommand exists and the argument count fits.
// It returns the error reply's text, or "".
func (p *Proxy) validate(args [][]byte) string {
	cmd := p.table.Lookup(args[0])
	if cmd == nil {
		return "ERR unknown command '" + string(args[0]) + "'"
	}
	if !arityOK(cmd.Arity, len(args)) {
		return "ERR wrong number of arguments for '" + cmd.Name + "' command"
	}
	if len(cmd.Subcommands) > 0 && len(args) > 1 {
		var sub *commands.Command
		for _, sc := range cmd.Subcommands {
			if _, short, _ := strings.Cut(sc.Name, "|"); strings.EqualFold(short, string(args[1])) {
				sub = sc
				break
			}
		}
		if sub == nil {
			name := string(args[1])
			if i := strings.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if len(name) > 128 {
				name = name[:128]
			}
			return "ERR unknown subcommand '" + name + "'. Try " + strings.ToUpper(string(args[0])) + " HELP."
		}
		if !arityOK(sub.Arity, len(args)) {
			return "ERR wrong number of arguments for '" + sub.Name + "' command"
		}
		cmd = sub
	}
	if commands.RefusedInMulti(cmd) {
		return commands.ErrNotInMulti.Error() // CLIENT REPLY
	}
	return ""
}

// exec is EXEC inside MULTI.
func (p *Proxy) exec(s *session, args [][]byte) {
	c := s.c
	defer s.finishTx()
	if s.pendingMulti {
		// Nothing was queued upstream: only local commands, if any.
		switch {
		case !p.localArityOK(args):
			p.local.Serve(c, args) // EXECABORT … wrong number of arguments
		case s.dirty:
			c.W.Error(replyExecAbort)
		case s.lostWatch:
			c.W.NullArray()
		default:
			c.W.Array(len(s.local))
			for _, q := range s.local {
				p.runLocal(s, q.args)
			}
		}
		return
	}
	if s.dirty {
		// Refused here while queueing: the upstream's transaction must
		// go too.
		s.call(s.pin, [][]byte{[]byte("DISCARD")})
		c.W.Error(replyExecAbort)
		return
	}
	if s.lostWatch {
		s.call(s.pin, [][]byte{[]byte("DISCARD")})
		c.W.NullArray()
		return
	}
	r := p.replayMoved(s, args, s.call(s.pin, args))
	if len(r) == 0 || r[0] != '*' || (len(s.local) == 0 && len(s.selects) == 0 && len(s.touches) == 0) {
		c.W.Raw(r)
		return
	}
	v, err := parseReply(r)
	if err != nil || v.null || int(v.num) != s.queued {
		c.W.Raw(r)
		return
	}
	p.noteTx(s, v)
	for _, sel := range s.selects {
		if isOK(v.elems[sel.pos].raw) {
			c.Select(sel.db)
			s.pin.db = sel.db
		}
	}
	if len(s.local) == 0 {
		c.W.Raw(r)
		return
	}
	c.W.Array(s.queued + len(s.local))
	up, loc := 0, 0
	for i := 0; i < s.queued+len(s.local); i++ {
		if loc < len(s.local) && s.local[loc].pos == i {
			p.runLocal(s, s.local[loc].args)
			loc++
			continue
		}
		c.W.Raw(v.elems[up].raw)
		up++
	}
}

// removesKeys reports whether a command is one whose removals the ONCE
// handler hears of (notice.go).
func removesKeys(name []byte) bool {
	if len(name) < 3 || len(name) > 8 {
		return false
	}
	var buf [8]byte
	n := lower(buf[:0], name)
	return string(n) == "del" || string(n) == "unlink" || string(n) == "flushdb" || string(n) == "flushall"
}

// noteTx announces the removals of an EXEC's commands (v is its reply),
// each in the database it ran in (the queued SELECTs before it that
// succeeded).
func (p *Proxy) noteTx(s *session, v value) {
	db, si := s.c.DB, 0
	for _, t := range s.touches {
		for ; si < len(s.selects) && s.selects[si].pos < t.pos; si++ {
			if isOK(v.elems[s.selects[si].pos].raw) {
				db = s.selects[si].db
			}
		}
		p.noteWrite(db, t.args, v.elems[t.pos].raw)
	}
}

// discard is DISCARD inside MULTI.
func (p *Proxy) discard(s *session, args [][]byte) {
	c := s.c
	if s.pendingMulti {
		if !p.localArityOK(args) {
			s.dirty = true
			p.local.Serve(c, args)
			return
		}
		s.finishTx()
		c.W.OK()
		return
	}
	r := s.call(s.pin, args)
	c.W.Raw(r)
	if isOK(r) || s.pin.err != nil {
		s.finishTx()
	}
}

// finishTx ends the transaction: EXEC and DISCARD also forget WATCHes, so
// the pinned connection is clean and goes back to its pool.
func (s *session) finishTx() {
	s.endTx()
	s.unpinOrDrop()
}

// runLocal runs a command the proxy answers itself (at EXEC).
func (p *Proxy) runLocal(s *session, args [][]byte) {
	if kindOf(args[0]) == kInfo {
		p.info(s, args)
		return
	}
	p.local.Serve(s.c, args)
}
