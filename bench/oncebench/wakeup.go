package main

// Waiter wake-up latency: how long callers waiting for a key's answer take
// to get it once it is completed, on oncekv (blocked in ONCE.CLAIM … WAIT)
// and on the baseline (GET polling). Redis's own push paths, PUBLISH and
// BLPOP, are measured as a reference in wakeref.go.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// waitStatus polls ONCE.STATUS until n callers wait on key.
func waitStatus(c *conn, key string, n int, deadline time.Time) error {
	for {
		r, err := c.Do("ONCE.STATUS", key)
		if err != nil {
			return err
		}
		w, ok := r.Field("waiters")
		if !ok || w.Kind != ':' {
			return fmt.Errorf("ONCE.STATUS %s: %v", key, r)
		}
		if w.N == int64(n) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ONCE.STATUS %s: %d waiters after the timeout, want %d", key, w.N, n)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// unblock makes blocked reads on ws fail at once (after an error, so that
// the round's goroutines end; the connections are then unusable).
func unblock(ws []*conn) {
	for _, w := range ws {
		_ = w.SetDeadline(time.Now())
	}
}

// onceWakeRound measures one round on oncekv: run claims key, every
// connection of ws sends ONCE.CLAIM key WAIT 0 and blocks (checked with
// ONCE.STATUS), then run completes it. It returns, per waiter, the time
// from just before COMPLETE was written to the arrival of its ["done", …],
// as seen by the reader named (readerEpoll or readerGoroutines).
func onceWakeRound(run *conn, ws []*conn, key, answer string, timeout time.Duration, reader string) ([]time.Duration, error) {
	tok, err := onceClaim(run, key)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for _, w := range ws {
		if err := w.SetDeadline(deadline); err != nil {
			return nil, err
		}
		if err := w.Send("ONCE.CLAIM", key, "WAIT", "0"); err != nil {
			return nil, err
		}
	}
	if err := waitStatus(run, key, len(ws), deadline); err != nil {
		return nil, err
	}
	lat, err := timedWake(ws, doneReply(answer), reader, deadline, func() error {
		return onceComplete(run, key, tok, answer)
	})
	if err != nil {
		return nil, fmt.Errorf("waiters on %s: %w", key, err)
	}
	return lat, nil
}

// timedWake starts the reader named on ws, which are all blocked waiting
// for the reply want, runs fire (the one command that wakes them) and
// returns, per connection, the time from just before fire to the arrival
// of its reply.
func timedWake(ws []*conn, want []byte, reader string, deadline time.Time, fire func() error) ([]time.Duration, error) {
	start := startGoroutineAwait
	if reader == readerEpoll {
		start = startEpollAwait
	}
	await, err := start(ws, want, deadline)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := fire(); err != nil {
		await.cancel()
		return nil, err
	}
	arrivals, err := await.wait()
	if err != nil {
		return nil, err
	}
	lat := make([]time.Duration, len(ws))
	for i, a := range arrivals {
		lat[i] = a.Sub(t0)
	}
	return lat, nil
}

// The readers of the waiters' replies.
const (
	readerEpoll      = "epoll"
	readerGoroutines = "goroutines"
)

// doneReply is the RESP2 reply ["done", answer] as written on the wire.
func doneReply(answer string) []byte {
	return fmt.Appendf(nil, "*2\r\n$4\r\ndone\r\n$%d\r\n%s\r\n", len(answer), answer)
}

// await collects one reply per connection and the time each arrived.
type await struct {
	wait   func() ([]time.Time, error) // after the replies are in
	cancel func()                      // instead of wait, after an error
}

// startGoroutineAwait reads each connection's reply in a goroutine of
// its own, blocked in a read: arrival is when that goroutine got it, so
// with many waiters the Go scheduler's delay counts too.
func startGoroutineAwait(ws []*conn, want []byte, deadline time.Time) (await, error) {
	arrivals := make([]time.Time, len(ws))
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() {
			b, err := w.ReadRaw(len(want))
			arrivals[i] = time.Now()
			if err == nil && string(b) != string(want) {
				err = fmt.Errorf("reply %q, want %q", b, want)
			}
			errs[i] = err
		})
	}
	return await{
		wait: func() ([]time.Time, error) {
			wg.Wait()
			return arrivals, errors.Join(errs...)
		},
		cancel: func() {
			unblock(ws)
			wg.Wait()
		},
	}, nil
}

// pollWakeRound is onceWakeRound for the baseline: run claims key (INCR +
// SET NX PX); every connection of ws, starting at a random phase, polls
// GET key, sleeping every between polls, until it reads the answer; once
// every poller has seen the key running, and after a random fraction of
// every, run completes it with the CAS script. Latency is from just before the EVALSHA was written to the
// arrival of the first GET reply holding the answer.
func pollWakeRound(run *conn, ws []*conn, s scripts, fence, key, answer string, every, timeout time.Duration) ([]time.Duration, error) {
	tok, err := baseClaim(run, fence, key)
	if err != nil {
		return nil, err
	}
	if tok == "" {
		return nil, fmt.Errorf("SET %s NX: taken, want a fresh key", key)
	}
	deadline := time.Now().Add(timeout)
	arrivals := make([]time.Time, len(ws))
	errs := make([]error, len(ws))
	var wg, ready sync.WaitGroup
	var abort atomic.Bool
	ready.Add(len(ws))
	for i, w := range ws {
		wg.Go(func() {
			seen := false
			defer func() {
				if !seen {
					ready.Done()
				}
			}()
			time.Sleep(rand.N(every))
			for {
				r, err := w.Do("GET", key)
				now := time.Now()
				if err != nil {
					errs[i] = err
					return
				}
				switch {
				case r.Kind == '$' && r.Str == donePrefix+answer:
					arrivals[i] = now
					if !seen {
						errs[i] = fmt.Errorf("poller on %s: done before it saw the key running", key)
					}
					return
				case r.Kind == '$' && strings.HasPrefix(r.Str, runningPrefix):
				default:
					errs[i] = fmt.Errorf("poller on %s: GET %v", key, r)
					return
				}
				if !seen {
					seen = true
					ready.Done()
				}
				if now.After(deadline) || abort.Load() {
					errs[i] = fmt.Errorf("poller on %s: no answer before the timeout", key)
					return
				}
				time.Sleep(every)
			}
		})
	}
	ready.Wait()
	// Every poller has just polled or is sleeping; a random pause puts the
	// completion at a random point of the polling period, as in real use,
	// rather than right after a poll.
	time.Sleep(rand.N(every))
	t0 := time.Now()
	ok, err := baseComplete(run, s, key, tok, answer)
	if err == nil && !ok {
		err = fmt.Errorf("complete script on %s: stale, want 1", key)
	}
	if err != nil {
		abort.Store(true)
		wg.Wait()
		return nil, err
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	lat := make([]time.Duration, len(ws))
	for i, a := range arrivals {
		lat[i] = a.Sub(t0)
	}
	return lat, nil
}

// percentile returns the nearest-rank p-quantile (0 < p ≤ 1) of d, which
// it sorts.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := int(math.Ceil(float64(len(d))*p)) - 1
	return d[min(max(i, 0), len(d)-1)]
}
