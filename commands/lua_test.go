package commands

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/oncekv/oncekv/resp"
)

// describe writes a Lua value in a stable form: tables with their keys
// sorted.
func describe(v lua.LValue) string {
	t, ok := v.(*lua.LTable)
	if !ok {
		if s, ok := v.(lua.LString); ok {
			return fmt.Sprintf("%q", string(s))
		}
		return v.String()
	}
	var parts []string
	t.ForEach(func(k, v lua.LValue) { parts = append(parts, describe(k)+"="+describe(v)) })
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// TestReplyToLua: a command's reply reaches the script as Redis 7.0's
// redisProtocolToLuaType converts it, in RESP2 and RESP3.
func TestReplyToLua(t *testing.T) {
	for _, tc := range []struct {
		reply string
		want  string
		isErr bool
	}{
		{":42\r\n", "42", false},
		{":-9223372036854775808\r\n", "-9223372036854775808", false},
		{"$3\r\nabc\r\n", `"abc"`, false},
		{"$0\r\n\r\n", `""`, false},
		{"$4\r\na\r\nb\r\n", `"a\r\nb"`, false},
		{"$-1\r\n", "false", false},
		{"*-1\r\n", "false", false},
		{"+OK\r\n", `{"ok"="OK"}`, false},
		{"-ERR boom\r\n", `{"err"="ERR boom"}`, true},
		{"-WRONGTYPE Operation\r\n", `{"err"="WRONGTYPE Operation"}`, true},
		{"*2\r\n:1\r\n$-1\r\n", `{1=1,2=false}`, false},
		{"*0\r\n", `{}`, false},
		{"*1\r\n*1\r\n+x\r\n", `{1={1={"ok"="x"}}}`, false},
		// RESP3, after redis.setresp(3).
		{"_\r\n", "nil", false},
		{"#t\r\n", "true", false},
		{"#f\r\n", "false", false},
		{",3.5\r\n", `{"double"=3.5}`, false},
		{",inf\r\n", `{"double"=+Inf}`, false},
		{"(12345678901234567890\r\n", `{"big_number"="12345678901234567890"}`, false},
		{"%1\r\n$1\r\na\r\n:1\r\n", `{"map"={"a"=1}}`, false},
		{"~2\r\n$1\r\na\r\n$1\r\nb\r\n", `{"set"={"a"=true,"b"=true}}`, false},
		{"=8\r\ntxt:abcd\r\n", `{"verbatim_string"={"format"="txt","string"="abcd"}}`, false},
		{">1\r\n$1\r\np\r\n", `{1="p"}`, false},
		// A malformed reply is an error, not a crash.
		{"$5\r\nab\r\n", `{"err"="ERR internal error: a command wrote a malformed reply"}`, true},
		{"?\r\n", `{"err"="ERR internal error: a command wrote a malformed reply"}`, true},
		{"", `{"err"="ERR internal error: a command wrote a malformed reply"}`, true},
	} {
		t.Run(fmt.Sprintf("%q", tc.reply), func(t *testing.T) {
			L := lua.NewState(lua.Options{SkipOpenLibs: true})
			defer L.Close()
			v, isErr := replyToLua(L, []byte(tc.reply))
			if got := describe(v); got != tc.want || isErr != tc.isErr {
				t.Fatalf("got %s (error %v), want %s (error %v)", got, isErr, tc.want, tc.isErr)
			}
		})
	}
}

// TestLuaToReply: a script's return value reaches the client as Redis
// 7.0's luaReplyToRedisReply writes it, to a RESP2 and a RESP3 client,
// with the script in RESP2 (the default) or RESP3 (setresp(3)).
func TestLuaToReply(t *testing.T) {
	for _, tc := range []struct {
		lua          string // an expression
		scriptResp   int
		resp2, resp3 string
	}{
		{"1", 2, ":1\r\n", ":1\r\n"},
		{"3.99", 2, ":3\r\n", ":3\r\n"},
		{"-3.99", 2, ":-3\r\n", ":-3\r\n"},
		{"'x'", 2, "$1\r\nx\r\n", "$1\r\nx\r\n"},
		{"nil", 2, "$-1\r\n", "_\r\n"},
		{"true", 2, ":1\r\n", ":1\r\n"},
		{"false", 2, "$-1\r\n", "_\r\n"},
		{"true", 3, ":1\r\n", "#t\r\n"},
		{"false", 3, ":0\r\n", "#f\r\n"},
		{"{1,'a',nil,3}", 2, "*2\r\n:1\r\n$1\r\na\r\n", "*2\r\n:1\r\n$1\r\na\r\n"},
		{"{}", 2, "*0\r\n", "*0\r\n"},
		{"{ok='fine'}", 2, "+fine\r\n", "+fine\r\n"},
		{"{err='ERR no'}", 2, "-ERR no\r\n", "-ERR no\r\n"},
		{"{err='-X dash'}", 2, "--X dash\r\n", "--X dash\r\n"},
		{"{double=0.1}", 2, "$19\r\n0.10000000000000001\r\n", ",0.10000000000000001\r\n"},
		{"{big_number='123'}", 2, "$3\r\n123\r\n", "(123\r\n"},
		{"{map={a=1}}", 2, "*2\r\n$1\r\na\r\n:1\r\n", "%1\r\n$1\r\na\r\n:1\r\n"},
		{"{set={a=true}}", 2, "*1\r\n$1\r\na\r\n", "~1\r\n$1\r\na\r\n"},
		{"{{ok='x'},{err='y'}}", 2, "*2\r\n+x\r\n-y\r\n", "*2\r\n+x\r\n-y\r\n"},
		{"print", 2, "$-1\r\n", "_\r\n"},
	} {
		t.Run(fmt.Sprintf("%s/setresp%d", tc.lua, tc.scriptResp), func(t *testing.T) {
			L := lua.NewState()
			defer L.Close()
			if err := L.DoString("return " + tc.lua); err != nil {
				t.Fatal(err)
			}
			v := L.Get(-1)
			for proto, want := range map[int]string{2: tc.resp2, 3: tc.resp3} {
				w := resp.NewWriter(proto)
				r := &luaRun{resp: tc.scriptResp}
				r.reply(w, v, 0)
				if got := string(w.Bytes()); got != want {
					t.Errorf("RESP%d client: got %q, want %q", proto, got, want)
				}
			}
		})
	}
}

// TestSelfReferencingReply: a table that holds itself is followed as deep
// as Redis 7.0 follows it (7995 arrays, measured on redis-server 7.0.15),
// then ends in its error; the server neither loops nor overflows its
// stack.
func TestSelfReferencingReply(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	if err := L.DoString("t = {} t[1] = t"); err != nil {
		t.Fatal(err)
	}
	w := resp.NewWriter(2)
	(&luaRun{resp: 2}).reply(w, L.GetGlobal("t"), 0)
	want := strings.Repeat("*1\r\n", 7995) + "-ERR reached lua stack limit\r\n"
	if got := string(w.Bytes()); got != want {
		t.Fatalf("got %d bytes ending %q, want %d ending %q", len(got), got[max(0, len(got)-40):], len(want), want[len(want)-40:])
	}
}

// TestLuaArgAndInt: numbers pass to commands as Lua 5.1's %.17g writes
// them, and come back to clients truncated as C's cast does.
func TestLuaArgAndInt(t *testing.T) {
	for _, tc := range []struct {
		v    lua.LValue
		want string
		ok   bool
	}{
		{lua.LString("a\x00b"), "a\x00b", true},
		{lua.LNumber(12), "12", true},
		{lua.LNumber(-1.5), "-1.5", true},
		{lua.LNumber(0.1), "0.10000000000000001", true},
		{lua.LNumber(1e20), "1e+20", true},
		{lua.LBool(true), "", false},
		{lua.LNil, "", false},
	} {
		got, ok := luaArg(tc.v)
		if string(got) != tc.want || ok != tc.ok {
			t.Errorf("luaArg(%v) = %q %v, want %q %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
	for f, want := range map[float64]int64{3.99: 3, -3.99: -3, 0: 0, 9007199254740993: 9007199254740992, math.NaN(): math.MinInt64, 1e300: math.MinInt64} {
		if got := luaInt(f); got != want {
			t.Errorf("luaInt(%v) = %d, want %d", f, got, want)
		}
	}
}

// TestParseShebang: the flags of a #!lua line, and the errors, as Redis
// 7.0's evalExtractShebangFlags.
func TestParseShebang(t *testing.T) {
	for _, tc := range []struct {
		body  string
		flags scriptFlags
		n     int
		err   string
	}{
		{"return 1", flagCompat, 0, ""},
		{"#!lua\nreturn 1", 0, 5, ""},
		{"#!lua flags=no-writes\nreturn 1", flagNoWrites, 21, ""},
		{"#!lua flags=no-writes,allow-oom,allow-stale,no-cluster,allow-cross-slot-keys\n", flagNoWrites | flagAllowOOM | flagAllowStale | flagNoCluster | flagCrossSlot, 76, ""},
		{"#!lua flags=\n", 0, 12, ""},
		{"#!lua", 0, 0, "ERR Invalid script shebang"},
		{"#!lua flags=bogus\n", 0, 0, "ERR Unexpected flag in script shebang: bogus"},
		{"#!lua foo=1\n", 0, 0, "ERR Unknown lua shebang option: foo=1"},
		{"#!python\n", 0, 0, "ERR Unexpected engine in script shebang: #!python"},
		{"#!lua \"unclosed\n", 0, 0, "ERR Invalid engine in script shebang"},
	} {
		flags, n, err := parseShebang(tc.body)
		var got string
		if err != nil {
			got = errorText(err)
		}
		if got != tc.err || (err == nil && (flags != tc.flags || n != tc.n)) {
			t.Errorf("parseShebang(%q) = %b %d %q, want %b %d %q", tc.body, flags, n, got, tc.flags, tc.n, tc.err)
		}
	}
}

// TestErrTable: error texts become Redis's {err="CODE msg"}, as its
// luaPushErrorBuff builds them.
func TestErrTable(t *testing.T) {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for text, want := range map[string]string{
		"plain message":  "ERR plain message",
		"-WRONGTYPE op":  "WRONGTYPE op",
		"-ERR":           "ERR ERR",
		"-CODE msg\r\n":  "CODE msg",
		"-NOSCRIPT No m": "NOSCRIPT No m",
	} {
		if got := lua.LVAsString(errTable(L, text).RawGetString("err")); got != want {
			t.Errorf("errTable(%q).err = %q, want %q", text, got, want)
		}
	}
}

// TestScriptCache: EVAL caches a script once by its SHA1 (any case
// finds it), SCRIPT FLUSH empties the cache and its byte count.
func TestScriptCache(t *testing.T) {
	var sc scripting
	for range 2 {
		sp, err := sc.load("return 1")
		if err != nil {
			t.Fatal(err)
		}
		if sp.sha != "e0e1f9fabfc9d4800c877a703b823ac0578ff8db" {
			t.Fatalf("sha %s", sp.sha)
		}
	}
	if n, b := sc.counts(); n != 1 || b != int64(len("return 1")) {
		t.Fatalf("counts %d %d", n, b)
	}
	if sc.lookup("E0E1F9FABFC9D4800C877A703B823AC0578FF8DB") == nil {
		t.Fatal("upper-case sha not found")
	}
	if _, err := sc.load("return ("); err == nil || !strings.HasPrefix(errorText(err), "ERR Error compiling script (new function): user_script:") {
		t.Fatalf("syntax error: %v", err)
	}
	sc.flush()
	if n, b := sc.counts(); n != 0 || b != 0 || sc.lookup("e0e1f9fabfc9d4800c877a703b823ac0578ff8db") != nil {
		t.Fatalf("after flush: %d scripts, %d bytes", n, b)
	}
	if err := sc.kill(ErrScriptKilled); !errors.Is(err, ErrNotBusy) {
		t.Fatalf("kill with nothing running: %v", err)
	}
}

// TestEvalWhileTheStoreRefusesWrites: while the store refuses writes (a
// full disk), a script still runs, as in Redis 7.0: its reads work and
// its writes fail with the store's MISCONF error.
func TestEvalWhileTheStoreRefusesWrites(t *testing.T) {
	rs := &refusingStore{DB: openTestStore(t)}
	srv := onceServerOver(t, rs)
	c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
	if r := send(srv, c, "SET", "k", "v"); r != "+OK\r\n" {
		t.Fatalf("set: %q", r)
	}
	rs.refuse.Store(true)
	misconf := "-" + errorText(errRefused)
	read := "return redis.call('GET', KEYS[1])"
	write := "return redis.call('SET', KEYS[1], 'w')"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"EVAL", read, "1", "k"}, "$1\r\nv\r\n"},
		{[]string{"EVAL_RO", read, "1", "k"}, "$1\r\nv\r\n"},
		{[]string{"EVAL", write, "1", "k"}, misconf + " script: " + scriptSHA(write) + ", on @user_script:1.\r\n"},
		{[]string{"EVAL", "local e = redis.pcall('SET', KEYS[1], 'w') return redis.call('GET', KEYS[1])", "1", "k"}, "$1\r\nv\r\n"},
	} {
		if got := send(srv, c, tc.args...); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestStringRepIsBounded: string.rep of a count that would need more than
// proto-max-bulk-len is a script error, not an allocation the Go runtime
// ends the process over; a small one works as Lua's.
func TestStringRepIsBounded(t *testing.T) {
	srv := onceServerOver(t, openTestStore(t))
	c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
	for _, tc := range []struct{ body, want string }{
		{"return string.rep('ab', 3)", "$6\r\nababab\r\n"},
		{"return ('x'):rep(2)", "$2\r\nxx\r\n"},
		{"return string.rep('x', 0)", "$0\r\n\r\n"},
		{"return string.rep('x', 1e12)", "-ERR user_script:1: not enough memory script: " + scriptSHA("return string.rep('x', 1e12)") + ", on @user_script:1.\r\n"},
	} {
		if got := send(srv, c, "EVAL", tc.body, "0"); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.body, got, tc.want)
		}
	}
}
