package commands

import (
	"encoding/binary"
	"fmt"
	"github.com/oncekv/oncekv/internal/listenc"
	"hash/crc64"
	"math"
	"strconv"

	"github.com/oncekv/oncekv/internal/hashcodec"
	"github.com/oncekv/oncekv/internal/zcodec"
	"github.com/oncekv/oncekv/store"
)

// DUMP and RESTORE of strings (hashes: dump_hash.go; sets: below; lists:
// listdump.go; sorted sets: zsetdump.go), in Redis 7.0's serialization: the RDB encoding of one
// object, then the RDB version (2 bytes) and a CRC64 of all that (8
// bytes), both little endian. Payloads move keys between oncekv and any
// Redis server in either direction.
//
// DUMP writes what redis-server writes with `rdbcompression no`: integer
// encodings for the integers that fit 32 bits, the bytes verbatim
// otherwise. Redis's default (`rdbcompression yes`) LZF-compresses
// strings longer than 20 bytes where that saves space, so the payloads of
// such strings differ from Redis's bytes; any Redis RESTOREs both.
// RESTORE reads every string encoding, LZF included, of the RDB versions
// up to 10 (Redis 7.0's). A payload of another type than those (a
// stream, a module's) is refused with the error Redis gives a payload it
// cannot load.

// rdbVersion is the RDB version Redis 7.0 writes and the newest it reads.
const rdbVersion = 10

// RDB encodings of a string (rdb.h).
const (
	rdbTypeString = 0    // object type of a string
	rdbTypeSet    = 2    // a set: its length, then its members as strings
	rdbTypeIntset = 11   // a set as one string holding Redis's intset
	rdbLen32      = 0x80 // a 32-bit big-endian length follows
	rdbLen64      = 0x81 // a 64-bit big-endian length follows
	rdbEncInt8    = 0    // after an encoded-value prefix: one signed byte
	rdbEncInt16   = 1    // two little-endian bytes
	rdbEncInt32   = 2    // four little-endian bytes
	rdbEncLZF     = 3    // compressed length, length, LZF data
)

// crcTable is the CRC-64 Jones polynomial, reflected, as Redis's crc64.c.
var crcTable = crc64.MakeTable(0x95ac9329ac4bc9b5)

// dumpCRC is Redis's crc64(0, b): hash/crc64 complements the register
// before and after, which Redis's does not.
func dumpCRC(b []byte) uint64 { return ^crc64.Update(^uint64(0), crcTable, b) }

// dumpString serializes a string value as Redis 7.0's DUMP does with
// rdbcompression off.
func dumpString(s []byte) []byte {
	out := make([]byte, 0, len(s)+1+9+10)
	out = append(out, rdbTypeString)
	out = appendRDBString(out, s)
	out = binary.LittleEndian.AppendUint16(out, rdbVersion)
	return binary.LittleEndian.AppendUint64(out, dumpCRC(out))
}

// appendRDBString appends s as rdbSaveRawString stores it without
// compression: a decimal integer written as ll2string would write it and
// fitting 32 bits as an integer encoding, anything else as its length
// and bytes.
func appendRDBString(dst, s []byte) []byte {
	if len(s) <= 11 {
		if n, err := strconv.ParseInt(string(s), 10, 64); err == nil &&
			strconv.FormatInt(n, 10) == string(s) && n >= math.MinInt32 && n <= math.MaxInt32 {
			const enc = 3 << 6 // the encoded-value prefix
			switch {
			case n >= math.MinInt8 && n <= math.MaxInt8:
				return append(dst, enc|rdbEncInt8, byte(n))
			case n >= math.MinInt16 && n <= math.MaxInt16:
				return binary.LittleEndian.AppendUint16(append(dst, enc|rdbEncInt16), uint16(n))
			default:
				return binary.LittleEndian.AppendUint32(append(dst, enc|rdbEncInt32), uint32(n))
			}
		}
	}
	return append(appendRDBLen(dst, uint64(len(s))), s...)
}

// appendRDBLen appends an RDB length: 6 bits, 14 bits, 32 or 64 bits.
func appendRDBLen(dst []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(dst, byte(n))
	case n < 1<<14:
		return append(dst, byte(n>>8)|1<<6, byte(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, rdbLen32), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, rdbLen64), n)
}

// restoreString reads a DUMP payload holding a string, as Redis 7.0's
// RESTORE does: ErrDumpPayload when the version is newer than Redis 7.0's
// or the checksum is wrong, ErrBadData when the object is not a string or
// is malformed. The string may share p's memory.
func restoreString(p []byte) ([]byte, error) {
	v, err := restoreSetOrString(p, DefaultSetMaxIntsetEntries)
	if err == nil && v.Kind != store.KindString {
		return nil, ErrBadData
	}
	return v.Data, err
}

// checkPayload checks a DUMP payload's footer as Redis 7.0's RESTORE
// does: ErrDumpPayload when the version is newer than Redis 7.0's or the
// checksum is wrong.
func checkPayload(p []byte) error {
	if len(p) < 10 {
		return ErrDumpPayload
	}
	footer := p[len(p)-10:]
	if binary.LittleEndian.Uint16(footer) > rdbVersion ||
		binary.LittleEndian.Uint64(footer[2:]) != dumpCRC(p[:len(p)-8]) {
		return ErrDumpPayload
	}
	return nil
}

// readRDBString reads one RDB string from the start of b and returns it
// with the rest of b.
func readRDBString(b []byte) (s, rest []byte, err error) {
	n, encoded, b, ok := readRDBLen(b)
	if !ok {
		return nil, nil, ErrBadData
	}
	if !encoded {
		if n > uint64(len(b)) {
			return nil, nil, ErrBadData
		}
		return b[:n], b[n:], nil
	}
	var v int64
	switch n {
	case rdbEncInt8:
		if len(b) < 1 {
			return nil, nil, ErrBadData
		}
		v, b = int64(int8(b[0])), b[1:]
	case rdbEncInt16:
		if len(b) < 2 {
			return nil, nil, ErrBadData
		}
		v, b = int64(int16(binary.LittleEndian.Uint16(b))), b[2:]
	case rdbEncInt32:
		if len(b) < 4 {
			return nil, nil, ErrBadData
		}
		v, b = int64(int32(binary.LittleEndian.Uint32(b))), b[4:]
	case rdbEncLZF:
		return readLZF(b)
	default:
		return nil, nil, ErrBadData
	}
	return strconv.AppendInt(nil, v, 10), b, nil
}

// readRDBLen reads an RDB length; encoded reports the encoded-value
// prefix, whose 6 bits name an encoding rather than a length.
func readRDBLen(b []byte) (n uint64, encoded bool, rest []byte, ok bool) {
	if len(b) < 1 {
		return 0, false, nil, false
	}
	c := b[0]
	switch {
	case c>>6 == 0:
		return uint64(c & 0x3f), false, b[1:], true
	case c>>6 == 1:
		if len(b) < 2 {
			return 0, false, nil, false
		}
		return uint64(c&0x3f)<<8 | uint64(b[1]), false, b[2:], true
	case c>>6 == 3:
		return uint64(c & 0x3f), true, b[1:], true
	case c == rdbLen32 && len(b) >= 5:
		return uint64(binary.BigEndian.Uint32(b[1:])), false, b[5:], true
	case c == rdbLen64 && len(b) >= 9:
		n = binary.BigEndian.Uint64(b[1:])
		// All ones is Redis's RDB_LENERR.
		return n, false, b[9:], n != math.MaxUint64
	}
	return 0, false, nil, false
}

// lzfMaxRatio bounds LZF's expansion: a back reference of 3 bytes copies
// at most 264 (7 + 255 + 2).
const lzfMaxRatio = 88

// readLZF reads an LZF-compressed string: its compressed length, its
// length, then the compressed bytes, which must decode to exactly that
// length (Redis's rdbLoadLzfStringObject).
func readLZF(b []byte) (s, rest []byte, err error) {
	// Redis reads both lengths ignoring an encoded-value prefix.
	clen, _, b, ok := readRDBLen(b)
	if !ok {
		return nil, nil, ErrBadData
	}
	ulen, _, b, ok := readRDBLen(b)
	if !ok || clen > uint64(len(b)) {
		return nil, nil, ErrBadData
	}
	in, rest := b[:clen], b[clen:]
	if ulen == 0 {
		// liblzf answers 0 for any input it cannot fit into nothing,
		// which Redis takes for the 0 bytes it expected.
		return []byte{}, rest, nil
	}
	if clen == 0 || ulen > clen*lzfMaxRatio {
		return nil, nil, ErrBadData
	}
	if ulen > store.MaxValueLen {
		return nil, nil, fmt.Errorf("restore: %d bytes: %w", ulen, store.ErrValueTooLong)
	}
	out := make([]byte, ulen)
	if lzfDecompress(in, out) != len(out) {
		return nil, nil, ErrBadData
	}
	return out, rest, nil
}

// lzfDecompress decodes the LZF data in into out and returns how many
// bytes it wrote, or 0 when in is malformed or does not fit out, as
// liblzf's lzf_decompress does. in is not empty.
//
// The format: a control byte c below 32 is followed by c+1 literal bytes;
// any other is a back reference, of length c>>5 (7 meaning 7 plus the
// next byte) plus 2, to the byte (c&31)<<8 + the next byte + 1 behind
// the end of the output so far; the copy may overlap itself.
func lzfDecompress(in, out []byte) int {
	ip, op := 0, 0
	for ip < len(in) {
		c := int(in[ip])
		ip++
		if c < 32 {
			n := c + 1
			if op+n > len(out) || ip+n > len(in) {
				return 0
			}
			op += copy(out[op:], in[ip:ip+n])
			ip += n
			continue
		}
		n := c >> 5
		ref := op - (c&0x1f)<<8 - 1
		if ip >= len(in) {
			return 0
		}
		if n == 7 {
			n += int(in[ip])
			ip++
			if ip >= len(in) {
				return 0
			}
		}
		ref -= int(in[ip])
		ip++
		n += 2
		if op+n > len(out) || ref < 0 {
			return 0
		}
		for ; n > 0; n-- {
			out[op] = out[ref]
			op++
			ref++
		}
	}
	return op
}

// restoreOpts are RESTORE's options after the payload. IDLETIME and FREQ
// are checked as Redis checks them and then ignored: keys here have no
// LRU clock or LFU counter (OBJECT is not supported).
type restoreOpts struct {
	replace, absTTL bool
}

// parseRestoreOpts parses RESTORE's options in Redis's order of checks:
// IDLETIME and FREQ exclude each other, their values are checked where
// they stand.
func parseRestoreOpts(args [][]byte) (restoreOpts, error) {
	var o restoreOpts
	idle, freq := false, false
	for j := 0; j < len(args); j++ {
		more := j+1 < len(args)
		switch a := args[j]; {
		case eq(a, "replace"):
			o.replace = true
		case eq(a, "absttl"):
			o.absTTL = true
		case eq(a, "idletime") && more && !freq:
			n, ok := parseInt(args[j+1])
			if !ok {
				return o, ErrNotInteger
			}
			if n < 0 {
				return o, errorf("ERR Invalid IDLETIME value, must be >= 0")
			}
			idle = true
			j++
		case eq(a, "freq") && more && !idle:
			n, ok := parseInt(args[j+1])
			if !ok {
				return o, ErrNotInteger
			}
			if n < 0 || n > 255 {
				return o, errorf("ERR Invalid FREQ value, must be >= 0 and <= 255")
			}
			freq = true
			j++
		default:
			return o, ErrSyntax
		}
	}
	return o, nil
}

func dumpCmd(x *Ctx) {
	v, found, err := x.lookup(x.Args[1])
	switch {
	case err != nil:
		x.Fail(err)
	case !found:
		x.W.Null()
	case v.Kind == store.KindHash:
		r, err := x.openHash(x.Args[1], false)
		if err != nil {
			x.Fail(err)
			return
		}
		pairs, err := r.pairs()
		if err != nil {
			x.Fail(err)
			return
		}
		x.W.Bulk(dumpHash(hashcodec.Hash{Table: r.isObj() || r.h.Table, Pairs: pairs}))
	case v.Kind == store.KindList:
		r, err := listFrom(x.Tx, x.DB, x.Args[1], v)
		if err != nil {
			x.Fail(err)
			return
		}
		elems, err := r.all()
		if err != nil {
			x.Fail(err)
			return
		}
		p, err := dumpList(elems)
		if err != nil {
			x.Fail(err)
			return
		}
		x.W.Bulk(p)
	case v.Kind == store.KindSet:
		r, err := x.setOf(x.DB, x.Args[1], v, true)
		if err != nil {
			x.Fail(err)
			return
		}
		ms, err := r.members()
		if err != nil {
			x.Fail(err)
			return
		}
		x.W.Bulk(dumpSet(&setVal{intset: r.intset(), m: ms}))
	case v.Kind == store.KindZSet:
		r, err := x.zsetOf(x.DB, x.Args[1], v, true)
		if err != nil {
			x.Fail(err)
			return
		}
		z, err := r.view()
		if err != nil {
			x.Fail(err)
			return
		}
		x.W.Bulk(dumpZset(z))
	case v.Kind != store.KindString:
		x.Fail(ErrDumpOnce)
	default:
		x.W.Bulk(dumpString(v.Data))
	}
}

// restoreCmd checks as Redis 7.0's restoreCommand does, in its order: the
// options, an existing key (without REPLACE), the TTL, the payload.
func restoreCmd(x *Ctx) {
	o, err := parseRestoreOpts(x.Args[4:])
	if err != nil {
		x.Fail(err)
		return
	}
	key := x.Args[1]
	_, found, err := x.Tx.Get(x.DB, key)
	if err != nil {
		x.Fail(err)
		return
	}
	if found && !o.replace {
		x.Fail(ErrBusyKey)
		return
	}
	ttl, ok := x.intArg(2)
	if !ok {
		return
	}
	if ttl < 0 {
		x.Fail(errorf("ERR Invalid TTL value, must be >= 0"))
		return
	}
	val, err := x.restoreValue(x.Args[3])
	if err != nil {
		x.Fail(err)
		return
	}
	at := ttl
	if ttl != 0 && !o.absTTL {
		// Wraps around near the maximum, as Redis's ttl+mstime() does:
		// the deadline is then past.
		at = ttl + x.Now()
	}
	if at != 0 && at <= x.Now() {
		// A deadline already past: REPLACE still removed the old key,
		// and nothing is created (Redis 7.0).
		if found {
			if _, err := x.Tx.Delete(x.DB, key); err != nil {
				x.Fail(err)
				return
			}
		}
		x.W.OK()
		return
	}
	val.ExpireAt = at
	if err := x.restoreAt(key, val); err != nil {
		x.Fail(err)
		return
	}
	x.W.OK()
}

// restoreAt stores RESTORE's value at key: a hashtable-encoded hash or
// set as an object (hashobj.go, setobj.go), a list past the inline limits
// as an object (listobj.go), anything else as it is.
func (x *Ctx) restoreAt(key []byte, v store.Value) error {
	switch v.Kind {
	case store.KindList:
		if v.Obj == 0 {
			elems, err := listenc.Decode(v.Data)
			if err != nil {
				return err
			}
			r := listRef{tx: x.Tx, db: x.DB, key: key, v: v, found: true, elems: elems}
			return r.save()
		}
	case store.KindHash:
		if h, err := hashcodec.Decode(v.Data); err == nil && h.Table {
			r := hashRef{x: x, key: key, v: v, found: true, h: h}
			return r.save()
		}
	case store.KindSet:
		if s, err := decodeSet(v.Data); err == nil && !s.intset {
			return x.putSet(x.DB, key, &s, v.ExpireAt)
		}
	case store.KindZSet:
		if z, err := zcodec.Decode(v.Data); err == nil && z.Encoding() == zcodec.Skiplist {
			return x.zput(x.DB, key, zcodec.Skiplist, z.Entries(), v.ExpireAt)
		}
	}
	return x.Tx.Set(x.DB, key, v)
}

// restoreSetOrString reads a DUMP payload holding a string or a set, as Redis
// 7.0's RESTORE does (restoreString, restoreSet).
func restoreSetOrString(p []byte, maxIntset int) (store.Value, error) {
	if err := checkPayload(p); err != nil {
		return store.Value{}, err
	}
	if p[0] == rdbTypeSet || p[0] == rdbTypeIntset {
		s, err := restoreSet(p, maxIntset)
		if err != nil {
			return store.Value{}, err
		}
		return store.Value{Kind: store.KindSet, Data: s.encode(nil)}, nil
	}
	// Redis reads the object from the whole payload, footer included: a
	// string that runs into the footer is read, and bytes left between
	// the object and the footer are ignored.
	if p[0] != rdbTypeString {
		return store.Value{}, ErrBadData
	}
	data, _, err := readRDBString(p[1:])
	return store.Value{Kind: store.KindString, Data: data}, err
}

// DUMP and RESTORE of sets. DUMP writes an intset as Redis 7.0 does (RDB
// type 11: one string holding the intset, its integers in the narrowest
// of 16, 32 or 64 bits that holds them all, little endian, in numeric
// order; uncompressed, as with `rdbcompression no`) and a hashtable as
// RDB type 2 (its size, then each member as an RDB string), its members
// in byte order where Redis writes its hash table's. RESTORE reads both,
// building the set as Redis 7.0's rdbLoadObject does: a type 2 payload
// of more than set-max-intset-entries members is a hashtable, one of
// fewer an intset while its members are integers; an intset of more
// than set-max-intset-entries members becomes a hashtable. An empty set,
// a duplicate member of a type 2 payload and a malformed intset answer
// ErrBadData, as Redis's. Redis 7.0 loads an intset whose integers are
// out of order or repeated as it is (sanitize-dump-payload no); here it
// is sorted and its duplicates dropped.

// Redis's intset encodings: the width of its integers in bytes.
const (
	intsetEnc16 = 2
	intsetEnc32 = 4
	intsetEnc64 = 8
)

// dumpSet serializes a set as Redis 7.0's DUMP does with rdbcompression
// off.
func dumpSet(s *setVal) []byte {
	var out []byte
	if s.intset {
		ns := s.intMembers()
		enc := intsetEnc16
		for _, n := range ns {
			switch {
			case n < math.MinInt32 || n > math.MaxInt32:
				enc = intsetEnc64
			case (n < math.MinInt16 || n > math.MaxInt16) && enc < intsetEnc32:
				enc = intsetEnc32
			}
		}
		blob := make([]byte, 0, 8+enc*len(ns))
		blob = binary.LittleEndian.AppendUint32(blob, uint32(enc))
		blob = binary.LittleEndian.AppendUint32(blob, uint32(len(ns)))
		for _, n := range ns {
			switch enc {
			case intsetEnc16:
				blob = binary.LittleEndian.AppendUint16(blob, uint16(n))
			case intsetEnc32:
				blob = binary.LittleEndian.AppendUint32(blob, uint32(n))
			default:
				blob = binary.LittleEndian.AppendUint64(blob, uint64(n))
			}
		}
		out = appendRDBString(append(out, rdbTypeIntset), blob)
	} else {
		out = appendRDBLen(append(out, rdbTypeSet), uint64(len(s.m)))
		for _, m := range s.m {
			out = appendRDBString(out, m)
		}
	}
	out = binary.LittleEndian.AppendUint16(out, rdbVersion)
	return binary.LittleEndian.AppendUint64(out, dumpCRC(out))
}

// restoreSet reads the set of a payload whose footer checked out and
// whose type is rdbTypeSet or rdbTypeIntset.
func restoreSet(p []byte, maxIntset int) (setVal, error) {
	b := p[1:]
	if p[0] == rdbTypeIntset {
		blob, _, err := readRDBString(b)
		if err != nil {
			return setVal{}, err
		}
		return readIntset(blob, maxIntset)
	}
	n, encoded, b, ok := readRDBLen(b)
	if !ok || encoded || n == 0 || n > uint64(len(b)) {
		// Each member takes a byte at least: a longer count is a lie.
		return setVal{}, ErrBadData
	}
	ms := make([][]byte, 0, n)
	for i := uint64(0); i < n; i++ {
		var m []byte
		var err error
		if m, b, err = readRDBString(b); err != nil {
			return setVal{}, err
		}
		ms = append(ms, m)
	}
	s := buildSet(ms, maxIntset)
	if len(s.m) != len(ms) {
		return setVal{}, ErrBadData // Redis: "Duplicate set members detected"
	}
	if uint64(len(s.m)) > uint64(maxIntset) && s.intset {
		s.toHashtable()
	}
	return s, nil
}

// readIntset reads Redis's intset: its encoding and length (32 bits
// each, little endian), then its integers.
func readIntset(blob []byte, maxIntset int) (setVal, error) {
	if len(blob) < 8 {
		return setVal{}, ErrBadData
	}
	enc := binary.LittleEndian.Uint32(blob)
	n := uint64(binary.LittleEndian.Uint32(blob[4:]))
	if (enc != intsetEnc16 && enc != intsetEnc32 && enc != intsetEnc64) ||
		n == 0 || 8+n*uint64(enc) != uint64(len(blob)) {
		return setVal{}, ErrBadData
	}
	ms := make([][]byte, n)
	for i := range ms {
		b := blob[8+i*int(enc):]
		var v int64
		switch enc {
		case intsetEnc16:
			v = int64(int16(binary.LittleEndian.Uint16(b)))
		case intsetEnc32:
			v = int64(int32(binary.LittleEndian.Uint32(b)))
		default:
			v = int64(binary.LittleEndian.Uint64(b))
		}
		ms[i] = strconv.AppendInt(nil, v, 10)
	}
	s := setVal{intset: true, m: ms}
	s.sortUnique()
	if len(s.m) > maxIntset {
		s.toHashtable()
	}
	return s, nil
}
