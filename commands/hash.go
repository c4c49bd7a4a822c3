package commands

import (
	"cmp"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/oncekv/oncekv/internal/hashcodec"
)

// Hashes (store.KindHash) as Redis 7.0 has them. A listpack-encoded hash
// is one store value (internal/hashcodec), decoded and written back whole
// by each write; a hashtable-encoded one keeps each field apart, as an
// element of a store object, so that a write's cost does not grow with
// its size (hashobj.go; README: hashes). Fields of a listpack-encoded
// hash keep their insertion order, which is Redis's: HGETALL, HKEYS,
// HVALS and HSCAN of such a hash answer as Redis does, byte for byte. A
// hash becomes hashtable-encoded (OBJECT ENCODING) by Redis 7.0's rules
// (hash-max-listpack-entries, hash-max-listpack-value) and stays so; its
// order then is its HSCAN cursor's (fieldSlot), where Redis's is its
// dict's.

// Redis 7.0's defaults of hash-max-listpack-entries and -value.
const (
	defaultHashMaxEntries = 512 // not 128: that is zset-max-listpack-entries
	defaultHashMaxValue   = 64
)

// Errors of the hash commands.
var (
	ErrHashNotInteger = errorf("ERR hash value is not an integer")
	ErrHashNotFloat   = errorf("ERR hash value is not a float")
	ErrNaNOrInf       = errorf("ERR value is NaN or Infinity")
	ErrOutOfRange     = errorf("ERR value is out of range")
	// ErrRandCountRange answers an HRANDFIELD count of math.MinInt64.
	ErrRandCountRange = errorf("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
)

func hashCommands() []*Command {
	w, r := Write|DenyOOM|Borrows, ReadOnly|Borrows
	cat := func(c ...string) []string { return append([]string{"write", "hash"}, c...) }
	rcat := func(c ...string) []string { return append([]string{"read", "hash"}, c...) }
	one := func(name string, arity int, f Flags, cats []string, run Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: f, FirstKey: 1, LastKey: 1, Categories: cats, Run: run}
	}
	return []*Command{
		one("hset", -4, w|Fast, cat("fast"), hsetCmd),
		one("hmset", -4, w|Fast, cat("fast"), hsetCmd),
		one("hsetnx", 4, w|Fast, cat("fast"), hsetnxCmd),
		one("hget", 3, r|Fast, rcat("fast"), hgetCmd),
		one("hmget", -3, r|Fast, rcat("fast"), hmgetCmd),
		one("hgetall", 2, r, rcat("slow"), hgetallCmd(true, true)),
		one("hkeys", 2, r, rcat("slow"), hgetallCmd(true, false)),
		one("hvals", 2, r, rcat("slow"), hgetallCmd(false, true)),
		one("hdel", -3, Write|Fast|Borrows, cat("fast"), hdelCmd),
		one("hlen", 2, r|Fast, rcat("fast"), hlenCmd),
		one("hexists", 3, r|Fast, rcat("fast"), hexistsCmd),
		one("hstrlen", 3, r|Fast, rcat("fast"), hstrlenCmd),
		one("hincrby", 4, w|Fast, cat("fast"), hincrbyCmd),
		one("hincrbyfloat", 4, w|Fast, cat("fast"), hincrbyfloatCmd),
		one("hrandfield", -2, r, rcat("slow"), hrandfieldCmd),
		one("hscan", -3, r, rcat("slow"), hscanCmd),
	}
}

// SetHashLimits changes hash-max-listpack-entries and
// hash-max-listpack-value: the largest hash, and longest field or value,
// kept listpack-encoded. They apply to later writes, as in Redis.
func (s *Server) SetHashLimits(entries, value int64) {
	s.hashMaxEntries.Store(entries)
	s.hashMaxValue.Store(value)
}

// setField sets one field of h, converting h to hashtable encoding when
// the field or value is longer than hash-max-listpack-value (Redis 7.0's
// hashTypeSet), and reports whether the field is new.
func (x *Ctx) setField(h *hashcodec.Hash, field, value []byte) bool {
	if max := x.S.hashMaxValue.Load(); int64(len(field)) > max || int64(len(value)) > max {
		h.Table = true
	}
	return h.Set(field, value)
}

func hsetCmd(x *Ctx) {
	if len(x.Args)%2 == 1 {
		x.W.Error("ERR wrong number of arguments for '" + x.Cmd.Name + "' command")
		return
	}
	for i := 2; i < len(x.Args); i += 2 {
		if len(x.Args[i])+len(x.Args[i+1]) > maxFieldValue {
			// Refused before any field is written: a hashtable-encoded
			// hash's count must stay its number of fields.
			x.Fail(ErrFieldValueTooLong)
			return
		}
	}
	r, err := x.openHash(x.Args[1], false)
	if err != nil {
		x.Fail(err)
		return
	}
	added := 0
	for i := 2; i < len(x.Args); i += 2 {
		isNew, err := r.set(x.Args[i], x.Args[i+1])
		if err != nil {
			x.Fail(err)
			return
		}
		if isNew {
			added++
		}
	}
	if err := r.save(); err != nil {
		x.Fail(err)
		return
	}
	if x.Cmd.Name == "hmset" {
		x.W.OK()
		return
	}
	x.W.Int(int64(added))
}

func hsetnxCmd(x *Ctx) {
	r, err := x.openHash(x.Args[1], false)
	if err != nil {
		x.Fail(err)
		return
	}
	if _, had, err := r.get(x.Args[2]); err != nil || had {
		if err != nil {
			x.Fail(err)
		} else {
			x.W.Int(0)
		}
		return
	}
	if _, err := r.set(x.Args[2], x.Args[3]); err != nil {
		x.Fail(err)
		return
	}
	if err := r.save(); err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(1)
}

func hgetCmd(x *Ctx) {
	r, err := x.openHash(x.Args[1], true)
	if err != nil {
		x.Fail(err)
		return
	}
	val, ok, err := r.get(x.Args[2])
	switch {
	case err != nil:
		x.Fail(err)
	case ok:
		x.W.Bulk(val)
	default:
		x.W.Null()
	}
}

func hmgetCmd(x *Ctx) {
	r, err := x.openHash(x.Args[1], true)
	if err != nil {
		x.Fail(err)
		return
	}
	vals := make([][]byte, len(x.Args)-2)
	found := make([]bool, len(vals))
	for i, f := range x.Args[2:] {
		if vals[i], found[i], err = r.get(f); err != nil {
			x.Fail(err)
			return
		}
	}
	x.W.Array(len(vals))
	for i, val := range vals {
		if found[i] {
			x.W.Bulk(val)
		} else {
			x.W.Null()
		}
	}
}

// hgetallCmd is HGETALL (fields and values, a map in RESP3), HKEYS or
// HVALS.
func hgetallCmd(fields, values bool) Handler {
	return func(x *Ctx) {
		r, err := x.openHash(x.Args[1], true)
		if err != nil {
			x.Fail(err)
			return
		}
		pairs, err := r.pairs()
		if err != nil {
			x.Fail(err)
			return
		}
		if fields && values {
			x.W.Map(len(pairs))
		} else {
			x.W.Array(len(pairs))
		}
		for _, p := range pairs {
			if fields {
				x.W.Bulk(p.Field)
			}
			if values {
				x.W.Bulk(p.Value)
			}
		}
	}
}

func hdelCmd(x *Ctx) {
	r, err := x.openHash(x.Args[1], false)
	if err != nil || !r.found {
		if err != nil {
			x.Fail(err)
		} else {
			x.W.Int(0)
		}
		return
	}
	deleted := 0
	for _, f := range x.Args[2:] {
		ok, err := r.del(f)
		if err != nil {
			x.Fail(err)
			return
		}
		if ok {
			deleted++
		}
	}
	if deleted > 0 {
		if err := r.save(); err != nil {
			x.Fail(err)
			return
		}
	}
	x.W.Int(int64(deleted))
}

func hlenCmd(x *Ctx) {
	r, err := x.openHash(x.Args[1], true)
	if err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(r.len())
}

func hexistsCmd(x *Ctx) {
	r, err := x.openHash(x.Args[1], true)
	if err != nil {
		x.Fail(err)
		return
	}
	_, ok, err := r.get(x.Args[2])
	if err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(b2i(ok))
}

func hstrlenCmd(x *Ctx) {
	r, err := x.openHash(x.Args[1], true)
	if err != nil {
		x.Fail(err)
		return
	}
	val, _, err := r.get(x.Args[2])
	if err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(int64(len(val)))
}

func hincrbyCmd(x *Ctx) {
	by, ok := x.intArg(3)
	if !ok {
		return
	}
	r, err := x.openHash(x.Args[1], false)
	if err != nil {
		x.Fail(err)
		return
	}
	var cur int64
	val, found, err := r.get(x.Args[2])
	if err != nil {
		x.Fail(err)
		return
	}
	if found {
		if cur, ok = parseInt(val); !ok {
			x.Fail(ErrHashNotInteger)
			return
		}
	}
	if (by < 0 && cur < 0 && by < math.MinInt64-cur) || (by > 0 && cur > 0 && by > math.MaxInt64-cur) {
		x.Fail(ErrOverflow)
		return
	}
	cur += by
	if _, err := r.set(x.Args[2], strconv.AppendInt(x.digits[:0], cur, 10)); err != nil {
		x.Fail(err)
		return
	}
	if err := r.save(); err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(cur)
}

func hincrbyfloatCmd(x *Ctx) {
	by, ok := parseLongDouble(x.Args[3])
	if !ok {
		x.Fail(ErrNotFloat)
		return
	}
	if by.IsInf() {
		x.Fail(ErrNaNOrInf)
		return
	}
	r, err := x.openHash(x.Args[1], false)
	if err != nil {
		x.Fail(err)
		return
	}
	cur := new(big.Float).SetPrec(ldPrec)
	val, found, err := r.get(x.Args[2])
	if err != nil {
		x.Fail(err)
		return
	}
	if found {
		if cur, ok = parseLongDouble(val); !ok {
			x.Fail(ErrHashNotFloat)
			return
		}
	}
	sum, ok := addLongDouble(cur, by)
	if !ok {
		x.Fail(ErrIncrNaN)
		return
	}
	out := []byte(formatLongDouble(sum))
	if _, err := r.set(x.Args[2], out); err != nil {
		x.Fail(err)
		return
	}
	if err := r.save(); err != nil {
		x.Fail(err)
		return
	}
	x.W.Bulk(out)
}

// hrandfieldCmd is Redis 7.0's HRANDFIELD: without a count one random
// field (nil for a missing key); a positive count that many distinct
// fields, or the whole hash in its order when count >= its size; a
// negative count -count fields that may repeat.
func hrandfieldCmd(x *Ctx) {
	if len(x.Args) == 2 {
		r, err := x.openHash(x.Args[1], true)
		if err != nil || !r.found {
			if err != nil {
				x.Fail(err)
			} else {
				x.W.Null()
			}
			return
		}
		f, err := r.random(rand.IntN, rand.Uint64N(math.MaxInt64)+1)
		if err != nil {
			x.Fail(err)
			return
		}
		x.W.Bulk(f)
		return
	}
	n, ok := parseInt(x.Args[2])
	switch {
	case !ok:
		x.Fail(ErrNotInteger)
		return
	case n == math.MinInt64:
		x.Fail(ErrRandCountRange)
		return
	case len(x.Args) > 4 || (len(x.Args) == 4 && !eq(x.Args[3], "withvalues")):
		x.Fail(ErrSyntax)
		return
	}
	withValues := len(x.Args) == 4
	if withValues && (n < -math.MaxInt64/2 || n > math.MaxInt64/2) {
		x.Fail(ErrOutOfRange)
		return
	}
	r, err := x.openHash(x.Args[1], true)
	if err != nil {
		x.Fail(err)
		return
	}
	if !r.found || n == 0 {
		x.W.Array(0)
		return
	}
	all, err := r.pairs()
	if err != nil {
		x.Fail(err)
		return
	}
	size := int64(len(all))
	var picks []hashcodec.Pair
	switch {
	case n < 0 || n == 1:
		// Repeats allowed: each pick from the whole hash.
		count := n
		if count < 0 {
			count = -n
		}
		if count > maxRandPicks {
			// Redis would answer that many; an answer this size
			// is a client's mistake, refused rather than built.
			x.Fail(ErrOutOfRange)
			return
		}
		picks = make([]hashcodec.Pair, count)
		for i := range picks {
			picks[i] = all[rand.IntN(len(all))]
		}
	case n >= size:
		picks = all
	default:
		idx := rand.Perm(len(all))[:n]
		slices.Sort(idx)
		picks = make([]hashcodec.Pair, n)
		for i, j := range idx {
			picks[i] = all[j]
		}
	}
	if withValues && x.W.Proto == 2 {
		x.W.Array(2 * len(picks))
	} else {
		x.W.Array(len(picks))
	}
	for _, p := range picks {
		if withValues && x.W.Proto > 2 {
			x.W.Array(2)
		}
		x.W.Bulk(p.Field)
		if withValues {
			x.W.Bulk(p.Value)
		}
	}
}

// maxRandPicks bounds the answer of HRANDFIELD with a negative count.
const maxRandPicks = 1 << 24

// hscanCmd is HSCAN. A listpack-encoded hash answers whole, cursor 0, as
// in Redis. A hashtable-encoded one is visited in the order of its fields'
// slots (fieldSlot), the cursor being the slot where the next call
// starts: a field present from the first call to the last is answered,
// whatever is added or deleted meanwhile; fields that share a slot come
// in one call.
func hscanCmd(x *Ctx) {
	cursor, ok := parseCursor(x.Args[2])
	if !ok {
		x.Fail(ErrCursor)
		return
	}
	// Redis looks the key up before it reads the options: a missing
	// key answers an empty scan, a string WRONGTYPE, whatever follows.
	r, err := x.openHash(x.Args[1], true)
	o, ok := x.scanStart(r.found, err)
	if !ok {
		return
	}
	count, pattern := o.count, o.pattern
	page, next := r.h.Pairs, uint64(0)
	switch {
	case r.isObj():
		if page, next, err = r.scanFrom(cursor, count); err != nil {
			x.Fail(err)
			return
		}
	case r.h.Table:
		page, next = scanSlots(r.h.Pairs, cursor, count)
	}
	out := page[:0:0]
	for _, p := range page {
		if pattern == nil || globMatch(pattern, p.Field) {
			out = append(out, p)
		}
	}
	x.W.Array(2)
	x.W.BulkString(strconv.FormatUint(next, 10))
	x.W.Array(2 * len(out))
	for _, p := range out {
		x.W.Bulk(p.Field)
		x.W.Bulk(p.Value)
	}
}

// scanSlots is one page of an HSCAN of a hashtable-encoded hash: at least
// count pairs (fewer at the end) whose slots are cursor or more, in slot
// order, and the cursor of the next page (0 when this is the last).
func scanSlots(pairs []hashcodec.Pair, cursor uint64, count int64) ([]hashcodec.Pair, uint64) {
	type slotted struct {
		slot uint64
		p    hashcodec.Pair
	}
	var rest []slotted
	for _, p := range pairs {
		if s := fieldSlot(p.Field); s >= cursor {
			rest = append(rest, slotted{s, p})
		}
	}
	slices.SortFunc(rest, func(a, b slotted) int { return cmp.Compare(a.slot, b.slot) })
	end := min(int64(len(rest)), count)
	for end < int64(len(rest)) && rest[end].slot == rest[end-1].slot {
		end++ // a slot is never split between two pages
	}
	page := make([]hashcodec.Pair, end)
	for i := range page {
		page[i] = rest[i].p
	}
	if end == int64(len(rest)) {
		return page, 0
	}
	return page, rest[end].slot
}
