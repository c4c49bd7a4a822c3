package app

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncekv/oncekv/internal/config"
)

// startFromFile starts a server from a config file, as `oncekv file` does.
func startFromFile(t *testing.T, conf string) (*App, error) {
	t.Helper()
	return startIn(t, t.TempDir(), conf)
}

// startIn is startFromFile with the configuration file and the data in
// dir, so that a test can start a server again on the same data.
func startIn(t *testing.T, dir, conf string) (*App, error) {
	t.Helper()
	file := filepath.Join(dir, "oncekv.conf")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]string{file, "--bind", "127.0.0.1", "--port", "0", "--dir", filepath.Join(dir, "data")})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, nil)
	if err != nil {
		return nil, err
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, nil
}

// dial connects to a's server, with a deadline of 10 s for the test's
// exchanges; the connection closes when the test ends.
func dial(t *testing.T, a *App) (net.Conn, *bufio.Reader) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", a.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	return nc, bufio.NewReader(nc)
}

// TestRenameCommandInConfigFile: rename-command in the config file, as in
// redis.conf; "" disables a command.
func TestRenameCommandInConfigFile(t *testing.T) {
	a, err := startFromFile(t, "rename-command FLUSHDB \"\"\nrename-command ping \"pong-please\"\nrename-command ONCE.STATUS once.peek\n")
	if err != nil {
		t.Fatal(err)
	}
	nc, r := dial(t, a)
	for _, step := range []struct{ send, want string }{
		{"FLUSHDB\r\n", "-ERR unknown command 'FLUSHDB', with args beginning with: \r\n"},
		{"PING\r\n", "-ERR unknown command 'PING', with args beginning with: \r\n"},
		{"PONG-PLEASE\r\n", "+PONG\r\n"},
		{"pong-please x y\r\n", "-ERR wrong number of arguments for 'ping' command\r\n"},
		{"ONCE.STATUS k\r\n", "-ERR unknown command 'ONCE.STATUS', with args beginning with: 'k' \r\n"},
		{"ONCE.PEEK k\r\n", "*-1\r\n"},
	} {
		if _, err := nc.Write([]byte(step.send)); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil || line != step.want {
			t.Errorf("%q: got %q %v, want %q", step.send, line, err, step.want)
		}
	}
}

func TestBadRenameOrTLSIsAStartupError(t *testing.T) {
	for conf, want := range map[string]string{
		"rename-command NOSUCHCOMMAND x\n": "no such command",
		"rename-command GET SET\n":         "already exists",
		"tls-port 1\ntls-cert-file /nonexistent\ntls-key-file /nonexistent\ntls-auth-clients no\n": "tls-cert-file",
	} {
		if _, err := startFromFile(t, conf); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", conf, err, want)
		}
	}
}

// TestInfoCountsLogWritesAndFsyncs: under appendfsync always, each write
// a lone client sends is a log round of its own, synced: INFO's
// oncekv_log_writes and oncekv_log_fsyncs count them.
func TestInfoCountsLogWritesAndFsyncs(t *testing.T) {
	a, err := startFromFile(t, "appendfsync always\n")
	if err != nil {
		t.Fatal(err)
	}
	nc, r := dial(t, a)
	send := func(cmd string) string {
		t.Helper()
		if _, err := nc.Write([]byte(cmd + "\r\n")); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(line, "$") {
			return line
		}
		var n int
		if _, err := fmt.Sscanf(line, "$%d\r\n", &n); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			t.Fatal(err)
		}
		return string(b[:n])
	}
	field := func(info, name string) int {
		t.Helper()
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, name+":"); ok {
				n, err := strconv.Atoi(v)
				if err != nil {
					t.Fatalf("%s: %q", name, v)
				}
				return n
			}
		}
		t.Fatalf("no %s in INFO persistence:\n%s", name, info)
		return 0
	}
	before := send("INFO persistence")
	for i := range 3 {
		if got := send(fmt.Sprintf("SET k%d v", i)); got != "+OK\r\n" {
			t.Fatalf("SET: %q", got)
		}
	}
	after := send("INFO persistence")
	for _, name := range []string{"oncekv_log_writes", "oncekv_log_fsyncs"} {
		if d := field(after, name) - field(before, name); d < 3 {
			t.Errorf("%s rose by %d over 3 writes, each synced before the next was sent", name, d)
		}
	}
}

// Commands that write nothing count as the server's activity for the
// store's calm applies (badgerdb.Options.Activity): a server busy with
// reads is not calm, and Badger's work must not land among its reads.
func TestReadsAreStoreActivity(t *testing.T) {
	a, err := startFromFile(t, "")
	if err != nil {
		t.Fatal(err)
	}
	nc, r := dial(t, a)
	before := a.Store.Activity()
	const reads = 50
	for i := 0; i < reads; i++ {
		if _, err := nc.Write([]byte("GET nokey\r\n")); err != nil {
			t.Fatal(err)
		}
		if line, err := r.ReadString('\n'); err != nil || line != "$-1\r\n" {
			t.Fatalf("GET nokey: %q, %v", line, err)
		}
	}
	if moved := a.Store.Activity() - before; moved < reads {
		t.Fatalf("the store's activity moved by %d over %d GETs, want at least %d", moved, reads, reads)
	}
}

// TestListenAddrsShowThePortPicked: with port 0 the startup line (main.go
// logs ListenAddrs) names the port the system picked, not ":0", so that
// the user can connect to it.
func TestListenAddrsShowThePortPicked(t *testing.T) {
	a, err := startFromFile(t, "")
	if err != nil {
		t.Fatal(err)
	}
	got := a.ListenAddrs()
	if len(got) != 1 || got[0] != a.Addr().String() || strings.HasSuffix(got[0], ":0") {
		t.Fatalf("ListenAddrs() = %q, want [%q], the port picked", got, a.Addr().String())
	}
}
