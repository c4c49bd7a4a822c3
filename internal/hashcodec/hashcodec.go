// Package hashcodec encodes a hash (store.KindHash) into the bytes of one
// store value, and back.
//
// The format, every write of a hash rewriting it whole:
//
//	flags  1 byte: 0 a listpack-encoded hash, 1 a hashtable-encoded one
//	       (what OBJECT ENCODING answers; a hash converted to hashtable
//	       never goes back, as in Redis 7.0); other bits are invalid
//	count  uvarint: the number of field/value pairs
//	pairs  count times: uvarint length, field bytes, uvarint length, value bytes
//
// Fields keep the order they were first set in (Redis's listpack order,
// which HGETALL, HKEYS, HVALS and HSCAN answer), and a deleted field is
// cut out in place, the others keeping theirs.
//
// It promises: Decode never panics, whatever the bytes, and refuses any
// that Encode could not have written (trailing bytes, a count that does
// not match, unknown flags, a length not in its shortest form); Decode(Encode(h)) is h. It does not check
// that the fields are distinct: the commands never store a field twice.
// A lookup, a set or a delete is linear in the size of the hash: fine for
// the small hashes Redis keeps as listpacks, a cost for large ones
// (README: hashes).
package hashcodec

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// ErrCorrupt is the error of bytes that are not an encoded hash.
var ErrCorrupt = errors.New("hashcodec: corrupt hash value")

// flagTable marks a hashtable-encoded hash.
const flagTable = 1

// Pair is one field and its value.
type Pair struct {
	Field, Value []byte
}

// Hash is a decoded hash. Its slices may alias the bytes it was decoded
// from.
type Hash struct {
	// Table is set once the hash is hashtable-encoded.
	Table bool
	Pairs []Pair
}

// Decode reads an encoded hash; the pairs alias b.
func Decode(b []byte) (Hash, error) {
	var h Hash
	if len(b) < 1 || b[0]&^flagTable != 0 {
		return h, ErrCorrupt
	}
	h.Table = b[0]&flagTable != 0
	b = b[1:]
	n, k := uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		// Each pair takes at least two bytes: a count beyond the
		// bytes left is corrupt, and must not size an allocation.
		return h, ErrCorrupt
	}
	b = b[k:]
	h.Pairs = make([]Pair, 0, n)
	for i := uint64(0); i < n; i++ {
		var f, v []byte
		var ok bool
		if f, b, ok = chunk(b); !ok {
			return h, ErrCorrupt
		}
		if v, b, ok = chunk(b); !ok {
			return h, ErrCorrupt
		}
		h.Pairs = append(h.Pairs, Pair{f, v})
	}
	if len(b) != 0 {
		return h, ErrCorrupt
	}
	return h, nil
}

// chunk reads one length-prefixed string off b.
func chunk(b []byte) (s, rest []byte, ok bool) {
	l, k := uvarint(b)
	if k <= 0 || l > uint64(len(b)-k) {
		return nil, nil, false
	}
	end := k + int(l)
	return b[k:end:end], b[end:], true
}

// uvarint is binary.Uvarint that refuses a number not in its shortest
// form, so that each hash has one encoding.
func uvarint(b []byte) (uint64, int) {
	n, k := binary.Uvarint(b)
	if k > 1 && b[k-1] == 0 {
		return 0, 0
	}
	return n, k
}

// Encode appends the encoding of h to dst.
func Encode(dst []byte, h Hash) []byte {
	size := 1 + binary.MaxVarintLen64
	for _, p := range h.Pairs {
		size += 2*binary.MaxVarintLen64 + len(p.Field) + len(p.Value)
	}
	if cap(dst)-len(dst) < size {
		dst = append(make([]byte, 0, len(dst)+size), dst...)
	}
	var flags byte
	if h.Table {
		flags = flagTable
	}
	dst = append(dst, flags)
	dst = binary.AppendUvarint(dst, uint64(len(h.Pairs)))
	for _, p := range h.Pairs {
		dst = binary.AppendUvarint(dst, uint64(len(p.Field)))
		dst = append(dst, p.Field...)
		dst = binary.AppendUvarint(dst, uint64(len(p.Value)))
		dst = append(dst, p.Value...)
	}
	return dst
}

// Index is the position of field among h's pairs, or -1.
func (h *Hash) Index(field []byte) int {
	for i, p := range h.Pairs {
		if bytes.Equal(p.Field, field) {
			return i
		}
	}
	return -1
}

// Get returns the value of field.
func (h *Hash) Get(field []byte) ([]byte, bool) {
	if i := h.Index(field); i >= 0 {
		return h.Pairs[i].Value, true
	}
	return nil, false
}

// Set sets field to value, in place when field is there, last when it is
// new, and reports whether it is new. It keeps field and value.
func (h *Hash) Set(field, value []byte) bool {
	if i := h.Index(field); i >= 0 {
		h.Pairs[i].Value = value
		return false
	}
	h.Pairs = append(h.Pairs, Pair{field, value})
	return true
}

// Delete removes field, the others keeping their order, and reports
// whether it was there.
func (h *Hash) Delete(field []byte) bool {
	i := h.Index(field)
	if i < 0 {
		return false
	}
	h.Pairs = append(h.Pairs[:i], h.Pairs[i+1:]...)
	return true
}
