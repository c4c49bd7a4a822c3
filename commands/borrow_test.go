package commands

import (
	"bufio"
	"net"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/resp"
)

// multibulk encodes a request as clients send it.
func multibulk(args ...string) string {
	out := "*" + strconv.Itoa(len(args)) + "\r\n"
	for _, a := range args {
		out += "$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n"
	}
	return out
}

// serveOne serves s on a loopback port and returns one client connection
// to it, with a deadline of 10 s, and its reader; both close at cleanup.
func serveOne(tb testing.TB, s *Server) (net.Conn, *bufio.Reader) {
	tb.Helper()
	w := resp.NewServer(resp.Config{Addrs: []string{"127.0.0.1:0"}, Logger: zap.NewNop()}, s)
	s.Attach(w)
	if err := w.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { w.Close() })
	conn, err := net.DialTimeout("tcp", w.Addrs()[0].String(), 5*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	return conn, bufio.NewReader(conn)
}

// A command with the Borrows flag gives its arguments back to the
// connection's reader when it returns: an argument it kept does not read
// as it did once the next request is parsed (poisoned, or reused). One
// without the flag keeps its own (issue 6: the allocations of a parsed
// request).
func TestBorrowingCommandsGiveTheirArgumentsBack(t *testing.T) {
	st := openTestStore(t)
	s := New(Config{Logger: zap.NewNop()}, st)
	var kept, keptOwn [][]byte
	s.Table().Register(
		&Command{Name: "debug-keep", Arity: 2, Flags: Borrows, Run: func(x *Ctx) {
			kept = x.Args
			x.W.OK()
		}},
		&Command{Name: "debug-keep-owned", Arity: 2, Run: func(x *Ctx) {
			keptOwn = x.Args
			x.W.OK()
		}},
		&Command{Name: "debug-block", Arity: 1, Run: func(x *Ctx) {
			x.Block(func(<-chan struct{}) { x.W.OK() })
		}},
		&Command{Name: "debug-kept", Arity: 1, Run: func(x *Ctx) {
			// Read on the connection's goroutine, which wrote them.
			x.W.Bulk(kept[1])
			x.W.Bulk(keptOwn[1])
		}},
	)
	conn, r := serveOne(t, s)
	// exchange sends a pipeline and reads n reply lines.
	exchange := func(send string, n int) []string {
		t.Helper()
		if _, err := conn.Write([]byte(send)); err != nil {
			t.Fatal(err)
		}
		var lines []string
		for range n {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("after %q: %v", lines, err)
			}
			lines = append(lines, line)
		}
		return lines
	}
	lines := exchange(multibulk("DEBUG-KEEP-OWNED", "alpha")+multibulk("DEBUG-KEEP", "bravo")+
		multibulk("GET", "somekey")+multibulk("DEBUG-KEPT"), 7)
	if lines[0] != "+OK\r\n" || lines[1] != "+OK\r\n" || lines[2] != "$-1\r\n" {
		t.Fatalf("replies %q", lines)
	}
	if got := lines[4]; got == "bravo\r\n" {
		t.Errorf("a Borrows command's argument still reads %q after the next request", got)
	}
	if got := lines[6]; got != "alpha\r\n" {
		t.Errorf("a command without Borrows kept %q, want alpha", got)
	}

	// After a blocking command, another goroutine parses ahead while
	// commands run: nothing is given back any more, or it would be
	// reused under a request still waiting to run. (A Release there races
	// with that goroutine: -race, as ./test.sh runs, reports it every
	// time; without it, the check below sees it only when the parser
	// has not moved on yet.)
	lines = exchange(multibulk("DEBUG-BLOCK")+multibulk("DEBUG-KEEP", "charlie")+
		multibulk("GET", "somekey")+multibulk("DEBUG-KEPT"), 7)
	if got := lines[4]; got != "charlie\r\n" {
		t.Errorf("detached connection: a Borrows command's argument reads %q after the next request, want charlie", got)
	}
}
