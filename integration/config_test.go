package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Configuration end to end, with the binary: a redis.conf-style file as the
// first argument, ONCEKV_<DIRECTIVE> environment variables, --directive
// flags (file < environment < flags), startup errors, CONFIG SET, and the
// `oncekv ping` health check.

// childEnv is the test process's environment without ONCEKV_ variables
// (which would configure the child), plus extra.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ONCEKV_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// StartOncekvWith runs the binary as `oncekv [file] args…` with the
// environment env (on top of the test's, without its ONCEKV_ variables)
// and waits until 127.0.0.1:port answers PING. Unlike StartOncekv it adds
// no argument: args must bind 127.0.0.1 and choose the port and the data
// directory, through the file, env or flags. Cleanup stops it.
func StartOncekvWith(tb testing.TB, port int, file string, env []string, args ...string) *Oncekv {
	tb.Helper()
	bin := BuildOncekv(tb)
	full := args
	if file != "" {
		full = append([]string{file}, args...)
	}
	cmd := exec.Command(bin, full...)
	cmd.Env = childEnv(env...)
	p, err := startProc(cmd)
	if err != nil {
		tb.Fatalf("starting %s: %v", bin, err)
	}
	o := &Oncekv{Addr: addrOf(port), Port: port, Cmd: cmd, Args: args, bin: bin, p: p}
	if err := waitReady(p, o.Addr, startTimeout); err != nil {
		p.kill()
		tb.Fatalf("oncekv %s (env %q): %v\noutput:\n%s", strings.Join(full, " "), env, err, p.tail(8000))
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
	return o
}

// runOncekv runs the binary to completion (bounded) and returns its exit
// code and output.
func runOncekv(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, BuildOncekv(t), args...)
	cmd.Env = childEnv(env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("oncekv %q did not exit within 30s; output:\n%s", args, out.String())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	}
	t.Fatalf("oncekv %q: %v", args, err)
	return -1, ""
}

func writeConf(t *testing.T, text string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "oncekv.conf")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// configGet returns CONFIG GET name's value on c.
func configGet(t *testing.T, c *RawConn, name string) string {
	t.Helper()
	f, err := c.TryReadFrameAfter(EncodeCommand("CONFIG", "GET", name))
	if err != nil || len(f.Elems) != 2 {
		var raw []byte
		if f != nil {
			raw = f.Raw
		}
		t.Fatalf("CONFIG GET %s: %q %v", name, raw, err)
	}
	return f.Elems[1].Str
}

func expectReply(t *testing.T, c *RawConn, want string, args ...string) {
	t.Helper()
	if got := string(c.Do(args...)); got != want {
		t.Errorf("%s: got %q, want %q", fmtArgs(args), got, want)
	}
}

// TestConfigFileEnvFlags: each directive takes its value from the last of
// file, environment and flags that sets it.
func TestConfigFileEnvFlags(t *testing.T) {
	t.Parallel()
	filePort, envPort, flagPort := FreePort(t), FreePort(t), FreePort(t)
	dir := t.TempDir()
	file := writeConf(t, fmt.Sprintf(`# as in redis.conf
bind 127.0.0.1
port %d
requirepass "file pass"
maxclients 7
timeout 100
databases 4
loglevel warning
dir %s
`, filePort, filepath.Join(dir, "from-file")))
	env := []string{
		"ONCEKV_PORT=" + strconv.Itoa(envPort),
		"ONCEKV_REQUIREPASS=env pass",
		"ONCEKV_TIMEOUT=200",
		"ONCEKV_DIR=" + filepath.Join(dir, "from-env"),
		"ONCEKV_MAXCLIENTS=", // empty: unset, the file's value stands
		"ONCEKV_TYPO=1",      // names no directive: ignored, with a warning
	}
	o := StartOncekvWith(t, flagPort, file, env, "--port", strconv.Itoa(flagPort), "--timeout", "300")

	for _, port := range []int{filePort, envPort} {
		if nc, err := net.DialTimeout("tcp", addrOf(port), time.Second); err == nil {
			nc.Close()
			t.Errorf("something listens on %d, the port of a lower-precedence source", port)
		}
	}
	c := DialRaw(t, o.Addr)
	expectReply(t, c, "-NOAUTH Authentication required.\r\n", "PING")
	expectReply(t, c, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH", "file pass")
	expectReply(t, c, "+OK\r\n", "AUTH", "env pass")
	for name, want := range map[string]string{
		"port":        strconv.Itoa(flagPort),         // flag over env over file
		"timeout":     "300",                          // flag over env over file
		"dir":         filepath.Join(dir, "from-env"), // env over file
		"maxclients":  "7",                            // file (env empty)
		"databases":   "4",                            // file only
		"loglevel":    "warning",                      // file only
		"appendfsync": "everysec",                     // default
	} {
		if got := configGet(t, c, name); got != want {
			t.Errorf("CONFIG GET %s = %q, want %q", name, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "from-env", "oncekv.meta")); err != nil {
		t.Errorf("the data directory is not the environment's: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "from-file")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file's data directory was created: %v", err)
	}
	if out := o.Output(); !strings.Contains(out, "ONCEKV_TYPO") {
		t.Errorf("no warning about ONCEKV_TYPO in the log:\n%s", out)
	}
}

// TestConfigStartupErrors: a configuration error is a clear message and
// exit status 1, before anything listens.
func TestConfigStartupErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := []string{"--bind", "127.0.0.1", "--port", "0", "--dir", dir}
	bad := writeConf(t, "port 0\nnosuchdirective yes\n")
	good := writeConf(t, "port 0\n")
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{name: "unknown flag", args: slices.Concat(base, []string{"--nosuch", "1"}), want: `unknown directive "nosuch"`},
		{name: "unknown in file", args: slices.Concat([]string{bad}, base), want: `oncekv.conf:2: unknown directive "nosuchdirective"`},
		{name: "missing file", args: slices.Concat([]string{filepath.Join(dir, "none.conf")}, base), want: "read config file"},
		{name: "bad value", args: slices.Concat(base, []string{"--appendfsync", "sometimes"}), want: `appendfsync must be always, everysec or no, not "sometimes"`},
		{name: "bad environment", args: base, env: []string{"ONCEKV_MAXCLIENTS=lots"}, want: `environment ONCEKV_MAXCLIENTS: directive "maxclients": "lots" is not an integer`},
		{name: "stray word", args: slices.Concat([]string{good, "extra"}, base), want: `argument "extra": expected --directive`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := runOncekv(t, tc.env, tc.args...)
			if code != 1 || !strings.Contains(out, "oncekv: ") || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, output %q; want exit 1 and %q", code, out, tc.want)
			}
		})
	}
}

// TestConfigSetBinary: CONFIG SET through the binary changes what it does
// and what CONFIG GET shows; loglevel reaches the process's log.
func TestConfigSetBinary(t *testing.T) {
	t.Parallel()
	o := StartOncekv(t, "--loglevel", "warning")
	c := DialRaw(t, o.Addr)
	expectReply(t, c, "+OK\r\n", "CONFIG", "SET", "loglevel", "debug", "maxclients", "3", "timeout", "3600")
	for name, want := range map[string]string{"loglevel": "debug", "maxclients": "3", "timeout": "3600"} {
		if got := configGet(t, c, name); got != want {
			t.Errorf("CONFIG GET %s = %q, want %q", name, got, want)
		}
	}
	DialRaw(t, o.Addr).Do("PING")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(o.Output(), "client connected") {
		if time.Now().After(deadline) {
			t.Fatalf("no debug line in the log after CONFIG SET loglevel debug:\n%s", o.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(o.Output(), "CONFIG SET changed the configuration") {
		t.Errorf("the change is not logged:\n%s", o.Output())
	}
	// maxclients 3: c, the PING client (may still be closing) and one more.
	var conns []*RawConn
	refused := false
	for range 4 {
		x := DialRaw(t, o.Addr)
		conns = append(conns, x)
		if reply, err := x.TryDo("PING"); err == nil && string(reply) == "-ERR max number of clients reached\r\n" {
			refused = true
			break
		}
	}
	if !refused {
		t.Error("maxclients 3 refused no client")
	}
	for _, x := range conns {
		x.Close()
	}
	expectReply(t, c, "-ERR CONFIG SET failed (possibly related to argument 'appendfsync') - can't set immutable config\r\n",
		"CONFIG", "SET", "appendfsync", "always")
	expectReply(t, c, "-ERR Unknown option or number of arguments for CONFIG SET - 'no-such'\r\n", "CONFIG", "SET", "no-such", "1")

	expectReply(t, c, "+OK\r\n", "CONFIG", "SET", "requirepass", "s3cret", "maxclients", "100")
	expectReply(t, c, "+PONG\r\n", "PING") // in before: stays in
	expectReply(t, DialRaw(t, o.Addr), "-NOAUTH Authentication required.\r\n", "PING")
}

// TestPingBinary: `oncekv ping` exits 0 on PONG and 1 otherwise, with the
// port and password from flags or from ONCEKV_PORT / ONCEKV_REQUIREPASS
// (the container's HEALTHCHECK runs it without flags).
func TestPingBinary(t *testing.T) {
	t.Parallel()
	o := StartOncekv(t, "--requirepass", "s3cret")
	port := strconv.Itoa(o.Port)
	closed := strconv.Itoa(FreePort(t))
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		code int
		want string
	}{
		{name: "flags", args: []string{"--port", port, "--password", "s3cret"}, want: "PONG"},
		{name: "environment", env: []string{"ONCEKV_PORT=" + port, "ONCEKV_REQUIREPASS=s3cret"}, want: "PONG"},
		{name: "no password", args: []string{"--port", port}, code: 1, want: "needs a password"},
		{name: "wrong password", args: []string{"--port", port, "--password", "x"}, code: 1, want: "WRONGPASS"},
		{name: "nothing listening", args: []string{"--port", closed, "--timeout", "1s"}, code: 1, want: "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := runOncekv(t, tc.env, append([]string{"ping"}, tc.args...)...)
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, output %q; want exit %d and %q", code, out, tc.code, tc.want)
			}
		})
	}
}
