package commands

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/oncekv/oncekv/store"
)

// Sets, as Redis 7.0 has them (README, "Sets"). A set is one value
// (store.KindSet, encoded by setcodec.go) that every write decodes and
// rewrites whole. Its encoding follows Redis 7.0's rule: an intset while
// every member is an integer and there are at most set-max-intset-entries
// of them, a hashtable from then on (OBJECT ENCODING). An intset lists
// its members in numeric order, as Redis does; a hashtable in byte order,
// where Redis lists them in its hash table's order. A set emptied by a
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

// getSet reads a set: found is false when key is missing; a key of
// another kind is ErrWrongType. read counts a keyspace hit or miss, as
// the lookups of Redis's read commands do.
func (x *Ctx) getSet(db int, key []byte, read bool) (s setVal, v store.Value, found bool, err error) {
	v, found, err = x.Tx.Get(db, key)
	if err != nil {
		return s, v, false, err
	}
	if read {
		x.countLookup(found)
	}
	if !found {
		return s, v, false, nil
	}
	if v.Kind != store.KindSet {
		return s, v, false, ErrWrongType
	}
	s, err = decodeSet(v.Data)
	return s, v, err == nil, err
}

// putSet stores s under key with deadline at, or deletes key when s is
// empty.
func (x *Ctx) putSet(db int, key []byte, s *setVal, at int64) error {
	if len(s.m) == 0 {
		_, err := x.Tx.Delete(db, key)
		return err
	}
	return x.Tx.Set(db, key, store.Value{Kind: store.KindSet, Data: s.encode(nil), ExpireAt: at})
}

// writeMembers writes members as a set reply (an array in RESP2).
func (x *Ctx) writeMembers(ms [][]byte) {
	x.W.Set(len(ms))
	for _, m := range ms {
		x.W.Bulk(m)
	}
}

func saddCmd(x *Ctx) {
	key := x.Args[1]
	s, v, found, err := x.getSet(x.DB, key, false)
	if err != nil {
		x.Fail(err)
		return
	}
	var n int
	if found {
		n = s.add(x.Args[2:], x.maxIntset())
	} else {
		s = buildSet(x.Args[2:], x.maxIntset())
		n = len(s.m)
	}
	if n > 0 {
		if err := x.putSet(x.DB, key, &s, v.ExpireAt); err != nil {
			x.Fail(err)
			return
		}
	}
	x.W.Int(int64(n))
}

func sremCmd(x *Ctx) {
	key := x.Args[1]
	s, v, found, err := x.getSet(x.DB, key, false)
	if err != nil || !found {
		x.intOrFail(0, err)
		return
	}
	n := s.remove(x.Args[2:])
	if n > 0 {
		if err := x.putSet(x.DB, key, &s, v.ExpireAt); err != nil {
			x.Fail(err)
			return
		}
	}
	x.W.Int(int64(n))
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
	s, _, _, err := x.getSet(x.DB, x.Args[1], true)
	if err != nil {
		x.Fail(err)
		return
	}
	x.writeMembers(s.m)
}

func sismemberCmd(x *Ctx) {
	s, _, _, err := x.getSet(x.DB, x.Args[1], true)
	if err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(b2i(s.has(x.Args[2])))
}

func smismemberCmd(x *Ctx) {
	s, _, _, err := x.getSet(x.DB, x.Args[1], true)
	if err != nil {
		x.Fail(err)
		return
	}
	x.W.Array(len(x.Args) - 2)
	for _, m := range x.Args[2:] {
		x.W.Int(b2i(s.has(m)))
	}
}

func scardCmd(x *Ctx) {
	s, _, _, err := x.getSet(x.DB, x.Args[1], true)
	x.intOrFail(int64(len(s.m)), err)
}

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
	s, v, found, err := x.getSet(x.DB, key, false)
	switch {
	case err != nil:
		x.Fail(err)
		return
	case !found && count < 0:
		x.W.Null()
		return
	case !found || count == 0:
		x.W.Set(0)
		return
	}
	if count < 0 {
		i := rand.IntN(len(s.m))
		m := bytes.Clone(s.m[i])
		s.m = slices.Delete(s.m, i, i+1)
		if err := x.putSet(x.DB, key, &s, v.ExpireAt); err != nil {
			x.Fail(err)
			return
		}
		x.W.Bulk(m)
		return
	}
	if count >= int64(len(s.m)) {
		// Everything, in the set's order, as Redis answers it (SUNION of
		// the key).
		all := setVal{m: make([][]byte, len(s.m))}
		for i, m := range s.m {
			all.m[i] = bytes.Clone(m)
		}
		if _, err := x.Tx.Delete(x.DB, key); err != nil {
			x.Fail(err)
			return
		}
		x.writeMembers(all.m)
		return
	}
	perm := rand.Perm(len(s.m))[:count]
	popped := make([][]byte, count)
	gone := make([]bool, len(s.m))
	for i, p := range perm {
		popped[i] = bytes.Clone(s.m[p])
		gone[p] = true
	}
	rest := s.m[:0:0]
	for i, m := range s.m {
		if !gone[i] {
			rest = append(rest, m)
		}
	}
	s.m = rest
	if int64(len(rest))*spopMoveMul <= count {
		s = buildSet(rest, x.maxIntset())
	}
	if err := x.putSet(x.DB, key, &s, v.ExpireAt); err != nil {
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
		s, _, found, err := x.getSet(x.DB, x.Args[1], true)
		switch {
		case err != nil:
			x.Fail(err)
		case !found:
			x.W.Null()
		default:
			x.W.Bulk(s.m[rand.IntN(len(s.m))])
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
	s, _, found, err := x.getSet(x.DB, x.Args[1], true)
	switch {
	case err != nil:
		x.Fail(err)
		return
	case !found || n == 0:
		x.W.Array(0)
		return
	}
	switch {
	case n < 0:
		x.W.Array(int(-n))
		for i := int64(0); i < -n; i++ {
			x.W.Bulk(s.m[rand.IntN(len(s.m))])
		}
	case n >= int64(len(s.m)):
		x.W.Array(len(s.m))
		for _, m := range s.m {
			x.W.Bulk(m)
		}
	default:
		x.W.Array(int(n))
		for _, p := range rand.Perm(len(s.m))[:n] {
			x.W.Bulk(s.m[p])
		}
	}
}

func smoveCmd(x *Ctx) {
	srcKey, dstKey, m := x.Args[1], x.Args[2], x.Args[3]
	src, sv, found, err := x.getSet(x.DB, srcKey, false)
	if err != nil && err != ErrWrongType {
		x.Fail(err)
		return
	}
	if !found && err == nil {
		x.W.Int(0)
		return
	}
	dst, dv, dstFound, derr := x.getSet(x.DB, dstKey, false)
	if err == nil {
		err = derr
	}
	if err != nil {
		x.Fail(err)
		return
	}
	if bytes.Equal(srcKey, dstKey) {
		x.W.Int(b2i(src.has(m)))
		return
	}
	if src.remove([][]byte{m}) == 0 {
		x.W.Int(0)
		return
	}
	var added int
	if dstFound {
		added = dst.add([][]byte{m}, x.maxIntset())
	} else {
		dst, added = buildSet([][]byte{m}, x.maxIntset()), 1
	}
	// Both are encoded before either is written: their members may
	// share the memory of the values read.
	if err := x.putSet(x.DB, srcKey, &src, sv.ExpireAt); err != nil {
		x.Fail(err)
		return
	}
	if added > 0 {
		if err := x.putSet(x.DB, dstKey, &dst, dv.ExpireAt); err != nil {
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
		s, _, found, err := x.getSet(x.DB, k, read)
		if err != nil {
			return nil, err
		}
		if found {
			sets[i] = &s
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
// Redis does for its small encodings; a hashtable pages in byte order,
// its cursor naming the member where the next call resumes (kept in the
// table of SCAN's cursors), so a member present throughout is returned.
func sscanCmd(x *Ctx) {
	cursor, ok := parseCursor(x.Args[2])
	if !ok {
		x.Fail(ErrCursor)
		return
	}
	s, _, found, err := x.getSet(x.DB, x.Args[1], true)
	o, ok := x.scanStart(found, err)
	if !ok {
		return
	}
	count, pattern := o.count, o.pattern
	page := s.m
	next := uint64(0)
	if !s.intset {
		from := 0
		if cursor != 0 {
			m, ok := x.S.cursors.get(cursor)
			if !ok {
				x.Fail(ErrCursor)
				return
			}
			from, _ = slices.BinarySearchFunc(s.m, m, bytes.Compare)
		}
		end := from + int(min(count, int64(len(s.m)-from)))
		page = s.m[from:end]
		if end < len(s.m) {
			next = x.S.cursors.put(bytes.Clone(s.m[end]))
		}
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
