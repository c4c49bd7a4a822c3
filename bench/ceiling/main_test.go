package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// testAOF opens a log file that the test removes.
func testAOF(t testing.TB) *os.File {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "ceiling-*.aof")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestGroupCommit runs many connections' writes under appendfsync always:
// each returns from waitDurable only once a sync that began after its
// bytes were written has ended, and the writes share their syncs.
func TestGroupCommit(t *testing.T) {
	var (
		s       *server
		mu      sync.Mutex
		covered int64 // the most bytes written when an ended sync began
		calls   int
	)
	s = newServer(testAOF(t), true, func() error {
		s.mu.Lock()
		w := s.written
		s.mu.Unlock()
		time.Sleep(200 * time.Microsecond) // an fdatasync's length
		mu.Lock()
		calls++
		covered = max(covered, w)
		mu.Unlock()
		return nil
	})
	const writers, each = 16, 200
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range each {
				s.mu.Lock()
				s.log = append(s.log, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"...)
				s.flushLog()
				upto := s.written
				s.mu.Unlock()
				s.waitDurable(upto)
				mu.Lock()
				c := covered
				mu.Unlock()
				if c < upto {
					errs <- fmt.Errorf("waitDurable(%d) returned when the syncs that ended covered %d bytes", upto, c)
					return
				}
			}
		})
	}
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(time.Minute):
		t.Fatal("writers still waiting for their syncs after a minute: a lost wake-up")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if calls == 0 || calls > writers*each/2 {
		t.Errorf("%d syncs for %d writes: want them shared", calls, writers*each)
	}
}

// TestAlwaysRepliesAfterSync checks the goroutine server end to end under
// appendfsync always: a SET's reply waits for the sync of its write, and
// so does the reply to a GET from another connection that reads it; a GET
// once everything is synced syncs nothing.
func TestAlwaysRepliesAfterSync(t *testing.T) {
	for _, raw := range []bool{false, true} {
		t.Run(ioName(raw), func(t *testing.T) {
			s, ln, began, release := heldSyncServer(t)
			s.raw = raw
			t.Cleanup(func() { ln.Close() })
			go s.serveGoroutines(ln)
			checkRepliesAfterSync(t, ln.Addr().String(), began, release)
		})
	}
}

// ioName is the -io value that sets server.raw to raw.
func ioName(raw bool) string {
	if raw {
		return "raw"
	}
	return "net"
}

// heldSyncServer is a server under appendfsync always whose every sync
// sends on began and then waits for release to be closed, and a listener
// on 127.0.0.1 for it to serve.
func heldSyncServer(t testing.TB) (s *server, ln *net.TCPListener, began, release chan struct{}) {
	t.Helper()
	release = make(chan struct{})
	began = make(chan struct{}, 16)
	s = newServer(testAOF(t), true, func() error {
		began <- struct{}{}
		<-release
		return nil
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return s, l.(*net.TCPListener), began, release
}

// client is a test's connection to a server, reading its replies line by
// line.
type client struct {
	t  testing.TB
	nc net.Conn
	rd *bufio.Reader
}

// line is a reply line, or why there is none.
type line struct {
	s   string
	err error
}

func dial(t testing.TB, addr string) *client {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	return &client{t: t, nc: nc, rd: bufio.NewReader(nc)}
}

func (c *client) send(req string) {
	c.t.Helper()
	if _, err := c.nc.Write([]byte(req)); err != nil {
		c.t.Fatal(err)
	}
}

// next reads the next reply line meanwhile.
func (c *client) next() <-chan line {
	ch := make(chan line, 1)
	go func() {
		s, err := c.rd.ReadString('\n')
		ch <- line{s, err}
	}()
	return ch
}

func expect(t testing.TB, got <-chan line, want string) {
	t.Helper()
	if l := <-got; l.err != nil || l.s != want {
		t.Fatalf("reply %q, %v; want %q", l.s, l.err, want)
	}
}

// notYet fails t if a reply comes on got within 50 ms.
func notYet(t testing.TB, got <-chan line, what string) {
	t.Helper()
	select {
	case l := <-got:
		t.Fatalf("reply %q, %v %s", l.s, l.err, what)
	case <-time.After(50 * time.Millisecond):
	}
}

const (
	setKV = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
	getK  = "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
)

// checkRepliesAfterSync runs the end-to-end check against the server at
// addr, whose sync sends on began and waits for release.
func checkRepliesAfterSync(t *testing.T, addr string, began chan struct{}, release chan struct{}) {
	a, b := dial(t, addr), dial(t, addr)
	a.send(setKV)
	aReply := a.next()
	select {
	case <-began: // the SET's sync has begun, and is held
	case l := <-aReply:
		t.Fatalf("reply %q, %v before the write's sync began", l.s, l.err)
	}
	notYet(t, aReply, "to the SET before its sync ended")
	b.send(getK)
	bReply := b.next()
	notYet(t, bReply, "to a GET of the SET's key before the SET's sync ended")
	close(release)
	expect(t, aReply, "+OK\r\n")
	expect(t, bReply, "$1\r\n")
	expect(t, b.next(), "v\r\n")

	for len(began) > 0 { // syncs the GET ran or waited for
		<-began
	}
	b.send(getK)
	expect(t, b.next(), "$1\r\n")
	expect(t, b.next(), "v\r\n")
	if n := len(began); n != 0 {
		t.Errorf("%d syncs for a GET with nothing unsynced; want none", n)
	}
}
