package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// socketPair returns the two ends of a loopback TCP connection, the
// accepted one read and written through a Socket.
func socketPair(tb testing.TB) (*Socket, net.Conn, net.Conn) {
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
	raw, err := server.(syscall.Conn).SyscallConn()
	if err != nil {
		tb.Fatal(err)
	}
	s := &Socket{}
	s.Init(raw)
	return s, server, client
}

// A Socket reads and writes as net.Conn does: what was sent, in full,
// waiting for data and for room, and io.EOF once the client closed.
func TestSocketReadsAndWritesLikeNetConn(t *testing.T) {
	s, _, client := socketPair(t)

	go func() {
		time.Sleep(20 * time.Millisecond) // the first read waits for data
		client.Write([]byte("*1\r\n$4\r\nPING\r\n"))
	}()
	buf := make([]byte, 64)
	n, err := s.Read(buf)
	if err != nil || string(buf[:n]) != "*1\r\n$4\r\nPING\r\n" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	if n, err := s.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v; want 0, nil", n, err)
	}

	// More than the socket buffers take: Write waits for the client to
	// read, and everything arrives in order.
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(client, int64(len(big))))
		got <- b
	}()
	n, err = s.Write(big)
	if n != len(big) || err != nil {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(big))
	}
	if b := <-got; !bytes.Equal(b, big) {
		t.Fatalf("the client read %d bytes, not what was written", len(b))
	}

	client.Close()
	if n, err := s.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("Read after the client closed = %d, %v; want 0, io.EOF", n, err)
	}
}

// A read deadline ends a waiting Read with a timeout, and closing the
// connection ends it with net.ErrClosed: what the server's idle timeout
// and its shutdown rely on.
func TestSocketDeadlineAndClose(t *testing.T) {
	s, server, _ := socketPair(t)
	server.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	_, err := s.Read(make([]byte, 16))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline: %v; want a timeout", err)
	}
	server.SetReadDeadline(time.Time{})

	done := make(chan error, 1)
	go func() {
		_, err := s.Read(make([]byte, 16))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	server.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Read of a closed connection: %v; want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read did not return when the connection closed")
	}
	if _, err := s.Write([]byte("+OK\r\n")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write to a closed connection: %v; want net.ErrClosed", err)
	}
}

// A client that resets the connection is an error of the read, and a
// write to it one of the write; neither takes the process down (SIGPIPE).
func TestSocketPeerReset(t *testing.T) {
	s, _, client := socketPair(t)
	client.(*net.TCPConn).SetLinger(0)
	client.Close() // RST
	time.Sleep(20 * time.Millisecond)
	if _, err := s.Read(make([]byte, 16)); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Read after a reset: %v; want ECONNRESET", err)
	}
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		_, err = s.Write([]byte("+OK\r\n"))
	}
	if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Write after a reset: %v; want EPIPE or ECONNRESET", err)
	}
}

// WriteFile appends what it is given, all of it, at the file's offset, as
// os.File's Write does, and reports a failed write as one.
func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := []byte("first record,")
	if n, err := WriteFile(f, want); n != len(want) || err != nil {
		t.Fatalf("WriteFile = %d, %v", n, err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB
	if n, err := WriteFile(f, big); n != len(big) || err != nil {
		t.Fatalf("WriteFile of 16 MiB = %d, %v", n, err)
	}
	want = append(want, big...)
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the file holds %d bytes, not the %d written in order (%v)", len(got), len(want), err)
	}

	ro, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, err = WriteFile(ro, []byte("x"))
	var pe *os.PathError
	if !errors.Is(err, syscall.EBADF) || !errors.As(err, &pe) || pe.Path != path {
		t.Fatalf("WriteFile to a read-only file: %v; want EBADF naming the file", err)
	}
	ro.Close()
	if _, err := WriteFile(ro, []byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("WriteFile to a closed file: %v; want os.ErrClosed", err)
	}
}
