package main

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
)

// startEpollAwait waits for the replies of all ws in one goroutine, on
// one epoll instance: arrival is when epoll_wait returned with the
// connection readable, before any of the replies it reported is read, so
// the figure is the server's delivery time and not the client's cost of
// waking many goroutines. It reads the descriptors directly; nothing may
// be buffered in the connections (they sent their commands and read
// nothing since).
func startEpollAwait(ws []*conn, want []byte, deadline time.Time) (await, error) {
	fds := make([]int, len(ws))
	for i, w := range ws {
		if w.BufferedIn() != 0 {
			return await{}, fmt.Errorf("waiter %d: %d bytes already buffered", i, w.BufferedIn())
		}
		rc, err := w.SyscallConn()
		if err != nil {
			return await{}, err
		}
		if err := rc.Control(func(fd uintptr) { fds[i] = int(fd) }); err != nil {
			return await{}, err
		}
	}
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return await{}, fmt.Errorf("epoll_create1: %w", err)
	}
	for i, fd := range fds {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(i)}
		if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			syscall.Close(ep)
			return await{}, fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	var stop atomic.Bool
	ready := make(chan struct{})
	done := make(chan struct{})
	arrivals := make([]time.Time, len(ws))
	var result error
	go func() {
		defer close(done)
		defer syscall.Close(ep)
		bufs := make([][]byte, len(ws))
		events := make([]syscall.EpollEvent, 1024)
		chunk := make([]byte, 4096)
		left := len(ws)
		close(ready)
		for left > 0 {
			if stop.Load() {
				result = errors.New("cancelled")
				return
			}
			if time.Now().After(deadline) {
				result = fmt.Errorf("%d of %d replies missing at the deadline", left, len(ws))
				return
			}
			n, err := syscall.EpollWait(ep, events, 50)
			now := time.Now()
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				result = fmt.Errorf("epoll_wait: %w", err)
				return
			}
			for _, ev := range events[:n] {
				i := int(ev.Fd)
				if arrivals[i].IsZero() {
					arrivals[i] = now
				}
				for {
					m, err := syscall.Read(fds[i], chunk)
					if err == syscall.EAGAIN || err == syscall.EINTR {
						break
					}
					if err != nil || m == 0 {
						result = fmt.Errorf("waiter %d: read: %v (%d bytes)", i, err, m)
						return
					}
					bufs[i] = append(bufs[i], chunk[:m]...)
					if len(bufs[i]) >= len(want) {
						break
					}
				}
				if len(bufs[i]) < len(want) {
					continue
				}
				if !bytes.Equal(bufs[i], want) {
					result = fmt.Errorf("waiter %d: reply %q, want %q", i, bufs[i], want)
					return
				}
				_ = syscall.EpollCtl(ep, syscall.EPOLL_CTL_DEL, fds[i], nil)
				left--
			}
		}
	}()
	<-ready
	return await{
		wait: func() ([]time.Time, error) {
			<-done
			return arrivals, result
		},
		cancel: func() {
			stop.Store(true)
			<-done
		},
	}, nil
}
