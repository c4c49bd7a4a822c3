//go:build !linux

package main

import (
	"errors"
	"net"
)

// serveEpoll needs Linux's epoll.
func (s *server) serveEpoll(*net.TCPListener) error {
	return errors.New("-mode epoll needs Linux")
}
