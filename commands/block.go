package commands

import (
	"bytes"
	"math"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
)

// The blocking pops — of lists (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP:
// listblock.go) and of sorted sets (BZPOPMIN, BZPOPMAX, BZMPOP:
// zblock.go) — as Redis 7.0 has them:
//
//   - The command runs in an exclusive transaction: if one of its keys
//     holds a value of its kind, it is served at once from the first such
//     key; inside EXEC it answers nil at once; otherwise it queues a
//     waiter on each of its keys (in that same transaction, so no write
//     can slip between the check and the queueing) and the connection
//     blocks (resp.Conn.Block) without holding the store's lock.
//   - A write to a key that has waiters marks it ready (blocking is a
//     TxHook); at the end of that write's transaction — after the whole
//     EXEC for a write in MULTI — each ready key serves, in the order they
//     blocked (FIFO per key), the waiters of the kind of value it now
//     holds, passing over the others (they stay queued: a list waiter and
//     a sorted set waiter may wait on one key), until it is emptied, as
//     Redis's handleClientsBlockedOnKeys does after the command. Each is
//     popped for in that same transaction, and what it pops is handed to
//     the waiter with the transaction's durability ticket, and its reply
//     waits for it (KV-6): the pop and the hand-over are one write, never
//     one without the other. A waiter on several keys is served from the
//     first of them to be ready, and withdrawn from all.
//   - A BLMOVE served pushes onto its destination in the same
//     transaction, which may serve that key's waiters in turn; a
//     destination of another kind answers the waiter WRONGTYPE and pops
//     nothing, as in Redis 7.0's serveClientBlockedOnList.
//   - The timeout (a timer), a client that leaves, and CLIENT UNBLOCK
//     withdraw the waiter from every key, unless it was served in the same
//     instant: then what it popped is its reply.
//
// A served waiter whose client leaves before its reply is sent loses what
// it popped, as Redis does (it pops into a client's output buffer, and a
// connection that closes drops the buffer): the pop is durable, the
// element is gone and told to no one.
type blocking struct {
	// n is the number of queued waiters: the hook is active while > 0.
	n atomic.Int64

	mu     sync.Mutex
	queues map[blockKey][]*blockWaiter

	// The fields below belong to the exclusive transaction that runs
	// (they are only touched under the store's exclusive lock).
	tx    store.Tx
	ready []blockKey
	isRdy map[blockKey]bool
}

// blockKey is a key of a database.
type blockKey struct {
	db  int
	key string
}

// blockWaiter is one blocked command.
type blockWaiter struct {
	db   int
	keys [][]byte
	// kind is the kind of value it pops from; a key that holds another
	// kind passes it over. It is known before serve pops, so that the
	// waiter is taken off its queues first: a timeout in the same
	// instant then finds it served, never withdrawn after its pop.
	kind store.Kind
	// serve pops for the waiter from key, which holds v (of kind), in
	// tx.
	serve  blockServe
	queued bool // under blocking.mu: in the queues
	ch     chan blockServed
	// pending is what it was served, until the transaction's ticket.
	pending blockServed
}

// blockServe pops for a waiter from key of db, which holds v, in tx.
type blockServe func(tx store.Tx, db int, key []byte, v store.Value) blockServed

// blockServed is what a waiter is handed: the key served from, what was
// popped (copies: a list's elements, or a sorted set's entries), or an
// error; and the ticket of the transaction that popped them.
type blockServed struct {
	key     []byte
	elems   [][]byte
	entries []zEntry
	err     error
	ticket  store.Ticket
}

var _ SwapHook = (*blocking)(nil)

// Active reports whether a client is blocked.
func (b *blocking) Active() bool { return b.n.Load() > 0 }

// Touched marks key ready if a client waits on it.
func (b *blocking) Touched(tx store.Tx, db int, key []byte) {
	k := blockKey{db, string(key)}
	b.mu.Lock()
	_, waited := b.queues[k]
	b.mu.Unlock()
	if waited {
		b.markReady(tx, k)
	}
}

func (b *blocking) markReady(tx store.Tx, k blockKey) {
	b.tx = tx
	if b.isRdy[k] {
		return
	}
	if b.isRdy == nil {
		b.isRdy = map[blockKey]bool{}
	}
	b.isRdy[k] = true
	b.ready = append(b.ready, k)
}

// Flushing and Flushed do nothing: a flush gives no key a value.
func (b *blocking) Flushing(store.Tx, int) {}
func (b *blocking) Flushed(store.Tx, int)  {}

func (b *blocking) Swapping(store.Tx, int, int) {}

// Swapped marks ready every waited key of the two databases, as Redis's
// scanDatabaseForReadyKeys after SWAPDB.
func (b *blocking) Swapped(tx store.Tx, a, c int) {
	b.mu.Lock()
	var ks []blockKey
	for k := range b.queues {
		if k.db == a || k.db == c {
			ks = append(ks, k)
		}
	}
	b.mu.Unlock()
	for _, k := range ks {
		b.markReady(tx, k)
	}
}

// Commit serves the ready keys' waiters in the transaction that ends,
// and returns the hand-over of what they were served.
func (b *blocking) Commit() func(store.Ticket) {
	if len(b.ready) == 0 {
		return nil
	}
	tx := b.tx
	var served []*blockWaiter
	for i := 0; i < len(b.ready); i++ { // serving may make more keys ready
		k := b.ready[i]
		// No longer marked, as Redis takes a key off db->ready_keys before
		// serving it: a write that serving makes to it marks it again.
		delete(b.isRdy, k)
		served = b.serveKey(tx, k, served)
	}
	b.ready, b.tx = b.ready[:0], nil
	clear(b.isRdy)
	return func(t store.Ticket) {
		for _, w := range served {
			r := w.pending
			r.ticket = t
			w.ch <- r
		}
	}
}

// serveKey serves k's waiters of the kind k holds, in the order they
// blocked, until k is gone, appending them to served.
func (b *blocking) serveKey(tx store.Tx, k blockKey, served []*blockWaiter) []*blockWaiter {
	key := []byte(k.key)
	v, ok, err := tx.Get(k.db, key)
	if err != nil || !ok {
		return served
	}
	for _, w := range b.waiting(k) {
		if w.kind != v.Kind || !b.dequeue(w) { // another kind, or withdrawn
			continue
		}
		w.pending = w.serve(tx, k.db, key, v)
		w.pending.key = key
		served = append(served, w)
		if v, ok, err = tx.Get(k.db, key); err != nil || !ok {
			break
		}
	}
	return served
}

// waiting is a copy of k's queue: its waiters, longest-waiting first.
func (b *blocking) waiting(k blockKey) []*blockWaiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*blockWaiter(nil), b.queues[k]...)
}

// enqueue queues w on each of its keys, in the transaction that found
// them empty.
func (b *blocking) enqueue(w *blockWaiter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.queues == nil {
		b.queues = map[blockKey][]*blockWaiter{}
	}
	for _, key := range w.keys {
		k := blockKey{w.db, string(key)}
		if q := b.queues[k]; len(q) > 0 && q[len(q)-1] == w {
			continue // a key named twice: queued once
		}
		b.queues[k] = append(b.queues[k], w)
	}
	w.queued = true
	b.n.Add(1)
}

// dequeue takes w off every queue; it reports false if it was not
// queued (served, or withdrawn already).
func (b *blocking) dequeue(w *blockWaiter) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !w.queued {
		return false
	}
	w.queued = false
	for _, key := range w.keys {
		k := blockKey{w.db, string(key)}
		q := b.queues[k]
		for i, o := range q {
			if o == w {
				q = append(q[:i:i], q[i+1:]...)
				break
			}
		}
		if len(q) == 0 {
			delete(b.queues, k)
		} else {
			b.queues[k] = q
		}
	}
	b.n.Add(-1)
	return true
}

// block queues w on its keys (copied: the arguments are the
// connection's) and blocks the connection until w is served, its
// timeout (ms, 0: none) runs out, CLIENT UNBLOCK ends it or the client
// leaves. reply writes a served waiter's reply.
func (x *Ctx) block(w *blockWaiter, timeoutMs int64, reply func(*resp.Writer, blockServed)) {
	b := &x.S.blocked
	w.db = x.DB
	keys := make([][]byte, len(w.keys))
	for i, k := range w.keys {
		keys[i] = bytes.Clone(k)
	}
	w.keys = keys
	w.ch = make(chan blockServed, 1)
	b.enqueue(w)
	c, wr := x.Conn, x.W
	c.Block(func(gone <-chan struct{}) {
		timer, stop := x.S.blockTimer(timeoutMs)
		defer stop()
		select {
		case <-gone:
			if !b.dequeue(w) {
				<-w.ch // served as it left: lost, as in Redis
			}
			return
		default:
		}
		unblock := c.Unblockable()
		var r blockServed
		got := false
		var um resp.UnblockMode
		select {
		case r = <-w.ch:
			got = true
		case <-gone:
			if !b.dequeue(w) {
				<-w.ch
			}
			return
		case <-timer:
			um = resp.UnblockTimeout
		case um = <-unblock:
		}
		if m, ok := c.EndUnblockable(); ok && !got {
			um = m
		}
		if !got {
			if b.dequeue(w) {
				if um == resp.UnblockError {
					wr.Error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
				} else {
					wr.NullArray()
				}
				return
			}
			// Served in the same instant: what it popped is its reply,
			// not lost.
			r = <-w.ch
		}
		if r.err != nil {
			wr.Error(errorText(r.err))
			return
		}
		c.Await(r.ticket)
		reply(wr, r)
	})
}

// parseTimeout parses a blocking command's timeout in seconds as Redis
// 7.0.15's getTimeoutFromObjectOrReply does: a long double, times 1000,
// rounded up to milliseconds (so 0.0001 waits 1 ms, and -0.001, whose
// product is just above -1, waits for good: 0 is no timeout). A value
// that C's conversion to long long cannot hold (inf, 1e300) becomes
// LLONG_MIN there on x86-64, so negative. A deadline past int64 is no
// error in 7.0 (7.2 made it one): it waits for good.
func parseTimeout(b []byte) (int64, error) {
	f, ok := parseLongDouble(b)
	if !ok {
		return 0, ErrTimeoutFloat
	}
	if f.IsInf() {
		return 0, ErrTimeoutNegative
	}
	ms := new(big.Float).SetPrec(ldPrec).Mul(f, big.NewFloat(1000))
	n, acc := ms.Int(nil) // toward zero
	if acc == big.Below {
		n.Add(n, big.NewInt(1)) // a positive fraction: ceill
	}
	if !n.IsInt64() || n.Sign() < 0 {
		return 0, ErrTimeoutNegative
	}
	return n.Int64(), nil
}

// blockTimer is the timer of a blocked command's timeout in milliseconds,
// counted among INFO's blocked clients with a timeout until stop: none
// for 0, nor for a timeout too long for a time.Duration (some 292
// years), which is as good as none and must not wrap into one that runs
// out at once.
func (s *Server) blockTimer(timeoutMs int64) (timer <-chan time.Time, stop func()) {
	if timeoutMs <= 0 || timeoutMs > math.MaxInt64/int64(time.Millisecond) {
		return nil, func() {}
	}
	t := time.NewTimer(time.Duration(timeoutMs) * time.Millisecond)
	s.obs.blockedTimeout.Add(1)
	return t.C, func() {
		t.Stop()
		s.obs.blockedTimeout.Add(-1)
	}
}
