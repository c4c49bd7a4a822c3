package commands

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/oncekv/oncekv/internal/zcodec"
	"github.com/oncekv/oncekv/store"
)

// A sorted set is kept in one of two forms, as a hash is (hashobj.go). A
// listpack-encoded set is inline: the whole set is its value's bytes
// (internal/zcodec), rewritten by each write, as Redis's listpack is. A
// skiplist-encoded set is an object (store.Tx.NewObj) holding each member
// twice, as Redis's skiplist and dict do:
//
//	'm' slot(8) member → score   the member index: ZSCORE, ZADD's lookup;
//	                              in ZSCAN's order (fieldSlot), as a
//	                              hash's fields are
//	's' key(8) member  → score   the score index: ranges in (score,
//	                              member) order, either way (zscoreKey)
//
//	'f' name             → count  a page of the score index: how many
//	                              of its names are from this one (or,
//	                              "fs", from the first) to the next
//	                              page's
//
// (scores as the 8 bytes of their IEEE 754 bits), so that a write of one
// member costs a few elements whatever the size of the set. The value
// holds the encoding byte, the number of members (uvarint), a stamp that
// tells the pages kept in memory are its own (zsetpages.go), and the
// bounds of the score index: names at or before its first (lo) and at or
// after its last (hi), where walks from either end start. A removed
// member leaves a tombstone in Badger until a compaction, so a walk from
// the index's own start, after a thousand ZPOPMINs, would step over a
// thousand of them; pops and removals at an end move its bound (ZPOPMIN
// of a set of 100,000 members took 3.4 ms without). The pages
// count the members, as Redis's skiplist counts its spans, so that a rank
// (ZRANK, a ZRANGE by rank, ZCOUNT) sums the counts of the pages before
// it, in memory, and walks within one: O(zpageMax) elements, where
// Redis's skiplist is O(log n). A page is split in two past zpageMax
// names and joins the one before it under zpageMin.
//
// A member's names hold it whole, so a set with a member longer than
// zobjMaxMember (past what a store key may be) stays inline, skiplist
// encoded; a set becomes an object when a write makes it skiplist
// encoded (Redis 7.0's rules: zset-max-listpack-*), and stays one until
// it is emptied, as Redis's stays a skiplist.

// Prefixes of a sorted set's elements.
const (
	zMemberIdx = 'm'
	zScoreIdx  = 's'
	zPageIdx   = 'f'
)

// The most and the fewest names of a page of the score index (variables
// for tests).
var zpageMax, zpageMin int64 = 128, 16

// zfirstPage is the first page's name: before every name of the score
// index.
var zfirstPage = []byte{zPageIdx, zScoreIdx}

// zobjMaxMember is the longest member an object holds.
const zobjMaxMember = store.MaxElemLen - 9

// zscoreKey is score f's place in the score index: its bits, sign flipped
// (or all flipped when negative), so that bytes sort as numbers do; -0 is
// 0, which Redis's comparisons take it for (its value keeps the sign).
func zscoreKey(f float64) uint64 {
	if f == 0 {
		f = 0
	}
	b := math.Float64bits(f)
	if b>>63 == 1 {
		return ^b
	}
	return b | 1<<63
}

// zscorePos is the score index's first name at score f or after.
func zscorePos(f float64) []byte {
	return binary.BigEndian.AppendUint64([]byte{zScoreIdx}, zscoreKey(f))
}

// zafterPos is the score index's first name after every member of score
// f: nil (the end) after +inf.
func zafterPos(f float64) []byte {
	if math.IsInf(f, 1) {
		return nil
	}
	return zscorePos(math.Nextafter(f, math.Inf(1)))
}

// zscoreOf decodes an element's score.
func zscoreOf(val []byte) (float64, error) {
	if len(val) != 8 {
		return 0, ErrBadObject
	}
	return math.Float64frombits(binary.BigEndian.Uint64(val)), nil
}

// zref is one sorted set as a command reads and writes it.
type zref struct {
	x     *Ctx
	db    int
	key   []byte
	v     store.Value // as read; Obj set when the set is an object
	found bool
	z     zcodec.View // an inline set
	n     int64       // an object's number of members
	sub   []byte      // the buffer of element names
	// lo and hi bound an object's score index; a removal of the name
	// either is makes it stale, and saveObj finds the new one.
	lo, hi           []byte
	loStale, hiStale bool
	stamp            uint64  // the value's stamp (zsetpages.go)
	pg               *zpages // the pages, once read
}

// zopen reads key in db as a sorted set: found is false when it is
// missing, a key of another kind is ErrWrongType. read counts a keyspace
// hit or miss.
func (x *Ctx) zopen(db int, key []byte, read bool) (zref, error) {
	v, ok, err := x.getCounted(db, key, read)
	if err != nil {
		return zref{x: x, db: db, key: key}, err
	}
	return x.zsetOf(db, key, v, ok)
}

// zsetOf is zopen of a value already read (ok: whether there is one).
func (x *Ctx) zsetOf(db int, key []byte, v store.Value, ok bool) (zref, error) {
	r := zref{x: x, db: db, key: key}
	if !ok {
		return r, nil
	}
	if v.Kind != store.KindZSet {
		return r, ErrWrongType
	}
	r.v = v
	if v.Obj != 0 {
		if len(v.Data) < 2 || v.Data[0] != zcodec.Skiplist {
			return r, errZsetCorrupt
		}
		b := v.Data[1:]
		n, w := binary.Uvarint(b)
		if w <= 0 || n == 0 || n > math.MaxInt64 {
			return r, errZsetCorrupt
		}
		b = b[w:]
		if len(b) < 8 {
			return r, errZsetCorrupt
		}
		r.stamp, b = binary.BigEndian.Uint64(b), b[8:]
		ll, w := binary.Uvarint(b)
		if w <= 0 || ll > uint64(len(b)-w) {
			return r, errZsetCorrupt
		}
		r.lo, r.hi = b[w:w+int(ll)], b[w+int(ll):]
		if len(r.lo) < 9 || len(r.hi) < 9 || r.lo[0] != zScoreIdx || r.hi[0] != zScoreIdx {
			return r, errZsetCorrupt
		}
		r.n, r.found = int64(n), true
		return r, nil
	}
	z, err := zcodec.Decode(v.Data)
	if err != nil {
		return r, errZsetCorrupt
	}
	r.z, r.found = z, true
	return r, nil
}

// isObj reports whether the set is an object.
func (r *zref) isObj() bool { return r.v.Obj != 0 }

// len is the number of members.
func (r *zref) len() int {
	if r.isObj() {
		return int(r.n)
	}
	return r.z.Len()
}

// memberSub is member m's name in the member index, in r's buffer.
func (r *zref) memberSub(m []byte) []byte {
	r.sub = append(binary.BigEndian.AppendUint64(append(r.sub[:0], zMemberIdx), fieldSlot(m)), m...)
	return r.sub
}

// scoreSub is member m's name in the score index at score f, in r's
// buffer.
func (r *zref) scoreSub(m []byte, f float64) []byte {
	r.sub = append(binary.BigEndian.AppendUint64(append(r.sub[:0], zScoreIdx), zscoreKey(f)), m...)
	return r.sub
}

// score is member m's score: one element read for an object.
func (r *zref) score(m []byte) (float64, bool, error) {
	if !r.found {
		return 0, false, nil
	}
	if !r.isObj() {
		if i := r.z.Find(m); i >= 0 {
			return r.z.At(i).Score, true, nil
		}
		return 0, false, nil
	}
	if len(m) > zobjMaxMember {
		return 0, false, nil
	}
	val, ok, err := r.x.Tx.Elem(r.v.Obj, r.memberSub(m))
	if err != nil || !ok {
		return 0, false, err
	}
	f, err := zscoreOf(val)
	return f, err == nil, err
}

// objSet stores member m at score f in the object; had and old are what
// it had.
func (r *zref) objSet(m []byte, f float64, had bool, old float64) error {
	tx, obj := r.x.Tx, r.v.Obj
	moved := !had || zscoreKey(old) != zscoreKey(f)
	if had && moved {
		if err := r.dropScore(m, old); err != nil {
			return err
		}
	}
	val := binary.BigEndian.AppendUint64(nil, math.Float64bits(f))
	if err := tx.SetElem(obj, r.scoreSub(m, f), val); err != nil {
		return err
	}
	if moved {
		name := bytes.Clone(r.sub)
		if r.lo == nil || bytes.Compare(name, r.lo) < 0 {
			r.lo, r.loStale = name, false
		}
		if bytes.Compare(name, r.hi) > 0 {
			r.hi, r.hiStale = name, false
		}
		if err := r.count(name, 1); err != nil {
			return err
		}
	}
	if err := tx.SetElem(obj, r.memberSub(m), val); err != nil {
		return err
	}
	if !had {
		r.n++
	}
	return nil
}

// objRemove removes member m, of score f, from the object.
func (r *zref) objRemove(m []byte, f float64) error {
	if err := r.x.Tx.DropElem(r.v.Obj, r.memberSub(m)); err != nil {
		return err
	}
	r.n--
	return r.dropScore(m, f)
}

// dropScore removes member m's name at score f from the score index.
func (r *zref) dropScore(m []byte, f float64) error {
	if err := r.x.Tx.DropElem(r.v.Obj, r.scoreSub(m, f)); err != nil {
		return err
	}
	name := bytes.Clone(r.sub)
	r.loStale = r.loStale || bytes.Equal(name, r.lo)
	r.hiStale = r.hiStale || bytes.Equal(name, r.hi)
	return r.count(name, -1)
}

// saveObj stores the object's value after its members changed: its new
// count, or the key's removal once it has none. Written even when the
// count is the same: WATCH and the keyspace's version see the change.
func (r *zref) saveObj() error {
	if r.n == 0 {
		_, err := r.x.Tx.Delete(r.db, r.key)
		return err
	}
	if r.loStale {
		err := r.x.Tx.ScanElems(r.v.Obj, r.lo, func(sub, _ []byte) (bool, error) {
			r.lo = bytes.Clone(sub)
			return false, nil
		})
		if err != nil {
			return err
		}
	}
	if r.hiStale {
		err := r.x.Tx.ScanElemsRev(r.v.Obj, append(bytes.Clone(r.hi), 0), func(sub, _ []byte) (bool, error) {
			r.hi = bytes.Clone(sub)
			return false, nil
		})
		if err != nil {
			return err
		}
	}
	if len(r.lo) < 9 || r.lo[0] != zScoreIdx || len(r.hi) < 9 || r.hi[0] != zScoreIdx {
		return ErrBadObject
	}
	r.loStale, r.hiStale = false, false
	p := r.pg
	if p == nil {
		p = r.x.S.zpages.get(r.v.Obj, r.stamp) // unchanged: stamped anew
	}
	r.stamp = newStamp()
	if p != nil {
		p.stamp = r.stamp
	}
	v := r.v
	v.Data = binary.AppendUvarint([]byte{zcodec.Skiplist}, uint64(r.n))
	v.Data = binary.BigEndian.AppendUint64(v.Data, r.stamp)
	v.Data = binary.AppendUvarint(v.Data, uint64(len(r.lo)))
	v.Data = append(append(v.Data, r.lo...), r.hi...)
	return r.x.Tx.Set(r.db, r.key, v)
}

// from is where a forward walk of the score index from pos starts: at lo
// when pos is before it (or nil).
func (r *zref) from(pos []byte) []byte {
	if pos == nil || bytes.Compare(pos, r.lo) < 0 {
		return r.lo
	}
	return pos
}

// before is where a backward walk of the score index from before pos
// starts: just after hi when pos is past it (or nil).
func (r *zref) before(pos []byte) []byte {
	if end := append(r.hi[:len(r.hi):len(r.hi)], 0); pos == nil || bytes.Compare(pos, end) > 0 {
		return end
	}
	return pos
}

// zputObj stores entries (sorted, members no longer than zobjMaxMember)
// at key as a new object, deadline at, in pages of zpageMax/2 names.
func (x *Ctx) zputObj(db int, key []byte, entries []zcodec.Entry, at int64) error {
	obj, err := x.Tx.NewObj(db, key)
	if err != nil {
		return err
	}
	r := zref{x: x, db: db, key: key, found: true, v: store.Value{Kind: store.KindZSet, Obj: obj, ExpireAt: at}}
	r.pg = &zpages{}
	for i, e := range entries {
		val := binary.BigEndian.AppendUint64(nil, math.Float64bits(e.Score))
		if err := x.Tx.SetElem(obj, r.scoreSub(e.Member, e.Score), val); err != nil {
			return err
		}
		if i == 0 {
			r.lo = bytes.Clone(r.sub)
		}
		if i == len(entries)-1 {
			r.hi = bytes.Clone(r.sub)
		}
		// Pages of per names; the last one takes the rest too.
		if per := int(zpageMax / 2); i%per == 0 && (i == 0 || i+per <= len(entries)) {
			pg, n := zfirstPage, per
			if i > 0 {
				pg = append([]byte{zPageIdx}, r.sub...)
			}
			if i+2*per > len(entries) {
				n = len(entries) - i
			}
			if err := r.setPage(pg, int64(n)); err != nil {
				return err
			}
			r.pg.names = append(r.pg.names, bytes.Clone(pg))
			r.pg.counts = append(r.pg.counts, int64(n))
		}
		if err := x.Tx.SetElem(obj, r.memberSub(e.Member), val); err != nil {
			return err
		}
	}
	r.n = int64(len(entries))
	x.S.zpages.put(obj, r.pg)
	return r.saveObj()
}

// fitsObj reports whether every member of entries fits an object.
func fitsObj(entries []zcodec.Entry) bool {
	for _, e := range entries {
		if len(e.Member) > zobjMaxMember {
			return false
		}
	}
	return true
}

// zentry decodes a score index element (not copied).
func zentry(sub, val []byte) (zcodec.Entry, error) {
	f, err := zscoreOf(val)
	if err != nil || len(sub) < 9 || sub[0] != zScoreIdx {
		return zcodec.Entry{}, ErrBadObject
	}
	return zcodec.Entry{Member: sub[9:], Score: f}, nil
}

// walk visits the object's members in score order, forward from the
// first whose name is at pos or after (nil: the first), or backward (rev)
// from the last whose name is before pos (nil: the last), until fn says
// stop. The members passed to fn are valid only during the call.
func (r *zref) walk(rev bool, pos []byte, fn func(e zcodec.Entry) (bool, error)) error {
	visit := func(sub, val []byte) (bool, error) {
		if len(sub) == 0 || sub[0] != zScoreIdx {
			return false, nil
		}
		e, err := zentry(sub, val)
		if err != nil {
			return false, err
		}
		return fn(e)
	}
	if rev {
		return r.x.Tx.ScanElemsRev(r.v.Obj, r.before(pos), visit)
	}
	return r.x.Tx.ScanElems(r.v.Obj, r.from(pos), visit)
}

// zwalk is a walk of an object's score index that gathers what a range
// selects: from pos (see walk), the members for which skip holds are
// passed over, then offset more, then up to limit (all when negative)
// taken while take holds.
type zwalk struct {
	rev           bool
	pos           []byte
	skip, take    func(zcodec.Entry) bool
	offset, limit int64
}

// run gathers the walk's members (copied), in walk order; with count
// only, it counts them and gathers none.
func (w zwalk) run(r *zref, countOnly bool) ([]zcodec.Entry, int64, error) {
	var out []zcodec.Entry
	var n int64
	if w.limit == 0 || w.offset < 0 {
		return nil, 0, nil
	}
	skipping := w.skip != nil
	offset := w.offset
	err := r.walk(w.rev, w.pos, func(e zcodec.Entry) (bool, error) {
		if skipping {
			if w.skip(e) {
				return true, nil
			}
			skipping = false
		}
		if w.take != nil && !w.take(e) {
			return false, nil
		}
		if offset > 0 {
			offset--
			return true, nil
		}
		n++
		if !countOnly {
			out = append(out, zcodec.Entry{Member: bytes.Clone(e.Member), Score: e.Score})
		}
		return w.limit < 0 || n < w.limit, nil
	})
	return out, n, err
}

// rankSpan is the ranks [from, to) that ZRANGE's start and end select of
// n members.
func rankSpan(start, end int64, n int) (from, to int) {
	ln := int64(n)
	if start < 0 {
		start += ln
	}
	if end < 0 {
		end += ln
	}
	start = max(start, 0)
	if start > end || start >= ln {
		return 0, 0
	}
	end = min(end, ln-1)
	return int(start), int(end) + 1
}

// ranks gathers the members of ranks [from, to), in rank order: walking
// from the nearer end when it is near, else from the page that holds
// rank from.
func (r *zref) ranks(from, to int) ([]zcodec.Entry, error) {
	if from >= to {
		return nil, nil
	}
	n := r.len()
	w := zwalk{offset: int64(from), limit: int64(to - from)}
	switch {
	case n-to < from && int64(n-to) <= zpageMax:
		w = zwalk{rev: true, offset: int64(n - to), limit: int64(to - from)}
	case int64(from) > zpageMax:
		pg, before, err := r.pageOfRank(int64(from))
		if err != nil {
			return nil, err
		}
		w.pos, w.offset = pg[1:], int64(from)-before
	}
	out, _, err := w.run(r, false)
	if w.rev {
		slices.Reverse(out)
	}
	return out, err
}

// pageOfRank is the page that holds rank i (< n), and the number of
// members before it.
func (r *zref) pageOfRank(i int64) ([]byte, int64, error) {
	p, err := r.pages()
	if err != nil {
		return nil, 0, err
	}
	k, before := p.ofRank(i)
	return p.names[k], before, nil
}

// rankOf is the number of members whose score index name is before pos
// (nil: all of them): the counts of the pages before pos's page, and a
// walk within it.
func (r *zref) rankOf(pos []byte) (int64, error) {
	if pos == nil {
		return r.n, nil
	}
	p, err := r.pages()
	if err != nil {
		return 0, err
	}
	i := p.of(pos)
	before := p.before(i)
	err = r.x.Tx.ScanElems(r.v.Obj, r.from(p.names[i][1:]), func(sub, _ []byte) (bool, error) {
		if len(sub) == 0 || sub[0] != zScoreIdx || bytes.Compare(sub, pos) >= 0 {
			return false, nil
		}
		before++
		return true, nil
	})
	return before, err
}

// countBetween is the number of members whose score index names are at
// from or after and before to (nil: the end): a walk when there are few,
// else the difference of their ranks.
func (r *zref) countBetween(from, to []byte) (int64, error) {
	w := zwalk{pos: from, limit: zpageMax}
	if to != nil {
		w.take = func(e zcodec.Entry) bool { return bytes.Compare(r.scoreSub(e.Member, e.Score), to) < 0 }
	}
	_, n, err := w.run(r, true)
	if err != nil || n < zpageMax {
		return n, err
	}
	a, err := r.rankOf(from)
	if err != nil {
		return 0, err
	}
	b, err := r.rankOf(to)
	return b - a, err
}

// rank is member m's rank (-1 when it is not one).
func (r *zref) rank(m []byte) (int64, error) {
	if !r.found {
		return -1, nil
	}
	if !r.isObj() {
		return int64(r.z.Find(m)), nil
	}
	f, ok, err := r.score(m)
	if err != nil || !ok {
		return -1, err
	}
	return r.rankOf(bytes.Clone(r.scoreSub(m, f)))
}

// entries is every member (copied for an object), in order.
func (r *zref) entries() ([]zcodec.Entry, error) {
	if !r.found {
		return nil, nil
	}
	if !r.isObj() {
		return r.z.Entries(), nil
	}
	out, _, err := zwalk{limit: -1}.run(r, false)
	if err == nil && int64(len(out)) != r.n {
		err = ErrBadObject
	}
	return out, err
}

// view is the set as a zcodec.View, built from the elements for an
// object: the fallback of the commands that read a set whole.
func (r *zref) view() (zcodec.View, error) {
	if !r.isObj() {
		return r.z, nil
	}
	entries, err := r.entries()
	if err != nil {
		return zcodec.View{}, err
	}
	return zcodec.Decode(zcodec.Encode(zcodec.Skiplist, entries))
}

// removeEntries removes members (as read from the set) and saves it.
func (r *zref) removeEntries(gone []zcodec.Entry) error {
	for _, e := range gone {
		if err := r.objRemove(e.Member, e.Score); err != nil {
			return err
		}
	}
	return r.saveObj()
}

// pickObj is what o selects of an object, in reply order: a walk of the
// score index from the end the range starts at (by rank, from the nearer
// end), or, in the reverse, count, for ZCOUNT and ZLEXCOUNT.
func (o zrangeOpts) pickObj(r *zref, countOnly bool) ([]zcodec.Entry, int64, error) {
	rg := o.r
	switch rg.kind {
	case zrRank:
		from, to := rankSpan(rg.start, rg.end, r.len())
		if o.rev {
			from, to = r.len()-to, r.len()-from
		}
		if countOnly {
			return nil, int64(to - from), nil
		}
		out, err := r.ranks(from, to)
		if o.rev {
			slices.Reverse(out)
		}
		return out, int64(len(out)), err
	case zrScore:
		if rg.min > rg.max || (rg.min == rg.max && (rg.minEx || rg.maxEx)) {
			return nil, 0, nil
		}
		if countOnly && math.IsInf(rg.min, -1) && math.IsInf(rg.max, 1) && !rg.minEx && !rg.maxEx {
			return nil, r.n, nil
		}
		// The walk seeks the range's first member: a bound's score, or
		// the next float after it when it is exclusive.
		w := zwalk{rev: o.rev, offset: o.offset, limit: o.limit}
		aboveMin := func(e zcodec.Entry) bool { return e.Score > rg.min || (!rg.minEx && e.Score == rg.min) }
		belowMax := func(e zcodec.Entry) bool { return e.Score < rg.max || (!rg.maxEx && e.Score == rg.max) }
		if o.rev {
			w.take, w.pos = aboveMin, zafterPos(rg.max)
			if rg.maxEx {
				w.pos = zscorePos(rg.max)
			}
		} else {
			w.take, w.pos = belowMax, zscorePos(rg.min)
			if rg.minEx {
				w.pos = zafterPos(rg.min)
			}
			if w.pos == nil {
				return nil, 0, nil // after +inf
			}
		}
		if countOnly {
			to := zafterPos(rg.max)
			if rg.maxEx {
				to = zscorePos(rg.max)
			}
			n, err := r.countBetween(w.pos, to)
			return nil, n, err
		}
		return r.runFar(w)
	}
	// By member.
	if rg.lminInf == 1 || rg.lmaxInf == -1 {
		return nil, 0, nil
	}
	if rg.lminInf == 0 && rg.lmaxInf == 0 {
		if c := bytes.Compare(rg.lmin, rg.lmax); c > 0 || (c == 0 && (rg.minEx || rg.maxEx)) {
			return nil, 0, nil
		}
	}
	if countOnly && rg.lminInf == -1 && rg.lmaxInf == 1 {
		return nil, r.n, nil
	}
	first, _, err := zwalk{limit: 1}.run(r, false)
	if err != nil || len(first) == 0 {
		return nil, 0, err
	}
	last, _, err := zwalk{rev: true, limit: 1}.run(r, false)
	if err != nil || len(last) == 0 {
		return nil, 0, err
	}
	w := zwalk{rev: o.rev, offset: o.offset, limit: o.limit}
	if o.rev {
		w.skip, w.take = func(e zcodec.Entry) bool { return !rg.lteMax(e) }, rg.gteMin
	} else {
		w.skip, w.take = func(e zcodec.Entry) bool { return !rg.gteMin(e) }, rg.lteMax
	}
	if first[0].Score != last[0].Score {
		return w.run(r, countOnly)
	}
	// All scores equal: members are in order, and the range is from the
	// name of min (or the first) to the name of max (or the end).
	s := first[0].Score
	from := zscorePos(s)
	if rg.lminInf == 0 {
		from = append(from, rg.lmin...)
		if rg.minEx {
			from = append(from, 0)
		}
	}
	var to []byte
	if rg.lmaxInf == 0 {
		to = append(zscorePos(s), rg.lmax...)
		if !rg.maxEx {
			to = append(to, 0)
		}
	}
	if countOnly {
		n, err := r.countBetween(from, to)
		return nil, n, err
	}
	w.skip, w.pos = nil, from
	if o.rev {
		w.pos = to
	}
	return r.runFar(w)
}

// runFar runs w (which has no skip), seeking its offset through the pages
// when it is far: at the rank of its start and offset more (forward), or
// before them (backward).
func (r *zref) runFar(w zwalk) ([]zcodec.Entry, int64, error) {
	if w.offset <= zpageMax || w.skip != nil {
		return w.run(r, false)
	}
	start, err := r.rankOf(w.pos)
	if err != nil {
		return nil, 0, err
	}
	if !w.rev {
		target := start + w.offset
		if target >= r.n {
			return nil, 0, nil
		}
		pg, before, err := r.pageOfRank(target)
		if err != nil {
			return nil, 0, err
		}
		w.pos, w.offset = pg[1:], target-before
		return w.run(r, false)
	}
	// Backward: from before the name of rank start-offset.
	target := start - w.offset
	if target <= 0 {
		return nil, 0, nil
	}
	pg, before, err := r.pageOfRank(target)
	if err != nil {
		return nil, 0, err
	}
	at, _, err := zwalk{pos: pg[1:], offset: target - before, limit: 1}.run(r, false)
	if err != nil || len(at) == 0 {
		return nil, 0, err
	}
	w.pos, w.offset = bytes.Clone(r.scoreSub(at[0].Member, at[0].Score)), 0
	return w.run(r, false)
}

// randomPick is the member of an object at a random rank: uniform, as
// Redis's pick is, for the cost of a rank (a page walked at most).
func (r *zref) randomPick() (zcodec.Entry, error) {
	i := rand.IntN(r.len())
	e, err := r.ranks(i, i+1)
	if err == nil && len(e) != 1 {
		err = ErrBadObject
	}
	if err != nil {
		return zcodec.Entry{}, err
	}
	return e[0], nil
}

// randomPicks is ZRANDMEMBER's count picks of an object much larger than
// count: -count of them, repeats allowed, when count is negative, else
// count distinct ones.
func (r *zref) randomPicks(count int64) ([]zcodec.Entry, error) {
	var out []zcodec.Entry
	if count < 0 {
		for range -count {
			e, err := r.randomPick()
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		return out, nil
	}
	seen := make(map[string]bool, count)
	for int64(len(out)) < count {
		e, err := r.randomPick()
		if err != nil {
			return nil, err
		}
		if !seen[string(e.Member)] {
			seen[string(e.Member)] = true
			out = append(out, e)
		}
	}
	return out, nil
}
