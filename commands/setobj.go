package commands

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"slices"

	"github.com/oncekv/oncekv/store"
)

// A set is kept in one of two forms, as a hash is (hashobj.go). An
// intset-encoded set is inline: the whole set is its value's bytes
// (setcodec.go), decoded and rewritten by each write, as Redis's intset
// is. A hashtable-encoded set is an object (store.Tx.NewObj): each member
// is an element of its own, with an empty value, whose name is the
// member's slot (fieldSlot, 8 bytes big-endian) followed by the member
// (by its SHA-256 for a member over longMember, then kept as the value),
// so that adding or removing one member costs one element whatever the
// size of the set, and the elements lie in SSCAN's order; the value
// itself holds only the number of members (uvarint). A set becomes an
// object when a write makes it hashtable-encoded (Redis 7.0's rules:
// set-max-intset-entries, a member that is not an integer) and stays
// one, as Redis's stays a hashtable. (A hashtable-encoded set that an
// older build stored inline is read inline and becomes an object at its
// next write.)

// setRef is one set as a command reads and writes it: add and remove
// change it in the transaction, save stores what they did.
type setRef struct {
	x     *Ctx
	db    int
	key   []byte
	v     store.Value // as read; Obj set when the set is an object
	found bool
	s     setVal // an inline set's members
	n     int64  // an object's number of members
	sub   []byte // the buffer of element names
}

// openSet reads key in db as a set: found is false when it is missing, a
// key of another kind is ErrWrongType. read counts a keyspace hit or
// miss, as the lookups of Redis's read commands do.
func (x *Ctx) openSet(db int, key []byte, read bool) (setRef, error) {
	v, ok, err := x.getCounted(db, key, read)
	if err != nil {
		return setRef{x: x, db: db, key: key}, err
	}
	return x.setOf(db, key, v, ok)
}

// setOf is openSet of a value already read (ok: whether there is one).
func (x *Ctx) setOf(db int, key []byte, v store.Value, ok bool) (setRef, error) {
	r := setRef{x: x, db: db, key: key}
	if !ok {
		return r, nil
	}
	if v.Kind != store.KindSet {
		return r, ErrWrongType
	}
	r.v = v
	if v.Obj != 0 {
		n, w := binary.Uvarint(v.Data)
		if w <= 0 || w != len(v.Data) || n == 0 || n > math.MaxInt64 {
			return r, errSetCodec
		}
		r.n, r.found = int64(n), true
		return r, nil
	}
	s, err := decodeSet(v.Data)
	if err != nil {
		return r, err
	}
	r.s, r.found = s, true
	return r, nil
}

// isObj reports whether the set is an object.
func (r *setRef) isObj() bool { return r.v.Obj != 0 }

// intset reports whether the set is intset-encoded.
func (r *setRef) intset() bool { return !r.isObj() && r.s.intset }

// len is the number of members.
func (r *setRef) len() int64 {
	if r.isObj() {
		return r.n
	}
	return int64(len(r.s.m))
}

// longMember is the longest member an element's name holds whole. A
// longer one (up to Redis's 512 MB, past what a store key may be) is
// named by its slot and its SHA-256 and kept as the element's value,
// which is empty for the others. It is stored, so it is fixed for good.
const longMember = 1024

// subOf is member m's element name, in r's buffer.
func (r *setRef) subOf(m []byte) []byte {
	r.sub = binary.BigEndian.AppendUint64(r.sub[:0], fieldSlot(m))
	if len(m) > longMember {
		d := sha256.Sum256(m)
		return append(r.sub, d[:]...)
	}
	return append(r.sub, m...)
}

// elemVal is member m's element value: the member if it is long.
func elemVal(m []byte) []byte {
	if len(m) > longMember {
		return m
	}
	return nil
}

// memberOf is the member of element sub, val (not copied).
func memberOf(sub, val []byte) ([]byte, error) {
	switch {
	case len(sub) < 8:
		return nil, errSetCodec
	case len(val) > 0:
		return val, nil
	}
	return sub[8:], nil
}

// has reports whether m is a member: one element read for an object.
func (r *setRef) has(m []byte) (bool, error) {
	if !r.isObj() {
		return r.s.has(m), nil
	}
	_, ok, err := r.x.Tx.Elem(r.v.Obj, r.subOf(m))
	return ok, err
}

// add adds members (duplicates allowed), as Redis 7.0's setTypeAdd does
// one by one, and reports how many were new. A missing set is built as
// Redis builds a new one (buildSet).
func (r *setRef) add(ms [][]byte) (int, error) {
	if !r.isObj() {
		if !r.found {
			r.s, r.found = buildSet(ms, r.x.maxIntset()), true
			return len(r.s.m), nil
		}
		return r.s.add(ms, r.x.maxIntset()), nil
	}
	for _, m := range ms {
		if len(m) > store.MaxValueLen {
			// Refused before any element is written: a command that
			// fails changes nothing.
			return 0, store.ErrValueTooLong
		}
	}
	added := 0
	for _, m := range ms {
		sub := r.subOf(m)
		_, had, err := r.x.Tx.Elem(r.v.Obj, sub)
		if err != nil {
			return added, err
		}
		if had {
			continue
		}
		if err := r.x.Tx.SetElem(r.v.Obj, sub, elemVal(m)); err != nil {
			return added, err
		}
		r.n++
		added++
	}
	return added, nil
}

// remove removes members and reports how many were there.
func (r *setRef) remove(ms [][]byte) (int, error) {
	if !r.isObj() {
		return r.s.remove(ms), nil
	}
	removed := 0
	for _, m := range ms {
		ok, err := r.x.Tx.DeleteElem(r.v.Obj, r.subOf(m))
		if err != nil {
			return removed, err
		}
		if ok {
			r.n--
			removed++
		}
	}
	return removed, nil
}

// members are all the members, in SMEMBERS's order: an inline set's
// encoding order (sharing the memory of the value read), an object's
// slot order (copies).
func (r *setRef) members() ([][]byte, error) {
	if !r.isObj() {
		return r.s.m, nil
	}
	out := make([][]byte, 0, min(r.n, 1<<16))
	err := r.x.Tx.ScanElems(r.v.Obj, nil, func(sub, val []byte) (bool, error) {
		m, err := copyMember(sub, val)
		out = append(out, m)
		return err == nil, err
	})
	return out, err
}

// view is the set as a setVal, for the commands that compute with whole
// sets (SINTER, SUNION, SDIFF and their kin): an object's members are
// loaded and sorted in byte order, the order of an inline hashtable.
func (r *setRef) view() (*setVal, error) {
	if !r.isObj() {
		return &r.s, nil
	}
	ms, err := r.members()
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ms, bytes.Compare)
	return &setVal{m: ms}, nil
}

// random is a random member of an object that has some: the first at or
// after a random slot (slotPick).
func (r *setRef) random(slot uint64) ([]byte, error) {
	return slotPick(r.x.Tx, r.v.Obj, nil, slot, copyMember)
}

// copyMember is the member of element sub holding val, copied.
func copyMember(sub, val []byte) ([]byte, error) {
	m, err := memberOf(sub, val)
	return bytes.Clone(m), err
}

// distinctPicks is n distinct members of an object picked at random
// slots; ok is false when 8n seeks found fewer (members clustered past a
// few wide gaps), for the caller to pick among all.
func (r *setRef) distinctPicks(n int) (picks [][]byte, ok bool, err error) {
	seen := make(map[string]bool, n)
	for range 8 * n {
		m, err := r.random(randSlot())
		if err != nil {
			return nil, false, err
		}
		if seen[string(m)] {
			continue
		}
		seen[string(m)] = true
		if picks = append(picks, m); len(picks) == n {
			return picks, true, nil
		}
	}
	return nil, false, nil
}

// scanFrom is one page of an SSCAN of an object (slotPage).
func (r *setRef) scanFrom(cursor uint64, count int64) ([][]byte, uint64, error) {
	return slotPage(r.x.Tx, r.v.Obj, nil, cursor, count, copyMember)
}

// save stores the set as add and remove left it: a set left empty is
// deleted; an inline one that is (or a write made) hashtable-encoded
// becomes an object.
func (r *setRef) save() error {
	x := r.x
	if !r.isObj() {
		if len(r.s.m) == 0 {
			_, err := x.Tx.Delete(r.db, r.key)
			return err
		}
		if r.s.intset {
			return x.Tx.Set(r.db, r.key, store.Value{Kind: store.KindSet, Data: r.s.encode(nil), ExpireAt: r.v.ExpireAt})
		}
		obj, err := x.Tx.NewObj(r.db, r.key)
		if err != nil {
			return err
		}
		for _, m := range r.s.m {
			if err := x.Tx.SetElem(obj, r.subOf(m), elemVal(m)); err != nil {
				return err
			}
		}
		r.v.Obj, r.n, r.s = obj, int64(len(r.s.m)), setVal{}
	}
	if r.n == 0 {
		_, err := x.Tx.Delete(r.db, r.key)
		return err
	}
	return x.Tx.Set(r.db, r.key, store.Value{Kind: store.KindSet, Obj: r.v.Obj,
		Data: binary.AppendUvarint(nil, uint64(r.n)), ExpireAt: r.v.ExpireAt})
}

// putSet stores s, a set built whole (buildSet), under key with deadline
// at, replacing whatever key held, or deletes key when s is empty: an
// intset inline, a hashtable as a new object.
func (x *Ctx) putSet(db int, key []byte, s *setVal, at int64) error {
	r := setRef{x: x, db: db, key: key, v: store.Value{ExpireAt: at}, found: true, s: *s}
	return r.save()
}
