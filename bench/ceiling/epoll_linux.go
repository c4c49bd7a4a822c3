//go:build linux

package main

import (
	"net"
	"os"
	"runtime"
	"syscall"

	"github.com/oncekv/oncekv/internal/rawio"
)

// pollConn is a connection owned by the event loop. f keeps the fd open
// (and closes it); the loop uses the raw fd with non-blocking syscalls.
type pollConn struct {
	conn
	f        *os.File
	fd       int
	pollsOut bool // EPOLLOUT is on: c.out did not fit in the socket
}

// serveEpoll accepts on a goroutine and serves every connection from one
// event loop, level-triggered.
func (s *server) serveEpoll(ln *net.TCPListener) error {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	accepted := make(chan *os.File, 256)
	go func() {
		for {
			tc, err := ln.AcceptTCP()
			if err != nil {
				fatal(err)
			}
			f, err := tc.File() // a dup of the socket, not tied to Go's poller
			if err != nil {
				fatal(err)
			}
			tc.Close()
			accepted <- f
		}
	}()

	runtime.LockOSThread()
	conns := make(map[int]*pollConn)
	events := make([]syscall.EpollEvent, 512)
	var ready, done []*pollConn
	ctl := func(c *pollConn, op int, flags uint32) {
		ev := syscall.EpollEvent{Events: flags, Fd: int32(c.fd)}
		if err := syscall.EpollCtl(epfd, op, c.fd, &ev); err != nil {
			fatal(err)
		}
	}
	for {
	drain:
		for {
			select {
			case f := <-accepted:
				c := &pollConn{conn: *newConn(), f: f, fd: int(f.Fd())}
				if err := syscall.SetNonblock(c.fd, true); err != nil { // f.Fd made it blocking
					fatal(err)
				}
				conns[c.fd] = c
				ctl(c, syscall.EPOLL_CTL_ADD, syscall.EPOLLIN)
			default:
				break drain
			}
		}

		n, err := syscall.EpollWait(epfd, events, 10)
		if err != nil && err != syscall.EINTR {
			return err
		}
		s.mu.Lock()
		for _, ev := range events[:max(n, 0)] {
			c := conns[int(ev.Fd)]
			if ev.Events&syscall.EPOLLOUT != 0 {
				ready = append(ready, c) // the socket has room for c.out again
			}
			if ev.Events&^syscall.EPOLLOUT == 0 {
				continue
			}
			m, err := readFd(s.raw, c.fd, c.room())
			switch {
			case err == syscall.EAGAIN:
				continue
			case m <= 0:
				done = append(done, c) // EOF or error
				continue
			}
			c.in = c.in[:len(c.in)+m]
			if err := s.process(&c.conn); err != nil {
				done = append(done, c) // its earlier replies are dropped
				continue
			}
			if len(c.out) > 0 && !c.pollsOut {
				ready = append(ready, c)
			}
		}
		s.flushLog() // one write(2) for every connection's writes
		if s.always && s.durable < s.written {
			if err := s.sync(); err != nil { // one fsync for them too
				fatal(err)
			}
			s.durable = s.written
		}
		s.mu.Unlock()

		for _, c := range ready {
			m, err := writeFd(s.raw, c.fd, c.out)
			c.out = c.out[:copy(c.out, c.out[m:])]
			if err != nil && err != syscall.EAGAIN {
				done = append(done, c)
			}
			if pending := len(c.out) > 0; pending != c.pollsOut {
				c.pollsOut = pending
				flags := uint32(syscall.EPOLLIN)
				if pending {
					flags |= syscall.EPOLLOUT
				}
				ctl(c, syscall.EPOLL_CTL_MOD, flags)
			}
		}
		for _, c := range done {
			if conns[c.fd] == c {
				delete(conns, c.fd)
				syscall.EpollCtl(epfd, syscall.EPOLL_CTL_DEL, c.fd, nil)
				c.f.Close()
			}
		}
		ready, done = ready[:0], done[:0]
	}
}

// readFd makes one read(2), raw if raw is set.
func readFd(raw bool, fd int, p []byte) (int, error) {
	if !raw {
		return syscall.Read(fd, p)
	}
	n, e := rawio.ReadFd(uintptr(fd), p)
	if e != 0 {
		return -1, e
	}
	return n, nil
}

// writeFd writes p until it is all written, the socket is full (EAGAIN)
// or an error stops it, raw if raw is set; it returns what was written.
func writeFd(raw bool, fd int, p []byte) (int, error) {
	if raw {
		n, e := rawio.WriteFd(uintptr(fd), p)
		if e != 0 {
			return n, e
		}
		return n, nil
	}
	done := 0
	for done < len(p) {
		m, err := syscall.Write(fd, p[done:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return done, err
		}
		done += m
	}
	return done, nil
}

// fdatasync is what Redis calls to sync its AOF on Linux.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
