package commands

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"

	"github.com/oncekv/oncekv/internal/listenc"
	"github.com/oncekv/oncekv/store"
)

// A list is kept in one of two forms, which Redis 7.0 does not tell apart
// (OBJECT ENCODING answers "quicklist" for both). A small list is inline:
// the whole list is its value's bytes (internal/listenc), decoded and
// rewritten by each write. A list that grows past listObjMaxElems
// elements or listObjMaxBytes bytes of encoding becomes an object
// (store.Tx.NewObj): each element is an element of its own, named by its
// position (listPosSub: an int64 biased by 2^63, 8 bytes big-endian, so
// that the names' byte order is the list's order), and the value holds
// only the position of the head (a varint) and the length (a uvarint).
// A push at
// either end writes one element at head-1 or head+length, a pop reads and
// deletes one, LINDEX and LSET reach an element by its position and
// LRANGE scans from it: each costs the same whatever the list's length.
// LTRIM deletes what it trims; LINSERT moves the elements on the shorter
// side of its place by one, and LREM (O(n) in Redis, as LINSERT) writes
// the elements again from the first it removes. A list stays an object
// until it is emptied (and so deleted); a new list under that key starts
// inline. (An inline list past the limits, which an older build stored,
// is read as it is and becomes an object at its next write.)
const (
	listObjMaxElems = 128
	listObjMaxBytes = 8 << 10
)

// listRef is one list as a command reads and writes it: its methods
// change it in the transaction, save stores what they did.
type listRef struct {
	tx    store.Tx
	db    int
	key   []byte
	v     store.Value // as read; Obj set when the list is an object
	found bool
	elems [][]byte // an inline list's elements (views of stored bytes, or args)
	head  int64    // an object's first position
	n     int64    // an object's length
	sub   []byte   // the buffer of element names
}

// openList reads key of db in tx as a list: found is false when it is
// missing; a key of another kind is ErrWrongType.
func openList(tx store.Tx, db int, key []byte) (listRef, error) {
	v, ok, err := tx.Get(db, key)
	if err != nil || !ok {
		return listRef{tx: tx, db: db, key: key}, err
	}
	return listFrom(tx, db, key, v)
}

// listFrom is the list key holds, v being its value.
func listFrom(tx store.Tx, db int, key []byte, v store.Value) (listRef, error) {
	r := listRef{tx: tx, db: db, key: key}
	if v.Kind != store.KindList {
		return r, ErrWrongType
	}
	r.v, r.found = v, true
	if v.Obj != 0 {
		head, w := binary.Varint(v.Data)
		if w <= 0 {
			return r, listenc.ErrCorrupt
		}
		n, w2 := binary.Uvarint(v.Data[w:])
		if w2 <= 0 || n > math.MaxInt64 || head > math.MaxInt64-int64(n) {
			return r, listenc.ErrCorrupt
		}
		r.head, r.n = head, int64(n)
		return r, nil
	}
	var err error
	r.elems, err = listenc.Decode(v.Data)
	return r, err
}

// openList is openList on the command's database, counting a hit or a
// miss (a key of another kind is a hit).
func (x *Ctx) openList(key []byte) (listRef, error) {
	r, err := openList(x.Tx, x.DB, key)
	if err == nil || err == ErrWrongType {
		x.countLookup(r.found || err == ErrWrongType)
	}
	return r, err
}

// listPosSub appends the element name of position pos to dst.
func listPosSub(dst []byte, pos int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(pos)^(1<<63))
}

func (r *listRef) subAt(pos int64) []byte {
	r.sub = listPosSub(r.sub[:0], pos)
	return r.sub
}

// isObj reports whether the list is an object.
func (r *listRef) isObj() bool { return r.v.Obj != 0 }

// len is the number of elements.
func (r *listRef) len() int64 {
	if r.isObj() {
		return r.n
	}
	return int64(len(r.elems))
}

// index is element i, 0 <= i < len; an object's is a copy.
func (r *listRef) index(i int64) ([]byte, error) {
	if !r.isObj() {
		return r.elems[i], nil
	}
	val, ok, err := r.tx.Elem(r.v.Obj, r.subAt(r.head+i))
	if err == nil && !ok {
		err = listenc.ErrCorrupt
	}
	return bytes.Clone(val), err
}

// set replaces element i, 0 <= i < len, with val.
func (r *listRef) set(i int64, val []byte) error {
	if !r.isObj() {
		out := append([][]byte(nil), r.elems...)
		out[i] = val
		r.elems = out
		return nil
	}
	return r.tx.SetElem(r.v.Obj, r.subAt(r.head+i), val)
}

// push adds vals at the head (left) or the tail, one by one as LPUSH
// does: LPUSH k a b leaves b first.
func (r *listRef) push(vals [][]byte, left bool) error {
	if !r.isObj() {
		if !left {
			r.elems = append(r.elems[:len(r.elems):len(r.elems)], vals...)
			return nil
		}
		out := make([][]byte, 0, len(r.elems)+len(vals))
		for i := len(vals) - 1; i >= 0; i-- {
			out = append(out, vals[i])
		}
		r.elems = append(out, r.elems...)
		return nil
	}
	for _, val := range vals {
		var pos int64
		if left {
			r.head--
			pos = r.head
		} else {
			pos = r.head + r.n
		}
		r.n++
		if err := r.tx.SetElem(r.v.Obj, r.subAt(pos), val); err != nil {
			return err
		}
	}
	return nil
}

// pop takes up to n elements off the head (left) or the tail, in the
// order they were taken; they are copies.
func (r *listRef) pop(n int64, left bool) ([][]byte, error) {
	n = min(n, r.len())
	taken := make([][]byte, 0, n)
	if !r.isObj() {
		for i := range n {
			if left {
				taken = append(taken, bytes.Clone(r.elems[i]))
			} else {
				taken = append(taken, bytes.Clone(r.elems[int64(len(r.elems))-1-i]))
			}
		}
		if left {
			r.elems = r.elems[n:]
		} else {
			r.elems = r.elems[:int64(len(r.elems))-n]
		}
		return taken, nil
	}
	for range n {
		pos := r.head + r.n - 1
		if left {
			pos = r.head
		}
		val, ok, err := r.tx.Elem(r.v.Obj, r.subAt(pos))
		if err == nil && !ok {
			err = listenc.ErrCorrupt
		}
		if err != nil {
			return nil, err
		}
		taken = append(taken, bytes.Clone(val))
		if _, err := r.tx.DeleteElem(r.v.Obj, r.subAt(pos)); err != nil {
			return nil, err
		}
		if left {
			r.head++
		}
		r.n--
	}
	return taken, nil
}

// rangeOf is elements [from, to), 0 <= from <= to <= len. An object's
// are copies; an inline list's are views.
func (r *listRef) rangeOf(from, to int64) ([][]byte, error) {
	if !r.isObj() {
		return r.elems[from:to], nil
	}
	out := make([][]byte, 0, min(to-from, 1<<16))
	if from >= to {
		return out, nil
	}
	err := r.tx.ScanElems(r.v.Obj, listPosSub(nil, r.head+from), func(_, val []byte) (bool, error) {
		out = append(out, bytes.Clone(val))
		return int64(len(out)) < to-from, nil
	})
	if err == nil && int64(len(out)) != to-from {
		err = listenc.ErrCorrupt
	}
	return out, err
}

// all is every element, from the head.
func (r *listRef) all() ([][]byte, error) { return r.rangeOf(0, r.len()) }

// each calls fn with each element from the head (or from the tail when
// fromTail) and its index, until fn returns false. An object's element
// is valid only during the call.
func (r *listRef) each(fromTail bool, fn func(i int64, e []byte) bool) error {
	n := r.len()
	if !r.isObj() {
		for j := range n {
			i := j
			if fromTail {
				i = n - 1 - j
			}
			if !fn(i, r.elems[i]) {
				return nil
			}
		}
		return nil
	}
	if !fromTail {
		i := int64(0)
		return r.tx.ScanElems(r.v.Obj, listPosSub(nil, r.head), func(_, val []byte) (bool, error) {
			if i >= n {
				return false, nil
			}
			ok := fn(i, val)
			i++
			return ok, nil
		})
	}
	for i := n - 1; i >= 0; i-- {
		val, ok, err := r.tx.Elem(r.v.Obj, r.subAt(r.head+i))
		if err == nil && !ok {
			err = listenc.ErrCorrupt
		}
		if err != nil {
			return err
		}
		if !fn(i, val) {
			return nil
		}
	}
	return nil
}

// trim keeps elements [from, to) only, 0 <= from <= to <= len.
func (r *listRef) trim(from, to int64) error {
	if !r.isObj() {
		r.elems = r.elems[from:to]
		return nil
	}
	if from == to {
		// All gone: save deletes the key, and its object is collected.
		r.n = 0
		return nil
	}
	for i := range from {
		if _, err := r.tx.DeleteElem(r.v.Obj, r.subAt(r.head+i)); err != nil {
			return err
		}
	}
	for i := to; i < r.n; i++ {
		if _, err := r.tx.DeleteElem(r.v.Obj, r.subAt(r.head+i)); err != nil {
			return err
		}
	}
	r.head, r.n = r.head+from, to-from
	return nil
}

// insert puts val at index at, 0 <= at <= len, before the element that
// was there. An object moves the elements on the shorter side of at one
// position outwards, so an insert near either end costs little.
func (r *listRef) insert(at int64, val []byte) error {
	if !r.isObj() {
		r.elems = slices.Insert(slices.Clip(r.elems), int(at), val)
		return nil
	}
	shift := func(from, to int64) error {
		e, ok, err := r.tx.Elem(r.v.Obj, r.subAt(from))
		if err == nil && !ok {
			err = listenc.ErrCorrupt
		}
		if err != nil {
			return err
		}
		return r.tx.SetElem(r.v.Obj, r.subAt(to), bytes.Clone(e))
	}
	if at < r.n-at {
		for i := range at {
			if err := shift(r.head+i, r.head+i-1); err != nil {
				return err
			}
		}
		r.head--
	} else {
		for i := r.n - 1; i >= at; i-- {
			if err := shift(r.head+i, r.head+i+1); err != nil {
				return err
			}
		}
	}
	r.n++
	return r.tx.SetElem(r.v.Obj, r.subAt(r.head+at), val)
}

// replace makes elems the whole list, whose first from elements are
// the list's already. An object's elements from index from on are
// written again, and those past the new length deleted.
func (r *listRef) replace(elems [][]byte, from int64) error {
	if !r.isObj() {
		r.elems = elems
		return nil
	}
	m := int64(len(elems))
	if m == 0 {
		r.n = 0
		return nil
	}
	for i := from; i < m; i++ {
		if err := r.tx.SetElem(r.v.Obj, r.subAt(r.head+i), elems[i]); err != nil {
			return err
		}
	}
	for i := m; i < r.n; i++ {
		if _, err := r.tx.DeleteElem(r.v.Obj, r.subAt(r.head+i)); err != nil {
			return err
		}
	}
	r.n = m
	return nil
}

// listOutgrown reports whether an inline list of elems is to become an
// object.
func listOutgrown(elems [][]byte) bool {
	if len(elems) > listObjMaxElems {
		return true
	}
	size := 0
	for _, e := range elems {
		size += len(e) + 1
		if size > listObjMaxBytes {
			return true
		}
	}
	return false
}

// save stores the list as the methods left it, with the deadline it was
// read with: a list left empty is deleted (an emptied list is no key, as
// in Redis); an inline one that outgrew the limits becomes an object.
func (r *listRef) save() error {
	if r.len() == 0 {
		_, err := r.tx.Delete(r.db, r.key)
		return err
	}
	if !r.isObj() {
		if !listOutgrown(r.elems) {
			return r.tx.Set(r.db, r.key, store.Value{Kind: store.KindList, Data: listenc.Append(nil, r.elems), ExpireAt: r.v.ExpireAt})
		}
		obj, err := r.tx.NewObj(r.db, r.key)
		if err != nil {
			return err
		}
		r.v.Obj, r.head, r.n = obj, 0, int64(len(r.elems))
		for i, e := range r.elems {
			if err := r.tx.SetElem(obj, r.subAt(int64(i)), e); err != nil {
				return err
			}
		}
		r.elems = nil
	}
	hdr := binary.AppendUvarint(binary.AppendVarint(nil, r.head), uint64(r.n))
	return r.tx.Set(r.db, r.key, store.Value{Kind: store.KindList, Obj: r.v.Obj, Data: hdr, ExpireAt: r.v.ExpireAt})
}
