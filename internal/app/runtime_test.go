package app

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/oncekv/oncekv/internal/config"
)

// startRT starts an in-process server on a free loopback port with the
// given directives; cleanup closes it.
func startRT(t *testing.T, log *zap.Logger, args ...string) *App {
	t.Helper()
	cfg, err := config.Parse(append([]string{"--bind", "127.0.0.1", "--port", "0", "--dir", t.TempDir(), "--loglevel", "warning"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// rtConn is a raw client: do sends a command and returns the first line
// of its reply (enough for the simple, error and integer replies used
// here; a bulk reply is returned as its two lines joined).
type rtConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func dialRT(t *testing.T, a *App) *rtConn {
	t.Helper()
	return dialFrom(t, a, nil)
}

func dialFrom(t *testing.T, a *App, src net.IP) *rtConn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second}
	if src != nil {
		d.LocalAddr = &net.TCPAddr{IP: src}
	}
	nc, err := d.Dial("tcp", a.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rtConn{t: t, nc: nc, r: bufio.NewReader(nc)}
}

func encode(args ...string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return []byte(b.String())
}

func (c *rtConn) try(args ...string) (string, error) {
	_ = c.nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(encode(args...)); err != nil {
		return "", err
	}
	return c.read()
}

func (c *rtConn) read() (string, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "$") && line != "$-1" {
		next, err := c.r.ReadString('\n')
		if err != nil {
			return "", err
		}
		line += " " + strings.TrimRight(next, "\r\n")
	}
	return line, nil
}

func (c *rtConn) do(args ...string) string {
	c.t.Helper()
	reply, err := c.try(args...)
	if err != nil {
		c.t.Fatalf("%q: %v", args, err)
	}
	return reply
}

func (c *rtConn) expect(want string, args ...string) {
	c.t.Helper()
	if got := c.do(args...); got != want {
		c.t.Errorf("%q: got %q, want %q", args, got, want)
	}
}

// configGet returns CONFIG GET name's value.
func (c *rtConn) configGet(name string) string {
	c.t.Helper()
	_ = c.nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(encode("CONFIG", "GET", name)); err != nil {
		c.t.Fatal(err)
	}
	head, err := c.r.ReadString('\n')
	if err != nil || head != "*2\r\n" {
		c.t.Fatalf("CONFIG GET %s: %q %v", name, head, err)
	}
	if _, err := c.read(); err != nil {
		c.t.Fatal(err)
	}
	v, err := c.read()
	if err != nil {
		c.t.Fatal(err)
	}
	_, v, _ = strings.Cut(v, " ")
	return v
}

// closedWithin reports whether the server closes c within d (c sends
// nothing meanwhile).
func (c *rtConn) closedWithin(d time.Duration) bool {
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	_, err := c.r.ReadByte()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil
}

// CONFIG SET requirepass: as in Redis, connections that are in stay in;
// new ones must AUTH; with the password removed everyone is in, including
// a connection that never authenticated.
func TestConfigSetRequirePass(t *testing.T) {
	a := startRT(t, nil)
	admin := dialRT(t, a)
	admin.expect("+OK", "CONFIG", "SET", "requirepass", "s3cret")
	admin.expect("+PONG", "PING")
	if got := admin.configGet("requirepass"); got != "s3cret" {
		t.Errorf("CONFIG GET requirepass = %q", got)
	}
	late := dialRT(t, a)
	late.expect("-NOAUTH Authentication required.", "PING")
	late.expect("-WRONGPASS invalid username-password pair or user is disabled.", "AUTH", "nope")
	late.expect("+OK", "AUTH", "s3cret")
	late.expect("+PONG", "PING")
	never := dialRT(t, a)
	never.expect("-NOAUTH Authentication required.", "GET", "k")

	admin.expect("+OK", "CONFIG", "SET", "requirepass", "")
	never.expect("$-1", "GET", "k")
	fresh := dialRT(t, a)
	fresh.expect("+PONG", "PING")
	fresh.expect("-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?", "AUTH", "x")
	// A client that never authenticated must again once a password is set.
	admin.expect("+OK", "CONFIG", "SET", "requirepass", "other")
	never.expect("-NOAUTH Authentication required.", "GET", "k")
	fresh.expect("+PONG", "PING") // connected while there was none: in
}

// CONFIG SET timeout applies to connections already waiting for input,
// and setting it back to 0 before it fires keeps them.
func TestConfigSetTimeout(t *testing.T) {
	a := startRT(t, nil)
	admin := dialRT(t, a)
	idle := dialRT(t, a)
	idle.expect("+PONG", "PING")
	if idle.closedWithin(300 * time.Millisecond) {
		t.Fatal("closed with timeout 0")
	}
	admin.expect("+OK", "CONFIG", "SET", "timeout", "1")
	if got := admin.configGet("timeout"); got != "1" {
		t.Errorf("CONFIG GET timeout = %q", got)
	}
	start := time.Now()
	if !idle.closedWithin(5 * time.Second) {
		t.Fatal("an idle connection was not closed within 5s of CONFIG SET timeout 1")
	}
	if d := time.Since(start); d < 700*time.Millisecond {
		t.Errorf("closed after %v, before the timeout", d)
	}

	// Armed, then disarmed before it fires. (admin idled too: it is
	// closed as well.)
	admin = dialRT(t, a)
	kept := dialRT(t, a)
	kept.expect("+PONG", "PING")
	admin.expect("+OK", "CONFIG", "SET", "timeout", "0")
	if kept.closedWithin(2 * time.Second) {
		t.Fatal("closed although CONFIG SET timeout 0 came before the timeout")
	}
	kept.expect("+PONG", "PING")
}

// CONFIG SET maxclients applies to the next connection.
func TestConfigSetMaxClients(t *testing.T) {
	a := startRT(t, nil)
	admin := dialRT(t, a)
	admin.expect("+OK", "CONFIG", "SET", "maxclients", "2")
	second := dialRT(t, a)
	second.expect("+PONG", "PING")
	third := dialRT(t, a)
	line, err := third.read()
	if err != nil || line != "-ERR max number of clients reached" {
		t.Fatalf("third client: %q %v", line, err)
	}
	admin.expect("+OK", "CONFIG", "SET", "maxclients", "10")
	dialRT(t, a).expect("+PONG", "PING")
}

// CONFIG SET protected-mode applies to the next connection: 127.0.0.2 is
// not loopback for protected mode (as in Redis).
func TestConfigSetProtectedMode(t *testing.T) {
	a := startRT(t, nil)
	src := net.IPv4(127, 0, 0, 2)
	denied := dialFrom(t, a, src)
	line, err := denied.read()
	if err != nil || !strings.HasPrefix(line, "-DENIED Redis is running in protected mode") {
		t.Fatalf("from 127.0.0.2 with protected mode: %q %v", line, err)
	}
	dialRT(t, a).expect("+OK", "CONFIG", "SET", "protected-mode", "no")
	dialFrom(t, a, src).expect("+PONG", "PING")
	dialRT(t, a).expect("+OK", "CONFIG", "SET", "protected-mode", "yes", "requirepass", "pw")
	dialFrom(t, a, src).expect("-NOAUTH Authentication required.", "PING")
}

// proto-max-bulk-len and client-query-buffer-limit apply to connections
// already open, and to what commands build.
func TestConfigSetLimits(t *testing.T) {
	a := startRT(t, nil)
	admin := dialRT(t, a)
	open := dialRT(t, a)
	open.expect("+PONG", "PING")
	admin.expect("+OK", "CONFIG", "SET", "proto-max-bulk-len", "1mb", "client-query-buffer-limit", "1mb")
	if got := admin.configGet("proto-max-bulk-len"); got != "1048576" {
		t.Errorf("CONFIG GET proto-max-bulk-len = %q", got)
	}
	_ = open.nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := open.nc.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := open.read(); err != nil || line != "-ERR Protocol error: invalid bulk length" {
		t.Errorf("1mb+1 argument on a connection opened before: %q %v", line, err)
	}

	// What a command builds: APPEND past 1mb.
	half := strings.Repeat("x", 600<<10)
	admin.expect("+OK", "SET", "k", half)
	admin.expect("-ERR string exceeds maximum allowed size (proto-max-bulk-len)", "APPEND", "k", half)

	// The query buffer: two 900 KB arguments of an unfinished request.
	q := dialRT(t, a)
	_ = q.nc.SetDeadline(time.Now().Add(5 * time.Second))
	big := strings.Repeat("y", 900_000)
	req := "*3\r\n$3\r\nSET\r\n$900000\r\n" + big + "\r\n$900000\r\n" + big[:500_000]
	if _, err := q.nc.Write([]byte(req)); err != nil && !errors.Is(err, io.EOF) {
		t.Logf("write: %v (the server may close first)", err)
	}
	if !q.closedWithin(5 * time.Second) {
		t.Error("a client over client-query-buffer-limit 1mb was not closed")
	}

	admin.expect("+OK", "CONFIG", "SET", "proto-max-bulk-len", "512mb", "client-query-buffer-limit", "1gb")
	admin.expect(fmt.Sprintf(":%d", 1200<<10), "APPEND", "k", half)
}

// loglevel changes the logger's level at once.
func TestConfigSetLogLevel(t *testing.T) {
	lvl := zap.NewAtomicLevelAt(zap.WarnLevel)
	core, logs := observer.New(lvl)
	a := startRT(t, zap.New(core))
	a.UseLogLevel(lvl)
	admin := dialRT(t, a)
	admin.expect("+OK", "CONFIG", "SET", "loglevel", "DEBUG")
	if got := admin.configGet("loglevel"); got != "debug" {
		t.Errorf("CONFIG GET loglevel = %q", got)
	}
	if lvl.Level() != zap.DebugLevel {
		t.Fatalf("level = %v, want debug", lvl.Level())
	}
	dialRT(t, a).expect("+PONG", "PING")
	deadline := time.Now().Add(5 * time.Second)
	for logs.FilterMessage("client connected").Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no debug log after CONFIG SET loglevel debug")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The change is logged by name, never with its value.
	admin.expect("+OK", "CONFIG", "SET", "requirepass", "hunter2", "loglevel", "notice")
	for _, e := range logs.All() {
		if strings.Contains(fmt.Sprint(e.Message, e.Context), "hunter2") {
			t.Errorf("the password was logged: %v %v", e.Message, e.Context)
		}
	}
	if lvl.Level() != zap.InfoLevel {
		t.Fatalf("level = %v, want info", lvl.Level())
	}
}

// min-free-disk: a reserve larger than any disk refuses writes; turning
// the check off lets them resume.
func TestConfigSetMinFreeDisk(t *testing.T) {
	a := startRT(t, nil)
	c := dialRT(t, a)
	c.expect("+OK", "CONFIG", "SET", "min-free-disk", "4000000000gb")
	deadline := time.Now().Add(5 * time.Second)
	for {
		// The write that meets the full disk first cannot be logged: it
		// is never acknowledged, its connection is closed (as under
		// appendfsync always); later ones are refused with MISCONF.
		w := dialRT(t, a)
		reply, err := w.try("SET", "k", "v")
		if err == nil && strings.HasPrefix(reply, "-MISCONF") {
			break
		}
		if err == nil && reply != "+OK" {
			t.Fatalf("SET with a full disk: %q", reply)
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes still accepted (%q) with min-free-disk 4000000000gb", reply)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.expect("+OK", "CONFIG", "SET", "min-free-disk", "-1")
	deadline = time.Now().Add(10 * time.Second)
	for {
		reply := c.do("SET", "k", "v")
		if reply == "+OK" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes still refused (%q) with min-free-disk -1", reply)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := c.configGet("min-free-disk"); got != "-1" {
		t.Errorf("CONFIG GET min-free-disk = %q", got)
	}
}

// A refused CONFIG SET changes nothing; the reply words are Redis's.
func TestConfigSetAllOrNothing(t *testing.T) {
	a := startRT(t, nil)
	c := dialRT(t, a)
	c.expect("-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive",
		"CONFIG", "SET", "timeout", "10", "maxclients", "0")
	if got := c.configGet("timeout"); got != "0" {
		t.Errorf("timeout = %q after a refused CONFIG SET", got)
	}
	c.expect("-ERR syntax error", "CONFIG", "SET", "timeout", "10", "maxclients")
	c.expect("-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'", "CONFIG", "SET", "nosuch", "1")
	c.expect("-ERR CONFIG SET failed (possibly related to argument 'appendfsync') - can't set immutable config", "CONFIG", "SET", "appendfsync", "always")
	c.expect("+OK", "CONFIG", "SET", "timeout", "10", "maxclients", "20")
	if a.Config().Timeout != 10 || a.Config().MaxClients != 20 {
		t.Errorf("App.Config() = %+v", a.Config())
	}
}

// Settings change under load without races (run with -race).
func TestConfigSetConcurrent(t *testing.T) {
	a := startRT(t, nil)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 8 {
		c := dialRT(t, a)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if reply, err := c.try("SET", "k", "v"); err != nil || reply != "+OK" {
					t.Errorf("SET: %q %v", reply, err)
					return
				}
			}
		}()
	}
	admin := dialRT(t, a)
	for i := range 200 {
		admin.expect("+OK", "CONFIG", "SET",
			"timeout", fmt.Sprint(100+i%3),
			"maxclients", fmt.Sprint(100+i),
			"proto-max-bulk-len", fmt.Sprintf("%dmb", 2+i%3),
			"client-query-buffer-limit", fmt.Sprintf("%dmb", 10+i%3),
			"protected-mode", []string{"yes", "no"}[i%2],
			"min-free-disk", fmt.Sprintf("%dmb", 1+i%2),
			"loglevel", "warning")
		if i%20 == 0 {
			dialRT(t, a).expect("+PONG", "PING")
		}
	}
	close(stop)
	wg.Wait()
}
