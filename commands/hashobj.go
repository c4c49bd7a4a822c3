package commands

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math"

	"github.com/oncekv/oncekv/internal/hashcodec"
	"github.com/oncekv/oncekv/store"
)

// A hash is kept in one of two forms. A listpack-encoded hash (Redis's
// small hashes) is inline: the whole hash is its value's bytes
// (internal/hashcodec), decoded and rewritten by each write. A
// hashtable-encoded hash is an object (store.Tx.NewObj): each field is
// an element of its own, whose name is the field's slot (fieldSlot, 8
// bytes big-endian) followed by the field, so that a write of one field
// costs one element, whatever the size of the hash, and the elements lie
// in HSCAN's order; the value itself holds only the number of fields
// (uvarint). A hash becomes an object when a write makes it
// hashtable-encoded (Redis 7.0's rules), and stays one, as Redis's stays
// a hashtable. (A hashtable-encoded hash that an older build stored
// inline is read inline and becomes an object at its next write.)

// hashRef is one hash as a command reads and writes it: get, set and del
// change it in the transaction, save stores what they did.
type hashRef struct {
	x     *Ctx
	key   []byte
	v     store.Value // as read; Obj set when the hash is an object
	found bool
	h     hashcodec.Hash // an inline hash's fields
	n     int64          // an object's number of fields
	sub   []byte         // the buffer of element names
}

// openHash reads key as a hash: found is false when it is missing, a key
// of another kind is ErrWrongType. A read command (count) counts a
// keyspace hit or miss, as Redis's lookupKeyRead does.
func (x *Ctx) openHash(key []byte, count bool) (hashRef, error) {
	r := hashRef{x: x, key: key}
	v, ok, err := x.getCounted(x.DB, key, count)
	if err != nil {
		return r, err
	}
	if !ok {
		return r, nil
	}
	if v.Kind != store.KindHash {
		return r, ErrWrongType
	}
	r.v, r.found = v, true
	if v.Obj != 0 {
		n, w := binary.Uvarint(v.Data)
		if w <= 0 || n > math.MaxInt64 {
			return r, hashcodec.ErrCorrupt
		}
		r.n = int64(n)
		return r, nil
	}
	r.h, err = hashcodec.Decode(v.Data)
	return r, err
}

// fieldSlot is a field's place in HSCAN's order of a hashtable-encoded
// hash, and the first 8 bytes of its element's name: a hash of the field
// in 1..2^63-1, so that 0 stays the cursor that starts and ends a scan.
// It is stored, so it is fixed for good: FNV-1a, whose high bits barely
// change between fields that differ in their last byte ("f1", "f2"), then
// MurmurHash3's finalizer, which spreads every bit over all of them, so
// that fields lie at random in the order (HRANDFIELD picks by slot).
func fieldSlot(f []byte) uint64 {
	v := uint64(14695981039346656037) // FNV-1a's offset basis
	for _, c := range f {
		v ^= uint64(c)
		v *= 1099511628211 // FNV's 64-bit prime
	}
	v ^= v >> 33
	v *= 0xff51afd7ed558ccd
	v ^= v >> 33
	v *= 0xc4ceb9fe1a85ec53
	v ^= v >> 33
	return v%math.MaxInt64 + 1
}

// longField is the longest field an element's name holds whole. A
// longer one (past what a store key may be, up to the 64 MiB of a store
// value) is named by its slot and its SHA-256, and kept in the element's
// value. It is stored, so it is fixed for good.
const longField = 1024

// The tags that start a field's element value.
const (
	elemField     = 0 // the field is in the name; the value follows
	elemLongField = 1 // uvarint length, the field, then the value
)

// maxFieldValue is the most a field and its value may hold together: an
// element's value holds both, behind a tag and a length.
const maxFieldValue = store.MaxValueLen - 1 - binary.MaxVarintLen64

// subOf is field f's element name, in r's buffer.
func (r *hashRef) subOf(f []byte) []byte {
	r.sub = binary.BigEndian.AppendUint64(r.sub[:0], fieldSlot(f))
	if len(f) > longField {
		d := sha256.Sum256(f)
		r.sub = append(r.sub, d[:]...)
	} else {
		r.sub = append(r.sub, f...)
	}
	return r.sub
}

// fieldElem is the element value of field f holding val.
func fieldElem(f, val []byte) []byte {
	if len(f) > longField {
		b := make([]byte, 0, 1+binary.MaxVarintLen64+len(f)+len(val))
		b = binary.AppendUvarint(append(b, elemLongField), uint64(len(f)))
		return append(append(b, f...), val...)
	}
	return append(append(make([]byte, 0, 1+len(val)), elemField), val...)
}

// fieldOf reads element sub holding e: its field and value, views of
// sub and e.
func fieldOf(sub, e []byte) (f, val []byte, err error) {
	if len(sub) < 8 || len(e) < 1 {
		return nil, nil, hashcodec.ErrCorrupt
	}
	switch e[0] {
	case elemField:
		return sub[8:], e[1:], nil
	case elemLongField:
		n, w := binary.Uvarint(e[1:])
		if w <= 0 || n > uint64(len(e)-1-w) {
			return nil, nil, hashcodec.ErrCorrupt
		}
		end := 1 + w + int(n)
		return e[1+w : end], e[end:], nil
	}
	return nil, nil, hashcodec.ErrCorrupt
}

// isObj reports whether the hash is an object.
func (r *hashRef) isObj() bool { return r.v.Obj != 0 }

// len is the number of fields.
func (r *hashRef) len() int64 {
	if r.isObj() {
		return r.n
	}
	return int64(len(r.h.Pairs))
}

// get reads field f.
func (r *hashRef) get(f []byte) ([]byte, bool, error) {
	if r.isObj() {
		e, ok, err := r.x.Tx.Elem(r.v.Obj, r.subOf(f))
		if err != nil || !ok {
			return nil, false, err
		}
		stored, val, err := fieldOf(r.sub, e)
		if err != nil || !bytes.Equal(stored, f) { // the SHA-256 of another field
			return nil, false, err
		}
		return val, true, nil
	}
	val, ok := r.h.Get(f)
	return val, ok, nil
}

// set sets field f to val, reporting whether f is new.
func (r *hashRef) set(f, val []byte) (bool, error) {
	if !r.isObj() {
		return r.x.setField(&r.h, f, val), nil
	}
	sub := r.subOf(f)
	_, had, err := r.x.Tx.Elem(r.v.Obj, sub)
	if err != nil {
		return false, err
	}
	if err := r.x.Tx.SetElem(r.v.Obj, sub, fieldElem(f, val)); err != nil {
		return false, err
	}
	if !had {
		r.n++
	}
	return !had, nil
}

// del deletes field f, reporting whether it was there.
func (r *hashRef) del(f []byte) (bool, error) {
	if !r.isObj() {
		return r.h.Delete(f), nil
	}
	ok, err := r.x.Tx.DeleteElem(r.v.Obj, r.subOf(f))
	if ok {
		r.n--
	}
	return ok, err
}

// pairs are all the fields, in HGETALL's order: an inline hash's
// insertion order, an object's slot order.
func (r *hashRef) pairs() ([]hashcodec.Pair, error) {
	if !r.isObj() {
		return r.h.Pairs, nil
	}
	out := make([]hashcodec.Pair, 0, r.n)
	err := r.x.Tx.ScanElems(r.v.Obj, nil, func(sub, e []byte) (bool, error) {
		p, err := copyPair(sub, e)
		out = append(out, p)
		return err == nil, err
	})
	return out, err
}

// scanFrom is one page of an HSCAN of an object (slotPage).
func (r *hashRef) scanFrom(cursor uint64, count int64) ([]hashcodec.Pair, uint64, error) {
	return slotPage(r.x.Tx, r.v.Obj, nil, cursor, count, copyPair)
}

// copyPair is element sub holding e as a pair of copies.
func copyPair(sub, e []byte) (hashcodec.Pair, error) {
	f, val, err := fieldOf(sub, e)
	return hashcodec.Pair{Field: bytes.Clone(f), Value: bytes.Clone(val)}, err
}

// random is a random field of a hash that has some: an object's is the
// first at or after a random slot (slotPick).
func (r *hashRef) random(pick func(n int) int, slot uint64) ([]byte, error) {
	if !r.isObj() {
		return r.h.Pairs[pick(len(r.h.Pairs))].Field, nil
	}
	p, err := slotPick(r.x.Tx, r.v.Obj, nil, slot, copyPair)
	return p.Field, err
}

// save stores the hash as get, set and del left it: a hash left empty
// is deleted; an inline one that a write made hashtable-encoded, or that
// outgrew hash-max-listpack-entries, becomes an object.
func (r *hashRef) save() error {
	x := r.x
	if !r.isObj() {
		if len(r.h.Pairs) == 0 {
			_, err := x.Tx.Delete(x.DB, r.key)
			return err
		}
		if int64(len(r.h.Pairs)) > x.S.hashMaxEntries.Load() {
			r.h.Table = true
		}
		if !r.h.Table {
			return x.Tx.Set(x.DB, r.key, store.Value{Kind: store.KindHash, Data: hashcodec.Encode(nil, r.h), ExpireAt: r.v.ExpireAt})
		}
		obj, err := x.Tx.NewObj(x.DB, r.key)
		if err != nil {
			return err
		}
		r.v.Obj = obj
		for _, p := range r.h.Pairs {
			if err := x.Tx.SetElem(obj, r.subOf(p.Field), fieldElem(p.Field, p.Value)); err != nil {
				return err
			}
		}
		r.n, r.h = int64(len(r.h.Pairs)), hashcodec.Hash{}
	}
	if r.n == 0 {
		_, err := x.Tx.Delete(x.DB, r.key)
		return err
	}
	return x.Tx.Set(x.DB, r.key, store.Value{Kind: store.KindHash, Obj: r.v.Obj,
		Data: binary.AppendUvarint(nil, uint64(r.n)), ExpireAt: r.v.ExpireAt})
}

// copyObj gives key in db, about to receive v (COPY), an object of its
// own with v's elements: two values never own one object.
func (x *Ctx) copyObj(db int, key []byte, v store.Value) (store.Value, error) {
	if v.Obj == 0 {
		return v, nil
	}
	type elem struct{ sub, val []byte }
	var all []elem
	err := x.Tx.ScanElems(v.Obj, nil, func(sub, val []byte) (bool, error) {
		all = append(all, elem{bytes.Clone(sub), bytes.Clone(val)})
		return true, nil
	})
	if err != nil {
		return v, err
	}
	obj, err := x.Tx.NewObj(db, key)
	if err != nil {
		return v, err
	}
	for _, e := range all {
		if err := x.Tx.SetElem(obj, e.sub, e.val); err != nil {
			return v, err
		}
	}
	v.Obj = obj
	return v, nil
}
