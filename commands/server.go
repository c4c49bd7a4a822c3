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
//
// Values are strings (store.KindString), ONCE records (the once engine's),
// hashes (hash.go), sets (sets.go), sorted sets (zsets.go) and lists
// (lists.go). A collection is one stored value that a write decodes and
// rewrites whole, so a write costs O(n) in its size. Blocking pops (of
// lists, listblock.go, and of sorted sets, zblock.go) wait without the
// store's lock, and are served, FIFO per key, by the write that gives
// their key a value of their kind, in that write's own transaction
// (block.go).
package commands

import (
	"crypto/sha256"
	"crypto/subtle"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/once"
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
	// ProtoMaxBulkLen is the longest string a command may build (APPEND,
	// SETRANGE); 0 means Redis's default, 512 MiB.
	ProtoMaxBulkLen int64
	// Directives answers CONFIG GET: directive name → value.
	Directives func() map[string]string
	// SetConfig runs CONFIG SET with its (directive, value) pairs, all or
	// none; its error is the reply's text after "ERR ". Nil: CONFIG SET
	// knows no directive.
	SetConfig func(pairs [][2]string) error
	// RewriteConfig runs CONFIG REWRITE: it rewrites the config file to
	// hold the configuration in force; its error is the reply's text
	// after "ERR ". Nil: the server runs without a config file.
	RewriteConfig func() error
	// Shutdown asks the process to shut down (SHUTDOWN).
	Shutdown func()
	// Persistence describes the store for INFO persistence.
	Persistence func() map[string]string
	// ExpiredKeys counts keys removed because their deadline passed.
	ExpiredKeys func() int64
	// ConfigFile is the absolute path of the configuration file, if
	// any (INFO server).
	ConfigFile string
	Logger     *zap.Logger
	// Clock returns the time; nil is time.Now.
	Clock func() time.Time
}

// Server runs commands against a store. It implements resp.Handler.
type Server struct {
	cfg   Config
	store store.Store
	// holder is store as a store.Holder, nil if it cannot hold its lock
	// across a pipeline (local.go).
	holder store.Holder
	// prefetcher is store as a store.Prefetcher, or nil (local.go).
	prefetcher store.Prefetcher
	// writeChecker is store as a store.WriteChecker, or nil.
	writeChecker store.WriteChecker
	table        *Table
	log          *zap.Logger
	wire         *resp.Server

	watch watchRegistry
	// setMaxIntset is set-max-intset-entries (sets.go).
	setMaxIntset atomic.Int64
	cursors      scanCursors
	// zpages caches the pages of sorted set objects (zsetpages.go).
	zpages zpageCache
	hooks  []TxHook
	infos  []InfoSection
	once   *once.Engine
	// onceWatched, if set (by tests), is called once a blocked ONCE
	// waiter's client is watched by the engine (blockOn).
	onceWatched func()
	// pause is CLIENT PAUSE's state (pause.go).
	pause pauser
	// helpHidden are the CLIENT subcommands (lower case) that CLIENT
	// HELP does not list (HideClientSubcommands).
	helpHidden map[string]bool
	// pubsub is who subscribed to what (pubsub.go).
	pubsub pubsubRegistry
	// monitors are the connections in MONITOR mode (monitor.go).
	monitors monitors
	// blocked are the clients blocked in a pop of a list or a sorted
	// set (block.go).
	blocked blocking
	// scripts is the script cache and the running scripts (scripting.go).
	scripts scripting

	// KeepDeadline, when set, tells EXPIRE and PERSIST to leave a value's
	// deadline alone (a running ONCE record's lease).
	KeepDeadline func(store.Value) bool

	stats struct {
		commands     atomic.Int64
		keyspaceHits atomic.Int64
		keyspaceMiss atomic.Int64
		expiredKeys  atomic.Int64
	}
	startOnce sync.Once
	started   time.Time
	// obs are the observability counters and the slow log (stats.go).
	obs observability

	// The settings CONFIG SET changes (configset.go).
	pass       atomic.Pointer[string]
	maxBulkLen atomic.Int64
	// hash-max-listpack-entries and -value (hash.go).
	hashMaxEntries, hashMaxValue atomic.Int64
	// zsetMaxEntries and zsetMaxValue are zset-max-listpack-entries and
	// zset-max-listpack-value (zsets.go).
	zsetMaxEntries, zsetMaxValue atomic.Int64
}

// New returns a command server over st with every command family
// registered.
func New(cfg Config, st store.Store) *Server {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	fakeClock := cfg.Clock != nil
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.ProtoMaxBulkLen <= 0 {
		cfg.ProtoMaxBulkLen = maxBulk
	}
	s := &Server{cfg: cfg, store: st, table: NewTable(), log: cfg.Logger, started: cfg.Clock()}
	s.holder, _ = st.(store.Holder)
	s.prefetcher, _ = st.(store.Prefetcher)
	s.writeChecker, _ = st.(store.WriteChecker)
	if ep, ok := st.(expiryPauser); ok {
		s.pause.expiry = ep.PauseExpiry
	}
	s.SetRequirePass(cfg.RequirePass)
	s.SetMaxIntsetEntries(DefaultSetMaxIntsetEntries)
	s.SetProtoMaxBulkLen(cfg.ProtoMaxBulkLen)
	s.SetHashLimits(defaultHashMaxEntries, defaultHashMaxValue)
	s.SetZsetLimits(-1, -1)
	s.watch.keys = make(map[watchKey]map[*resp.Conn]struct{})
	s.initObservability(fakeClock)
	// The blocked pops' hook comes before the ONCE engine's
	// (EnableOnce): the pops it makes for blocked clients at commit are
	// writes that hook sees too.
	s.hooks = []TxHook{&s.watch, &s.blocked}
	s.table.Register(stringCommands()...)
	s.table.Register(setCommands()...)
	s.table.Register(zsetCommands()...)
	s.table.Register(keyCommands()...)
	s.table.Register(hashCommands()...)
	s.table.Register(connCommands()...)
	s.table.Register(serverCommands()...)
	s.table.Register(txCommands()...)
	s.table.Register(commandCommands()...)
	s.table.Register(pubsubCommands()...)
	s.table.Register(standaloneCommands()...)
	s.table.Register(introspectCommands()...)
	s.table.Register(listCommands()...)
	s.table.Register(scriptingCommands()...)
	s.SetBusyReplyThreshold(DefaultBusyReplyThreshold)
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
	// InExec is set while EXEC runs the queued commands: blocking
	// commands answer at once, as in Redis.
	InExec bool
	// execTx is EXEC's exclusive transaction, for a queued command not
	// on keys that reads the store (INFO): the store's lock is EXEC's
	// already, and taking it again would wait for good.
	execTx store.Tx
	// execShared is set when execTx is a shared transaction: EXEC of
	// reads while the store refuses writes.
	execShared bool
	// start is when the command began, on the server's monotonic clock
	// (stats.go), and end when it ended (account).
	start, end time.Duration
	// after and panicked are what a write's transaction leaves to run
	// (kept here rather than in variables its closure captures, each of
	// which would be allocated per command).
	after    []func(store.Ticket)
	panicked *commandPanic
	// hooked is the wrapper of a write's transaction (Server.wrapIn).
	hooked hookTx
	// readFn and writeFn are read and write bound to this context once,
	// on its first run (run), rather than a closure made per command;
	// release keeps them for the context's next command.
	readFn, writeFn func(store.Tx) error
	// readAheadFn and writeAheadFn are readAhead and writeAhead, bound
	// the same way.
	readAheadFn, writeAheadFn func(store.Tx) error
	// digits is room for a number a command stores (INCR), which would
	// otherwise be allocated: Set copies what it stores.
	digits [20]byte
}

// ctxPool recycles the contexts of commands that Serve runs.
var ctxPool = sync.Pool{New: func() any { return new(Ctx) }}

// release returns x to ctxPool. Only a context that nothing holds on to
// may go back: not one a blocking command's function still uses, nor one
// whose command panicked.
func (x *Ctx) release() {
	// The wrapper's list of hooks keeps its room (wrapIn).
	*x = Ctx{readFn: x.readFn, writeFn: x.writeFn, readAheadFn: x.readAheadFn, writeAheadFn: x.writeAheadFn,
		hooked: hookTx{hooks: x.hooked.hooks[:0]}}
	ctxPool.Put(x)
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
	// The previous command's end is this one's start, if the connection
	// has not waited since (resp.Conn.Mark); until this command ends, the
	// next has none, whether this one runs or is refused.
	start, marked := c.Mark, c.MarkOK
	c.MarkOK = false
	cmd, errText := s.resolve(localOf(c), args)
	if cmd == nil {
		s.reject(c, args, errText)
		return
	}
	if !c.Authed && cmd.Flags&NoAuth == 0 && s.requirePass() != "" {
		s.reject(c, args, ErrNoAuth.Error())
		return
	}
	if c.W.Proto == 2 && c.Subscribed() && !allowedSubscribed(cmd) {
		// A RESP2 client in the Pub/Sub context, as in Redis 7.0.
		s.reject(c, args, errSubscribed(cmd))
		return
	}
	// One atomic load per command while no one monitors (monitor.go).
	monitoring := s.monitors.n.Load() != 0
	if monitoring && monitorRefuses(c, cmd) {
		s.reject(c, args, ErrMonitorKeyspace.Error())
		return
	}
	if s.scripts.n.Load() > 0 && cmd.Flags&AllowBusy == 0 {
		// A script runs: wait for it up to busy-reply-threshold, not
		// holding the store's lock across the pipeline meanwhile, and
		// answer -BUSY past it (scripting.go).
		s.release(c)
		if s.scripts.busy() {
			s.reject(c, args, ErrBusy.Error())
			return
		}
	}
	if !marked {
		start = s.mono()
	}
	s.active(c, cmd, start)
	if s.held(c, cmd, args) {
		// CLIENT PAUSE holds it (pause.go), before MULTI queues it,
		// as in Redis.
		return
	}
	if c.InMulti && cmd.Flags&AtOnce == 0 {
		if RefusedInMulti(cmd) {
			// SAVE, SHUTDOWN, BACKUP: refused, and the transaction
			// with them, as Redis does; CLIENT REPLY too.
			s.reject(c, args, ErrNotInMulti.Error())
			return
		}
		if err := s.writesRefused(cmd); err != nil {
			// A write, while the store refuses writes: refused as it
			// is queued, and the transaction with it, as in Redis.
			s.reject(c, args, errorText(err))
			return
		}
		c.Queue = append(c.Queue, args)
		c.Update(func(i *resp.Info) { i.Multi = len(c.Queue) })
		c.W.Simple("QUEUED")
		return
	}
	x := ctxPool.Get().(*Ctx)
	x.Conn, x.S, x.Cmd, x.Args, x.W, x.start = c, s, cmd, args, c.W, start
	mark := c.W.Len()
	defer func() {
		if p := recover(); p != nil {
			stack := zap.Stack("stack")
			if cp, ok := p.(*commandPanic); ok {
				p, stack = cp.value, zap.ByteString("stack", cp.stack)
			}
			s.log.Error("command panicked; answered with an error",
				zap.String("cmd", cmd.Name), zap.Any("panic", p), stack)
			// A panic may leave the store's lock with the connection's
			// hold (a read's, or a write's without after-commit work):
			// let it go before anything below waits for a writer.
			s.release(c)
			if fn := c.TakeBlock(); fn != nil {
				// The command had made itself a blocking one (a waiter
				// is queued): finish it as if its client had left, so
				// that it withdraws, and drop what it writes. Left
				// set, it would run after this error and answer the
				// command a second time.
				s.finishGone(fn)
			}
			c.W.Truncate(mark)
			c.W.Error("ERR internal error while running '" + cmd.Name + "' (the server logged it)")
		}
	}()
	s.beforeRun(c, cmd)
	s.run(x)
	if monitoring && monitored(cmd) {
		s.feedMonitors(c, cmd, args)
	}
	if !c.Blocking() {
		// The next command of the pipeline starts where this one
		// ended (account's clock reading).
		c.Mark, c.MarkOK = x.end, true
		if cmd.Flags&Borrows != 0 {
			c.Release(args)
		}
		x.release()
	}
}

// writesRefused is the error a write command would fail with now because
// the store refuses writes, nil if cmd does not write or the store takes
// writes (or cannot tell). PING counts as a write, as in Redis 7, whose
// PING answers -MISCONF while writes are refused, so that a health check
// sees a server that cannot persist.
func (s *Server) writesRefused(cmd *Command) error {
	if cmd.Flags&Write == 0 && cmd.Name != "ping" || s.writeChecker == nil {
		return nil
	}
	return s.writeChecker.WriteErr()
}

// finishGone runs a blocking command's function as if its client had
// left; a panic in it is logged, and goes no further.
func (s *Server) finishGone(fn resp.BlockFunc) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("a panicked command's blocking part panicked too", zap.Any("panic", p), zap.Stack("stack"))
		}
	}()
	gone := make(chan struct{})
	close(gone)
	fn(gone)
}

// commandPanic carries a panic recovered inside a transaction, with the
// stack where it happened, on to Serve.
type commandPanic struct {
	value any
	stack []byte
}

// reject answers a command refused before it ran. Inside MULTI it spoils
// the transaction; a refused EXEC discards it, as Redis does.
func (s *Server) reject(c *resp.Conn, args [][]byte, errText string) {
	s.rejected(args)
	if eq(args[0], "exec") {
		c.InMulti, c.Queue, c.Dirty = false, nil, false
		c.Update(func(i *resp.Info) { i.Multi = -1 })
		s.watch.unwatchAll(c)
		c.W.Error("EXECABORT Transaction discarded because of: " + strings.TrimPrefix(errText, "ERR "))
		return
	}
	if c.InMulti {
		c.Dirty = true
	}
	c.W.Error(errText)
}

// resolve finds the command (or subcommand) for args and checks its arity;
// l, if not nil, remembers the connection's last command name.
func (s *Server) resolve(l *local, args [][]byte) (*Command, string) {
	cmd := l.lookup(s.table, args[0])
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
				"'. Try " + strings.ToUpper(string(args[0])) + " HELP."
		}
		if !arityOK(sub.Arity, len(args)) {
			return nil, "ERR wrong number of arguments for '" + sub.Name + "' command"
		}
		cmd = sub
	}
	if cmd.Flags&Write != 0 && longKey(cmd, args) {
		// Refused before it runs, so that a write of several keys
		// (MSET) writes none of them.
		return nil, ErrKeyTooLong.Error()
	}
	return cmd, ""
}

// longKey reports whether args write a key longer than the store takes
// (store.MaxKeyLen): a key argument whose key spec may insert or update
// it. A key that is only read or removed (DEL, GETDEL, RENAME's source)
// passes: it cannot exist, or, at up to 8 bytes longer and without a
// deadline, was stored before the limit, and may still be removed.
func longKey(c *Command, args [][]byte) bool {
	first, last, step := keyRange(c, len(args))
	for i := first; i <= last; i += step {
		if len(args[i]) > store.MaxKeyLen && mayWrite(keySpecFlagsOf(c, specOf(c, i))) {
			return true
		}
	}
	return false
}

// mayWrite reports whether key spec flags let a command insert or update
// its key.
func mayWrite(flags []string) bool {
	return slices.Contains(flags, "insert") || slices.Contains(flags, "update")
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

// cString is b as C's %s prints it, up to its first NUL: Redis formats
// the arguments it quotes in its errors so.
func cString(b []byte) string { return truncate(string(b), len(b)) }

// truncate cuts s to n bytes, and at its first NUL as C's %s does.
func truncate(s string, n int) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	if n < 0 {
		n = 0
	}
	if len(s) > n {
		return s[:n]
	}
	return s
}

// run executes a resolved command in the transaction its flags ask for,
// and accounts for it (stats.go): the time measured is the command's run,
// not the wait for durability nor a blocking command's wait.
func (s *Server) run(x *Ctx) {
	if x.start == 0 {
		x.start = s.mono()
	}
	defer s.account(x, x.W.Errors())
	if x.readFn == nil {
		x.readFn, x.writeFn = x.read, x.write
		x.readAheadFn, x.writeAheadFn = x.readAhead, x.writeAhead
	}
	switch {
	case x.Cmd.Flags&Write != 0:
		x.after, x.panicked = nil, nil
		t, err := s.update(x)
		x.Tx = nil
		if len(x.after) > 0 {
			// The hooks' work after the commit (the ONCE engine's)
			// may wait for others: not under the store's lock.
			s.release(x.Conn)
		}
		runAfter(x.after, t)
		x.after = nil
		if p := x.panicked; p != nil {
			x.panicked = nil
			panic(p)
		}
		if err != nil && t == nil {
			x.Fail(err)
			return
		}
		x.Await(t)
	case x.Cmd.Flags&ReadOnly != 0:
		t, err := s.view(x)
		x.Tx = nil
		if err != nil {
			x.Fail(err)
		}
		// What it read may not be durable yet: answer once it is.
		x.Await(t)
	default:
		x.Cmd.Run(x)
	}
}

// read runs x's command in a read transaction (run).
func (x *Ctx) read(tx store.Tx) error {
	x.Tx = tx
	x.Cmd.Run(x)
	return nil
}

// write runs x's command in a write transaction (run). A command that
// panics still ends its transaction the normal way (the store keeps what
// it staged): the hooks are reset and their after-commit work runs; then
// the panic goes on to Serve, which answers it.
func (x *Ctx) write(tx store.Tx) error {
	x.Tx = x.S.wrapIn(tx, &x.hooked)
	defer func() {
		if p := recover(); p != nil {
			x.panicked = &commandPanic{value: p, stack: debug.Stack()}
		}
		x.after = x.S.commit()
		x.hooked.Tx = nil // the transaction ends with this function
	}()
	x.Cmd.Run(x)
	return nil
}

// Disconnected settles a closed connection's tally and forgets its
// WATCHes and subscriptions.
func (s *Server) Disconnected(c *resp.Conn) {
	s.BeforeReply(c) // commands it ran whose replies were not sent
	s.watch.unwatchAll(c)
	s.pubsub.dropAll(c)
	s.stopMonitor(c)
}

// checkPassword compares in constant time. Like Redis, it compares SHA-256
// digests, so that neither the time nor an early exit on a length
// mismatch tells anything about the password.
func (s *Server) checkPassword(p []byte) bool {
	want := sha256.Sum256([]byte(s.requirePass()))
	got := sha256.Sum256(p)
	return subtle.ConstantTimeCompare(want[:], got[:]) == 1
}

// TxHook observes, inside their transaction, the writes that commands
// make: WATCH and the ONCE engine (a deleted running record is a lapse).
type TxHook interface {
	// Active reports whether the hook needs to see writes now.
	Active() bool
	// Touched follows a Set, or a Delete that removed a key. It must not
	// keep key, which may be a buffer its writer reuses (the ONCE
	// engine's). tx is the hooked transaction: what a hook writes in it
	// (the ONCE engine's handover at a lapse) the hooks see too.
	Touched(tx store.Tx, db int, key []byte)
	// Flushing precedes and Flushed follows the flush of db, in the
	// hooked transaction as Touched.
	Flushing(tx store.Tx, db int)
	Flushed(tx store.Tx, db int)
	// Commit is called at the end of every exclusive transaction; what it
	// returns runs after the transaction, with its durability ticket.
	Commit() func(store.Ticket)
}

// SetHook is implemented by a TxHook that needs the value a Set stored:
// after a Set, it is called instead of Touched.
type SetHook interface {
	Stored(tx store.Tx, db int, key []byte, v store.Value)
}

// SwapHook is implemented by a TxHook that needs to know of SWAPDB:
// Swapping precedes and Swapped follows the swap of databases a and b, in
// the hooked transaction as Touched.
type SwapHook interface {
	Swapping(tx store.Tx, a, b int)
	Swapped(tx store.Tx, a, b int)
}

// AddHook registers a TxHook.
func (s *Server) AddHook(h TxHook) { s.hooks = append(s.hooks, h) }

// wrap returns tx, reporting its writes to the hooks that are active.
func (s *Server) wrap(tx store.Tx) store.Tx {
	return s.wrapIn(tx, nil)
}

// wrapIn is wrap, building the wrapper in buf when it is not nil: a
// command's context keeps one, whose list of hooks keeps its room from
// command to command (a wrapper and a list made per write command were
// two allocations of every ONCE command).
func (s *Server) wrapIn(tx store.Tx, buf *hookTx) store.Tx {
	switch tx.(type) {
	case hookTx, *hookTx:
		return tx
	}
	var active []TxHook
	if buf != nil {
		active = buf.hooks[:0] // its own room, never s.hooks
	}
	for _, h := range s.hooks {
		if h.Active() {
			active = append(active, h)
		}
	}
	if len(active) == 0 {
		if buf != nil {
			buf.Tx, buf.hooks = nil, active
		}
		return tx
	}
	if buf == nil {
		return hookTx{Tx: tx, hooks: active}
	}
	*buf = hookTx{Tx: tx, hooks: active}
	return buf
}

// commit gathers the hooks' after-commit work; call it inside the
// transaction.
func (s *Server) commit() []func(store.Ticket) {
	var out []func(store.Ticket)
	for _, h := range s.hooks {
		if f := h.Commit(); f != nil {
			out = append(out, f)
		}
	}
	return out
}

func runAfter(fs []func(store.Ticket), t store.Ticket) {
	if t == nil {
		t = store.Done{}
	}
	for _, f := range fs {
		f(t)
	}
}

type hookTx struct {
	store.Tx
	hooks []TxHook
}

func (h hookTx) Set(db int, key []byte, v store.Value) error {
	err := h.Tx.Set(db, key, v)
	if err == nil {
		for _, hk := range h.hooks {
			if sh, ok := hk.(SetHook); ok {
				sh.Stored(h, db, key, v)
			} else {
				hk.Touched(h, db, key)
			}
		}
	}
	return err
}

func (h hookTx) Delete(db int, key []byte) (bool, error) {
	ok, err := h.Tx.Delete(db, key)
	if ok {
		for _, hk := range h.hooks {
			hk.Touched(h, db, key)
		}
	}
	return ok, err
}

// Flush empties the databases dbs. A hook's writes after the flush (the
// ONCE engine hands the claims of the dbs' running records to their
// waiters) are hooked writes too: a WATCH of such a key sees it created.
func (h hookTx) Flush(dbs ...int) error {
	for _, db := range dbs {
		for _, hk := range h.hooks {
			hk.Flushing(h, db)
		}
	}
	err := h.Tx.Flush(dbs...)
	for _, db := range dbs {
		for _, hk := range h.hooks {
			hk.Flushed(h, db)
		}
	}
	return err
}

// SwapDBs swaps databases a and b (store.DBSwapper) between the
// SwapHooks' Swapping and Swapped. A database swapped with itself
// changes nothing and no hook is told: Redis 7.0's dbSwapDatabases
// returns before touchAllWatchedKeysInDb, so SWAPDB 0 0 aborts no EXEC.
func (h hookTx) SwapDBs(a, b int) error {
	sw, ok := h.Tx.(store.DBSwapper)
	if !ok {
		return ErrNoSwap
	}
	if a == b {
		return sw.SwapDBs(a, b)
	}
	for _, hk := range h.hooks {
		if sh, ok := hk.(SwapHook); ok {
			sh.Swapping(h, a, b)
		}
	}
	if err := sw.SwapDBs(a, b); err != nil {
		return err
	}
	for _, hk := range h.hooks {
		if sh, ok := hk.(SwapHook); ok {
			sh.Swapped(h, a, b)
		}
	}
	return nil
}

// InfoSection is an extra INFO section.
type InfoSection struct {
	Name string
	// Lines returns "field:value" pairs in order.
	Lines func() [][2]string
	// LinesIn, if set, is used instead of Lines, inside an exclusive
	// store transaction: INFO's own, or EXEC's when INFO is queued in
	// MULTI.
	LinesIn func(tx store.Tx) [][2]string
}

// HideClientSubcommands leaves the CLIENT subcommands names out of CLIENT
// HELP: those that whoever serves this server's connections refuses
// before they reach it (the proxy: PAUSE, UNPAUSE, UNBLOCK). Call it
// before serving.
func (s *Server) HideClientSubcommands(names ...string) {
	if s.helpHidden == nil {
		s.helpHidden = map[string]bool{}
	}
	for _, n := range names {
		s.helpHidden[strings.ToLower(n)] = true
	}
}

// AddInfoSection registers an extra INFO section, shown after the
// built-in ones.
func (s *Server) AddInfoSection(sec InfoSection) { s.infos = append(s.infos, sec) }
