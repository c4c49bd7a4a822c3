package commands

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/oncekv/oncekv/internal/zcodec"
	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
)

// Sorted sets (Redis's zset type), as Redis 7.0 has them. A set is one
// store value of kind store.KindZSet, encoded by internal/zcodec in
// (score, member) order; every write encodes the whole set again. Its
// encoding (OBJECT ENCODING) follows Redis 7.0's rules: "listpack" while
// it has at most zset-max-listpack-entries members of at most
// zset-max-listpack-value bytes, "skiplist" once a member added breaks
// either limit, for good. A listpack keeps no -0 score (Redis's stores
// it as the integer 0); a skiplist does.

func zsetCommands() []*Command {
	w := func(name string, arity int, f Flags, fn Handler, c ...string) *Command {
		return &Command{Name: name, Arity: arity, Flags: Write | f, FirstKey: 1, LastKey: 1,
			Categories: append([]string{"write", "sortedset"}, c...), Run: fn}
	}
	r := func(name string, arity int, f Flags, fn Handler, c ...string) *Command {
		return &Command{Name: name, Arity: arity, Flags: ReadOnly | f, FirstKey: 1, LastKey: 1,
			Categories: append([]string{"read", "sortedset"}, c...), Run: fn}
	}
	nk := func(c *Command, first, numkeys int) *Command {
		c.FirstKey, c.LastKey, c.NumKeys = first, first, numkeys
		return c
	}
	return []*Command{
		w("zadd", -4, DenyOOM|Fast, zaddCmd, "fast"),
		w("zincrby", 4, DenyOOM|Fast, zincrbyCmd, "fast"),
		w("zrem", -3, Fast, zremCmd, "fast"),
		r("zcard", 2, Fast, zcardCmd, "fast"),
		r("zscore", 3, Fast, zscoreCmd, "fast"),
		r("zmscore", -3, Fast, zmscoreCmd, "fast"),
		r("zrank", 3, Fast, zrankCmd(false), "fast"),
		r("zrevrank", 3, Fast, zrankCmd(true), "fast"),
		r("zcount", 4, Fast, zcountCmd(false), "fast"),
		r("zlexcount", 4, Fast, zcountCmd(true), "fast"),
		r("zrange", -4, 0, zrangeCmd(zrAuto, false), "slow"),
		{Name: "zrangestore", Arity: -5, Flags: Write | DenyOOM, FirstKey: 1, LastKey: 2,
			Categories: []string{"write", "sortedset", "slow"}, Run: zrangeCmd(zrAuto, true)},
		r("zrevrange", -4, 0, zrangeCmd(zrRank|zrRev, false), "slow"),
		r("zrangebyscore", -4, 0, zrangeCmd(zrScore|zrFwd, false), "slow"),
		r("zrevrangebyscore", -4, 0, zrangeCmd(zrScore|zrRev, false), "slow"),
		r("zrangebylex", -4, 0, zrangeCmd(zrLex|zrFwd, false), "slow"),
		r("zrevrangebylex", -4, 0, zrangeCmd(zrLex|zrRev, false), "slow"),
		w("zremrangebyrank", 4, 0, zremrangeCmd(zrRank), "slow"),
		w("zremrangebyscore", 4, 0, zremrangeCmd(zrScore), "slow"),
		w("zremrangebylex", 4, 0, zremrangeCmd(zrLex), "slow"),
		w("zpopmin", -2, Fast, zpopCmd(false), "fast"),
		w("zpopmax", -2, Fast, zpopCmd(true), "fast"),
		nk(w("zmpop", -4, 0, zmpopCmd, "slow"), 0, 1),
		r("zrandmember", -2, 0, zrandmemberCmd, "slow"),
		nk(r("zunion", -3, 0, zsetOpCmd(zopUnion, false), "slow"), 0, 1),
		nk(r("zinter", -3, 0, zsetOpCmd(zopInter, false), "slow"), 0, 1),
		nk(r("zdiff", -3, 0, zsetOpCmd(zopDiff, false), "slow"), 0, 1),
		nk(w("zunionstore", -4, DenyOOM, zsetOpCmd(zopUnion, true), "slow"), 1, 2),
		nk(w("zinterstore", -4, DenyOOM, zsetOpCmd(zopInter, true), "slow"), 1, 2),
		nk(w("zdiffstore", -4, DenyOOM, zsetOpCmd(zopDiff, true), "slow"), 1, 2),
		nk(r("zintercard", -3, 0, zsetOpCmd(zopCard, false), "slow"), 0, 1),
		r("zscan", -3, 0, zscanCmd, "slow"),
		{Name: "bzpopmin", Arity: -3, Flags: Write | NoScript | Blocking | Fast, FirstKey: 1, LastKey: -2,
			Categories: []string{"write", "sortedset", "fast", "blocking"}, Run: bzpopCmd(false)},
		{Name: "bzpopmax", Arity: -3, Flags: Write | NoScript | Blocking | Fast, FirstKey: 1, LastKey: -2,
			Categories: []string{"write", "sortedset", "fast", "blocking"}, Run: bzpopCmd(true)},
		{Name: "bzmpop", Arity: -5, Flags: Write | Blocking, NumKeys: 2,
			Categories: []string{"write", "sortedset", "slow", "blocking"}, Run: bzmpopCmd},
	}
}

// zsetLimits are zset-max-listpack-entries and zset-max-listpack-value.
func (s *Server) zsetLimits() (entries, value int64) {
	return s.zsetMaxEntries.Load(), s.zsetMaxValue.Load()
}

// SetZsetLimits changes zset-max-listpack-entries and
// zset-max-listpack-value (Redis 7.0's defaults 128 and 64 when
// negative): they decide the encoding of sets written from now on.
func (s *Server) SetZsetLimits(entries, value int64) {
	if entries < 0 {
		entries = 128
	}
	if value < 0 {
		value = 64
	}
	s.zsetMaxEntries.Store(entries)
	s.zsetMaxValue.Store(value)
}

// zview reads the sorted set at key whole: ok false when missing,
// ErrWrongType for a key of another kind. read counts a keyspace hit or
// miss. An object is read element by element (zref.view): the commands
// that read a set whole use it.
func (x *Ctx) zview(db int, key []byte, read bool) (zcodec.View, store.Value, bool, error) {
	r, err := x.zopen(db, key, read)
	if err != nil || !r.found {
		return zcodec.View{}, r.v, false, err
	}
	z, err := r.view()
	if err != nil {
		return z, r.v, false, err
	}
	return z, r.v, true, nil
}

// zput stores entries (sorted) at key as a set of encoding enc, deadline
// at: inline, or an object when skiplist encoded (zsetobj.go); no entries
// deletes the key.
func (x *Ctx) zput(db int, key []byte, enc byte, entries []zcodec.Entry, at int64) error {
	if len(entries) == 0 {
		_, err := x.Tx.Delete(db, key)
		return err
	}
	if enc == zcodec.Skiplist && fitsObj(entries) {
		return x.zputObj(db, key, entries, at)
	}
	if enc == zcodec.Listpack {
		for i := range entries {
			if entries[i].Score == 0 {
				entries[i].Score = 0 // -0 as the listpack's integer 0
			}
		}
	}
	return x.Tx.Set(db, key, store.Value{Kind: store.KindZSet, Data: zcodec.Encode(enc, entries), ExpireAt: at})
}

// newEncoding is the encoding of a set created with entries (a *STORE's
// destination): listpack when both limits hold.
func (x *Ctx) newEncoding(entries []zcodec.Entry) byte {
	maxEntries, maxValue := x.S.zsetLimits()
	if int64(len(entries)) > maxEntries {
		return zcodec.Skiplist
	}
	for _, e := range entries {
		if int64(len(e.Member)) > maxValue {
			return zcodec.Skiplist
		}
	}
	return zcodec.Listpack
}

// zmut is a set being changed: an object's members are changed in the
// transaction as they come (obj); an inline set's are the members as they
// were (base) and those added, updated or removed since. Its encoding
// changes as Redis 7.0's zsetAdd changes it, member by member: a listpack
// becomes a skiplist when a member is added that makes it too long or is
// too long itself, so members stored before (in the listpack) keep no -0
// score and members added after keep theirs.
type zmut struct {
	obj     *zref // the set, when it is an object
	enc     byte
	base    []zcodec.Entry
	idx     map[string]int // base's ranks by member, once looked up often
	lookups int
	changed map[string]float64
	removed map[string]bool
	// n is the number of members now; maxEntries and maxValue are the
	// listpack's limits (zset-max-listpack-*).
	n                    int
	maxEntries, maxValue int64
	err                  error // the first error of an object's change
}

func newZmut(r *zref) *zmut {
	m := &zmut{enc: zcodec.Listpack}
	m.maxEntries, m.maxValue = r.x.S.zsetLimits()
	if m.maxEntries == 0 {
		m.enc = zcodec.Skiplist // created as one
	}
	switch {
	case r.isObj():
		m.obj, m.enc, m.n = r, zcodec.Skiplist, r.len()
	case r.found:
		m.enc = r.z.Encoding()
		m.base = r.z.Entries()
		m.n = len(m.base)
	}
	return m
}

func (m *zmut) baseRank(member []byte) int {
	m.lookups++
	if m.idx == nil && m.lookups > 2 && len(m.base) > 16 {
		m.idx = make(map[string]int, len(m.base))
		for i, e := range m.base {
			m.idx[string(e.Member)] = i
		}
	}
	if m.idx != nil {
		if i, ok := m.idx[string(member)]; ok {
			return i
		}
		return -1
	}
	for i, e := range m.base {
		if bytes.Equal(e.Member, member) {
			return i
		}
	}
	return -1
}

// score is member's score now.
func (m *zmut) score(member []byte) (float64, bool) {
	if m.obj != nil {
		f, ok, err := m.obj.score(member)
		if err != nil && m.err == nil {
			m.err = err
		}
		return f, ok
	}
	if s, ok := m.changed[string(member)]; ok {
		return s, true
	}
	if m.removed[string(member)] {
		return 0, false
	}
	if i := m.baseRank(member); i >= 0 {
		return m.base[i].Score, true
	}
	return 0, false
}

// toInline makes an object's change an inline one, for a member longer
// than an object holds: the set is then stored inline (zput).
func (m *zmut) toInline() {
	entries, err := m.obj.entries()
	if err != nil {
		m.err = err
		return
	}
	m.obj, m.base = nil, entries
}

func (m *zmut) set(member []byte, score float64) {
	if m.obj != nil && len(member) > zobjMaxMember {
		m.toInline()
	}
	if m.obj != nil {
		old, had := m.score(member)
		if m.err == nil {
			m.err = m.obj.objSet(member, score, had, old)
		}
		if !had {
			m.n++
		}
		return
	}
	_, had := m.score(member)
	if !had {
		if m.enc == zcodec.Listpack && (int64(m.n+1) > m.maxEntries || int64(len(member)) > m.maxValue) {
			m.enc = zcodec.Skiplist
		}
		m.n++
	}
	if m.enc == zcodec.Listpack && score == 0 {
		score = 0 // -0 as the listpack's integer 0
	}
	if m.changed == nil {
		m.changed = make(map[string]float64)
	}
	m.changed[string(member)] = score
	delete(m.removed, string(member))
}

func (m *zmut) remove(member []byte) bool {
	old, had := m.score(member)
	if !had {
		return false
	}
	m.n--
	if m.obj != nil {
		if m.err == nil {
			m.err = m.obj.objRemove(member, old)
		}
		return true
	}
	delete(m.changed, string(member))
	if m.removed == nil {
		m.removed = make(map[string]bool)
	}
	m.removed[string(member)] = true
	return true
}

// save stores the set as changed, deadline at.
func (m *zmut) save(x *Ctx, db int, key []byte, at int64) error {
	if m.err != nil {
		return m.err
	}
	if m.obj != nil {
		return m.obj.saveObj()
	}
	enc, entries := m.result()
	return x.zput(db, key, enc, entries, at)
}

// result is an inline set's entries now, sorted, and its encoding.
func (m *zmut) result() (byte, []zcodec.Entry) {
	out := m.base
	if len(m.changed) > 0 || len(m.removed) > 0 {
		out = make([]zcodec.Entry, 0, len(m.base)+len(m.changed))
		for _, e := range m.base {
			if _, ch := m.changed[string(e.Member)]; ch || m.removed[string(e.Member)] {
				continue
			}
			out = append(out, e)
		}
		news := make([]zcodec.Entry, 0, len(m.changed))
		for k, s := range m.changed {
			news = append(news, zcodec.Entry{Member: []byte(k), Score: s})
		}
		slices.SortFunc(news, zcodec.Compare)
		out = mergeEntries(out, news)
	}
	enc := m.enc
	return enc, out
}

func mergeEntries(a, b []zcodec.Entry) []zcodec.Entry {
	out := make([]zcodec.Entry, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if zcodec.Less(b[j], a[i]) {
			out = append(out, b[j])
			j++
		} else {
			out = append(out, a[i])
			i++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// zaddOpts are ZADD's flags.
type zaddOpts struct{ nx, xx, gt, lt, ch, incr bool }

func parseZadd(args [][]byte) (o zaddOpts, pairs [][]byte, err error) {
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		switch {
		case eq(a, "nx"):
			o.nx = true
		case eq(a, "xx"):
			o.xx = true
		case eq(a, "gt"):
			o.gt = true
		case eq(a, "lt"):
			o.lt = true
		case eq(a, "ch"):
			o.ch = true
		case eq(a, "incr"):
			o.incr = true
		default:
			goto done
		}
	}
done:
	pairs = args[i:]
	switch {
	case len(pairs)%2 != 0 || len(pairs) == 0:
		return o, nil, ErrSyntax
	case o.nx && o.xx:
		return o, nil, ErrZaddXXNX
	case (o.gt && o.nx) || (o.lt && o.nx) || (o.gt && o.lt):
		return o, nil, ErrZaddGTLTNX
	case o.incr && len(pairs) > 2:
		return o, nil, ErrZaddIncr
	}
	return o, pairs, nil
}

func zaddCmd(x *Ctx) {
	o, pairs, err := parseZadd(x.Args[2:])
	if err != nil {
		x.Fail(err)
		return
	}
	scores := make([]float64, len(pairs)/2)
	for i := range scores {
		f, ok := parseScore(pairs[2*i])
		if !ok {
			x.Fail(ErrNotFloat)
			return
		}
		scores[i] = f
	}
	key := x.Args[1]
	r, err := x.zopen(x.DB, key, false)
	if err != nil {
		x.Fail(err)
		return
	}
	if !r.found && o.xx {
		if o.incr {
			x.W.Null()
		} else {
			x.W.Int(0)
		}
		return
	}
	m := newZmut(&r)
	var added, updated int64
	var incrScore float64
	incrDone := false
	for i, score := range scores {
		member := pairs[2*i+1]
		cur, had := m.score(member)
		if had {
			if o.nx {
				continue
			}
			if o.incr {
				score += cur
				if math.IsNaN(score) {
					x.Fail(ErrZsetNaN)
					return
				}
			}
			if (o.lt && score >= cur) || (o.gt && score <= cur) {
				continue
			}
			incrScore, incrDone = score, true
			if score != cur {
				m.set(member, score)
				updated++
			}
			continue
		}
		if o.xx {
			continue
		}
		m.set(member, score)
		added++
		incrScore, incrDone = score, true
	}
	if added+updated > 0 {
		if err := m.save(x, x.DB, key, r.v.ExpireAt); err != nil {
			x.Fail(err)
			return
		}
	}
	switch {
	case o.incr && incrDone:
		writeScore(x.W, incrScore)
	case o.incr:
		x.W.Null()
	case o.ch:
		x.W.Int(added + updated)
	default:
		x.W.Int(added)
	}
}

func zincrbyCmd(x *Ctx) {
	by, ok := parseScore(x.Args[2])
	if !ok {
		x.Fail(ErrNotFloat)
		return
	}
	key, member := x.Args[1], x.Args[3]
	r, err := x.zopen(x.DB, key, false)
	if err != nil {
		x.Fail(err)
		return
	}
	m := newZmut(&r)
	score := by
	cur, had := m.score(member)
	if m.err != nil {
		x.Fail(m.err)
		return
	}
	if had {
		score += cur
		if math.IsNaN(score) {
			x.Fail(ErrZsetNaN)
			return
		}
		if score == cur {
			// Unchanged: no write, which WATCH would see (as Redis's
			// zsetAdd, which reports no update).
			writeScore(x.W, score)
			return
		}
	}
	m.set(member, score)
	if err := m.save(x, x.DB, key, r.v.ExpireAt); err != nil {
		x.Fail(err)
		return
	}
	writeScore(x.W, score)
}

func zremCmd(x *Ctx) {
	key := x.Args[1]
	r, err := x.zopen(x.DB, key, false)
	if err != nil || !r.found {
		x.okInt(err, 0)
		return
	}
	m := newZmut(&r)
	var n int64
	for _, member := range x.Args[2:] {
		if m.remove(member) {
			n++
		}
	}
	if n > 0 {
		if err := m.save(x, x.DB, key, r.v.ExpireAt); err != nil {
			x.Fail(err)
			return
		}
	}
	x.W.Int(n)
}

// okInt answers err, or n.
func (x *Ctx) okInt(err error, n int64) {
	if err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(n)
}

func zcardCmd(x *Ctx) {
	r, err := x.zopen(x.DB, x.Args[1], true)
	x.okInt(err, int64(r.len()))
}

func zscoreCmd(x *Ctx) {
	r, err := x.zopen(x.DB, x.Args[1], true)
	if err != nil {
		x.Fail(err)
		return
	}
	f, ok, err := r.score(x.Args[2])
	switch {
	case err != nil:
		x.Fail(err)
	case !ok:
		x.W.Null()
	default:
		writeScore(x.W, f)
	}
}

func zmscoreCmd(x *Ctx) {
	r, err := x.zopen(x.DB, x.Args[1], true)
	if err != nil {
		x.Fail(err)
		return
	}
	members := x.Args[2:]
	scores := make([]float64, len(members))
	has := make([]bool, len(members))
	for i, member := range members {
		if scores[i], has[i], err = r.score(member); err != nil {
			x.Fail(err)
			return
		}
	}
	x.W.Array(len(members))
	for i := range members {
		if !has[i] {
			x.W.Null()
			continue
		}
		writeScore(x.W, scores[i])
	}
}

func zrankCmd(rev bool) Handler {
	return func(x *Ctx) {
		r, err := x.zopen(x.DB, x.Args[1], true)
		if err != nil {
			x.Fail(err)
			return
		}
		i, err := r.rank(x.Args[2])
		switch {
		case err != nil:
			x.Fail(err)
		case i < 0:
			x.W.Null()
		case rev:
			x.W.Int(int64(r.len()) - 1 - i)
		default:
			x.W.Int(i)
		}
	}
}

// zrange is a range of a set by rank, score or member.
type zrange struct {
	kind byte // zrRank, zrScore, zrLex
	// rank: start and end; score: min and max; lex: lmin and lmax.
	start, end       int64
	min, max         float64
	minEx, maxEx     bool
	lmin, lmax       []byte // nil with lminInf/lmaxInf
	lminInf, lmaxInf int    // -1 for "-", +1 for "+", 0 for a member
}

// Kinds and directions of a range (zrangeCmd's mode).
const (
	zrRank  = 1
	zrScore = 2
	zrLex   = 3
	zrKind  = 3
	zrFwd   = 4
	zrRev   = 8
	zrAuto  = 0
)

// parseLexItem parses a bound of ZRANGEBYLEX: "-", "+", "(member" or
// "[member".
func parseLexItem(b []byte) (member []byte, inf int, excl bool, ok bool) {
	if len(b) == 0 {
		return nil, 0, false, false
	}
	switch b[0] {
	case '+', '-':
		if len(b) != 1 {
			return nil, 0, false, false
		}
		if b[0] == '+' {
			return nil, 1, false, true
		}
		return nil, -1, false, true
	case '(':
		return b[1:], 0, true, true
	case '[':
		return b[1:], 0, false, true
	}
	return nil, 0, false, false
}

func parseRange(kind int, lo, hi []byte) (zrange, error) {
	r := zrange{kind: byte(kind)}
	switch kind {
	case zrRank:
		var ok bool
		if r.start, ok = parseInt(lo); !ok {
			return r, ErrNotInteger
		}
		if r.end, ok = parseInt(hi); !ok {
			return r, ErrNotInteger
		}
	case zrScore:
		var ok1, ok2 bool
		r.min, r.minEx, ok1 = parseRangeScore(lo)
		r.max, r.maxEx, ok2 = parseRangeScore(hi)
		if !ok1 || !ok2 {
			return r, ErrMinMaxFloat
		}
	case zrLex:
		var ok1, ok2 bool
		r.lmin, r.lminInf, r.minEx, ok1 = parseLexItem(lo)
		r.lmax, r.lmaxInf, r.maxEx, ok2 = parseLexItem(hi)
		if !ok1 || !ok2 {
			return r, ErrMinMaxLex
		}
	}
	return r, nil
}

// gteMin reports whether e is at or after a lex range's min.
func (r zrange) gteMin(e zcodec.Entry) bool {
	if r.lminInf != 0 {
		return r.lminInf < 0
	}
	c := bytes.Compare(e.Member, r.lmin)
	return c > 0 || (c == 0 && !r.minEx)
}

// lteMax reports whether e is at or before a lex range's max.
func (r zrange) lteMax(e zcodec.Entry) bool {
	if r.lmaxInf != 0 {
		return r.lmaxInf > 0
	}
	c := bytes.Compare(e.Member, r.lmax)
	return c < 0 || (c == 0 && !r.maxEx)
}

// span is the ranks [from, to) of z that r selects, in forward order;
// rev walks a lex range from the end, as Redis does.
func (r zrange) span(z zcodec.View, rev bool) (from, to int) {
	n := z.Len()
	switch r.kind {
	case zrRank:
		return rankSpan(r.start, r.end, n)
	case zrScore:
		if r.min > r.max || (r.min == r.max && (r.minEx || r.maxEx)) {
			return 0, 0
		}
		from = z.Search(func(e zcodec.Entry) bool {
			if r.minEx {
				return e.Score > r.min
			}
			return e.Score >= r.min
		})
		to = z.Search(func(e zcodec.Entry) bool {
			if r.maxEx {
				return e.Score >= r.max
			}
			return e.Score > r.max
		})
	case zrLex:
		if r.lminInf == 1 || r.lmaxInf == -1 {
			return 0, 0
		}
		if r.lminInf == 0 && r.lmaxInf == 0 {
			c := bytes.Compare(r.lmin, r.lmax)
			if c > 0 || (c == 0 && (r.minEx || r.maxEx)) {
				return 0, 0
			}
		}
		if n > 0 && z.At(0).Score == z.At(n-1).Score {
			// All scores equal: members are in order.
			from = z.Search(r.gteMin)
			to = z.Search(func(e zcodec.Entry) bool { return !r.lteMax(e) })
			break
		}
		// Scores differ: as Redis's listpack walk, from the first
		// member at or after min, while members are at or before max
		// (backwards from the end for a reverse range).
		if rev {
			to = n
			for to > 0 && !r.lteMax(z.At(to-1)) {
				to--
			}
			from = to
			for from > 0 && r.gteMin(z.At(from-1)) {
				from--
			}
			break
		}
		for from < n && !r.gteMin(z.At(from)) {
			from++
		}
		to = from
		for to < n && r.lteMax(z.At(to)) {
			to++
		}
	}
	if to < from {
		return 0, 0
	}
	return from, to
}

// zrangeOpts are what ZRANGE parses: the range, direction, limit.
type zrangeOpts struct {
	r             zrange
	rev           bool
	withScores    bool
	offset, limit int64
	hasLimit      bool
}

// parseZrange parses the arguments after the key(s) as Redis 7.0's
// zrangeGenericCommand does; mode fixes the kind and direction of the
// legacy commands (ZRANGEBYSCORE…).
func parseZrange(args [][]byte, mode int, storeIt bool) (zrangeOpts, error) {
	o := zrangeOpts{limit: -1}
	kind := mode & zrKind
	dir := mode &^ zrKind
	for j := 2; j < len(args); j++ {
		a := args[j]
		left := len(args) - j - 1
		switch {
		case !storeIt && eq(a, "withscores"):
			o.withScores = true
		case eq(a, "limit") && left >= 2:
			var ok bool
			if o.offset, ok = parseInt(args[j+1]); !ok {
				return o, ErrNotInteger
			}
			if o.limit, ok = parseInt(args[j+2]); !ok {
				return o, ErrNotInteger
			}
			o.hasLimit = true
			j += 2
		case dir == 0 && eq(a, "rev"):
			dir = zrRev
		case kind == 0 && eq(a, "bylex"):
			kind = zrLex
		case kind == 0 && eq(a, "byscore"):
			kind = zrScore
		default:
			return o, ErrSyntax
		}
	}
	if kind == 0 {
		kind = zrRank
	}
	o.rev = dir == zrRev
	if o.hasLimit && kind == zrRank {
		return o, ErrZLimitRank
	}
	if o.withScores && kind == zrLex {
		return o, ErrZScoresLex
	}
	lo, hi := args[0], args[1]
	if o.rev && kind != zrRank {
		lo, hi = hi, lo
	}
	r, err := parseRange(kind, lo, hi)
	o.r = r
	return o, err
}

// pick is the entries o selects from z, in reply order.
func (o zrangeOpts) pick(z zcodec.View) []zcodec.Entry {
	from, to := o.r.span(z, o.rev)
	if o.r.kind == zrRank && o.rev {
		// Ranks count from the end.
		n := z.Len()
		from, to = n-to, n-from
	}
	if from >= to {
		return nil
	}
	var out []zcodec.Entry
	offset, limit := o.offset, o.limit
	if offset < 0 {
		return nil
	}
	count := int64(to - from)
	if offset >= count {
		return nil
	}
	count -= offset
	if limit >= 0 && limit < count {
		count = limit
	}
	out = make([]zcodec.Entry, 0, count)
	for k := int64(0); k < count; k++ {
		i := from + int(offset+k)
		if o.rev {
			i = to - 1 - int(offset+k)
		}
		out = append(out, z.At(i))
	}
	return out
}

func zrangeCmd(mode int, storeIt bool) Handler {
	return func(x *Ctx) {
		args := x.Args[2:]
		if storeIt {
			args = x.Args[3:]
		}
		o, err := parseZrange(args, mode, storeIt)
		if err != nil {
			x.Fail(err)
			return
		}
		src := x.Args[1]
		if storeIt {
			src = x.Args[2]
		}
		r, err := x.zopen(x.DB, src, true)
		if err != nil {
			x.Fail(err)
			return
		}
		var picked []zcodec.Entry
		switch {
		case r.isObj():
			if picked, _, err = o.pickObj(&r, false); err != nil {
				x.Fail(err)
				return
			}
		case r.found:
			picked = o.pick(r.z)
		}
		if storeIt {
			x.zstore(x.Args[1], picked, true)
			return
		}
		writeEntries(x, picked, o.withScores)
	}
}

// zstore writes entries (in any order when sortIt) as the set at dst,
// replacing whatever it held, and answers their number.
func (x *Ctx) zstore(dst []byte, entries []zcodec.Entry, sortIt bool) {
	if sortIt {
		entries = slices.Clone(entries)
		slices.SortFunc(entries, zcodec.Compare)
	}
	if err := x.zput(x.DB, dst, x.newEncoding(entries), entries, 0); err != nil {
		x.Fail(err)
		return
	}
	x.W.Int(int64(len(entries)))
}

// writeEntries answers members, with their scores as pairs in RESP3 and
// flat in RESP2.
func writeEntries(x *Ctx, entries []zcodec.Entry, withScores bool) {
	if !withScores {
		x.W.Array(len(entries))
		for _, e := range entries {
			x.W.Bulk(e.Member)
		}
		return
	}
	if x.W.Proto == 3 {
		x.W.Array(len(entries))
	} else {
		x.W.Array(2 * len(entries))
	}
	for _, e := range entries {
		if x.W.Proto == 3 {
			x.W.Array(2)
		}
		x.W.Bulk(e.Member)
		writeScore(x.W, e.Score)
	}
}

func zcountCmd(lex bool) Handler {
	return func(x *Ctx) {
		kind := zrScore
		if lex {
			kind = zrLex
		}
		r, err := parseRange(kind, x.Args[2], x.Args[3])
		if err != nil {
			x.Fail(err)
			return
		}
		z, err := x.zopen(x.DB, x.Args[1], true)
		if err != nil || !z.found {
			x.okInt(err, 0)
			return
		}
		if z.isObj() {
			_, n, err := zrangeOpts{r: r, limit: -1}.pickObj(&z, true)
			x.okInt(err, n)
			return
		}
		from, to := r.span(z.z, false)
		x.W.Int(int64(to - from))
	}
}

func zremrangeCmd(kind int) Handler {
	return func(x *Ctx) {
		r, err := parseRange(kind, x.Args[2], x.Args[3])
		if err != nil {
			x.Fail(err)
			return
		}
		key := x.Args[1]
		zr, err := x.zopen(x.DB, key, false)
		if err != nil || !zr.found {
			x.okInt(err, 0)
			return
		}
		if zr.isObj() {
			o := zrangeOpts{r: r, limit: -1}
			// All of it: the key goes, and its members with it in the
			// background, as DEL's do.
			if _, n, err := o.pickObj(&zr, true); err != nil || n == zr.n {
				if err == nil {
					_, err = x.Tx.Delete(x.DB, key)
				}
				x.okInt(err, n)
				return
			}
			gone, _, err := o.pickObj(&zr, false)
			if err == nil && len(gone) > 0 {
				err = zr.removeEntries(gone)
			}
			x.okInt(err, int64(len(gone)))
			return
		}
		z, v := zr.z, zr.v
		from, to := r.span(z, false)
		if from >= to {
			x.W.Int(0)
			return
		}
		entries := z.Entries()
		rest := append(entries[:from:from], entries[to:]...)
		if err := x.zput(x.DB, key, z.Encoding(), rest, v.ExpireAt); err != nil {
			x.Fail(err)
			return
		}
		x.W.Int(int64(to - from))
	}
}

// zpopFrom pops up to count members of the set r, lowest first (or
// highest, max), and writes the rest back.
func (x *Ctx) zpopFrom(r *zref, count int64, maxFirst bool) ([]zcodec.Entry, error) {
	if r.isObj() {
		popped, _, err := zwalk{rev: maxFirst, limit: count}.run(r, false)
		switch {
		case err != nil:
		case int64(len(popped)) == r.n:
			_, err = x.Tx.Delete(r.db, r.key) // members removed in the background
		default:
			err = r.removeEntries(popped)
		}
		return popped, err
	}
	entries := r.z.Entries()
	n := int(min(count, int64(len(entries))))
	var popped, rest []zcodec.Entry
	if maxFirst {
		popped = slices.Clone(entries[len(entries)-n:])
		slices.Reverse(popped)
		rest = entries[:len(entries)-n]
	} else {
		popped = slices.Clone(entries[:n])
		rest = entries[n:]
	}
	for i := range popped {
		// Copied: the store may reuse what Get returned once it writes.
		popped[i].Member = bytes.Clone(popped[i].Member)
	}
	return popped, x.zput(r.db, r.key, r.z.Encoding(), rest, r.v.ExpireAt)
}

func zpopCmd(maxFirst bool) Handler {
	return func(x *Ctx) {
		if len(x.Args) > 3 {
			x.Fail(ErrSyntax)
			return
		}
		count, nested := int64(1), false
		if len(x.Args) == 3 {
			n, ok := parseInt(x.Args[2])
			if !ok || n < 0 {
				x.Fail(ErrRangePos)
				return
			}
			count, nested = n, true
		}
		r, err := x.zopen(x.DB, x.Args[1], false)
		if err != nil {
			x.Fail(err)
			return
		}
		if !r.found || count == 0 {
			x.W.Array(0)
			return
		}
		popped, err := x.zpopFrom(&r, count, maxFirst)
		if err != nil {
			x.Fail(err)
			return
		}
		writePopped(x, popped, nested && x.W.Proto == 3)
	}
}

// writePopped answers popped entries: pairs when nested, else flat.
func writePopped(x *Ctx, popped []zcodec.Entry, nested bool) { writePoppedTo(x.W, popped, nested) }

func writePoppedTo(w *resp.Writer, popped []zcodec.Entry, nested bool) {
	if nested {
		w.Array(len(popped))
	} else {
		w.Array(2 * len(popped))
	}
	for _, e := range popped {
		if nested {
			w.Array(2)
		}
		w.Bulk(e.Member)
		writeScore(w, e.Score)
	}
}

// parseNumkeys parses the key count at x.Args[i]: the keys follow it.
func (x *Ctx) parseNumkeys(i int, zeroErr error) ([][]byte, bool) {
	n, ok := parseInt(x.Args[i])
	switch {
	case !ok || n < 1:
		x.Fail(zeroErr)
		return nil, false
	case n > int64(len(x.Args)-i-1):
		x.Fail(ErrSyntax)
		return nil, false
	}
	return x.Args[i+1 : i+1+int(n)], true
}

// parseMpopTail parses ZMPOP's and BZMPOP's MIN|MAX [COUNT count],
// answering the error if they are wrong.
func (x *Ctx) parseMpopTail(rest [][]byte) (maxFirst bool, count int64, ok bool) {
	if len(rest) == 0 {
		x.Fail(ErrSyntax)
		return false, 0, false
	}
	switch {
	case eq(rest[0], "min"):
	case eq(rest[0], "max"):
		maxFirst = true
	default:
		x.Fail(ErrSyntax)
		return false, 0, false
	}
	count, err := mpopCount(rest[1:])
	if err != nil {
		x.Fail(err)
		return false, 0, false
	}
	return maxFirst, count, true
}

func zmpopCmd(x *Ctx) {
	keys, ok := x.parseNumkeys(1, ErrNumkeys)
	if !ok {
		return
	}
	maxFirst, count, ok := x.parseMpopTail(x.Args[2+len(keys):])
	if !ok {
		return
	}
	for _, key := range keys {
		r, err := x.zopen(x.DB, key, false)
		if err != nil {
			x.Fail(err)
			return
		}
		if !r.found {
			continue
		}
		popped, err := x.zpopFrom(&r, count, maxFirst)
		if err != nil {
			x.Fail(err)
			return
		}
		x.W.Array(2)
		x.W.Bulk(key)
		writePopped(x, popped, true)
		return
	}
	x.W.NullArray()
}

func zrandmemberCmd(x *Ctx) {
	withCount := len(x.Args) >= 3
	var count int64
	if withCount {
		n, ok := parseInt(x.Args[2])
		switch {
		case !ok:
			x.Fail(ErrNotInteger)
			return
		case n == math.MinInt64:
			x.Fail(ErrRandCount)
			return
		case len(x.Args) > 4 || (len(x.Args) == 4 && !eq(x.Args[3], "withscores")):
			x.Fail(ErrSyntax)
			return
		case len(x.Args) == 4 && (n > math.MaxInt64/2 || n < -math.MaxInt64/2):
			x.Fail(ErrRange)
			return
		}
		count = n
	}
	r, err := x.zopen(x.DB, x.Args[1], true)
	if err != nil {
		x.Fail(err)
		return
	}
	found := r.found
	if !withCount {
		if !found {
			x.W.Null()
			return
		}
		if r.isObj() {
			e, err := r.randomPick()
			if err != nil {
				x.Fail(err)
				return
			}
			x.W.Bulk(e.Member)
			return
		}
		x.W.Bulk(r.z.At(rand.IntN(r.z.Len())).Member)
		return
	}
	withScores := len(x.Args) == 4
	if !found || count == 0 {
		x.W.Array(0)
		return
	}
	var picked []zcodec.Entry
	if count < -maxRandRepeats {
		// Redis would stream that many, until it runs out of memory.
		x.Fail(ErrRandTooMany)
		return
	}
	if r.isObj() && (count < 0 && -count*4 < int64(r.len()) || count > 0 && count*4 < int64(r.len())) {
		// A few of a large set: picked one by one, by random slots.
		picked, err = r.randomPicks(count)
		if err != nil {
			x.Fail(err)
			return
		}
		writeEntries(x, picked, withScores)
		return
	}
	z, err := r.view()
	if err != nil {
		x.Fail(err)
		return
	}
	if count < 0 {
		picked = make([]zcodec.Entry, -count)
		for i := range picked {
			picked[i] = z.At(rand.IntN(z.Len()))
		}
	} else {
		ranks := rand.Perm(z.Len())[:min(int(min(count, int64(z.Len()))), z.Len())]
		for _, i := range ranks {
			picked = append(picked, z.At(i))
		}
	}
	writeEntries(x, picked, withScores)
}

// maxRandRepeats is the most members ZRANDMEMBER answers for a negative
// count (with repeats): 1,048,576.
const maxRandRepeats = 1 << 20

// Set operations of zsetOpCmd.
const (
	zopUnion = iota
	zopInter
	zopDiff
	zopCard
)

// aggregate is ZUNION's AGGREGATE.
type aggregate byte

const (
	aggSum aggregate = iota
	aggMin
	aggMax
)

func (a aggregate) apply(acc, v float64) float64 {
	switch a {
	case aggMin:
		return min(acc, v)
	case aggMax:
		return max(acc, v)
	}
	s := acc + v
	if math.IsNaN(s) {
		return 0 // inf + -inf, as Redis's zunionInterAggregate
	}
	return s
}

// zsetOpCmd is ZUNION, ZINTER, ZDIFF, their STORE forms, and ZINTERCARD,
// checked in Redis 7.0's order: numkeys, the keys' types, the options.
func zsetOpCmd(op int, storeIt bool) Handler {
	return func(x *Ctx) {
		at := 1
		if storeIt {
			at = 2
		}
		n, ok := parseInt(x.Args[at])
		if !ok {
			x.Fail(ErrNotInteger)
			return
		}
		if n < 1 {
			x.W.Error("ERR at least 1 input key is needed for '" + x.Cmd.Name + "' command")
			return
		}
		if n > int64(len(x.Args)-at-1) {
			x.Fail(ErrSyntax)
			return
		}
		keys := x.Args[at+1 : at+1+int(n)]
		sets := make([]zcodec.View, len(keys))
		for i, k := range keys {
			z, err := x.zsetOpInput(k)
			if err != nil {
				x.Fail(err)
				return
			}
			sets[i] = z
		}
		weights := make([]float64, len(keys))
		for i := range weights {
			weights[i] = 1
		}
		agg, withScores, limit := aggSum, false, int64(0)
		rest := x.Args[at+1+len(keys):]
		for len(rest) > 0 {
			switch {
			case op != zopDiff && op != zopCard && len(rest) >= len(keys)+1 && eq(rest[0], "weights"):
				for i := range weights {
					f, ok := parseScore(rest[1+i])
					if !ok {
						x.Fail(ErrWeightFloat)
						return
					}
					weights[i] = f
				}
				rest = rest[1+len(keys):]
			case op != zopDiff && op != zopCard && len(rest) >= 2 && eq(rest[0], "aggregate"):
				switch {
				case eq(rest[1], "sum"):
					agg = aggSum
				case eq(rest[1], "min"):
					agg = aggMin
				case eq(rest[1], "max"):
					agg = aggMax
				default:
					x.Fail(ErrSyntax)
					return
				}
				rest = rest[2:]
			case !storeIt && op != zopCard && eq(rest[0], "withscores"):
				withScores = true
				rest = rest[1:]
			case op == zopCard && len(rest) >= 2 && eq(rest[0], "limit"):
				l, ok := parseInt(rest[1])
				if !ok || l < 0 {
					x.Fail(ErrLimitNeg)
					return
				}
				limit = l
				rest = rest[2:]
			default:
				x.Fail(ErrSyntax)
				return
			}
		}
		result := zsetOp(op, sets, weights, agg, limit)
		switch {
		case op == zopCard:
			x.W.Int(int64(len(result)))
		case storeIt:
			x.zstore(x.Args[1], result, true)
		default:
			slices.SortFunc(result, zcodec.Compare)
			writeEntries(x, result, withScores)
		}
	}
}

// zsetOpInput reads one input key of ZUNION, ZINTER, ZDIFF, their STORE
// forms and ZINTERCARD: a sorted set, or a set whose members all score 1,
// as Redis 7.0 reads them; a missing key is empty.
func (x *Ctx) zsetOpInput(key []byte) (zcodec.View, error) {
	v, ok, err := x.Tx.Get(x.DB, key)
	if err != nil {
		return zcodec.View{}, err
	}
	x.countLookup(ok)
	switch {
	case !ok:
		return zcodec.View{}, nil
	case v.Kind == store.KindZSet:
		r, err := x.zsetOf(x.DB, key, v, true)
		if err != nil {
			return zcodec.View{}, err
		}
		return r.view()
	case v.Kind == store.KindSet:
		r, err := x.setOf(x.DB, key, v, ok)
		if err != nil {
			return zcodec.View{}, err
		}
		ms, err := r.members()
		if err != nil {
			return zcodec.View{}, err
		}
		entries := make([]zcodec.Entry, len(ms))
		for i, m := range ms {
			entries[i] = zcodec.Entry{Member: m, Score: 1}
		}
		slices.SortFunc(entries, zcodec.Compare)
		return zcodec.Decode(zcodec.Encode(zcodec.Skiplist, entries))
	}
	return zcodec.View{}, ErrWrongType
}

// zsetOp computes a union, intersection or difference, unsorted. The
// inputs are taken smallest first, as Redis sorts them (a sum of scores
// rounds in that order); ZDIFF keeps its first input first.
func zsetOp(op int, sets []zcodec.View, weights []float64, agg aggregate, limit int64) []zcodec.Entry {
	type src struct {
		z zcodec.View
		w float64
	}
	srcs := make([]src, len(sets))
	for i := range sets {
		srcs[i] = src{sets[i], weights[i]}
	}
	weighted := func(s src, i int) float64 {
		f := s.w * s.z.At(i).Score
		if math.IsNaN(f) {
			return 0
		}
		return f
	}
	switch op {
	case zopDiff:
		first := srcs[0].z
		var out []zcodec.Entry
	next:
		for i := 0; i < first.Len(); i++ {
			e := first.At(i)
			for _, s := range srcs[1:] {
				if s.z.Find(e.Member) >= 0 {
					continue next
				}
			}
			out = append(out, e)
		}
		return out
	case zopInter, zopCard:
		slices.SortStableFunc(srcs, func(a, b src) int { return a.z.Len() - b.z.Len() })
		var out []zcodec.Entry
		if srcs[0].z.Len() == 0 {
			return nil
		}
		others := make([]map[string]int, len(srcs))
		for j := 1; j < len(srcs); j++ {
			others[j] = make(map[string]int, srcs[j].z.Len())
			for i := 0; i < srcs[j].z.Len(); i++ {
				others[j][string(srcs[j].z.At(i).Member)] = i
			}
		}
	each:
		for i := 0; i < srcs[0].z.Len(); i++ {
			e := srcs[0].z.At(i)
			score := weighted(srcs[0], i)
			for j := 1; j < len(srcs); j++ {
				k, ok := others[j][string(e.Member)]
				if !ok {
					continue each
				}
				score = agg.apply(score, weighted(srcs[j], k))
			}
			out = append(out, zcodec.Entry{Member: e.Member, Score: score})
			if op == zopCard && limit > 0 && int64(len(out)) >= limit {
				break
			}
		}
		return out
	}
	slices.SortStableFunc(srcs, func(a, b src) int { return a.z.Len() - b.z.Len() })
	idx := make(map[string]int)
	var out []zcodec.Entry
	for _, s := range srcs {
		for i := 0; i < s.z.Len(); i++ {
			e := s.z.At(i)
			score := weighted(s, i)
			if k, ok := idx[string(e.Member)]; ok {
				out[k].Score = agg.apply(out[k].Score, score)
				continue
			}
			idx[string(e.Member)] = len(out)
			out = append(out, zcodec.Entry{Member: e.Member, Score: score})
		}
	}
	return out
}

// zscanCmd is ZSCAN key cursor [MATCH pattern] [COUNT count]. A listpack
// set answers whole, cursor 0, as Redis's. A larger one is walked in the
// order of its members' slots (fieldSlot, as an object's member index
// lies), the cursor the next slot: a member there from the first call to
// the last is answered once at least, whatever else changes, the set
// becoming an object included.
func zscanCmd(x *Ctx) {
	cursor, ok := parseCursor(x.Args[2])
	if !ok {
		x.Fail(ErrCursor)
		return
	}
	r, err := x.zopen(x.DB, x.Args[1], true)
	o, ok := x.scanStart(r.found, err)
	if !ok {
		return
	}
	count, pattern := o.count, o.pattern
	z := r.z
	var batch []zcodec.Entry
	var next uint64
	switch {
	case r.isObj():
		batch, next, err = slotPage(x.Tx, r.v.Obj, []byte{zMemberIdx}, cursor, count, func(sub, val []byte) (zcodec.Entry, error) {
			f, err := zscoreOf(val)
			if err != nil || len(sub) < 9 {
				return zcodec.Entry{}, ErrBadObject
			}
			return zcodec.Entry{Member: bytes.Clone(sub[9:]), Score: f}, nil
		})
		if err != nil {
			x.Fail(err)
			return
		}
	case z.Encoding() == zcodec.Listpack:
		batch = z.Entries()
	default:
		type hashed struct {
			h uint64
			i int
		}
		var hs []hashed
		for i := 0; i < z.Len(); i++ {
			if h := fieldSlot(z.At(i).Member); h >= cursor {
				hs = append(hs, hashed{h, i})
			}
		}
		slices.SortFunc(hs, func(a, b hashed) int {
			switch {
			case a.h < b.h:
				return -1
			case a.h > b.h:
				return 1
			}
			return a.i - b.i
		})
		n := int(min(count, int64(len(hs))))
		for n < len(hs) && n > 0 && hs[n].h == hs[n-1].h {
			n++
		}
		for _, h := range hs[:n] {
			batch = append(batch, z.At(h.i))
		}
		if n < len(hs) {
			next = hs[n].h
		}
	}
	if pattern != nil {
		kept := batch[:0]
		for _, e := range batch {
			if globMatch(pattern, e.Member) {
				kept = append(kept, e)
			}
		}
		batch = kept
	}
	x.W.Array(2)
	x.W.BulkString(strconv.FormatUint(next, 10))
	x.W.Array(2 * len(batch))
	for _, e := range batch {
		x.W.Bulk(e.Member)
		x.W.BulkString(scanScore(e.Score))
	}
}
