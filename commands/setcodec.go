package commands

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
)

// The encoding of a set (store.KindSet) in Value.Data:
//
//	tag     1 byte: 'i' intset, 'h' hashtable (Redis 7.0's two encodings)
//	count   uvarint
//	members count times: uvarint length, then the bytes
//
// An intset's members are canonical 64-bit decimal integers in numeric
// order, as Redis's intset keeps them (so SMEMBERS answers in Redis's
// order); a hashtable's members are in byte order, which is deterministic
// but not the order of Redis's hash table. Members are unique, and a
// stored set is never empty. The tag is kept because Redis keeps a set's
// encoding: a set that became a hashtable stays one when it shrinks
// (OBJECT ENCODING tells).
//
// This is the inline form of a set (setobj.go): an intset, or a hashtable
// an older build stored so. Every write decodes and rewrites the whole
// value, O(n) for n members; a hashtable set is kept as a store object
// from its next write on.

const (
	setTagIntset    = 'i'
	setTagHashtable = 'h'
)

// errSetCodec is a stored set value that does not decode.
var errSetCodec = errors.New("set: malformed value")

// setVal is a decoded set: its members, sorted by the encoding's order,
// may share the memory of the value they were decoded from.
type setVal struct {
	intset bool
	m      [][]byte
}

// isIntMember reports whether b is a canonical 64-bit decimal integer,
// which an intset may hold (Redis's isSdsRepresentableAsLongLong).
func isIntMember(b []byte) bool {
	_, ok := parseInt(b)
	return ok
}

// cmpInt compares two canonical decimal integers numerically without
// parsing them: by sign, then length, then bytes.
func cmpInt(a, b []byte) int {
	na, nb := a[0] == '-', b[0] == '-'
	switch {
	case na && !nb:
		return -1
	case !na && nb:
		return 1
	case na:
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return bytes.Compare(b, a)
	}
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return bytes.Compare(a, b)
}

// cmp is the set's order.
func (s *setVal) cmp(a, b []byte) int {
	if s.intset {
		return cmpInt(a, b)
	}
	return bytes.Compare(a, b)
}

// find returns where member is, or would be, and whether it is there.
func (s *setVal) find(member []byte) (int, bool) {
	if s.intset && !isIntMember(member) {
		return 0, false
	}
	return slices.BinarySearchFunc(s.m, member, s.cmp)
}

// has reports whether member is in the set.
func (s *setVal) has(member []byte) bool {
	_, ok := s.find(member)
	return ok
}

// decodeSet decodes a stored set. It checks everything the encoding
// promises (tag, lengths, order, uniqueness, canonical integers in an
// intset, no trailing bytes), so a value that decodes encodes back to the
// same bytes.
func decodeSet(data []byte) (setVal, error) {
	if len(data) < 1 || (data[0] != setTagIntset && data[0] != setTagHashtable) {
		return setVal{}, errSetCodec
	}
	s := setVal{intset: data[0] == setTagIntset}
	b := data[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n == 0 || n > uint64(len(b)) {
		return setVal{}, errSetCodec
	}
	b = b[k:]
	s.m = make([][]byte, 0, n)
	for i := uint64(0); i < n; i++ {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return setVal{}, errSetCodec
		}
		m := b[k : k+int(l) : k+int(l)]
		b = b[k+int(l):]
		if s.intset && !isIntMember(m) {
			return setVal{}, errSetCodec
		}
		if i > 0 && s.cmp(s.m[i-1], m) >= 0 {
			return setVal{}, errSetCodec
		}
		s.m = append(s.m, m)
	}
	if len(b) != 0 {
		return setVal{}, errSetCodec
	}
	return s, nil
}

// encode appends the set's encoding to dst. The set must not be empty.
func (s *setVal) encode(dst []byte) []byte {
	size := 1 + binary.MaxVarintLen64
	for _, m := range s.m {
		size += len(m) + binary.MaxVarintLen32
	}
	dst = slices.Grow(dst, size)
	tag := byte(setTagHashtable)
	if s.intset {
		tag = setTagIntset
	}
	dst = append(dst, tag)
	dst = binary.AppendUvarint(dst, uint64(len(s.m)))
	for _, m := range s.m {
		dst = binary.AppendUvarint(dst, uint64(len(m)))
		dst = append(dst, m...)
	}
	return dst
}

// buildSet makes a new set of members (any order, duplicates allowed) as
// Redis 7.0 builds one member by member from an empty intset
// (SINTERSTORE, SUNIONSTORE, a new key of SADD): an intset when every
// member is an integer and there are at most maxIntset, else a
// hashtable.
func buildSet(members [][]byte, maxIntset int) setVal {
	s := setVal{intset: len(members) > 0, m: slices.Clone(members)}
	for _, m := range members {
		if !isIntMember(m) {
			s.intset = false
			break
		}
	}
	s.sortUnique()
	if s.intset && len(s.m) > maxIntset {
		s.toHashtable()
	}
	return s
}

// sortUnique sorts the members by the set's order and drops duplicates.
func (s *setVal) sortUnique() {
	slices.SortFunc(s.m, s.cmp)
	s.m = slices.CompactFunc(s.m, func(a, b []byte) bool { return bytes.Equal(a, b) })
}

// toHashtable converts an intset to a hashtable (which Redis never
// converts back).
func (s *setVal) toHashtable() {
	s.intset = false
	slices.SortFunc(s.m, bytes.Compare)
}

// add adds members to the set, as Redis 7.0's setTypeAdd does one by
// one: an intset becomes a hashtable when a member that is not an integer
// is added, or when an added member takes it past maxIntset. It returns
// how many members were new.
func (s *setVal) add(members [][]byte, maxIntset int) int {
	var fresh [][]byte
	for _, m := range members {
		if !s.has(m) {
			fresh = append(fresh, m)
		}
	}
	if len(fresh) == 0 {
		return 0
	}
	slices.SortFunc(fresh, bytes.Compare)
	fresh = slices.CompactFunc(fresh, func(a, b []byte) bool { return bytes.Equal(a, b) })
	if s.intset && (!allInts(fresh) || len(s.m)+len(fresh) > maxIntset) {
		s.toHashtable()
	}
	if s.intset {
		slices.SortFunc(fresh, cmpInt)
	}
	s.m = mergeSorted(s.m, fresh, s.cmp)
	return len(fresh)
}

func allInts(ms [][]byte) bool {
	for _, m := range ms {
		if !isIntMember(m) {
			return false
		}
	}
	return true
}

// mergeSorted merges two lists sorted by cmp into a new one.
func mergeSorted(a, b [][]byte, cmp func(a, b []byte) int) [][]byte {
	out := make([][]byte, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if cmp(a[i], b[j]) <= 0 {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// remove removes members and returns how many were there.
func (s *setVal) remove(members [][]byte) int {
	n := 0
	for _, m := range members {
		if i, ok := s.find(m); ok {
			s.m = slices.Delete(s.m, i, i+1)
			n++
		}
	}
	return n
}

// intMembers returns an intset's members as integers.
func (s *setVal) intMembers() []int64 {
	out := make([]int64, len(s.m))
	for i, m := range s.m {
		out[i], _ = strconv.ParseInt(string(m), 10, 64)
	}
	return out
}
