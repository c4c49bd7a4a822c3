package commands

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
)

// Scripting: EVAL, EVALSHA, their _RO forms and SCRIPT, as Redis 7.0 has
// them (FUNCTION and FCALL are not here). A script runs inside one
// exclusive store transaction, as EXEC's queue does, so that no other
// client's command runs in the middle of it (KV-1); EVAL_RO and
// EVALSHA_RO run inside a shared one. The Lua side (the sandbox, the
// redis library, the conversions) is lua.go.

func scriptingCommands() []*Command {
	scripting := []string{"slow", "scripting"}
	eval := func(name string, flags Flags, run Handler) *Command {
		return &Command{Name: name, Arity: -3, Flags: flags | NoScript | Stale | SkipMonitor | NoMandatoryKeys,
			NumKeys: 2, Categories: scripting, Run: run}
	}
	sub := func(name string, arity int, flags Flags, run Handler) *Command {
		return &Command{Name: "script|" + name, Arity: arity, Flags: flags, Categories: scripting, Run: run}
	}
	return []*Command{
		eval("eval", 0, evalCmd(false, false)),
		eval("evalsha", 0, evalCmd(true, false)),
		eval("eval_ro", ReadOnly, evalCmd(false, true)),
		eval("evalsha_ro", ReadOnly, evalCmd(true, true)),
		{Name: "script", Arity: -2, Categories: []string{"slow"}, Run: scriptHelpCmd,
			Subcommands: []*Command{
				sub("debug", 3, NoScript, scriptDebugCmd),
				sub("exists", -3, NoScript, scriptExistsCmd),
				sub("flush", -2, NoScript, scriptFlushCmd),
				sub("help", 2, Loading|Stale, scriptHelpCmd),
				sub("kill", 2, NoScript|AllowBusy, scriptKillCmd),
				sub("load", 3, NoScript|Stale, scriptLoadCmd),
			}},
	}
}

// DefaultBusyReplyThreshold is Redis's busy-reply-threshold (lua-time-limit)
// default: how long a script runs before other clients get -BUSY.
const DefaultBusyReplyThreshold = 5 * time.Second

// INFO's estimate of Lua's memory: a base, and the compiled forms of the
// cached scripts, a few times their bodies' size.
const (
	luaBaseMemory       = 32 << 10
	luaBytesPerBodyByte = 4
)

// scriptFlags are the flags of a script's shebang (#!lua flags=…).
type scriptFlags uint8

const (
	flagNoWrites scriptFlags = 1 << iota
	flagAllowOOM
	flagAllowStale
	flagNoCluster
	flagCrossSlot
	// flagCompat is set for a script without a shebang (Redis's
	// SCRIPT_FLAG_EVAL_COMPAT_MODE).
	flagCompat
)

var shebangFlags = []struct {
	name string
	f    scriptFlags
}{
	{"no-writes", flagNoWrites}, {"allow-oom", flagAllowOOM}, {"allow-stale", flagAllowStale},
	{"no-cluster", flagNoCluster}, {"allow-cross-slot-keys", flagCrossSlot},
}

// parseShebang reads the flags of body's shebang line, as Redis 7.0's
// evalExtractShebangFlags; n is the length of that line (0 without one).
func parseShebang(body string) (flags scriptFlags, n int, err error) {
	if !strings.HasPrefix(body, "#!") {
		return flagCompat, 0, nil
	}
	n = strings.IndexByte(body, '\n')
	if n < 0 {
		return 0, 0, ErrShebang
	}
	parts, ok := resp.SplitArgs([]byte(body[:n]))
	if !ok || len(parts) == 0 {
		return 0, 0, ErrShebangEngine
	}
	if string(parts[0]) != "#!lua" {
		return 0, 0, errorf("ERR Unexpected engine in script shebang: %s", cString(parts[0]))
	}
	for _, p := range parts[1:] {
		rest, isFlags := strings.CutPrefix(string(p), "flags=")
		if !isFlags {
			return 0, 0, errorf("ERR Unknown lua shebang option: %s", cString(p))
		}
		if rest == "" {
			continue
		}
		for _, name := range strings.Split(rest, ",") {
			found := false
			for _, sf := range shebangFlags {
				if sf.name == name {
					flags |= sf.f
					found = true
					break
				}
			}
			if !found {
				return 0, 0, errorf("ERR Unexpected flag in script shebang: %s", cString([]byte(name)))
			}
		}
	}
	return flags, n, nil
}

// script is a compiled script of the cache.
type script struct {
	sha   string
	body  string
	flags scriptFlags
	proto *lua.FunctionProto
}

// scriptRun is one running script, for -BUSY and SCRIPT KILL.
type scriptRun struct {
	start  time.Time
	cancel context.CancelFunc
	// wrote is set once the script ran a write command: SCRIPT KILL
	// then refuses (UNKILLABLE).
	wrote atomic.Bool
	// killed says why the script was stopped (ErrScriptKilled or
	// ErrScriptShutdown), nil while it was not.
	killed atomic.Pointer[error]
}

// scripting is the server's script cache and its running scripts.
type scripting struct {
	// n is the number of running scripts: the one thing Serve reads of
	// this, for every command, so that a server that runs no script pays
	// one atomic load.
	n  atomic.Int32
	mu sync.Mutex
	// cache is the script cache by lower-case hex SHA1; bytes counts
	// the bodies it holds.
	cache map[string]*script
	bytes int64
	runs  map[*scriptRun]struct{}
	// ended is closed, and replaced, when a script ends.
	ended chan struct{}
	// threshold is busy-reply-threshold in nanoseconds.
	threshold atomic.Int64
	// calls counts the scripts run (INFO).
	calls atomic.Int64
}

// SetBusyReplyThreshold sets busy-reply-threshold (lua-time-limit): how
// long a script runs before other clients are answered -BUSY. 0 or less
// answers -BUSY at once while a script runs, as Redis does.
func (s *Server) SetBusyReplyThreshold(d time.Duration) { s.scripts.threshold.Store(int64(d)) }

func scriptSHA(body string) string {
	sum := sha1.Sum([]byte(body))
	return hex.EncodeToString(sum[:])
}

// lookup finds a cached script by SHA1, in any case.
func (sc *scripting) lookup(sha string) *script {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.cache[strings.ToLower(sha)]
}

// load compiles body and caches it, or returns the cached script.
func (sc *scripting) load(body string) (*script, error) {
	sha := scriptSHA(body)
	if sp := sc.lookup(sha); sp != nil {
		return sp, nil
	}
	flags, n, err := parseShebang(body)
	if err != nil {
		return nil, err
	}
	src := body
	if n > 0 {
		src = body[n:] // keep the newline: lines number as in the body
	}
	proto, err := compileScript(src)
	if err != nil {
		return nil, err
	}
	sp := &script{sha: sha, body: body, flags: flags, proto: proto}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.cache == nil {
		sc.cache = make(map[string]*script)
	}
	if old := sc.cache[sha]; old != nil {
		return old, nil
	}
	sc.cache[sha] = sp
	sc.bytes += int64(len(body))
	return sp, nil
}

func (sc *scripting) flush() {
	sc.mu.Lock()
	sc.cache, sc.bytes = nil, 0
	sc.mu.Unlock()
}

// counts is the number of cached scripts and the bytes of their bodies.
func (sc *scripting) counts() (int, int64) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return len(sc.cache), sc.bytes
}

func (sc *scripting) begin() (*scriptRun, context.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &scriptRun{start: time.Now(), cancel: cancel}
	sc.mu.Lock()
	if sc.runs == nil {
		sc.runs = make(map[*scriptRun]struct{})
	}
	if sc.ended == nil {
		sc.ended = make(chan struct{})
	}
	sc.runs[r] = struct{}{}
	sc.n.Add(1)
	sc.mu.Unlock()
	return r, ctx
}

func (sc *scripting) end(r *scriptRun) {
	r.cancel()
	sc.mu.Lock()
	delete(sc.runs, r)
	sc.n.Add(-1)
	if sc.ended != nil {
		close(sc.ended)
		sc.ended = nil
	}
	sc.mu.Unlock()
}

// busy waits while a script runs, up to busy-reply-threshold since it
// started, and reports whether one still runs past it: the command that
// asked is then answered -BUSY, as in Redis 7.0, rather than waiting for
// the store's lock that the script holds.
func (sc *scripting) busy() bool {
	for sc.n.Load() > 0 {
		sc.mu.Lock()
		var oldest time.Time
		for r := range sc.runs {
			if oldest.IsZero() || r.start.Before(oldest) {
				oldest = r.start
			}
		}
		ended := sc.ended
		sc.mu.Unlock()
		if oldest.IsZero() || ended == nil {
			return false
		}
		left := time.Until(oldest.Add(time.Duration(sc.threshold.Load())))
		if left <= 0 {
			return true
		}
		t := time.NewTimer(left)
		select {
		case <-ended:
		case <-t.C:
		}
		t.Stop()
	}
	return false
}

// kill stops the running scripts for SCRIPT KILL (why ErrScriptKilled),
// refusing if one of them wrote, or for SHUTDOWN (ErrScriptShutdown),
// whatever they did.
func (sc *scripting) kill(why error) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if len(sc.runs) == 0 {
		return ErrNotBusy
	}
	if why == ErrScriptKilled {
		for r := range sc.runs {
			if r.wrote.Load() {
				return ErrUnkillable
			}
		}
	}
	for r := range sc.runs {
		r.killed.Store(&why)
		r.cancel()
	}
	return nil
}

// scriptMayWrite reports whether cmd, with its arguments args, runs a
// script that may write: EVAL or EVALSHA of a script without the
// no-writes flag (a script EVALSHA does not find counts as one), as Redis
// 7.0 holds them in CLIENT PAUSE WRITE; EVAL_RO and EVALSHA_RO never.
func (s *Server) scriptMayWrite(cmd *Command, args [][]byte) bool {
	switch {
	case len(args) < 2:
		return false
	case cmd.Name == "eval":
		flags, _, err := parseShebang(string(args[1]))
		return err != nil || flags&flagNoWrites == 0
	case cmd.Name == "evalsha":
		sp := s.scripts.lookup(string(args[1]))
		return sp == nil || sp.flags&flagNoWrites == 0
	}
	return false
}

// parseNumKeys checks EVAL's numkeys against the arguments after it.
func parseNumKeys(b []byte, rest int) (int, error) {
	n, ok := resp.ParseInt(b)
	switch {
	case !ok:
		return 0, ErrNotInteger
	case n < 0:
		return 0, ErrNumKeysNeg
	case n > int64(rest):
		return 0, ErrNumKeysBig
	}
	return int(n), nil
}

// evalCmd is EVAL (bySHA false) or EVALSHA, and their _RO forms.
func evalCmd(bySHA, ro bool) Handler {
	return func(x *Ctx) {
		if x.S.monitors.n.Load() != 0 {
			// Before the script runs, so that monitors see it ahead of
			// the commands it calls, even when it fails, as Redis 7.0
			// shows it (EVAL is flagged skip_monitor: nothing else
			// feeds it).
			x.S.feedMonitors(x.Conn, x.Cmd, x.Args)
		}
		numKeys, err := parseNumKeys(x.Args[2], len(x.Args)-3)
		if err != nil {
			x.Fail(err)
			return
		}
		var sp *script
		if bySHA {
			if sp = x.S.scripts.lookup(string(x.Args[1])); sp == nil {
				x.Fail(ErrNoScript)
				return
			}
		} else if sp, err = x.S.scripts.load(string(x.Args[1])); err != nil {
			x.Fail(err)
			return
		}
		if ro && sp.flags&(flagCompat|flagNoWrites) == 0 {
			x.Fail(ErrWriteFlagRO)
			return
		}
		keys, argv := x.Args[3:3+numKeys], x.Args[3+numKeys:]
		readOnly := ro || sp.flags&flagNoWrites != 0
		switch {
		case x.Tx != nil:
			// EVAL_RO: run already holds a shared transaction.
			x.S.runScript(x, sp, keys, argv, x.Tx, true, nil)
		case x.InExec:
			// Queued in MULTI: EXEC's transaction is the script's.
			tx := x.execTx
			if !x.execShared {
				tx = x.S.wrap(tx)
			}
			x.S.runScript(x, sp, keys, argv, tx, readOnly || x.execShared, nil)
		default:
			evalInUpdate(x, sp, keys, argv, readOnly)
		}
	}
}

// evalInUpdate runs a script in an exclusive transaction of its own, as
// EXEC runs its queue, and answers once its writes are durable.
func evalInUpdate(x *Ctx, sp *script, keys, argv [][]byte, readOnly bool) {
	s := x.S
	var after []func(store.Ticket)
	var panicked *commandPanic
	ran := false
	t, err := s.store.Update(func(tx store.Tx) error {
		ran = true
		defer func() {
			if p := recover(); p != nil {
				panicked = &commandPanic{value: p, stack: debug.Stack()}
			}
			after = s.commit()
		}()
		s.runScript(x, sp, keys, argv, s.wrap(tx), readOnly, nil)
		return nil
	})
	if !ran && errors.Is(err, store.ErrWrite) {
		// The store refuses writes (a full disk): as in Redis 7.0 the
		// script runs, its reads work and its writes are refused with
		// the store's error.
		t, err = s.store.View(func(tx store.Tx) error {
			s.runScript(x, sp, keys, argv, tx, true, err)
			return nil
		})
	}
	runAfter(after, t)
	if panicked != nil {
		panic(panicked)
	}
	if err != nil && t == nil {
		x.Fail(err)
		return
	}
	x.Await(t)
}

// runScript runs sp in tx and writes its reply to x.W.
// writeErr, if not nil, is why the store refuses writes: the script's
// write commands fail with it.
func (s *Server) runScript(x *Ctx, sp *script, keys, argv [][]byte, tx store.Tx, readOnly bool, writeErr error) {
	r, ctx := s.scripts.begin()
	defer s.scripts.end(r)
	s.scripts.calls.Add(1)
	db := x.Conn.DB
	defer func() {
		// SELECT inside a script does not change the caller's
		// database (Redis 7.0).
		if x.Conn.DB != db {
			x.Conn.Select(db)
		}
	}()
	run := &luaRun{s: s, x: x, tx: tx, readOnly: readOnly, writeErr: writeErr, run: r, sha: sp.sha, resp: 2}
	run.exec(ctx, sp, keys, argv)
}

func scriptLoadCmd(x *Ctx) {
	sp, err := x.S.scripts.load(string(x.Args[2]))
	if err != nil {
		x.Fail(err)
		return
	}
	x.W.BulkString(sp.sha)
}

func scriptExistsCmd(x *Ctx) {
	shas := x.Args[2:]
	x.W.Array(len(shas))
	for _, sha := range shas {
		if x.S.scripts.lookup(string(sha)) != nil {
			x.W.Int(1)
		} else {
			x.W.Int(0)
		}
	}
}

func scriptFlushCmd(x *Ctx) {
	if len(x.Args) > 3 || (len(x.Args) == 3 && !eq(x.Args[2], "sync") && !eq(x.Args[2], "async")) {
		x.Fail(ErrFlushMode)
		return
	}
	x.S.scripts.flush()
	x.W.OK()
}

func scriptKillCmd(x *Ctx) {
	if err := x.S.scripts.kill(ErrScriptKilled); err != nil {
		x.Fail(err)
		return
	}
	x.W.OK()
}

// scriptDebugCmd: NO is accepted; the debugger (YES, SYNC) is not here.
func scriptDebugCmd(x *Ctx) {
	switch {
	case eq(x.Args[2], "no"):
		x.W.OK()
	case eq(x.Args[2], "yes"), eq(x.Args[2], "sync"):
		x.Fail(ErrDebugNotHere)
	default:
		x.Fail(ErrDebugMode)
	}
}

func scriptHelpCmd(x *Ctx) {
	if len(x.Args) == 1 {
		// SCRIPT alone: arity -2 refuses it before this runs.
		return
	}
	lines := []string{
		"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"DEBUG (YES|SYNC|NO)",
		"    Set the debug mode for subsequent scripts executed.",
		"EXISTS <sha1> [<sha1> ...]",
		"    Return information about the existence of the scripts in the script cache.",
		"FLUSH [ASYNC|SYNC]",
		"    Flush the Lua scripts cache. Very dangerous on replicas.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the scripts cache.",
		"    * SYNC: Synchronously flush the scripts cache.",
		"KILL",
		"    Kill the currently executing Lua script.",
		"LOAD <script>",
		"    Load a script into the scripts cache without executing it.",
		"HELP",
		"    Prints this help.",
	}
	x.W.Array(len(lines))
	for _, l := range lines {
		x.W.Simple(l)
	}
}
