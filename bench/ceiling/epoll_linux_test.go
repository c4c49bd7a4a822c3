//go:build linux

package main

import "testing"

// TestEpollAlwaysRepliesAfterSync is TestAlwaysRepliesAfterSync against
// the epoll loop. The loop never stops (a closed listener is fatal to it),
// so the test leaves it running, idle, until the test binary exits.
func TestEpollAlwaysRepliesAfterSync(t *testing.T) {
	for _, raw := range []bool{false, true} {
		t.Run(ioName(raw), func(t *testing.T) {
			s, ln, began, release := heldSyncServer(t)
			s.raw = raw
			go s.serveEpoll(ln)
			checkRepliesAfterSync(t, ln.Addr().String(), began, release)
		})
	}
}
