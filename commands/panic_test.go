package commands

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
	"github.com/oncekv/oncekv/store/badgerdb"
)

// openTestStore opens a Badger store in a temporary directory.
func openTestStore(tb testing.TB) *badgerdb.DB {
	tb.Helper()
	st, err := badgerdb.Open(badgerdb.DefaultOptions(tb.TempDir()))
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	st.Start()
	tb.Cleanup(func() { st.Close() })
	return st
}

// The panic hook: commands that panic, registered by the test only, so
// that nothing like them is reachable in a production server. A panic in
// a handler, in a write transaction or in a blocked command's finisher is
// logged and answered with an error, and the connection and the server go
// on.
func TestPanicIsAnsweredLoggedAndSurvived(t *testing.T) {
	core, logs := observer.New(zap.ErrorLevel)
	log := zap.New(core)
	st := openTestStore(t)
	s := New(Config{Logger: log}, st)
	s.Table().Register(
		&Command{Name: "debug-panic", Arity: -1, Run: func(x *Ctx) {
			x.W.Simple("half a reply")
			panic("boom")
		}},
		&Command{Name: "debug-panic-write", Arity: 2, Flags: Write, Run: func(x *Ctx) {
			if err := x.Tx.Set(x.DB, x.Args[1], store.Value{Kind: store.KindString, Data: []byte("staged")}); err != nil {
				t.Errorf("set: %v", err)
			}
			var m map[string]int
			m["nil map"]++ // a runtime error, not a panic call
		}},
		&Command{Name: "debug-panic-read", Arity: 2, Flags: ReadOnly, Run: func(x *Ctx) {
			if _, _, err := x.Tx.Get(x.DB, x.Args[1]); err != nil {
				t.Errorf("get: %v", err)
			}
			panic("boom while reading")
		}},
		&Command{Name: "debug-block-then-panic", Arity: 1, Run: func(x *Ctx) {
			x.Block(func(gone <-chan struct{}) {
				select {
				case <-gone:
					blockGone <- true
				default:
					blockGone <- false
				}
				x.W.Simple("a second reply")
			})
			panic("boom after Block")
		}},
		// A write that makes itself a blocking one and panics: its
		// blocking part writes too (as ONCE's withdrawal does), which
		// waits for good if the panic left the connection's hold with
		// the keyspace lock.
		&Command{Name: "debug-write-block-then-panic", Arity: 2, Flags: Write, Run: func(x *Ctx) {
			if err := x.Tx.Set(x.DB, x.Args[1], store.Value{Kind: store.KindString, Data: []byte("staged")}); err != nil {
				t.Errorf("set: %v", err)
			}
			x.Block(func(gone <-chan struct{}) {
				_, err := x.S.store.Update(func(tx store.Tx) error { return nil })
				blockWrote <- err
			})
			panic("boom after a write's Block")
		}},
		&Command{Name: "debug-panic-blocked", Arity: 1, Run: func(x *Ctx) {
			x.Block(func(gone <-chan struct{}) {
				x.W.Simple("half")
				panic("boom while blocked")
			})
		}},
	)
	w := resp.NewServer(resp.Config{Addrs: []string{"127.0.0.1:0"}, Logger: log}, s)
	s.Attach(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	addr := w.Addrs()[0].String()

	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	expect := func(send string, want ...string) {
		t.Helper()
		if _, err := conn.Write([]byte(send)); err != nil {
			t.Fatalf("write: %v", err)
		}
		for _, w := range want {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("after %q: %v", send, err)
			}
			if line != w {
				t.Fatalf("after %q: got %q, want %q", send, line, w)
			}
		}
	}
	expect("DEBUG-PANIC\r\nPING\r\n",
		"-ERR internal error while running 'debug-panic' (the server logged it)\r\n", "+PONG\r\n")
	expect("DEBUG-PANIC-WRITE k\r\nSET k2 v\r\nGET k2\r\n",
		"-ERR internal error while running 'debug-panic-write' (the server logged it)\r\n", "+OK\r\n", "$1\r\n", "v\r\n")
	// The read transaction ends too: writers are not locked out.
	expect("DEBUG-PANIC-READ k2\r\nSET k3 v\r\nGET k3\r\n",
		"-ERR internal error while running 'debug-panic-read' (the server logged it)\r\n", "+OK\r\n", "$1\r\n", "v\r\n")
	expect("WATCH w\r\nMULTI\r\nDEBUG-PANIC\r\nEXEC\r\nPING\r\n",
		"+OK\r\n", "+OK\r\n", "+QUEUED\r\n", "-ERR internal error while running 'exec' (the server logged it)\r\n", "+PONG\r\n")
	// That EXEC ended the transaction: its WATCH is gone, so a write of w
	// does not abort the next one.
	expect("SET w 1\r\nMULTI\r\nPING\r\nEXEC\r\n",
		"+OK\r\n", "+OK\r\n", "+QUEUED\r\n", "*1\r\n", "+PONG\r\n")
	expect("DEBUG-WRITE-BLOCK-THEN-PANIC k4\r\nPING\r\n",
		"-ERR internal error while running 'debug-write-block-then-panic' (the server logged it)\r\n", "+PONG\r\n")
	select {
	case err := <-blockWrote:
		if err != nil {
			t.Errorf("the blocking part's write: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the blocking part of a panicked write could not write: the keyspace lock was still held")
	}
	expect("DEBUG-PANIC-BLOCKED\r\nPING\r\n",
		"-ERR internal error (the server logged it)\r\n", "+PONG\r\n")
	// A command that panics after it made itself a blocking one (a
	// waiter queued): its blocking part runs as if the client had left,
	// so that it withdraws, and the command is answered once.
	expect("DEBUG-BLOCK-THEN-PANIC\r\nPING\r\n",
		"-ERR internal error while running 'debug-block-then-panic' (the server logged it)\r\n", "+PONG\r\n")
	select {
	case g := <-blockGone:
		if !g {
			t.Error("the blocking part of a panicked command ran with its client still there")
		}
	case <-time.After(5 * time.Second):
		t.Error("the blocking part of a panicked command never ran")
	}

	// A panic in a command a script calls is the script's error (raised
	// by redis.call, returned by redis.pcall); the script's transaction
	// ends and the server goes on.
	body := "return redis.call('debug-panic-write', KEYS[1])"
	expect(evalRequest(body, "1", "k5")+"PING\r\n",
		"-ERR internal error while running 'debug-panic-write' (the server logged it) script: "+scriptSHA(body)+", on @user_script:1.\r\n", "+PONG\r\n")
	expect(evalRequest("local e = redis.pcall('debug-panic') return {e.err}", "0")+"SET k6 v\r\n",
		"*1\r\n", "$69\r\n", "ERR internal error while running 'debug-panic' (the server logged it)\r\n", "+OK\r\n")

	// Another client is served.
	other, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_ = other.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := other.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(other).ReadString('\n'); err != nil || line != "+PONG\r\n" {
		t.Fatalf("other client: %q %v", line, err)
	}

	var panics []string
	for _, e := range logs.All() {
		if strings.Contains(e.Message, "panic") {
			panics = append(panics, e.Message)
			stack, _ := e.ContextMap()["stack"].(string)
			if stack == "" || !strings.Contains(stack, "panic_test.go") {
				t.Errorf("logged %q without the stack of the panic: %.300q", e.Message, stack)
			}
		}
	}
	if len(panics) != 9 {
		t.Fatalf("logged panics: %q, want 9", panics)
	}
}

// evalRequest is EVAL body numkeys args… as a RESP request.
func evalRequest(body string, rest ...string) string {
	args := append([]string{"EVAL", body}, rest...)
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// blockGone reports whether debug-block-then-panic's blocking part saw
// its client gone.
var blockGone = make(chan bool, 1)

// blockWrote is what the write of debug-write-block-then-panic's blocking
// part returned.
var blockWrote = make(chan error, 1)
