package integration

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"
)

// monitorHead is the part of a monitor line that differs between two
// servers by design: the time and the client's port (a script's
// commands are shown from "lua").
var monitorHead = regexp.MustCompile(`^\+[0-9]+\.[0-9]{6} \[([0-9]+) (127\.0\.0\.1:[0-9]+|lua)\] `)

// maskMonitorLine replaces a monitor line's time and port; ok is false
// for what is not a monitor line.
func maskMonitorLine(raw []byte) (string, bool) {
	if !monitorHead.Match(raw) {
		return "", false
	}
	m := monitorHead.FindSubmatch(raw)
	from := "127.0.0.1:P"
	if string(m[2]) == "lua" {
		from = "lua"
	}
	return "+T [" + string(m[1]) + " " + from + "] " + string(raw[len(m[0]):]), true
}

// sameMonitorLine accepts two monitor lines that differ only in the time
// and the client's port.
func sameMonitorLine(a, b *Frame) bool {
	ma, okA := maskMonitorLine(a.Raw)
	mb, okB := maskMonitorLine(b.Raw)
	return okA && okB && ma == mb
}

// monLine reads the next monitor line on connection n and compares it,
// time and port masked.
func monLine(n int) Step { return Step{Raw: []byte{}, Conn: n, Alike: sameMonitorLine} }

// TestMonitorDiff compares what MONITOR shows with redis-server 7.0:
// the lines of the commands that ran, not of those refused for their
// arity or unknown, nor of admin ones (CONFIG) or QUIT; every byte of an
// argument quoted as sdscatrepr; AUTH's and HELLO AUTH's secrets
// redacted; MULTI, the commands EXEC ran, then EXEC; the database after
// SELECT; and what a monitoring client's own commands answer.
func TestMonitorDiff(t *testing.T) {
	binary := "a\x00b\"c\\d\ne\rf\tg\ah\bi\x7f\xff\x01 é~"
	RunDiffScripts(t, []Script{
		{Name: "stream", Steps: []Step{
			cmd("PING"),
			cmd("MONITOR").On(1),
			cmd("SET", "k", binary), monLine(1),
			cmd("GET", "k"), monLine(1),
			cmd("GET"),                         // arity: not shown
			cmd("NOSUCH", "x"),                 // unknown: not shown
			send("CONFIG", "GET", "maxmemory"), // admin: not shown
			cmd("INCR", "k"), monLine(1),       // fails as it runs: shown
			cmd("AUTH", "secret"), monLine(1),
			cmd("AUTH", "user", "secret"), monLine(1),
			send("HELLO", "2", "AUTH", "default", "pw"), monLine(1),
			cmd("MULTI"), monLine(1),
			cmd("SET", "n", "1"),
			cmd("INCR", "n"),
			cmd("SET", "x"), // refused as queued: EXECABORT, not shown
			cmd("EXEC"), monLine(1),
			cmd("MULTI"), monLine(1),
			cmd("SET", "n", "1"),
			cmd("INCR", "n"),
			cmd("EXEC"), monLine(1), monLine(1), monLine(1),
			cmd("SELECT", "2"), monLine(1),
			cmd("ECHO", "in 2"), monLine(1),
			cmd("SELECT", "0"), monLine(1),
			typeOnly("CLIENT", "ID"), monLine(1),
			cmd("MSET", "a", "1", "b", ""), monLine(1),
			cmd("DEL", "a", "b", "k", "n"), monLine(1),
			// The monitor's own commands: keyspace ones refused (not
			// shown), the others answered, then shown to it.
			cmd("GET", "k").On(1),
			cmd("PING").On(1), monLine(1),
			cmd("ECHO", "x").On(1), monLine(1),
			held("MONITOR").On(1), // a second MONITOR: no reply
			cmd("PING", "again").On(1), monLine(1),
			cmd("QUIT").On(1),
		}},
		{Name: "reset ends it", Steps: []Step{
			cmd("PING"), cmd("PING").On(1), cmd("PING").On(2),
			cmd("MONITOR").On(1),
			cmd("MONITOR").On(2),
			cmd("SET", "k", "v"), monLine(1), monLine(2),
			cmd("RESET").On(1), monLine(2),
			cmd("GET", "k").On(1), monLine(2),
			cmd("GET", "k"), monLine(2),
			cmd("PING").On(1), monLine(2),
			cmd("QUIT").On(2),
		}},
		{Name: "command info", Steps: []Step{
			cmd("COMMAND", "INFO", "monitor"),
		}},
		{Name: "scripts", Steps: []Step{
			cmd("PING"),
			cmd("MONITOR").On(1),
			// EVAL first, then each command the script ran, from "lua",
			// as the script wrote it; EVAL even when it fails.
			cmd("EVAL", "redis.call('set','a','1') return redis.call('get', KEYS[1])", "1", "a"),
			monLine(1), monLine(1), monLine(1),
			cmd("EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"), monLine(1),
			cmd("EVAL", "return 1", "-1"), monLine(1),
			cmd("EVAL", "return redis.call('nosuch')", "0"), monLine(1),
			cmd("EVAL", "return redis.pcall('incr','a','b')", "0"), monLine(1),
			cmd("EVAL", "return redis.pcall('hset','a','f','v')", "0"), monLine(1), monLine(1),
			cmd("EVAL", "return redis.call('get', 1.5)", "0"), monLine(1), monLine(1),
			cmd("EVAL", "return redis.call('config','get','port')", "0"), monLine(1),
			cmd("MULTI"), monLine(1),
			cmd("EVAL", "return redis.call('incr','n')", "0"),
			cmd("EXEC"), monLine(1), monLine(1), monLine(1),
			cmd("SELECT", "3"), monLine(1),
			cmd("EVAL", "return redis.call('zadd','z','1','m')", "0"), monLine(1), monLine(1),
			cmd("QUIT").On(1),
		}},
		{Name: "in multi", Steps: []Step{
			cmd("MULTI"),
			cmd("MONITOR"),
			cmd("EXEC"),
			cmd("SET", "k", "v"),
		}},
	})
}

// TestMonitorOnce shows that the ONCE commands, which redis-server does
// not have, reach a monitor as any other command does (KV-1).
func TestMonitorOnce(t *testing.T) {
	o := StartOncekv(t)
	mon := DialRaw(t, o.Addr)
	if got := string(mon.Do("MONITOR")); got != "+OK\r\n" {
		t.Fatalf("MONITOR = %q", got)
	}
	c := DialRaw(t, o.Addr)
	claim := c.ReadFrameAfterDo(t, "ONCE.CLAIM", "job:1", "LEASE", "5000")
	if claim.Type != '*' || len(claim.Elems) != 2 {
		t.Fatalf("ONCE.CLAIM = %q", claim.Raw)
	}
	token := claim.Elems[1].Str
	c.Do("ONCE.COMPLETE", "job:1", token, "the answer")
	c.Do("ONCE.STATUS", "job:1")
	for _, want := range []string{
		`"ONCE.CLAIM" "job:1" "LEASE" "5000"`,
		`"ONCE.COMPLETE" "job:1" "` + token + `" "the answer"`,
		`"ONCE.STATUS" "job:1"`,
	} {
		line, ok := maskMonitorLine(mon.ReadReply())
		if !ok || !strings.HasSuffix(line, "] "+want+"\r\n") || !strings.HasPrefix(line, "+T [0 ") {
			t.Errorf("monitor line %q, want one ending %s", line, want)
		}
	}
}

// TestMonitorSlowReader shows that a monitor that does not read is closed
// at client-output-buffer-limit normal, the class Redis applies to
// monitors, while the clients it watches go on unhindered.
func TestMonitorSlowReader(t *testing.T) {
	o := StartOncekv(t)
	c := DialRaw(t, o.Addr)
	if got := string(c.Do("CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 256kb 1")); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET = %q", got)
	}
	mon := DialRaw(t, o.Addr)
	if got := string(mon.Do("MONITOR")); got != "+OK\r\n" {
		t.Fatalf("MONITOR = %q", got)
	}
	value := strings.Repeat("\x01", 16<<10) // 64 KiB a line, quoted
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		if got := string(c.Do("SET", "k", value)); got != "+OK\r\n" {
			t.Fatalf("SET %d = %q", i, got)
		}
		if i%16 == 0 && !bytes.Contains(c.Do("CLIENT", "LIST"), []byte("flags=O")) {
			break // the monitor is gone
		}
		if time.Now().After(deadline) {
			t.Fatalf("the monitor was not closed after %d lines of 64 KiB", i)
		}
	}
	mon.Conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, mon.Conn); err != nil {
		t.Fatalf("reading the closed monitor: %v, want EOF", err)
	}
	if got := string(c.Do("PING")); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}
}
