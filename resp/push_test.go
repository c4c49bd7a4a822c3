package resp

import (
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// pushHub is a handler for push tests: "sub" makes the connection take
// pushes; "pub size" pushes a message of size bytes to every subscriber
// and answers how many took it.
type pushHub struct {
	mu   sync.Mutex
	subs []*Conn
}

func (h *pushHub) Serve(c *Conn, args [][]byte) {
	switch string(args[0]) {
	case "sub":
		c.TakePushes()
		c.SetSubscribed(true)
		h.mu.Lock()
		h.subs = append(h.subs, c)
		h.mu.Unlock()
		c.W.Simple("subscribed")
	case "pushmid":
		// A push from another connection reaches c while this command
		// runs, and the client's next request is read meanwhile.
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.Push(func(w *Writer) { w.Push(1); w.BulkString("mid") })
		}()
		<-done
		time.Sleep(20 * time.Millisecond)
		c.W.Simple("pushmid")
	case "unsub":
		c.SetSubscribed(false)
		c.W.Simple("unsubscribed")
	case "pub":
		size, _ := strconv.Atoi(string(args[1]))
		msg := strings.Repeat("m", size)
		h.mu.Lock()
		subs := slices.Clone(h.subs)
		h.mu.Unlock()
		n := 0
		for _, s := range subs {
			if s.Push(func(w *Writer) { w.Push(1); w.BulkString(msg) }) {
				n++
			}
		}
		c.W.Int(int64(n))
	default:
		c.W.Simple(string(args[0]))
	}
}

// A push reaches a subscriber that sends nothing, at once, and after the
// replies it was sent before.
func TestPushReachesAnIdleClient(t *testing.T) {
	addr := startTest(t, Config{}, &pushHub{})
	sub, sr := dialTest(t, addr)
	expectLines(t, sub, sr, "sub\r\n", "+subscribed\r\n")
	pub, pr := dialTest(t, addr)
	for i := 0; i < 3; i++ {
		expectLines(t, pub, pr, "pub 5\r\n", ":1\r\n")
		expectLines(t, sub, sr, "", "*1\r\n", "$5\r\n", "mmmmm\r\n")
	}
	// Replies and pushes keep their order.
	expectLines(t, sub, sr, "ping\r\n", "+ping\r\n")
}

// A push that reaches a subscriber while one of its commands runs goes
// after that command's reply and before the next one's, as in Redis (one
// thread: a message is published between two commands): a command that
// ends a subscription or changes the protocol (RESET, HELLO) is answered
// after what the subscription was sent before it, never before.
func TestPushBeforeTheNextReply(t *testing.T) {
	for _, tc := range []struct {
		name, send string
		want       []string
	}{
		{"pipelined", "pushmid\r\nping\r\n", []string{"+pushmid\r\n", "*1\r\n", "$3\r\n", "mid\r\n", "+ping\r\n"}},
		{"pipelined, then unsub", "pushmid\r\nunsub\r\n", []string{"+pushmid\r\n", "*1\r\n", "$3\r\n", "mid\r\n", "+unsubscribed\r\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := startTest(t, Config{}, &pushHub{})
			sub, sr := dialTest(t, addr)
			expectLines(t, sub, sr, "sub\r\n", "+subscribed\r\n")
			expectLines(t, sub, sr, tc.send, tc.want...)
		})
	}
}

// A subscriber that does not read is closed as Redis closes it, once its
// pending pushes reach the hard limit, or stay over the soft limit for
// longer than its seconds; under the soft limit it stays. The publisher
// is never held up by it.
func TestPushOutputLimit(t *testing.T) {
	const size = 16 << 10
	for _, tc := range []struct {
		name   string
		limit  OutputLimit
		pace   time.Duration // between publishes
		most   int           // publishes at most
		closed bool
	}{
		{"hard", OutputLimit{Hard: 1 << 20}, 0, 2000, true},
		{"soft for longer than its seconds", OutputLimit{Soft: 256 << 10, SoftSeconds: 200 * time.Millisecond}, 2 * time.Millisecond, 3000, true},
		{"soft for less than its seconds", OutputLimit{Soft: 256 << 10, SoftSeconds: time.Hour}, 0, 1000, false},
		{"no limit", OutputLimit{}, 0, 1000, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewServer(Config{Addrs: []string{"127.0.0.1:0"}}, &pushHub{})
			s.SetPubsubLimit(tc.limit)
			if err := s.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			addr := s.Addrs()[0].String()
			sub, sr := dialTest(t, addr)
			expectLines(t, sub, sr, "sub\r\n", "+subscribed\r\n")
			pub, pr := dialTest(t, addr)
			closed := false
			for i := 0; i < tc.most && !closed; i++ {
				if _, err := io.WriteString(pub, "pub "+strconv.Itoa(size)+"\r\n"); err != nil {
					t.Fatal(err)
				}
				line, err := pr.ReadString('\n')
				if err != nil {
					t.Fatalf("publish %d: %v (the publisher was held up?)", i, err)
				}
				closed = line == ":0\r\n"
				time.Sleep(tc.pace)
			}
			if closed != tc.closed {
				t.Fatalf("subscriber closed: %v, want %v", closed, tc.closed)
			}
			if !closed {
				return
			}
			// Its connection ends once it reads what reached its socket.
			_ = sub.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.Copy(io.Discard, sub); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatal("the subscriber's connection stayed open")
				}
			}
		})
	}
}

// A subscriber is not idle, as in Redis: the timeout spares it while it
// is subscribed, and applies again once it is not.
func TestIdleTimeoutSparesSubscribers(t *testing.T) {
	addr := startTest(t, Config{IdleTimeout: 200 * time.Millisecond}, &pushHub{})
	sub, sr := dialTest(t, addr)
	expectLines(t, sub, sr, "sub\r\n", "+subscribed\r\n")
	idle, ir := dialTest(t, addr)
	expectLines(t, idle, ir, "ping\r\n", "+ping\r\n")
	time.Sleep(700 * time.Millisecond)
	pub, pr := dialTest(t, addr)
	expectLines(t, pub, pr, "pub 3\r\n", ":1\r\n")
	expectLines(t, sub, sr, "", "*1\r\n", "$3\r\n", "mmm\r\n")
	if _, err := ir.ReadString('\n'); err == nil {
		t.Fatal("an idle client that is not subscribed was not closed")
	}
	expectLines(t, sub, sr, "unsub\r\n", "+unsubscribed\r\n")
	_ = sub.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := sr.ReadString('\n'); err == nil {
		t.Fatal("an idle client that unsubscribed was not closed")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("an idle client that unsubscribed was still open after 5 s")
	}
}
