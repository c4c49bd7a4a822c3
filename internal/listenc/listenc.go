// Package listenc is the encoding of a list's elements in the Data of a
// store.Value of kind store.KindList.
//
// A list is encoded as the number of its elements, then each element in
// order from the head: its length, then its bytes. Numbers are unsigned
// varints (encoding/binary's). An empty list is never stored (a list
// emptied by a command is deleted, as in Redis), but encodes as the one
// byte 0.
//
// The encoding promises:
//
//   - Decode of any bytes returns the elements or ErrCorrupt, and never
//     panics nor allocates more than a small multiple of len(data): a
//     count or a length larger than the bytes left is corrupt.
//   - Decode(Append(nil, elems)) gives back elems, and Append of what
//     Decode returned gives back the same bytes.
//   - Len reads the count only: LLEN costs no walk of the elements.
//
// It does not promise that a change costs less than the whole list: a
// push or a pop at either end rewrites every element. That is why only
// small lists are stored so; a large one keeps each element apart as a
// store object (commands/listobj.go; README: "Lists").
package listenc

import (
	"encoding/binary"
	"errors"
)

// ErrCorrupt is the error of Decode for bytes that no Append wrote.
var ErrCorrupt = errors.New("listenc: corrupt list encoding")

// Append appends the encoding of elems to dst and returns it.
func Append(dst []byte, elems [][]byte) []byte {
	size := binary.MaxVarintLen64
	for _, e := range elems {
		size += len(e) + binary.MaxVarintLen64
	}
	if cap(dst)-len(dst) < size {
		grown := make([]byte, len(dst), len(dst)+size)
		copy(grown, dst)
		dst = grown
	}
	dst = binary.AppendUvarint(dst, uint64(len(elems)))
	for _, e := range elems {
		dst = binary.AppendUvarint(dst, uint64(len(e)))
		dst = append(dst, e...)
	}
	return dst
}

// Len returns the number of elements of an encoded list without decoding
// them.
func Len(data []byte) (int, error) {
	n, k := binary.Uvarint(data)
	if k <= 0 || n > uint64(len(data)-k) {
		return 0, ErrCorrupt
	}
	return int(n), nil
}

// Decode returns the elements of an encoded list, in order from the head.
// They are views of data, not copies: they must not be changed, and live
// as long as data.
func Decode(data []byte) ([][]byte, error) {
	n, err := Len(data)
	if err != nil {
		return nil, err
	}
	_, k := binary.Uvarint(data)
	rest := data[k:]
	// Each element takes at least one byte (its length), so n is at most
	// len(rest): the slice below is bounded by the input.
	out := make([][]byte, 0, n)
	for i := 0; i < n; i++ {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l > uint64(len(rest)-k) {
			return nil, ErrCorrupt
		}
		end := k + int(l)
		out = append(out, rest[k:end:end])
		rest = rest[end:]
	}
	if len(rest) != 0 {
		return nil, ErrCorrupt
	}
	return out, nil
}
