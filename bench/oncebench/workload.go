package main

// The two ways of running a function once per key that the benchmark
// compares, and the measurements made with them.
//
// oncekv:
//
//	ONCE.CLAIM k LEASE 30000                 → ["claimed", token]
//	ONCE.COMPLETE k token answer KEEP 60000  → +OK
//	waiters: ONCE.CLAIM k WAIT 0             → ["done", answer], pushed
//
// baseline on real Redis (what users build without ONCE), with the same
// fencing (tokens only grow, a stale runner cannot overwrite):
//
//	INCR <fence>                              → token (one counter for all keys)
//	SET k "running:<token>" NX PX 30000       → OK (claimed) or nil (taken)
//	EVALSHA <casScript> 1 k token answer 60000 → 1 (completed) or 0 (stale)
//	waiters: GET k every 10 ms until it reads "done:<answer>"
//
// and, as an extra row, the same with the claim done in one script
// (claimScript: GET, INCR, SET … PX in one round trip), so that the cycle
// takes two round trips as ONCE's does.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	leaseMs = "30000"
	keepMs  = "60000"

	runningPrefix = "running:"
	donePrefix    = "done:"
)

// casScript completes a baseline claim: if the key still holds the
// caller's token, it replaces the value with the answer and sets its keep
// (SET … PX: the value and the PEXPIRE in one call) and returns 1; else it
// changes nothing and returns 0 (stale: completed, lapsed or taken over).
const casScript = `-- KEYS[1] key; ARGV[1] token, ARGV[2] answer, ARGV[3] keep ms
if redis.call('GET', KEYS[1]) == 'running:' .. ARGV[1] then
  redis.call('SET', KEYS[1], 'done:' .. ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
`

// claimScript claims a baseline key in one round trip: the INCR and the
// SET NX PX of the three-round-trip baseline, answering as ONCE.CLAIM does.
const claimScript = `-- KEYS[1] key, KEYS[2] fence counter; ARGV[1] lease ms
local v = redis.call('GET', KEYS[1])
if not v then
  local tok = redis.call('INCR', KEYS[2])
  redis.call('SET', KEYS[1], 'running:' .. tok, 'PX', ARGV[1])
  return {'claimed', tok}
end
if string.sub(v, 1, 5) == 'done:' then
  return {'done', string.sub(v, 6)}
end
return {'running', redis.call('PTTL', KEYS[1])}
`

// scripts are the baseline's Lua scripts as loaded on a server.
type scripts struct {
	casSHA, claimSHA string
}

// loadScripts loads the baseline scripts with SCRIPT LOAD.
func loadScripts(c *conn) (scripts, error) {
	var s scripts
	for _, p := range []struct {
		sha *string
		src string
	}{{&s.casSHA, casScript}, {&s.claimSHA, claimScript}} {
		r, err := c.do("SCRIPT", "LOAD", p.src)
		if err != nil {
			return s, err
		}
		if r.kind != '$' {
			return s, fmt.Errorf("SCRIPT LOAD: %v", r)
		}
		*p.sha = r.str
	}
	return s, nil
}

// evalsha runs a loaded script, falling back to EVAL if the server lost
// it (SCRIPT FLUSH, restart).
func evalsha(c *conn, sha, src string, args ...string) (reply, error) {
	r, err := c.do(append([]string{"EVALSHA", sha}, args...)...)
	if err == nil && r.isErr() && strings.HasPrefix(r.str, "NOSCRIPT") {
		return c.do(append([]string{"EVAL", src}, args...)...)
	}
	return r, err
}

// system is one way of running a claim+complete cycle.
type system struct {
	name   string
	rtts   int // round trips per cycle
	addr   string
	prefix string // key prefix, unique per run
	cycle  func(c *conn, key, answer string) error
}

// onceClaim runs ONCE.CLAIM k LEASE 30000 and returns the token.
func onceClaim(c *conn, key string) (string, error) {
	r, err := c.do("ONCE.CLAIM", key, "LEASE", leaseMs)
	if err != nil {
		return "", err
	}
	tok, ok := r.pair("claimed")
	if !ok || tok.kind != ':' {
		return "", fmt.Errorf("ONCE.CLAIM %s: %v, want [claimed, token]", key, r)
	}
	return strconv.FormatInt(tok.n, 10), nil
}

// onceComplete runs ONCE.COMPLETE k tok answer KEEP 60000.
func onceComplete(c *conn, key, tok, answer string) error {
	r, err := c.do("ONCE.COMPLETE", key, tok, answer, "KEEP", keepMs)
	if err != nil {
		return err
	}
	if r.kind != '+' || r.str != "OK" {
		return fmt.Errorf("ONCE.COMPLETE %s %s: %v, want OK", key, tok, r)
	}
	return nil
}

// onceCycle claims a fresh key and completes it on oncekv.
func onceCycle(c *conn, key, answer string) error {
	tok, err := onceClaim(c, key)
	if err != nil {
		return err
	}
	return onceComplete(c, key, tok, answer)
}

// baseClaim claims a baseline key: INCR fence, SET k running:<tok> NX PX.
// It returns "" if the key was taken.
func baseClaim(c *conn, fence, key string) (string, error) {
	r, err := c.do("INCR", fence)
	if err != nil {
		return "", err
	}
	if r.kind != ':' {
		return "", fmt.Errorf("INCR %s: %v", fence, r)
	}
	tok := strconv.FormatInt(r.n, 10)
	r, err = c.do("SET", key, runningPrefix+tok, "NX", "PX", leaseMs)
	if err != nil {
		return "", err
	}
	switch {
	case r.kind == '_':
		return "", nil
	case r.kind != '+':
		return "", fmt.Errorf("SET %s NX: %v", key, r)
	}
	return tok, nil
}

// baseComplete runs the compare-and-set script; ok is false when stale.
func baseComplete(c *conn, s scripts, key, tok, answer string) (ok bool, err error) {
	r, err := evalsha(c, s.casSHA, casScript, "1", key, tok, answer, keepMs)
	if err != nil {
		return false, err
	}
	if r.kind != ':' {
		return false, fmt.Errorf("complete script on %s: %v", key, r)
	}
	return r.n == 1, nil
}

// luaClaim claims a baseline key with claimScript; the reply is shaped as
// ONCE.CLAIM's.
func luaClaim(c *conn, s scripts, fence, key string) (reply, error) {
	return evalsha(c, s.claimSHA, claimScript, "2", key, fence, leaseMs)
}

func newOnceSystem(addr, prefix string) system {
	return system{name: "oncekv: ONCE.CLAIM + ONCE.COMPLETE", rtts: 2, addr: addr, prefix: prefix, cycle: onceCycle}
}

func newBaseSystem(addr, prefix string, s scripts) system {
	fence := prefix + "fence"
	return system{
		name: "redis baseline: INCR + SET NX PX + EVALSHA CAS", rtts: 3, addr: addr, prefix: prefix,
		cycle: func(c *conn, key, answer string) error {
			tok, err := baseClaim(c, fence, key)
			if err != nil {
				return err
			}
			if tok == "" {
				return fmt.Errorf("SET %s NX: taken, want a fresh key", key)
			}
			ok, err := baseComplete(c, s, key, tok, answer)
			if err == nil && !ok {
				err = fmt.Errorf("complete script on %s: stale, want 1", key)
			}
			return err
		},
	}
}

func newLuaClaimSystem(addr, prefix string, s scripts) system {
	fence := prefix + "fence"
	return system{
		name: "redis, claim in one script (extra): EVALSHA claim + EVALSHA CAS", rtts: 2, addr: addr, prefix: prefix,
		cycle: func(c *conn, key, answer string) error {
			r, err := luaClaim(c, s, fence, key)
			if err != nil {
				return err
			}
			tok, ok := r.pair("claimed")
			if !ok || tok.kind != ':' {
				return fmt.Errorf("claim script on %s: %v, want [claimed, token]", key, r)
			}
			done, err := baseComplete(c, s, key, strconv.FormatInt(tok.n, 10), answer)
			if err == nil && !done {
				err = fmt.Errorf("complete script on %s: stale, want 1", key)
			}
			return err
		},
	}
}

// cycleResult is one timed run of cycles.
type cycleResult struct {
	cycles  int64
	elapsed time.Duration
	lat     []time.Duration // one per cycle
}

func (r cycleResult) rate() float64 { return float64(r.cycles) / r.elapsed.Seconds() }

// runCycles runs clients connections, each looping claim+complete on fresh
// keys, for d. Connections are opened before the clock starts; cycles that
// end after d are not counted.
func runCycles(s system, clients int, d time.Duration, tag string, answer string) (cycleResult, error) {
	conns := make([]*conn, 0, clients)
	defer func() {
		for _, c := range conns {
			_ = c.close()
		}
	}()
	for range clients {
		c, err := dial(s.addr)
		if err != nil {
			return cycleResult{}, err
		}
		conns = append(conns, c)
	}
	var (
		stop  atomic.Bool
		count atomic.Int64
		wg    sync.WaitGroup
		start = make(chan struct{})
		lats  = make([][]time.Duration, clients)
		errs  = make([]error, clients)
	)
	for i, c := range conns {
		wg.Go(func() {
			base := s.prefix + tag + ":" + strconv.Itoa(i) + ":"
			lat := make([]time.Duration, 0, 1024)
			<-start
			for n := 0; !stop.Load(); n++ {
				t := time.Now()
				if err := s.cycle(c, base+strconv.Itoa(n), answer); err != nil {
					errs[i] = err
					stop.Store(true)
					break
				}
				if stop.Load() {
					break
				}
				lat = append(lat, time.Since(t))
				count.Add(1)
			}
			lats[i] = lat
		})
	}
	t0 := time.Now()
	close(start)
	time.Sleep(d)
	stop.Store(true)
	elapsed := time.Since(t0)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return cycleResult{}, err
	}
	return cycleResult{cycles: count.Load(), elapsed: elapsed, lat: slices.Concat(lats...)}, nil
}

// waitStatus polls ONCE.STATUS until n callers wait on key.
func waitStatus(c *conn, key string, n int, deadline time.Time) error {
	for {
		r, err := c.do("ONCE.STATUS", key)
		if err != nil {
			return err
		}
		w, ok := r.field("waiters")
		if !ok || w.kind != ':' {
			return fmt.Errorf("ONCE.STATUS %s: %v", key, r)
		}
		if w.n == int64(n) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ONCE.STATUS %s: %d waiters after the timeout, want %d", key, w.n, n)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// unblock makes blocked reads on ws fail at once (after an error, so that
// the round's goroutines end; the connections are then unusable).
func unblock(ws []*conn) {
	for _, w := range ws {
		_ = w.nc.SetDeadline(time.Now())
	}
}

// onceWakeRound measures one round on oncekv: run claims key, every
// connection of ws sends ONCE.CLAIM key WAIT 0 and blocks (checked with
// ONCE.STATUS), then run completes it. It returns, per waiter, the time
// from just before COMPLETE was written to the arrival of its ["done", …].
func onceWakeRound(run *conn, ws []*conn, key, answer string, timeout time.Duration) ([]time.Duration, error) {
	tok, err := onceClaim(run, key)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	arrivals := make([]time.Time, len(ws))
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() {
			if err := w.nc.SetDeadline(deadline); err != nil {
				errs[i] = err
				return
			}
			if err := w.send("ONCE.CLAIM", key, "WAIT", "0"); err != nil {
				errs[i] = err
				return
			}
			r, err := w.read()
			arrivals[i] = time.Now()
			if err != nil {
				errs[i] = err
				return
			}
			if a, ok := r.pair("done"); !ok || a.str != answer {
				errs[i] = fmt.Errorf("waiter on %s: %v, want [done, answer]", key, r)
			}
		})
	}
	if err := waitStatus(run, key, len(ws), deadline); err != nil {
		unblock(ws)
		wg.Wait()
		return nil, err
	}
	t0 := time.Now()
	if err := onceComplete(run, key, tok, answer); err != nil {
		unblock(ws)
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
				r, err := w.do("GET", key)
				now := time.Now()
				if err != nil {
					errs[i] = err
					return
				}
				switch {
				case r.kind == '$' && r.str == donePrefix+answer:
					arrivals[i] = now
					if !seen {
						errs[i] = fmt.Errorf("poller on %s: done before it saw the key running", key)
					}
					return
				case r.kind == '$' && strings.HasPrefix(r.str, runningPrefix):
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

// dialN opens n connections to addr.
func dialN(addr string, n int) ([]*conn, error) {
	cs := make([]*conn, 0, n)
	for range n {
		c, err := dial(addr)
		if err != nil {
			closeAll(cs)
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

func closeAll(cs []*conn) {
	for _, c := range cs {
		_ = c.close()
	}
}
