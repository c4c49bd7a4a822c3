package integration

// Bad input, compared with redis-server 7.0 byte for byte (KV-5): malformed
// requests, inline commands, half-sent requests, Redis's limits. Requests
// that leave the connection open go through the differential runner's raw
// steps; those after which Redis closes the connection are compared as
// whole exchanges (everything the server sent, and whether it closed).

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

func TestDiffProtocol(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			for _, s := range protocolScripts() {
				t.Run(s.Name, func(t *testing.T) { p.Run(t, s, proto) })
			}
		})
	}
	t.Run("closing", func(t *testing.T) {
		for _, ex := range closingExchanges() {
			t.Run(ex.name, func(t *testing.T) { compareExchange(t, p.Redis, p.Other, ex) })
		}
	})
}

func protocolScripts() []Script {
	bigv := strings.Repeat("v", 40000)
	return []Script{
		{"inline-quoting", []Step{
			raw("ECHO foo\"bar\"\r\n"),
			raw("ECHO \"\\x41\\n\\t\\\\\"\r\n"),
			raw("ECHO 'a\\'b\"c'\r\n"),
			raw("ECHO \"\\xZZ\\q\\x4\"\r\n"),
			raw("ECHO ''\r\n"),
			raw("ECHO \"\"\r\n"),
			raw("ECHO \va\r\n"),
			raw("ECHO a\vb\r\n"),
			raw("ECHO a\rb\r\n"),
			raw("ECHO \"a\" \"b\"\v\r\n"),
			raw("SET k \"a b\\x00c\"\r\n"),
			cmd("GET", "k"),
			raw("  \t SET   k2    v2   \r\n"),
			cmd("GET", "k2"),
		}},
		{"inline-odd", []Step{
			raw("\r\n\r\n \t \r\nPING\r\n"),
			raw("PING\nPING\n"),
			readNext(),
			raw("$-5\r\n"),
			raw(":1\r\n"),
			raw("+OK\r\n"),
			raw("-ERR x\r\n"),
			raw("GARBAGE \xff\xfe \x01\x7f\r\n"),
			raw(strings.Repeat("A", 60000) + "\r\n"),
			// Over 64 KiB, but its end comes in the read that takes it
			// past 64 KiB: Redis takes it.
			raw(strings.Repeat("A", 75000) + "\r\n"),
			raw("GET " + strings.Repeat("k", 60000) + "\r\n"),
			cmd("PING"),
		}},
		{"multibulk-odd", []Step{
			raw("*0\r\nPING\r\n"),
			raw("*-1\r\n*-7\r\nPING\r\n"),
			raw("*1\r\n$4\r\nPINGxx"),
			raw("*1\rX$4\r\nPING\r\n"),
			raw("*2\r\n$4\r\nECHO\r\n$3\r\nabc\n\n"),
			raw("*2\r\n$4\r\nECHO\r\n$0\r\n\r\n"),
			raw("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$40000\r\n" + bigv + "\r\n"),
			cmd("STRLEN", "k"),
			raw("*1\r\n$4\r\nPING\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$1\r\nx\r\n"),
			readNext(),
			readNext(),
			raw("*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI"),
			raw("NG\r\n"),
		}},
	}
}

// exchange is bytes sent on a fresh connection, in pieces with a pause
// between them.
type exchange struct {
	name   string
	chunks []string
	// halfClose shuts the sending side after the last piece.
	halfClose bool
}

func closingExchanges() []exchange {
	byBytes := func(s string) []string {
		out := make([]string, len(s))
		for i := range s {
			out[i] = s[i : i+1]
		}
		return out
	}
	return []exchange{
		{name: "bulk-over-proto-max-bulk-len", chunks: []string{"*1\r\n$600000000\r\n"}},
		{name: "multibulk-over-int-max", chunks: []string{"*2147483648\r\n"}},
		{name: "multibulk-count-abc", chunks: []string{"*abc\r\n"}},
		{name: "multibulk-count-empty", chunks: []string{"*\r\n"}},
		{name: "negative-bulk-length", chunks: []string{"*1\r\n$-5\r\n"}},
		{name: "leading-zero-count", chunks: []string{"*01\r\n$4\r\nPING\r\n"}},
		{name: "plus-count", chunks: []string{"*+1\r\n$4\r\nPING\r\n"}},
		{name: "leading-zero-length", chunks: []string{"*1\r\n$04\r\nPING\r\n"}},
		{name: "not-a-bulk", chunks: []string{"*1\r\n:4\r\nPING\r\n"}},
		{name: "empty-length-line", chunks: []string{"*1\r\n\r\n"}},
		{name: "unbalanced-quotes", chunks: []string{"PING \"a\r\n"}},
		{name: "quote-then-letter", chunks: []string{"ECHO \"a\"b\r\n"}},
		{name: "single-quote-unterminated", chunks: []string{"ECHO 'a\r\n"}},
		{name: "backslash-at-end", chunks: []string{"ECHO \"\\\r\n"}},
		{name: "commands-before-the-error-run", chunks: []string{"PING\r\nSET k v\r\nGET k\r\n*1\r\n$x\r\nPING\r\n"}},
		{name: "error-mid-pipeline-split", chunks: []string{"SET k v\r\n*2\r\n$3\r\nGET", "\r\n$1\r\nk\r\n*1\r\n%1\r\n"}},
		{name: "too-big-inline", chunks: []string{strings.Repeat("A", 70000)}},
		{name: "too-big-mbulk-count", chunks: []string{"*" + strings.Repeat("1", 70000)}},
		{name: "too-big-bulk-count", chunks: []string{"*1\r\n$" + strings.Repeat("1", 70000)}},
		// Lines whose end comes too late, though sent with them: Redis has
		// judged them too big before it reads the end.
		{name: "too-big-inline-with-crlf", chunks: []string{strings.Repeat("A", 90000) + "\r\n"}},
		{name: "too-big-inline-with-lf", chunks: []string{strings.Repeat("A", 200000) + "\n"}},
		{name: "too-big-mbulk-count-with-crlf", chunks: []string{"*" + strings.Repeat("1", 100000) + "\r\n"}},
		{name: "too-big-bulk-count-with-crlf", chunks: []string{"*1\r\n$" + strings.Repeat("1", 200000) + "\r\n"}},
		{name: "too-big-inline-after-a-command", chunks: []string{"PING\r\n", strings.Repeat("A", 200000) + "\r\n"}},
		{name: "half-sent-then-closed", chunks: []string{"*3\r\n$3\r\nSET\r\n$1\r\na"}, halfClose: true},
		{name: "half-inline-then-closed", chunks: []string{"SET a b"}, halfClose: true},
		{name: "half-sent-then-completed", chunks: []string{"*2\r\n$4\r\nECHO\r\n$5\r\nhel", "lo\r\n", "PI", "NG\r\n"}},
		{name: "byte-by-byte", chunks: byBytes("*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\nPING\r\n")},
		{name: "nul-in-inline", chunks: []string{"ECHO a\x00b\r\nPING\r\n"}},
		{name: "nul-in-length-line", chunks: []string{"*1\r\n\x00\r\nPING\r\n"}},
		{name: "binary-garbage", chunks: []string{"\xff\xfe\x80 \x01\r\n\x00\x01\x02\r\n"}},
		{name: "big-bulk-announced-then-quiet", chunks: []string{"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\nabc"}},
		{name: "quit-then-more", chunks: []string{"QUIT\r\nPING\r\n"}},
	}
}

// result is what a server sent on one exchange.
type result struct {
	out    []byte
	closed bool
}

func (r result) String() string {
	state := "open"
	if r.closed {
		state = "closed"
	}
	return fmt.Sprintf("%.400q (%s)", r.out, state)
}

// quiet is how long a connection must stay silent to count as waiting.
const quiet = 400 * time.Millisecond

// runExchange sends ex on a new connection to addr and reads until the
// server closes it or stays quiet.
func runExchange(t *testing.T, addr string, ex exchange) result {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, DefaultTimeout)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer nc.Close()
	var res result
	got := make(chan struct{})
	go func() {
		defer close(got)
		buf := make([]byte, 64<<10)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			_ = nc.SetReadDeadline(time.Now().Add(quiet + time.Duration(len(ex.chunks))*60*time.Millisecond))
			n, err := nc.Read(buf)
			res.out = append(res.out, buf[:n]...)
			var ne net.Error
			switch {
			case err == nil:
			case errors.As(err, &ne) && ne.Timeout():
				return
			default: // EOF or a reset: closed
				res.closed = true
				return
			}
		}
	}()
	for i, c := range ex.chunks {
		if i > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		_ = nc.SetWriteDeadline(time.Now().Add(DefaultTimeout))
		if _, err := io.WriteString(nc, c); err != nil {
			break // the server closed already
		}
	}
	if ex.halfClose {
		_ = nc.(*net.TCPConn).CloseWrite()
	}
	<-got
	return res
}

func compareExchange(t *testing.T, redisAddr, otherAddr string, ex exchange) {
	t.Helper()
	want := runExchange(t, redisAddr, ex)
	got := runExchange(t, otherAddr, ex)
	if !bytes.Equal(want.out, got.out) || want.closed != got.closed {
		t.Errorf("%s:\n\tredis:  %s\n\toncekv: %s", ex.name, want, got)
	}
	// Everyone else goes on.
	alive(t, redisAddr)
	alive(t, otherAddr)
}

// alive checks that a new client is served (an unauthenticated one is
// answered NOAUTH).
func alive(t *testing.T, addr string) {
	t.Helper()
	c := DialRaw(t, addr)
	defer c.Close()
	if reply := string(c.Do("PING")); reply != "+PONG\r\n" && reply != "-NOAUTH Authentication required.\r\n" {
		t.Errorf("%s: PING answered %q", addr, reply)
	}
}

// startPair starts redis-server and oncekv with the same extra arguments.
func startPair(t *testing.T, extra ...string) (redisAddr, otherAddr string) {
	t.Helper()
	return StartRedis(t, extra...), StartOncekv(t, extra...).Addr
}

// Redis's limits, set low, and the limits on clients that have not
// authenticated.
func TestDiffProtocolLimits(t *testing.T) {
	t.Parallel()
	t.Run("proto-max-bulk-len", func(t *testing.T) {
		r, o := startPair(t, "--proto-max-bulk-len", "1mb")
		for _, ex := range []exchange{
			{name: "over", chunks: []string{"*2\r\n$4\r\nECHO\r\n$1048577\r\n"}},
			{name: "at", chunks: []string{"*2\r\n$4\r\nECHO\r\n$1048576\r\n"}},
			{name: "under", chunks: []string{"*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\n"}},
			{name: "setrange-past-it", chunks: []string{"SETRANGE k 1048576 x\r\nSETRANGE k 1048575 x\r\nSTRLEN k\r\n"}},
			{name: "config-get", chunks: []string{"CONFIG GET proto-max-bulk-len\r\n"}},
		} {
			compareExchange(t, r, o, ex)
		}
	})
	t.Run("client-query-buffer-limit", func(t *testing.T) {
		r, o := startPair(t, "--client-query-buffer-limit", "1mb")
		big := strings.Repeat("x", 2<<20)
		for _, ex := range []exchange{
			// Closed without a reply, as Redis does.
			{name: "one-argument-over", chunks: []string{"*2\r\n$4\r\nECHO\r\n$2097152\r\n", big[:1<<20], big[:1<<20] + "\r\n"}},
			{name: "under", chunks: []string{"*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\n"}},
			{name: "config-get", chunks: []string{"CONFIG GET client-query-buffer-limit\r\n"}},
			// A subscriber's requests are held to the limit too.
			{name: "subscriber-one-argument-over", chunks: []string{"SUBSCRIBE a\r\n", "*2\r\n$4\r\nPING\r\n$2097152\r\n", big[:1<<20], big[:1<<20] + "\r\n"}},
			{name: "subscriber-under", chunks: []string{"SUBSCRIBE a\r\n", "*2\r\n$4\r\nPING\r\n$3\r\nabc\r\n"}},
		} {
			compareExchange(t, r, o, ex)
		}
		// A pipeline of small commands never holds the limit: each read's
		// commands run before the next read, and all are answered.
		pings := strings.Repeat("PING\r\n", 400000) // 2.4 MB
		compareExchange(t, r, o, exchange{name: "pipeline-of-small-commands", chunks: []string{pings}})
		compareExchange(t, r, o, exchange{name: "subscriber-pipeline-of-small-commands", chunks: []string{"SUBSCRIBE a\r\n" + pings}})
		// A blocked client's input is read on and nothing of it runs, so
		// the same pipeline after a blocking command goes over the limit:
		// the client is closed at once, without the blocked command's
		// reply (Redis logs it). Redis blocks in BLPOP, oncekv in
		// ONCE.WAIT on a key that another client runs.
		holder := DialRaw(t, o)
		if reply := holder.Do("ONCE.CLAIM", "held", "LEASE", "60000"); !bytes.HasPrefix(reply, []byte("*2\r\n$7\r\nclaimed\r\n")) {
			t.Fatalf("ONCE.CLAIM: %q", reply)
		}
		want := runExchange(t, r, exchange{name: "blocked-then-over", chunks: []string{"BLPOP l 2\r\n", pings}})
		got := runExchange(t, o, exchange{name: "blocked-then-over", chunks: []string{"ONCE.WAIT held TIMEOUT 2000\r\n", pings}})
		if !want.closed || len(want.out) != 0 || got.closed != want.closed || !bytes.Equal(got.out, want.out) {
			t.Errorf("blocked client over client-query-buffer-limit:\n\tredis:  %s\n\toncekv: %s", want, got)
		}
		alive(t, o)
		// A MULTI queue over the limit closes the client too, without a
		// reply. Redis 7.0 does not count the queue (7.2 and later do,
		// as "argv_len_sums"); here one client cannot grow the server's
		// memory without bound through it. How many commands are queued
		// first depends on how the reads split the input.
		var multi strings.Builder
		multi.WriteString("MULTI\r\n")
		val := strings.Repeat("v", 100<<10)
		for range 16 {
			multi.WriteString("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$102400\r\n" + val + "\r\n")
		}
		multi.WriteString("EXEC\r\n")
		res := runExchange(t, o, exchange{name: "multi-queue-over", chunks: []string{multi.String()}})
		if !res.closed || !bytes.HasPrefix(res.out, []byte("+OK\r\n+QUEUED\r\n")) || bytes.Contains(res.out, []byte("*16")) {
			t.Errorf("MULTI queue over client-query-buffer-limit: %s, want some QUEUED and a close", res)
		}
		alive(t, o)
	})
	t.Run("unauthenticated", func(t *testing.T) {
		r, o := startPair(t, "--requirepass", "pw")
		for _, ex := range []exchange{
			{name: "11-arguments", chunks: []string{"*11\r\n"}},
			{name: "10-arguments", chunks: []string{"*10\r\n"}},
			{name: "16385-bytes", chunks: []string{"*1\r\n$16385\r\n"}},
			{name: "16384-bytes", chunks: []string{"*1\r\n$16384\r\n"}},
			{name: "after-a-command", chunks: []string{"PING\r\n*1\r\n$20000\r\n"}},
			{name: "after-auth", chunks: []string{"AUTH pw\r\n*2\r\n$4\r\nECHO\r\n$20000\r\n" + strings.Repeat("e", 20000) + "\r\n"}},
			{name: "after-failed-auth", chunks: []string{"AUTH nope\r\n*11\r\n"}},
			{name: "after-reset", chunks: []string{"AUTH pw\r\nRESET\r\n*11\r\n"}},
			{name: "noauth-replies", chunks: []string{"GET k\r\nEXEC\r\nMULTI\r\nHELLO 3\r\nAUTH nope\r\nAUTH default nope\r\nAUTH alice pw\r\nCLIENT LIST\r\nCLIENT\r\nGET\r\nFOO\r\nAUTH pw\r\nGET k\r\n"}},
		} {
			compareExchange(t, r, o, ex)
		}
	})
}
