package commands

import (
	"bytes"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
)

// The blocking list commands: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH and BLMPOP.
// They block and are served as block.go tells; here is what each pops
// when served, and its reply.

// listPop serves a BLPOP, BRPOP or BLMPOP: up to count elements off the
// head (left) or tail of the list at key.
func listPop(left bool, count int64) blockServe {
	return func(tx store.Tx, db int, key []byte, v store.Value) blockServed {
		r, err := listFrom(tx, db, key, v)
		if err != nil {
			return blockServed{err: err}
		}
		taken, err := r.pop(count, left)
		if err == nil {
			err = r.save()
		}
		if err != nil {
			return blockServed{err: err}
		}
		return blockServed{elems: taken}
	}
}

// listMove serves a BLMOVE or BRPOPLPUSH: it moves the head (fromLeft) or
// tail of the list at key onto the head (toLeft) or tail of dst; a dst of
// another kind answers WRONGTYPE and moves nothing.
func listMove(dst []byte, fromLeft, toLeft bool) blockServe {
	return func(tx store.Tx, db int, key []byte, _ store.Value) blockServed {
		if _, err := openList(tx, db, dst); err == ErrWrongType {
			return blockServed{err: err}
		}
		val, _, err := move(tx, db, key, dst, fromLeft, toLeft)
		if err != nil {
			return blockServed{err: err}
		}
		return blockServed{elems: [][]byte{val}}
	}
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
			x.block(&blockWaiter{keys: keys, kind: store.KindList, serve: listPop(left, 1)}, timeout, func(w *resp.Writer, r blockServed) {
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
		x.block(&blockWaiter{keys: o.keys, kind: store.KindList, serve: listPop(o.left, o.count)}, timeout, func(w *resp.Writer, r blockServed) {
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
	r, err := x.openList(x.Args[1])
	switch {
	case err != nil:
		x.Fail(err)
	case r.found:
		x.lmove(fromLeft, toLeft)
	case x.InExec:
		x.W.Null()
	default:
		// dst copied: the arguments are the connection's.
		w := &blockWaiter{keys: x.Args[1:2], kind: store.KindList, serve: listMove(bytes.Clone(x.Args[2]), fromLeft, toLeft)}
		x.block(w, timeout, func(w *resp.Writer, r blockServed) { w.Bulk(r.elems[0]) })
	}
}
