package main

// The floors: what this machine allows any server, measured the way the
// servers are.
//
//   - Cycles: PING + PING on each server (newPingSystem, newGoPingSystem),
//     the round trips of a claim+complete cycle without its work.
//   - Wake-ups: no server at all. This process accepts the N waiters'
//     connections itself, and "completing" is writing the reply to each of
//     them, spread over GOMAXPROCS goroutines: the kernel's cost of N
//     loopback deliveries, and the reader's, which every server's figure
//     includes too.
//   - Wake-ups with no network either: N goroutines of this process
//     blocked on one channel, woken by closing it (goroutineWakeRound).
//     What the machine's scheduler alone takes to run N waiters once
//     their answer exists: the least that waiters which are goroutines
//     (a client library's callers, a server's connections) can cost.

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"
)

// The names of the floor systems of the cycle benchmark.
const (
	floorOncekv = "oncekv: PING + PING (floor)"
	floorRedis  = "redis: PING + PING (floor)"
)

// loopback holds the connections of the wake-up floor: ws are the
// waiters' ends, dialled as the servers' waiters are, and peers[i] is the
// end this process accepted for ws[i].
type loopback struct {
	ln    net.Listener
	ws    []*conn
	peers []net.Conn
}

// openLoopback listens on a free 127.0.0.1 port and connects n waiters to
// it, pairing each with the connection accepted for it.
func openLoopback(n int) (*loopback, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &loopback{ln: ln}
	for range n {
		w, err := dial(ln.Addr().String())
		if err != nil {
			l.close()
			return nil, err
		}
		l.ws = append(l.ws, w)
		// One dial at a time: the connection accepted next is w's.
		p, err := ln.Accept()
		if err != nil {
			l.close()
			return nil, err
		}
		l.peers = append(l.peers, p)
		if p.RemoteAddr().String() != w.LocalAddr().String() {
			l.close()
			return nil, fmt.Errorf("loopback: accepted %v, want %v", p.RemoteAddr(), w.LocalAddr())
		}
	}
	return l, nil
}

func (l *loopback) close() {
	closeAll(l.ws)
	for _, p := range l.peers {
		_ = p.Close()
	}
	_ = l.ln.Close()
}

// loopbackWakeRound measures one round of the wake-up floor with the
// first n waiters: the time from just before the first write to the
// arrival of each waiter's reply (ONCE's ["done", answer], so that the
// bytes are the same), as seen by the reader named.
func loopbackWakeRound(l *loopback, n int, answer string, timeout time.Duration, reader string) ([]time.Duration, error) {
	ws, peers := l.ws[:n], l.peers[:n]
	deadline := time.Now().Add(timeout)
	for i := range ws {
		if err := ws[i].SetDeadline(deadline); err != nil {
			return nil, err
		}
		if err := peers[i].SetDeadline(deadline); err != nil {
			return nil, err
		}
	}
	want := doneReply(answer)
	lat, err := timedWake(ws, want, reader, deadline, func() error { return writeAll(peers, want) })
	if err != nil {
		return nil, fmt.Errorf("loopback waiters: %w", err)
	}
	return lat, nil
}

// writeAll writes b to every connection of cs, from GOMAXPROCS goroutines
// that each take an equal share of them.
func writeAll(cs []net.Conn, b []byte) error {
	k := min(runtime.GOMAXPROCS(0), len(cs))
	errs := make([]error, k)
	var wg sync.WaitGroup
	for g := range k {
		wg.Go(func() {
			for i := g; i < len(cs); i += k {
				if _, err := cs[i].Write(b); err != nil {
					errs[g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// goroutineSettle is how long the in-process floor's goroutines are given
// to block before the channel is closed.
const goroutineSettle = 20 * time.Millisecond

// goroutineWakeRound measures one round of the in-process floor: n
// goroutines block receiving from one channel, and closing it wakes them
// all. It returns, per goroutine, the time from just before the close to
// when the goroutine ran again, read from the monotonic clock. The
// goroutines are given settle to block first (a goroutine not yet blocked
// would only be woken sooner).
func goroutineWakeRound(n int, settle time.Duration) []time.Duration {
	ch := make(chan struct{})
	lat := make([]time.Duration, n)
	var ready, done sync.WaitGroup
	var t0 time.Time // written before the close, read after it
	for i := range lat {
		ready.Add(1)
		done.Go(func() {
			ready.Done()
			<-ch
			lat[i] = time.Since(t0)
		})
	}
	ready.Wait()
	time.Sleep(settle)
	t0 = time.Now()
	close(ch)
	done.Wait()
	return lat
}
