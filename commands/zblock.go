package commands

import (
	"github.com/oncekv/oncekv/internal/zcodec"
	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
)

// The blocking pops of sorted sets: BZPOPMIN, BZPOPMAX and BZMPOP. They
// block and are served as the list ones are (block.go): FIFO per key, by
// the write that gives their key a sorted set, in its own transaction.
// Here is what each pops when served, and its reply.

// zEntry is a member and its score.
type zEntry = zcodec.Entry

// bzpopCmd is BZPOPMIN and BZPOPMAX key [key …] timeout.
func bzpopCmd(maxFirst bool) Handler {
	return func(x *Ctx) {
		timeout, err := parseTimeout(x.Args[len(x.Args)-1])
		if err != nil {
			x.Fail(err)
			return
		}
		keys := x.Args[1 : len(x.Args)-1]
		x.zblock(keys, timeout, func(w *resp.Writer, r blockServed) {
			e := r.entries[0]
			w.Array(3)
			w.Bulk(r.key)
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
	x.zblock(keys, timeout, func(w *resp.Writer, r blockServed) {
		w.Array(2)
		w.Bulk(r.key)
		writePoppedTo(w, r.entries, true)
	}, count, maxFirst)
}

// zblock pops from the first of keys that holds a set, answering with
// reply; if none does, it blocks (but in EXEC, where it answers a null
// array at once) for at most timeout ms (0: no limit).
func (x *Ctx) zblock(keys [][]byte, timeout int64, reply func(*resp.Writer, blockServed), count int64, maxFirst bool) {
	key, popped, err := x.zpopFirst(x.DB, keys, count, maxFirst)
	switch {
	case err != nil:
		x.Fail(err)
	case popped != nil:
		reply(x.W, blockServed{key: key, entries: popped})
	case x.InExec:
		x.W.NullArray()
	default:
		x.block(&blockWaiter{keys: keys, kind: store.KindZSet, serve: zsetPop(x.S, count, maxFirst)}, timeout, reply)
	}
}

// zsetPop serves a BZPOPMIN, BZPOPMAX (count 1) or BZMPOP: up to count
// members of the sorted set at key, lowest first (or highest, maxFirst).
func zsetPop(s *Server, count int64, maxFirst bool) blockServe {
	return func(tx store.Tx, db int, key []byte, v store.Value) blockServed {
		y := &Ctx{S: s, Tx: tx}
		r, err := y.zsetOf(db, key, v, true)
		if err != nil {
			return blockServed{err: err}
		}
		popped, err := y.zpopFrom(&r, count, maxFirst)
		return blockServed{entries: popped, err: err}
	}
}

// zpopFirst pops up to count members from the first of keys that holds a
// set; popped is nil when none does. A key of another kind is
// ErrWrongType.
func (x *Ctx) zpopFirst(db int, keys [][]byte, count int64, maxFirst bool) ([]byte, []zEntry, error) {
	for _, key := range keys {
		r, err := x.zopen(db, key, false)
		if err != nil {
			return nil, nil, err
		}
		if !r.found {
			continue
		}
		popped, err := x.zpopFrom(&r, count, maxFirst)
		return key, popped, err
	}
	return nil, nil, nil
}
