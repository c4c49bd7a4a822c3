package resp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeLoop plays a store's durability loop: its tickets promise calls
// (Notify), which the test makes with release, from its own goroutine as
// a store's loop would.
type fakeLoop struct {
	mu         sync.Mutex
	calls      []func(error)
	refuse     bool
	registered chan struct{}
	waited     chan struct{}
}

func newFakeLoop() *fakeLoop {
	return &fakeLoop{registered: make(chan struct{}, 16), waited: make(chan struct{}, 16)}
}

type fakeTicket struct{ l *fakeLoop }

// Wait is what the connection falls back to when Notify refuses.
func (t fakeTicket) Wait(context.Context) error {
	t.l.waited <- struct{}{}
	return nil
}

func (t fakeTicket) Notify(fn func(error)) bool {
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	if t.l.refuse {
		return false
	}
	t.l.calls = append(t.l.calls, fn)
	t.l.registered <- struct{}{}
	return true
}

// release makes every promised call with err, and returns once they
// returned.
func (l *fakeLoop) release(err error) {
	l.mu.Lock()
	calls := l.calls
	l.calls = nil
	l.mu.Unlock()
	for _, fn := range calls {
		fn(err)
	}
}

// send writes req on nc and waits until the connection handed its
// replies to one of l's tickets.
func (l *fakeLoop) send(t testing.TB, nc net.Conn, req string) {
	t.Helper()
	if _, err := io.WriteString(nc, req); err != nil {
		t.Fatal(err)
	}
	l.awaitRegistered(t)
}

func (l *fakeLoop) awaitRegistered(t testing.TB) {
	t.Helper()
	select {
	case <-l.registered:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection never handed its replies to the ticket")
	}
}

// startHandoff serves "w [size]" (a reply of size bytes, default "+w",
// that waits for one of l's tickets) and "x" (a reply that waits for
// nothing, reported on served once run).
func startHandoff(t *testing.T, l *fakeLoop, served chan<- string) string {
	t.Helper()
	return startTest(t, Config{}, handlerFunc(func(c *Conn, args [][]byte) {
		switch string(args[0]) {
		case "w":
			c.Await(fakeTicket{l})
			if len(args) > 1 {
				n, _ := strconv.Atoi(string(args[1]))
				c.W.BulkString(strings.Repeat("b", n))
				return
			}
			c.W.Simple("w")
		default:
			if served != nil {
				served <- string(args[0])
			}
			c.W.Simple(string(args[0]))
		}
	}))
}

// expectNothing checks that nothing arrives on nc for a moment.
func expectNothing(t testing.TB, nc net.Conn, r *bufio.Reader, what string) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	line, err := r.ReadString('\n')
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("%s: got %q %v before the write was durable", what, line, err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
}

// KV-6 (acknowledged once durable): replies handed to the ticket are
// sent by its call, not before, and without the client doing anything.
func TestHandedRepliesAreSentWhenDurable(t *testing.T) {
	l := newFakeLoop()
	addr := startHandoff(t, l, nil)
	nc, r := dialTest(t, addr)
	l.send(t, nc, "w\r\n")
	expectNothing(t, nc, r, "handed over")
	l.release(nil)
	if line, err := r.ReadString('\n'); err != nil || line != "+w\r\n" {
		t.Fatalf("after the call: %q %v, want +w", line, err)
	}
	// The connection goes on, handing over again.
	expectLines(t, nc, r, "x\r\n", "+x\r\n")
	l.send(t, nc, "w\r\n")
	l.release(nil)
	if line, err := r.ReadString('\n'); err != nil || line != "+w\r\n" {
		t.Fatalf("second handoff: %q %v, want +w", line, err)
	}
}

// A later reply, which waits for nothing, is sent after the replies
// handed over, never before them.
func TestLaterRepliesFollowHandedOnes(t *testing.T) {
	l := newFakeLoop()
	served := make(chan string, 4)
	addr := startHandoff(t, l, served)
	nc, r := dialTest(t, addr)
	l.send(t, nc, "w\r\n")
	if _, err := io.WriteString(nc, "x\r\n"); err != nil {
		t.Fatal(err)
	}
	if got := <-served; got != "x" {
		t.Fatalf("served %q", got)
	}
	expectNothing(t, nc, r, "a later reply")
	l.release(nil)
	for _, want := range []string{"+w\r\n", "+x\r\n"} {
		if line, err := r.ReadString('\n'); err != nil || line != want {
			t.Fatalf("got %q %v, want %q", line, err, want)
		}
	}
}

// KV-6: replies whose writes were not made durable are never sent; the
// connection closes, as when a wait fails.
func TestHandedRepliesDroppedWhenNotDurable(t *testing.T) {
	l := newFakeLoop()
	addr := startHandoff(t, l, nil)
	nc, r := dialTest(t, addr)
	l.send(t, nc, "w\r\nx\r\n")
	l.release(errors.New("disk gone"))
	if line, err := r.ReadString('\n'); err == nil {
		t.Fatalf("got %q after the writes failed; want the connection closed", line)
	}
}

// A ticket that cannot call back is waited for, as any other.
func TestRefusedHandoffWaits(t *testing.T) {
	l := newFakeLoop()
	l.refuse = true
	addr := startHandoff(t, l, nil)
	nc, r := dialTest(t, addr)
	expectLines(t, nc, r, "w\r\n", "+w\r\n")
	select {
	case <-l.waited:
	default:
		t.Fatal("the reply was sent without waiting for its ticket")
	}
}

// A client that does not read its replies holds back its own connection,
// never the store's loop: the call returns with the socket full, and the
// rest is sent as the client reads, without waiting for its next request
// (a client may wait for the whole reply before it sends anything).
func TestHandoffNeverBlocksTheStore(t *testing.T) {
	const size = 8 << 20 // more than loopback's socket buffers hold
	l := newFakeLoop()
	addr := startHandoff(t, l, nil)
	nc, r := dialTest(t, addr)
	l.send(t, nc, "*2\r\n$1\r\nw\r\n$7\r\n"+strconv.Itoa(size)+"\r\n")
	released := make(chan struct{})
	go func() { l.release(nil); close(released) }()
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("the store's call blocked on a client that does not read")
	}
	head, err := r.ReadString('\n')
	if err != nil || head != "$"+strconv.Itoa(size)+"\r\n" {
		t.Fatalf("reply header %q %v", head, err)
	}
	body := make([]byte, size+2)
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(body[:size]), "b") != size || string(body[size:]) != "\r\n" {
		t.Fatal("the reply arrived damaged")
	}
	expectLines(t, nc, r, "x\r\n", "+x\r\n")
}

// Close waits for replies in the store's hands, and returns once the
// store made its call.
func TestCloseWithRepliesHandedOver(t *testing.T) {
	l := newFakeLoop()
	s := NewServer(Config{Addrs: []string{"127.0.0.1:0"}}, handlerFunc(func(c *Conn, args [][]byte) {
		c.Await(fakeTicket{l})
		c.W.Simple("w")
	}))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	nc, _ := dialTest(t, s.Addrs()[0].String())
	l.send(t, nc, "w\r\n")
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	go func() {
		time.Sleep(50 * time.Millisecond)
		l.release(errors.New("store closed"))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung with replies handed over")
	}
}

// A protocol error's reply follows the replies handed over, and both
// reach the client before the connection half-closes.
func TestProtocolErrorAfterHandedReplies(t *testing.T) {
	l := newFakeLoop()
	addr := startHandoff(t, l, nil)
	nc, r := dialTest(t, addr)
	l.send(t, nc, "w\r\n*x\r\n")
	l.release(nil)
	for _, want := range []string{"+w\r\n", "-ERR Protocol error: invalid multibulk length\r\n"} {
		if line, err := r.ReadString('\n'); err != nil || line != want {
			t.Fatalf("got %q %v, want %q", line, err, want)
		}
	}
}
