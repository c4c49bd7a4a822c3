package kv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultWaitSlice is the longest a single blocked ONCE.CLAIM … WAIT
// lasts before it is sent again (see WaitSlice).
const DefaultWaitSlice = 5 * time.Second

// defaultSharedBlockingConns caps the blocked waits on a client that is
// shared with other commands (see BlockingClient).
const defaultSharedBlockingConns = 4

// Store runs ONCE commands on a Redis client connected to an oncekv
// server. It is safe for concurrent use; make one per server and share it.
//
// Blocked waits (ONCE.CLAIM … WAIT) run on their own connections, apart
// from the pool that other commands use, so that they never starve it:
//
//   - When rdb is a *redis.Client, New makes a second client from the same
//     options (address, auth, TLS, DB, dialer…) for them, with its own pool
//     of at most MaxBlockingConns connections (default: rdb's PoolSize) and
//     a read timeout that covers a wait slice. Hooks added to rdb with
//     AddHook do not see these waits. Close closes that client.
//   - Otherwise (cluster, ring, or a wrapper), or when BlockingClient names
//     a client, the waits run on that client (rdb by default), at most
//     MaxBlockingConns at a time, each shorter than its read timeout. The
//     default is 4, and when the waits share rdb's own pool and New sees
//     its size, at most that size less one, so that other commands always
//     find a connection.
//
// Callers of the same key share one wait (see Once.Run), so the number of
// these connections grows with the number of distinct keys waited on at
// once, not with the number of callers. When MaxBlockingConns waits are
// under way, further waits queue in the process (each caller bounded by
// its own context), not in the client's pool.
//
// No caller leads a shared wait: it is sent by a goroutine of the store,
// in slices no longer than the latest deadline among the callers still
// waiting (or WaitSlice when one has none), so a caller whose context ends
// just leaves and returns ctx.Err(), whoever came first, and the wait goes
// on for the others. When the last caller leaves, the wait is abandoned: a
// new caller starts a new one, and the old one ends with its slice (a
// claim it receives then is released as a lapse, see Once.Run). When the
// server hands the claim over, the oldest caller still waiting runs its
// function, in its own goroutine; the others get that run's outcome.
//
// Other ONCE commands (COMPLETE, ABORT, EXTEND) are short and use rdb.
//
// Close the store after the Runs that use it have returned.
type Store struct {
	rdb redis.UniversalClient
	// server stands for the server the keys are on, for re-entrance
	// (KV-11): rdb when it is a pointer (Stores made on one client share
	// it), else the Store itself (an interface holding some other value
	// may not be comparable).
	server  any
	wait    redis.UniversalClient
	ownWait bool
	sem     chan struct{}
	// retryFor bounds how long claims answered "not run, send again"
	// in a row are sent again (claimRetryFor; shorter in tests).
	retryFor time.Duration
	slice    atomic.Int64 // longest wait, ns; shrinks on read timeouts unless fitted
	// fitted: the wait client's read timeout is known and the slice fits
	// under it, so a read timeout is the connection's, not the slice's.
	fitted bool

	mu      sync.Mutex
	flights map[flightKey]*flight
	// idle hands a flight to a runner waiting for one (startFlight);
	// done, closed by Close, ends the idle runners.
	idle      chan *flight
	done      chan struct{}
	closeOnce sync.Once
	// runners counts the runners alive, and runnersStarted all the
	// runners started (for tests).
	runners        atomic.Int32
	runnersStarted atomic.Int32
}

// StoreOption configures a Store.
type StoreOption func(*storeConfig)

type storeConfig struct {
	blocking redis.UniversalClient
	maxConns int
	slice    time.Duration
	retryFor time.Duration // 0: claimRetryFor; set by tests
}

// BlockingClient makes the store run its blocked waits on c, at most
// MaxBlockingConns (default 4) at a time. c may be the client given to
// New itself: the waits then share its pool, but never hold more than
// MaxBlockingConns of its connections (by default, at most its pool size
// less one). The store does not close c.
//
// Each wait lasts at most WaitSlice and at most half of c's read timeout
// when c is a *redis.Client; otherwise go-redis' default read timeout
// (5 s) is assumed, and if a wait still runs into the timeout the store
// shortens its waits and sends them again.
func BlockingClient(c redis.UniversalClient) StoreOption {
	return func(o *storeConfig) { o.blocking = c }
}

// MaxBlockingConns caps the number of blocked waits (and so connections)
// under way at once.
func MaxBlockingConns(n int) StoreOption {
	return func(o *storeConfig) { o.maxConns = n }
}

// WaitSlice sets the longest a single blocked wait lasts on the server
// before it is sent again (default DefaultWaitSlice). Shorter slices cost
// a round trip each; the answer still arrives the moment a run completes.
func WaitSlice(d time.Duration) StoreOption {
	return func(o *storeConfig) { o.slice = d }
}

// New returns a store that runs ONCE commands through rdb.
func New(rdb redis.UniversalClient, opts ...StoreOption) *Store {
	var cfg storeConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.slice <= 0 {
		cfg.slice = DefaultWaitSlice
	}
	cfg.slice = max(cfg.slice, time.Millisecond)
	if cfg.retryFor <= 0 {
		cfg.retryFor = claimRetryFor
	}
	s := &Store{rdb: rdb, retryFor: cfg.retryFor, flights: make(map[flightKey]*flight), idle: make(chan *flight), done: make(chan struct{})}
	s.server = any(s)
	if rdb != nil && reflect.TypeOf(rdb).Kind() == reflect.Pointer {
		s.server = rdb
	}
	s.slice.Store(int64(cfg.slice))
	if c, ok := rdb.(*redis.Client); ok && cfg.blocking == nil {
		s.wait, s.ownWait = blockingClone(c.Options(), cfg.slice, cfg.maxConns), true
		s.fitted = true
		n := cfg.maxConns
		if n <= 0 {
			n = c.Options().PoolSize
			if a := c.Options().MaxActiveConns; a > 0 {
				n = min(n, a)
			}
		}
		s.sem = make(chan struct{}, max(n, 1))
		return s
	}
	s.wait = cfg.blocking
	if s.wait == nil {
		s.wait = rdb
	}
	// The wait must end before the client's read timeout does. As
	// initialized, a client's ReadTimeout is > 0 a timeout, else none; a
	// ring's 0 is its shards' default. A client whose options New cannot
	// see is assumed to have the default of a cluster's (5 s), and is not
	// fitted. pool is its pool size (per node or shard), 0 when unseen.
	rt := 5 * time.Second
	pool := 0
	switch c := s.wait.(type) {
	case interface{ Options() *redis.Options }:
		o := c.Options()
		rt, s.fitted, pool = o.ReadTimeout, true, activeConns(o.PoolSize, o.MaxActiveConns)
	case interface{ Options() *redis.ClusterOptions }:
		o := c.Options()
		rt, s.fitted, pool = o.ReadTimeout, true, activeConns(o.PoolSize, o.MaxActiveConns)
	case interface{ Options() *redis.RingOptions }:
		o := c.Options()
		rt, s.fitted, pool = o.ReadTimeout, true, activeConns(o.PoolSize, o.MaxActiveConns)
		if rt == 0 {
			rt = 3 * time.Second
		}
	}
	n := cfg.maxConns
	if n <= 0 {
		n = defaultSharedBlockingConns
		// Waits on the client given share its pool with every other
		// command: they leave it a connection at least.
		if pool > 0 && (cfg.blocking == nil || samePointer(cfg.blocking, rdb)) {
			n = max(min(n, pool-1), 1)
		}
	}
	s.sem = make(chan struct{}, n)
	if rt > 0 {
		s.slice.Store(int64(max(min(cfg.slice, rt/2), time.Millisecond)))
	}
	return s
}

// activeConns is the most connections a pool of size poolSize, capped
// at maxActive when that is set, holds at once.
func activeConns(poolSize, maxActive int) int {
	if maxActive > 0 {
		return min(poolSize, maxActive)
	}
	return poolSize
}

// samePointer reports whether a and b are the same client: both pointers,
// equal. (Values of other kinds are not compared: they may not be.)
func samePointer(a, b redis.UniversalClient) bool {
	pa, pb := reflect.ValueOf(a), reflect.ValueOf(b)
	return pa.Kind() == reflect.Pointer && pb.Kind() == reflect.Pointer && pa.Pointer() == pb.Pointer() && pa.Type() == pb.Type()
}

// blockingClone makes a client for blocked waits from the options of an
// initialized client: same server and credentials, its own pool, and a
// read timeout longer than any wait slice.
//
// Even when the original has none: the server ends every wait with its
// slice, so no reply long after it means a connection dead without a
// reset (a partition), which only the timeout notices.
func blockingClone(src *redis.Options, slice time.Duration, poolSize int) *redis.Client {
	o := *src
	o.ReadTimeout = slice + waitMargin
	if src.ReadTimeout > 0 {
		o.ReadTimeout = slice + src.ReadTimeout
	}
	if poolSize > 0 {
		o.PoolSize = poolSize
	}
	o.MaxActiveConns = 0 // the store's own cap (sem) bounds them
	o.MinIdleConns = 0
	o.PoolTimeout = 0 // derive from the new read timeout
	o.ContextTimeoutEnabled = false
	// Its own push processor (the source's is registered to it).
	o.PushNotificationProcessor = nil
	o.ClientSideCacheConfig = nil
	o.ClientSideCache = nil
	o.ClientSideCacheRefreshOnInvalidate = false
	o.ClientSideCacheCoalesceMisses = false
	if src.MaintNotificationsConfig != nil {
		m := *src.MaintNotificationsConfig
		o.MaintNotificationsConfig = &m
	}
	return redis.NewClient(&o)
}

// Close releases what the store created: the client for blocked waits
// when New made one. It does not close the client given to New.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.done) })
	if s.ownWait {
		return s.wait.Close()
	}
	return nil
}

// waitMargin is how long after its slice a wait's reply may come, on a
// wait client made from one with no read timeout, before its connection
// counts as dead. A variable for the tests.
var waitMargin = opTimeout

// minShrinkSlice is the shortest wait slice that a read timeout shortens.
const minShrinkSlice = 20 * time.Millisecond

// maxSlice is the longest a wait may last now.
func (s *Store) maxSlice() time.Duration { return time.Duration(s.slice.Load()) }

// shrink quarters the wait slice after a wait of length used hit the
// client's read timeout (a client whose timeout New could not see, so
// not fitted); false when it is too short already: the timeout is then a
// real failure. The slice stays short: that client's timeout does not
// change.
func (s *Store) shrink(used time.Duration) bool {
	if used < minShrinkSlice {
		return false
	}
	for {
		cur := s.slice.Load()
		next := min(cur, int64(used/4))
		if s.slice.CompareAndSwap(cur, next) {
			return true
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// claimReply is a parsed [state, detail] reply.
type claimReply struct {
	state  string
	answer []byte // done: the answer; failed: the message
	token  int64  // claimed
}

// claim sends ONCE.CLAIM key LEASE ms [WAIT ms] [FINGERPRINT fp] on c:
// with wait 0, no WAIT (on rdb: the server answers at once, "running" if
// someone else runs the key), else a wait bounded by the server (on the
// store's wait client). The context only bounds getting a connection,
// and the reply when the client enforces context deadlines.
func (s *Store) claim(c redis.UniversalClient, key string, lease, wait time.Duration, fp *string) (claimReply, error) {
	args := []any{"once.claim", key, "lease", ms(lease)}
	timeout := opTimeout
	if wait > 0 {
		args = append(args, "wait", ms(wait))
		timeout = wait + 10*time.Second
	}
	if fp != nil {
		args = append(args, "fingerprint", *fp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	v, err := c.Do(ctx, args...).Slice()
	if err != nil {
		return claimReply{}, serverError(err)
	}
	return parseReply(v)
}

func parseReply(v []any) (claimReply, error) {
	if len(v) != 2 {
		return claimReply{}, errors.New("kv: unexpected ONCE.CLAIM reply: " + strconv.Itoa(len(v)) + " elements")
	}
	state, _ := v[0].(string)
	r := claimReply{state: state}
	switch state {
	case "claimed":
		tok, ok := v[1].(int64)
		if !ok {
			return r, errors.New("kv: ONCE.CLAIM: token is not an integer")
		}
		r.token = tok
	case "done", "failed":
		s, ok := v[1].(string)
		if !ok && v[1] != nil {
			return r, errors.New("kv: ONCE.CLAIM: detail is not a string")
		}
		r.answer = []byte(s)
	case "running":
	default:
		return r, errors.New("kv: unexpected ONCE.CLAIM state " + strconv.Quote(state))
	}
	return r, nil
}

// errStale marks a -STALE reply.
var errStale = errors.New("kv: stale token")

// serverError maps the ONCE error replies to this package's errors.
func serverError(err error) error {
	var re redis.Error
	if !errors.As(err, &re) {
		return err
	}
	msg := re.Error()
	switch {
	case strings.HasPrefix(msg, "STALE"):
		return errStale
	case strings.HasPrefix(msg, "MISMATCH"):
		return fmt.Errorf("%w: %s", ErrMismatch, strings.TrimPrefix(msg, "MISMATCH "))
	}
	return err
}

// retryableReply reports whether err is an error reply that says the
// command did not run and may be sent again as it is: a slot being moved
// (TRYAGAIN: proxy mode in front of Redis Cluster), a server loading its
// data or an upstream failing over (LOADING, MASTERDOWN, CLUSTERDOWN,
// READONLY). These are the replies go-redis itself resends; once its
// retries ran out, such a reply is no refusal of what was sent.
func retryableReply(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	for _, p := range []string{"TRYAGAIN", "LOADING ", "MASTERDOWN ", "CLUSTERDOWN ", "READONLY "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// do runs a short ONCE command on the main client.
func (s *Store) do(ctx context.Context, args ...any) error {
	return serverError(s.rdb.Do(ctx, args...).Err())
}

// ms is d in whole milliseconds, rounded up, at least 1.
func ms(d time.Duration) int64 {
	return max(int64((d+time.Millisecond-1)/time.Millisecond), 1)
}
