package main

// The ways of running a function once per key that the benchmark
// compares, on the raw RESP client (the go-redis versions are in
// goredis.go), and the cycle loop that measures them.
//
// oncekv:
//
//	ONCE.CLAIM k LEASE 30000                 → ["claimed", token]
//	ONCE.COMPLETE k token answer KEEP 60000  → +OK
//	waiters: ONCE.CLAIM k WAIT 0             → ["done", answer], pushed
//
// baselines on real Redis (what users build without ONCE):
//
//	claim, one of:
//	  EVALSHA <claimScript> 2 k fence 30000  → ["claimed", token] (same answers and fencing as ONCE)
//	  SET k "running:<random>" NX PX 30000   → OK (claimed) or nil (taken); no fencing
//	  INCR fence, then SET k "running:<token>" NX PX 30000 (fenced, three round trips)
//	complete:
//	  EVALSHA <casScript> 1 k token answer 60000 → 1 (completed) or 0 (stale)
//	waiters: GET k every 10 ms until it reads "done:<answer>"

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const leaseMs = "30000"

// keepMs is how long a completed answer is kept, in ms (-keep): the
// answers of a run longer than it expire while the run goes on, and the
// server's expiry of them is part of what a cycle costs.
var keepMs = "60000"

// keepText is -keep for the report: "60 s".
func keepText() string {
	ms, _ := strconv.ParseInt(keepMs, 10, 64)
	return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64) + " s"
}

const (
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
		r, err := c.Do("SCRIPT", "LOAD", p.src)
		if err != nil {
			return s, err
		}
		if r.Kind != '$' {
			return s, fmt.Errorf("SCRIPT LOAD: %v", r)
		}
		*p.sha = r.Str
	}
	return s, nil
}

// evalsha runs a loaded script, falling back to EVAL if the server lost
// it (SCRIPT FLUSH, restart).
func evalsha(c *conn, sha, src string, args ...string) (reply, error) {
	r, err := c.Do(append([]string{"EVALSHA", sha}, args...)...)
	if err == nil && r.IsErr() && strings.HasPrefix(r.Str, "NOSCRIPT") {
		return c.Do(append([]string{"EVAL", src}, args...)...)
	}
	return r, err
}

// onceClaim runs ONCE.CLAIM k LEASE 30000 and returns the token.
func onceClaim(c *conn, key string) (string, error) {
	r, err := c.Do("ONCE.CLAIM", key, "LEASE", leaseMs)
	if err != nil {
		return "", err
	}
	tok, ok := r.Pair("claimed")
	if !ok || tok.Kind != ':' {
		return "", fmt.Errorf("ONCE.CLAIM %s: %v, want [claimed, token]", key, r)
	}
	return strconv.FormatInt(tok.N, 10), nil
}

// onceComplete runs ONCE.COMPLETE k tok answer KEEP 60000.
func onceComplete(c *conn, key, tok, answer string) error {
	r, err := c.Do("ONCE.COMPLETE", key, tok, answer, "KEEP", keepMs)
	if err != nil {
		return err
	}
	if r.Kind != '+' || r.Str != "OK" {
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
	r, err := c.Do("INCR", fence)
	if err != nil {
		return "", err
	}
	if r.Kind != ':' {
		return "", fmt.Errorf("INCR %s: %v", fence, r)
	}
	tok := strconv.FormatInt(r.N, 10)
	r, err = c.Do("SET", key, runningPrefix+tok, "NX", "PX", leaseMs)
	if err != nil {
		return "", err
	}
	switch {
	case r.Kind == '_':
		return "", nil
	case r.Kind != '+':
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
	if r.Kind != ':' {
		return false, fmt.Errorf("complete script on %s: %v", key, r)
	}
	return r.N == 1, nil
}

// luaClaim claims a baseline key with claimScript; the reply is shaped as
// ONCE.CLAIM's.
func luaClaim(c *conn, s scripts, fence, key string) (reply, error) {
	return evalsha(c, s.claimSHA, claimScript, "2", key, fence, leaseMs)
}

// baseCycle is the three-round-trip baseline's cycle on a raw connection:
// claim with INCR + SET NX PX, complete with the CAS script.
func baseCycle(c *conn, s scripts, fence, key, answer string) error {
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
}

// luaClaimCycle is the two-round-trip baseline's cycle on a raw
// connection: claim with claimScript, complete with the CAS script.
func luaClaimCycle(c *conn, s scripts, fence, key, answer string) error {
	r, err := luaClaim(c, s, fence, key)
	if err != nil {
		return err
	}
	tok, ok := r.Pair("claimed")
	if !ok || tok.Kind != ':' {
		return fmt.Errorf("claim script on %s: %v, want [claimed, token]", key, r)
	}
	done, err := baseComplete(c, s, key, strconv.FormatInt(tok.N, 10), answer)
	if err == nil && !done {
		err = fmt.Errorf("complete script on %s: stale, want 1", key)
	}
	return err
}

// cycleFunc runs one claim+complete cycle on the fresh key.
type cycleFunc func(key, answer string) error

// system is one way of running claim+complete cycles.
type system struct {
	name   string
	client string // clientGoRedis or clientRaw
	rtts   int    // round trips per cycle
	oncekv bool   // runs on oncekv; else a baseline on redis-server
	prefix string // key prefix, unique per run and system
	extra  bool   // shown, but not counted in the headline ratio
	// floor marks the same round trips doing no work (PING + PING): the
	// most cycles/s the client, the server's front end and this machine
	// allow; shown, never a baseline.
	floor bool
	// open prepares n workers: their cycle functions (each called from
	// one goroutine) and a function that frees what open took.
	open func(n int) ([]cycleFunc, func(), error)
}

// The clients a system may use.
const (
	clientGoRedis = "go-redis"
	clientRaw     = "raw"
)

// rawSystem is a system whose workers each have a raw connection to addr.
func rawSystem(name string, rtts int, oncekv bool, addr, prefix string, cycle func(c *conn, key, answer string) error) system {
	return system{
		name: name, client: clientRaw, rtts: rtts, oncekv: oncekv, prefix: prefix,
		open: func(n int) ([]cycleFunc, func(), error) {
			cs, err := dialN(addr, n)
			if err != nil {
				return nil, nil, err
			}
			fns := make([]cycleFunc, n)
			for i, c := range cs {
				fns[i] = func(key, answer string) error { return cycle(c, key, answer) }
			}
			return fns, func() { closeAll(cs) }, nil
		},
	}
}

func newOnceSystem(addr, prefix string) system {
	return rawSystem("oncekv: ONCE.CLAIM + ONCE.COMPLETE", 2, true, addr, prefix, onceCycle)
}

// newPingSystem is the floor of a two-round-trip cycle on a raw
// connection: PING, PING.
func newPingSystem(name string, oncekv bool, addr, prefix string) system {
	s := rawSystem(name, 2, oncekv, addr, prefix, pingCycle)
	s.floor = true
	return s
}

// pingCycle is two round trips that do nothing: PING, PING.
func pingCycle(c *conn, _, _ string) error {
	for range 2 {
		r, err := c.Do("PING")
		if err != nil {
			return err
		}
		if r.Kind != '+' || r.Str != "PONG" {
			return fmt.Errorf("PING: %v, want PONG", r)
		}
	}
	return nil
}

func newBaseSystem(addr, prefix string, s scripts) system {
	fence := prefix + "fence"
	return rawSystem("redis: INCR + SET NX PX + EVALSHA CAS", 3, false, addr, prefix,
		func(c *conn, key, answer string) error { return baseCycle(c, s, fence, key, answer) })
}

func newLuaClaimSystem(addr, prefix string, s scripts) system {
	fence := prefix + "fence"
	return rawSystem("redis: EVALSHA claim + EVALSHA CAS", 2, false, addr, prefix,
		func(c *conn, key, answer string) error { return luaClaimCycle(c, s, fence, key, answer) })
}

// cycleResult is one timed run of cycles.
type cycleResult struct {
	cycles  int64
	elapsed time.Duration
	lat     []time.Duration // one per cycle
}

func (r cycleResult) rate() float64 { return float64(r.cycles) / r.elapsed.Seconds() }

// runCycles runs the workers fns, each looping claim+complete on fresh
// keys under prefix+tag, for d. Cycles that end after d are not counted.
func runCycles(fns []cycleFunc, prefix string, d time.Duration, tag string, answer string) (cycleResult, error) {
	var (
		stop  atomic.Bool
		count atomic.Int64
		wg    sync.WaitGroup
		start = make(chan struct{})
		lats  = make([][]time.Duration, len(fns))
		errs  = make([]error, len(fns))
	)
	for i, cycle := range fns {
		wg.Go(func() {
			base := prefix + tag + ":" + strconv.Itoa(i) + ":"
			lat := make([]time.Duration, 0, 1024)
			<-start
			for n := 0; !stop.Load(); n++ {
				t := time.Now()
				if err := cycle(base+strconv.Itoa(n), answer); err != nil {
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
