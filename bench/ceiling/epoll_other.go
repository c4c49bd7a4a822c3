//go:build !linux

package main

import (
	"errors"
	"net"
	"os"
)

// serveEpoll needs Linux's epoll.
func (s *server) serveEpoll(*net.TCPListener) error {
	return errors.New("-mode epoll needs Linux")
}

// fdatasync falls back to fsync where there is no fdatasync.
func fdatasync(f *os.File) error { return f.Sync() }
