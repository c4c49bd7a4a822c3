package commands

import (
	"bytes"
	"math"

	"github.com/oncekv/oncekv/internal/listenc"
	"github.com/oncekv/oncekv/store"
)

// The list commands, as Redis 7.0 has them. A list is a value of kind
// store.KindList whose Data is its elements in listenc's encoding; every
// write decodes it and stores it again whole (README: "Lists"). A list a
// command empties is deleted, as in Redis; a write keeps the key's
// deadline.
//
// The blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP) are in
// listblock.go.

func listCommands() []*Command {
	w := Write | DenyOOM | Borrows
	wcat := func(c ...string) []string { return append([]string{"write", "list"}, c...) }
	rcat := func(c ...string) []string { return append([]string{"read", "list"}, c...) }
	one := func(name string, arity int, flags Flags, cat []string, run Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Categories: cat, Run: run}
	}
	return []*Command{
		one("lpush", -3, w|Fast, wcat("fast"), pushCmd(true, false)),
		one("rpush", -3, w|Fast, wcat("fast"), pushCmd(false, false)),
		one("lpushx", -3, w|Fast, wcat("fast"), pushCmd(true, true)),
		one("rpushx", -3, w|Fast, wcat("fast"), pushCmd(false, true)),
		one("lpop", -2, Write|Fast|Borrows, wcat("fast"), popCmd(true)),
		one("rpop", -2, Write|Fast|Borrows, wcat("fast"), popCmd(false)),
		one("llen", 2, ReadOnly|Fast|Borrows, rcat("fast"), llenCmd),
		one("lrange", 4, ReadOnly|Borrows, rcat("slow"), lrangeCmd),
		one("lindex", 3, ReadOnly|Borrows, rcat("slow"), lindexCmd),
		one("lset", 4, w, wcat("slow"), lsetCmd),
		one("linsert", 5, w, wcat("slow"), linsertCmd),
		one("lrem", 4, Write|Borrows, wcat("slow"), lremCmd),
		one("ltrim", 4, Write|Borrows, wcat("slow"), ltrimCmd),
		one("lpos", -3, ReadOnly|Borrows, rcat("slow"), lposCmd),
		{Name: "lmove", Arity: 5, Flags: w, FirstKey: 1, LastKey: 2, Categories: wcat("slow"), Run: lmoveCmd},
		{Name: "rpoplpush", Arity: 3, Flags: w, FirstKey: 1, LastKey: 2, Categories: wcat("slow"), Run: rpoplpushCmd},
		// LMPOP's and BLMPOP's keys follow their count.
		{Name: "lmpop", Arity: -4, Flags: Write | Borrows, NumKeys: 1, Categories: wcat("slow"), Run: lmpopCmd},
		{Name: "blpop", Arity: -3, Flags: Write | NoScript | Blocking, FirstKey: 1, LastKey: -2, Categories: wcat("slow", "blocking"), Run: bpopCmd(true)},
		{Name: "brpop", Arity: -3, Flags: Write | NoScript | Blocking, FirstKey: 1, LastKey: -2, Categories: wcat("slow", "blocking"), Run: bpopCmd(false)},
		{Name: "blmove", Arity: 6, Flags: Write | DenyOOM | NoScript | Blocking, FirstKey: 1, LastKey: 2, Categories: wcat("slow", "blocking"), Run: blmoveCmd},
		{Name: "brpoplpush", Arity: 4, Flags: Write | DenyOOM | NoScript | Blocking, FirstKey: 1, LastKey: 2, Categories: wcat("slow", "blocking"), Run: brpoplpushCmd},
		{Name: "blmpop", Arity: -5, Flags: Write | Blocking, NumKeys: 2, Categories: wcat("slow", "blocking"), Run: blmpopCmd},
	}
}

// getList reads key of db in tx as a list: ok is false when it is
// missing; a key of another kind is ErrWrongType. The elements are views
// of the stored value, valid for the transaction.
func getList(tx store.Tx, db int, key []byte) ([][]byte, store.Value, bool, error) {
	v, ok, err := tx.Get(db, key)
	if err != nil || !ok {
		return nil, v, false, err
	}
	if v.Kind != store.KindList {
		return nil, v, false, ErrWrongType
	}
	elems, err := listenc.Decode(v.Data)
	if err != nil {
		return nil, v, false, err
	}
	return elems, v, true, nil
}

// list is getList on the command's database, counting a hit or a miss.
func (x *Ctx) list(key []byte) ([][]byte, store.Value, bool, error) {
	elems, v, ok, err := getList(x.Tx, x.DB, key)
	if err == nil || err == ErrWrongType {
		x.countLookup(ok || err == ErrWrongType)
	}
	return elems, v, ok, err
}

// putList stores elems as key's list with the deadline at, or deletes
// key when elems is empty (an emptied list is no key, as in Redis).
func putList(tx store.Tx, db int, key []byte, elems [][]byte, at int64) error {
	if len(elems) == 0 {
		_, err := tx.Delete(db, key)
		return err
	}
	return tx.Set(db, key, store.Value{Kind: store.KindList, Data: listenc.Append(nil, elems), ExpireAt: at})
}

// push adds vals at the head (left) or the tail of elems, one by one as
// LPUSH does: LPUSH k a b leaves b first.
func push(elems [][]byte, vals [][]byte, left bool) [][]byte {
	if !left {
		return append(elems, vals...)
	}
	out := make([][]byte, 0, len(elems)+len(vals))
	for i := len(vals) - 1; i >= 0; i-- {
		out = append(out, vals[i])
	}
	return append(out, elems...)
}

func pushCmd(left, onlyIfExists bool) Handler {
	return func(x *Ctx) {
		key := x.Args[1]
		elems, v, ok, err := x.list(key)
		if err != nil {
			x.Fail(err)
			return
		}
		if !ok && onlyIfExists {
			x.W.Int(0)
			return
		}
		elems = push(elems, x.Args[2:], left)
		if err := putList(x.Tx, x.DB, key, elems, v.ExpireAt); err != nil {
			x.Fail(err)
			return
		}
		x.W.Int(int64(len(elems)))
	}
}

// pop takes n elements off the head (left) or tail of elems: the taken,
// in the order they were taken, and the rest.
func pop(elems [][]byte, n int, left bool) (taken, rest [][]byte) {
	n = min(n, len(elems))
	if left {
		return elems[:n], elems[n:]
	}
	taken = make([][]byte, n)
	for i := range n {
		taken[i] = elems[len(elems)-1-i]
	}
	return taken, elems[:len(elems)-n]
}

// positiveArg parses a count that must be >= 0 (Redis's
// getPositiveLongFromObjectOrReply), with msg for a negative one.
func positiveArg(b []byte, msg error) (int64, error) {
	n, ok := parseInt(b)
	if !ok {
		return 0, msg
	}
	if n < 0 {
		return 0, msg
	}
	return n, nil
}

func popCmd(left bool) Handler {
	return func(x *Ctx) {
		if len(x.Args) > 3 {
			x.W.Error("ERR wrong number of arguments for '" + x.Cmd.Name + "' command")
			return
		}
		hasCount := len(x.Args) == 3
		var count int64
		if hasCount {
			var err error
			if count, err = positiveArg(x.Args[2], ErrRangePos); err != nil {
				x.Fail(err)
				return
			}
		}
		key := x.Args[1]
		elems, v, ok, err := x.list(key)
		switch {
		case err != nil:
			x.Fail(err)
			return
		case !ok && hasCount:
			x.W.NullArray()
			return
		case !ok:
			x.W.Null()
			return
		case hasCount && count == 0:
			x.W.Array(0)
			return
		}
		n := 1
		if hasCount {
			n = int(min(count, int64(len(elems))))
		}
		taken, rest := pop(elems, n, left)
		if hasCount {
			x.W.Array(len(taken))
		}
		for _, e := range taken {
			x.W.Bulk(e)
		}
		if err := putList(x.Tx, x.DB, key, rest, v.ExpireAt); err != nil {
			x.W.Truncate(0)
			x.Fail(err)
		}
	}
}

func llenCmd(x *Ctx) {
	v, ok, err := x.lookup(x.Args[1])
	switch {
	case err != nil:
		x.Fail(err)
	case !ok:
		x.W.Int(0)
	case v.Kind != store.KindList:
		x.Fail(ErrWrongType)
	default:
		n, err := listenc.Len(v.Data)
		if err != nil {
			x.Fail(err)
			return
		}
		x.W.Int(int64(n))
	}
}

// listRange normalizes Redis's start and stop (negative from the end) for
// a list of n elements: the half-open range [from, to), empty when
// nothing is in range.
func listRange(start, stop int64, n int) (from, to int) {
	ln := int64(n)
	if start < 0 {
		start += ln
	}
	if stop < 0 {
		stop += ln
	}
	if start < 0 {
		start = 0
	}
	if start > stop || start >= ln {
		return 0, 0
	}
	if stop >= ln {
		stop = ln - 1
	}
	return int(start), int(stop) + 1
}

func lrangeCmd(x *Ctx) {
	start, ok := x.intArg(2)
	if !ok {
		return
	}
	stop, ok := x.intArg(3)
	if !ok {
		return
	}
	elems, _, _, err := x.list(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	from, to := listRange(start, stop, len(elems))
	x.W.Array(to - from)
	for _, e := range elems[from:to] {
		x.W.Bulk(e)
	}
}

// listIndex is index (negative from the end) in a list of n elements, ok
// false when it is out of range.
func listIndex(index int64, n int) (int, bool) {
	if index < 0 {
		index += int64(n)
	}
	if index < 0 || index >= int64(n) {
		return 0, false
	}
	return int(index), true
}

func lindexCmd(x *Ctx) {
	elems, _, ok, err := x.list(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	if !ok {
		x.W.Null()
		return
	}
	index, ok := x.intArg(2)
	if !ok {
		return
	}
	if i, ok := listIndex(index, len(elems)); ok {
		x.W.Bulk(elems[i])
		return
	}
	x.W.Null()
}

func lsetCmd(x *Ctx) {
	key := x.Args[1]
	elems, v, ok, err := x.list(key)
	if err != nil {
		x.Fail(err)
		return
	}
	if !ok {
		x.Fail(ErrNoSuchKey)
		return
	}
	index, ok := x.intArg(2)
	if !ok {
		return
	}
	i, ok := listIndex(index, len(elems))
	if !ok {
		x.Fail(ErrIndexRange)
		return
	}
	out := append([][]byte(nil), elems...)
	out[i] = x.Args[3]
	if err := putList(x.Tx, x.DB, key, out, v.ExpireAt); err != nil {
		x.Fail(err)
		return
	}
	x.W.OK()
}

func linsertCmd(x *Ctx) {
	var after bool
	switch {
	case eq(x.Args[2], "after"):
		after = true
	case eq(x.Args[2], "before"):
	default:
		x.Fail(ErrSyntax)
		return
	}
	key := x.Args[1]
	elems, v, ok, err := x.list(key)
	if err != nil {
		x.Fail(err)
		return
	}
	if !ok {
		x.W.Int(0)
		return
	}
	at := -1
	for i, e := range elems {
		if bytes.Equal(e, x.Args[3]) {
			at = i
			break
		}
	}
	if at < 0 {
		x.W.Int(-1)
		return
	}
	if after {
		at++
	}
	out := make([][]byte, 0, len(elems)+1)
	out = append(out, elems[:at]...)
	out = append(out, x.Args[4])
	out = append(out, elems[at:]...)
	if err := putList(x.Tx, x.DB, key, out, v.ExpireAt); err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(int64(len(out)))
}

func lremCmd(x *Ctx) {
	count, ok := x.intArg(2)
	if !ok {
		return
	}
	key := x.Args[1]
	elems, v, found, err := x.list(key)
	if err != nil {
		x.Fail(err)
		return
	}
	if !found {
		x.W.Int(0)
		return
	}
	target := x.Args[3]
	limit := uint64(count)
	if count < 0 {
		limit = uint64(-(count + 1)) + 1
	}
	removed := uint64(0)
	keep := make([]bool, len(elems))
	for j := range elems {
		i := j
		if count < 0 {
			i = len(elems) - 1 - j
		}
		if (count == 0 || removed < limit) && bytes.Equal(elems[i], target) {
			removed++
			continue
		}
		keep[i] = true
	}
	if removed == 0 {
		x.W.Int(0)
		return
	}
	out := make([][]byte, 0, len(elems)-int(removed))
	for i, e := range elems {
		if keep[i] {
			out = append(out, e)
		}
	}
	if err := putList(x.Tx, x.DB, key, out, v.ExpireAt); err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(int64(removed))
}

func ltrimCmd(x *Ctx) {
	start, ok := x.intArg(2)
	if !ok {
		return
	}
	stop, ok := x.intArg(3)
	if !ok {
		return
	}
	key := x.Args[1]
	elems, v, found, err := x.list(key)
	if err != nil {
		x.Fail(err)
		return
	}
	if found {
		from, to := listRange(start, stop, len(elems))
		if from != 0 || to != len(elems) {
			if err := putList(x.Tx, x.DB, key, elems[from:to], v.ExpireAt); err != nil {
				x.Fail(err)
				return
			}
		}
	}
	x.W.OK()
}

// lposOpts are LPOS's options; count is -1 without COUNT.
type lposOpts struct {
	rank, count, maxlen int64
}

func parseLpos(args [][]byte) (lposOpts, error) {
	o := lposOpts{rank: 1, count: -1}
	for j := 0; j < len(args); j++ {
		more := j+1 < len(args)
		switch {
		case eq(args[j], "rank") && more:
			j++
			n, ok := parseInt(args[j])
			if !ok {
				return o, ErrNotInteger
			}
			if n == 0 {
				return o, ErrRankZero
			}
			o.rank = n
		case eq(args[j], "count") && more:
			j++
			n, err := positiveArg(args[j], ErrCountNeg)
			if err != nil {
				return o, err
			}
			o.count = n
		case eq(args[j], "maxlen") && more:
			j++
			n, err := positiveArg(args[j], ErrMaxlenNeg)
			if err != nil {
				return o, err
			}
			o.maxlen = n
		default:
			return o, ErrSyntax
		}
	}
	return o, nil
}

func lposCmd(x *Ctx) {
	o, err := parseLpos(x.Args[3:])
	if err != nil {
		x.Fail(err)
		return
	}
	elems, _, ok, err := x.list(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	if !ok {
		if o.count != -1 {
			x.W.Array(0)
		} else {
			x.W.Null()
		}
		return
	}
	fromTail := o.rank < 0
	skip := o.rank
	if fromTail {
		skip = -skip
	}
	skip--
	if o.rank == math.MinInt64 {
		// Redis 7.0 negates it into itself: every match is at or
		// past that rank, and a COUNT is never reached (an overflow
		// in its count check), so all matches from the tail.
		skip = 0
		if o.count > 0 {
			o.count = 0
		}
	}
	var found []int64
	n := len(elems)
	for j := 0; j < n && (o.maxlen == 0 || int64(j) < o.maxlen); j++ {
		i := j
		if fromTail {
			i = n - 1 - j
		}
		if !bytes.Equal(elems[i], x.Args[2]) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		found = append(found, int64(i))
		if o.count == -1 || (o.count != 0 && int64(len(found)) == o.count) {
			break
		}
	}
	if o.count == -1 {
		if len(found) == 0 {
			x.W.Null()
		} else {
			x.W.Int(found[0])
		}
		return
	}
	x.W.Array(len(found))
	for _, i := range found {
		x.W.Int(i)
	}
}

// whereArg parses LEFT or RIGHT: left reports LEFT.
func whereArg(b []byte) (left bool, err error) {
	switch {
	case eq(b, "left"):
		return true, nil
	case eq(b, "right"):
		return false, nil
	}
	return false, ErrSyntax
}

// move pops one element off src's head (fromLeft) or tail and pushes it
// on dst's, in tx, as LMOVE does: ok is false, and nothing changes, when
// src is missing; a src or dst that is not a list is ErrWrongType. The
// element returned is a copy.
func move(tx store.Tx, db int, src, dst []byte, fromLeft, toLeft bool) ([]byte, bool, error) {
	elems, sv, ok, err := getList(tx, db, src)
	if err != nil || !ok {
		return nil, false, err
	}
	dElems, dv, _, err := getList(tx, db, dst)
	if err != nil {
		return nil, false, err
	}
	taken, rest := pop(elems, 1, fromLeft)
	val := bytes.Clone(taken[0])
	if bytes.Equal(src, dst) {
		// A rotation: one value, whose deadline stays.
		dElems, dv = rest, sv
	} else if err := putList(tx, db, src, rest, sv.ExpireAt); err != nil {
		return nil, false, err
	}
	out := push(append([][]byte(nil), dElems...), [][]byte{val}, toLeft)
	if err := putList(tx, db, dst, out, dv.ExpireAt); err != nil {
		return nil, false, err
	}
	return val, true, nil
}

func lmoveCmd(x *Ctx) {
	from, err := whereArg(x.Args[3])
	if err == nil {
		var to bool
		if to, err = whereArg(x.Args[4]); err == nil {
			x.lmove(from, to)
			return
		}
	}
	x.Fail(err)
}

func rpoplpushCmd(x *Ctx) { x.lmove(false, true) }

func (x *Ctx) lmove(fromLeft, toLeft bool) {
	val, ok, err := move(x.Tx, x.DB, x.Args[1], x.Args[2], fromLeft, toLeft)
	x.countLookup(ok || err == ErrWrongType)
	switch {
	case err != nil:
		x.Fail(err)
	case !ok:
		x.W.Null()
	default:
		x.W.Bulk(val)
	}
}

// mpopArgs are LMPOP's and BLMPOP's arguments after numkeys's position.
type mpopArgs struct {
	keys  [][]byte
	left  bool
	count int64
}

// parseMpop parses args from numkeys on, as Redis 7.0's
// lmpopGenericCommand does.
func parseMpop(args [][]byte) (mpopArgs, error) {
	var o mpopArgs
	n, ok := parseInt(args[0])
	if !ok || n < 1 {
		return o, ErrNumkeys
	}
	if n >= int64(len(args)-1) {
		return o, ErrSyntax
	}
	o.keys = args[1 : 1+n]
	var err error
	if o.left, err = whereArg(args[1+n]); err != nil {
		return o, err
	}
	o.count, err = mpopCount(args[2+n:])
	return o, err
}

// mpopCount reads the options after LEFT|RIGHT or MIN|MAX of LMPOP,
// BLMPOP, ZMPOP and BZMPOP as Redis 7.0 does, one at a time: COUNT, once,
// at least 1 (1 when absent); anything else is a syntax error.
func mpopCount(rest [][]byte) (int64, error) {
	count := int64(-1)
	for j := 0; j < len(rest); j++ {
		if count == -1 && eq(rest[j], "count") && j+1 < len(rest) {
			j++
			c, ok := parseInt(rest[j])
			if !ok || c < 1 {
				return 0, ErrCountPos
			}
			count = c
			continue
		}
		return 0, ErrSyntax
	}
	if count == -1 {
		count = 1
	}
	return count, nil
}

// mpop pops up to count elements of the first of keys that holds a list,
// in tx: the key, and copies of the elements; ok is false when none
// does. A key before it that is not a list is ErrWrongType.
func mpop(tx store.Tx, db int, keys [][]byte, left bool, count int64) ([]byte, [][]byte, bool, error) {
	for _, k := range keys {
		elems, v, ok, err := getList(tx, db, k)
		if err != nil {
			return nil, nil, false, err
		}
		if !ok {
			continue
		}
		taken, rest := pop(elems, int(min(count, int64(len(elems)))), left)
		taken = cloneAll(taken)
		if err := putList(tx, db, k, rest, v.ExpireAt); err != nil {
			return nil, nil, false, err
		}
		return k, taken, true, nil
	}
	return nil, nil, false, nil
}

func cloneAll(elems [][]byte) [][]byte {
	out := make([][]byte, len(elems))
	for i, e := range elems {
		out[i] = bytes.Clone(e)
	}
	return out
}

// writeKeyElems writes LMPOP's reply: [key, [elements]].
func (x *Ctx) writeKeyElems(key []byte, elems [][]byte) {
	x.W.Array(2)
	x.W.Bulk(key)
	x.W.Array(len(elems))
	for _, e := range elems {
		x.W.Bulk(e)
	}
}

func lmpopCmd(x *Ctx) {
	o, err := parseMpop(x.Args[1:])
	if err != nil {
		x.Fail(err)
		return
	}
	key, elems, ok, err := mpop(x.Tx, x.DB, o.keys, o.left, o.count)
	switch {
	case err != nil:
		x.Fail(err)
	case !ok:
		x.W.NullArray()
	default:
		x.writeKeyElems(key, elems)
	}
}
