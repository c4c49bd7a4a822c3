// Package onceup runs the ONCE commands (CLAIM, COMPLETE, ABORT, EXTEND,
// WAIT, STATUS) over an upstream Redis, Valkey or Redis Cluster, for
// oncekv's proxy mode: any number of stateless oncekv instances share one
// upstream, and together keep every promise of KV-8…KV-15, with the
// differences listed below.
//
// # How
//
//   - Records. A key's record is a Redis hash stored at the user key itself
//     (fields s state, t token, f fingerprint, a answer, q claiming request),
//     so DEL, EXISTS, TTL, PTTL, EXPIRE, RENAME… forwarded by the proxy act
//     on it as on any key. Its expiry is the lease deadline of a running
//     record and the keep deadline of a done one: the upstream frees the key
//     by itself at a lapse or when the keep ends (KV-14).
//   - Databases. Each command runs in the database its caller selected
//     (Command's db; a cluster has only 0): the scripts SELECT it, which
//     changes the script's database only, not the connection's. Records,
//     token counters, outcome records and announcement channels are per
//     database.
//   - Transitions. Every state change is one Lua script (EVALSHA, EVAL on
//     NOSCRIPT) on the key's hash slot, using the upstream's clock (TIME),
//     so it is atomic however many instances race (KV-9, KV-13). CLAIM is
//     idempotent under a retry of the same request (the record keeps the
//     claiming request's id). A repeated COMPLETE or ABORT answers -STALE,
//     as the embedded engine does (the token no longer holds the claim):
//     the client the engine is given must not retry commands by itself
//     (go-redis: MaxRetries -1, as proxy.Upstream.Client sets it), or a
//     network retry of a COMPLETE that was done would turn into -STALE.
//   - Tokens. Each slot has a counter key, oncekv:tok:{tag}, where tag is a
//     precomputed string that hashes to that slot (see Tag): claims draw
//     from the counter of their key's slot, which outlives records, so a
//     key's tokens grow even across its record's expiry. A token is never
//     below 1024 × the upstream's clock in ms, so that tokens keep growing
//     even when a failover loses the counter's last increments (the new
//     master issues tokens from its own clock, which is later than any lost
//     one unless its clock lags the old master's by more than the failover
//     took). Tokens are therefore large (about 1.8e15 in 2026, below 2^53
//     until the year 2248, so exact in JavaScript numbers too).
//   - Wake-ups (KV-10). COMPLETE and ABORT announce the outcome on the
//     slot's sharded pub/sub channel, oncekv:ev:{tag} (SPUBLISH in the
//     script). Each instance subscribes (SSUBSCRIBE) to the channel of a
//     slot while it has local waiters on keys of that slot, over one
//     connection per upstream master, and hands each announcement to the
//     local waiters of its key: one event, no polling. After subscribing
//     (and after every reconnection), each waiting key is checked once, to
//     close the race between reading the state and subscribing (at most
//     maxChecks checks run at once). A waiter that missed an announcement
//     anyway looks again at the lease deadline it saw; so that it then
//     gets the outcome of the run it waited for, even with KEEP 0 or after
//     ABORT, COMPLETE and ABORT keep the outcome in an outcome record
//     (oncekv:end:{tag}<key>) for the run's remaining lease plus
//     Config.OutcomeTTL whenever the answer itself is kept less long.
//   - Lapses (KV-13). A waiting key has a timer at its lease deadline; it
//     runs the takeover script for the instance's oldest claim waiter: if
//     the lease has lapsed, that waiter gets the claim with a new token,
//     keeping the record's fingerprint (or taking the waiter's when the
//     record had none). Waiters on several instances race with their
//     scripts; the upstream runs them one at a time, so exactly one wins and
//     the others see the new run and wait for it. A claim waiter whose
//     connection has closed is passed by, even before it withdraws; a
//     claim taken for it while it left, or whose reply could not be sent
//     because its client left as it was handed over (resp.Conn.OnUnsent),
//     is released at once, as the embedded engine does: never held by no
//     one until its lease lapses. A claim whose reply was handed on is
//     the client's, bounded by its LEASE.
//
// # What differs from the embedded engine
//
//   - Handover order: oldest first among the claim waiters of one
//     instance; across instances, the first instance whose timer fires
//     after the lapse wins (about the same moment on every instance: the
//     timers are set from the upstream's PTTL). And a fresh CLAIM arriving
//     through any instance just after the lapse, before any waiter's
//     takeover, gets the claim instead (the waiters then wait for its run).
//     Exactly one caller gets the claim in every case.
//   - ONCE.WAIT at a lapse answers ["free", ""] when the key is still free
//     50 ms after the deadline: a claim waiter of another instance that
//     takes it over later than that is not waited for.
//   - A run of another request (another fingerprint) that claimed the key
//     in that window ends its waiters' wait with -MISMATCH for claim
//     waiters whose fingerprint differs, where the embedded engine would
//     have handed them the old request's claim.
//   - DEL or UNLINK of a running record, FLUSHDB and FLUSHALL are lapses
//     at once for the waiters only when the proxy calls Touched or Flushed
//     (package proxy does, for the commands it forwards); otherwise (SET,
//     RENAME, COPY, MOVE, SWAPDB or RESTORE over a record, a command sent to the
//     upstream directly, eviction) waiters notice at the lease deadline
//     they saw. EXPIRE and PERSIST on a running record change its lease
//     (the embedded server refuses); with no expiry, waiters re-check every
//     DefaultLease.
//   - TYPE answers hash, not once; HGETALL shows the fields; HSET can
//     corrupt a record (the scripts then answer WRONGTYPE or treat it as
//     the state its fields say). A hash without the s field is another
//     type (WRONGTYPE).
//   - ONCE.STATUS's waiters counts this instance's waiters only.
//   - The upstream holds, besides the records: one token counter per slot
//     and database that ever had a claim (oncekv:tok:{tag}, up to 16384
//     small keys per database, never expiring) and the outcome records
//     (oncekv:end:{tag}…, each kept the run's remaining lease plus
//     OutcomeTTL, with a copy of the answer or message). They show in
//     SCAN, KEYS and DBSIZE.
//   - The upstream must not evict keys (maxmemory-policy noeviction):
//     an evicted running record lets a second runner claim the key, an
//     evicted answer runs the key again. Start logs a warning when the
//     upstream says otherwise.
//   - Durability is the upstream's (KV-6/KV-16 as its persistence is set).
//     A failover can lose the last writes replicated asynchronously: a
//     claim (then a second runner can start), or a kept answer (the key
//     runs again). Config.WaitReplicas makes every claim, completion, abort
//     and extension that wrote run WAIT n WaitTimeout on the connection
//     that wrote, before its caller gets the reply and before the outcome
//     is announced to the waiters. What that promises, exactly: the
//     caller whose command wrote, and the waiters woken by its
//     announcement, are told only after n replicas acknowledged the write
//     or WaitTimeout ran out (counted in Stats.ReplicaShort; the reply
//     goes out anyway). It does not cover the other readers: the write is
//     on the master, visible, before WAIT returns, so a CLAIM or a waiter's
//     check through any instance can read it (a done answer, a running
//     claim) before any replica has it, and a failover then can lose what
//     that reader was told. Nor is WAIT consensus: Redis may promote a
//     replica that had not acknowledged. Its cost: a write waits for a
//     replica's acknowledgement (a round trip), and while a master has
//     fewer replicas than WaitReplicas (just after a failover, before the
//     old master comes back as a replica) every ONCE write on its slots
//     waits WaitTimeout (reads do not wait). TestFailover measures it.
//   - Tokens come from the upstream's clock (see Tokens above), so after a
//     failover they still grow unless the new master's clock lags the old
//     one's by more than the failover took.
//   - Slot migration (resharding: CLUSTER SETSLOT … MIGRATING and
//     IMPORTING, MIGRATE, SETSLOT … NODE). Every script declares three
//     keys of the key's slot: the record, the slot's token counter and the
//     key's outcome record, which is usually absent. While the slot moves,
//     Redis Cluster answers TRYAGAIN to a script whose keys are not all on
//     the node asked, and an absent key counts as missing on both nodes:
//     so a ONCE command on a moving slot did not run, and is run again
//     (pausing up to 100 ms between tries, counted in Stats.TryAgains)
//     until the move of the slot ends, for at most Config.Timeout; then it
//     fails with TRYAGAIN. The move of a slot that holds few keys takes
//     milliseconds. Waiters: the subscriptions stay on the old owner until
//     it gives the slot away (it then drops them, or the slot map shows
//     the move; they are made again on the new owner, each waited key
//     checked). A script whose three
//     keys have all moved already runs on the new owner before that (ASK),
//     and its announcement reaches no waiter; nor do the checks of waited
//     keys run while the move lasts (TRYAGAIN). So a check on a moving
//     slot reads the record and the outcome record one at a time (a
//     script over one key is served wherever the key is): a kept answer,
//     or how the awaited run ended, is delivered. A waiter that missed an
//     announcement during a move thus learns the outcome at the lease
//     deadline it saw at the latest, even while the move is still open;
//     but a lapsed claim is handed over, and a ONCE.WAIT at a lapse
//     answered free, only once the move has ended.
//   - Sentinel: the subscription connections follow the master the
//     sentinels name when Config.MasterAddr is set (package proxy's
//     resolution): a connection left on a master that was demoted is
//     closed and the slots subscribed again on the new one.
package onceup

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Config configures the engine.
type Config struct {
	// DefaultLease is the lease of a claim that names none (30 s).
	DefaultLease time.Duration
	// WaitReplicas, when above 0, makes claims, completions, aborts and
	// extensions that wrote wait until that many replicas acknowledged
	// them (WAIT), for at most WaitTimeout, before the reply and the
	// announcement (see the package documentation for what that promises).
	WaitReplicas int
	// WaitTimeout bounds each WAIT (default 1 s).
	WaitTimeout time.Duration
	// Timeout bounds each call to the upstream (default 5 s).
	Timeout time.Duration
	// OutcomeTTL is the margin an outcome record is kept beyond the run's
	// remaining lease (default 10 s): a waiter that missed the
	// announcement looks again at the lease deadline, plus its own delays.
	OutcomeTTL time.Duration
	// MasterAddr, for a Sentinel upstream, returns the address of the
	// master the sentinels name now ("" when unknown): a subscription
	// connection opened while another master was named is moved.
	MasterAddr func() string
	Logger     *zap.Logger
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{DefaultLease: 30 * time.Second, WaitTimeout: time.Second, Timeout: 5 * time.Second,
		OutcomeTTL: 10 * time.Second, Logger: zap.NewNop()}
}

// Stats count what the engine did.
type Stats struct {
	Claims, Completes, Aborts, Replays, Waits, Wakeups atomic.Int64
	Handoffs, StaleRejects, Mismatches                 atomic.Int64
	// Events is the number of announcements received; Subscribes the
	// number of slot subscriptions confirmed (first ones and renewals).
	Events, Subscribes atomic.Int64
	// Rechecked counts the waiters given an outcome (an answer, a
	// failure) by a check of their key rather than by its announcement:
	// the run ended before the subscription was up, or the announcement
	// was missed.
	Rechecked atomic.Int64
	// ReplicaShort counts WAITs that ended with fewer replicas than
	// WaitReplicas; UpstreamErrors the calls that failed.
	ReplicaShort, UpstreamErrors atomic.Int64
	// TryAgains counts the scripts run again after a TRYAGAIN (their
	// slot was being migrated).
	TryAgains atomic.Int64
	waiting   atomic.Int64
}

// waitGrace is how long after a lease deadline WAIT-only waiters look:
// claim waiters of other instances take over in the meantime.
const waitGrace = 50 * time.Millisecond

// maxChecks bounds the checks of waited keys that run at once (a
// subscription confirmed, a flush, many timers firing together).
const maxChecks = 16

// flushChannel is the (not sharded) channel on which Flushed tells the
// other instances of a FLUSHDB or FLUSHALL: a cluster broadcasts it to
// every node, and every subscription connection listens to it.
const flushChannel = "oncekv:flush"

// Engine runs the ONCE commands against an upstream.
type Engine struct {
	c     redis.UniversalClient
	cc    *redis.ClusterClient // nil for a standalone upstream
	db    int                  // the client's database: scripts for it need no SELECT
	cfg   Config
	log   *zap.Logger
	id    string // this instance, in request ids
	seq   atomic.Uint64
	Stats Stats

	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	// mu guards the waiters, the subscriptions, the checks and the node
	// connections' shared fields. No network I/O happens under it.
	mu        sync.Mutex
	keys      map[keyID]*keyState
	slots     map[int]*slotSub // by chanID
	nodes     map[string]*nodeConn
	toRoute   map[int]bool
	routeWake chan struct{}
	// routeRetry: a slot failed at its node; route again after a pause.
	routeRetry bool
	checkQ     []*keyState // keys to check, waiting for a checker
	checkers   int         // checker goroutines running
	// checksNow counts the checks running, checksPeak the most at once
	// (for the tests).
	checksNow, checksPeak int
	flushSeen             map[string]uint64
	started               bool
	closed                bool

	// Test hooks: dropEvents ignores the outcome announcements (a waiter
	// then learns the outcome only from a check); holdSubscribe, when
	// set, makes every SSUBSCRIBE wait until the channel is closed.
	dropEvents    atomic.Bool
	holdSubscribe atomic.Pointer[chan struct{}]
	// checkRan, when set (under mu), runs after a check's script and
	// before its reply is acted on.
	checkRan func(key string)
	// leaving, when set (under mu), runs in a blocked call whose client
	// has left, before it withdraws its waiter; replied runs in a
	// blocked call that wrote a claim, before it returns (gone is its
	// client's).
	leaving func()
	replied func(gone <-chan struct{})
}

// result is the outcome of a call or a wait.
type result struct {
	state  string // claimed, done, running, failed, free
	answer []byte
	token  uint64
	msLeft int64
	err    error
}

// waiter is a blocked CLAIM … WAIT or ONCE.WAIT caller.
type waiter struct {
	claim bool
	lease int64
	fp    []byte
	hasFP bool
	reqID string
	ks    *keyState
	ch    chan result
	gone  bool // delivered or withdrawn (under mu)
	// left, once the blocked call set it (under mu), is closed when the
	// caller has left (its connection closed): a takeover passes it by.
	left <-chan struct{}
}

// hasLeft reports whether w's caller has left. Call it with e.mu held.
func (w *waiter) hasLeft() bool {
	if w.left == nil {
		return false
	}
	select {
	case <-w.left:
		return true
	default:
		return false
	}
}

// keyID names a waited key: its database and its name.
type keyID struct {
	db  int
	key string
}

// keyState is a key with local waiters.
type keyState struct {
	key      string
	db       int
	slot     int
	waiters  []*waiter // oldest first
	awaited  uint64    // the newest token seen running
	recFP    []byte    // that run's fingerprint
	recHasFP bool
	timer    *time.Timer
	checking bool // a check is queued or runs
	again    bool // another check was asked for meanwhile
	fails    int
	dropped  bool
}

// New returns an engine over c: a *redis.Client (standalone Redis or
// Valkey, or a Sentinel failover client) or a *redis.ClusterClient, as
// proxy.Upstream.Client makes it: not retrying commands by itself
// (MaxRetries -1; see the package documentation) and speaking RESP2
// (Protocol 2: with RESP3, go-redis v9.23's maintenance-notification
// handshake writes options its Client shares with the Conn runWait takes,
// a data race). It starts nothing: call Start.
func New(c redis.UniversalClient, cfg Config) *Engine {
	d := DefaultConfig()
	if cfg.DefaultLease <= 0 {
		cfg.DefaultLease = d.DefaultLease
	}
	if cfg.WaitTimeout <= 0 {
		cfg.WaitTimeout = d.WaitTimeout
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = d.Timeout
	}
	if cfg.OutcomeTTL <= 0 {
		cfg.OutcomeTTL = d.OutcomeTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{c: c, cfg: cfg, log: cfg.Logger, id: hex.EncodeToString(b[:]), ctx: ctx, stop: cancel,
		keys: make(map[keyID]*keyState), slots: make(map[int]*slotSub), nodes: make(map[string]*nodeConn),
		toRoute: make(map[int]bool), routeWake: make(chan struct{}, 1), flushSeen: make(map[string]uint64)}
	e.cc, _ = c.(*redis.ClusterClient)
	if sc, ok := c.(*redis.Client); ok {
		e.db = sc.Options().DB
	}
	return e
}

// Start starts the goroutine that manages the subscriptions, and checks
// in the background that the upstream does not evict keys. It fails for a
// client type it cannot subscribe through.
func (e *Engine) Start() error {
	switch e.c.(type) {
	case *redis.Client, *redis.ClusterClient:
	default:
		return fmt.Errorf("onceup: unsupported upstream client %T (want *redis.Client or *redis.ClusterClient)", e.c)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started || e.closed {
		return errors.New("onceup: already started or closed")
	}
	e.started = true
	e.wg.Add(2)
	go e.router()
	go e.checkEviction()
	return nil
}

// Close answers every waiter with ErrShutdown, closes the subscriptions
// and waits for the engine's goroutines. It does not close the client.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	for _, ks := range e.keys {
		e.wakeAllLocked(ks, result{err: ErrShutdown})
	}
	var nodes []*nodeConn
	for _, n := range e.nodes {
		nodes = append(nodes, n)
	}
	e.mu.Unlock()
	e.stop()
	for _, n := range nodes {
		n.close()
	}
	e.wg.Wait()
	return nil
}

// Waiting is the number of blocked callers on this instance.
func (e *Engine) Waiting() int64 { return e.Stats.waiting.Load() }

func (e *Engine) reqID() string {
	return e.id + ":" + strconv.FormatUint(e.seq.Add(1), 36)
}

func (e *Engine) leaseMs(ms int64) int64 {
	if ms > 0 {
		return clampMs(ms)
	}
	return e.cfg.DefaultLease.Milliseconds()
}

// maxTimerMs bounds a waited key's timer (a day): a longer lease is
// looked at again then.
const maxTimerMs = 24 * 60 * 60 * 1000

// maxMs is the longest lease or keep sent to the upstream. The embedded
// engine saturates a deadline too far to count (as good as forever); the
// upstream refuses a PEXPIRE whose deadline overflows, and the scripts'
// Lua numbers (doubles, formatted with 17 digits when passed to a
// command) are exact integers only below 2^53: a longer lease or keep
// made PEXPIRE fail inside a script that had already written. 2^52 ms
// is some 140,000 years.
const maxMs = 1 << 52

// clampMs bounds a lease or keep (ms > 0) to maxMs.
func clampMs(ms int64) int64 { return min(ms, maxMs) }

func b01(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// dbArg is the scripts' first argument: the database to SELECT, or ""
// for the client's own.
func (e *Engine) dbArg(db int) string {
	if db == e.db {
		return ""
	}
	return strconv.Itoa(db)
}

// checkEviction reads the upstream's maxmemory-policy (every master's, in
// a cluster) and warns when it is not noeviction: an evicted record breaks
// the ONCE promises. It tries for a while if the upstream is not up yet;
// an upstream that refuses CONFIG is not checked.
func (e *Engine) checkEviction() {
	defer e.wg.Done()
	for attempt := 0; attempt < 30; attempt++ {
		if attempt > 0 {
			select {
			case <-e.ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
		}
		ctx, cancel := context.WithTimeout(e.ctx, e.cfg.Timeout)
		var err error
		check := func(ctx context.Context, c *redis.Client) error {
			m, err := c.ConfigGet(ctx, "maxmemory-policy").Result()
			if err != nil {
				return err
			}
			p, ok := m["maxmemory-policy"]
			switch {
			case !ok:
				e.log.Debug("onceup: the upstream has no maxmemory-policy", zap.String("upstream", c.Options().Addr))
			case p != "noeviction":
				e.log.Warn("the upstream may evict keys: ONCE records evicted break the ONCE promises (a second runner, an answer lost); set maxmemory-policy noeviction",
					zap.String("upstream", c.Options().Addr), zap.String("maxmemory-policy", p))
			default:
				e.log.Debug("onceup: the upstream does not evict keys", zap.String("upstream", c.Options().Addr))
			}
			return nil
		}
		if e.cc != nil {
			err = e.cc.ForEachMaster(ctx, check)
		} else if c, ok := e.c.(*redis.Client); ok {
			err = check(ctx, c)
		}
		cancel()
		var re redis.Error
		if err == nil || errors.As(err, &re) {
			if err != nil {
				e.log.Debug("onceup: cannot read the upstream's maxmemory-policy", zap.Error(err))
			}
			return
		}
	}
}

// run runs a script on key's slot in database db. With WaitReplicas set
// and repl non-nil, it runs it on the key's master, followed by WAIT when
// repl says the script wrote. While the slot moves, the script is run
// again until ctx's deadline (see runKeys).
func (e *Engine) run(ctx context.Context, s *script, db int, key []byte, slot int, repl func([]any) bool, args ...any) ([]any, error) {
	return e.runKeys(ctx, true, s, db, key, e.keysOf(key, slot), repl, args...)
}

// keysOf are the scripts' KEYS for key: the record, the slot's token
// counter and the key's outcome record.
func (e *Engine) keysOf(key []byte, slot int) []string {
	return []string{string(key), TokenKey(slot), OutcomeKey(slot, key)}
}

// runKeys runs s over keys, all in key's slot. A script its slot's
// migration holds back (TRYAGAIN: the keys are not all on one node, and
// an absent outcome record counts as missing on both; or a redirection
// the client gave up on) did not run: with retry it is run again once the
// migration of the slot has ended, within ctx's deadline; without, that
// error is returned at once.
func (e *Engine) runKeys(ctx context.Context, retry bool, s *script, db int, key []byte, keys []string, repl func([]any) bool, args ...any) ([]any, error) {
	args = append([]any{e.dbArg(db)}, args...)
	var v any
	var err error
	for pause := tryAgainFirst; ; pause = min(2*pause, tryAgainMax) {
		if repl != nil && e.cfg.WaitReplicas > 0 {
			v, err = e.runWait(ctx, s, key, keys, args, repl)
		} else {
			v, err = s.run(ctx, e.c, keys, args)
		}
		if err == nil || !retry || !isTryAgain(err) || !sleepCtx(ctx, pause) {
			break
		}
		e.Stats.TryAgains.Add(1)
		if e.cc != nil && !strings.HasPrefix(err.Error(), "TRYAGAIN") {
			e.cc.ReloadState(ctx)
		}
	}
	if err != nil {
		e.upstreamError(err)
		return nil, err
	}
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, errReply
	}
	return arr, nil
}

// check runs a waited key's check (claimScript in mode 't' or 'w'; asked
// is the run it waits for). While the key's slot moves, that script is
// answered TRYAGAIN until the move ends; rather than wait for the end, a
// check then reads the record and the outcome record one at a time (a
// script over one key runs wherever that key is, ASK included): a kept
// answer, or the outcome of the run it waits for, is the check's answer.
// Otherwise the check fails, and the caller tries again later.
func (e *Engine) check(ctx context.Context, ks *keyState, asked uint64, repl func([]any) bool, args []any) ([]any, error) {
	key := []byte(ks.key)
	keys := e.keysOf(key, ks.slot)
	rep, err := e.runKeys(ctx, false, claimScript, ks.db, key, keys, repl, args...)
	if err == nil || !isTryAgain(err) {
		return rep, err
	}
	e.Stats.TryAgains.Add(1)
	if r, perr := e.runKeys(ctx, false, peekScript, ks.db, key, keys[:1], nil, "r", ""); perr == nil && str(r, 0) == "done" {
		return r, nil
	}
	if asked > 0 {
		a := strconv.FormatUint(asked, 10)
		if r, perr := e.runKeys(ctx, false, peekScript, ks.db, key, keys[2:], nil, "o", a); perr == nil && str(r, 0) != "none" {
			return r, nil
		}
	}
	return nil, err
}

// upstreamError counts a failed call; after a network error it asks the
// cluster client to reload its slot map (go-redis does so by itself only
// on MOVED/ASK, so it would go on dialing a master that died).
func (e *Engine) upstreamError(err error) {
	e.Stats.UpstreamErrors.Add(1)
	var re redis.Error
	if e.cc != nil && (!errors.As(err, &re) || isRedirect(err)) {
		e.cc.ReloadState(context.Background())
	}
}

// Pauses between two runs of a script answered TRYAGAIN (a slot being
// migrated): doubling from tryAgainFirst up to tryAgainMax.
const (
	tryAgainFirst = 5 * time.Millisecond
	tryAgainMax   = 100 * time.Millisecond
)

// isTryAgain reports a reply that says the command did not run because
// its slot is moving: TRYAGAIN (a multi-key command on a slot being
// migrated whose keys are not all on the node asked), or a MOVED or ASK
// that the client did not follow (go-redis gives up after MaxRedirects
// hops, which a TRYAGAIN from the target uses up; runWait does not follow
// ASK).
func isTryAgain(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "TRYAGAIN") || strings.HasPrefix(s, "ASK ") || strings.HasPrefix(s, "MOVED ")
}

// sleepCtx pauses for d, unless ctx's deadline comes first: it reports
// whether the pause was taken (false: there is no time left for another
// try).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func isRedirect(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "MOVED ") || strings.HasPrefix(s, "ASK ") ||
		strings.HasPrefix(s, "CLUSTERDOWN") || strings.HasPrefix(s, "READONLY")
}

// master returns the client of the master serving key.
func (e *Engine) master(ctx context.Context, key string) (*redis.Client, error) {
	if e.cc != nil {
		return e.cc.MasterForKey(ctx, key)
	}
	if c, ok := e.c.(*redis.Client); ok {
		return c, nil
	}
	return nil, fmt.Errorf("onceup: unsupported upstream client %T", e.c)
}

// runWait runs a script, then WAIT if it wrote, on one connection to the
// key's master, so that WAIT covers the script's writes; wrote tells from
// the script's reply whether it wrote.
func (e *Engine) runWait(ctx context.Context, s *script, key []byte, keys []string, args []any, wrote func([]any) bool) (any, error) {
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
			}
		}
		var node *redis.Client
		if node, err = e.master(ctx, string(key)); err != nil {
			continue
		}
		var v any
		v, err = e.runOn(ctx, node, s, keys, args, wrote)
		if err != nil && isRedirect(err) {
			if e.cc != nil {
				e.cc.ReloadState(ctx)
			}
			continue
		}
		return v, err
	}
	return nil, err
}

// runOn runs the script on one connection of node, and WAIT on that
// connection when the script wrote: a script that only read (a claim that
// found the key running or done, a stale completion) does not wait for
// the replicas, not even while the master has fewer than WaitReplicas.
func (e *Engine) runOn(ctx context.Context, node *redis.Client, s *script, keys []string, args []any, wrote func([]any) bool) (any, error) {
	cn := node.Conn()
	defer cn.Close()
	v, err := s.run(ctx, cn, keys, args)
	if err != nil {
		return nil, err
	}
	if arr, ok := v.([]any); ok && wrote(arr) {
		if n, err := cn.Do(ctx, "wait", e.cfg.WaitReplicas, e.cfg.WaitTimeout.Milliseconds()).Int64(); err != nil || n < int64(e.cfg.WaitReplicas) {
			e.Stats.ReplicaShort.Add(1)
		}
	}
	return v, nil
}

// claimed and acked say whether a script's reply means it wrote.
func claimed(a []any) bool { return str(a, 0) == "claimed" }
func acked(a []any) bool   { return str(a, 0) == "ok" }

// publish sends an announcement a script returned instead of publishing
// (WaitReplicas: after WAIT). A failure only delays the waiters until
// their next check.
func (e *Engine) publish(ctx context.Context, ch, ev string) {
	if err := e.c.SPublish(ctx, ch, ev).Err(); err != nil {
		e.upstreamError(err)
		e.log.Warn("onceup: announce", zap.Error(err))
	}
}

// Reply parsing helpers: script replies are arrays of strings and
// integers.

func str(a []any, i int) string {
	if i < len(a) {
		switch v := a[i].(type) {
		case string:
			return v
		case int64:
			return strconv.FormatInt(v, 10)
		}
	}
	return ""
}

func num(a []any, i int) int64 {
	if i < len(a) {
		switch v := a[i].(type) {
		case int64:
			return v
		case string:
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

func tok(a []any, i int) uint64 {
	n, _ := strconv.ParseUint(str(a, i), 10, 64)
	return n
}

// claimArgs are ONCE.CLAIM's options.
type claimArgs struct {
	lease int64 // 0: the default
	wait  bool
	fp    []byte
	hasFP bool
}

// claim runs ONCE.CLAIM; with wait, a running key returns a waiter.
func (e *Engine) claim(ctx context.Context, db int, key []byte, a claimArgs) (result, *waiter, error) {
	slot := Slot(key)
	id := e.reqID()
	rep, err := e.run(ctx, claimScript, db, key, slot, claimed, "c", e.leaseMs(a.lease), b01(a.hasFP), a.fp, "0", "", "", id)
	if err != nil {
		return result{}, nil, err
	}
	switch str(rep, 0) {
	case "claimed":
		e.Stats.Claims.Add(1)
		return result{state: "claimed", token: tok(rep, 1)}, nil, nil
	case "done":
		e.Stats.Replays.Add(1)
		return result{state: "done", answer: []byte(str(rep, 1))}, nil, nil
	case "mismatch":
		e.Stats.Mismatches.Add(1)
		return result{}, nil, ErrMismatch
	case "wrongtype":
		return result{}, nil, ErrWrongType
	case "running":
		if !a.wait {
			return result{state: "running", msLeft: num(rep, 1)}, nil, nil
		}
		w := &waiter{claim: true, lease: a.lease, fp: a.fp, hasFP: a.hasFP, reqID: id, ch: make(chan result, 1)}
		e.addWaiter(db, string(key), slot, w, rep)
		return result{}, w, nil
	}
	return result{}, nil, errReply
}

// wait runs ONCE.WAIT; with block, a running key returns a waiter.
func (e *Engine) wait(ctx context.Context, db int, key []byte, block bool) (result, *waiter, error) {
	slot := Slot(key)
	rep, err := e.run(ctx, claimScript, db, key, slot, nil, "w", e.leaseMs(0), "0", "", "0", "", "", "")
	if err != nil {
		return result{}, nil, err
	}
	switch str(rep, 0) {
	case "free":
		return result{state: "free"}, nil, nil
	case "done":
		e.Stats.Replays.Add(1)
		return result{state: "done", answer: []byte(str(rep, 1))}, nil, nil
	case "wrongtype":
		return result{}, nil, ErrWrongType
	case "running":
		if !block {
			return result{state: "running", msLeft: num(rep, 1)}, nil, nil
		}
		w := &waiter{ch: make(chan result, 1)}
		e.addWaiter(db, string(key), slot, w, rep)
		return result{}, w, nil
	}
	return result{}, nil, errReply
}

// complete runs ONCE.COMPLETE; keep < 0 keeps the answer until deleted.
func (e *Engine) complete(ctx context.Context, db int, key []byte, token uint64, answer []byte, keep int64) error {
	slot := Slot(key)
	pub := e.cfg.WaitReplicas <= 0
	ch := Channel(slot, db)
	if keep > 0 {
		keep = clampMs(keep)
	}
	rep, err := e.run(ctx, completeScript, db, key, slot, acked, strconv.FormatUint(token, 10), answer, keep,
		b01(pub), e.cfg.OutcomeTTL.Milliseconds(), e.leaseMs(0), ch)
	if err != nil {
		return err
	}
	return e.okReply(ctx, ch, rep, &e.Stats.Completes)
}

// abort runs ONCE.ABORT.
func (e *Engine) abort(ctx context.Context, db int, key []byte, token uint64, msg []byte) error {
	slot := Slot(key)
	pub := e.cfg.WaitReplicas <= 0
	ch := Channel(slot, db)
	rep, err := e.run(ctx, abortScript, db, key, slot, acked, strconv.FormatUint(token, 10), msg,
		b01(pub), e.cfg.OutcomeTTL.Milliseconds(), e.leaseMs(0), ch)
	if err != nil {
		return err
	}
	return e.okReply(ctx, ch, rep, &e.Stats.Aborts)
}

func (e *Engine) okReply(ctx context.Context, ch string, rep []any, n *atomic.Int64) error {
	switch str(rep, 0) {
	case "ok":
		n.Add(1)
		if len(rep) > 1 {
			e.publish(ctx, ch, str(rep, 1))
		}
		return nil
	case "stale":
		e.Stats.StaleRejects.Add(1)
		return ErrStale
	case "wrongtype":
		return ErrWrongType
	}
	return errReply
}

// extend runs ONCE.EXTEND.
func (e *Engine) extend(ctx context.Context, db int, key []byte, token uint64, lease int64) error {
	if lease <= 0 {
		return ErrInvalidLease
	}
	slot := Slot(key)
	rep, err := e.run(ctx, extendScript, db, key, slot, acked, strconv.FormatUint(token, 10), clampMs(lease))
	if err != nil {
		return err
	}
	var n atomic.Int64
	return e.okReply(ctx, "", rep, &n)
}

// status is ONCE.STATUS's record.
type status struct {
	state           string
	token           uint64
	fp              []byte
	hasFP           bool
	leaseMs, keepMs int64
	waiters         int
}

func (e *Engine) status(ctx context.Context, db int, key []byte) (status, bool, error) {
	slot := Slot(key)
	rep, err := e.run(ctx, statusScript, db, key, slot, nil)
	if err != nil {
		return status{}, false, err
	}
	switch s := str(rep, 0); s {
	case "free":
		return status{}, false, nil
	case "wrongtype":
		return status{}, false, ErrWrongType
	case "running", "done":
		st := status{state: s, token: tok(rep, 1), hasFP: str(rep, 2) == "1", leaseMs: -1, keepMs: -1}
		if st.hasFP {
			st.fp = []byte(str(rep, 3))
		}
		pttl := num(rep, 4)
		if s == "running" {
			st.leaseMs = pttl
		} else {
			st.keepMs = pttl
		}
		e.mu.Lock()
		if ks := e.keys[keyID{db, string(key)}]; ks != nil {
			st.waiters = len(ks.waiters)
		}
		e.mu.Unlock()
		return st, true, nil
	}
	return status{}, false, errReply
}

// release gives up a claim handed to a caller that has gone: the key
// becomes free and every instance's waiters look again.
func (e *Engine) release(ks *keyState, token uint64) {
	ctx, cancel := context.WithTimeout(e.ctx, e.cfg.Timeout)
	defer cancel()
	if _, err := e.run(ctx, releaseScript, ks.db, []byte(ks.key), ks.slot, nil, strconv.FormatUint(token, 10), Channel(ks.slot, ks.db)); err != nil {
		e.log.Warn("onceup: release", zap.Error(err))
	}
	e.mu.Lock()
	if cur := e.keys[keyID{ks.db, ks.key}]; cur != nil {
		e.kickLocked(cur)
	}
	e.mu.Unlock()
}

// Touched tells every instance's waiters on keys of database db to look at
// them now: call it after a command other than ONCE deleted or rewrote
// them (DEL, UNLINK…), so that a running record removed that way is a
// lapse at once rather than at its lease deadline. It sends one SPUBLISH
// per key, in one pipeline.
func (e *Engine) Touched(ctx context.Context, db int, keys ...[]byte) error {
	if len(keys) == 0 {
		return nil
	}
	pipe := e.c.Pipeline()
	for _, k := range keys {
		pipe.SPublish(ctx, Channel(Slot(k), db), fmt.Sprintf("l 0 %d 0 0 %s", len(k), k))
	}
	_, err := pipe.Exec(ctx)
	if err != nil {
		e.upstreamError(err)
	}
	return err
}

// Flushed tells every instance's waiters in database db (-1: in every
// database) to look at their keys now: call it after FLUSHDB or FLUSHALL.
// This instance's waiters look at once; the others' when the broadcast
// (PUBLISH on flushChannel) reaches their subscription connections.
func (e *Engine) Flushed(ctx context.Context, db int) error {
	e.flushLocal(db)
	msg := fmt.Sprintf("%d %s %d", db, e.id, e.seq.Add(1))
	err := e.c.Publish(ctx, flushChannel, msg).Err()
	if err != nil {
		e.upstreamError(err)
	}
	return err
}

// flushLocal has every local waited key of database db (-1: all) checked.
func (e *Engine) flushLocal(db int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ks := range e.keys {
		if db < 0 || ks.db == db {
			e.kickLocked(ks)
		}
	}
}

// flushEvent acts on a message of flushChannel, "db sender seq": each one
// once (a cluster delivers it on every subscription connection), and not
// our own (Flushed already looked).
func (e *Engine) flushEvent(msg []byte) {
	f := strings.Fields(string(msg))
	if len(f) != 3 {
		return
	}
	db, err1 := strconv.Atoi(f[0])
	seq, err2 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil || f[1] == e.id {
		return
	}
	e.mu.Lock()
	if seq <= e.flushSeen[f[1]] {
		e.mu.Unlock()
		return
	}
	if len(e.flushSeen) > 1024 {
		clear(e.flushSeen)
	}
	e.flushSeen[f[1]] = seq
	e.mu.Unlock()
	e.flushLocal(db)
}

// addWaiter registers w on key after a script saw the key running (rep is
// its {'running', pttl, token, hasfp, fp} reply), and has the key checked
// once the slot's subscription is up.
func (e *Engine) addWaiter(db int, key string, slot int, w *waiter, rep []any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.Stats.Waits.Add(1)
	e.Stats.waiting.Add(1)
	if e.closed {
		w.gone = true
		e.Stats.waiting.Add(-1)
		w.ch <- result{err: ErrShutdown}
		return
	}
	id := keyID{db, key}
	ks := e.keys[id]
	if ks == nil {
		ks = &keyState{key: key, db: db, slot: slot}
		e.keys[id] = ks
		e.slotRefLocked(ks, true)
	}
	w.ks = ks
	ks.waiters = append(ks.waiters, w)
	e.seenLocked(ks, rep)
	e.armLocked(ks, num(rep, 1))
	if sub := e.slots[chanID(db, slot)]; sub != nil && sub.state == subActive {
		e.kickLocked(ks)
	}
	// Otherwise the subscription's confirmation checks the key.
}

// seenLocked records the running run a script reported, if it is the
// newest seen.
func (e *Engine) seenLocked(ks *keyState, rep []any) {
	t := tok(rep, 2)
	if t < ks.awaited {
		return
	}
	ks.awaited = t
	ks.recHasFP = str(rep, 3) == "1"
	ks.recFP = nil
	if ks.recHasFP {
		ks.recFP = []byte(str(rep, 4))
	}
}

func (ks *keyState) hasClaimWaiter() bool {
	for _, w := range ks.waiters {
		if w.claim {
			return true
		}
	}
	return false
}

// armLocked sets the key's timer to check it when the lease of pttl ms
// runs out (with no expiry, after the default lease).
func (e *Engine) armLocked(ks *keyState, pttl int64) {
	d := time.Duration(pttl)*time.Millisecond + time.Millisecond
	switch {
	case pttl < 0:
		d = e.cfg.DefaultLease
	case pttl > maxTimerMs:
		// Too long for a time.Duration (or nearly): look again after a
		// day, which re-arms, rather than wrap into a timer that fires
		// at once, over and over.
		d = maxTimerMs * time.Millisecond
	}
	if !ks.hasClaimWaiter() {
		d += waitGrace
	}
	e.setTimerLocked(ks, d)
}

func (e *Engine) setTimerLocked(ks *keyState, d time.Duration) {
	if ks.timer != nil {
		ks.timer.Reset(d)
		return
	}
	ks.timer = time.AfterFunc(d, func() {
		e.mu.Lock()
		e.kickLocked(ks)
		e.mu.Unlock()
	})
}

// kickLocked has the key checked (soon, or again after the check under
// way). At most maxChecks checker goroutines run; the other keys queue.
func (e *Engine) kickLocked(ks *keyState) {
	if ks.dropped || e.closed {
		return
	}
	if ks.checking {
		ks.again = true
		return
	}
	ks.checking = true
	e.checkQ = append(e.checkQ, ks)
	if e.checkers < maxChecks {
		e.checkers++
		e.wg.Add(1)
		go e.checker()
	}
}

// checker checks queued keys until none is left.
func (e *Engine) checker() {
	defer e.wg.Done()
	for {
		e.mu.Lock()
		if len(e.checkQ) == 0 || e.closed {
			e.checkers--
			e.mu.Unlock()
			return
		}
		ks := e.checkQ[0]
		e.checkQ[0] = nil
		e.checkQ = e.checkQ[1:]
		e.mu.Unlock()
		e.checkLoop(ks)
	}
}

// checkLoop looks at a waited key in the upstream: hands a lapsed claim to
// the oldest local claim waiter, or delivers the outcome the waiters missed,
// or re-arms the timer for the run under way.
func (e *Engine) checkLoop(ks *keyState) {
	e.mu.Lock()
	e.checksNow++
	e.checksPeak = max(e.checksPeak, e.checksNow)
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.checksNow--
		e.mu.Unlock()
	}()
	for {
		e.mu.Lock()
		if ks.dropped || e.closed || len(ks.waiters) == 0 {
			ks.checking = false
			e.mu.Unlock()
			return
		}
		ks.again = false
		var w0 *waiter
		for _, w := range append([]*waiter(nil), ks.waiters...) {
			if !w.claim {
				continue
			}
			if w.hasLeft() {
				// Its caller has left and has not withdrawn yet: the
				// takeover is not run for it, not even for the moment
				// its withdrawal takes (KV-13).
				e.leftLocked(w)
				continue
			}
			w0 = w
			break
		}
		if len(ks.waiters) == 0 {
			e.dropLocked(ks)
			ks.checking = false
			e.mu.Unlock()
			return
		}
		asked := ks.awaited
		awaited := ""
		if asked > 0 {
			awaited = strconv.FormatUint(asked, 10)
		}
		args := []any{"w", e.leaseMs(0), "0", "", b01(ks.recHasFP), ks.recFP, awaited, ""}
		if w0 != nil {
			args = []any{"t", e.leaseMs(w0.lease), b01(w0.hasFP), w0.fp, b01(ks.recHasFP), ks.recFP, awaited, w0.reqID}
		}
		hook := e.checkRan
		e.mu.Unlock()

		ctx, cancel := context.WithTimeout(e.ctx, e.cfg.Timeout)
		var repl func([]any) bool
		if w0 != nil {
			repl = claimed
		}
		rep, err := e.check(ctx, ks, asked, repl, args)
		cancel()
		if hook != nil {
			hook(ks.key)
		}

		e.mu.Lock()
		if err != nil {
			ks.fails++
			ks.checking = false
			if !ks.dropped && !e.closed {
				e.setTimerLocked(ks, min(50*time.Millisecond<<min(ks.fails, 5), time.Second))
			}
			e.mu.Unlock()
			if e.ctx.Err() == nil {
				e.log.Debug("onceup: check", zap.String("key", ks.key), zap.Error(err))
			}
			return
		}
		ks.fails = 0
		rel := e.applyLocked(ks, w0, rep, asked)
		again := ks.again || rel != 0
		if !again {
			ks.checking = false
		}
		e.mu.Unlock()
		if rel != 0 {
			ctx, cancel := context.WithTimeout(e.ctx, e.cfg.Timeout)
			_, err := e.run(ctx, releaseScript, ks.db, []byte(ks.key), ks.slot, nil, strconv.FormatUint(rel, 10), Channel(ks.slot, ks.db))
			cancel()
			if err != nil {
				e.log.Warn("onceup: release", zap.Error(err))
			}
		}
		if !again {
			return
		}
	}
}

// applyLocked acts on a check's reply; asked is the run the check asked
// about (ks.awaited when it started). It returns a token to release: a
// claim taken for a waiter that has gone meanwhile.
func (e *Engine) applyLocked(ks *keyState, w0 *waiter, rep []any, asked uint64) uint64 {
	if s := str(rep, 0); (s == "done" || s == "failed") && ks.awaited != asked {
		// A newer run was seen while the check ran (a waiter came that
		// found it running): the reply may be how the older run ended,
		// which the newer run's waiters must not get. Look again.
		ks.again = true
		return 0
	}
	switch str(rep, 0) {
	case "claimed":
		t := tok(rep, 1)
		if w0 != nil && !w0.gone && w0.hasLeft() {
			// Its caller left while the takeover ran: the claim is
			// given back, and the check looks again for the next
			// waiter (KV-9: one claim at a time).
			e.leftLocked(w0)
		}
		if w0 == nil || w0.gone {
			return t
		}
		if !ks.recHasFP && w0.hasFP {
			ks.recFP, ks.recHasFP = w0.fp, true
		}
		ks.awaited = t
		e.Stats.Handoffs.Add(1)
		e.Stats.Claims.Add(1)
		e.deliverLocked(w0, result{state: "claimed", token: t})
		if len(ks.waiters) == 0 {
			e.dropLocked(ks)
		} else {
			e.armLocked(ks, e.leaseMs(w0.lease))
		}
	case "running":
		e.seenLocked(ks, rep)
		if ks.recHasFP {
			for _, w := range append([]*waiter(nil), ks.waiters...) {
				if w.claim && w.hasFP && string(w.fp) != string(ks.recFP) {
					e.Stats.Mismatches.Add(1)
					e.deliverLocked(w, result{err: ErrMismatch})
				}
			}
		}
		if len(ks.waiters) == 0 {
			e.dropLocked(ks)
		} else {
			e.armLocked(ks, num(rep, 1))
		}
	case "done":
		e.Stats.Rechecked.Add(int64(len(ks.waiters)))
		e.doneLocked(ks, []byte(str(rep, 1)), str(rep, 2) == "1", str(rep, 3))
	case "failed":
		e.Stats.Rechecked.Add(int64(len(ks.waiters)))
		e.wakeAllLocked(ks, result{state: "failed", answer: []byte(str(rep, 1))})
	case "free":
		if ks.hasClaimWaiter() {
			ks.again = true // one came meanwhile: look again, to claim for it
			break
		}
		e.wakeAllLocked(ks, result{state: "free"})
	case "wrongtype":
		e.wakeAllLocked(ks, result{err: ErrWrongType})
	default:
		e.wakeAllLocked(ks, result{err: errReply})
	}
	return 0
}

// doneLocked gives an answer to every waiter of ks, but -MISMATCH to claim
// waiters whose fingerprint differs from the answer's.
func (e *Engine) doneLocked(ks *keyState, answer []byte, hasFP bool, fp string) {
	for _, w := range append([]*waiter(nil), ks.waiters...) {
		if w.claim && hasFP && w.hasFP && string(w.fp) != fp {
			e.Stats.Mismatches.Add(1)
			e.deliverLocked(w, result{err: ErrMismatch})
			continue
		}
		e.deliverLocked(w, result{state: "done", answer: answer})
	}
	e.dropLocked(ks)
}

func (e *Engine) wakeAllLocked(ks *keyState, r result) {
	for _, w := range append([]*waiter(nil), ks.waiters...) {
		e.deliverLocked(w, r)
	}
	e.dropLocked(ks)
}

// deliverLocked gives w its one result and removes it from its key.
func (e *Engine) deliverLocked(w *waiter, r result) {
	if w.gone {
		return
	}
	w.gone = true
	e.removeLocked(w)
	e.Stats.waiting.Add(-1)
	e.Stats.Wakeups.Add(1)
	w.ch <- r
}

// leftLocked takes w, whose caller has left, out of its key's line; its
// withdrawal (cancel) gets errGone.
func (e *Engine) leftLocked(w *waiter) {
	if w.gone {
		return
	}
	w.gone = true
	e.removeLocked(w)
	e.Stats.waiting.Add(-1)
	w.ch <- result{err: errGone}
}

func (e *Engine) removeLocked(w *waiter) {
	ks := w.ks
	for i, x := range ks.waiters {
		if x == w {
			ks.waiters = append(ks.waiters[:i:i], ks.waiters[i+1:]...)
			return
		}
	}
}

// dropLocked forgets a key that has no waiters left.
func (e *Engine) dropLocked(ks *keyState) {
	if ks.dropped {
		return
	}
	ks.dropped = true
	if ks.timer != nil {
		ks.timer.Stop()
	}
	if id := (keyID{ks.db, ks.key}); e.keys[id] == ks {
		delete(e.keys, id)
	}
	e.slotRefLocked(ks, false)
}

// cancel withdraws a waiter whose wait ended (timeout or disconnect). If
// it had already been given a result, cancel returns it (ok true); a claim
// handed to a caller that has gone is released at once (unless the
// engine is closing: the claim then lapses at its lease).
func (e *Engine) cancel(w *waiter, gone bool) (result, bool) {
	e.mu.Lock()
	if !w.gone {
		w.gone = true
		e.Stats.waiting.Add(-1)
		ks := w.ks
		e.removeLocked(w)
		if len(ks.waiters) == 0 {
			e.dropLocked(ks)
		}
		e.mu.Unlock()
		return result{}, false
	}
	e.mu.Unlock()
	r := <-w.ch
	if gone && r.state == "claimed" {
		e.releaseLater(w.ks, r.token)
	}
	return r, true
}

// releaseLater releases, on a goroutine of its own, a claim handed to a
// caller that has gone (unless the engine is closing: the claim then
// lapses at its lease).
func (e *Engine) releaseLater(ks *keyState, token uint64) {
	e.mu.Lock()
	closed := e.closed
	if !closed {
		e.wg.Add(1) // under mu, before Close can reach wg.Wait
	}
	e.mu.Unlock()
	if !closed {
		go func() {
			defer e.wg.Done()
			e.release(ks, token)
		}()
	}
}

// dispatch hands an announcement on a channel of database db to the local
// waiters of its key.
func (e *Engine) dispatch(db int, msg []byte) {
	ev, ok := parseEvent(msg)
	if !ok {
		e.log.Warn("onceup: malformed announcement", zap.ByteString("msg", msg))
		return
	}
	e.Stats.Events.Add(1)
	if ev.kind != 'l' && e.dropEvents.Load() {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ks := e.keys[keyID{db, string(ev.key)}]
	if ks == nil {
		return
	}
	switch ev.kind {
	case 'd':
		if ev.token >= ks.awaited {
			e.doneLocked(ks, ev.payload, ev.hasFP, string(ev.fp))
		}
	case 'f':
		if ev.token >= ks.awaited {
			e.wakeAllLocked(ks, result{state: "failed", answer: ev.payload})
		}
	case 'l':
		e.kickLocked(ks)
	}
}

// event is a parsed announcement: "kind token keylen hasfp fplen key fp
// payload".
type event struct {
	kind    byte
	token   uint64
	key     []byte
	hasFP   bool
	fp      []byte
	payload []byte
}

func parseEvent(b []byte) (event, bool) {
	var ev event
	var f [5]string
	rest := b
	for i := range f {
		j := 0
		for j < len(rest) && rest[j] != ' ' {
			j++
		}
		if j == len(rest) {
			return ev, false
		}
		f[i], rest = string(rest[:j]), rest[j+1:]
	}
	if len(f[0]) != 1 {
		return ev, false
	}
	ev.kind = f[0][0]
	var err error
	if ev.token, err = strconv.ParseUint(f[1], 10, 64); err != nil {
		return ev, false
	}
	kl, err1 := strconv.Atoi(f[2])
	fl, err2 := strconv.Atoi(f[4])
	if err1 != nil || err2 != nil || kl < 0 || fl < 0 || kl+fl > len(rest) {
		return ev, false
	}
	ev.hasFP = f[3] == "1"
	ev.key = rest[:kl]
	ev.fp = rest[kl : kl+fl]
	ev.payload = rest[kl+fl:]
	return ev, true
}
