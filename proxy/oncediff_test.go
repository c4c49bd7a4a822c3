package proxy_test

// Differential ONCE tests: the same command sequences against the embedded
// engine (a native oncekv) and against proxy mode over a real redis-server,
// replies compared byte for byte once tokens and lease times are
// normalised (proxy tokens are large by design, lease times move).

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncekv/oncekv/internal/testredis"
	"github.com/oncekv/oncekv/internal/testserver"
)

type dconn struct {
	tb testing.TB
	nc net.Conn
	br *bufio.Reader
}

func ddial(tb testing.TB, addr string) *dconn {
	tb.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { nc.Close() })
	return &dconn{tb: tb, nc: nc, br: bufio.NewReader(nc)}
}

func (c *dconn) send(args ...string) {
	c.tb.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write([]byte(b.String())); err != nil {
		c.tb.Fatal(err)
	}
}

// readWithin reads one reply, or returns "" (timed out) after d.
func (c *dconn) readWithin(d time.Duration) string {
	c.tb.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	var b strings.Builder
	if err := c.readOne(&b); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() && b.Len() == 0 {
			return ""
		}
		c.tb.Fatalf("read: %v (got %q)", err, b.String())
	}
	return b.String()
}

func (c *dconn) read() string {
	c.tb.Helper()
	return c.readWithin(10 * time.Second)
}

func (c *dconn) readOne(b *strings.Builder) error {
	line, err := c.br.ReadString('\n')
	if err != nil {
		return err
	}
	b.WriteString(line)
	body := strings.TrimSuffix(line[1:], "\r\n")
	switch line[0] {
	case '$', '=', '!':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := ioReadFull(c.br, buf); err != nil {
			return err
		}
		b.Write(buf)
	case '*', '~', '>':
		n, _ := strconv.Atoi(body)
		for i := 0; i < n; i++ {
			if err := c.readOne(b); err != nil {
				return err
			}
		}
	case '%':
		n, _ := strconv.Atoi(body)
		for i := 0; i < 2*n; i++ {
			if err := c.readOne(b); err != nil {
				return err
			}
		}
	}
	return nil
}

func ioReadFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (c *dconn) do(args ...string) string {
	c.tb.Helper()
	c.send(args...)
	return c.read()
}

// onceSide is one server under test: its address and the tokens its
// claims handed out, in order ($1, $2… in a script).
type onceSide struct {
	name   string
	addr   string
	tokens []string
}

var claimedRe = regexp.MustCompile(`^\*2\r\n\$7\r\nclaimed\r\n:(\d+)\r\n$`)
var runningRe = regexp.MustCompile(`^(\*2\r\n\$7\r\nrunning\r\n:)(\d+)(\r\n)$`)

// norm records a claimed token and replaces it and lease times with
// placeholders.
func (s *onceSide) norm(r string) string {
	if m := claimedRe.FindStringSubmatch(r); m != nil {
		s.tokens = append(s.tokens, m[1])
		return fmt.Sprintf("claimed $%d", len(s.tokens))
	}
	if m := runningRe.FindStringSubmatch(r); m != nil {
		if m[2] == "0" {
			return "running 0"
		}
		return "running N"
	}
	return r
}

func (s *onceSide) args(a []string) []string {
	out := make([]string, len(a))
	for i, x := range a {
		if len(x) > 1 && x[0] == '$' {
			if n, err := strconv.Atoi(x[1:]); err == nil && n >= 1 && n <= len(s.tokens) {
				x = s.tokens[n-1]
			}
		}
		out[i] = x
	}
	return out
}

// startOncePair starts a native oncekv and a proxy oncekv over a fresh
// redis-server, with the same default lease.
func startOncePair(tb testing.TB, extra ...string) (native, proxy string, up *testredis.Server) {
	tb.Helper()
	up = testredis.Standalone(tb)
	n := testserver.Start(tb, extra...)
	p := testserver.Start(tb, append([]string{"--upstream", "redis://" + up.Addr()}, extra...)...)
	return n.Addr().String(), p.Addr().String(), up
}

// runOnceDiff runs script (one command per step, on one connection per
// side) and reports every reply that differs.
func runOnceDiff(t *testing.T, nativeAddr, proxyAddr string, script [][]string) {
	t.Helper()
	sides := []*onceSide{{name: "native", addr: nativeAddr}, {name: "proxy", addr: proxyAddr}}
	conns := []*dconn{ddial(t, nativeAddr), ddial(t, proxyAddr)}
	for _, step := range script {
		var got [2]string
		for i, s := range sides {
			got[i] = s.norm(conns[i].do(s.args(step)...))
		}
		if got[0] != got[1] {
			t.Errorf("%q: native %q, proxy %q", step, got[0], got[1])
		}
	}
}

// TestOnceDiffBasic: replies to non-blocking ONCE sequences are the
// embedded engine's (KV-8, KV-12, KV-13, KV-14, KV-15).
func TestOnceDiffBasic(t *testing.T) {
	t.Parallel()
	n, p, _ := startOncePair(t)
	runOnceDiff(t, n, p, [][]string{
		{"ONCE.STATUS", "k"},
		{"ONCE.WAIT", "k"},
		{"ONCE.CLAIM", "k", "FINGERPRINT", "a"},
		{"ONCE.CLAIM", "k"},
		{"ONCE.CLAIM", "k", "FINGERPRINT", "b"},
		{"ONCE.CLAIM", "k", "FINGERPRINT", "a"},
		{"ONCE.EXTEND", "k", "$1", "LEASE", "0"},
		{"ONCE.EXTEND", "k", "$1", "LEASE", "-1"},
		{"ONCE.EXTEND", "k", "$1", "LEASE", "x"},
		{"ONCE.EXTEND", "k", "$1", "LEASE", "60000"},
		{"ONCE.EXTEND", "k", "999", "LEASE", "60000"},
		{"ONCE.COMPLETE", "k", "999", "ans"},
		{"ONCE.COMPLETE", "k", "$1", "ans", "KEEP"},
		{"ONCE.COMPLETE", "k", "$1", "ans", "KEEP", "-1"},
		{"ONCE.COMPLETE", "k", "$1", "ans", "KEEP", "x"},
		{"ONCE.COMPLETE", "k", "-1", "ans"},
		{"ONCE.COMPLETE", "k", "$1", "ans"},
		{"ONCE.COMPLETE", "k", "$1", "ans"},
		{"ONCE.CLAIM", "k", "FINGERPRINT", "b"},
		{"ONCE.CLAIM", "k"},
		{"ONCE.WAIT", "k"},
		{"TTL", "k"},
		{"GET", "k"},
		{"ONCE.CLAIM", "s", "LEASE", "0"},
		{"ONCE.CLAIM", "s", "LEASE", "x"},
		{"ONCE.CLAIM", "s", "WAIT", "-1"},
		{"ONCE.CLAIM", "s", "WAIT", "x"},
		{"ONCE.CLAIM", "s", "BOGUS", "1"},
		{"ONCE.CLAIM", "s", "LEASE"},
		{"SET", "str", "v"},
		{"ONCE.CLAIM", "str"},
		{"ONCE.WAIT", "str"},
		{"ONCE.STATUS", "str"},
		{"ONCE.COMPLETE", "str", "1", "a"},
		{"ONCE.ABORT", "str", "1"},
		{"ONCE.EXTEND", "str", "1", "LEASE", "10"},
		{"ONCE.CLAIM", "ab"},
		{"ONCE.ABORT", "ab", "$2", "m", "extra"},
		{"ONCE.ABORT", "ab", "$2"},
		{"ONCE.ABORT", "ab", "$2"},
		{"ONCE.WAIT", "ab"},
		{"ONCE.CLAIM", "ab"},
		{"ONCE.COMPLETE", "ab", "$3", "x", "KEEP", "0"},
		{"ONCE.WAIT", "ab"},
		{"EXISTS", "ab"},
		{"ONCE.WAIT", "k", "TIMEOUT"},
		{"ONCE.WAIT", "k", "TIMEOUT", "x"},
		{"ONCE.WAIT", "k", "TIMEOUT", "-1"},
		{"ONCE.WAIT", "k", "FOO", "1"},
		{"ONCE.CLAIM"},
		{"ONCE.EXTEND", "k", "1", "LEASE"},
		{"ONCE.EXTEND", "k", "1", "TTL", "5"},
		{"ONCE.STATUS", "k", "x"},
		{"ONCE.NOSUCH", "k"},
	})
}

// Huge LEASE and KEEP values are accepted as by the embedded engine (its
// deadlines saturate: a lease or keep too long to count is as good as
// forever). Over Redis they were an error from PEXPIRE inside the script,
// after the script had written: a claim left running with no expiry whose
// token no one was told (the key stuck for good), an answer stored but
// announced to no one, an abort that freed nothing (KV-8, KV-12, KV-13,
// KV-14).
func TestOnceDiffHugeDurations(t *testing.T) {
	t.Parallel()
	n, p, _ := startOncePair(t)
	const maxI64 = "9223372036854775807"
	for _, script := range [][][]string{
		{{"ONCE.CLAIM", "a", "LEASE", maxI64}, {"ONCE.EXTEND", "a", "$1", "LEASE", maxI64},
			{"ONCE.COMPLETE", "a", "$1", "x", "KEEP", maxI64}, {"ONCE.CLAIM", "a"}},
		{{"ONCE.CLAIM", "b"}, {"ONCE.COMPLETE", "b", "$1", "x", "KEEP", "100000000000000000"}, {"ONCE.CLAIM", "b"}},
		{{"ONCE.CLAIM", "c", "LEASE", "100000000000000000"}, {"ONCE.ABORT", "c", "$1"}, {"ONCE.CLAIM", "c"}},
		{{"ONCE.CLAIM", "d", "LEASE", "100000000000000000"}, {"ONCE.COMPLETE", "d", "$1", "y", "KEEP", "0"}, {"ONCE.CLAIM", "d"}},
	} {
		runOnceDiff(t, n, p, script)
	}
}

// A WAIT or TIMEOUT too long for a time.Duration waits without limit in
// the embedded server (as good as none); in the proxy it wrapped into a
// negative duration and ran out at once.
func TestOnceDiffHugeWaitTimeout(t *testing.T) {
	t.Parallel()
	n, p, _ := startOncePair(t)
	const maxI64 = "9223372036854775807"
	for _, addr := range []string{n, p} {
		a, b := ddial(t, addr), ddial(t, addr)
		if r := a.do("ONCE.CLAIM", "k", "LEASE", "60000"); !claimedRe.MatchString(r) {
			t.Fatalf("%s: claim: %q", addr, r)
		}
		for _, cmd := range [][]string{{"ONCE.WAIT", "k", "TIMEOUT", maxI64}, {"ONCE.CLAIM", "k", "WAIT", maxI64}} {
			b.send(cmd...)
			if r := b.readWithin(300 * time.Millisecond); r != "" {
				t.Errorf("%s: %q answered %q at once; want it to wait", addr, cmd, r)
				continue
			}
			// Unblock it: a fresh connection for the next command.
			b.nc.Close()
			b = ddial(t, addr)
		}
	}
}

// A waiter on a claim whose lease is too long for a time.Duration (more
// than some 292 years) must wait quietly: its timer at the lease deadline
// wrapped into a negative duration, fired at once and re-armed itself in
// a loop of scripts against the upstream.
func TestOnceHugeLeaseWaiterDoesNotSpin(t *testing.T) {
	t.Parallel()
	_, p, up := startOncePair(t)
	a, b := ddial(t, p), ddial(t, p)
	if r := a.do("ONCE.CLAIM", "k", "LEASE", "10000000000000"); !claimedRe.MatchString(r) {
		t.Fatalf("claim: %q", r)
	}
	evals := func() int64 {
		s, err := up.Client().Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, line := range strings.Split(s, "\r\n") {
			if strings.HasPrefix(line, "cmdstat_evalsha:calls=") || strings.HasPrefix(line, "cmdstat_eval:calls=") {
				v, _, _ := strings.Cut(strings.SplitN(line, "=", 2)[1], ",")
				x, _ := strconv.ParseInt(v, 10, 64)
				n += x
			}
		}
		return n
	}
	before := evals()
	b.send("ONCE.CLAIM", "k", "WAIT", "500")
	r := b.readWithin(3 * time.Second)
	if !runningRe.MatchString(r) {
		t.Errorf("CLAIM … WAIT 500 = %q, want running", r)
	}
	if n := evals() - before; n > 20 {
		t.Errorf("%d scripts ran upstream while one caller waited 500 ms: the lease timer spins", n)
	}
}
