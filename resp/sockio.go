package resp

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// Reading and writing a client's socket without telling the scheduler.
//
// Go's own reads and writes of a socket (net.Conn) are system calls the
// runtime is told of: each marks its processor as in a system call, so that
// another thread could take the processor over were the call to block, and
// wakes the runtime's monitor thread (sysmon) if it sleeps. The monitor
// sleeps whenever every processor is idle, which on a server waiting for
// its clients is most moments; once woken, it polls every 20 µs for the
// next millisecond. Under redis-benchmark's unpipelined PINGs (-c 50) that
// was 2,800 of its sleeps a second, a tenth of the server's CPU, and
// 58,000 context switches in 5 s against 36,000 without (on the cores the
// clients need).
//
// A client's socket is non-blocking (Go's poller waits for it), so a read
// or write of it never blocks: it copies what the socket holds or takes,
// or returns EAGAIN at once. Such a call needs none of that. The
// connection makes it as a raw system call inside the connection's
// RawConn.Read or RawConn.Write, which wait on Go's poller when the call
// returns EAGAIN, with the connection's deadlines, and return when it is
// closed, as net.Conn's Read and Write do.

// sock reads and writes a connection's socket with raw system calls. The
// read half belongs to the goroutine that reads requests, the write half
// to the one that sends replies: the two may run at once.
type sock struct {
	raw syscall.RawConn // nil: the connection has no socket of its own (TLS)

	rbuf   []byte
	rn     int
	rerr   syscall.Errno
	readFn func(fd uintptr) bool

	wbuf    []byte
	wn      int
	werr    syscall.Errno
	writeFn func(fd uintptr) bool
}

func (s *sock) init(raw syscall.RawConn) {
	s.raw = raw
	s.readFn = s.readFd
	s.writeFn = s.writeFd
}

// readFd is RawConn.Read's function: false asks it to wait for data.
func (s *sock) readFd(fd uintptr) bool {
	n, e := readRaw(fd, s.rbuf)
	if e == syscall.EAGAIN {
		return false
	}
	s.rn, s.rerr = n, e
	return true
}

// Read reads as net.Conn's Read does: io.EOF once the client has closed.
func (s *sock) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.rbuf, s.rn, s.rerr = p, 0, 0
	err := s.raw.Read(s.readFn)
	s.rbuf = nil
	switch {
	case err != nil:
		return 0, err
	case s.rerr != 0:
		return 0, os.NewSyscallError("read", s.rerr)
	case s.rn == 0:
		return 0, io.EOF
	}
	return s.rn, nil
}

// writeFd is RawConn.Write's function: false asks it to wait for room.
func (s *sock) writeFd(fd uintptr) bool {
	n, e := writeRaw(fd, s.wbuf)
	s.wbuf = s.wbuf[n:]
	s.wn += n
	if e == syscall.EAGAIN {
		return false
	}
	s.werr = e
	return true
}

// Write writes all of p, waiting for room as net.Conn's Write does.
func (s *sock) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.wbuf, s.wn, s.werr = p, 0, 0
	err := s.raw.Write(s.writeFn)
	s.wbuf = nil
	switch {
	case err != nil:
		return s.wn, err
	case s.werr != 0:
		return s.wn, os.NewSyscallError("write", s.werr)
	}
	return s.wn, nil
}

// readRaw makes one read(2) of fd into p (retried after a signal).
func readRaw(fd uintptr, p []byte) (int, syscall.Errno) {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
		if e != syscall.EINTR {
			if e != 0 {
				return 0, e
			}
			return int(n), 0
		}
	}
}

// writeRaw writes p to fd until it is all written, the socket is full
// (EAGAIN) or an error stops it; it returns what was written.
func writeRaw(fd uintptr, p []byte) (int, syscall.Errno) {
	done := 0
	for done < len(p) {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[done])), uintptr(len(p)-done))
		switch {
		case e == syscall.EINTR:
		case e != 0:
			return done, e
		case n == 0:
			// Not seen of a socket; net's Write fails here too.
			return done, syscall.EIO
		default:
			done += int(n)
		}
	}
	return done, 0
}
