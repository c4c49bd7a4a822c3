package commands

import (
	"bytes"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
)

// Blocking list commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP), as
// Redis 7.0 has them:
//
//   - The command runs in an exclusive transaction: if one of its keys
//     holds a list, it is served at once from the first such key; inside
//     EXEC it answers nil at once; otherwise it queues a waiter on each of
//     its keys (in that same transaction, so no push can slip between the
//     check and the queueing) and the connection blocks (resp.Conn.Block)
//     without holding the store's lock.
//   - A write to a key that has waiters marks it ready (listBlocking is a
//     TxHook); at the end of that write's transaction — after the whole
//     EXEC for a push in MULTI — each ready key that holds a list serves
//     its waiters in the order they blocked (FIFO per key), popping for
//     each in that same transaction, as Redis's handleClientsBlockedOnKeys
//     does after the command. The popped element is handed to the waiter
//     with the transaction's durability ticket, and its reply waits for
//     it (KV-6): the pop and the hand-over are one write, never one
//     without the other.
//   - A BLMOVE served pushes onto its destination in the same
//     transaction, which may serve that key's waiters in turn; a
//     destination of another kind answers the waiter WRONGTYPE and pops
//     nothing, as in Redis 7.0's serveClientBlockedOnList.
//   - The timeout (a timer), a client that leaves, and CLIENT UNBLOCK
//     withdraw the waiter from every key, unless it was served in the same
//     instant: then the element is its reply.
//
// A served waiter whose client leaves before its reply is sent loses the
// element, as Redis does (it pops into a client's output buffer, and a
// connection that closes drops the buffer): the pop is durable, the
// element is gone from the list and told to no one.
type listBlocking struct {
	// n is the number of queued waiters: the hook is active while > 0.
	n atomic.Int64

	mu     sync.Mutex
	queues map[blockKey][]*listWaiter

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

// listWaiter is one blocked command.
type listWaiter struct {
	db   int
	keys [][]byte
	// dst, for BLMOVE and BRPOPLPUSH, is where the element goes.
	dst             []byte
	left, toLeft    bool
	count           int64 // BLMPOP's COUNT; 1 for the others
	queued          bool  // under listBlocking.mu: in the queues
	ch              chan listServed
	pending         listServed
	served, hasDest bool
}

// listServed is what a waiter is handed: the key served from, the
// popped elements (copies), or an error; and the ticket of the
// transaction that popped them.
type listServed struct {
	key    []byte
	elems  [][]byte
	err    error
	ticket store.Ticket
}

var _ SwapHook = (*listBlocking)(nil)

// Active reports whether a client waits on a list.
func (b *listBlocking) Active() bool { return b.n.Load() > 0 }

// Touched marks key ready if a client waits on it.
func (b *listBlocking) Touched(tx store.Tx, db int, key []byte) {
	b.mu.Lock()
	_, waited := b.queues[blockKey{db, string(key)}]
	b.mu.Unlock()
	if waited {
		b.markReady(tx, blockKey{db, string(key)})
	}
}

func (b *listBlocking) markReady(tx store.Tx, k blockKey) {
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

func (b *listBlocking) Flushing(store.Tx, int) {}
func (b *listBlocking) Flushed(store.Tx, int)  {}

func (b *listBlocking) Swapping(store.Tx, int, int) {}

// Swapped marks ready every waited key of the two databases, as Redis's
// scanDatabaseForReadyKeys after SWAPDB.
func (b *listBlocking) Swapped(tx store.Tx, a, c int) {
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
func (b *listBlocking) Commit() func(store.Ticket) {
	if len(b.ready) == 0 {
		return nil
	}
	tx := b.tx
	var served []*listWaiter
	for i := 0; i < len(b.ready); i++ { // serving may make more keys ready
		k := b.ready[i]
		for {
			w := b.first(k)
			if w == nil {
				break
			}
			key := []byte(k.key)
			elems, v, ok, err := getList(tx, k.db, key)
			if err != nil || !ok {
				break
			}
			res := listServed{key: key}
			if w.hasDest {
				if _, _, _, derr := getList(tx, k.db, w.dst); derr == ErrWrongType {
					res.err = derr
				} else if val, _, merr := move(tx, k.db, key, w.dst, w.left, w.toLeft); merr != nil {
					res.err = merr
				} else {
					res.elems = [][]byte{val}
				}
			} else {
				taken, rest := pop(elems, int(min(w.count, int64(len(elems)))), w.left)
				res.elems = cloneAll(taken)
				if perr := putList(tx, k.db, key, rest, v.ExpireAt); perr != nil {
					res = listServed{err: perr}
				}
			}
			b.dequeue(w)
			w.pending = res
			served = append(served, w)
		}
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

// first is the longest-waiting client on k, nil if none.
func (b *listBlocking) first(k blockKey) *listWaiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q := b.queues[k]; len(q) > 0 {
		return q[0]
	}
	return nil
}

// enqueue queues w on each of its keys, in the transaction that found
// them empty.
func (b *listBlocking) enqueue(w *listWaiter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.queues == nil {
		b.queues = map[blockKey][]*listWaiter{}
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
func (b *listBlocking) dequeue(w *listWaiter) bool {
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

// bpopCmd is BLPOP (left) or BRPOP.
func bpopCmd(left bool) Handler {
	return func(x *Ctx) {
		n := len(x.Args)
		timeout, err := parseTimeout(x.Args[n-1])
		if err != nil {
			x.Fail(err)
			return
		}
		keys := x.Args[1 : n-1]
		key, elems, ok, err := x.firstList(keys, left, 1)
		switch {
		case err != nil:
			x.Fail(err)
		case ok:
			x.W.Array(2)
			x.W.Bulk(key)
			x.W.Bulk(elems[0])
		case x.InExec:
			x.W.NullArray()
		default:
			x.blockList(&listWaiter{keys: keys, left: left, count: 1}, timeout, func(w *resp.Writer, r listServed) {
				w.Array(2)
				w.Bulk(r.key)
				w.Bulk(r.elems[0])
			})
		}
	}
}

// firstList pops up to count elements off the first of keys that holds
// a list, as mpop, counting the lookups it made.
func (x *Ctx) firstList(keys [][]byte, left bool, count int64) ([]byte, [][]byte, bool, error) {
	key, elems, ok, err := mpop(x.Tx, x.DB, keys, left, count)
	x.countLookup(ok || err == ErrWrongType)
	return key, elems, ok, err
}

func blmpopCmd(x *Ctx) {
	// The timeout after the rest, as Redis 7.0's lmpopGenericCommand.
	o, err := parseMpop(x.Args[2:])
	if err != nil {
		x.Fail(err)
		return
	}
	timeout, err := parseTimeout(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	key, elems, ok, err := x.firstList(o.keys, o.left, o.count)
	switch {
	case err != nil:
		x.Fail(err)
	case ok:
		x.writeKeyElems(key, elems)
	case x.InExec:
		x.W.NullArray()
	default:
		x.blockList(&listWaiter{keys: o.keys, left: o.left, count: o.count}, timeout, func(w *resp.Writer, r listServed) {
			w.Array(2)
			w.Bulk(r.key)
			w.Array(len(r.elems))
			for _, e := range r.elems {
				w.Bulk(e)
			}
		})
	}
}

func blmoveCmd(x *Ctx) {
	from, err := whereArg(x.Args[3])
	if err != nil {
		x.Fail(err)
		return
	}
	to, err := whereArg(x.Args[4])
	if err != nil {
		x.Fail(err)
		return
	}
	x.blmove(from, to, x.Args[5])
}

func brpoplpushCmd(x *Ctx) { x.blmove(false, true, x.Args[3]) }

// blmove is BLMOVE from the head (fromLeft) or tail of the source to the
// head (toLeft) or tail of the destination, with timeout argument t.
func (x *Ctx) blmove(fromLeft, toLeft bool, t []byte) {
	timeout, err := parseTimeout(t)
	if err != nil {
		x.Fail(err)
		return
	}
	_, _, ok, err := x.list(x.Args[1])
	switch {
	case err != nil:
		x.Fail(err)
	case ok:
		x.lmove(fromLeft, toLeft)
	case x.InExec:
		x.W.Null()
	default:
		w := &listWaiter{keys: x.Args[1:2], dst: x.Args[2], hasDest: true, left: fromLeft, toLeft: toLeft, count: 1}
		x.blockList(w, timeout, func(w *resp.Writer, r listServed) { w.Bulk(r.elems[0]) })
	}
}

// blockList queues w on its keys (copied: the arguments are the
// connection's) and blocks the connection until w is served, its
// timeout (ms, 0: none) runs out, CLIENT UNBLOCK ends it or the client
// leaves. reply writes a served waiter's reply.
func (x *Ctx) blockList(w *listWaiter, timeoutMs int64, reply func(*resp.Writer, listServed)) {
	b := &x.S.lists
	w.db = x.DB
	keys := make([][]byte, len(w.keys))
	for i, k := range w.keys {
		keys[i] = bytes.Clone(k)
	}
	w.keys, w.dst = keys, bytes.Clone(w.dst)
	w.ch = make(chan listServed, 1)
	b.enqueue(w)
	c, wr := x.Conn, x.W
	c.Block(func(gone <-chan struct{}) {
		var timer <-chan time.Time
		// A timeout too long for a time.Duration (some 292 years) is as
		// good as none.
		if timeoutMs > 0 && timeoutMs <= math.MaxInt64/int64(time.Millisecond) {
			t := time.NewTimer(time.Duration(timeoutMs) * time.Millisecond)
			defer t.Stop()
			timer = t.C
			x.S.obs.blockedTimeout.Add(1)
			defer x.S.obs.blockedTimeout.Add(-1)
		}
		select {
		case <-gone:
			if !b.dequeue(w) {
				<-w.ch // served as it left: lost, as in Redis
			}
			return
		default:
		}
		unblock := c.Unblockable()
		var r listServed
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
			// Served in the same instant: the element is its reply,
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
