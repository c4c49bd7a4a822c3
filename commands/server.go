// Package commands is the command table: it validates each command's
// arguments, runs it against the store inside the right kind of
// transaction, and writes its reply. It knows Redis's semantics and error
// texts; it knows nothing of the wire format (resp writes the bytes) or of
// Badger (store hides it).
//
// Every command is an entry {name, arity, flags, keys, handler} in one table
// per family (strings.go, keys.go, conn.go, tx.go). Write commands run in an
// exclusive store transaction, read-only ones in a shared one; a MULTI block
// runs in one exclusive transaction, so no other client's command
// interleaves.
package commands

import (
	"crypto/subtle"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
)

// Version is the Redis version this server answers to (HELLO, INFO).
const Version = "7.0.15"

// Config is what the command layer needs to know of the server's
// configuration.
type Config struct {
	// RequirePass is the password of the default user; empty means none.
	RequirePass string
	// Directives answers CONFIG GET: directive name → value.
	Directives func() map[string]string
	// Shutdown asks the process to shut down (SHUTDOWN).
	Shutdown func()
	// Persistence describes the store for INFO persistence.
	Persistence func() map[string]string
	Logger      *zap.Logger
	// Clock returns the time; nil is time.Now.
	Clock func() time.Time
}

// Server runs commands against a store. It implements resp.Handler.
type Server struct {
	cfg   Config
	store store.Store
	table *Table
	log   *zap.Logger
	wire  *resp.Server

	watch   watchRegistry
	cursors scanCursors

	// KeepDeadline, when set, tells EXPIRE and PERSIST to leave a value's
	// deadline alone (a running ONCE record's lease).
	KeepDeadline func(store.Value) bool

	stats struct {
		commands      atomic.Int64
		keyspaceHits  atomic.Int64
		keyspaceMiss  atomic.Int64
		expiredKeys   atomic.Int64
		rejectedCalls atomic.Int64
	}
	startOnce sync.Once
	started   time.Time
}

// New returns a command server over st with every command family
// registered.
func New(cfg Config, st store.Store) *Server {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	s := &Server{cfg: cfg, store: st, table: NewTable(), log: cfg.Logger, started: cfg.Clock()}
	s.watch.keys = make(map[watchKey]map[*resp.Conn]struct{})
	s.table.Register(stringCommands()...)
	s.table.Register(keyCommands()...)
	s.table.Register(connCommands()...)
	s.table.Register(serverCommands()...)
	s.table.Register(txCommands()...)
	s.table.Register(commandCommands()...)
	s.table.attachDocs()
	return s
}

// Table is the command table (for registering more families).
func (s *Server) Table() *Table { return s.table }

// Attach tells the command server which wire server it serves (CLIENT
// LIST, INFO clients).
func (s *Server) Attach(w *resp.Server) { s.wire = w }

// Ctx is one command's execution context.
type Ctx struct {
	*resp.Conn
	S    *Server
	Cmd  *Command
	Args [][]byte
	// Tx is the store transaction of a Write or ReadOnly command.
	Tx store.Tx
	// W is the reply writer.
	W *resp.Writer
}

// Fail writes err as an error reply.
func (x *Ctx) Fail(err error) { x.W.Error(errorText(err)) }

// Now is the command's clock in Unix milliseconds.
func (x *Ctx) Now() int64 {
	if x.Tx != nil {
		return x.Tx.Now()
	}
	return x.S.cfg.Clock().UnixMilli()
}

// Serve runs one command of c. It implements resp.Handler.
func (s *Server) Serve(c *resp.Conn, args [][]byte) {
	if len(args) == 0 {
		return
	}
	s.stats.commands.Add(1)
	cmd, errText := s.resolve(args)
	if cmd == nil {
		if c.InMulti {
			c.Dirty = true
		}
		s.stats.rejectedCalls.Add(1)
		c.W.Error(errText)
		return
	}
	if !c.Authed && cmd.Flags&NoAuth == 0 {
		if c.InMulti {
			c.Dirty = true
		}
		s.stats.rejectedCalls.Add(1)
		c.W.Error(ErrNoAuth.Error())
		return
	}
	c.Update(func(i *resp.Info) {
		i.LastCmd = cmd.Name
		i.LastActive = s.cfg.Clock()
	})
	if c.InMulti && cmd.Flags&NoMulti == 0 {
		c.Queue = append(c.Queue, args)
		c.Update(func(i *resp.Info) { i.Multi = len(c.Queue) })
		c.W.Simple("QUEUED")
		return
	}
	x := &Ctx{Conn: c, S: s, Cmd: cmd, Args: args, W: c.W}
	s.run(x)
}

// resolve finds the command (or subcommand) for args and checks its arity.
func (s *Server) resolve(args [][]byte) (*Command, string) {
	cmd := s.table.Lookup(args[0])
	if cmd == nil {
		return nil, unknownCommand(args)
	}
	if !arityOK(cmd.Arity, len(args)) {
		return nil, "ERR wrong number of arguments for '" + cmd.Name + "' command"
	}
	if len(cmd.Subcommands) > 0 && len(args) > 1 {
		sub := cmd.sub(args[1])
		if sub == nil {
			return nil, "ERR unknown subcommand '" + truncate(string(args[1]), 128) +
				"'. Try " + strings.ToUpper(cmd.Name) + " HELP."
		}
		if !arityOK(sub.Arity, len(args)) {
			return nil, "ERR wrong number of arguments for '" + sub.Name + "' command"
		}
		cmd = sub
	}
	return cmd, ""
}

func unknownCommand(args [][]byte) string {
	// As Redis: each argument quoted, the list cut near 128 bytes.
	var list strings.Builder
	for _, a := range args[1:] {
		if list.Len() >= 128 {
			break
		}
		list.WriteString("'" + truncate(string(a), 128-list.Len()) + "' ")
	}
	return "ERR unknown command '" + truncate(string(args[0]), 128) +
		"', with args beginning with: " + list.String()
}

func truncate(s string, n int) string {
	if n < 0 {
		n = 0
	}
	if len(s) > n {
		return s[:n]
	}
	return s
}

// run executes a resolved command in the transaction its flags ask for.
func (s *Server) run(x *Ctx) {
	switch {
	case x.Cmd.Flags&Write != 0:
		t, err := s.store.Update(func(tx store.Tx) error {
			x.Tx = s.watch.wrap(tx)
			x.Cmd.Run(x)
			return nil
		})
		x.Tx = nil
		if err != nil && t == nil {
			x.Fail(err)
			return
		}
		x.Await(t)
	case x.Cmd.Flags&ReadOnly != 0:
		err := s.store.View(func(tx store.Tx) error {
			x.Tx = tx
			x.Cmd.Run(x)
			return nil
		})
		x.Tx = nil
		if err != nil {
			x.Fail(err)
		}
	default:
		x.Cmd.Run(x)
	}
}

// Disconnected forgets a closed connection's WATCHes.
func (s *Server) Disconnected(c *resp.Conn) {
	s.watch.unwatchAll(c)
}

// checkPassword compares in constant time.
func (s *Server) checkPassword(p []byte) bool {
	want := s.cfg.RequirePass
	return subtle.ConstantTimeCompare([]byte(want), p) == 1
}
