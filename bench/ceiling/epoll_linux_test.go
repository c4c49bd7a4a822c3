//go:build linux

package main

import (
	"net"
	"testing"
)

// TestEpollAlwaysRepliesAfterSync is TestAlwaysRepliesAfterSync against
// the epoll loop. The loop never stops (a closed listener is fatal to it),
// so the test leaves it running, idle, until the test binary exits.
func TestEpollAlwaysRepliesAfterSync(t *testing.T) {
	release := make(chan struct{})
	began := make(chan struct{}, 16)
	s := newServer(testAOF(t), true, func() error {
		began <- struct{}{}
		<-release
		return nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.serveEpoll(ln.(*net.TCPListener))
	checkRepliesAfterSync(t, ln.Addr().String(), began, release)
}
