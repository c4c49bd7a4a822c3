package benchkit

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestShellQuote(t *testing.T) {
	got := ShellQuote([]string{"redis-server", "--save", "", "--dir", "/tmp/a b", "it's"})
	want := `redis-server --save '' --dir '/tmp/a b' 'it'\''s'`
	if got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// serve answers each connection's first command with reply and keeps
// the connection open.
func serve(tb testing.TB, reply string) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				if _, err := c.Read(buf); err != nil {
					return
				}
				c.Write([]byte(reply))
				time.Sleep(time.Second)
			}()
		}
	}()
	return l.Addr().String()
}

func TestReadReplies(t *testing.T) {
	for _, c := range []struct{ wire, want string }{
		{"+OK\r\n", `"OK"`},
		{"-ERR no\r\n", "(error) ERR no"},
		{":42\r\n", "42"},
		{"$5\r\nhello\r\n", `"hello"`},
		{"$-1\r\n", "(nil)"},
		{"*2\r\n$4\r\ndone\r\n$1\r\na\r\n", `["done", "a"]`},
		{"*-1\r\n", "(nil)"},
	} {
		conn, err := Dial(serve(t, c.wire))
		if err != nil {
			t.Fatal(err)
		}
		r, err := conn.Do("PING")
		conn.Close()
		if err != nil || r.String() != c.want {
			t.Errorf("%q: %v, %v; want %s", c.wire, r, err, c.want)
		}
	}
	conn, err := Dial(serve(t, "?what\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Do("PING"); err == nil {
		t.Fatal("an unknown reply type read without error")
	}
}

func TestReplyHelpers(t *testing.T) {
	r := Reply{Kind: '*', Arr: []Reply{{Kind: '$', Str: "claimed"}, {Kind: ':', N: 7}}}
	if v, ok := r.Pair("claimed"); !ok || v.N != 7 {
		t.Fatalf("Pair: %v %v", v, ok)
	}
	if _, ok := r.Pair("done"); ok {
		t.Fatal("Pair matched another state")
	}
	if v, ok := r.Field("claimed"); !ok || v.N != 7 {
		t.Fatalf("Field: %v %v", v, ok)
	}
}

func TestDirSizeCountsAllocatedBytes(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.WriteFile(filepath.Join(dir, "data"), make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := DirSize(dir); n < 64<<10 || n > 1<<20 {
		t.Fatalf("DirSize %d: want the 64 KiB written, not the sparse file's length", n)
	}
}

func TestStartStopAndMem(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found (%v): apt-get install -y redis-server", err)
	}
	p, err := StartRedis(bin, t.TempDir(), "always")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if got := InfoField(p.Addr, "server", "tcp_port"); !strings.HasSuffix(p.Addr, ":"+got) {
		t.Fatalf("INFO tcp_port %s, addr %s", got, p.Addr)
	}
	m, err := ReadMem(p.PID())
	if err != nil || m.RSS <= 0 || m.HWM < m.RSS {
		t.Fatalf("ReadMem: %+v, %v", m, err)
	}
	// Paused, it answers nothing; resumed, it answers.
	c, err := Dial(p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(300 * time.Millisecond))
	if err := c.Send("PING"); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Read(); err == nil {
		t.Fatalf("paused server answered %v", r)
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	c2, err := Dial(p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if r, err := c2.Do("PING"); err != nil || r.Str != "PONG" {
		t.Fatalf("resumed server: %v, %v", r, err)
	}
	p.Pause() // Stop resumes it first
	p.Stop()
	if !p.Exited() {
		t.Fatal("still running after Stop")
	}
	if _, err := ReadMem(p.PID()); err == nil {
		t.Fatal("ReadMem of an ended process succeeded")
	}
}
