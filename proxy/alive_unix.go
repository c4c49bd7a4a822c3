//go:build unix

package proxy

import (
	"errors"
	"net"
	"syscall"
)

// alive peeks at an idle connection's socket without blocking: a closed
// peer (EOF), an error, or bytes nobody asked for (the connection is out
// of step) mean it cannot be used.
func alive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	ok = true
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Nothing to read is the one healthy answer; EOF (0 bytes), an
		// error or unsolicited bytes are not.
		ok = errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK)
		return true // done: never wait for readiness
	})
	return ok && err == nil
}
