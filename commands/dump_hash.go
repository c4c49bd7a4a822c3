package commands

import (
	"bytes"
	"encoding/binary"
	"math"

	"github.com/oncekv/oncekv/internal/hashcodec"
	"github.com/oncekv/oncekv/store"
)

// DUMP and RESTORE of hashes. DUMP writes what Redis 7.0 writes with
// rdbcompression off: a listpack-encoded hash as RDB type 16 (the
// listpack Redis would hold: the same entries, integers encoded as
// integers), a hashtable-encoded one as type 4 (its fields and values,
// here in insertion order, Redis's in its dict's). RESTORE reads those
// and the encodings of older Redis versions, ziplist (13) and zipmap
// (9), checking every entry (Redis checks only a listpack's header
// unless sanitize-dump-payload is on) and refusing an empty hash or a
// field twice with Redis's -ERR Bad data format.

// RDB object types of a hash (rdb.h).
const (
	rdbTypeHash         = 4
	rdbTypeHashZipmap   = 9
	rdbTypeHashZiplist  = 13
	rdbTypeHashListpack = 16
)

// dumpHash serializes h as Redis 7.0's DUMP does with rdbcompression off.
func dumpHash(h hashcodec.Hash) []byte {
	var out []byte
	if h.Table {
		out = append(out, rdbTypeHash)
		out = appendRDBLen(out, uint64(len(h.Pairs)))
		for _, p := range h.Pairs {
			out = appendRDBString(out, p.Field)
			out = appendRDBString(out, p.Value)
		}
	} else {
		lp := listpackOf(h.Pairs)
		out = append(out, rdbTypeHashListpack)
		out = append(appendRDBLen(out, uint64(len(lp))), lp...)
	}
	out = binary.LittleEndian.AppendUint16(out, rdbVersion)
	return binary.LittleEndian.AppendUint64(out, dumpCRC(out))
}

// listpackOf builds the listpack of Redis 7.0 holding pairs (listpack.c):
// a 6-byte header (total bytes, element count), the entries, 0xFF.
func listpackOf(pairs []hashcodec.Pair) []byte {
	lp := make([]byte, 6, 7+len(pairs)*8)
	for _, p := range pairs {
		lp = appendLPEntry(lp, p.Field)
		lp = appendLPEntry(lp, p.Value)
	}
	lp = append(lp, 0xff)
	binary.LittleEndian.PutUint32(lp, uint32(len(lp)))
	n := min(2*len(pairs), math.MaxUint16) // 65535: count them
	binary.LittleEndian.PutUint16(lp[4:], uint16(n))
	return lp
}

// appendLPEntry appends one listpack entry: its encoding, then its
// back-length. A string that string2ll takes is stored as an integer.
func appendLPEntry(lp, s []byte) []byte {
	start := len(lp)
	if v, ok := parseInt(s); ok {
		switch {
		case v >= 0 && v <= 127:
			lp = append(lp, byte(v))
		case v >= -4096 && v <= 4095:
			u := uint64(v) & 0x1fff
			lp = append(lp, byte(u>>8)|0xc0, byte(u))
		case v >= math.MinInt16 && v <= math.MaxInt16:
			lp = binary.LittleEndian.AppendUint16(append(lp, 0xf1), uint16(v))
		case v >= -1<<23 && v < 1<<23:
			u := uint32(v)
			lp = append(lp, 0xf2, byte(u), byte(u>>8), byte(u>>16))
		case v >= math.MinInt32 && v <= math.MaxInt32:
			lp = binary.LittleEndian.AppendUint32(append(lp, 0xf3), uint32(v))
		default:
			lp = binary.LittleEndian.AppendUint64(append(lp, 0xf4), uint64(v))
		}
	} else {
		switch n := len(s); {
		case n < 64:
			lp = append(lp, 0x80|byte(n))
		case n < 4096:
			lp = append(lp, 0xe0|byte(n>>8), byte(n))
		default:
			lp = binary.LittleEndian.AppendUint32(append(lp, 0xf0), uint32(n))
		}
		lp = append(lp, s...)
	}
	return appendBacklen(lp, len(lp)-start)
}

// appendBacklen appends l, an entry's length, as listpack's back-length:
// 7 bits a byte, most significant first, all but the first byte with the
// high bit set.
func appendBacklen(lp []byte, l int) []byte {
	var b [5]byte
	k := 0
	for {
		b[k] = byte(l & 127)
		k++
		l >>= 7
		if l == 0 {
			break
		}
	}
	for i := k - 1; i >= 0; i-- {
		c := b[i]
		if i != k-1 {
			c |= 128
		}
		lp = append(lp, c)
	}
	return lp
}

// readLPEntry reads one listpack entry off b, checking its back-length.
func readLPEntry(b []byte) (s, rest []byte, ok bool) {
	if len(b) == 0 {
		return nil, nil, false
	}
	c := b[0]
	var hdr, n int
	var v int64
	isInt := true
	switch {
	case c&0x80 == 0:
		hdr, v = 1, int64(c)
	case c&0xc0 == 0x80:
		hdr, n, isInt = 1, int(c&0x3f), false
	case c&0xe0 == 0xc0:
		if len(b) < 2 {
			return nil, nil, false
		}
		u := uint16(c&0x1f)<<8 | uint16(b[1])
		hdr, v = 2, int64(int16(u<<3)>>3)
	case c&0xf0 == 0xe0:
		if len(b) < 2 {
			return nil, nil, false
		}
		hdr, n, isInt = 2, int(c&0x0f)<<8|int(b[1]), false
	case c == 0xf0:
		if len(b) < 5 {
			return nil, nil, false
		}
		l := binary.LittleEndian.Uint32(b[1:])
		if uint64(l) > uint64(len(b)) {
			return nil, nil, false
		}
		hdr, n, isInt = 5, int(l), false
	case c == 0xf1 && len(b) >= 3:
		hdr, v = 3, int64(int16(binary.LittleEndian.Uint16(b[1:])))
	case c == 0xf2 && len(b) >= 4:
		hdr, v = 4, int64(int32(uint32(b[1])|uint32(b[2])<<8|uint32(b[3])<<16)<<8>>8)
	case c == 0xf3 && len(b) >= 5:
		hdr, v = 5, int64(int32(binary.LittleEndian.Uint32(b[1:])))
	case c == 0xf4 && len(b) >= 9:
		hdr, v = 9, int64(binary.LittleEndian.Uint64(b[1:]))
	default:
		return nil, nil, false
	}
	size := hdr + n
	if size > len(b) {
		return nil, nil, false
	}
	if isInt {
		s = []byte(itoa(v))
	} else {
		s = b[hdr:size]
	}
	back := appendBacklen(nil, size)
	if !bytes.HasPrefix(b[size:], back) {
		return nil, nil, false
	}
	return s, b[size+len(back):], true
}

// parseListpack reads a listpack's strings.
func parseListpack(lp []byte) ([][]byte, bool) {
	if len(lp) < 7 || binary.LittleEndian.Uint32(lp) != uint32(len(lp)) || lp[len(lp)-1] != 0xff {
		return nil, false
	}
	count := int(binary.LittleEndian.Uint16(lp[4:]))
	var out [][]byte
	b := lp[6 : len(lp)-1]
	for len(b) > 0 {
		s, rest, ok := readLPEntry(b)
		if !ok {
			return nil, false
		}
		out, b = append(out, s), rest
	}
	if count != math.MaxUint16 && count != len(out) {
		return nil, false
	}
	return out, true
}

// parseZiplist reads the strings of a ziplist (Redis before 7.0):
// zlbytes, zltail, zllen, entries each led by the previous entry's
// length, 0xFF.
func parseZiplist(zl []byte) ([][]byte, bool) {
	if len(zl) < 11 || binary.LittleEndian.Uint32(zl) != uint32(len(zl)) || zl[len(zl)-1] != 0xff {
		return nil, false
	}
	count := int(binary.LittleEndian.Uint16(zl[8:]))
	var out [][]byte
	b := zl[10 : len(zl)-1]
	for len(b) > 0 {
		switch {
		case b[0] < 254:
			b = b[1:]
		case b[0] == 254 && len(b) >= 5:
			b = b[5:]
		default:
			return nil, false
		}
		if len(b) == 0 {
			return nil, false
		}
		c := b[0]
		var hdr, n int
		var v int64
		isInt := true
		switch {
		case c>>6 == 0:
			hdr, n, isInt = 1, int(c&0x3f), false
		case c>>6 == 1 && len(b) >= 2:
			hdr, n, isInt = 2, int(c&0x3f)<<8|int(b[1]), false
		case c == 0x80 && len(b) >= 5:
			l := binary.BigEndian.Uint32(b[1:])
			if uint64(l) > uint64(len(b)) {
				return nil, false
			}
			hdr, n, isInt = 5, int(l), false
		case c == 0xc0 && len(b) >= 3:
			hdr, v = 3, int64(int16(binary.LittleEndian.Uint16(b[1:])))
		case c == 0xd0 && len(b) >= 5:
			hdr, v = 5, int64(int32(binary.LittleEndian.Uint32(b[1:])))
		case c == 0xe0 && len(b) >= 9:
			hdr, v = 9, int64(binary.LittleEndian.Uint64(b[1:]))
		case c == 0xf0 && len(b) >= 4:
			hdr, v = 4, int64(int32(uint32(b[1])<<8|uint32(b[2])<<16|uint32(b[3])<<24)>>8)
		case c == 0xfe && len(b) >= 2:
			hdr, v = 2, int64(int8(b[1]))
		case c >= 0xf1 && c <= 0xfd:
			hdr, v = 1, int64(c&0x0f)-1
		default:
			return nil, false
		}
		if hdr+n > len(b) {
			return nil, false
		}
		if isInt {
			out = append(out, []byte(itoa(v)))
		} else {
			out = append(out, b[hdr:hdr+n])
		}
		b = b[hdr+n:]
	}
	if count != math.MaxUint16 && count != len(out) {
		return nil, false
	}
	return out, true
}

// parseZipmap reads the strings of a zipmap (Redis before 2.6): a count
// byte, then key length, key, value length, free byte, value and free
// bytes, until 0xFF.
func parseZipmap(zm []byte) ([][]byte, bool) {
	if len(zm) < 2 {
		return nil, false
	}
	b := zm[1:]
	var out [][]byte
	zmLen := func() (int, bool) {
		switch {
		case len(b) >= 1 && b[0] < 254:
			n := int(b[0])
			b = b[1:]
			return n, true
		case len(b) >= 5 && b[0] == 254:
			n := binary.LittleEndian.Uint32(b[1:])
			b = b[5:]
			return int(n), uint64(n) <= uint64(len(b))
		}
		return 0, false
	}
	for {
		if len(b) == 0 {
			return nil, false
		}
		if b[0] == 0xff {
			return out, len(b) == 1 && len(out)%2 == 0
		}
		kl, ok := zmLen()
		if !ok || kl > len(b) {
			return nil, false
		}
		out, b = append(out, b[:kl]), b[kl:]
		vl, ok := zmLen()
		if !ok || len(b) < 1 {
			return nil, false
		}
		free := int(b[0])
		b = b[1:]
		if vl+free > len(b) {
			return nil, false
		}
		out, b = append(out, b[:vl]), b[vl+free:]
	}
}

// restoreHash reads the object of a hash payload (after its type byte)
// into a hash, applying the listpack limits as Redis 7.0's rdbLoadObject
// does: more entries than maxEntries, or (type 4 and zipmap) a field or
// value longer than maxValue, make it hashtable-encoded.
func restoreHash(typ byte, b []byte, maxEntries, maxValue int64) (hashcodec.Hash, error) {
	var h hashcodec.Hash
	var strs [][]byte
	checkLen := false
	switch typ {
	case rdbTypeHash:
		n, encoded, rest, ok := readRDBLen(b)
		if !ok || encoded || n == 0 || n > uint64(len(rest)) {
			return h, ErrBadData
		}
		b = rest
		for i := uint64(0); i < 2*n; i++ {
			s, rest, err := readRDBString(b)
			if err != nil {
				return h, err
			}
			strs, b = append(strs, s), rest
		}
		checkLen = true
	case rdbTypeHashZipmap, rdbTypeHashZiplist, rdbTypeHashListpack:
		blob, _, err := readRDBString(b)
		if err != nil {
			return h, err
		}
		var ok bool
		switch typ {
		case rdbTypeHashZipmap:
			strs, ok = parseZipmap(blob)
			checkLen = true
		case rdbTypeHashZiplist:
			strs, ok = parseZiplist(blob)
		default:
			strs, ok = parseListpack(blob)
		}
		if !ok {
			return h, ErrBadData
		}
	default:
		return h, ErrBadData
	}
	if len(strs) == 0 || len(strs)%2 != 0 {
		return h, ErrBadData
	}
	seen := make(map[string]bool, len(strs)/2)
	for i := 0; i < len(strs); i += 2 {
		f, v := strs[i], strs[i+1]
		if seen[string(f)] {
			return h, ErrBadData
		}
		seen[string(f)] = true
		if checkLen && (int64(len(f)) > maxValue || int64(len(v)) > maxValue) {
			h.Table = true
		}
		h.Pairs = append(h.Pairs, hashcodec.Pair{Field: f, Value: v})
	}
	if int64(len(h.Pairs)) > maxEntries {
		h.Table = true
	}
	return h, nil
}

// restoreValue reads a DUMP payload of a string, a hash, a set, a list or
// a sorted set into the value RESTORE stores (its deadline left to the caller), as
// Redis 7.0's RESTORE does: ErrDumpPayload when the version is newer than
// Redis 7.0's or the checksum is wrong, ErrBadData when the object is of
// another type or malformed. The value may share p's memory.
func (x *Ctx) restoreValue(p []byte) (store.Value, error) {
	if err := checkPayload(p); err != nil {
		return store.Value{}, err
	}
	switch p[0] {
	case rdbTypeString, rdbTypeSet, rdbTypeIntset:
		return restoreSetOrString(p, x.maxIntset())
	case rdbTypeList, rdbTypeQuicklist, rdbTypeQuicklist2:
		data, err := restoreList(p[0], p[1:])
		if err != nil {
			return store.Value{}, err
		}
		return store.Value{Kind: store.KindList, Data: data}, nil
	case rdbTypeZset, rdbTypeZset2, rdbTypeZsetZiplist, rdbTypeZsetListpack:
		maxEntries, maxValue := x.S.zsetLimits()
		data, err := restoreZset(p[0], p[1:], maxEntries, maxValue)
		if err != nil {
			return store.Value{}, err
		}
		return store.Value{Kind: store.KindZSet, Data: data}, nil
	}
	h, err := restoreHash(p[0], p[1:], x.S.hashMaxEntries.Load(), x.S.hashMaxValue.Load())
	if err != nil {
		return store.Value{}, err
	}
	return store.Value{Kind: store.KindHash, Data: hashcodec.Encode(nil, h)}, nil
}
