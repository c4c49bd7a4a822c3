package commands

import (
	"bytes"
	"math"

	"github.com/oncekv/oncekv/store"
)

// The list commands, as Redis 7.0 has them. A list is a value of kind
// store.KindList, inline or an object (listobj.go: listRef). A list a
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

func pushCmd(left, onlyIfExists bool) Handler {
	return func(x *Ctx) {
		r, err := x.openList(x.Args[1])
		if err != nil {
			x.Fail(err)
			return
		}
		if !r.found && onlyIfExists {
			x.W.Int(0)
			return
		}
		if err := r.push(x.Args[2:], left); err != nil {
			x.Fail(err)
			return
		}
		if err := r.save(); err != nil {
			x.Fail(err)
			return
		}
		x.W.Int(r.len())
	}
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
		r, err := x.openList(x.Args[1])
		switch {
		case err != nil:
			x.Fail(err)
			return
		case !r.found && hasCount:
			x.W.NullArray()
			return
		case !r.found:
			x.W.Null()
			return
		case hasCount && count == 0:
			x.W.Array(0)
			return
		}
		n := int64(1)
		if hasCount {
			n = count
		}
		taken, err := r.pop(n, left)
		if err == nil {
			err = r.save()
		}
		if err != nil {
			x.Fail(err)
			return
		}
		if hasCount {
			x.W.Array(len(taken))
		}
		for _, e := range taken {
			x.W.Bulk(e)
		}
	}
}

func llenCmd(x *Ctx) {
	r, err := x.openList(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(r.len())
}

// listRange normalizes Redis's start and stop (negative from the end) for
// a list of n elements: the half-open range [from, to), empty when
// nothing is in range.
func listRange(start, stop int64, n int64) (from, to int64) {
	ln := n
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
	return start, stop + 1
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
	r, err := x.openList(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	from, to := listRange(start, stop, r.len())
	elems, err := r.rangeOf(from, to)
	if err != nil {
		x.Fail(err)
		return
	}
	x.W.Array(len(elems))
	for _, e := range elems {
		x.W.Bulk(e)
	}
}

// listIndex is index (negative from the end) in a list of n elements, ok
// false when it is out of range.
func listIndex(index int64, n int64) (int64, bool) {
	if index < 0 {
		index += n
	}
	if index < 0 || index >= n {
		return 0, false
	}
	return index, true
}

func lindexCmd(x *Ctx) {
	r, err := x.openList(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	if !r.found {
		x.W.Null()
		return
	}
	index, ok := x.intArg(2)
	if !ok {
		return
	}
	i, ok := listIndex(index, r.len())
	if !ok {
		x.W.Null()
		return
	}
	e, err := r.index(i)
	if err != nil {
		x.Fail(err)
		return
	}
	x.W.Bulk(e)
}

func lsetCmd(x *Ctx) {
	r, err := x.openList(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	if !r.found {
		x.Fail(ErrNoSuchKey)
		return
	}
	index, ok := x.intArg(2)
	if !ok {
		return
	}
	i, ok := listIndex(index, r.len())
	if !ok {
		x.Fail(ErrIndexRange)
		return
	}
	if err := r.set(i, x.Args[3]); err == nil {
		err = r.save()
	}
	if err != nil {
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
	r, err := x.openList(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	if !r.found {
		x.W.Int(0)
		return
	}
	at := int64(-1)
	err = r.each(false, func(i int64, e []byte) bool {
		if bytes.Equal(e, x.Args[3]) {
			at = i
			return false
		}
		return true
	})
	if err != nil {
		x.Fail(err)
		return
	}
	if at < 0 {
		x.W.Int(-1)
		return
	}
	if after {
		at++
	}
	if err := r.insert(at, x.Args[4]); err == nil {
		err = r.save()
	}
	if err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(r.len())
}

func lremCmd(x *Ctx) {
	count, ok := x.intArg(2)
	if !ok {
		return
	}
	r, err := x.openList(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	if !r.found {
		x.W.Int(0)
		return
	}
	elems, err := r.all()
	if err != nil {
		x.Fail(err)
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
	first := int64(-1) // the index of the first element removed
	for i, e := range elems {
		if keep[i] {
			out = append(out, e)
		} else if first < 0 {
			first = int64(i)
		}
	}
	if err := r.replace(out, first); err == nil {
		err = r.save()
	}
	if err != nil {
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
	r, err := x.openList(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	if r.found {
		from, to := listRange(start, stop, r.len())
		if from != 0 || to != r.len() {
			if err := r.trim(from, to); err == nil {
				err = r.save()
			}
			if err != nil {
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
	r, err := x.openList(x.Args[1])
	if err != nil {
		x.Fail(err)
		return
	}
	if !r.found {
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
	j := int64(0)
	err = r.each(fromTail, func(i int64, e []byte) bool {
		if o.maxlen != 0 && j >= o.maxlen {
			return false
		}
		j++
		if !bytes.Equal(e, x.Args[2]) {
			return true
		}
		if skip > 0 {
			skip--
			return true
		}
		found = append(found, i)
		return !(o.count == -1 || (o.count != 0 && int64(len(found)) == o.count))
	})
	if err != nil {
		x.Fail(err)
		return
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
	s, err := openList(tx, db, src)
	if err != nil || !s.found {
		return nil, false, err
	}
	same := bytes.Equal(src, dst)
	d := &s // a rotation: one list, whose deadline stays
	if !same {
		dr, err := openList(tx, db, dst)
		if err != nil {
			return nil, false, err
		}
		d = &dr
	}
	taken, err := s.pop(1, fromLeft)
	if err != nil {
		return nil, false, err
	}
	if !same {
		if err := s.save(); err != nil {
			return nil, false, err
		}
	}
	if err := d.push(taken, toLeft); err != nil {
		return nil, false, err
	}
	if err := d.save(); err != nil {
		return nil, false, err
	}
	return taken[0], true, nil
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
		r, err := openList(tx, db, k)
		if err != nil {
			return nil, nil, false, err
		}
		if !r.found {
			continue
		}
		taken, err := r.pop(count, left)
		if err == nil {
			err = r.save()
		}
		if err != nil {
			return nil, nil, false, err
		}
		return k, taken, true, nil
	}
	return nil, nil, false, nil
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
