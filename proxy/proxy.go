// Package proxy runs oncekv as a stateless proxy in front of a Redis
// server, a Redis Cluster or a Sentinel-watched master: clients talk to it
// as to one Redis 7 server, and any number of proxies can share one
// upstream.
//
// # What it promises
//
//   - Plain commands are forwarded and their replies copied byte for byte:
//     the client sees exactly what the upstream answered, in the protocol
//     it chose (each upstream connection speaks the client's protocol:
//     there is one pool per node and protocol, and HELLO 3 picks the RESP3
//     pool).
//   - A client's commands reach the upstream in the order it sent them,
//     on one connection per node per pipeline, so a pipeline stays a
//     pipeline: the proxy writes the whole batch, then reads the replies
//     (see session.go).
//   - MULTI/EXEC/WATCH run on one upstream connection pinned to the client
//     from WATCH or MULTI until EXEC, DISCARD or UNWATCH: what the upstream
//     promises of a transaction (atomic, isolated, WATCH conflicts seen,
//     also those caused through another proxy) holds unchanged.
//   - SELECT: with one server, each pooled connection is switched to the
//     client's database before a command of it is sent; in a cluster only
//     database 0 exists and SELECT answers as Redis Cluster does.
//   - Cluster: commands go to the master owning their keys' slot (key
//     positions from the command table, then from the upstream's own
//     COMMAND, then COMMAND GETKEYS for commands whose keys move); keys in
//     different slots get Redis Cluster's CROSSSLOT error; MOVED refreshes
//     the slot map and retries; ASK is followed with ASKING; TRYAGAIN (a
//     multi-key command whose keys a slot's migration split between two
//     nodes: it did not run) is retried for up to 2 s, as the move of the
//     slot ends, and then given to the client. DBSIZE, KEYS,
//     SCAN, FLUSHDB, FLUSHALL, RANDOMKEY and SCRIPT LOAD/FLUSH cover every
//     master (SCAN's cursor carries the master's index, see cluster.go).
//   - WAIT counts the replicas that have the client's earlier writes, on
//     every master they may have gone to (local.go says how).
//   - ONCE.* commands are run by a OnceHandler (package proxy/onceup), in
//     the client's database, and its promises hold across every proxy
//     sharing the upstream. A DEL or UNLINK that removed keys, and a
//     FLUSHDB or FLUSHALL, also inside MULTI/EXEC, is announced to it
//     (notice.go), so that a running record removed that way lapses at
//     once for its waiters on every proxy. Other ways of removing a record
//     (SET, RENAME, COPY, MOVE, SWAPDB or RESTORE over it, a command sent to the
//     upstream directly, eviction, a notice dropped because the queue was
//     full) are noticed at its lease deadline.
//
// # What the proxy answers itself
//
// The connection's own state: PING, ECHO, HELLO, AUTH (the proxy's
// requirepass; the upstream's password is part of --upstream), CLIENT,
// SELECT's bookkeeping, QUIT, RESET, COMMAND (oncekv's own table), CONFIG
// (the proxy's directives), INFO (the proxy's sections, with the upstream's
// keyspace) and SHUTDOWN (of the proxy, never of the upstream).
//
// # Caveats
//
//   - Clients authenticate to the proxy only; every command runs upstream
//     as the user of --upstream: an upstream ACL user cannot AUTH through
//     the proxy, and ACL WHOAMI names the proxy's user.
//   - A subscriber gets an upstream connection of its own, whose messages
//     are relayed as they come (pubsub.go); SUBSCRIBE cannot be queued in
//     MULTI. MONITOR and replication commands are refused: they turn a
//     connection into a stream, which a pooled connection cannot be.
//     REPLICAOF and FAILOVER are refused too (send them to the upstream).
//   - Blocking commands (BLPOP, XREAD BLOCK…) hold one upstream connection
//     each while they wait; a client that leaves closes it.
//   - In a cluster, commands without keys (TIME, PUBLISH, INFO-like
//     commands of the upstream) go to any master; SLOWLOG and other
//     per-node commands then describe that one node. SCRIPT LOAD and FLUSH
//     go to every master, FUNCTION does not.
//   - Inside MULTI, the commands the proxy answers itself (CLIENT, HELLO,
//     CONFIG, INFO…) are queued by the proxy and run at EXEC, their replies
//     spliced into EXEC's array; ONCE commands cannot be queued (their
//     atomicity is the upstream's, through another connection).
//   - In a cluster, a transaction runs on the node of its first key (or the
//     node WATCH chose); a command on another node's key gets the reply
//     Redis Cluster gives (MOVED, which aborts the EXEC). When the
//     transaction's own slot moves before EXEC (a resharding: the node
//     answers ASK, MOVED or TRYAGAIN for its slot, at queueing or at EXEC,
//     and runs none of it), a transaction without WATCH is answered QUEUED
//     and run again, whole, where the slot is (ASKING first for ASK), as a
//     cluster client does (tx.go, replayMoved); with WATCH, the node's
//     replies are given. A first WATCH answered MOVED or ASK (the map was
//     stale, or the key left a slot being migrated) did nothing: it is sent
//     again to the node named, which the transaction is then pinned to
//     (with ASKING before WATCH and MULTI after an ASK).
//   - A command that fails because an upstream connection broke is not
//     retried (it may have run); the client gets "ERR upstream …". Only a
//     command that never left (the dial failed) is retried after a topology
//     refresh. When the broken connection is the one pinned to a client's
//     WATCH or MULTI, the upstream forgot the transaction: the client's
//     connection is closed instead, without a reply to that command, as
//     the upstream's restart would close it (session.loseTx); so it is
//     when the connection of a transaction run again where its slot went
//     breaks after its EXEC was written (it may have run).
//   - A SCAN across a cluster whose set of masters changes during the scan
//     may miss or repeat keys, as with any cluster client.
package proxy

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/commands"
	"github.com/oncekv/oncekv/resp"
)

// OnceHandler runs the ONCE.* commands against the upstream, in database
// db (the client's SELECT; always 0 in a cluster). It writes its reply to
// w (it may call c.Block for a waiting command).
type OnceHandler interface {
	Command(c *resp.Conn, w *resp.Writer, db int, args [][]byte)
}

// Config configures a Proxy.
type Config struct {
	Upstream Upstream
	// Local is the command server that answers the commands about the
	// connection itself (PING, HELLO, AUTH, CLIENT, COMMAND, CONFIG…). It
	// has no store: the proxy never sends it a command that needs one.
	Local *commands.Server
	// Once runs the ONCE commands; nil answers them with an error.
	Once OnceHandler
	// RequirePass is the proxy's own password (requirepass).
	RequirePass string
	// Renames are rename-command: lower-case old name → new name ("":
	// disabled). A renamed command answers under its new name only and
	// is forwarded under its own.
	Renames map[string]string
	// RefreshInterval is how often the cluster's slot map or the
	// sentinels' master is read again besides on MOVED and errors; 0
	// means 5 s for a cluster, 1 s for sentinels.
	RefreshInterval time.Duration
	Logger          *zap.Logger
}

// Proxy is a resp.Handler that forwards to the upstream.
type Proxy struct {
	cfg   Config
	up    Upstream
	local *commands.Server
	table *commands.Table
	once  OnceHandler
	log   *zap.Logger

	pass atomic.Bool // a requirepass is set
	// renamedTo maps a new name to the command's own; renamedAway holds
	// the own names that no longer answer (rename-command).
	renamedTo   map[string][]byte
	renamedAway map[string]bool

	nodesMu sync.Mutex
	nodes   map[string]*node
	liveMu  sync.Mutex
	live    map[*upConn]struct{}
	closed  atomic.Bool

	// master is the one server (standalone) or the sentinels' master.
	master atomic.Pointer[node]
	// cl is the cluster's slot map (cluster mode only).
	cl *clusterMap
	// meta is the upstream's COMMAND table, read once it answers.
	meta atomic.Pointer[commandMeta]

	// notices queue the removals to announce to the ONCE handler
	// (notice.go); nil when it does not listen.
	notices     chan notice
	noticesDone chan struct{}

	refreshMu   sync.Mutex
	lastRefresh time.Time
	kick        chan struct{}
	stop        chan struct{}
	done        chan struct{}
	startOnce   sync.Once
	started     time.Time

	// txSent, when set (tests only), is called by runTx once the
	// transaction it runs again is written to conn.
	txSent atomic.Pointer[func(conn *upConn)]

	stats struct {
		forwarded, moved, ask, tryagain        atomic.Int64
		upstreamErrors, dials, dialErrors      atomic.Int64
		refreshes, refreshErrors, crossslot    atomic.Int64
		pinned, fanouts, sessions              atomic.Int64
		onceCommands, refused, blockedCommands atomic.Int64
		noticesSent, noticesDropped            atomic.Int64
		lostTx, subscribers                    atomic.Int64
	}
}

// New returns a proxy; it connects to nothing until Start.
func New(cfg Config) *Proxy {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.RefreshInterval <= 0 {
		cfg.RefreshInterval = 5 * time.Second
		if cfg.Upstream.Mode == Sentinel {
			cfg.RefreshInterval = time.Second
		}
	}
	p := &Proxy{
		cfg: cfg, up: cfg.Upstream, local: cfg.Local, once: cfg.Once, log: cfg.Logger,
		nodes: make(map[string]*node), live: make(map[*upConn]struct{}),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	p.table = cfg.Local.Table()
	p.pass.Store(cfg.RequirePass != "")
	cfg.Local.AddInfoSection(commands.InfoSection{Name: "proxy", Lines: p.infoLines})
	// CLIENT HELP lists what the proxy serves.
	cfg.Local.HideClientSubcommands(refusedClient...)
	for from, to := range cfg.Renames {
		if from == to {
			continue
		}
		if p.renamedAway == nil {
			p.renamedTo, p.renamedAway = map[string][]byte{}, map[string]bool{}
		}
		p.renamedAway[from] = true
		if to != "" {
			p.renamedTo[to] = []byte(from)
		}
	}
	switch cfg.Upstream.Mode {
	case Standalone:
		p.master.Store(p.node(cfg.Upstream.Addrs[0]))
	case Cluster:
		p.cl = &clusterMap{}
	}
	return p
}

// SetOnce sets the ONCE command handler (before Start).
func (p *Proxy) SetOnce(h OnceHandler) { p.once = h }

// SetRequirePass tells the proxy whether a password is now required
// (CONFIG SET requirepass); the local command server checks it.
func (p *Proxy) SetRequirePass(pass string) { p.pass.Store(pass != "") }

// Upstream is the upstream the proxy forwards to.
func (p *Proxy) Upstream() Upstream { return p.up }

// Start reads the topology (the cluster's slots, the sentinels' master)
// and the upstream's command table, then keeps them fresh in the
// background. An upstream that does not answer yet is not an error: the
// proxy starts, answers with errors, and keeps trying (so that it can
// start before its cluster, as in docker-compose).
func (p *Proxy) Start() error {
	p.started = time.Now()
	if p.up.Mode != Standalone {
		// Routing needs the topology: read it now if it answers.
		if err := p.refresh(); err != nil {
			p.log.Warn("upstream not reachable yet; retrying in the background",
				zap.String("upstream", p.up.String()), zap.Error(err))
		}
	} else {
		p.refreshSoon() // the command table, in the background
	}
	p.startOnce.Do(func() {
		if t, ok := p.once.(toucher); ok {
			p.notices = make(chan notice, noticeQueue)
			p.noticesDone = make(chan struct{})
			go p.noticeWorker(t)
		}
		go p.loop()
	})
	return nil
}

// MasterAddr is the address of the master the sentinels name (Sentinel
// mode), or of the one server (standalone); "" in a cluster or before the
// sentinels answered.
func (p *Proxy) MasterAddr() string {
	if n := p.master.Load(); n != nil {
		return n.addr
	}
	return ""
}

// Close closes every upstream connection: commands waiting on one fail.
func (p *Proxy) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	p.startOnce.Do(func() { close(p.done) })
	close(p.stop)
	defer func() { <-p.done }() // after the connections close under it
	if p.noticesDone != nil {
		defer func() { <-p.noticesDone }()
	}
	p.nodesMu.Lock()
	nodes := make([]*node, 0, len(p.nodes))
	for _, n := range p.nodes {
		nodes = append(nodes, n)
	}
	p.nodesMu.Unlock()
	for _, n := range nodes {
		n.closeIdle()
	}
	p.liveMu.Lock()
	for c := range p.live {
		c.nc.Close()
	}
	p.liveMu.Unlock()
	return nil
}

// loop refreshes the topology every RefreshInterval, and soon after a
// kick (a MOVED, a broken connection), at most every minRefreshGap.
func (p *Proxy) loop() {
	defer close(p.done)
	t := time.NewTicker(p.cfg.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		case <-p.kick:
		}
		if err := p.refresh(); err != nil {
			p.log.Debug("topology refresh failed", zap.Error(err))
		}
	}
}

// minRefreshGap bounds how often the topology is read again.
const minRefreshGap = 100 * time.Millisecond

// refreshSoon asks the background loop to read the topology again.
func (p *Proxy) refreshSoon() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// refresh reads the topology and, if not read yet, the command table.
func (p *Proxy) refresh() error {
	p.refreshMu.Lock()
	defer p.refreshMu.Unlock()
	if time.Since(p.lastRefresh) < minRefreshGap {
		return nil
	}
	p.lastRefresh = time.Now()
	var err error
	switch p.up.Mode {
	case Cluster:
		err = p.loadSlots()
	case Sentinel:
		err = p.resolveMaster()
	}
	if err != nil {
		p.stats.refreshErrors.Add(1)
		return err
	}
	p.stats.refreshes.Add(1)
	if p.meta.Load() == nil {
		if m, err := p.loadMeta(); err == nil {
			p.meta.Store(m)
		} else {
			return err
		}
	}
	return nil
}

// kind is how the proxy serves a command.
type kind uint8

const (
	kForward  kind = iota // to the node of its keys (the default)
	kPure                 // answered here, touches nothing: PING, ECHO
	kLocal                // answered by the local command server
	kQuit                 // QUIT
	kReset                // RESET
	kShutdown             // SHUTDOWN: of the proxy
	kSelect               // SELECT
	kInfo                 // INFO
	kMulti
	kExec
	kDiscard
	kWatch
	kUnwatch
	kDBSize // cluster: summed over the masters
	kKeys   // cluster: merged
	kScan   // cluster: across the masters
	kFlush  // cluster: on every master
	kRandom // cluster: any master that has a key
	kScript // cluster: SCRIPT LOAD/FLUSH on every master
	kBlocking
	kWait // WAIT: on every master, after a write of the proxy's own
	kRefused
	kOnce
	kSubscribe // SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE: on a connection of the client's own (pubsub.go)
)

var kinds = map[string]kind{
	"ping": kPure, "echo": kPure,
	"hello": kLocal, "auth": kLocal, "client": kLocal, "command": kLocal, "config": kLocal,
	"quit": kQuit, "reset": kReset, "shutdown": kShutdown, "select": kSelect, "info": kInfo,
	"multi": kMulti, "exec": kExec, "discard": kDiscard, "watch": kWatch, "unwatch": kUnwatch,
	"dbsize": kDBSize, "keys": kKeys, "scan": kScan, "flushdb": kFlush, "flushall": kFlush,
	"randomkey": kRandom, "script": kScript,
	"blpop": kBlocking, "brpop": kBlocking, "brpoplpush": kBlocking, "blmove": kBlocking,
	"blmpop": kBlocking, "bzpopmin": kBlocking, "bzpopmax": kBlocking, "bzmpop": kBlocking,
	"xread": kBlocking, "xreadgroup": kBlocking, "wait": kWait, "waitaof": kBlocking,
	"subscribe": kSubscribe, "psubscribe": kSubscribe, "ssubscribe": kSubscribe,
	"monitor": kRefused, "sync": kRefused, "psync": kRefused, "replconf": kRefused,
	"replicaof": kRefused, "slaveof": kRefused, "failover": kRefused,
	"once.claim": kOnce, "once.complete": kOnce, "once.abort": kOnce,
	"once.extend": kOnce, "once.wait": kOnce, "once.status": kOnce,
}

// kindOf looks a command's name up in any case, without allocating.
func kindOf(name []byte) kind {
	var buf [16]byte
	if len(name) > len(buf) {
		return kForward
	}
	return kinds[string(lower(buf[:0], name))]
}

func lower(dst, b []byte) []byte {
	for _, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// Serve runs one command of c. It implements resp.Handler.
func (p *Proxy) Serve(c *resp.Conn, args [][]byte) {
	if len(args) == 0 {
		return
	}
	// A command served locally may follow waits for the upstream
	// (settle, a forward's dial or write): it reads the clock itself
	// rather than start where the command before it ended.
	c.MarkOK = false
	s := p.sessionOf(c)
	if s.lost {
		return // the connection closes (loseTx)
	}
	if p.renamedAway != nil {
		name := string(lower(nil, args[0]))
		if own, ok := p.renamedTo[name]; ok {
			args[0] = own
		} else if p.renamedAway[name] {
			if s.inTx() {
				// An unknown command spoils the transaction, as in
				// Redis (and here for a name no one knows).
				s.dirty = true
			}
			c.W.Error(unknownCommand(args))
			return
		}
	}
	k := kindOf(args[0])
	if k == kLocal && clientRefused(args) {
		k = kRefused
	}
	if !c.Authed && p.pass.Load() {
		p.unauthenticated(s, k, args)
		return
	}
	switch {
	case s.inTx():
		p.serveTx(s, k, args)
	case s.sub != nil:
		p.serveSubscribed(s, k, args)
	default:
		p.serveCommand(s, k, args)
	}
	if s.lost {
		s.dropLost()
	}
}

// serveCommand runs a command outside MULTI.
func (p *Proxy) serveCommand(s *session, k kind, args [][]byte) {
	c := s.c
	switch k {
	case kForward:
		p.forward(s, args)
	case kPure:
		p.local.Serve(c, args)
	case kLocal, kQuit, kShutdown:
		s.settle()
		p.local.Serve(c, args)
		s.protocolChanged()
	case kReset:
		s.settle()
		s.reset()
		p.local.Serve(c, args)
	case kSelect:
		s.settle()
		p.selectDB(s, args)
	case kInfo:
		s.settle()
		p.info(s, args)
	case kMulti:
		s.settle()
		p.multi(s, args)
	case kExec, kDiscard:
		// Outside MULTI: the local server answers EXEC/DISCARD without
		// MULTI, and their arity errors, exactly as Redis words them.
		s.settle()
		p.local.Serve(c, args)
	case kWatch:
		s.settle()
		p.watch(s, args)
	case kUnwatch:
		s.settle()
		p.unwatch(s, args)
	case kDBSize, kKeys, kScan, kFlush, kRandom, kScript:
		if p.cl == nil {
			p.forward(s, args)
			return
		}
		s.settle()
		p.fanout(s, k, args)
	case kBlocking:
		s.settle()
		p.blocking(s, args)
	case kWait:
		s.settle()
		p.wait(s, args)
	case kRefused:
		p.stats.refused.Add(1)
		c.W.Error(refusedText(args))
	case kOnce:
		s.settle()
		p.onceCommand(s, args)
	case kSubscribe:
		s.settle()
		p.subscribe(s, args)
	}
}

// unauthenticated answers a client that has not authenticated while a
// password is required. As Redis 7 does, an unknown command and a wrong
// number of arguments are reported before NOAUTH; the local server does
// that for the commands of oncekv's table, and for the names the upstream
// does not know either.
func (p *Proxy) unauthenticated(s *session, k kind, args [][]byte) {
	if k == kReset {
		s.reset()
	}
	if p.table.Lookup(args[0]) != nil || k == kOnce {
		p.local.Serve(s.c, args)
		return
	}
	m := p.meta.Load()
	if m == nil {
		// The upstream's table is not read yet: the command most likely
		// exists there.
		s.c.W.Error(commands.ErrNoAuth.Error())
		return
	}
	e, known := m.lookup(args)
	if !known {
		p.local.Serve(s.c, args) // the unknown-command error
		return
	}
	if !arityOK(e.arity, len(args)) {
		s.c.W.Error("ERR wrong number of arguments for '" + e.name + "' command")
		return
	}
	s.c.W.Error(commands.ErrNoAuth.Error())
}

// Disconnected releases a closed client's upstream connections: those
// that owe replies or hold a transaction are closed, the others pooled.
func (p *Proxy) Disconnected(c *resp.Conn) {
	if s, ok := c.Watch.(*session); ok {
		s.closeAll()
	}
	if d, ok := p.once.(interface{ Disconnected(*resp.Conn) }); ok {
		d.Disconnected(c)
	}
	p.local.Disconnected(c)
}

// BeforeReply settles what the local server counted for c's commands
// before c's replies go out (resp.Replier).
func (p *Proxy) BeforeReply(c *resp.Conn) { p.local.BeforeReply(c) }

// ErrorReplied counts error replies for INFO errorstats (resp.ErrorObserver).
func (p *Proxy) ErrorReplied(msg string) { p.local.ErrorReplied(msg) }

// onceCommand runs a ONCE command through the handler.
func (p *Proxy) onceCommand(s *session, args [][]byte) {
	p.stats.onceCommands.Add(1)
	if p.once == nil {
		s.c.W.Error("ERR ONCE commands are not available: this proxy has no ONCE engine")
		return
	}
	s.c.Update(func(i *resp.Info) { i.LastCmd = string(lower(nil, args[0])); i.LastActive = time.Now() })
	p.once.Command(s.c, s.c.W, s.c.DB, args)
}

// refusedText is the reply to a command the proxy does not forward:
// MONITOR and replication turn a connection into a stream, which
// a pooled upstream connection cannot be; REPLICAOF and FAILOVER change
// the upstream's roles, which is the upstream's operators' business; so
// do CLIENT PAUSE and UNPAUSE, which pause the upstream's clients, of
// which the proxy's pool is a few (clientRefused).
func refusedText(args [][]byte) string {
	name := string(lower(nil, args[0]))
	if clientRefused(args) {
		name += "|" + string(lower(nil, args[1]))
		if name == "client|unblock" {
			return "ERR 'client|unblock' is not supported through the oncekv proxy, whose client IDs are its own; end a blocked client with CLIENT KILL ID"
		}
	}
	return "ERR '" + name + "' is not supported through the oncekv proxy; send it to the upstream directly"
}

// clientRefused reports whether args are CLIENT PAUSE, UNPAUSE or
// UNBLOCK, which the proxy refuses. The proxy's local server would pause
// only the commands it answers itself, and UNBLOCK would need to end a
// wait whose upstream connection is blocked in a command of its own.
func clientRefused(args [][]byte) bool {
	if len(args) < 2 || !strings.EqualFold(string(args[0]), "client") {
		return false
	}
	for _, sub := range refusedClient {
		if strings.EqualFold(string(args[1]), sub) {
			return true
		}
	}
	return false
}

// refusedClient are the CLIENT subcommands the proxy refuses
// (clientRefused); CLIENT HELP does not list them.
var refusedClient = []string{"pause", "unpause", "unblock"}

// unknownCommand is Redis's reply to an unknown command: each argument
// quoted, the list cut near 128 bytes.
func unknownCommand(args [][]byte) string {
	cut := func(s string, n int) string {
		if i := strings.IndexByte(s, 0); i >= 0 {
			s = s[:i]
		}
		return s[:min(len(s), max(n, 0))]
	}
	var list strings.Builder
	for _, a := range args[1:] {
		if list.Len() >= 128 {
			break
		}
		list.WriteString("'" + cut(string(a), 128-list.Len()) + "' ")
	}
	return "ERR unknown command '" + cut(string(args[0]), 128) + "', with args beginning with: " + list.String()
}

func arityOK(arity, n int) bool {
	if arity >= 0 {
		return n == arity
	}
	return n >= -arity
}
