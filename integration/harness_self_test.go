package integration

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// These tests check the harness itself: the RESP parser on hand-made frames,
// the comparison modes, and the runner on two real redis-servers, where
// every step must agree.

func TestParseFrame(t *testing.T) {
	good := []struct {
		raw, shape string
	}{
		{"+OK\r\n", "+"},
		{"-ERR bad\r\n", "-"},
		{":-42\r\n", ":"},
		{"$0\r\n\r\n", "$"},
		{"$4\r\n\x00\xff\r\n\r\n", "$"},
		{"$-1\r\n", "$null"},
		{"*-1\r\n", "*null"},
		{"*0\r\n", "*0[]"},
		{"_\r\n", "_null"},
		{",3.14\r\n", ","},
		{",inf\r\n", ","},
		{"#t\r\n", "#"},
		{"(3492890328409238509324850943850943825024385\r\n", "("},
		{"!21\r\nSYNTAX invalid syntax\r\n", "!"},
		{"=15\r\ntxt:Some string\r\n", "="},
		{"*2\r\n*1\r\n:1\r\n$-1\r\n", "*2[*1[:] $null]"},
		{"%2\r\n+a\r\n:1\r\n+b\r\n~1\r\n#f\r\n", "%4[+ : + ~1[#]]"},
		{">2\r\n+message\r\n$1\r\nx\r\n", ">2[+ $]"},
		{"|1\r\n+ttl\r\n:3600\r\n:2\r\n", "|2[+ :]:"},
		{"*1\r\n|1\r\n+a\r\n+b\r\n$1\r\nx\r\n", "*1[|2[+ +]$]"},
		{"$?\r\n;4\r\nHell\r\n;5\r\no wor\r\n;0\r\n", "$"},
		{"*?\r\n:1\r\n:2\r\n.\r\n", "*2[: :]"},
		{"%?\r\n+a\r\n:1\r\n.\r\n", "%2[+ :]"},
	}
	for _, g := range good {
		f, err := ParseFrame([]byte(g.raw))
		if err != nil {
			t.Errorf("ParseFrame(%q): %v", g.raw, err)
			continue
		}
		if string(f.Raw) != g.raw {
			t.Errorf("ParseFrame(%q).Raw = %q", g.raw, f.Raw)
		}
		if s := f.Shape(); s != g.shape {
			t.Errorf("ParseFrame(%q).Shape() = %q, want %q", g.raw, s, g.shape)
		}
	}
	if f, _ := ParseFrame([]byte("$?\r\n;4\r\nHell\r\n;5\r\no wor\r\n;0\r\n")); f == nil || f.Str != "Hello wor" {
		t.Errorf("streamed string: %+v", f)
	}
	if f, _ := ParseFrame([]byte("|1\r\n+ttl\r\n:3600\r\n:2\r\n")); f == nil || f.Attr == nil || string(f.Attr.Raw) != "|1\r\n+ttl\r\n:3600\r\n" {
		t.Errorf("attribute: %+v", f)
	}
	bad := []string{
		"", "+OK", "+OK\n", "$5\r\nabc\r\n", "$3\r\nabcde\r\n", "*2\r\n:1\r\n", ":x\r\n",
		"#x\r\n", "?\r\n", "=3\r\nabc\r\n", "%1\r\n+a\r\n", "|1\r\n+a\r\n+b\r\n", "+OK\r\n+OK\r\n",
		"*1\r\n.\r\n", "$?\r\n;4\r\nHell\r\n", "~-1\r\n",
	}
	for _, b := range bad {
		if f, err := ParseFrame([]byte(b)); err == nil {
			t.Errorf("ParseFrame(%q) = %q, want an error", b, f.Raw)
		}
	}
}

func TestCompareModes(t *testing.T) {
	p := func(s string) *Frame {
		f, err := ParseFrame([]byte(s))
		if err != nil {
			t.Fatalf("ParseFrame(%q): %v", s, err)
		}
		return f
	}
	cases := []struct {
		st    Step
		a, b  string
		equal bool
	}{
		{cmd("GET", "k"), "$1\r\nv\r\n", "$1\r\nv\r\n", true},
		{cmd("GET", "k"), "$1\r\nv\r\n", "$1\r\nw\r\n", false},
		{sorted("KEYS", "*"), "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nb\r\n$1\r\na\r\n", true},
		{sorted("KEYS", "*"), "*2\r\n$1\r\na\r\n$1\r\na\r\n", "*2\r\n$1\r\na\r\n$1\r\nb\r\n", false},
		{sorted("KEYS", "*"), "*1\r\n$1\r\na\r\n", "~1\r\n$1\r\na\r\n", false},
		{sorted("KEYS", "*"), "-ERR x\r\n", "-ERR y\r\n", false},
		{approx(1, "TTL", "k"), ":10\r\n", ":9\r\n", true},
		{approx(1, "TTL", "k"), ":10\r\n", ":8\r\n", false},
		{approx(1, "TTL", "k"), ":10\r\n", "$2\r\n10\r\n", false},
		{typeOnly("TIME"), "*2\r\n$1\r\n1\r\n$1\r\n2\r\n", "*2\r\n$2\r\n11\r\n$2\r\n22\r\n", true},
		{typeOnly("TIME"), "*2\r\n$1\r\n1\r\n$1\r\n2\r\n", "*2\r\n:1\r\n$2\r\n22\r\n", false},
		{typeOnly("CLIENT", "ID"), ":1\r\n", ":7\r\n", true},
		{send("X"), ":1\r\n", "-ERR\r\n", true},
	}
	for _, c := range cases {
		why := compare(c.st, p(c.a), p(c.b))
		if (why == "") != c.equal {
			t.Errorf("compare(%s, %q, %q) = %q, want equal=%v", c.st, c.a, c.b, why, c.equal)
		}
	}
}

// TestHarnessRedisVsRedis runs the runner with both sides on a real redis:
// every step must agree, in both protocols, with every kind of RESP3 frame
// (DEBUG PROTOCOL), pushes, multiple connections, QUIT and sleeps.
func TestHarnessRedisVsRedis(t *testing.T) {
	t.Parallel()
	p := &DiffPair{
		Redis:     StartRedis(t, "--enable-debug-command", "yes"),
		Other:     StartRedis(t, "--enable-debug-command", "yes"),
		OtherName: "redis2",
	}
	var frames []Step
	for _, typ := range []string{"string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib", "verbatim", "true", "false"} {
		frames = append(frames, cmd("DEBUG", "PROTOCOL", typ))
	}
	frames = append(frames, cmd("DEBUG", "PROTOCOL", "push"), readNext().InResp(3))
	big := strings.Repeat("x", 3<<20)
	scripts := []Script{
		{"debug-protocol", frames},
		{"basics", []Step{
			cmd("SET", "k", "\x00\xff\r\n"), cmd("GET", "k"), cmd("SET", "big", big), cmd("GET", "big"),
			cmd("SET", "t", "v", "PX", "300"), approx(50, "PTTL", "t"), sleep(350), cmd("GET", "t"),
			sorted("KEYS", "*"), typeOnly("TIME"), typeOnly("CLIENT", "ID"), send("CLIENT", "LIST"),
			raw("PING\r\n"), raw("*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$1\r\nx\r\n"), readNext(),
			cmd("HSET", "h", "a", "1", "b", "2"), sorted("HGETALL", "h"), sorted("SMEMBERS", "nosuch"),
			cmd("SADD", "s", "a", "b", "c"), sorted("SMEMBERS", "s"),
		}},
		{"scan", []Step{
			cmd("MSET", "a1", "1", "a2", "2", "b1", "3", "c", "4", "a3", "5"),
			scan("SCAN", "0"), scan("SCAN", "0", "MATCH", "a*", "COUNT", "1"), scan("SCAN", "x"),
			scan("SCAN", "0", "TYPE", "hash"),
		}},
		{"connections", []Step{
			cmd("SET", "w", "1"), cmd("WATCH", "w"), cmd("SET", "w", "2").On(1), cmd("MULTI"), cmd("GET", "w"), cmd("EXEC"),
			cmd("CLIENT", "TRACKING", "on").On(2), cmd("GET", "w").On(2), cmd("SET", "w", "3"), cmd("PING").On(2),
			cmd("CLIENT", "SETNAME", "a").On(1), cmd("QUIT").On(1), cmd("CLIENT", "GETNAME").On(1),
		}},
	}
	for _, proto := range []int{2, 3} {
		t.Run(map[int]string{2: "resp2", 3: "resp3"}[proto], func(t *testing.T) {
			for _, s := range scripts {
				t.Run(s.Name, func(t *testing.T) { p.Run(t, s, proto) })
			}
		})
	}
}

// TestRawConnTimeout checks that a server that never answers fails a read
// within the timeout instead of hanging.
func TestRawConnTimeout(t *testing.T) {
	t.Parallel()
	c := DialRaw(t, StartRedis(t))
	c.Timeout = 300 * time.Millisecond
	c.Send([]byte("*2\r\n$4\r\nECHO\r\n")) // incomplete: redis waits for more
	start := time.Now()
	if _, err := c.TryReadReply(); err == nil {
		t.Fatal("read an answer to an incomplete command")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("timed out after %v", d)
	}
}

// TestWaitReadyWantsItsOwnProcess: a port that another server answers on
// is not ready for the process being started, however well that server
// answers PING (waitReady). A running oncekv plays the other server; the
// process being started is one that never listens.
func TestWaitReadyWantsItsOwnProcess(t *testing.T) {
	other := StartOncekv(t)
	p, err := startProc(exec.Command("sleep", "30"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.kill)
	err = waitReady(p, other.Addr, time.Second)
	if err == nil || !strings.Contains(err.Error(), "served by process") {
		t.Fatalf("waitReady on another server's port: %v; want it refused, naming the process that serves it", err)
	}
}
