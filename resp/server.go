// Package resp is the wire: a RESP2/RESP3 server on top of redcon, the
// per-connection state, and a reply writer that encodes each reply in the
// connection's protocol.
//
// A connection's replies to one pipeline of commands are buffered and sent
// together, after every write they acknowledge is durable (see Conn.Await).
// Nothing here knows what a command means: a Handler does.
package resp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"
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
	// MaxClients is the most connections served at once (Redis's
	// maxclients); 0 means no limit.
	MaxClients int
	// IdleTimeout closes connections idle that long (Redis's timeout);
	// 0 never does.
	IdleTimeout time.Duration
	// RequirePass makes new connections start unauthenticated.
	RequirePass bool
	Logger      *zap.Logger
}

// Server accepts connections and feeds their commands to a Handler.
type Server struct {
	cfg     Config
	handler Handler
	log     *zap.Logger

	mu        sync.Mutex
	listeners []net.Listener
	servers   []*redcon.Server
	conns     map[*Conn]struct{}
	closed    bool

	nextID   atomic.Int64
	gate     sync.RWMutex // commands hold it shared; Close exclusively
	wg       sync.WaitGroup
	started  time.Time
	Accepted atomic.Int64
	Rejected atomic.Int64
	Commands atomic.Int64

	requirePass atomic.Bool
}

// NewServer returns a server; it listens only on Start.
func NewServer(cfg Config, h Handler) *Server {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	s := &Server{cfg: cfg, handler: h, log: cfg.Logger, conns: make(map[*Conn]struct{})}
	s.requirePass.Store(cfg.RequirePass)
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
	s.started = time.Now()
	for _, addr := range s.cfg.Addrs {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			for _, l := range s.listeners {
				l.Close()
			}
			s.listeners = nil
			return fmt.Errorf("listen on %s: %w", addr, err)
		}
		s.listeners = append(s.listeners, ln)
	}
	for _, ln := range s.listeners {
		rs := redcon.NewServerNetwork("tcp", ln.Addr().String(), s.serveRESP, s.accept, s.closedConn)
		if s.cfg.IdleTimeout > 0 {
			rs.SetIdleClose(s.cfg.IdleTimeout)
		}
		s.servers = append(s.servers, rs)
		s.wg.Add(1)
		go func(ln net.Listener) {
			defer s.wg.Done()
			if err := rs.Serve(ln); err != nil {
				s.log.Error("serve", zap.Error(err))
			}
		}(ln)
	}
	return nil
}

// Addrs are the addresses actually listened on (useful with port 0).
func (s *Server) Addrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]net.Addr, len(s.listeners))
	for i, l := range s.listeners {
		out[i] = l.Addr()
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
	for _, rs := range s.servers {
		rs.Close()
	}
	for _, l := range s.listeners {
		l.Close()
	}
	for c := range s.conns {
		if c.detached {
			c.rc.NetConn().Close()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
	// Wait for commands in flight.
	s.gate.Lock()
	defer s.gate.Unlock()
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
			c.rc.NetConn().Close()
			return true
		}
	}
	return false
}

func (s *Server) accept(rc redcon.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.cfg.MaxClients > 0 && len(s.conns) >= s.cfg.MaxClients {
		s.Rejected.Add(1)
		rc.WriteError("ERR max number of clients reached")
		return false
	}
	now := time.Now()
	c := &Conn{
		ID:      s.nextID.Add(1),
		Addr:    rc.RemoteAddr(),
		Created: now,
		Authed:  !s.requirePass.Load(),
		W:       NewWriter(2),
		rc:      rc,
		srv:     s,
	}
	if nc := rc.NetConn(); nc != nil {
		c.LocalAddr = nc.LocalAddr().String()
	}
	c.info = Info{LastActive: now, Proto: 2, LastCmd: "NULL"}
	rc.SetContext(c)
	s.conns[c] = struct{}{}
	s.Accepted.Add(1)
	s.log.Debug("client connected", zap.Int64("id", c.ID), zap.String("addr", c.Addr))
	return true
}

func (s *Server) closedConn(rc redcon.Conn, err error) {
	c, ok := rc.Context().(*Conn)
	if !ok || c.detached {
		// A detached connection lives on in serveDetached.
		return
	}
	s.forget(c, err)
}

// forget unregisters a closed connection.
func (s *Server) forget(c *Conn, err error) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	if d, ok := s.handler.(interface{ Disconnected(*Conn) }); ok {
		d.Disconnected(c)
	}
	s.log.Debug("client disconnected", zap.Int64("id", c.ID), zap.String("addr", c.Addr), zap.Error(err))
}

func (s *Server) serveRESP(rc redcon.Conn, cmd redcon.Command) {
	c, ok := rc.Context().(*Conn)
	if !ok || c.closing {
		return
	}
	s.gate.RLock()
	defer s.gate.RUnlock()
	s.Commands.Add(1)
	s.handler.Serve(c, cmd.Args)
	if c.block != nil {
		// Send what came before, then leave redcon's loop: it cannot see
		// a disconnect while a handler blocks.
		s.flush(c)
		s.mu.Lock()
		closed := s.closed
		if !closed {
			s.wg.Add(1)
		}
		s.mu.Unlock()
		if closed {
			c.block = nil
			c.closing = true
			rc.Close()
			return
		}
		rest := rc.ReadPipeline()
		c.detached = true
		dc := rc.Detach()
		go s.serveDetached(c, dc, rest)
		return
	}
	if c.closing || len(rc.PeekPipeline()) == 0 || c.W.Len() > 64<<10 {
		s.flush(c)
	}
}

// serveDetached serves a connection after a blocking command, with its
// own loop: a reader goroutine notices a disconnect at once, even while a
// command blocks, and queues what the client pipelines meanwhile.
func (s *Server) serveDetached(c *Conn, dc redcon.DetachedConn, rest []redcon.Command) {
	defer s.wg.Done()
	gone := make(chan struct{})
	quit := make(chan struct{})
	cmds := make(chan redcon.Command, 64)
	go func() {
		defer close(gone)
		for {
			cmd, err := dc.ReadCommand()
			if err != nil {
				return
			}
			select {
			case cmds <- cmd:
			case <-quit:
				return
			}
		}
	}()
	defer func() {
		close(quit)
		dc.Close()
		<-gone
		s.forget(c, nil)
	}()
	send := func() bool {
		s.flush(c)
		if c.closing {
			return false
		}
		return dc.Flush() == nil
	}
	// run finishes blocked commands; it reports whether to go on.
	unblock := func() bool {
		for c.block != nil {
			fn := c.block
			c.block = nil
			fn(gone)
		}
		return send()
	}
	serve := func(args [][]byte) bool {
		s.gate.RLock()
		s.Commands.Add(1)
		s.handler.Serve(c, args)
		s.gate.RUnlock()
		return !c.closing
	}
	if !unblock() {
		return
	}
	for _, cmd := range rest {
		if !serve(cmd.Args) || !unblock() {
			return
		}
	}
	for {
		select {
		case cmd := <-cmds:
			if !serve(cmd.Args) {
				send()
				return
			}
			if c.block != nil || len(cmds) == 0 || c.W.Len() > 64<<10 {
				if !unblock() {
					return
				}
			}
		case <-gone:
			// Run what the client sent before it left, as Redis does.
			for len(cmds) > 0 {
				serve((<-cmds).Args)
				for c.block != nil {
					fn := c.block
					c.block = nil
					fn(gone) // returns at once: gone is closed
				}
			}
			return
		}
	}
}

// flush waits for the durability of what the buffered replies acknowledge,
// then hands the replies to redcon, which sends them after the pipeline.
func (s *Server) flush(c *Conn) {
	for _, w := range c.waits {
		if err := w.Wait(context.Background()); err != nil {
			s.log.Error("write not durable; closing the connection without acknowledging it",
				zap.Int64("id", c.ID), zap.Error(err))
			c.waits = c.waits[:0]
			c.W.Reset()
			c.closing = true
			c.rc.NetConn().Close()
			return
		}
	}
	c.waits = c.waits[:0]
	if c.W.Len() > 0 {
		c.rc.WriteRaw(c.W.Bytes())
		c.W.Reset()
	}
	if c.closing {
		c.rc.Close()
	}
}
