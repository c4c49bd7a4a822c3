package integration

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oncekv/oncekv/internal/child"
	"github.com/oncekv/oncekv/internal/testredis"
	"github.com/oncekv/oncekv/internal/testserver"
)

// DefaultTimeout bounds each read and write of a RawConn, so that a server
// that hangs fails the test instead of hanging it.
const DefaultTimeout = 5 * time.Second

// startTimeout bounds how long a server may take to answer its first PING.
const startTimeout = 10 * time.Second

// stopTimeout bounds how long a server may take to exit after SIGTERM.
const stopTimeout = 10 * time.Second

// TestMain removes the binary BuildOncekv built once all tests are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// FreePort returns a free TCP port on 127.0.0.1. Another process may take it
// before the caller binds it; the Start functions retry on a new port when
// that happens.
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("FreePort: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// proc is a child process whose Wait runs in the background.
type proc struct {
	cmd  *exec.Cmd
	out  *testredis.SyncBuffer
	c    *child.Proc
	done <-chan struct{} // c.Done()
}

// startProc starts cmd so that it dies with the test process (child).
func startProc(cmd *exec.Cmd) (*proc, error) {
	p := &proc{cmd: cmd, out: &testredis.SyncBuffer{}}
	cmd.Stdout = p.out
	cmd.Stderr = p.out
	c, err := child.Start(cmd)
	if err != nil {
		return nil, err
	}
	p.c, p.done = c, c.Done()
	return p, nil
}

func (p *proc) exited() bool { return p.c.Exited() }

// stop sends sig and waits up to timeout for the process to exit; it reports
// whether it did.
func (p *proc) stop(sig os.Signal, timeout time.Duration) bool {
	if p.exited() {
		return true
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

func (p *proc) kill() {
	if !p.stop(syscall.SIGKILL, stopTimeout) {
		// Not reaped after SIGKILL: nothing more we can do.
		return
	}
}

// tail returns the last n bytes of the process's output.
func (p *proc) tail(n int) string {
	s := p.out.String()
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// waitReady waits until addr answers PING (any reply but -LOADING counts:
// a server started with requirepass answers -NOAUTH), failing early when
// the process exits.
//
// The answer must be p's, as far as INFO or /proc tells
// (testredis.PingAs): FreePort's port may be taken by another test's
// server before p binds it.
func waitReady(p *proc, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if p.exited() {
			return fmt.Errorf("exited (%v) before answering PING", p.c.Err())
		}
		last = testredis.PingAs(addr, p.cmd.Process.Pid)
		if last == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no answer to PING within %v: %v", timeout, last)
}

func addrOf(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// flagValue returns the value following name in args, if name is there.
func flagValue(args []string, name string) (string, bool) {
	v, ok := "", false
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name {
			v, ok = args[i+1], true
		}
	}
	return v, ok
}

// StartRedis starts Debian's redis-server (7.0) on a free 127.0.0.1 port in
// tb.TempDir() with testredis.Standalone (`--save "" --appendonly no` and
// extra appended). Cleanup kills it. It returns "127.0.0.1:port". Unlike
// testredis, a missing redis-server fails the test instead of skipping it.
func StartRedis(tb testing.TB, extra ...string) string {
	tb.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		tb.Fatalf("redis-server not found: install it with `apt-get install -y redis-server redis-tools` (./test.sh does)")
	}
	return testredis.Standalone(tb, extra...).Addr()
}

// build holds the binary BuildOncekv builds once per test process.
var build struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// moduleRoot is the directory holding go.mod.
func moduleRoot() (string, error) { return testserver.ModuleRoot() }

// BuildOncekv builds the server binary once per test process (`go build
// -tags oncekv_poison,oncekv_testhooks -o <tmp>/oncekv .` in the module
// root) and returns its path. With ONCEKV_BIN set, it returns that
// instead. oncekv_poison makes the server overwrite each request's
// arguments once a command has given them back (resp.Reader.Release): a
// command that kept one after all then answers, or stores, the poison,
// and the differential tests see it. oncekv_testhooks gives the store
// the environment variables that only tests set (ONCEKVTEST_*: see
// store/badgerdb/testhooks_on.go); without them the binary is the same.
func BuildOncekv(tb testing.TB) string {
	tb.Helper()
	build.once.Do(func() {
		if bin := os.Getenv("ONCEKV_BIN"); bin != "" {
			build.path, build.err = filepath.Abs(bin)
			return
		}
		root, err := moduleRoot()
		if err != nil {
			build.err = err
			return
		}
		build.dir, err = os.MkdirTemp("", "oncekv-test-bin-")
		if err != nil {
			build.err = err
			return
		}
		path := filepath.Join(build.dir, "oncekv")
		cmd := exec.Command("go", "build", "-tags", "oncekv_poison,oncekv_testhooks", "-o", path, ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build in %s: %v\n%s", root, err, out)
			return
		}
		build.path = path
	})
	if build.err != nil {
		tb.Fatalf("BuildOncekv: %v", build.err)
	}
	return build.path
}

// Oncekv is a running oncekv server process. Its Wait runs in the
// background: do not call Cmd.Wait.
type Oncekv struct {
	Addr string
	Port int
	Dir  string
	Cmd  *exec.Cmd
	// Args are the extra arguments it was started with (Restart reuses them).
	Args []string
	// Env are the environment variables it was started with besides the
	// test's own (StartOncekvEnv; Restart reuses them).
	Env []string

	bin string
	p   *proc
}

// StartOncekv runs the binary with `--bind 127.0.0.1 --port N --dir <dir>`
// plus extra (dir is tb.TempDir() unless extra has --dir; N is a free port
// unless extra has --port), waits until PING answers, and registers a
// cleanup that stops it (SIGTERM, wait, then SIGKILL).
func StartOncekv(tb testing.TB, extra ...string) *Oncekv {
	tb.Helper()
	return StartOncekvEnv(tb, nil, extra...)
}

// StartOncekvEnv is StartOncekv with the environment variables env
// ("NAME=value") added to the test's own.
func StartOncekvEnv(tb testing.TB, env []string, extra ...string) *Oncekv {
	tb.Helper()
	bin := BuildOncekv(tb)
	dir, ok := flagValue(extra, "--dir")
	if !ok {
		dir = tb.TempDir()
	}
	fixedPort := 0
	if v, ok := flagValue(extra, "--port"); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			tb.Fatalf("StartOncekv: bad --port %q", v)
		}
		fixedPort = n
	}
	var last error
	for attempt := 0; attempt < 5; attempt++ {
		port := fixedPort
		if port == 0 {
			port = FreePort(tb)
		}
		o, err := startOncekv(tb, bin, dir, port, extra, env...)
		if err == nil {
			return o
		}
		last = err
		if fixedPort != 0 || !strings.Contains(err.Error(), "in use") {
			break
		}
	}
	tb.Fatalf("StartOncekv: %v", last)
	return nil
}

func startOncekv(tb testing.TB, bin, dir string, port int, extra []string, env ...string) (*Oncekv, error) {
	tb.Helper()
	args := []string{"--bind", "127.0.0.1"}
	if _, ok := flagValue(extra, "--port"); !ok {
		args = append(args, "--port", strconv.Itoa(port))
	}
	if _, ok := flagValue(extra, "--dir"); !ok {
		args = append(args, "--dir", dir)
	}
	args = append(args, extra...)
	cmd := exec.Command(bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	p, err := startProc(cmd)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %v", bin, err)
	}
	o := &Oncekv{Addr: addrOf(port), Port: port, Dir: dir, Cmd: cmd, Args: extra, Env: env, bin: bin, p: p}
	if err := waitReady(p, o.Addr, startTimeout); err != nil {
		p.kill()
		return nil, fmt.Errorf("oncekv %s: %v\noutput:\n%s", strings.Join(args, " "), err, p.tail(8000))
	}
	tb.Cleanup(func() {
		if !p.stop(syscall.SIGTERM, stopTimeout) {
			tb.Errorf("oncekv on %s did not exit within %v of SIGTERM; killing it", o.Addr, stopTimeout)
			p.kill()
		}
		if tb.Failed() {
			tb.Logf("oncekv on %s output (tail):\n%s", o.Addr, p.tail(4000))
		}
	})
	return o, nil
}

// Exited reports whether the process has exited.
func (o *Oncekv) Exited() bool { return o.p.exited() }

// Output returns everything the process wrote to stdout and stderr so far.
func (o *Oncekv) Output() string { return o.p.out.String() }

// Stop sends SIGTERM and waits for a graceful exit (failing the test if it
// takes longer than 10s, after which the process is killed).
func (o *Oncekv) Stop(tb testing.TB) {
	tb.Helper()
	if !o.p.stop(syscall.SIGTERM, stopTimeout) {
		o.p.kill()
		tb.Fatalf("oncekv on %s did not exit within %v of SIGTERM\noutput:\n%s", o.Addr, stopTimeout, o.p.tail(4000))
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (o *Oncekv) Kill(tb testing.TB) {
	tb.Helper()
	o.p.kill()
	if !o.p.exited() {
		tb.Fatalf("oncekv on %s survived SIGKILL", o.Addr)
	}
}

// Restart starts the server again on the same dir and port with the same
// arguments (stopping it first, gracefully, if it still runs) and returns
// the new process.
func (o *Oncekv) Restart(tb testing.TB) *Oncekv {
	tb.Helper()
	if !o.p.exited() {
		o.Stop(tb)
	}
	var last error
	// The port was just released: a moment may pass before it can be bound.
	for attempt := 0; attempt < 3; attempt++ {
		n, err := startOncekv(tb, o.bin, o.Dir, o.Port, o.Args, o.Env...)
		if err == nil {
			return n
		}
		last = err
		if !strings.Contains(err.Error(), "in use") {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	tb.Fatalf("Restart: %v", last)
	return nil
}

// RawConn is a minimal RESP client that returns replies as raw bytes, for
// byte-for-byte comparison. Every read and write has a deadline (Timeout,
// DefaultTimeout unless changed). Do, Send and ReadReply fail the test on
// any error; the Try variants return it.
type RawConn struct {
	Addr    string
	Conn    net.Conn
	Timeout time.Duration

	tb testing.TB
	r  *bufio.Reader
}

// DialRaw connects to addr; cleanup closes the connection.
func DialRaw(tb testing.TB, addr string) *RawConn {
	tb.Helper()
	c, err := TryDialRaw(tb, addr)
	if err != nil {
		tb.Fatalf("DialRaw %s: %v", addr, err)
	}
	return c
}

// TryDialRaw is DialRaw returning the error.
func TryDialRaw(tb testing.TB, addr string) (*RawConn, error) {
	c, err := dialRaw(addr)
	if err != nil {
		return nil, err
	}
	c.tb = tb
	tb.Cleanup(func() { c.Conn.Close() })
	return c, nil
}

// dialRaw connects to addr without a testing.TB: the caller closes the
// connection and uses only the Try methods (a goroutine that must not
// call Fatal).
func dialRaw(addr string) (*RawConn, error) {
	nc, err := net.DialTimeout("tcp", addr, DefaultTimeout)
	if err != nil {
		return nil, err
	}
	return &RawConn{Addr: addr, Conn: nc, Timeout: DefaultTimeout, r: bufio.NewReaderSize(nc, 64<<10)}, nil
}

// Close closes the connection.
func (c *RawConn) Close() error { return c.Conn.Close() }

// Do sends args as a RESP array of bulk strings and returns the raw reply:
// one complete RESP2 or RESP3 frame.
func (c *RawConn) Do(args ...string) []byte {
	c.tb.Helper()
	b, err := c.TryDo(args...)
	if err != nil {
		c.tb.Fatalf("%s: %s: %v", c.Addr, fmtArgs(args), err)
	}
	return b
}

// TryDo is Do returning the error.
func (c *RawConn) TryDo(args ...string) ([]byte, error) {
	if err := c.TrySend(EncodeCommand(args...)); err != nil {
		return nil, err
	}
	return c.TryReadReply()
}

// Send writes raw as it is.
func (c *RawConn) Send(raw []byte) {
	c.tb.Helper()
	if err := c.TrySend(raw); err != nil {
		c.tb.Fatalf("%s: send: %v", c.Addr, err)
	}
}

// TrySend is Send returning the error.
func (c *RawConn) TrySend(raw []byte) error {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(c.Timeout))
	_, err := c.Conn.Write(raw)
	return err
}

// ReadReply reads one raw reply frame (an attribute and the frame it
// precedes count as one).
func (c *RawConn) ReadReply() []byte {
	c.tb.Helper()
	b, err := c.TryReadReply()
	if err != nil {
		c.tb.Fatalf("%s: read reply: %v", c.Addr, err)
	}
	return b
}

// TryReadReply is ReadReply returning the error.
func (c *RawConn) TryReadReply() ([]byte, error) {
	f, err := c.TryReadFrame()
	if err != nil {
		return nil, err
	}
	return f.Raw, nil
}

// ReadFrame reads and parses one reply frame.
func (c *RawConn) ReadFrame() *Frame {
	c.tb.Helper()
	f, err := c.TryReadFrame()
	if err != nil {
		c.tb.Fatalf("%s: read reply: %v", c.Addr, err)
	}
	return f
}

// TryReadFrame is ReadFrame returning the error.
func (c *RawConn) TryReadFrame() (*Frame, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(c.Timeout))
	return readFrame(c.r)
}

// TryReadFrameAfter sends out as it is and reads one reply frame.
func (c *RawConn) TryReadFrameAfter(out []byte) (*Frame, error) {
	if err := c.TrySend(out); err != nil {
		return nil, err
	}
	return c.TryReadFrame()
}

// fmtArgs formats a command for messages, each argument quoted.
func fmtArgs(args []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if len(a) > 64 {
			fmt.Fprintf(&b, "%q…(%d bytes)", a[:32], len(a))
			continue
		}
		b.WriteString(strconv.Quote(a))
	}
	b.WriteByte(']')
	return b.String()
}
