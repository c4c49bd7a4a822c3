package resp

import (
	"bufio"
	"context"
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
)

func TestProtectedDenied(t *testing.T) {
	tcp := func(s string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(s), Port: 5000} }
	for _, tc := range []struct {
		protected, pass bool
		peer            net.Addr
		denied          bool
	}{
		{true, false, tcp("127.0.0.1"), false},
		{true, false, tcp("::1"), false},
		{true, false, tcp("::ffff:127.0.0.1"), false},
		{true, false, tcp("192.0.2.7"), true},
		{true, false, tcp("10.0.0.1"), true},
		{true, false, tcp("127.0.0.2"), true}, // as Redis: only 127.0.0.1 and ::1
		{true, false, tcp("fd00::2"), true},
		{true, false, &net.UnixAddr{Name: "/tmp/s", Net: "unix"}, false},
		{true, false, nil, true},
		{true, true, tcp("192.0.2.7"), false}, // a password lifts it
		{false, false, tcp("192.0.2.7"), false},
	} {
		if got := ProtectedDenied(tc.protected, tc.pass, tc.peer); got != tc.denied {
			t.Errorf("protected %v, password %v, peer %v: denied %v, want %v", tc.protected, tc.pass, tc.peer, got, tc.denied)
		}
	}
}

// handlerFunc adapts a function to Handler.
type handlerFunc func(c *Conn, args [][]byte)

func (f handlerFunc) Serve(c *Conn, args [][]byte) { f(c, args) }

func startTest(t *testing.T, cfg Config, h Handler) string {
	t.Helper()
	cfg.Addrs = []string{"127.0.0.1:0"}
	s := NewServer(cfg, h)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addrs()[0].String()
}

func dialTest(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	return nc, bufio.NewReader(nc)
}

func expectLines(t *testing.T, nc net.Conn, r *bufio.Reader, send string, want ...string) {
	t.Helper()
	if _, err := io.WriteString(nc, send); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		line, err := r.ReadString('\n')
		if err != nil || line != w {
			t.Fatalf("after %q: %q %v, want %q", send, line, err, w)
		}
	}
}

// echoHandler answers +<first argument>, and a few test commands.
func echoHandler(c *Conn, args [][]byte) {
	switch string(args[0]) {
	case "panic":
		c.W.Simple("half")
		panic("boom")
	case "keeppanic":
		// As the proxy: the replies of earlier commands come in while
		// this one runs (KeepReplies), then it panics.
		c.W.Simple("earlier")
		c.KeepReplies()
		c.W.Simple("half")
		panic("boom after earlier replies")
	case "block":
		d, _ := time.ParseDuration(string(args[1]))
		c.Block(func(gone <-chan struct{}) {
			select {
			case <-time.After(d):
				c.W.Simple("unblocked")
			case <-gone:
			}
		})
	case "failblock":
		// A reply whose durability wait fails, then a blocking command:
		// the connection closes, and the command must still be finished
		// as if its client had left.
		c.Await(failingWait{})
		c.W.OK()
		c.Block(func(gone <-chan struct{}) {
			select {
			case <-gone:
				failBlockGone <- true
			case <-time.After(5 * time.Second):
				failBlockGone <- false
			}
		})
	case "panicblocked":
		// A handler that panics after it made its command a blocking
		// one: the function must still run, told its client is gone.
		c.Block(func(gone <-chan struct{}) {
			select {
			case <-gone:
				panicBlockGone <- true
			default:
				panicBlockGone <- false
			}
			c.W.Simple("from the block function")
		})
		panic("boom after Block")
	case "blockpanic":
		c.Block(func(<-chan struct{}) { panic("boom while blocked") })
	case "queue":
		c.Queue = append(c.Queue, args)
		c.W.Simple("QUEUED")
	case "quit":
		c.W.OK()
		c.CloseAfterReply()
	default:
		c.W.Simple(string(args[0]))
	}
}

type failingWait struct{}

func (failingWait) Wait(context.Context) error { return errors.New("disk gone") }

// failBlockGone reports whether failblock's function saw its client gone.
var failBlockGone = make(chan bool, 1)

// panicBlockGone reports whether panicblocked's function saw its client
// gone.
var panicBlockGone = make(chan bool, 1)

// A blocked command whose connection closes before it is served (the
// replies before it could not be sent) is still finished, told that its
// client is gone: it must not be dropped with what it waits on.
func TestBlockedCommandFinishedWhenFlushFails(t *testing.T) {
	addr := startTest(t, Config{Logger: zap.NewNop()}, handlerFunc(echoHandler))
	nc, r := dialTest(t, addr)
	if _, err := nc.Write([]byte("failblock\r\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case sawGone := <-failBlockGone:
		if !sawGone {
			t.Fatal("the blocked command ran, but was not told its client is gone")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the blocked command was dropped: it never ran")
	}
	if line, err := r.ReadString('\n'); err == nil {
		t.Fatalf("got %q from a connection whose write was not durable", line)
	}
}

// A panic in a handler or in a blocked command's finisher, not recovered
// by the handler itself, is recovered by the server, logged and answered
// with an error; the connection goes on.
func TestServerRecoversPanics(t *testing.T) {
	core, logs := observer.New(zap.ErrorLevel)
	addr := startTest(t, Config{Logger: zap.New(core)}, handlerFunc(echoHandler))
	nc, r := dialTest(t, addr)
	expectLines(t, nc, r, "panic\r\nping\r\n", "-ERR internal error (the server logged it)\r\n", "+ping\r\n")
	expectLines(t, nc, r, "blockpanic\r\nping\r\n", "-ERR internal error (the server logged it)\r\n", "+ping\r\n")
	if n := logs.FilterMessageSnippet("panic").Len(); n != 2 {
		t.Fatalf("%d panics logged, want 2", n)
	}
	// A handler that panics after Block: its block function is finished
	// as if the client had left (so it withdraws what it waits on), and
	// only the error is answered.
	expectLines(t, nc, r, "panicblocked\r\nping\r\n", "-ERR internal error (the server logged it)\r\n", "+ping\r\n")
	select {
	case gone := <-panicBlockGone:
		if !gone {
			t.Fatal("the block function of a panicked command ran with its client still there")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the block function of a panicked command was dropped")
	}
}

// A panic drops the reply of the command that panicked, not the replies
// of earlier commands written while it ran (KeepReplies): those are
// answered, in order, before the error, with CLIENT REPLY ON or SKIP.
func TestPanicKeepsEarlierReplies(t *testing.T) {
	addr := startTest(t, Config{Logger: zap.NewNop()}, handlerFunc(func(c *Conn, args [][]byte) {
		if string(args[0]) == "skip" {
			c.SetReply(ReplySkip)
			return
		}
		echoHandler(c, args)
	}))
	for _, tc := range []struct {
		name, send string
		want       []string
	}{
		{"replies on", "keeppanic\r\nping\r\n",
			[]string{"+earlier\r\n", "-ERR internal error (the server logged it)\r\n", "+ping\r\n"}},
		{"its reply skipped", "skip\r\nkeeppanic\r\nping\r\n", []string{"+earlier\r\n", "+ping\r\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, r := dialTest(t, addr)
			expectLines(t, nc, r, tc.send, tc.want...)
		})
	}
}

func TestMaxClients(t *testing.T) {
	addr := startTest(t, Config{MaxClients: 1}, handlerFunc(echoHandler))
	nc, r := dialTest(t, addr)
	expectLines(t, nc, r, "ping\r\n", "+ping\r\n")
	other, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_ = other.SetDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(other)
	if string(b) != "-ERR max number of clients reached\r\n" {
		t.Fatalf("second client: %q", b)
	}
	expectLines(t, nc, r, "ping\r\n", "+ping\r\n")
}

// timeout closes idle clients, but not one blocked in a command, as in
// Redis.
func TestIdleTimeoutSparesBlockedClients(t *testing.T) {
	addr := startTest(t, Config{IdleTimeout: 300 * time.Millisecond}, handlerFunc(echoHandler))
	nc, r := dialTest(t, addr)
	expectLines(t, nc, r, "block 900ms\r\n", "+unblocked\r\n")
	expectLines(t, nc, r, "block 10ms\r\nping\r\n", "+unblocked\r\n", "+ping\r\n")
	time.Sleep(700 * time.Millisecond)
	if _, err := io.WriteString(nc, "ping\r\n"); err == nil {
		if line, err := r.ReadString('\n'); err == nil {
			t.Fatalf("an idle client was not closed: %q", line)
		}
	}
}

// CONFIG SET timeout applies to the clients already waiting for input, from
// now, and setting it back to 0 keeps idle clients open (Redis 7).
func TestIdleTimeoutChangedWhileWaiting(t *testing.T) {
	cfg := Config{Addrs: []string{"127.0.0.1:0"}}
	s := NewServer(cfg, handlerFunc(echoHandler))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	addr := s.Addrs()[0].String()
	nc, r := dialTest(t, addr)
	expectLines(t, nc, r, "ping\r\n", "+ping\r\n") // now waiting, with no timeout

	s.SetIdleTimeout(200 * time.Millisecond)
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if _, err := r.ReadString('\n'); err == nil || time.Since(start) > 3*time.Second {
		t.Fatalf("a client waiting when the timeout was set was not closed by it (err %v after %v)", err, time.Since(start))
	}

	s.SetIdleTimeout(0)
	other, ro := dialTest(t, addr)
	expectLines(t, other, ro, "ping\r\n", "+ping\r\n")
	s.SetIdleTimeout(200 * time.Millisecond)
	s.SetIdleTimeout(0) // armed, then lifted while it waits
	time.Sleep(500 * time.Millisecond)
	expectLines(t, other, ro, "ping\r\n", "+ping\r\n")
}

// A protocol error is answered after the replies of the requests before
// it, then the connection is closed; in a blocked connection too.
func TestProtocolErrorAfterEarlierReplies(t *testing.T) {
	addr := startTest(t, Config{}, handlerFunc(echoHandler))
	for _, tc := range []struct{ send, want string }{
		{"a\r\nb\r\n*1\r\n$x\r\nc\r\n", "+a\r\n+b\r\n-ERR Protocol error: invalid bulk length\r\n"},
		{"block 50ms\r\na\r\n*x\r\n", "+unblocked\r\n+a\r\n-ERR Protocol error: invalid multibulk length\r\n"},
		{"quit\r\n*x\r\n", "+OK\r\n"},
	} {
		nc, _ := dialTest(t, addr)
		if _, err := io.WriteString(nc, tc.send); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(nc)
		if err != nil || string(b) != tc.want {
			t.Errorf("%q: %q %v, want %q and a close", tc.send, b, err, tc.want)
		}
	}
}

// The commands a client queues in MULTI count towards the query buffer
// limit.
func TestQueueCountsTowardsQueryBufferLimit(t *testing.T) {
	addr := startTest(t, Config{Limits: Limits{QueryBufferLimit: 64 << 10}}, handlerFunc(echoHandler))
	nc, r := dialTest(t, addr)
	arg := strings.Repeat("q", 4000)
	queued := 0
	for i := 0; i < 40; i++ {
		if _, err := io.WriteString(nc, "queue "+arg+"\r\n"); err != nil {
			break
		}
		if line, err := r.ReadString('\n'); err != nil {
			break
		} else if line != "+QUEUED\r\n" {
			t.Fatalf("%q", line)
		}
		queued++
	}
	if queued < 10 || queued > 17 {
		t.Fatalf("queued %d commands of 4 KB under a 64 KB limit", queued)
	}
}

// While a command blocks, the client's input is read on and nothing of it
// runs; it counts towards the query buffer limit, and over it the client
// is closed at once, without the blocked command's reply, as Redis closes
// a blocked client. Otherwise a pipeline never holds the limit: each
// command runs before more is read.
func TestBlockedClientsInputCountsTowardsQueryBufferLimit(t *testing.T) {
	const limit = 64 << 10
	pipeline := func(n int) string { return strings.Repeat("a\r\n", n) }
	answers := func(n int) string { return strings.Repeat("+a\r\n", n) }
	for _, tc := range []struct {
		name   string
		send   []string // sent in turn, each after the replies to the one before
		want   string   // everything received
		closed bool
	}{
		{"blocked-over", []string{"block 5s\r\n" + pipeline(2*limit/3)}, "", true},
		{"blocked-under", []string{"block 100ms\r\n" + pipeline(1000)}, "+unblocked\r\n" + answers(1000), false},
		{"not-blocked", []string{pipeline(2 * limit / 3)}, answers(2 * limit / 3), false},
		{"after-a-block", []string{"block 10ms\r\n", pipeline(2 * limit / 3)}, "+unblocked\r\n" + answers(2*limit/3), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core, logs := observer.New(zap.WarnLevel)
			addr := startTest(t, Config{Limits: Limits{QueryBufferLimit: limit}, Logger: zap.New(core)}, handlerFunc(echoHandler))
			nc, _ := dialTest(t, addr)
			start := time.Now()
			var got []byte
			closed := false
			buf := make([]byte, 64<<10)
			for i, send := range tc.send {
				go func() { _, _ = io.WriteString(nc, send) }()
				// Read until the server goes quiet (or closes).
				for {
					_ = nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
					n, err := nc.Read(buf)
					got = append(got, buf[:n]...)
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() && (i < len(tc.send)-1 || len(got) >= len(tc.want)) {
						break
					}
					if err != nil && !errors.As(err, &ne) {
						closed = true
						break
					}
				}
				if closed {
					break
				}
			}
			if string(got) != tc.want || closed != tc.closed {
				t.Errorf("got %d bytes %.60q (closed %v), want %d bytes %.60q (closed %v)", len(got), got, closed, len(tc.want), tc.want, tc.closed)
			}
			logged := func() bool { return logs.FilterMessageSnippet("max query buffer length").Len() > 0 }
			for wait := time.Now().Add(2 * time.Second); tc.closed && !logged() && time.Now().Before(wait); {
				time.Sleep(10 * time.Millisecond) // logged once the connection's goroutine is done
			}
			if logged := logged(); logged != tc.closed {
				t.Errorf("logged the close: %v, want %v", logged, tc.closed)
			}
			if tc.closed && time.Since(start) > 3*time.Second {
				t.Errorf("closed after %v: not before the blocked command ended", time.Since(start))
			}
		})
	}
}

// Close returns even while a client that never reads has the server
// blocked writing to it.
func TestCloseWithAClientThatDoesNotRead(t *testing.T) {
	s := NewServer(Config{Addrs: []string{"127.0.0.1:0"}}, handlerFunc(func(c *Conn, args [][]byte) {
		c.W.BulkString(strings.Repeat("r", 1<<20))
	}))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", s.Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
	for {
		if _, err := io.WriteString(nc, strings.Repeat("x\r\n", 100)); err != nil {
			break
		}
	}
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on a client that does not read")
	}
}

// aheadRecorder is a handler that records what Ahead shows it.
type aheadRecorder struct {
	mu   sync.Mutex
	seen [][]string
}

func (a *aheadRecorder) Serve(c *Conn, args [][]byte) { echoHandler(c, args) }

func (a *aheadRecorder) AheadWanted(c *Conn, name []byte) bool { return string(name) != "ping" }

func (a *aheadRecorder) Ahead(c *Conn, namesKeys [][]byte) {
	var ks []string
	for _, k := range namesKeys {
		ks = append(ks, string(k))
	}
	a.mu.Lock()
	a.seen = append(a.seen, ks)
	a.mu.Unlock()
}

// A handler that is an Aheader sees the names and keys of a pipeline's requests
// before they run, once per read that brings two or more and only if it
// wants them, and not for a lone request; the replies are as without it.
func TestAheadSeesAPipelinesKeys(t *testing.T) {
	h := &aheadRecorder{}
	nc, r := dialTest(t, startTest(t, Config{}, h))
	expectLines(t, nc, r, "*2\r\n$3\r\nget\r\n$1\r\na\r\n", "+get\r\n")
	expectLines(t, nc, r,
		"*2\r\n$3\r\nget\r\n$1\r\nb\r\n*1\r\n$4\r\nping\r\n*3\r\n$3\r\nset\r\n$1\r\nc\r\n$1\r\nv\r\n",
		"+get\r\n", "+ping\r\n", "+set\r\n")
	// Not wanted when the first is a ping.
	expectLines(t, nc, r,
		"*2\r\n$4\r\nping\r\n$1\r\nd\r\n*2\r\n$3\r\nget\r\n$1\r\ne\r\n",
		"+ping\r\n", "+get\r\n")
	h.mu.Lock()
	defer h.mu.Unlock()
	want := [][]string{{"get", "b", "ping", "", "set", "c"}}
	if fmt.Sprint(h.seen) != fmt.Sprint(want) {
		t.Fatalf("Ahead saw %q, want %q", h.seen, want)
	}
}
