package commands

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
	"go.uber.org/zap"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
)

// The Lua side of scripting, as Redis 7.0 sets it up: Lua 5.1 (gopher-lua)
// with the base (sandboxed), table, string, math, coroutine, bit and cjson
// libraries; read-only globals; KEYS and ARGV; the redis library; and the
// conversions of replies between Redis and Lua (RESP2, and RESP3 after
// redis.setresp(3)).

// scriptSource is the chunk name of every script: errors read
// "user_script:1: …" and end "on @user_script:1.", as in Redis 7.0.
const scriptSource = "user_script"

// compileScript compiles a script's body, as Redis's luaCreateFunction.
func compileScript(src string) (*lua.FunctionProto, error) {
	chunk, err := parse.Parse(strings.NewReader(src), scriptSource)
	if err != nil {
		return nil, errorf("ERR Error compiling script (new function): %s", syntaxMessage(err))
	}
	proto, err := lua.Compile(chunk, scriptSource)
	if err != nil {
		return nil, errorf("ERR Error compiling script (new function): %s: %s", scriptSource, err.Error())
	}
	return proto, nil
}

// syntaxMessage words a parse error as Lua 5.1 places it ("user_script:1:
// …"); the words after the place are gopher-lua's.
func syntaxMessage(err error) string {
	var pe *parse.Error
	if errors.As(err, &pe) {
		line := pe.Pos.Line
		if line == parse.EOF {
			return fmt.Sprintf("%s: %s near '<eof>'", scriptSource, pe.Message)
		}
		return fmt.Sprintf("%s:%d: %s near '%s'", scriptSource, line, pe.Message, pe.Token)
	}
	return strings.TrimSpace(err.Error())
}

// luaRun is one run of a script.
type luaRun struct {
	s        *Server
	x        *Ctx
	tx       store.Tx
	readOnly bool
	// writeErr is why the store refuses writes (nil when it takes them).
	writeErr error
	run      *scriptRun
	sha      string
	// resp is the protocol of redis.setresp: how replies of redis.call
	// reach the script, and how its booleans reach the client.
	resp int
	w    *resp.Writer
	// globals is the table behind the read-only proxy the script sees.
	globals *lua.LTable
}

// newState is a sandboxed Lua state for one run.
func (r *luaRun) newState() *lua.LState {
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: 256, MinimizeStackMemory: true})
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath},
		{lua.CoroutineLibName, lua.OpenCoroutine},
	} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	r.globals = g
	// What Redis's sandbox leaves out of the base library: files,
	// printing, environments (and no io, os, package, debug at all).
	for _, name := range []string{"dofile", "loadfile", "print", "_printregs", "getfenv", "setfenv", "newproxy", "module", "require"} {
		g.RawSetString(name, lua.LNil)
	}
	// string.rep of a huge count would ask the Go runtime for that much
	// memory at once, which it cannot refuse without ending the process:
	// past proto-max-bulk-len it is an error.
	if str, ok := g.RawGetString("string").(*lua.LTable); ok {
		limit := r.s.maxBulkLen.Load()
		str.RawSetString("rep", L.NewFunction(func(L *lua.LState) int {
			s, n := L.CheckString(1), L.CheckInt64(2)
			if n <= 0 || s == "" {
				L.Push(lua.LString(""))
				return 1
			}
			if int64(len(s))*n > limit || int64(len(s))*n < 0 {
				L.RaiseError("not enough memory")
			}
			L.Push(lua.LString(strings.Repeat(s, int(n))))
			return 1
		}))
	}
	g.RawSetString("error", L.NewFunction(luaErrorFn))
	g.RawSetString("pcall", L.NewFunction(luaPCall))
	g.RawSetString("redis", r.redisLib(L))
	g.RawSetString("bit", openBit(L))
	g.RawSetString("cjson", openCJSON(L))
	// The libraries are read-only too, as Redis 7.0 protects every table
	// the globals reach.
	readOnly := L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	})
	for _, name := range []string{"redis", "bit", "cjson", "string", "table", "math", "coroutine"} {
		lib, ok := g.RawGetString(name).(*lua.LTable)
		if !ok {
			continue
		}
		p, mt := L.NewTable(), L.NewTable()
		mt.RawSetString("__index", lib)
		mt.RawSetString("__newindex", readOnly)
		mt.RawSetString("__metatable", lua.LFalse)
		L.SetMetatable(p, mt)
		g.RawSetString(name, p)
	}
	// Read-only globals, as Redis 7.0's: the scripts see a proxy whose
	// reads of a missing name and writes both fail.
	proxy := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		name := L.Get(2)
		v := g.RawGet(name)
		if v == lua.LNil {
			L.RaiseError("Script attempted to access nonexistent global variable '%s'", lua.LVAsString(name))
		}
		L.Push(v)
		return 1
	}))
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	}))
	mt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(proxy, mt)
	g.RawSetString("_G", proxy)
	L.G.Global = proxy
	L.Env = proxy
	return L
}

// exec runs the script and writes its reply (or its error) to the
// caller's writer.
func (r *luaRun) exec(ctx context.Context, sp *script, keys, argv [][]byte) {
	L := r.newState()
	defer L.Close()
	L.SetContext(ctx)
	strs := func(list [][]byte) *lua.LTable {
		t := L.CreateTable(len(list), 0)
		for _, b := range list {
			t.Append(lua.LString(b))
		}
		return t
	}
	r.globals.RawSetString("KEYS", strs(keys))
	r.globals.RawSetString("ARGV", strs(argv))
	fn := L.NewFunctionFromProto(sp.proto)
	L.Push(fn)
	err := L.PCall(0, 1, L.NewFunction(errHandler))
	w := r.x.W
	if why := r.run.killed.Load(); why != nil {
		line := 0
		if err != nil {
			if t, ok := errorValue(err).(*lua.LTable); ok {
				line = int(lua.LVAsNumber(t.RawGetString("line")))
			}
		}
		w.Error(fmt.Sprintf("%s script: %s, on @%s:%d.", (*why).Error(), r.sha, scriptSource, line))
		return
	}
	if err != nil {
		w.Error(r.errorReply(errorValue(err)))
		return
	}
	ret := L.Get(-1)
	L.Pop(1)
	r.reply(w, ret, 0)
}

// luaErrorFn is Lua 5.1's error: a string or number message gets the
// place of the function at level (1, the caller, by default), none when
// that is not a Lua function (pcall(error, "x")).
func luaErrorFn(L *lua.LState) int {
	obj := L.Get(1)
	level := L.OptInt(2, 1)
	switch obj.(type) {
	case lua.LString, lua.LNumber:
		msg := lua.LVAsString(obj)
		if level > 0 {
			if dbg, ok := L.GetStack(level); ok {
				if _, err := L.GetInfo("Sl", dbg, lua.LNil); err == nil && dbg.What != "G" && dbg.CurrentLine >= 0 {
					msg = fmt.Sprintf("%s:%d: %s", scriptSource, dbg.CurrentLine, msg)
				}
			}
		}
		obj = lua.LString(msg)
	}
	L.Error(obj, 0)
	return 0
}

// luaPCall is Redis 7.0's pcall (luaRedisPcall): Lua's, except that an
// error table {err=…} (what redis.call raises) is caught as its err
// string.
func luaPCall(L *lua.LState) int {
	fn := L.CheckAny(1)
	nargs := L.GetTop() - 1
	base := L.GetTop() - nargs - 1
	_ = fn
	if err := L.PCall(nargs, lua.MultRet, nil); err != nil {
		v := errorValue(err)
		if t, ok := v.(*lua.LTable); ok {
			if e, ok := t.RawGetString("err").(lua.LString); ok {
				v = e
			}
		}
		L.SetTop(0)
		L.Push(lua.LFalse)
		L.Push(v)
		return 2
	}
	L.Insert(lua.LTrue, base+1)
	return L.GetTop() - base
}

// errorValue is what the script raised.
func errorValue(err error) lua.LValue {
	var ae *lua.ApiError
	if errors.As(err, &ae) {
		return ae.Object
	}
	return lua.LString(err.Error())
}

// errHandler turns what a script raised into Redis's error table,
// {err=, source=, line=}, as Redis's __redis__err__handler does: the
// place is the Lua function that raised (the caller of a Go function).
func errHandler(L *lua.LState) int {
	e := L.Get(1)
	t, ok := e.(*lua.LTable)
	if !ok {
		t = L.NewTable()
		t.RawSetString("err", lua.LString("ERR "+lua.LVAsString(luaToString(e))))
	}
	for level := 0; ; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			break
		}
		if dbg.What == "G" || dbg.CurrentLine < 0 {
			continue
		}
		t.RawSetString("source", lua.LString("@"+scriptSource))
		t.RawSetString("line", lua.LNumber(dbg.CurrentLine))
		break
	}
	L.Push(t)
	return 1
}

// luaToString is tostring(v) for an error value.
func luaToString(v lua.LValue) lua.LValue {
	switch v.(type) {
	case lua.LString, lua.LNumber:
		return lua.LString(lua.LVAsString(v))
	case *lua.LNilType:
		return lua.LString("nil")
	}
	return lua.LString(v.String())
}

// errorReply is the reply for a raised error, as Redis 7.0's
// luaCallFunction words it: the table's err, then where it was raised.
func (r *luaRun) errorReply(v lua.LValue) string {
	t, ok := v.(*lua.LTable)
	if !ok {
		return "ERR Error running script " + r.sha + ", " + lua.LVAsString(luaToString(v))
	}
	msg := lua.LVAsString(t.RawGetString("err"))
	if line, ok := t.RawGetString("line").(lua.LNumber); ok {
		if src, ok := t.RawGetString("source").(lua.LString); ok {
			msg += fmt.Sprintf(" script: %s, on %s:%d.", r.sha, string(src), int64(line))
		}
	}
	return msg
}

// errTable is Redis's luaPushErrorBuff: an error text ("-CODE msg", or a
// message that gets the code ERR) as the table {err="CODE msg"}.
func errTable(L *lua.LState, text string) *lua.LTable {
	code, msg := "ERR", text
	if strings.HasPrefix(text, "-") {
		if i := strings.IndexByte(text, ' '); i >= 0 {
			code, msg = text[1:i], text[i+1:]
		} else {
			msg = text[1:]
		}
	}
	msg = strings.Trim(msg, "\r\n")
	t := L.NewTable()
	t.RawSetString("err", lua.LString(code+" "+msg))
	return t
}

// raise raises text as Redis's error table.
func raise(L *lua.LState, text string) int {
	L.Error(errTable(L, text), 0)
	return 0
}

// reply writes a script's return value as Redis 7.0's
// luaReplyToRedisReply does.
func (r *luaRun) reply(w *resp.Writer, v lua.LValue, depth int) {
	switch v := v.(type) {
	case lua.LString:
		w.Bulk([]byte(v))
	case lua.LBool:
		if r.resp == 2 {
			if v {
				w.Int(1)
			} else {
				w.Null()
			}
			return
		}
		w.Bool(bool(v))
	case lua.LNumber:
		w.Int(luaInt(float64(v)))
	case *lua.LTable:
		r.replyTable(w, v, depth)
	default:
		w.Null()
	}
}

// maxReplyDepth is how deep Redis 7.0 follows nested tables of a script's
// reply before its Lua stack check fails (measured: 7995 arrays).
const maxReplyDepth = 7995

// luaInt is a Lua number as C's (long long) cast makes it.
func luaInt(f float64) int64 {
	if math.IsNaN(f) || f >= 9.223372036854775807e18 || f < -9.223372036854775808e18 {
		return math.MinInt64
	}
	return int64(f)
}

func (r *luaRun) replyTable(w *resp.Writer, t *lua.LTable, depth int) {
	if depth >= maxReplyDepth {
		// A table that holds itself, or nests deeper than Redis's Lua
		// stack lets it follow: Redis's error, at the depth it meets it.
		w.Error("ERR reached lua stack limit")
		return
	}
	if e, ok := t.RawGetString("err").(lua.LString); ok {
		// Redis writes "-" and the text: a text that starts with a
		// dash keeps it.
		w.Error(string(e))
		return
	}
	if ok, isOK := t.RawGetString("ok").(lua.LString); isOK {
		w.Simple(string(ok))
		return
	}
	if d, ok := t.RawGetString("double").(lua.LNumber); ok {
		if w.Proto == 2 {
			// Redis's addReplyDouble in RESP2: a bulk of %.17g.
			w.BulkString(strconv.FormatFloat(float64(d), 'g', 17, 64))
			return
		}
		w.Double(float64(d))
		return
	}
	if b, ok := t.RawGetString("big_number").(lua.LString); ok {
		if w.Proto == 3 {
			w.Raw([]byte("(" + strings.NewReplacer("\r", " ", "\n", " ").Replace(string(b)) + "\r\n"))
		} else {
			w.Bulk([]byte(b))
		}
		return
	}
	if m, ok := t.RawGetString("map").(*lua.LTable); ok {
		var keys, vals []lua.LValue
		m.ForEach(func(k, v lua.LValue) { keys, vals = append(keys, k), append(vals, v) })
		w.Map(len(keys))
		for i := range keys {
			r.reply(w, keys[i], depth+1)
			r.reply(w, vals[i], depth+1)
		}
		return
	}
	if set, ok := t.RawGetString("set").(*lua.LTable); ok {
		var keys []lua.LValue
		set.ForEach(func(k, _ lua.LValue) { keys = append(keys, k) })
		w.Set(len(keys))
		for _, k := range keys {
			r.reply(w, k, depth+1)
		}
		return
	}
	// An array, up to its first nil.
	var items []lua.LValue
	for i := 1; ; i++ {
		v := t.RawGetInt(i)
		if v == lua.LNil {
			break
		}
		items = append(items, v)
	}
	w.Array(len(items))
	for _, it := range items {
		r.reply(w, it, depth+1)
	}
}

// redisLib is the redis table.
func (r *luaRun) redisLib(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":  func(L *lua.LState) int { return r.call(L, true) },
		"pcall": func(L *lua.LState) int { return r.call(L, false) },
		"error_reply": func(L *lua.LState) int {
			s, ok := L.Get(1).(lua.LString)
			if L.GetTop() != 1 || !ok {
				// Returned, not raised, as Redis 7.0 does.
				L.Push(errTable(L, "wrong number or type of arguments"))
				return 1
			}
			text := string(s)
			if !strings.HasPrefix(text, "-") {
				text = "-" + text
			}
			L.Push(errTable(L, text))
			return 1
		},
		"status_reply": func(L *lua.LState) int {
			s, ok := L.Get(1).(lua.LString)
			if L.GetTop() != 1 || !ok {
				L.Push(errTable(L, "wrong number or type of arguments"))
				return 1
			}
			st := L.NewTable()
			st.RawSetString("ok", s)
			L.Push(st)
			return 1
		},
		"sha1hex": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				return raise(L, "wrong number of arguments")
			}
			sum := sha1.Sum([]byte(lua.LVAsString(L.Get(1))))
			L.Push(lua.LString(hex.EncodeToString(sum[:])))
			return 1
		},
		"log": func(L *lua.LState) int {
			n := L.GetTop()
			if n < 2 {
				return raise(L, "redis.log() requires two arguments or more.")
			}
			lv, ok := L.Get(1).(lua.LNumber)
			if !ok {
				return raise(L, "First argument must be a number (log level).")
			}
			if lv < 0 || lv > 3 {
				return raise(L, "Invalid debug level.")
			}
			parts := make([]string, 0, n-1)
			for i := 2; i <= n; i++ {
				parts = append(parts, lua.LVAsString(L.Get(i)))
			}
			msg := strings.Join(parts, " ")
			log := r.s.log.With(zap.String("script", r.sha))
			switch lv {
			case 0:
				log.Debug(msg)
			case 1, 2:
				log.Info(msg)
			default:
				log.Warn(msg)
			}
			return 0
		},
		"setresp": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				return raise(L, "redis.setresp() requires one argument.")
			}
			n := L.CheckNumber(1)
			if n != 2 && n != 3 {
				return raise(L, "RESP version must be 2 or 3.")
			}
			r.resp = int(n)
			return 0
		},
		"set_repl": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				return raise(L, "redis.set_repl() requires two arguments.")
			}
			n := L.CheckNumber(1)
			if n < 0 || n > 3 || float64(n) != math.Trunc(float64(n)) {
				return raise(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
			}
			return 0
		},
		"replicate_commands": func(L *lua.LState) int {
			L.Push(lua.LTrue)
			return 1
		},
		"breakpoint": func(L *lua.LState) int {
			L.Push(lua.LFalse)
			return 1
		},
		"debug": func(L *lua.LState) int { return 0 },
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	for name, n := range map[string]int{
		"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3,
	} {
		t.RawSetString(name, lua.LNumber(n))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(Version))
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(versionNum(Version)))
	return t
}

// versionNum is Redis's version number: 0x00MMmmpp.
func versionNum(v string) int {
	n := 0
	for _, p := range strings.SplitN(v, ".", 3) {
		d, _ := strconv.Atoi(p)
		n = n<<8 | d
	}
	return n
}

// luaArg is a redis.call argument: a string, or a number as Lua's
// tostring (%.17g) writes it.
func luaArg(v lua.LValue) ([]byte, bool) {
	switch v := v.(type) {
	case lua.LString:
		return []byte(v), true
	case lua.LNumber:
		return []byte(strconv.FormatFloat(float64(v), 'g', 17, 64)), true
	}
	return nil, false
}

// call is redis.call (raise true) and redis.pcall: it runs a command in
// the script's transaction, as EXEC runs a queued one, and converts its
// reply.
func (r *luaRun) call(L *lua.LState, raiseErr bool) int {
	fail := func(text string) int {
		if raiseErr {
			return raise(L, text)
		}
		L.Push(errTable(L, text))
		return 1
	}
	n := L.GetTop()
	if n == 0 {
		return fail("Please specify at least one argument for this redis lib call")
	}
	args := make([][]byte, n)
	for i := range args {
		a, ok := luaArg(L.Get(i + 1))
		if !ok {
			return fail("Lua redis lib command arguments must be strings or integers")
		}
		args[i] = a
	}
	s := r.s
	cmd := s.table.Lookup(args[0])
	if cmd != nil && len(cmd.Subcommands) > 0 && len(args) > 1 {
		cmd = cmd.sub(args[1])
	}
	switch {
	case cmd == nil:
		return fail("Unknown Redis command called from script")
	case !arityOK(cmd.Arity, len(args)):
		return fail("Wrong number of args calling Redis command from script")
	case cmd.Flags&NoScript != 0:
		return fail("This Redis command is not allowed from script")
	case cmd.Flags&Write != 0 && r.writeErr != nil:
		return fail("-" + errorText(r.writeErr))
	case cmd.Flags&Write != 0 && r.readOnly:
		return fail("-" + ErrWriteFromRO.Error())
	case cmd.Flags&Write != 0 && longKey(cmd, args):
		return fail("-" + ErrKeyTooLong.Error())
	}
	if cmd.Flags&Write != 0 {
		r.run.wrote.Store(true)
	}
	if r.w == nil {
		r.w = resp.NewWriter(r.resp)
	}
	w := r.w
	w.Reset()
	w.Proto = r.resp
	sub := &Ctx{Conn: r.x.Conn, S: s, Cmd: cmd, Args: args, W: w, InExec: true, execTx: r.tx, execShared: r.readOnly}
	if cmd.Flags&(Write|ReadOnly) != 0 {
		sub.Tx = r.tx
	}
	if !r.runCommand(sub) {
		return fail("-ERR internal error while running '" + cmd.Name + "' (the server logged it)")
	}
	if monitored(cmd) {
		s.FeedMonitorsFromScript(sub.DB, args)
	}
	v, isErr := replyToLua(L, w.Bytes())
	if isErr && raiseErr {
		L.Error(v, 0)
		return 0
	}
	L.Push(v)
	return 1
}

// runCommand runs a script's command, and reports false if it panicked
// (logged): the script gets an error, the server goes on.
func (r *luaRun) runCommand(sub *Ctx) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			r.s.log.Error("command called from a script panicked; the script got an error",
				zap.String("cmd", sub.Cmd.Name), zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
			ok = false
		}
	}()
	start := r.s.mono()
	sub.start = start
	errs := sub.W.Errors()
	sub.Cmd.Run(sub)
	r.s.account(sub, errs)
	return true
}
