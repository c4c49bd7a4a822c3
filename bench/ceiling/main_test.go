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
	wg.Wait()
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
// a GET, which writes nothing, syncs nothing.
func TestAlwaysRepliesAfterSync(t *testing.T) {
	release := make(chan struct{})
	began := make(chan struct{}, 16) // one send per sync begun
	s := newServer(testAOF(t), true, func() error {
		began <- struct{}{}
		<-release
		return nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go s.serveGoroutines(ln)
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	rd := bufio.NewReader(nc)
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	send := func(req string) {
		t.Helper()
		if _, err := nc.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	type line struct {
		s   string
		err error
	}
	next := func() <-chan line { // the next reply line, read meanwhile
		ch := make(chan line, 1)
		go func() {
			s, err := rd.ReadString('\n')
			ch <- line{s, err}
		}()
		return ch
	}
	expect := func(got <-chan line, want string) {
		t.Helper()
		if l := <-got; l.err != nil || l.s != want {
			t.Fatalf("reply %q, %v; want %q", l.s, l.err, want)
		}
	}

	send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
	reply := next()
	select {
	case <-began: // the SET's sync has begun, and is held
	case l := <-reply:
		t.Fatalf("reply %q, %v before the write's sync began", l.s, l.err)
	}
	select {
	case l := <-reply:
		t.Fatalf("reply %q, %v before the write's sync ended", l.s, l.err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	expect(reply, "+OK\r\n")

	send("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
	expect(next(), "$1\r\n")
	expect(next(), "v\r\n")
	if n := len(began); n != 0 {
		t.Errorf("%d more syncs after the SET's, for a GET; want none", n)
	}
}
