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
	"sync/atomic"
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

// startOnceTrio starts a native oncekv and two proxies over one
// redis-server, all with a short default lease.
func startOnceTrio(tb testing.TB, extra ...string) (native, p1, p2 string, up *testredis.Server) {
	tb.Helper()
	up = testredis.Standalone(tb)
	n := testserver.Start(tb, extra...)
	a := testserver.Start(tb, append([]string{"--upstream", "redis://" + up.Addr()}, extra...)...)
	b := testserver.Start(tb, append([]string{"--upstream", "redis://" + up.Addr()}, extra...)...)
	return n.Addr().String(), a.Addr().String(), b.Addr().String(), up
}

// scenario runs fn against the native server (both addresses the same)
// and against two proxies (a on the first, b on the second), and
// compares the observations fn returns, normalised.
func scenario(t *testing.T, name string, fn func(t *testing.T, a, b string) []string) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		n, p1, p2, _ := startOnceTrio(t)
		want := fn(t, n, n)
		for _, pair := range [][2]string{{p1, p1}, {p1, p2}} {
			got := fn(t, pair[0], pair[1])
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("same=%v:\nnative %q\nproxy  %q", pair[0] == pair[1], want, got)
			}
		}
	})
}

func normTok(r string) string {
	if claimedRe.MatchString(r) {
		return "claimed"
	}
	if m := runningRe.FindStringSubmatch(r); m != nil {
		return "running"
	}
	return r
}

func tokenOf(tb testing.TB, r string) string {
	m := claimedRe.FindStringSubmatch(r)
	if m == nil {
		tb.Fatalf("not claimed: %q", r)
	}
	return m[1]
}

var keySeq atomic.Int64

func freshKey(p string) string { return fmt.Sprintf("%s-%d", p, keySeq.Add(1)) }

func TestOnceDiffBlocking(t *testing.T) {
	// A lapse hands the claim to the oldest claim waiter; a WAIT-only
	// waiter goes on waiting and gets the new run's answer (KV-13).
	scenario(t, "handover", func(t *testing.T, a, b string) []string {
		k := freshKey("h")
		r, w1, w2, s := ddial(t, a), ddial(t, b), ddial(t, b), ddial(t, a)
		_ = tokenOf(t, r.do("ONCE.CLAIM", k, "LEASE", "300", "FINGERPRINT", "f"))
		w2.send("ONCE.WAIT", k, "TIMEOUT", "5000")
		time.Sleep(50 * time.Millisecond)
		w1.send("ONCE.CLAIM", k, "WAIT", "5000", "FINGERPRINT", "f")
		var out []string
		r1 := w1.readWithin(3 * time.Second)
		out = append(out, normTok(r1))
		if !claimedRe.MatchString(r1) {
			return out
		}
		out = append(out, normTok(s.do("ONCE.CLAIM", k, "FINGERPRINT", "g")))
		out = append(out, w2.readWithin(100*time.Millisecond))
		out = append(out, s.do("ONCE.COMPLETE", k, tokenOf(t, r1), "v", "KEEP", "0"))
		out = append(out, w2.readWithin(3*time.Second))
		out = append(out, normTok(s.do("ONCE.CLAIM", k)))
		return out
	})
	// KEEP 0: the answer goes to the callers waiting then, and is not
	// kept.
	scenario(t, "keep0", func(t *testing.T, a, b string) []string {
		k := freshKey("k0")
		r, w1, w2, s := ddial(t, a), ddial(t, b), ddial(t, b), ddial(t, a)
		tok := tokenOf(t, r.do("ONCE.CLAIM", k))
		w1.send("ONCE.CLAIM", k, "WAIT", "0")
		w2.send("ONCE.WAIT", k)
		time.Sleep(100 * time.Millisecond)
		out := []string{r.do("ONCE.COMPLETE", k, tok, "ans", "KEEP", "0")}
		out = append(out, w1.readWithin(3*time.Second), w2.readWithin(3*time.Second))
		out = append(out, s.do("EXISTS", k), s.do("ONCE.WAIT", k), normTok(s.do("ONCE.CLAIM", k)))
		return out
	})
	// ABORT: the waiters get failed with the message; the next CLAIM runs.
	scenario(t, "abort", func(t *testing.T, a, b string) []string {
		k := freshKey("ab")
		r, w1, w2, s := ddial(t, a), ddial(t, b), ddial(t, b), ddial(t, a)
		tok := tokenOf(t, r.do("ONCE.CLAIM", k))
		w1.send("ONCE.CLAIM", k, "WAIT", "0")
		w2.send("ONCE.WAIT", k)
		time.Sleep(100 * time.Millisecond)
		out := []string{r.do("ONCE.ABORT", k, tok)}
		out = append(out, w1.readWithin(3*time.Second), w2.readWithin(3*time.Second))
		out = append(out, s.do("ONCE.WAIT", k), normTok(s.do("ONCE.CLAIM", k)))
		return out
	})
	// DEL of a running record is a lapse at that moment.
	scenario(t, "del", func(t *testing.T, a, b string) []string {
		k := freshKey("d")
		r, w1, w2, s := ddial(t, a), ddial(t, b), ddial(t, b), ddial(t, a)
		tok := tokenOf(t, r.do("ONCE.CLAIM", k, "LEASE", "60000"))
		w2.send("ONCE.WAIT", k)
		time.Sleep(50 * time.Millisecond)
		w1.send("ONCE.CLAIM", k, "WAIT", "0")
		time.Sleep(100 * time.Millisecond)
		out := []string{s.do("DEL", k)}
		r1 := w1.readWithin(2 * time.Second)
		out = append(out, normTok(r1), w2.readWithin(100*time.Millisecond))
		out = append(out, r.do("ONCE.COMPLETE", k, tok, "late"))
		if claimedRe.MatchString(r1) {
			out = append(out, s.do("ONCE.ABORT", k, tokenOf(t, r1), "boom"), w2.readWithin(2*time.Second))
		}
		return out
	})
	// A lapse with only WAIT waiters frees the key: they get free.
	scenario(t, "lapse-free", func(t *testing.T, a, b string) []string {
		k := freshKey("lf")
		r, w2 := ddial(t, a), ddial(t, b)
		_ = tokenOf(t, r.do("ONCE.CLAIM", k, "LEASE", "200"))
		w2.send("ONCE.WAIT", k)
		return []string{w2.readWithin(2 * time.Second)}
	})
	// A done record whose keep ends: a waiter-free CLAIM runs again.
	scenario(t, "mismatch-waiters", func(t *testing.T, a, b string) []string {
		k := freshKey("m")
		r, w1, w2 := ddial(t, a), ddial(t, b), ddial(t, b)
		tok := tokenOf(t, r.do("ONCE.CLAIM", k))
		w1.send("ONCE.CLAIM", k, "WAIT", "0", "FINGERPRINT", "x")
		w2.send("ONCE.CLAIM", k, "WAIT", "0")
		time.Sleep(100 * time.Millisecond)
		out := []string{r.do("ONCE.COMPLETE", k, tok, "ans")}
		out = append(out, w1.readWithin(2*time.Second), w2.readWithin(2*time.Second))
		return out
	})
}

// Waiters on one proxy survive an upstream restart: with the record kept
// (appendonly), a COMPLETE through the other proxy after the restart
// reaches them; with the record lost, the claim waiter takes the key over
// at the restart, not at the old lease deadline (KV-10, KV-13).
func TestOnceUpstreamRestartMidWait(t *testing.T) {
	t.Parallel()
	for _, persist := range []bool{true, false} {
		t.Run(fmt.Sprintf("persist=%v", persist), func(t *testing.T) {
			t.Parallel()
			var args []string
			if persist {
				args = []string{"--appendonly", "yes", "--appendfsync", "always"}
			}
			up := testredis.Standalone(t, args...)
			p1 := testserver.Start(t, "--upstream", "redis://"+up.Addr()).Addr().String()
			p2 := testserver.Start(t, "--upstream", "redis://"+up.Addr()).Addr().String()
			r, w1, w2 := ddial(t, p1), ddial(t, p2), ddial(t, p2)
			tok := tokenOf(t, r.do("ONCE.CLAIM", "k", "LEASE", "60000"))
			w1.send("ONCE.CLAIM", "k", "WAIT", "0")
			w2.send("ONCE.WAIT", "k")
			time.Sleep(200 * time.Millisecond)
			up.Restart()
			if persist {
				// The first command after the restart may meet a dead pooled
				// connection; try a few times.
				var got string
				for i := 0; i < 50; i++ {
					got = ddial(t, p1).do("ONCE.COMPLETE", "k", tok, "v")
					if got == "+OK\r\n" {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				if got != "+OK\r\n" {
					t.Fatalf("COMPLETE after the restart: %q", got)
				}
				want := "*2\r\n$4\r\ndone\r\n$1\r\nv\r\n"
				if g := w1.readWithin(8 * time.Second); g != want {
					t.Errorf("claim waiter: %q, want %q", g, want)
				}
				if g := w2.readWithin(8 * time.Second); g != want {
					t.Errorf("WAIT waiter: %q, want %q", g, want)
				}
				return
			}
			g := w1.readWithin(10 * time.Second)
			if !claimedRe.MatchString(g) {
				t.Fatalf("claim waiter after the record was lost: %q, want claimed", g)
			}
			if n1, _ := strconv.ParseUint(tokenOf(t, g), 10, 64); n1 <= mustU(tok) {
				t.Errorf("token after the restart %d is not above %s (KV-13)", n1, tok)
			}
			if g := w2.readWithin(200 * time.Millisecond); g != "" {
				t.Errorf("WAIT waiter answered %q while the new run runs", g)
			}
		})
	}
}

func mustU(s string) uint64 { n, _ := strconv.ParseUint(s, 10, 64); return n }

var statusFPRe = regexp.MustCompile(`fingerprint\r\n(\$-1|_|\$\d+\r\n[^\r]*)\r\n`)

func TestOnceDiffHandoverFingerprint(t *testing.T) {
	for _, c := range []struct{ name, recFP, waiterFP string }{
		{"keeps-record-fp", "f", ""}, {"takes-waiter-fp", "", "x"}, {"none", "", ""},
	} {
		scenario(t, c.name, func(t *testing.T, a, b string) []string {
			k := freshKey("fp")
			r, w1, s := ddial(t, a), ddial(t, b), ddial(t, a)
			claim := []string{"ONCE.CLAIM", k, "LEASE", "200"}
			if c.recFP != "" {
				claim = append(claim, "FINGERPRINT", c.recFP)
			}
			_ = tokenOf(t, r.do(claim...))
			wc := []string{"ONCE.CLAIM", k, "WAIT", "5000", "LEASE", "100000"}
			if c.waiterFP != "" {
				wc = append(wc, "FINGERPRINT", c.waiterFP)
			}
			w1.send(wc...)
			out := []string{normTok(w1.readWithin(3 * time.Second))}
			st := s.do("ONCE.STATUS", k)
			out = append(out, fmt.Sprint(statusFPRe.FindStringSubmatch(st)))
			pttl, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(s.do("PTTL", k), ":")))
			out = append(out, fmt.Sprint(pttl > 90000))
			return out
		})
	}
}

func TestOnceDiffBasicResp3(t *testing.T) {
	t.Parallel()
	n, p, _ := startOncePair(t)
	runOnceDiff(t, n, p, [][]string{
		{"HELLO", "3"},
		{"ONCE.STATUS", "k"},
		{"ONCE.WAIT", "k"},
		{"ONCE.CLAIM", "k", "FINGERPRINT", "a"},
		{"ONCE.COMPLETE", "k", "$1", "ans", "KEEP", "100000"},
		{"ONCE.WAIT", "k"},
		{"ONCE.CLAIM", "k", "FINGERPRINT", "b"},
		{"PERSIST", "k"},
		{"TTL", "k"},
		{"ONCE.CLAIM", "k2"},
		{"TTL", "k2"},
		{"ONCE.CLAIM", "k2", "WAIT", "100"},
	})
}

func TestOnceDiffRemovalsAreLapses(t *testing.T) {
	for _, c := range []struct {
		name string
		cmds [][]string
	}{
		{"unlink", [][]string{{"UNLINK", "K"}}},
		{"del-in-multi", [][]string{{"MULTI"}, {"DEL", "K"}, {"EXEC"}}},
		{"flushdb", [][]string{{"FLUSHDB"}}},
		{"flushall", [][]string{{"FLUSHALL"}}},
		{"select1-del", [][]string{{"DEL", "K"}}},
		{"multi-select-del", [][]string{{"MULTI"}, {"SELECT", "1"}, {"DEL", "K"}, {"EXEC"}}},
	} {
		scenario(t, c.name, func(t *testing.T, a, b string) []string {
			k := freshKey("rm")
			r, w1, s := ddial(t, a), ddial(t, b), ddial(t, a)
			db := "0"
			if strings.HasPrefix(c.name, "select1") || strings.HasPrefix(c.name, "multi-select") {
				db = "1"
			}
			r.do("SELECT", db)
			w1.do("SELECT", db)
			if db == "1" && !strings.HasPrefix(c.name, "multi-select") {
				s.do("SELECT", db)
			}
			_ = tokenOf(t, r.do("ONCE.CLAIM", k, "LEASE", "60000"))
			w1.send("ONCE.CLAIM", k, "WAIT", "0")
			time.Sleep(150 * time.Millisecond)
			var out []string
			for _, cmd := range c.cmds {
				cmd = append([]string(nil), cmd...)
				for i := range cmd {
					if cmd[i] == "K" {
						cmd[i] = k
					}
				}
				out = append(out, s.do(cmd...))
			}
			out = append(out, normTok(w1.readWithin(2*time.Second)))
			return out
		})
	}
}

// A pipeline with a blocking ONCE command in its middle answers in order,
// as the embedded server does.
func TestOnceDiffPipelineAroundBlock(t *testing.T) {
	t.Parallel()
	n, p, _ := startOncePair(t)
	var got [2][]string
	for i, addr := range []string{n, p} {
		r, c := ddial(t, addr), ddial(t, addr)
		_ = tokenOf(t, r.do("ONCE.CLAIM", "k", "LEASE", "60000"))
		var b strings.Builder
		for _, cmd := range [][]string{{"SET", "a", "1"}, {"ONCE.CLAIM", "k", "WAIT", "300"}, {"GET", "a"}, {"ONCE.WAIT", "k", "TIMEOUT", "200"}, {"DEL", "a"}, {"ONCE.STATUS", "zz"}} {
			fmt.Fprintf(&b, "*%d\r\n", len(cmd))
			for _, x := range cmd {
				fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(x), x)
			}
		}
		if _, err := c.nc.Write([]byte(b.String())); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 6; j++ {
			got[i] = append(got[i], normTok(c.read()))
		}
	}
	if fmt.Sprint(got[0]) != fmt.Sprint(got[1]) {
		t.Errorf("native %q\nproxy  %q", got[0], got[1])
	}
}
