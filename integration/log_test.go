package integration

// The server's log at the default loglevel (notice): the startup line,
// the shutdown lines, and errors; nothing per command or per connection
// (those are debug), nothing of the storage engine's own chatter.

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oncekv/oncekv/commands"
)

// startForLog runs the binary with args on a free port, with no
// ONCEKV_ variables in its environment (the harness's own, such as
// ONCEKV_BIN, would be warned about), and returns the process and its
// address.
func startForLog(t *testing.T, dir string, args ...string) (*proc, string) {
	t.Helper()
	bin := BuildOncekv(t)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ONCEKV_") {
			env = append(env, kv)
		}
	}
	var last string
	for attempt := 0; attempt < 3; attempt++ {
		port := FreePort(t)
		full := append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir}, args...)
		cmd := exec.Command(bin, full...)
		cmd.Env = env
		p, err := startProc(cmd)
		if err != nil {
			t.Fatal(err)
		}
		addr := addrOf(port)
		if err := waitReady(p, addr, startTimeout); err != nil {
			p.kill()
			last = err.Error() + "\n" + p.tail(4000)
			continue
		}
		t.Cleanup(p.kill)
		return p, addr
	}
	t.Fatalf("oncekv did not start: %s", last)
	return nil, ""
}

// logTraffic is what a busy server sees: many clients connecting and
// leaving, commands that succeed and fail, a protocol error, blocked
// waits that time out or are woken.
func logTraffic(t *testing.T, addr string) {
	t.Helper()
	for i := 0; i < 20; i++ {
		c := DialRaw(t, addr)
		c.Do("SET", "k"+strconv.Itoa(i), "v")
		c.Do("GET", "k"+strconv.Itoa(i))
		c.Do("INCR", "k"+strconv.Itoa(i)) // ERR not an integer
		c.Do("NOSUCHCOMMAND", "x")
		c.Do("GET")
		c.Do("AUTH", "nopass")
		c.Do("CLIENT", "SETNAME", "c"+strconv.Itoa(i))
		c.Do("MULTI")
		c.Do("SET", "m", "1")
		c.Do("EXEC")
		c.Close()
	}
	c := DialRaw(t, addr)
	claim := rawFrame(t, c, "ONCE.CLAIM", "job", "LEASE", "60000")
	w := DialRaw(t, addr)
	w.Do("ONCE.WAIT", "other", "TIMEOUT", "10")
	w.Send(EncodeCommand("ONCE.WAIT", "job", "TIMEOUT", "5000"))
	time.Sleep(50 * time.Millisecond)
	c.Do("ONCE.COMPLETE", "job", claim.Elems[1].Str, "done")
	w.ReadFrame()
	w.Close()
	c.Close()
	// A client that drops with a command half sent, and one that sends a
	// protocol error.
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	nc.Write([]byte("*2\r\n$3\r\nGET\r\n"))
	nc.Close()
	bad := DialRaw(t, addr)
	bad.Send([]byte("*x\r\n"))
	bad.TryReadReply()
	bad.Close()
}

// logLine is one line of zap's console encoder: time, level, the
// logger's name if it has one, caller, message, then the fields as JSON.
type logLine struct {
	level, msg string
	fields     map[string]any
	raw        string
}

func parseLog(t *testing.T, out string) []logLine {
	t.Helper()
	var lines []logLine
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		ll := logLine{raw: l, fields: map[string]any{}}
		parts := strings.Split(l, "\t")
		if len(parts) >= 3 && !strings.Contains(parts[2], ".go:") {
			parts = append(parts[:2], parts[3:]...) // drop the name
		}
		if len(parts) >= 4 {
			ll.level, ll.msg = parts[1], parts[3]
		}
		if len(parts) >= 5 {
			if err := json.Unmarshal([]byte(strings.Join(parts[4:], "\t")), &ll.fields); err != nil {
				t.Errorf("log line %q: fields: %v", l, err)
			}
		}
		lines = append(lines, ll)
	}
	return lines
}

// TestLogQuietByDefault: at the default loglevel, a server that served
// many clients and commands logs three lines: the startup line (version,
// address, directory, fsync policy), and on SIGTERM why it shuts down and
// that it is done.
func TestLogQuietByDefault(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, addr := startForLog(t, dir)
	logTraffic(t, addr)
	if !p.stop(syscall.SIGTERM, stopTimeout) {
		t.Fatalf("no exit after SIGTERM")
	}
	lines := parseLog(t, p.out.String())
	if len(lines) != 3 {
		t.Fatalf("the log has %d lines, want 3 (started, shutting down, bye):\n%s", len(lines), p.out.String())
	}
	start := lines[0]
	if start.level != "info" || start.msg != "oncekv started" {
		t.Errorf("first line %q, want the info line \"oncekv started\"", start.raw)
	}
	for k, want := range map[string]any{
		"version":     commands.Version,
		"dir":         dir,
		"appendfsync": "everysec",
		"addr":        []any{addr},
	} {
		got, _ := json.Marshal(start.fields[k])
		w, _ := json.Marshal(want)
		if string(got) != string(w) {
			t.Errorf("startup line: %s = %s, want %s (line %q)", k, got, w, start.raw)
		}
	}
	if lines[1].level != "info" || lines[1].msg != "shutting down" || lines[1].fields["signal"] != "terminated" {
		t.Errorf("second line %q, want info \"shutting down\" with signal terminated", lines[1].raw)
	}
	if lines[2].level != "info" || lines[2].msg != "bye" {
		t.Errorf("last line %q, want info \"bye\"", lines[2].raw)
	}
}

// TestLogDebugShowsClients: at loglevel debug the same traffic logs each
// client's connection and disconnection (so the quiet default above is
// the level's doing, not a lack of anything to log).
func TestLogDebugShowsClients(t *testing.T) {
	t.Parallel()
	p, addr := startForLog(t, t.TempDir(), "--loglevel", "debug")
	logTraffic(t, addr)
	if !p.stop(syscall.SIGTERM, stopTimeout) {
		t.Fatalf("no exit after SIGTERM")
	}
	var connected, disconnected, protocol int
	for _, l := range parseLog(t, p.out.String()) {
		switch {
		case strings.Contains(l.raw, "client connected"):
			connected++
		case strings.Contains(l.raw, "client disconnected"):
			disconnected++
		case strings.Contains(l.raw, "protocol error"):
			protocol++
		}
		if (strings.Contains(l.raw, "client") || strings.Contains(l.raw, "badger")) && l.level != "debug" {
			t.Errorf("a client's or the storage engine's line above debug: %q", l.raw)
		}
	}
	if connected < 23 || disconnected < 23 || protocol != 1 {
		t.Errorf("debug log: %d connected, %d disconnected, %d protocol errors; want ≥ 23, ≥ 23, 1:\n%s",
			connected, disconnected, protocol, p.tail(3000))
	}
}
