package resp

import (
	"net"
	"testing"
)

// The server reads and writes a TCP client's socket with raw system calls
// (rawio.Socket), and a connection without a socket of its own (TLS,
// net.Pipe) through net.Conn.
func TestConnUsesRawSocketWhenItHasOne(t *testing.T) {
	addr := startTest(t, Config{}, handlerFunc(func(c *Conn, _ [][]byte) {
		if c.sk.Ready() && c.rd.rd.(countingReader).r == &c.sk {
			c.W.Simple("raw")
		} else {
			c.W.Simple("net")
		}
	}))
	nc, rd := dialTest(t, addr)
	expectLines(t, nc, rd, "*1\r\n$4\r\nPING\r\n", "+raw\r\n")

	s := NewServer(Config{}, handlerFunc(echoHandler))
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	c, _ := s.admit(p1)
	if c == nil || c.sk.Ready() || c.rd.rd.(countingReader).r != p1 {
		t.Fatal("a connection without a socket is not read through net.Conn")
	}
}
