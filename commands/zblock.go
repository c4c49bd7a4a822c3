package commands

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncekv/oncekv/internal/zcodec"
	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
)

// The blocking pops BZPOPMIN, BZPOPMAX and BZMPOP. A command that finds
// its keys empty registers a wake-up channel on each (zwaiters, a TxHook:
// any write to one of them signals it after its transaction), ends its
// transaction, and waits outside the store's lock, as ONCE.WAIT does:
// for a wake-up, on which it tries again in a transaction of its own, its
// timeout, its client leaving or CLIENT UNBLOCK. Inside EXEC it answers at
// once, as Redis does. Several clients blocked on one key race for what a
// write brings (Redis serves them in the order they blocked).

// zEntry is a member and its score.
type zEntry = zcodec.Entry

// zwaiters are the wake-up channels of the blocked pops, by key.
type zwaiters struct {
	mu      sync.Mutex
	keys    map[watchKey]map[chan struct{}]struct{}
	touched []chan struct{}
	// n counts the blocked pops and pending tells that touched is not
	// empty, read without the lock by every write (Active, Commit).
	n       atomic.Int64
	pending atomic.Bool
}

func (z *zwaiters) add(db int, keys [][]byte, ch chan struct{}) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.keys == nil {
		z.keys = make(map[watchKey]map[chan struct{}]struct{})
	}
	for _, k := range keys {
		wk := watchKey{db, string(k)}
		if z.keys[wk] == nil {
			z.keys[wk] = make(map[chan struct{}]struct{})
		}
		z.keys[wk][ch] = struct{}{}
	}
	z.n.Add(1)
}

func (z *zwaiters) remove(db int, keys [][]byte, ch chan struct{}) {
	z.mu.Lock()
	defer z.mu.Unlock()
	for _, k := range keys {
		wk := watchKey{db, string(k)}
		delete(z.keys[wk], ch)
		if len(z.keys[wk]) == 0 {
			delete(z.keys, wk)
		}
	}
	z.n.Add(-1)
}

// Active reports whether a pop is blocked.
func (z *zwaiters) Active() bool { return z.n.Load() > 0 }

// Touched notes the waiters of key, woken at Commit.
func (z *zwaiters) Touched(_ store.Tx, db int, key []byte) {
	z.mu.Lock()
	defer z.mu.Unlock()
	for ch := range z.keys[watchKey{db, string(key)}] {
		z.touched = append(z.touched, ch)
		z.pending.Store(true)
	}
}

// Flushing wakes nobody: a flush adds no member.
func (z *zwaiters) Flushing(store.Tx, int) {}

// Flushed does nothing.
func (z *zwaiters) Flushed(store.Tx, int) {}

// Swapping wakes every waiter of both databases: either may now hold a
// set at its key.
func (z *zwaiters) Swapping(_ store.Tx, a, b int) {
	z.mu.Lock()
	defer z.mu.Unlock()
	for wk, m := range z.keys {
		if wk.db == a || wk.db == b {
			for ch := range m {
				z.touched = append(z.touched, ch)
				z.pending.Store(true)
			}
		}
	}
}

// Swapped does nothing: Swapping did the work.
func (z *zwaiters) Swapped(store.Tx, int, int) {}

// Commit wakes the waiters of the keys written.
func (z *zwaiters) Commit() func(store.Ticket) {
	if !z.pending.Load() {
		return nil
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	wake := z.touched
	z.touched = nil
	z.pending.Store(false)
	return func(store.Ticket) {
		for _, ch := range wake {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// bzpopCmd is BZPOPMIN and BZPOPMAX key [key …] timeout.
func bzpopCmd(maxFirst bool) Handler {
	return func(x *Ctx) {
		timeout, err := parseTimeout(x.Args[len(x.Args)-1])
		if err != nil {
			x.Fail(err)
			return
		}
		keys := x.Args[1 : len(x.Args)-1]
		x.zblock(keys, timeout, func(w *resp.Writer, key []byte, popped []zEntry) {
			e := popped[0]
			w.Array(3)
			w.Bulk(key)
			w.Bulk(e.Member)
			writeScore(w, e.Score)
		}, 1, maxFirst)
	}
}

// bzmpopCmd is BZMPOP timeout numkeys key [key …] MIN|MAX [COUNT count].
func bzmpopCmd(x *Ctx) {
	timeout, err := parseTimeout(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	keys, ok := x.parseNumkeys(2, ErrNumkeys)
	if !ok {
		return
	}
	maxFirst, count, ok := x.parseMpopTail(x.Args[3+len(keys):])
	if !ok {
		return
	}
	x.zblock(keys, timeout, func(w *resp.Writer, key []byte, popped []zEntry) {
		w.Array(2)
		w.Bulk(key)
		writePoppedTo(w, popped, true)
	}, count, maxFirst)
}

// zblock pops from the first of keys that holds a set, answering with
// reply; if none does, it blocks (but in EXEC, where it answers a null
// array at once) for at most timeout ms (0: no limit).
func (x *Ctx) zblock(keys [][]byte, timeout int64, reply func(*resp.Writer, []byte, []zEntry), count int64, maxFirst bool) {
	key, popped, err := x.zpopFirst(x.DB, keys, count, maxFirst, false)
	switch {
	case err != nil:
		x.Fail(err)
		return
	case popped != nil:
		reply(x.W, key, popped)
		return
	case x.InExec:
		x.W.NullArray()
		return
	}
	s, db, c, wr := x.S, x.DB, x.Conn, x.W
	keys = cloneArgs(keys)
	ch := make(chan struct{}, 1)
	// Registered in the transaction that found the keys empty: a write
	// after it wakes the channel.
	s.zwait.add(db, keys, ch)
	c.Block(func(gone <-chan struct{}) {
		defer s.zwait.remove(db, keys, ch)
		var timer <-chan time.Time
		if timeout > 0 && timeout <= math.MaxInt64/int64(time.Millisecond) {
			t := time.NewTimer(time.Duration(timeout) * time.Millisecond)
			defer t.Stop()
			timer = t.C
		}
		unblock := c.Unblockable()
		for {
			var um resp.UnblockMode
			select {
			case <-gone:
				c.EndUnblockable()
				return
			case <-timer:
				um = resp.UnblockTimeout
			case um = <-unblock:
			case <-ch:
			}
			if m, ok := c.EndUnblockable(); ok {
				um = m
			}
			switch um {
			case resp.UnblockTimeout:
				wr.NullArray()
				return
			case resp.UnblockError:
				wr.Error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
				return
			}
			// A pop is a write: under CLIENT PAUSE WRITE it waits for
			// the pause's end, as a new one would be held.
			if held := s.pause.writesHeld(); held != nil {
				select {
				case <-held:
				case <-gone:
					return
				}
			}
			var key []byte
			var popped []zEntry
			var perr error
			t, err := s.updateAndDeliver(func(tx store.Tx) {
				y := &Ctx{Conn: c, S: s, Tx: tx}
				key, popped, perr = y.zpopFirst(db, keys, count, maxFirst, true)
			})
			if err == nil {
				err = perr
			}
			if err != nil {
				wr.Error(errorText(err))
				return
			}
			if popped != nil {
				c.Await(t)
				reply(wr, key, popped)
				return
			}
			unblock = c.Unblockable()
		}
	})
}

// zpopFirst pops up to count members from the first of keys that holds a
// set; popped is nil when none does. A key of another kind is
// ErrWrongType, or passed over when skipWrong (a blocked pop that a write
// woke: Redis serves it only from a sorted set).
func (x *Ctx) zpopFirst(db int, keys [][]byte, count int64, maxFirst, skipWrong bool) ([]byte, []zEntry, error) {
	for _, key := range keys {
		z, v, found, err := x.zview(db, key, false)
		if err == ErrWrongType && skipWrong {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if !found {
			continue
		}
		popped, err := x.zpopFrom(db, key, z, v, count, maxFirst)
		return key, popped, err
	}
	return nil, nil, nil
}

func cloneArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = append([]byte(nil), a...)
	}
	return out
}
