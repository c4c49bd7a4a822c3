package resp

import (
	"net"
	"testing"
)

// tcpPair returns the two ends of a loopback TCP connection: the
// accepted one, then the client's.
func tcpPair(tb testing.TB) (net.Conn, net.Conn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}

// The server reads and writes a TCP client's socket with raw system calls
// (rawio.Socket), and a connection without a socket of its own (TLS,
// net.Pipe) through net.Conn.
func TestConnUsesRawSocketWhenItHasOne(t *testing.T) {
	s := NewServer(Config{}, handlerFunc(echoHandler))
	server, _ := tcpPair(t)
	c, _ := s.admit(server)
	if c == nil || !c.sk.Ready() || c.rd.rd.(countingReader).r != &c.sk {
		t.Fatal("a TCP connection is not read through its sock")
	}
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	c, _ = s.admit(p1)
	if c == nil || c.sk.Ready() || c.rd.rd.(countingReader).r != p1 {
		t.Fatal("a connection without a socket is not read through net.Conn")
	}
}
