// Package rawio reads and writes sockets and files with system calls the
// Go scheduler is not told of (syscall.RawSyscall), for the server's hot
// paths: a client's requests and replies, and the log's records.
//
// Go tells its scheduler of every other system call: the call marks its
// processor as in a system call, so that another thread can take the
// processor over should the call block, and it wakes the runtime's
// monitor thread (sysmon) if that sleeps. The monitor sleeps whenever
// every processor is idle, which on a server waiting for its clients is
// most moments; once woken, it polls every 20 µs for the next
// millisecond. On the 2-core development machine, under redis-benchmark's
// unpipelined PINGs (-c 50), that was 2,800 of its sleeps a second, a
// tenth of the server's CPU, and 58,000 context switches in 5 s against
// 36,000 without, on the cores the clients need.
//
// A socket that Go's poller watches is non-blocking: a read or write of it
// copies what the socket holds or takes, or fails with EAGAIN at once, so
// it needs none of that. Socket does it inside RawConn.Read and Write,
// which wait on the poller on EAGAIN, with the connection's deadlines, and
// return once it is closed, as net.Conn's Read and Write do.
//
// A write to a file can block (the kernel throttling a process with many
// dirty pages, a journal commit in the way). WriteFile holds its processor
// until it returns, where Go would hand the processor to another thread:
// the other processors serve on, and a garbage collection's stop waits for
// the write. Redis's event loop makes the same write and waits for it, with
// every client. It is for the log's record, one write per round.
//
// Unix only (RawSyscall's system call numbers).
package rawio

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// Socket reads and writes a connection's socket. Its read half belongs to
// one goroutine and its write half to one goroutine: the two may run at
// once. The zero Socket is unusable: call Init.
type Socket struct {
	raw syscall.RawConn

	rbuf   []byte
	rn     int
	rerr   syscall.Errno
	readFn func(fd uintptr) bool

	wbuf    []byte
	wn      int
	werr    syscall.Errno
	writeFn func(fd uintptr) bool
}

// Init makes s read and write through raw, a socket's RawConn.
func (s *Socket) Init(raw syscall.RawConn) {
	s.raw = raw
	s.readFn = s.readFd
	s.writeFn = s.writeFd
}

// Ready reports whether Init was called.
func (s *Socket) Ready() bool { return s.raw != nil }

// RawConn is the RawConn given to Init.
func (s *Socket) RawConn() syscall.RawConn { return s.raw }

// readFd is RawConn.Read's function: false asks it to wait for data.
func (s *Socket) readFd(fd uintptr) bool {
	n, e := ReadFd(fd, s.rbuf)
	if e == syscall.EAGAIN {
		return false
	}
	s.rn, s.rerr = n, e
	return true
}

// Read reads as net.Conn's Read does: io.EOF once the peer has closed.
func (s *Socket) Read(p []byte) (int, error) {
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
func (s *Socket) writeFd(fd uintptr) bool {
	n, e := WriteFd(fd, s.wbuf)
	s.wbuf = s.wbuf[n:]
	s.wn += n
	if e == syscall.EAGAIN {
		return false
	}
	s.werr = e
	return true
}

// Write writes all of p, waiting for room as net.Conn's Write does.
func (s *Socket) Write(p []byte) (int, error) {
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

// ReadFd makes one read(2) of fd into p (made again after a signal).
func ReadFd(fd uintptr, p []byte) (int, syscall.Errno) {
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

// WriteFd writes p to fd until it is all written, the descriptor takes no
// more now (EAGAIN) or an error stops it; it returns what was written.
func WriteFd(fd uintptr, p []byte) (int, syscall.Errno) {
	done := 0
	for done < len(p) {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[done])), uintptr(len(p)-done))
		switch {
		case e == syscall.EINTR:
		case e != 0:
			return done, e
		case n == 0:
			// Not seen of a socket or a file; os.File's Write fails too.
			return done, syscall.EIO
		default:
			done += int(n)
		}
	}
	return done, 0
}

// WriteFile writes all of b to f at its offset, as f.Write does, with raw
// system calls (see the package's comment for what a blocking one costs).
func WriteFile(f *os.File, b []byte) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return f.Write(b)
	}
	done := 0
	var errno syscall.Errno
	err = rc.Write(func(fd uintptr) bool {
		done, errno = WriteFd(fd, b)
		return true
	})
	if err != nil {
		// The file is closed (the function was not called): os.File's
		// Write says so as its callers expect.
		return f.Write(b)
	}
	if errno != 0 {
		return done, &os.PathError{Op: "write", Path: f.Name(), Err: errno}
	}
	return done, nil
}
