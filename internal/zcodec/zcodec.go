// Package zcodec encodes a sorted set (Redis's zset) in one byte string,
// the Data of a store value of kind store.KindZSet.
//
// Layout, all integers big-endian:
//
//	[0]     encoding: 'L' (Redis's listpack) or 'K' (skiplist), what
//	        OBJECT ENCODING answers; a skiplist set never goes back
//	[1:5]   n, the number of members
//	[5:5+4n] the offset of each entry from the start of the entries
//	then n entries in (score, member bytes) order, each the 8 bytes of
//	its score (IEEE 754) followed by the member's bytes; an entry ends
//	where the next begins (the last at the end of the data)
//
// The offsets make entry i readable at once, so that a range by rank,
// score or member is a binary search plus a walk, without decoding the
// rest. A write builds the whole encoding again (Encode): O(n) for a set
// of n members, whatever it changes.
//
// Scores are never NaN. Decode checks the layout (never panics on any
// input) but not the order; Check checks that too.
package zcodec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
)

// Encodings, as OBJECT ENCODING names them.
const (
	Listpack byte = 'L'
	Skiplist byte = 'K'
)

// ErrCorrupt is a byte string that is not an encoded sorted set.
var ErrCorrupt = errors.New("zcodec: corrupt sorted set")

// Entry is one member and its score.
type Entry struct {
	Member []byte
	Score  float64
}

// Less orders entries as Redis does: by score, then by member bytes.
func Less(a, b Entry) bool { return Compare(a, b) < 0 }

// Compare is -1, 0 or 1 as a sorts before, with or after b.
func Compare(a, b Entry) int {
	switch {
	case a.Score < b.Score:
		return -1
	case a.Score > b.Score:
		return 1
	}
	return bytes.Compare(a.Member, b.Member)
}

// View reads an encoded set without copying it; its entries' members
// alias the encoding.
type View struct {
	data []byte
	n    int
}

const head = 5

// Decode checks b's layout and returns a view of it.
func Decode(b []byte) (View, error) {
	if len(b) < head || (b[0] != Listpack && b[0] != Skiplist) {
		return View{}, ErrCorrupt
	}
	n64 := uint64(binary.BigEndian.Uint32(b[1:5]))
	if n64 > uint64(len(b)-head)/12 {
		return View{}, ErrCorrupt
	}
	n := int(n64)
	body := len(b) - head - 4*n
	prev := -8
	for i := 0; i < n; i++ {
		off := int(binary.BigEndian.Uint32(b[head+4*i:]))
		if off < prev+8 || off+8 > body || (i == 0 && off != 0) {
			return View{}, ErrCorrupt
		}
		prev = off
	}
	if n == 0 && body != 0 {
		return View{}, ErrCorrupt
	}
	v := View{data: b, n: n}
	for i := 0; i < n; i++ {
		if math.IsNaN(v.At(i).Score) {
			return View{}, ErrCorrupt
		}
	}
	return v, nil
}

// Check decodes b and checks that its entries are in order, members
// unique.
func Check(b []byte) (View, error) {
	v, err := Decode(b)
	if err != nil {
		return v, err
	}
	for i := 1; i < v.n; i++ {
		if Compare(v.At(i-1), v.At(i)) >= 0 {
			return View{}, ErrCorrupt
		}
	}
	seen := make(map[string]bool, v.n)
	for i := 0; i < v.n; i++ {
		m := string(v.At(i).Member)
		if seen[m] {
			return View{}, ErrCorrupt
		}
		seen[m] = true
	}
	return v, nil
}

// Len is the number of members.
func (v View) Len() int { return v.n }

// Encoding is Listpack or Skiplist.
func (v View) Encoding() byte {
	if len(v.data) == 0 {
		return Listpack
	}
	return v.data[0]
}

func (v View) entries() int { return head + 4*v.n }

func (v View) off(i int) int {
	if i == v.n {
		return len(v.data) - v.entries()
	}
	return int(binary.BigEndian.Uint32(v.data[head+4*i:]))
}

// At is the entry of rank i (0 <= i < Len).
func (v View) At(i int) Entry {
	base := v.entries()
	a, b := base+v.off(i), base+v.off(i+1)
	return Entry{
		Score:  math.Float64frombits(binary.BigEndian.Uint64(v.data[a:])),
		Member: v.data[a+8 : b : b],
	}
}

// Search is the smallest rank i in [0, Len] for which f(At(i)) is true,
// f false then true along the ranks (sort.Search).
func (v View) Search(f func(Entry) bool) int {
	lo, hi := 0, v.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if !f(v.At(m)) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// Find is the rank of member, or -1.
func (v View) Find(member []byte) int {
	for i := 0; i < v.n; i++ {
		if bytes.Equal(v.At(i).Member, member) {
			return i
		}
	}
	return -1
}

// Entries returns every entry, members aliasing the encoding.
func (v View) Entries() []Entry {
	out := make([]Entry, v.n)
	for i := range out {
		out[i] = v.At(i)
	}
	return out
}

// Encode encodes entries, which must be sorted (Less) with unique
// members and no NaN score, under the encoding enc.
func Encode(enc byte, entries []Entry) []byte {
	size := head + 4*len(entries)
	for _, e := range entries {
		size += 8 + len(e.Member)
	}
	b := make([]byte, head+4*len(entries), size)
	b[0] = enc
	binary.BigEndian.PutUint32(b[1:], uint32(len(entries)))
	off := 0
	for i, e := range entries {
		binary.BigEndian.PutUint32(b[head+4*i:], uint32(off))
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(e.Score))
		b = append(b, e.Member...)
		off += 8 + len(e.Member)
	}
	return b
}
