package integration

// SLOWLOG against a real redis-server, both started with
// slowlog-log-slower-than 0 so that every command is logged and the log's
// length, ids, arguments and client names are deterministic; the times
// and client addresses are not (compared by shape only).

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// newSlowlogPair starts redis-server and oncekv (or a second
// redis-server with ONCEKV_DIFF_AGAINST=redis) that log every command.
func newSlowlogPair(t *testing.T, extra ...string) *DiffPair {
	t.Helper()
	args := append([]string{"--slowlog-log-slower-than", "0"}, extra...)
	p := &DiffPair{Redis: StartRedis(t, args...), tb: t}
	if os.Getenv("ONCEKV_DIFF_AGAINST") == "redis" {
		p.Other, p.OtherName = StartRedis(t, args...), "redis2"
		return p
	}
	p.O = StartOncekv(t, args...)
	p.Other, p.OtherName = p.O.Addr, "oncekv"
	return p
}

func TestDiffSlowlog(t *testing.T) {
	t.Parallel()
	p := newSlowlogPair(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			for _, s := range slowlogScripts() {
				t.Run(s.Name, func(t *testing.T) { p.Run(t, s, proto) })
			}
		})
	}
}

func slowlogScripts() []Script {
	long := strings.Repeat("v", 300)
	many := func(name string, n int) []string {
		args := []string{name}
		for i := 1; i < n; i++ {
			args = append(args, "k"+strconv.Itoa(i))
		}
		return args
	}
	return []Script{
		{"len-reset", []Step{
			cmd("SLOWLOG", "RESET"),
			cmd("SLOWLOG", "LEN"), // the RESET itself
			cmd("SLOWLOG", "LEN"),
			cmd("SET", "k", "v"),
			cmd("GET", "k"),
			cmd("SLOWLOG", "LEN"),
			typeOnly("SLOWLOG", "GET"),
			cmd("SLOWLOG", "GET", "0"),
			typeOnly("SLOWLOG", "GET", "1"),
			typeOnly("SLOWLOG", "GET", "3"),
			typeOnly("SLOWLOG", "GET", "-1"),
			typeOnly("SLOWLOG", "GET", "1000"),
			cmd("SLOWLOG", "RESET"),
			cmd("slowlog", "len"),
			cmd("SlowLog", "Reset"),
			typeOnly("SLOWLOG", "GET", "-1"),
		}},
		{"errors-and-help", []Step{
			cmd("SLOWLOG"),
			cmd("SLOWLOG", "FOO"),
			cmd("SLOWLOG", "GET", "-2"),
			cmd("SLOWLOG", "GET", "x"),
			cmd("SLOWLOG", "GET", ""),
			cmd("SLOWLOG", "GET", "1.5"),
			cmd("SLOWLOG", "GET", "99999999999999999999"),
			cmd("SLOWLOG", "GET", "1", "2"),
			cmd("SLOWLOG", "LEN", "x"),
			cmd("SLOWLOG", "RESET", "x"),
			cmd("SLOWLOG", "HELP"),
			cmd("SLOWLOG", "help"),
			cmd("SLOWLOG", "HELP", "x"),
			cmd("SLOWLOG", "RESET"),
			cmd("SLOWLOG", "LEN"),
		}},
		{"entry-shapes", []Step{
			cmd("SLOWLOG", "RESET"),
			cmd("ECHO", long),
			cmd(many("MGET", 40)...),
			cmd(many("DEL", 33)...),
			cmd(many("DEL", 32)...),
			cmd("CLIENT", "SETNAME", "slow-client"),
			cmd("PING"),
			cmd("SLOWLOG", "LEN"),
			typeOnly("SLOWLOG", "GET", "-1"),
		}},
		{"redacted", []Step{
			cmd("SLOWLOG", "RESET"),
			cmd("AUTH", "secret"),
			cmd("AUTH", "someone", "secret"),
			cmd("CONFIG", "SET", "requirepass", "secret", "nosuch", "x"),
			cmd("CONFIG", "SET", "requirepass", "secret", "maxclients"),
			cmd("SLOWLOG", "LEN"),
			typeOnly("SLOWLOG", "GET", "-1"),
		}},
		{"multi", []Step{
			cmd("SLOWLOG", "RESET"),
			cmd("MULTI"),
			cmd("SET", "a", "1"),
			cmd("INCR", "a"),
			cmd("EXEC"), // EXEC is not logged; the commands it ran are
			cmd("SLOWLOG", "LEN"),
			typeOnly("SLOWLOG", "GET"),
		}},
	}
}

// slowEntry is the deterministic part of a SLOWLOG GET entry.
type slowEntryView struct {
	id   int64
	args []string
	name string
}

func parseSlowlog(t *testing.T, f *Frame) []slowEntryView {
	t.Helper()
	if f.Type != '*' {
		t.Fatalf("SLOWLOG GET: %q is not an array", f.Raw)
	}
	var out []slowEntryView
	for _, e := range f.Elems {
		if e.Type != '*' || len(e.Elems) != 6 {
			t.Fatalf("SLOWLOG GET entry %q is not a 6-element array", e.Raw)
		}
		id, err := strconv.ParseInt(e.Elems[0].Str, 10, 64)
		if err != nil || e.Elems[0].Type != ':' || e.Elems[1].Type != ':' || e.Elems[2].Type != ':' {
			t.Fatalf("SLOWLOG GET entry %q: id, time, duration are not integers", e.Raw)
		}
		at, _ := strconv.ParseInt(e.Elems[1].Str, 10, 64)
		if at < 1_600_000_000 {
			t.Errorf("SLOWLOG GET entry %q: time %d is not a Unix time", e.Raw, at)
		}
		v := slowEntryView{id: id, name: e.Elems[5].Str}
		for _, a := range e.Elems[3].Elems {
			v.args = append(v.args, a.Str)
		}
		if !strings.HasPrefix(e.Elems[4].Str, "127.0.0.1:") {
			t.Errorf("SLOWLOG GET entry %q: client address %q", e.Raw, e.Elems[4].Str)
		}
		out = append(out, v)
	}
	return out
}

// TestSlowlogEntriesMatchRedis compares the deterministic parts of the
// entries exactly: the arguments as kept (truncated, redacted), the client
// names, the order (newest first) and the ids' steps.
func TestSlowlogEntriesMatchRedis(t *testing.T) {
	t.Parallel()
	p := newSlowlogPair(t)
	many := []string{"MGET"}
	for i := 1; i < 40; i++ {
		many = append(many, "key"+strconv.Itoa(i))
	}
	run := [][]string{
		{"SLOWLOG", "RESET"},
		{"ECHO", strings.Repeat("x", 129)},
		{"ECHO", strings.Repeat("y", 128)},
		{"SET", "n", "12345"},
		many,
		many[:32],
		many[:33],
		{"CLIENT", "SETNAME", "named"},
		{"GET", "n"},
		{"AUTH", "pw"},
		{"AUTH", "user", "pw"},
		{"AUTH", "user", "pw", "extra"},
		{"HELLO", "2", "AUTH", "default"},
		{"HELLO", "2", "SETNAME", "renamed", "AUTH", "nosuchuser", "pw"},
		{"CONFIG", "SET", "requirepass", "pw", "nosuch", "x"},
		{"CONFIG", "SET", "nosuch", "x", "REQUIREPASS", "pw"},
		{"CONFIG", "SET", "requirepass", "pw", "maxclients"},
		{"CONFIG", "GET", "requirepass"},
		{"MULTI"},
		{"SET", "m", "1"},
		{"EXEC"},
		{"GET"}, // rejected before it runs: not logged
		{"NOSUCHCOMMAND"},
		{"SLOWLOG", "LEN"},
	}
	var got [2][]slowEntryView
	for i, addr := range []string{p.Redis, p.Other} {
		c := DialRaw(t, addr)
		c.Do("FLUSHALL")
		for _, cmd := range run {
			if _, err := c.TryReadFrameAfter(EncodeCommand(cmd...)); err != nil {
				t.Fatalf("%s: %v: %v", addr, cmd, err)
			}
		}
		f, err := c.TryReadFrameAfter(EncodeCommand("SLOWLOG", "GET", "-1"))
		if err != nil {
			t.Fatal(err)
		}
		got[i] = parseSlowlog(t, f)
	}
	redis, ours := got[0], got[1]
	if len(redis) != len(ours) {
		t.Fatalf("SLOWLOG GET -1: %d entries, Redis %d\nours:  %v\nredis: %v", len(ours), len(redis), ours, redis)
	}
	for i := range redis {
		r, o := redis[i], ours[i]
		if strings.Join(r.args, "\x00") != strings.Join(o.args, "\x00") || r.name != o.name {
			t.Errorf("entry %d: args %q name %q; Redis: args %q name %q", i, o.args, o.name, r.args, r.name)
		}
		if i > 0 && (redis[i-1].id-r.id) != (ours[i-1].id-o.id) {
			t.Errorf("entry %d: id step %d, Redis %d", i, ours[i-1].id-o.id, redis[i-1].id-r.id)
		}
	}
}

// TestSlowlogThresholdAndMaxLen: slowlog-max-len keeps the newest entries
// (trimmed when the next one is logged, as in Redis), -1 logs nothing,
// and CONFIG SET changes both while the server runs.
func TestSlowlogThresholdAndMaxLen(t *testing.T) {
	t.Parallel()
	p := newSlowlogPair(t, "--slowlog-max-len", "3")
	for _, addr := range []string{p.Redis, p.Other} {
		c := DialRaw(t, addr)
		steps := []struct {
			args []string
			want string
		}{
			{[]string{"CONFIG", "GET", "slowlog-*"}, ""},
			{[]string{"SLOWLOG", "RESET"}, "+OK\r\n"},
			{[]string{"PING"}, "+PONG\r\n"},
			{[]string{"PING"}, "+PONG\r\n"},
			{[]string{"PING"}, "+PONG\r\n"},
			{[]string{"SLOWLOG", "LEN"}, ":3\r\n"},
			{[]string{"CONFIG", "SET", "slowlog-max-len", "1"}, "+OK\r\n"},
			{[]string{"SLOWLOG", "LEN"}, ":1\r\n"}, // the CONFIG SET trimmed it
			{[]string{"CONFIG", "SET", "slowlog-max-len", "128", "slowlog-log-slower-than", "-1"}, "+OK\r\n"},
			{[]string{"SLOWLOG", "RESET"}, "+OK\r\n"},
			{[]string{"PING"}, "+PONG\r\n"},
			{[]string{"SLOWLOG", "LEN"}, ":0\r\n"},
			{[]string{"CONFIG", "SET", "slowlog-log-slower-than", "-2"}, "-ERR CONFIG SET failed (possibly related to argument 'slowlog-log-slower-than') - argument must be between -1 and 9223372036854775807 inclusive\r\n"},
			{[]string{"CONFIG", "SET", "slowlog-max-len", "-1"}, "-ERR CONFIG SET failed (possibly related to argument 'slowlog-max-len') - argument must be between 0 and 9223372036854775807 inclusive\r\n"},
			{[]string{"CONFIG", "SET", "slowlog-log-slower-than", "1000000"}, "+OK\r\n"},
			{[]string{"PING"}, "+PONG\r\n"},
			{[]string{"SLOWLOG", "LEN"}, ":0\r\n"}, // nothing takes a second
			{[]string{"CONFIG", "GET", "slowlog-log-slower-than"}, ""},
		}
		for _, st := range steps {
			got := string(c.Do(st.args...))
			if st.want != "" && got != st.want {
				t.Errorf("%s: %v = %q, want %q", addr, st.args, got, st.want)
			}
		}
	}
	// CONFIG GET shows the same values on both.
	for _, args := range [][]string{{"CONFIG", "GET", "slowlog-log-slower-than"}, {"CONFIG", "GET", "slowlog-max-len"}} {
		r, o := DialRaw(t, p.Redis).Do(args...), DialRaw(t, p.Other).Do(args...)
		if string(r) != string(o) {
			t.Errorf("%v: %q, Redis %q", args, o, r)
		}
	}
}

// TestSlowlogExcludesTimeBetweenCommands checks that a command's duration
// (SLOWLOG, INFO commandstats) does not take in the time its client took
// to send it: oncekv starts a pipelined command where the one before it
// ended, and must not do so across a wait for the network. Commands are
// sent one at a time and in a pipeline, with pauses longer than the
// slowlog threshold between the writes; redis-server logs none of them,
// and neither may oncekv.
func TestSlowlogExcludesTimeBetweenCommands(t *testing.T) {
	t.Parallel()
	// The threshold is far above what any of these commands takes, even
	// under -race on a loaded machine; the pauses are twice it.
	const pause = 500 * time.Millisecond
	args := []string{"--slowlog-log-slower-than", "250000"}
	for _, addr := range []string{StartRedis(t, args...), StartOncekv(t, args...).Addr} {
		c := DialRaw(t, addr)
		if got := string(c.Do("SLOWLOG", "RESET")); got != "+OK\r\n" {
			t.Fatalf("%s: SLOWLOG RESET = %q", addr, got)
		}
		for _, cmds := range [][][]string{
			{{"SET", "a", "1"}},
			{{"GET", "a"}},
			{{"SET", "a", "2"}, {"GET", "a"}, {"PING"}},
			{{"INCR", "n"}, {"GET", "a"}},
			{{"PING"}},
		} {
			time.Sleep(pause)
			var raw []byte
			for _, cmd := range cmds {
				raw = append(raw, EncodeCommand(cmd...)...)
			}
			c.Send(raw)
			for range cmds {
				c.ReadReply()
			}
		}
		time.Sleep(pause)
		if got := string(c.Do("SLOWLOG", "LEN")); got != ":0\r\n" {
			t.Errorf("%s: SLOWLOG LEN = %q after commands sent with pauses, want :0: %q", addr, got, c.Do("SLOWLOG", "GET"))
		}
	}
}
