package commands

import (
	"time"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
)

// local is a connection's state that the server settles before the
// connection replies or waits (resp.Replier): its tally (stats.go), and
// the store's lock, held across a pipeline's run of reads and writes.
type local struct {
	tally tally
	hold  store.Hold // nil until the first read or write, or when the store cannot hold
	// last is the latest command on keys and when it started (the
	// server's monotonic clock), for CLIENT LIST's cmd and idle: set
	// in the connection's Info when it settles (lastSet: not yet).
	last      *Command
	lastStart time.Duration
	lastSet   bool
	// named is the last command name the connection sent, as sent, and
	// namedCmd its command (lookup): clients repeat a few commands, and
	// the table does not change once the server serves. Folding the
	// name's case and hashing it were a twentieth of a pipelined PING's
	// CPU.
	named    [16]byte
	namedLen int
	namedCmd *Command
	// ahead are the keys Ahead found in the pipeline that the
	// connection read last, until its first command that runs in the
	// store has them prefetched (readAhead, writeAhead) or its replies go
	// out (BeforeReply). They are views of the connection's read buffer:
	// refilled meanwhile, they would read as other bytes, which a
	// prefetch takes as keys like any, harmlessly.
	ahead [][]byte
}

// lookup is t.Lookup(name), remembered for the next command.
func (l *local) lookup(t *Table, name []byte) *Command {
	if l == nil {
		return t.Lookup(name)
	}
	if l.namedCmd != nil && string(name) == string(l.named[:l.namedLen]) {
		return l.namedCmd
	}
	cmd := t.Lookup(name)
	if cmd != nil && len(name) <= len(l.named) {
		l.namedLen = copy(l.named[:], name)
		l.namedCmd = cmd
	}
	return cmd
}

// localOf is c's local state, made on first use; nil without a
// connection.
func localOf(c *resp.Conn) *local {
	if c == nil {
		return nil
	}
	l, _ := c.Local.(*local)
	if l == nil {
		l = new(local)
		c.Local = l
	}
	return l
}

// BeforeReply settles c's local state: its replies are about to go out,
// or it is about to wait for requests, or it is gone. It implements
// resp.Replier.
func (s *Server) BeforeReply(c *resp.Conn) {
	l, _ := c.Local.(*local)
	if l == nil {
		return
	}
	s.settle(&l.tally)
	s.settleActive(c, l)
	if l.hold != nil {
		l.hold.Release()
	}
	l.dropAhead()
}

// AheadWanted reports whether a pipeline led by a command named name is
// worth reading ahead: whether that command has the Prefetch flag. It
// implements resp.Aheader.
func (s *Server) AheadWanted(c *resp.Conn, name []byte) bool {
	if s.prefetcher == nil || s.holder == nil {
		return false
	}
	cmd := localOf(c).lookup(s.table, name)
	return cmd != nil && cmd.Flags&Prefetch != 0
}

// Ahead keeps the keys of a pipeline's commands with the Prefetch flag,
// for the store to bring into the processor's cache once the pipeline's
// first command in the store has taken the store's lock (readAhead,
// writeAhead; store.Prefetcher). Prefetched before the lock, they were
// often in the other core's cache by then: a connection that waits for
// the lock is likely to run on after on the other core (bench/cpu.sh -P
// 16 -t incr: 10-15% less server CPU per INCR done under the lock). It
// implements resp.Aheader.
func (s *Server) Ahead(c *resp.Conn, namesKeys [][]byte) {
	l := localOf(c)
	l.ahead = l.ahead[:0]
	for i := 0; i+1 < len(namesKeys); i += 2 {
		cmd := l.lookup(s.table, namesKeys[i])
		if cmd == nil {
			continue
		}
		if cmd.Flags&Prefetch != 0 && namesKeys[i+1] != nil {
			l.ahead = append(l.ahead, namesKeys[i+1])
			continue
		}
		if cmd.Flags&AtOnce != 0 || cmd.Name == "select" || cmd.Name == "swapdb" {
			// The keys after it are in another database, or in a
			// transaction that does not use the hold (MULTI).
			break
		}
	}
	if len(l.ahead) < 2 {
		l.dropAhead()
	}
}

// dropAhead forgets the keys Ahead kept.
func (l *local) dropAhead() {
	clear(l.ahead)
	l.ahead = l.ahead[:0]
}

// prefetchAhead has the store prefetch the keys Ahead kept, in the
// connection's database, and forgets them.
func (s *Server) prefetchAhead(c *resp.Conn) {
	l := localOf(c)
	s.prefetcher.Prefetch(c.DB, l.ahead)
	l.dropAhead()
}

// active records cmd, started at start, as c's latest command (CLIENT
// LIST's cmd and idle): at once for a command that is not on keys (CLIENT
// INFO shows itself), when c settles for the others, once per pipeline.
func (s *Server) active(c *resp.Conn, cmd *Command, start time.Duration) {
	if tallied(cmd) {
		l := localOf(c)
		l.last, l.lastStart, l.lastSet = cmd, start, false
		return
	}
	if l, _ := c.Local.(*local); l != nil {
		s.settleActive(c, l) // the older first
	}
	c.Update(func(i *resp.Info) {
		i.LastCmd = cmd.Name
		i.LastActive = s.wallAt(start)
	})
}

// settleActive sets c's latest command on keys in its Info, if not yet.
func (s *Server) settleActive(c *resp.Conn, l *local) {
	if l.last == nil || l.lastSet {
		return
	}
	l.lastSet = true
	cmd, start := l.last, l.lastStart
	c.Update(func(i *resp.Info) {
		i.LastCmd = cmd.Name
		i.LastActive = s.wallAt(start)
	})
}

// beforeRun settles what c's local state must not carry into cmd: the
// tally before a command that is not tallied (it may read or reset the
// counters), the store's lock before any command but a read or a write
// (which take it through the hold; another may call the store or wait
// for a writer).
func (s *Server) beforeRun(c *resp.Conn, cmd *Command) {
	if c == nil || tallied(cmd) {
		return
	}
	if l, _ := c.Local.(*local); l != nil {
		s.settle(&l.tally)
	}
	s.release(c)
}

// release lets go of the store's lock if c's hold has it.
func (s *Server) release(c *resp.Conn) {
	if c == nil {
		return
	}
	if l, _ := c.Local.(*local); l != nil && l.hold != nil {
		l.hold.Release()
	}
}

// view runs a read command's function: under the lock its connection
// holds across a pipeline's commands, where the store can hold one.
func (s *Server) view(x *Ctx) (store.Ticket, error) {
	if h := s.holdOf(x.Conn); h != nil {
		if len(localOf(x.Conn).ahead) > 0 {
			return h.View(x.readAheadFn)
		}
		return h.View(x.readFn)
	}
	return s.store.View(x.readFn)
}

// update runs a write command's function as view does.
func (s *Server) update(x *Ctx) (store.Ticket, error) {
	if h := s.holdOf(x.Conn); h != nil {
		if len(localOf(x.Conn).ahead) > 0 {
			return h.Update(x.writeAheadFn)
		}
		return h.Update(x.writeFn)
	}
	return s.store.Update(x.writeFn)
}

// readAhead is read, after the prefetch of the keys Ahead kept, under the
// store's lock.
func (x *Ctx) readAhead(tx store.Tx) error {
	x.S.prefetchAhead(x.Conn)
	return x.read(tx)
}

// writeAhead is write, after the prefetch of the keys Ahead kept, under
// the store's lock.
func (x *Ctx) writeAhead(tx store.Tx) error {
	x.S.prefetchAhead(x.Conn)
	return x.write(tx)
}

// holdOf is c's hold on the store, made on first use; nil without a
// connection or when the store cannot hold.
func (s *Server) holdOf(c *resp.Conn) store.Hold {
	if s.holder == nil || c == nil {
		return nil
	}
	l := localOf(c)
	if l.hold == nil {
		l.hold = s.holder.Hold()
	}
	return l.hold
}
