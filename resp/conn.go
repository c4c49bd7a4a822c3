package resp

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncekv/oncekv/internal/rawio"
)

// Waiter is something a reply must wait for before it is sent: a store
// ticket that becomes durable.
type Waiter interface {
	Wait(ctx context.Context) error
}

// A Waiter with a Covers method replaces the waiter awaited just before it
// when Covers(that one) is true: its own wait already implies the other's
// (a store's later ticket, when the store makes writes durable in order).
// A pipeline of writes then waits once, not once per command.
type covering interface {
	Covers(prev any) bool
}

// Conn is one client connection's state. Its exported fields belong to the
// connection's goroutine; other goroutines read a consistent copy through
// Info.
type Conn struct {
	ID        int64
	Addr      string
	LocalAddr string
	Created   time.Time

	// DB is the selected database; change it with Select.
	DB int
	// Authed is set once the client authenticated (or no password is set).
	Authed bool
	// W buffers the replies of the current pipeline; W.Proto is the
	// connection's protocol.
	W *Writer

	// MULTI state: InMulti while queueing, Queue holds the queued
	// commands, Dirty marks a queueing error (EXEC answers EXECABORT).
	InMulti bool
	Queue   [][][]byte
	Dirty   bool
	// Watch is opaque state of the WATCH implementation.
	Watch any
	// Local is opaque state of the handler's that it settles before the
	// connection sends replies or waits (see Replier): counters of this
	// connection's commands that it adds to shared ones only then, a
	// store lock kept across a pipeline.
	Local any
	// Mark is the handler's reading of its monotonic clock when the last
	// command ended, from which the next command of the same pipeline
	// starts: one clock read per command rather than two. The server
	// clears MarkOK whenever the connection waits (to read, to send, for
	// a blocked command), where that time is no command's; a handler that
	// waits for anything else between commands (the proxy, for its
	// upstream) must clear it too.
	Mark   time.Duration
	MarkOK bool

	mu      sync.Mutex
	info    Info
	waits   []Waiter
	closing bool
	block   BlockFunc
	nc      net.Conn
	rd      *Reader
	ahead   [][]byte // lookAhead's list of names and keys
	srv     *Server
	// detached is set, for good, when the connection's requests start to
	// be parsed by a goroutine of their own (serveDetached); the serving
	// goroutine reads it.
	detached bool
	// in is what serveDetached's reader parsed ahead, once detached.
	in *inbox
	// blocked is set while a blocking command waits: the client is not
	// idle then (timeout does not apply), as in Redis. unblockedAt is when
	// the last one ended (Unix nanoseconds): the client's idle time runs
	// from its reply, not from its request.
	blocked     atomic.Bool
	unblockedAt atomic.Int64
	// idleWait is set while the connection waits for input (see
	// Server.armIdle).
	idleWait atomic.Bool
	// deadline is set while a read deadline may be armed on nc.
	deadline atomic.Bool
	// sk reads and writes the socket with raw system calls, when the
	// connection has one of its own; ho is the replies handed to the
	// store to send (handoff.go).
	sk rawio.Socket
	ho handoff
	// The memory the MULTI queue holds, counted incrementally.
	queueSeen  int
	queueBytes int64
	// CLIENT REPLY (reply.go): replyOff drops every reply until ON;
	// skipNext is set by SKIP and becomes skipThis for the command after
	// it, skipping while that one runs; replyMark is where the current
	// command's reply starts in W; blockSilent drops a blocked command's
	// reply.
	replyOff, skipNext, skipThis bool
	skipping, blockSilent        bool
	replyMark                    int
	// CLIENT UNBLOCK (Unblockable): unblockable is set, under mu, while
	// the blocked command takes an UNBLOCK, and unblockCh carries it.
	unblockable bool
	unblockCh   chan UnblockMode
	// out is the pushes other connections queued (push.go); proto is
	// W.Proto, for their goroutines; subscribed marks a Pub/Sub client.
	out        outbox
	proto      atomic.Int32
	subscribed atomic.Bool
	// unsent is what OnUnsent registered for the blocked command's reply.
	unsent []func()
}

// BlockFunc finishes a blocked command: it waits for the command's outcome
// and writes the reply to c.W. gone is closed when the client disconnects
// or the server closes; the function must then return promptly.
type BlockFunc func(gone <-chan struct{})

// Block makes the current command a blocking one (as BLPOP is): once the
// handler returns, the connection sends the replies before it, then runs
// fn without holding up any other connection, and reads nothing else of
// this client's until fn has written its reply.
func (c *Conn) Block(fn BlockFunc) { c.block = fn }

// UnblockMode is how CLIENT UNBLOCK ends a blocked command.
type UnblockMode uint8

// The modes of CLIENT UNBLOCK.
const (
	// UnblockTimeout ends the command as if its timeout ran out.
	UnblockTimeout UnblockMode = iota + 1
	// UnblockError ends it with an -UNBLOCKED error.
	UnblockError
)

// Unblockable lets CLIENT UNBLOCK (Server.Unblock) end the blocked
// command: its BlockFunc calls it once it waits, and selects on the
// channel, which receives the mode of the one UNBLOCK that ends it. A
// BlockFunc that does not call it (a command held by CLIENT PAUSE) is not
// ended by UNBLOCK, which answers 0 for it.
func (c *Conn) Unblockable() <-chan UnblockMode {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unblockCh == nil {
		c.unblockCh = make(chan UnblockMode, 1)
	}
	c.unblockable = true
	return c.unblockCh
}

// EndUnblockable makes the blocked command deaf to CLIENT UNBLOCK again.
// If an UNBLOCK came first, it returns its mode and true: that UNBLOCK
// answered 1, and the command must end as it asked, even if its wait
// ended for another reason in the same instant.
func (c *Conn) EndUnblockable() (UnblockMode, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unblockable = false
	select {
	case m := <-c.unblockCh:
		return m, true
	default:
		return 0, false
	}
}

// OnUnsent registers fn, which the server calls if the reply that the
// blocked command's BlockFunc writes is not sent because its client is
// gone: its gone was closed by the time the BlockFunc returned (the
// reply is then dropped), or sending failed at once. A command whose
// reply hands the client something (a ONCE claim) takes it back so.
// Call it from the BlockFunc, after writing the reply. Once the reply is
// handed on (written to the socket, or handed to the store to send once
// durable), fn is forgotten: a client that leaves after that is not told
// of, as its reply may be on its way (and a write the store's round makes
// later that fails is not either).
func (c *Conn) OnUnsent(fn func()) { c.unsent = append(c.unsent, fn) }

// takeUnsent returns and forgets what OnUnsent registered.
func (c *Conn) takeUnsent() []func() {
	fs := c.unsent
	c.unsent = nil
	return fs
}

// Blocking reports whether the current command called Block.
func (c *Conn) Blocking() bool { return c.block != nil }

// Release tells the connection's reader that the handler is done with
// args, the request it was given, so that the next request may reuse
// their memory: see Reader.Release. A handler that keeps any of args, or
// serves it later, must not call it; after it, args must not be read.
//
// Once the connection is detached (serveDetached: after its first
// blocking command), another goroutine parses ahead while commands run,
// and Release does nothing.
func (c *Conn) Release(args [][]byte) {
	if c.rd != nil && !c.detached {
		c.rd.Release(args)
	}
}

// TakeBlock returns and clears the function a blocking command left with
// Block (nil if none), for tests that call a Handler directly.
func (c *Conn) TakeBlock() BlockFunc {
	fn := c.block
	c.block = nil
	return fn
}

// queued is the memory of the commands queued in MULTI (their arguments),
// which counts towards the query buffer limit as Redis's argv_len_sums.
func (c *Conn) queued() int64 {
	if len(c.Queue) < c.queueSeen {
		c.queueSeen, c.queueBytes = 0, 0
	}
	for _, args := range c.Queue[c.queueSeen:] {
		for _, a := range args {
			c.queueBytes += int64(len(a)) + argOverhead
		}
	}
	c.queueSeen = len(c.Queue)
	return c.queueBytes
}

// Info is what CLIENT LIST shows of a connection.
type Info struct {
	Name, LibName, LibVer string
	DB                    int
	LastCmd               string
	LastActive            time.Time
	Proto                 int
	Multi                 int
}

// Info returns a consistent copy of the connection's listed state.
func (c *Conn) Info() Info {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info
}

// Update changes the listed state under the connection's lock.
func (c *Conn) Update(fn func(*Info)) {
	c.mu.Lock()
	fn(&c.info)
	c.mu.Unlock()
}

// Select switches the connection's database.
func (c *Conn) Select(db int) {
	c.DB = db
	c.Update(func(i *Info) { i.DB = db })
}

// SetProto switches the reply encoding.
func (c *Conn) SetProto(p int) {
	c.W.Proto = p
	c.proto.Store(int32(p))
	c.Update(func(i *Info) { i.Proto = p })
}

// Await makes the replies written so far wait for w before they are sent.
// If w fails, the connection is closed without sending them: a client is
// never told a write succeeded that did not.
func (c *Conn) Await(w Waiter) {
	if w == nil {
		return
	}
	if n := len(c.waits); n > 0 {
		if cw, ok := w.(covering); ok && cw.Covers(c.waits[n-1]) {
			c.waits[n-1] = w
			return
		}
	}
	c.waits = append(c.waits, w)
}

// Settle waits for everything the replies written so far wait for (Await)
// and forgets it, as the server does before it sends them. On an error
// the rest is forgotten too: the replies must not be sent.
func (c *Conn) Settle(ctx context.Context) error {
	defer func() { c.waits = c.waits[:0] }()
	for _, w := range c.waits {
		if err := w.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// CloseAfterReply closes the connection once the pending replies are sent
// (QUIT).
func (c *Conn) CloseAfterReply() { c.closing = true }

// Server is the server the connection belongs to.
func (c *Conn) Server() *Server { return c.srv }
