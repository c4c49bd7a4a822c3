package app

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oncekv/oncekv/internal/config"
	"github.com/oncekv/oncekv/internal/testredis"
)

// startProxyApp assembles and starts a proxy-mode server; dir is a data
// directory that must stay untouched.
func startProxyApp(t *testing.T, args ...string) (*App, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "never-created")
	cfg, err := config.Parse(append([]string{"--bind", "127.0.0.1", "--port", "0", "--dir", dir, "--loglevel", "warning"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, dir
}

// exchange sends each line and checks the first line of its reply.
func exchange(t *testing.T, addr string, steps [][2]string) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(nc)
	for _, st := range steps {
		if _, err := nc.Write([]byte(st[0] + "\r\n")); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil || line != st[1]+"\r\n" {
			t.Errorf("%q: got %q %v, want %q", st[0], line, err, st[1])
		}
		if strings.HasPrefix(line, "$") && len(line) > 3 && line[1] != '-' {
			r.ReadString('\n') // the bulk string's body
		}
	}
}

// Proxy mode opens no store, touches no data directory, forwards, and
// shows its mode in INFO and its directives (password masked) in CONFIG GET.
func TestProxyModeAssembly(t *testing.T) {
	up := testredis.Standalone(t, "--requirepass", "up-pw")
	a, dir := startProxyApp(t, "--upstream", "redis://:up-pw@"+up.Addr(), "--once-wait-replicas", "0")
	if a.Store != nil || a.Engine != nil || a.Proxy == nil {
		t.Fatalf("proxy mode: Store %v, Engine %v, Proxy %v", a.Store, a.Engine, a.Proxy)
	}
	exchange(t, a.Addr().String(), [][2]string{
		{"SET k v", "+OK"},
		{"GET k", "$1"},
		{"RPUSH l a b", ":2"},
		{"ONCE.STATUS nokey", "*-1"},
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the data directory %s exists in proxy mode (%v)", dir, err)
	}
	if got := a.Config().Directives()["upstream"]; got != "redis://:***@"+up.Addr() {
		t.Errorf("CONFIG GET upstream = %q: the password must be masked", got)
	}
}

// CONFIG SET requirepass reaches the proxy too: a new connection must
// authenticate, for forwarded commands as for the local ones.
func TestProxyModeConfigSetRequirepass(t *testing.T) {
	up := testredis.Standalone(t)
	a, _ := startProxyApp(t, "--upstream", "redis://"+up.Addr())
	exchange(t, a.Addr().String(), [][2]string{{"CONFIG SET requirepass pw", "+OK"}})
	exchange(t, a.Addr().String(), [][2]string{
		{"LPUSH l x", "-NOAUTH Authentication required."},
		{"GET k", "-NOAUTH Authentication required."},
		{"AUTH pw", "+OK"},
		{"LPUSH l x", ":1"},
		{"CONFIG SET upstream redis://other:1", "-ERR CONFIG SET failed (possibly related to argument 'upstream') - can't set immutable config"},
	})
}

// rename-command applies to forwarded commands too.
func TestProxyModeRenameCommand(t *testing.T) {
	up := testredis.Standalone(t)
	a, _ := startProxyApp(t, "--upstream", "redis://"+up.Addr(),
		"--rename-command", "FLUSHALL", "", "--rename-command", "LPUSH", "my-lpush", "--rename-command", "ping", "pong-please")
	exchange(t, a.Addr().String(), [][2]string{
		{"FLUSHALL", "-ERR unknown command 'FLUSHALL', with args beginning with: "},
		{"LPUSH l x", "-ERR unknown command 'LPUSH', with args beginning with: 'l' 'x' "},
		{"MY-LPUSH l x", ":1"},
		{"PING", "-ERR unknown command 'PING', with args beginning with: "},
		{"PONG-PLEASE", "+PONG"},
	})
	cfg, _ := config.Parse([]string{"--upstream", "redis://" + up.Addr(), "--rename-command", "GET", "SET"})
	if _, err := New(cfg, nil); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("rename-command GET SET in proxy mode: %v, want a startup error", err)
	}
}

// Close does not hang on an upstream that stopped answering: after the
// grace period it closes the upstream connections under the commands.
func TestProxyModeCloseWithHungUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				// Answer the handshake (CLIENT SETNAME, COMMAND), then
				// never again.
				r := bufio.NewReader(nc)
				n := 0
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "$") {
						continue
					}
					if strings.HasPrefix(line, "*") {
						n++
						if n <= 1 {
							nc.Write([]byte("+OK\r\n"))
						}
					}
				}
			}()
		}
	}()
	old := closeGrace
	closeGrace = 200 * time.Millisecond
	defer func() { closeGrace = old }()
	cfg, err := config.Parse([]string{"--bind", "127.0.0.1", "--port", "0", "--upstream", "redis://" + ln.Addr().String(), "--loglevel", "nothing"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", a.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Write([]byte("GET k\r\n"))
	time.Sleep(100 * time.Millisecond) // the GET waits upstream
	done := make(chan error, 1)
	go func() { done <- a.Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on an upstream that does not answer")
	}
}
