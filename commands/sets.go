package commands

import (
	"bytes"
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// Sets, as Redis 7.0 has them (README, "Sets"). A set's encoding
// follows Redis 7.0's rule: an intset while every member is an integer
// and there are at most set-max-intset-entries of them, a hashtable from
// then on (OBJECT ENCODING). An intset is one value (setcodec.go) that
// every write rewrites whole and that lists its members in numeric order,
// as Redis does; a hashtable is a store object of one element per member
// (setobj.go), in slot order where Redis lists them in its hash table's
// order. Commands read and write sets through setRef. A set emptied by a
// write is deleted, and writes that change nothing write nothing (so a
// WATCH of the key sees no change, as in Redis).

// DefaultSetMaxIntsetEntries is Redis 7.0's set-max-intset-entries.
const DefaultSetMaxIntsetEntries = 512

func setCommands() []*Command {
	cat := func(c ...string) []string { return append([]string{"write", "set"}, c...) }
	rcat := func(c ...string) []string { return append([]string{"read", "set"}, c...) }
	w, r := Write|Borrows, ReadOnly|Borrows
	return []*Command{
		{Name: "sadd", Arity: -3, Flags: w | DenyOOM | Fast, FirstKey: 1, LastKey: 1, Categories: cat("fast"), Run: saddCmd},
		{Name: "srem", Arity: -3, Flags: w | Fast, FirstKey: 1, LastKey: 1, Categories: cat("fast"), Run: sremCmd},
		{Name: "smembers", Arity: 2, Flags: r, FirstKey: 1, LastKey: 1, Categories: rcat("slow"), Run: smembersCmd},
		{Name: "sismember", Arity: 3, Flags: r | Fast, FirstKey: 1, LastKey: 1, Categories: rcat("fast"), Run: sismemberCmd},
		{Name: "smismember", Arity: -3, Flags: r | Fast, FirstKey: 1, LastKey: 1, Categories: rcat("fast"), Run: smismemberCmd},
		{Name: "scard", Arity: 2, Flags: r | Fast, FirstKey: 1, LastKey: 1, Categories: rcat("fast"), Run: scardCmd},
		{Name: "spop", Arity: -2, Flags: w | Fast, FirstKey: 1, LastKey: 1, Categories: cat("fast"), Run: spopCmd},
		{Name: "srandmember", Arity: -2, Flags: r, FirstKey: 1, LastKey: 1, Categories: rcat("slow"), Run: srandmemberCmd},
		{Name: "smove", Arity: 4, Flags: w | Fast, FirstKey: 1, LastKey: 2, Categories: cat("fast"), Run: smoveCmd},
		{Name: "sinter", Arity: -2, Flags: r, FirstKey: 1, LastKey: -1, Categories: rcat("slow"), Run: setOpCmd(opInter, false)},
		{Name: "sinterstore", Arity: -3, Flags: w | DenyOOM, FirstKey: 1, LastKey: -1, Categories: cat("slow"), Run: setOpCmd(opInter, true)},
		{Name: "sintercard", Arity: -3, Flags: r, NumKeys: 1, Categories: rcat("slow"), Run: sintercardCmd},
		{Name: "sunion", Arity: -2, Flags: r, FirstKey: 1, LastKey: -1, Categories: rcat("slow"), Run: setOpCmd(opUnion, false)},
		{Name: "sunionstore", Arity: -3, Flags: w | DenyOOM, FirstKey: 1, LastKey: -1, Categories: cat("slow"), Run: setOpCmd(opUnion, true)},
		{Name: "sdiff", Arity: -2, Flags: r, FirstKey: 1, LastKey: -1, Categories: rcat("slow"), Run: setOpCmd(opDiff, false)},
		{Name: "sdiffstore", Arity: -3, Flags: w | DenyOOM, FirstKey: 1, LastKey: -1, Categories: cat("slow"), Run: setOpCmd(opDiff, true)},
		{Name: "sscan", Arity: -3, Flags: r, FirstKey: 1, LastKey: 1, Categories: rcat("slow"), Run: sscanCmd},
	}
}

// maxIntset is set-max-intset-entries now.
func (x *Ctx) maxIntset() int { return int(x.S.setMaxIntset.Load()) }

// SetMaxIntsetEntries sets set-max-intset-entries: sets of integers up
// to that many members are intsets. A change converts no set, as in
// Redis: the next write to one applies it.
func (s *Server) SetMaxIntsetEntries(n int64) { s.setMaxIntset.Store(n) }

// writeMembers writes members as a set reply (an array in RESP2).
func (x *Ctx) writeMembers(ms [][]byte) {
	x.W.Set(len(ms))
	for _, m := range ms {
		x.W.Bulk(m)
	}
}

func saddCmd(x *Ctx) {
	r, err := x.openSet(x.DB, x.Args[1], false)
	if err != nil {
		x.Fail(err)
		return
	}
	n, err := r.add(x.Args[2:])
	if err == nil && n > 0 {
		err = r.save()
	}
	x.intOrFail(int64(n), err)
}

func sremCmd(x *Ctx) {
	r, err := x.openSet(x.DB, x.Args[1], false)
	if err != nil || !r.found {
		x.intOrFail(0, err)
		return
	}
	n, err := r.remove(x.Args[2:])
	if err == nil && n > 0 {
		err = r.save()
	}
	x.intOrFail(int64(n), err)
}

// intOrFail answers err if there is one, else n.
func (x *Ctx) intOrFail(n int64, err error) {
	if err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(n)
}

func smembersCmd(x *Ctx) {
	r, err := x.openSet(x.DB, x.Args[1], true)
	if err != nil {
		x.Fail(err)
		return
	}
	ms, err := r.members()
	if err != nil {
		x.Fail(err)
		return
	}
	x.writeMembers(ms)
}

func sismemberCmd(x *Ctx) {
	r, err := x.openSet(x.DB, x.Args[1], true)
	if err != nil {
		x.Fail(err)
		return
	}
	ok, err := r.has(x.Args[2])
	x.intOrFail(b2i(ok), err)
}

func smismemberCmd(x *Ctx) {
	r, err := x.openSet(x.DB, x.Args[1], true)
	if err != nil {
		x.Fail(err)
		return
	}
	in := make([]bool, len(x.Args)-2)
	for i, m := range x.Args[2:] {
		if in[i], err = r.has(m); err != nil {
			x.Fail(err)
			return
		}
	}
	x.W.Array(len(in))
	for _, ok := range in {
		x.W.Int(b2i(ok))
	}
}

func scardCmd(x *Ctx) {
	r, err := x.openSet(x.DB, x.Args[1], true)
	x.intOrFail(r.len(), err)
}

// randSlot is a random slot of an object set, where SPOP and SRANDMEMBER
// seek a random member.
func randSlot() uint64 { return rand.Uint64N(math.MaxInt64) + 1 }

// spopMoveMul is Redis's SPOP_MOVE_STRATEGY_MUL: SPOP with a count that
// leaves fewer than count/5 members builds a new set of the remaining
// ones (which may make a hashtable of integers an intset again).
const spopMoveMul = 5

func spopCmd(x *Ctx) {
	if len(x.Args) > 3 {
		x.Fail(ErrSyntax)
		return
	}
	count := int64(-1)
	if len(x.Args) == 3 {
		n, ok := parseInt(x.Args[2])
		if !ok || n < 0 {
			x.Fail(errorf("ERR value is out of range, must be positive"))
			return
		}
		count = n
	}
	key := x.Args[1]
	r, err := x.openSet(x.DB, key, false)
	switch {
	case err != nil:
		x.Fail(err)
		return
	case !r.found && count < 0:
		x.W.Null()
		return
	case !r.found || count == 0:
		x.W.Set(0)
		return
	}
	if count < 0 {
		var m []byte
		if r.isObj() {
			if m, err = r.random(randSlot()); err == nil {
				_, err = r.remove([][]byte{m})
			}
		} else {
			i := rand.IntN(len(r.s.m))
			m = bytes.Clone(r.s.m[i])
			r.s.m = slices.Delete(r.s.m, i, i+1)
		}
		if err == nil {
			err = r.save()
		}
		if err != nil {
			x.Fail(err)
			return
		}
		x.W.Bulk(m)
		return
	}
	size := r.len()
	if count >= size {
		// Everything, in the set's order, as Redis answers it (SUNION of
		// the key).
		ms, err := r.members()
		if err != nil {
			x.Fail(err)
			return
		}
		all := make([][]byte, len(ms))
		for i, m := range ms {
			all[i] = bytes.Clone(m)
		}
		if _, err := x.Tx.Delete(x.DB, key); err != nil {
			x.Fail(err)
			return
		}
		x.writeMembers(all)
		return
	}
	rebuild := (size-count)*spopMoveMul <= count
	if r.isObj() && !rebuild {
		// A member at a random slot, count times: O(count) seeks, the
		// rest of the set untouched.
		popped := make([][]byte, 0, count)
		for range count {
			m, err := r.random(randSlot())
			if err == nil {
				_, err = r.remove([][]byte{m})
			}
			if err != nil {
				x.Fail(err)
				return
			}
			popped = append(popped, m)
		}
		if err := r.save(); err != nil {
			x.Fail(err)
			return
		}
		x.writeMembers(popped)
		return
	}
	ms, err := r.members()
	if err != nil {
		x.Fail(err)
		return
	}
	perm := rand.Perm(len(ms))[:count]
	popped := make([][]byte, count)
	gone := make([]bool, len(ms))
	for i, p := range perm {
		popped[i] = bytes.Clone(ms[p])
		gone[p] = true
	}
	rest := ms[:0:0]
	for i, m := range ms {
		if !gone[i] {
			rest = append(rest, m)
		}
	}
	if rebuild {
		// A new set of the rest replaces the key (an object's elements
		// go with the old value).
		s := buildSet(rest, x.maxIntset())
		err = x.putSet(x.DB, key, &s, r.v.ExpireAt)
	} else {
		r.s.m = rest
		err = r.save()
	}
	if err != nil {
		x.Fail(err)
		return
	}
	x.writeMembers(popped)
}

// srandMemberMinSize is the size of the smallest member in a reply:
// "$0\r\n\r\n".
const srandMemberMinSize = 6

func srandmemberCmd(x *Ctx) {
	if len(x.Args) > 3 {
		x.Fail(ErrSyntax)
		return
	}
	if len(x.Args) == 2 {
		r, err := x.openSet(x.DB, x.Args[1], true)
		switch {
		case err != nil:
			x.Fail(err)
		case !r.found:
			x.W.Null()
		case r.isObj():
			m, err := r.random(randSlot())
			if err != nil {
				x.Fail(err)
				return
			}
			x.W.Bulk(m)
		default:
			x.W.Bulk(r.s.m[rand.IntN(len(r.s.m))])
		}
		return
	}
	n, ok := parseInt(x.Args[2])
	if !ok {
		x.Fail(ErrNotInteger)
		return
	}
	if n == math.MinInt64 {
		x.Fail(errorf("ERR value is out of range, value must between %d and %d", -math.MaxInt64, int64(math.MaxInt64)))
		return
	}
	if n < -math.MaxInt64/2 || n < 0 && -n > x.S.protoMaxBulkLen()/srandMemberMinSize {
		// A reply that large (each member takes srandMemberMinSize bytes
		// at least) would be built in memory before a byte of it is
		// sent: Redis 7.0 tries and runs out of memory, Redis 7.2 refuses
		// a count below -LONG_MAX/2 so; here any reply larger than
		// proto-max-bulk-len is.
		x.Fail(errorf("ERR value is out of range"))
		return
	}
	r, err := x.openSet(x.DB, x.Args[1], true)
	switch {
	case err != nil:
		x.Fail(err)
		return
	case !r.found || n == 0:
		x.W.Array(0)
		return
	}
	if n < 0 && -n < r.len() && r.isObj() {
		// Members may repeat: one random seek each (loading the whole
		// set is cheaper for more picks than members).
		picks := make([][]byte, -n)
		for i := range picks {
			if picks[i], err = r.random(randSlot()); err != nil {
				x.Fail(err)
				return
			}
		}
		x.writeArray(picks)
		return
	}
	if n > 0 && n*3 <= r.len() && r.isObj() {
		// Distinct members, few of the set's: random seeks until n
		// differ, as Redis picks them for a count this small.
		if picks, ok, err := r.distinctPicks(int(n)); err != nil || ok {
			if err != nil {
				x.Fail(err)
				return
			}
			x.writeArray(picks)
			return
		}
	}
	ms, err := r.members()
	if err != nil {
		x.Fail(err)
		return
	}
	switch {
	case n < 0:
		x.W.Array(int(-n))
		for i := int64(0); i < -n; i++ {
			x.W.Bulk(ms[rand.IntN(len(ms))])
		}
	case n >= int64(len(ms)):
		x.writeArray(ms)
	default:
		x.W.Array(int(n))
		for _, p := range rand.Perm(len(ms))[:n] {
			x.W.Bulk(ms[p])
		}
	}
}

// writeArray writes members as an array reply.
func (x *Ctx) writeArray(ms [][]byte) {
	x.W.Array(len(ms))
	for _, m := range ms {
		x.W.Bulk(m)
	}
}

func smoveCmd(x *Ctx) {
	srcKey, dstKey, m := x.Args[1], x.Args[2], x.Args[3]
	src, err := x.openSet(x.DB, srcKey, false)
	if err != nil && err != ErrWrongType {
		x.Fail(err)
		return
	}
	if !src.found && err == nil {
		x.W.Int(0)
		return
	}
	dst, derr := x.openSet(x.DB, dstKey, false)
	if err == nil {
		err = derr
	}
	if err != nil {
		x.Fail(err)
		return
	}
	if bytes.Equal(srcKey, dstKey) {
		ok, err := src.has(m)
		x.intOrFail(b2i(ok), err)
		return
	}
	removed, err := src.remove([][]byte{m})
	if err != nil || removed == 0 {
		x.intOrFail(0, err)
		return
	}
	added, err := dst.add([][]byte{m})
	if err != nil {
		x.Fail(err)
		return
	}
	// An inline set's members may share the memory of the value read;
	// writing one key leaves the other's value as it was read.
	if err := src.save(); err != nil {
		x.Fail(err)
		return
	}
	if added > 0 {
		if err := dst.save(); err != nil {
			x.Fail(err)
			return
		}
	}
	x.W.Int(1)
}

// setOp is SINTER's, SUNION's or SDIFF's operation.
type setOp int

const (
	opInter setOp = iota
	opUnion
	opDiff
)

// loadSets reads the sets of keys for a multi-key command: a missing key
// is an empty set (nil); any key of another kind fails the command, as
// Redis 7.0 checks them all before it computes.
func (x *Ctx) loadSets(keys [][]byte, read bool) ([]*setVal, error) {
	sets := make([]*setVal, len(keys))
	for i, k := range keys {
		r, err := x.openSet(x.DB, k, read)
		if err != nil {
			return nil, err
		}
		if r.found {
			if sets[i], err = r.view(); err != nil {
				return nil, err
			}
		}
	}
	return sets, nil
}

// intersect returns the members of every set, in the order of the
// smallest one (which Redis iterates), stopping at limit members (0: no
// limit).
func intersect(sets []*setVal, limit int) [][]byte {
	for _, s := range sets {
		if s == nil {
			return nil
		}
	}
	order := slices.Clone(sets)
	slices.SortStableFunc(order, func(a, b *setVal) int { return len(a.m) - len(b.m) })
	var out [][]byte
outer:
	for _, m := range order[0].m {
		for _, s := range order[1:] {
			if !s.has(m) {
				continue outer
			}
		}
		out = append(out, m)
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out
}

// compute runs op over sets.
func compute(op setOp, sets []*setVal) [][]byte {
	switch op {
	case opInter:
		return intersect(sets, 0)
	case opUnion:
		var all [][]byte
		for _, s := range sets {
			if s != nil {
				all = append(all, s.m...)
			}
		}
		return all
	}
	if sets[0] == nil {
		return nil
	}
	var out [][]byte
outer:
	for _, m := range sets[0].m {
		for _, s := range sets[1:] {
			if s != nil && s.has(m) {
				continue outer
			}
		}
		out = append(out, m)
	}
	return out
}

// setOpCmd is SINTER, SUNION, SDIFF and their STORE forms. The result is
// built as Redis builds it (buildSet), so its encoding and, for an
// intset, its order are Redis's; SINTER answers in the order of its
// smallest set, as Redis does.
func setOpCmd(op setOp, store bool) Handler {
	return func(x *Ctx) {
		keys := x.Args[1:]
		if store {
			keys = x.Args[2:]
		}
		sets, err := x.loadSets(keys, !store)
		if err != nil {
			x.Fail(err)
			return
		}
		members := compute(op, sets)
		if op == opDiff && diffFromCopy(sets) {
			// Redis's second SDIFF algorithm copies the first set, then
			// removes the others' members: the result keeps the copy's
			// encoding.
			res := buildSet(sets[0].m, x.maxIntset())
			for _, o := range sets[1:] {
				if o != nil {
					res.remove(o.m)
				}
			}
			members = res.m
			if !store {
				x.writeMembers(members)
				return
			}
			x.storeSet(x.Args[1], &res)
			return
		}
		if !store {
			if op == opInter {
				x.writeMembers(members)
				return
			}
			res := buildSet(members, x.maxIntset())
			x.writeMembers(res.m)
			return
		}
		res := buildSet(members, x.maxIntset())
		x.storeSet(x.Args[1], &res)
	}
}

// storeSet is the end of a *STORE command: res replaces dst, without a
// deadline, or an empty res deletes dst; the reply is res's size.
func (x *Ctx) storeSet(dst []byte, res *setVal) {
	if err := x.putSet(x.DB, dst, res, 0); err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(int64(len(res.m)))
}

// diffFromCopy reports whether Redis 7.0's SDIFF picks its second
// algorithm (copy the first set, remove the others'), by its estimate of
// the work of each.
func diffFromCopy(sets []*setVal) bool {
	if sets[0] == nil {
		return false
	}
	var one, two int
	for _, s := range sets {
		if s != nil {
			one += len(sets[0].m)
			two += len(s.m)
		}
	}
	return one/2 > two
}

// sintercardArgs parses SINTERCARD numkeys key [key ...] [LIMIT limit]
// in Redis 7.0's order of checks.
func sintercardArgs(args [][]byte) (keys [][]byte, limit int64, err error) {
	n, ok := parseInt(args[1])
	if !ok || n <= 0 {
		return nil, 0, errorf("ERR numkeys should be greater than 0")
	}
	if n > int64(len(args)-2) {
		return nil, 0, errorf("ERR Number of keys can't be greater than number of args")
	}
	keys = args[2 : 2+n]
	rest := args[2+n:]
	for len(rest) > 0 {
		if len(rest) < 2 || !eq(rest[0], "limit") {
			return nil, 0, ErrSyntax
		}
		l, ok := parseInt(rest[1])
		if !ok || l < 0 {
			return nil, 0, errorf("ERR LIMIT can't be negative")
		}
		limit = l
		rest = rest[2:]
	}
	return keys, limit, nil
}

func sintercardCmd(x *Ctx) {
	keys, limit, err := sintercardArgs(x.Args)
	if err != nil {
		x.Fail(err)
		return
	}
	sets, err := x.loadSets(keys, true)
	if err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(int64(len(intersect(sets, int(min(limit, math.MaxInt32))))))
}

// sscanCmd is SSCAN key cursor [MATCH pattern] [COUNT count]. An intset
// answers all its (matching) members in one call with cursor 0, as
// Redis does for its small encodings; a hashtable pages in slot order
// (fieldSlot), its cursor the slot where the next call resumes, so a
// member present throughout is returned, whether the set is an object
// (a seek to the cursor) or inline (older data).
func sscanCmd(x *Ctx) {
	cursor, ok := parseCursor(x.Args[2])
	if !ok {
		x.Fail(ErrCursor)
		return
	}
	r, err := x.openSet(x.DB, x.Args[1], true)
	o, ok := x.scanStart(r.found, err)
	if !ok {
		return
	}
	count, pattern := o.count, o.pattern
	page, next := r.s.m, uint64(0)
	switch {
	case r.isObj():
		if page, next, err = r.scanFrom(cursor, count); err != nil {
			x.Fail(err)
			return
		}
	case !r.s.intset:
		page, next = scanMemberSlots(r.s.m, cursor, count)
	}
	var out [][]byte
	for _, m := range page {
		if pattern == nil || globMatch(pattern, m) {
			out = append(out, m)
		}
	}
	x.W.Array(2)
	x.W.BulkString(strconv.FormatUint(next, 10))
	x.W.Array(len(out))
	for _, m := range out {
		x.W.Bulk(m)
	}
}

// scanMemberSlots is one page of an SSCAN of an inline hashtable-encoded
// set, in the slot order of an object's: at least count members (fewer at
// the end) whose slots are cursor or more, and the cursor of the next
// page (0 when this is the last).
func scanMemberSlots(ms [][]byte, cursor uint64, count int64) ([][]byte, uint64) {
	type slotted struct {
		slot uint64
		m    []byte
	}
	var rest []slotted
	for _, m := range ms {
		if s := fieldSlot(m); s >= cursor {
			rest = append(rest, slotted{s, m})
		}
	}
	slices.SortFunc(rest, func(a, b slotted) int { return cmp.Compare(a.slot, b.slot) })
	end := min(int64(len(rest)), count)
	for end < int64(len(rest)) && end > 0 && rest[end].slot == rest[end-1].slot {
		end++ // a slot is never split between two pages
	}
	page := make([][]byte, end)
	for i := range page {
		page[i] = rest[i].m
	}
	if end < int64(len(rest)) {
		return page, rest[end].slot
	}
	return page, 0
}
