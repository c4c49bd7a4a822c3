// Package resp is the wire: a RESP2/RESP3 server, the per-connection
// state, a request reader with Redis's limits and a reply writer that
// encodes each reply in the connection's protocol.
//
// A connection's replies to one pipeline of commands are buffered and sent
// together, after every write they acknowledge is durable (see Conn.Await).
// Nothing here knows what a command means: a Handler does.
//
// The server accepts connections and reads requests itself (reader.go says
// why redcon's reader could not be kept): each connection is served by one
// goroutine that parses a request, runs it, and sends the replies of a
// pipeline once no complete request is left in what it read.
package resp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Handler runs one command of a connection, writing its reply to c.W.
type Handler interface {
	Serve(c *Conn, args [][]byte)
}

// Config configures a Server.
type Config struct {
	// Addrs are the listen addresses (host:port).
	Addrs []string
	// TLSAddrs are listened on with TLS (Redis's tls-port); TLS must be
	// set when there are any.
	TLSAddrs []string
	TLS      *tls.Config
	// MaxClients is the most connections served at once (Redis's
	// maxclients); 0 means no limit.
	MaxClients int
	// IdleTimeout closes connections idle that long (Redis's timeout);
	// 0 never does. A client blocked in a command is not idle.
	IdleTimeout time.Duration
	// RequirePass makes new connections start unauthenticated.
	RequirePass bool
	// ProtectedMode is Redis's protected-mode: while no password is set,
	// only clients from the loopback address are served.
	ProtectedMode bool
	// Limits bound what one client may send (zero fields: Redis's
	// defaults).
	Limits Limits
	Logger *zap.Logger
}

const (
	// flushAt sends a pipeline's replies once that many are buffered, so
	// that a client which pipelines and does not read is held back by
	// its own socket instead of growing our memory.
	flushAt = 64 << 10
	// handshakeTimeout bounds a TLS handshake.
	handshakeTimeout = 10 * time.Second
	// lingerTime and lingerBytes bound how long and how much is read and
	// dropped after a protocol error, so that the error reply reaches a
	// client that is still sending (closing a socket with unread input
	// resets it, and a reset can destroy the reply on its way).
	lingerTime  = time.Second
	lingerBytes = 1 << 20
)

// Replies sent to refused connections, as Redis 7.0 words them (the
// DENIED text verbatim, typo included).
const (
	replyMaxClients = "-ERR max number of clients reached\r\n"
	replyDenied     = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. " +
		"In this mode connections are only accepted from the loopback interface. " +
		"If you want to connect from external computers to Redis you may adopt one of the following solutions: " +
		"1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface " +
		"by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible " +
		"from internet if you do so. Use CONFIG REWRITE to make this change permanent. " +
		"2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected " +
		"mode option to 'no', and then restarting the server. " +
		"3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. " +
		"4) Setup a an authentication password for the default user. " +
		"NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"
)

// Server accepts connections and feeds their commands to a Handler.
type Server struct {
	cfg     Config
	handler Handler
	log     *zap.Logger

	mu        sync.Mutex
	listeners []net.Listener // the plain ones first, then the TLS ones
	nplain    int
	open      map[net.Conn]struct{} // every accepted connection
	conns     map[*Conn]struct{}    // the admitted clients
	closed    bool

	nextID   atomic.Int64
	wg       sync.WaitGroup
	started  time.Time
	Accepted atomic.Int64
	Rejected atomic.Int64

	requirePass atomic.Bool
	// stats are the wire's counters (stats.go); onError sees every error
	// reply, if the handler is an ErrorObserver.
	stats   WireStats
	onError func(msg string)
	// beforeReply is the handler's Replier hook, if it has one.
	beforeReply func(c *Conn)
	// ahead is the handler's Aheader, if it is one.
	ahead Aheader
	// The settings CONFIG SET changes while the server runs (settings.go).
	maxClients atomic.Int64
	protected  atomic.Bool
	idle       atomic.Int64 // IdleTimeout in nanoseconds
	// pubsubLimit is client-output-buffer-limit pubsub (push.go); nil
	// is Redis's default.
	pubsubLimit atomic.Pointer[OutputLimit]
	// normalLimit is client-output-buffer-limit normal, which bounds
	// monitors (push.go); nil is Redis's default, no limit.
	normalLimit atomic.Pointer[OutputLimit]
}

// NewServer returns a server; it listens only on Start.
func NewServer(cfg Config, h Handler) *Server {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	cfg.Limits = cfg.Limits.withDefaults()
	s := &Server{cfg: cfg, handler: h, log: cfg.Logger,
		open: make(map[net.Conn]struct{}), conns: make(map[*Conn]struct{})}
	s.requirePass.Store(cfg.RequirePass)
	if o, ok := h.(ErrorObserver); ok {
		s.onError = o.ErrorReplied
	}
	if r, ok := h.(Replier); ok {
		s.beforeReply = r.BeforeReply
	}
	s.ahead, _ = h.(Aheader)
	s.maxClients.Store(int64(cfg.MaxClients))
	s.protected.Store(cfg.ProtectedMode)
	s.idle.Store(int64(cfg.IdleTimeout))
	return s
}

// SetRequirePass changes whether new connections must authenticate.
func (s *Server) SetRequirePass(on bool) { s.requirePass.Store(on) }

// Start listens on every configured address and serves in the background.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("server closed")
	}
	if len(s.cfg.TLSAddrs) > 0 && s.cfg.TLS == nil {
		return errors.New("TLS addresses without a TLS configuration")
	}
	s.started = time.Now()
	var lns []net.Listener
	listen := func(addr string, tlsCfg *tls.Config) error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return fmt.Errorf("listen on %s: %w", addr, err)
		}
		if tlsCfg != nil {
			ln = tls.NewListener(ln, tlsCfg)
		}
		lns = append(lns, ln)
		return nil
	}
	for _, addr := range s.cfg.Addrs {
		if err := listen(addr, nil); err != nil {
			return err
		}
	}
	for _, addr := range s.cfg.TLSAddrs {
		if err := listen(addr, s.cfg.TLS); err != nil {
			return err
		}
	}
	s.listeners, s.nplain = lns, len(s.cfg.Addrs)
	for _, ln := range lns {
		s.wg.Add(1)
		go s.acceptLoop(ln)
	}
	return nil
}

// Addrs are the plain (not TLS) addresses actually listened on (useful
// with port 0).
func (s *Server) Addrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]net.Addr, 0, s.nplain)
	for _, l := range s.listeners[:s.nplain] {
		out = append(out, l.Addr())
	}
	return out
}

// TLSAddrs are the TLS addresses actually listened on.
func (s *Server) TLSAddrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []net.Addr
	for _, l := range s.listeners[s.nplain:] {
		out = append(out, l.Addr())
	}
	return out
}

// StartTime is when Start was called.
func (s *Server) StartTime() time.Time { return s.started }

// Close stops accepting, closes every connection and waits for commands in
// flight to finish.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for _, l := range s.listeners {
		l.Close()
	}
	for nc := range s.open {
		nc.Close()
	}
	s.mu.Unlock()
	// Commands run only on their connection's goroutine, so this also
	// waits for the commands in flight.
	s.wg.Wait()
	return nil
}

// Clients returns the connected clients ordered by ID.
func (s *Server) Clients() []*Conn {
	s.mu.Lock()
	out := make([]*Conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// NumClients is the number of connected clients.
func (s *Server) NumClients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Kill closes the connection with the given ID; it reports whether one was
// found.
func (s *Server) Kill(id int64) bool {
	for _, c := range s.Clients() {
		if c.ID == id {
			c.nc.Close()
			return true
		}
	}
	return false
}

// Unblock is CLIENT UNBLOCK: it ends the blocked command of the
// connection with the given ID, if that command takes an UNBLOCK
// (Conn.Unblockable), and reports whether it did.
func (s *Server) Unblock(id int64, m UnblockMode) bool {
	for _, c := range s.Clients() {
		if c.ID != id {
			continue
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if !c.unblockable {
			return false
		}
		c.unblockable = false
		c.unblockCh <- m // room for one: unblockable was set
		return true
	}
	return false
}

func (s *Server) acceptLoop(ln net.Listener) {
	defer s.wg.Done()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, say: wait a little and go on.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed; retrying", zap.Error(err), zap.Duration("in", delay))
			time.Sleep(delay)
			continue
		}
		delay = 0
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.open[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(nc)
	}
}

// serveConn runs one connection from accept to close.
func (s *Server) serveConn(nc net.Conn) {
	defer s.wg.Done()
	defer func() {
		nc.Close()
		s.mu.Lock()
		delete(s.open, nc)
		s.mu.Unlock()
	}()
	if tc, ok := nc.(*tls.Conn); ok {
		ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			s.log.Debug("TLS handshake failed", zap.String("addr", nc.RemoteAddr().String()), zap.Error(err))
			return
		}
	}
	c, refusal := s.admit(nc)
	if c == nil {
		if refusal != "" {
			_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = io.WriteString(nc, refusal)
		}
		return
	}
	err := s.serve(c)
	// The replies handed to the store are sent (or dropped) before the
	// connection closes, and the store is through with its buffer.
	s.finishHandoff(c)
	if errors.Is(err, ErrQueryBufferLimit) {
		s.log.Warn("closing client that reached max query buffer length (client-query-buffer-limit)",
			zap.Int64("id", c.ID), zap.String("addr", c.Addr), zap.Int64("limit", c.rd.Limits().QueryBufferLimit))
	}
	s.forget(c, err)
}

// ProtectedDenied is Redis 7.0's protected mode: with protected-mode on
// and no password set, a client whose address is not 127.0.0.1 or ::1 is
// refused. (Redis compares the address with exactly those two, so
// 127.0.0.2 is refused too, and it does not look at the bind address: with
// the default bind, 127.0.0.1, nobody else can connect anyway.) An address
// that is not an IP is refused.
func ProtectedDenied(protected, hasPass bool, peer net.Addr) bool {
	if !protected || hasPass {
		return false
	}
	var ip net.IP
	switch a := peer.(type) {
	case *net.TCPAddr:
		ip = a.IP
	case *net.UnixAddr:
		return false
	default:
		if peer != nil {
			host, _, err := net.SplitHostPort(peer.String())
			if err == nil {
				ip = net.ParseIP(host)
			}
		}
	}
	return ip == nil || !(ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback))
}

// admit registers a new client, or returns the reply that refuses it.
func (s *Server) admit(nc net.Conn) (*Conn, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ""
	}
	if limit := s.maxClients.Load(); limit > 0 && int64(len(s.conns)) >= limit {
		s.Rejected.Add(1)
		return nil, replyMaxClients
	}
	if ProtectedDenied(s.protected.Load(), s.requirePass.Load(), nc.RemoteAddr()) {
		s.Rejected.Add(1)
		// Debug, not Warn: a scanner must not be able to flood the log.
		s.log.Debug("protected mode: refused a client from outside the loopback interface",
			zap.String("addr", nc.RemoteAddr().String()))
		return nil, replyDenied
	}
	now := time.Now()
	c := &Conn{
		ID:        s.nextID.Add(1),
		Addr:      nc.RemoteAddr().String(),
		LocalAddr: nc.LocalAddr().String(),
		Created:   now,
		Authed:    !s.requirePass.Load(),
		W:         NewWriter(2),
		nc:        nc,
		srv:       s,
	}
	c.initSocket()
	var in io.Reader = nc
	if c.sk.Ready() {
		in = &c.sk
	}
	c.rd = NewReader(countingReader{in, &s.stats}, s.cfg.Limits)
	c.rd.SetAuthed(c.Authed)
	c.W.OnError = s.onError
	c.info = Info{LastActive: now, Proto: 2, LastCmd: "NULL"}
	c.proto.Store(2)
	s.conns[c] = struct{}{}
	s.Accepted.Add(1)
	s.log.Debug("client connected", zap.Int64("id", c.ID), zap.String("addr", c.Addr))
	return c, ""
}

// forget unregisters a closed connection.
func (s *Server) forget(c *Conn, err error) {
	c.closeOutbox()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	if d, ok := s.handler.(interface{ Disconnected(*Conn) }); ok {
		d.Disconnected(c)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		err = nil
	}
	s.log.Debug("client disconnected", zap.Int64("id", c.ID), zap.String("addr", c.Addr), zap.Error(err))
}

// serve reads and runs c's commands until the connection ends; it
// returns why it ended.
func (s *Server) serve(c *Conn) error {
	rd := c.rd
	ran := 0 // commands run since the last read
	for {
		args, err := rd.Parse()
		if err != nil {
			return s.protocolError(c, err)
		}
		if args == nil {
			// Nothing complete is left in what was read: send the
			// pipeline's replies, then read on.
			c.MarkOK = false
			if c.W.Len() > 0 || len(c.waits) > 0 {
				// A waiter may close the connection after the replies
				// (CloseAfterReply: the proxy's lost transaction).
				if ok := s.flush(c); !ok || c.closing {
					return nil
				}
			} else if s.beforeReply != nil {
				// No reply to send (CLIENT REPLY OFF): what the
				// commands counted is settled before the wait all
				// the same.
				s.beforeReply(c)
			}
			if ran > 1 {
				// A pipelining client sends its next batch as soon as
				// it has the replies: yielding first, the read finds it
				// more often than an empty socket (EAGAIN, a park, the
				// poller, a wake-up). redis-benchmark -P 16, GET: 0.125
				// reads a request -> 0.068, 721k -> 813k requests/s.
				runtime.Gosched()
			}
			ran = 0
			s.armIdle(c)
			err := rd.Fill()
			s.disarmIdle(c)
			if err != nil {
				return err
			}
			if s.ahead != nil {
				s.lookAhead(c)
			}
			continue
		}
		s.call(c, args)
		ran++
		if c.block != nil {
			// Send what came before, then serve the blocked command and
			// the rest of the connection in serveDetached, which notices
			// a disconnect while the command blocks.
			ok := s.flush(c)
			if !ok {
				// The connection closes: the blocked command still runs,
				// as if its client had left, so that it withdraws what it
				// waits on (a ONCE waiter would otherwise keep a place
				// in its key's queue).
				fn := c.block
				c.block = nil
				s.runBlocked(c, fn, closedChan)
				return nil
			}
			return s.serveDetached(c)
		}
		if c.out.on.Load() {
			// The command made the connection one that receives pushes
			// (SUBSCRIBE): they must reach it while it waits for its
			// client, as serveDetached waits for both.
			if !s.flush(c) || c.closing {
				return nil
			}
			return s.serveDetached(c)
		}
		ok := true
		if c.closing || c.W.Len() > flushAt {
			c.MarkOK = false
			ok = s.flush(c)
		}
		if c.closing || !ok {
			return nil
		}
		rd.SetAuthed(c.Authed || !s.requirePass.Load())
		rd.SetHeld(c.queued())
	}
}

// aheadMax is the most requests with a key whose names and keys
// lookAhead passes on at once.
const aheadMax = 32

// lookAhead shows the handler the names and keys of the requests a read
// brought, when two or more have a key and it wants them (Aheader).
func (s *Server) lookAhead(c *Conn) {
	var first []byte
	n := c.rd.aheadKeys(2, func(name, _ []byte) {
		if first == nil {
			first = name
		}
	})
	if n < 2 || !s.ahead.AheadWanted(c, first) {
		return
	}
	if c.ahead == nil {
		// The list is made for a connection that pipelines, once.
		c.ahead = make([][]byte, 0, 4*aheadMax)
	}
	nk := c.ahead[:0]
	c.rd.aheadKeys(aheadMax, func(name, key []byte) { nk = append(nk, name, key) })
	s.ahead.Ahead(c, nk)
	clear(nk) // no view of the buffer kept
}

// protocolError answers a malformed request after the replies of the
// requests before it, as Redis does, then lets the connection close.
func (s *Server) protocolError(c *Conn, err error) error {
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		return err
	}
	s.log.Debug("protocol error; closing the client", zap.Int64("id", c.ID), zap.String("addr", c.Addr), zap.Error(err))
	c.W.Error("ERR " + pe.Error())
	// Sent, not only handed to the store, before the half-close.
	ok := s.flush(c) && s.settleHandoff(c)
	if ok {
		linger(c.nc)
	}
	return err
}

// linger half-closes nc and drops what the client still sends, for a
// moment, before the caller closes it.
func linger(nc net.Conn) {
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = nc.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.CopyN(io.Discard, nc, lingerBytes)
}

// call runs one command. A panic that escapes the handler is logged and
// answered with an error, and the connection goes on: one bad command
// never takes the server down.
func (s *Server) call(c *Conn, args [][]byte) {
	// The pushes that came before the command go before its reply, as in
	// Redis, where a message is published between two commands: a RESET
	// or HELLO is answered after what the subscription was sent, and the
	// reply of a command that runs silent (CLIENT REPLY) never takes them.
	c.takeOutbox()
	mark := c.W.Len()
	c.beginReply(mark)
	defer func() {
		if p := recover(); p != nil {
			name := args[0]
			if len(name) > 64 {
				name = name[:64]
			}
			s.log.Error("panic while serving a command; answered with an error",
				zap.Int64("id", c.ID), zap.ByteString("cmd", name), zap.Any("panic", p), zap.Stack("stack"))
			if fn := c.block; fn != nil {
				// The handler had made the command a blocking one (a
				// ONCE waiter is queued on its key): finish it as if its
				// client had left, so that it withdraws what it waits
				// on, and drop what it writes.
				c.block = nil
				s.runBlocked(c, fn, closedChan)
			}
			// What it wrote goes, not the replies of earlier commands
			// written meanwhile (KeepReplies): the error starts where
			// endReply drops a silent command's reply.
			if c.replyMark < mark || c.replyMark > c.W.Len() {
				c.replyMark = mark
			}
			c.W.Truncate(c.replyMark)
			c.W.Error("ERR internal error (the server logged it)")
		}
		c.endReply() // CLIENT REPLY OFF / SKIP
	}()
	s.handler.Serve(c, args)
}

// closedChan is a closed channel: the gone of a client that has left.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// runBlocked finishes a blocked command, recovering a panic as call does.
func (s *Server) runBlocked(c *Conn, fn BlockFunc, gone <-chan struct{}) {
	if s.beforeReply != nil {
		// The handler's state is settled before the command waits
		// (a lock it holds would keep out what the command waits for).
		s.beforeReply(c)
	}
	mark := c.W.Len()
	c.blocked.Store(true)
	if c.in != nil {
		signal(c.in.room) // the reader reads on while the command blocks
	}
	s.stats.Blocked.Add(1)
	defer func() {
		c.unblockedAt.Store(time.Now().UnixNano())
		c.blocked.Store(false)
		s.stats.Blocked.Add(-1)
		if p := recover(); p != nil {
			s.log.Error("panic while finishing a blocked command; answered with an error",
				zap.Int64("id", c.ID), zap.Any("panic", p), zap.Stack("stack"))
			c.W.Truncate(mark)
			c.W.Error("ERR internal error (the server logged it)")
		}
		// An UNBLOCK that came as the command ended is spent.
		c.EndUnblockable()
		if c.blockSilent { // CLIENT REPLY OFF / SKIP
			c.W.Truncate(mark)
			// A command held by CLIENT PAUSE that blocks once it
			// runs (ONCE.WAIT) stays silent through its new block.
			c.blockSilent = c.block != nil
		}
	}()
	fn(gone)
}

// detachedAhead is how many requests serveDetached's reader parses ahead
// of the one running, unless one blocks.
const detachedAhead = 64

// serveDetached serves a connection from a blocking command on, with two
// goroutines: a reader notices a disconnect at once, even while a command
// blocks, and queues what the client pipelines meanwhile.
//
// Like Redis, which reads on while a client is blocked and runs nothing of
// what it reads, the reader parses on while a command blocks, and counts
// what it queued towards client-query-buffer-limit: over it, the client is
// closed at once, without the blocked command's reply, and nothing queued
// runs. Otherwise it holds back a client that sends faster than its
// commands run, at detachedAhead requests.
func (s *Server) serveDetached(c *Conn) (err error) {
	gone := make(chan struct{})
	quit := make(chan struct{})
	q := newInbox()
	c.in = q
	var readErr error // why the reader stopped; read once gone is closed
	c.detached = true
	go func() {
		defer close(gone)
		rd := c.rd
		for {
			args, err := rd.Parse()
			if err == nil && args == nil {
				s.armIdle(c)
				err = rd.Fill()
				s.disarmIdle(c)
				var ne net.Error
				if err != nil && errors.As(err, &ne) && ne.Timeout() && (c.blocked.Load() || q.len() > 0 || c.subscribed.Load() ||
					time.Since(time.Unix(0, c.unblockedAt.Load())) < time.Duration(s.idle.Load())) {
					// A blocked client is not idle, nor one answered
					// less than the timeout ago: the deadline was
					// armed while it was blocked. A Pub/Sub client
					// never times out, as in Redis.
					continue
				}
				if err == nil && c.blocked.Load() && rd.holding()+q.memory() > rd.Limits().QueryBufferLimit {
					err = ErrQueryBufferLimit
				}
				if err == nil {
					continue
				}
			}
			var pe *ProtocolError
			if err != nil && !errors.As(err, &pe) {
				if errors.Is(err, ErrQueryBufferLimit) {
					// Closed at once: no reply, nothing queued runs.
					q.drop()
					c.nc.Close()
				}
				readErr = err
				return
			}
			q.push(detachedItem{args: args, err: err})
			if err != nil {
				// Keep watching for a disconnect until the error is
				// answered and the connection closed.
				_ = c.nc.SetReadDeadline(time.Time{})
				_, readErr = io.Copy(io.Discard, c.nc)
				return
			}
			for !c.blocked.Load() && q.len() >= detachedAhead {
				select {
				case <-q.room:
				case <-quit:
					return
				}
			}
		}
	}()
	defer func() {
		close(quit)
		s.finishHandoff(c) // the replies handed over are sent first
		c.nc.Close()
		<-gone
		if errors.Is(readErr, ErrQueryBufferLimit) {
			err = readErr
		}
	}()
	send := func() bool { return s.flush(c) && !c.closing }
	serve := func(args [][]byte) bool {
		c.MarkOK = false // the command may have waited in the inbox
		s.call(c, args)
		c.rd.SetAuthed(c.Authed || !s.requirePass.Load())
		c.rd.SetHeld(c.queued())
		return !c.closing
	}
	// unblock sends the replies before a blocked command, then finishes
	// it (as serve does, and as Redis sends a blocked client's earlier
	// replies while it waits); it reports whether to go on.
	unblock := func() bool {
		for c.block != nil {
			fn := c.block
			c.block = nil
			if !send() {
				// The client is gone: the command withdraws what it
				// waits on, as in serve.
				s.runBlocked(c, fn, closedChan)
				runUnsent(c.takeUnsent())
				return false
			}
			stop := s.pushWhileBlocked(c)
			mark := c.W.Len()
			s.runBlocked(c, fn, gone)
			stop()
			select {
			case <-gone:
				// The client left as its command's wait ended (the
				// reader saw its connection end): the reply is not
				// sent, and what it handed over is taken back
				// (OnUnsent), not held by no one.
				c.W.Truncate(mark)
				runUnsent(c.takeUnsent())
			default:
			}
		}
		ok := send()
		unsent := c.takeUnsent()
		if !ok {
			runUnsent(unsent)
		}
		return ok
	}
	if !unblock() {
		return nil
	}
	for {
		it, ok, more := q.pop()
		if !ok {
			select {
			case <-q.ready:
				continue
			case <-c.pushReady():
				// Pushes from other connections (push.go).
				if !send() {
					return nil
				}
				continue
			case <-gone:
			}
			if errors.Is(readErr, ErrQueryBufferLimit) {
				return nil // the deferred function returns it
			}
			// Run what the client sent before it left, as Redis does.
			for {
				it, ok, _ := q.pop()
				if !ok || it.err != nil {
					break
				}
				serve(it.args)
				for c.block != nil {
					fn := c.block
					c.block = nil
					s.runBlocked(c, fn, gone) // returns at once: gone is closed
					runUnsent(c.takeUnsent())
				}
			}
			return readErr
		}
		if it.err != nil {
			c.W.Error("ERR " + it.err.Error())
			s.flush(c)
			return it.err
		}
		if !serve(it.args) {
			send()
			return nil
		}
		if c.block != nil || !more || c.W.Len() > flushAt {
			if !unblock() {
				return nil
			}
		}
	}
}

// runUnsent runs what OnUnsent registered for a reply that was not sent.
func runUnsent(fs []func()) {
	for _, f := range fs {
		f()
	}
}

// detachedItem is a request serveDetached's reader parsed, or the
// protocol error that ends them, answered in its turn.
type detachedItem struct {
	args [][]byte
	err  error
}

// inbox holds, in order, the requests serveDetached's reader parsed and
// the connection has not run yet.
type inbox struct {
	mu    sync.Mutex
	items []detachedItem // items[head:] are waiting
	head  int
	mem   int64         // what their arguments hold
	ready chan struct{} // a token when an item was added
	room  chan struct{} // a token when an item was taken, or a command blocks
}

func newInbox() *inbox {
	return &inbox{ready: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

// signal leaves a token in ch unless one is there.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// argsMem is what a request's arguments hold, counted as the reader
// counts them.
func argsMem(args [][]byte) int64 {
	var n int64
	for _, a := range args {
		n += int64(len(a)) + argOverhead
	}
	return n
}

func (q *inbox) push(it detachedItem) {
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mem += argsMem(it.args)
	q.mu.Unlock()
	signal(q.ready)
}

// pop takes the oldest item, if any; more reports whether others wait.
func (q *inbox) pop() (it detachedItem, ok, more bool) {
	q.mu.Lock()
	if q.head < len(q.items) {
		it, ok = q.items[q.head], true
		q.items[q.head] = detachedItem{}
		q.head++
		q.mem -= argsMem(it.args)
		if q.head == len(q.items) {
			q.items, q.head = q.items[:0], 0
		}
		more = q.head < len(q.items)
	}
	q.mu.Unlock()
	if ok {
		signal(q.room)
	}
	return it, ok, more
}

// drop forgets every item.
func (q *inbox) drop() {
	q.mu.Lock()
	clear(q.items)
	q.items, q.head, q.mem = nil, 0, 0
	q.mu.Unlock()
}

func (q *inbox) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) - q.head
}

func (q *inbox) memory() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mem
}

// flush waits for the durability of what the buffered replies acknowledge,
// then sends them. It reports false when the connection must close.
func (s *Server) flush(c *Conn) bool {
	if s.beforeReply != nil {
		s.beforeReply(c)
	}
	c.takeOutbox() // pushes queued so far go after the replies
	defer c.sentOutbox()
	if !s.settleHandoff(c) {
		c.W.Reset()
		return false
	}
	if s.handOff(c) {
		return true
	}
	if err := c.Settle(context.Background()); err != nil {
		c.W.Reset()
		s.notDurable(c, err)
		return false
	}
	if c.W.Len() > 0 {
		var n int
		var err error
		if c.sk.Ready() {
			n, err = c.sk.Write(c.W.Bytes())
		} else {
			n, err = c.nc.Write(c.W.Bytes())
		}
		s.stats.Writes.Add(1)
		s.stats.NetOutput.Add(int64(n))
		c.W.Reset()
		if cap(c.W.buf) > 1<<20 {
			c.W.buf = nil // a huge reply's buffer is not kept
		}
		if err != nil {
			c.closing = true
			return false
		}
	}
	return true
}

// notDurable closes c without sending its replies: the writes they
// acknowledge were not made durable (err says why), and a client is never
// told a write succeeded that did not.
func (s *Server) notDurable(c *Conn, err error) {
	s.log.Error("write not durable; closing the connection without acknowledging it",
		zap.Int64("id", c.ID), zap.Error(err))
	c.closing = true
	c.nc.Close()
}
