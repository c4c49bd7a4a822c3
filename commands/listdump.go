package commands

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/oncekv/oncekv/internal/listenc"
	"github.com/oncekv/oncekv/store"
)

// DUMP and RESTORE of lists, in Redis 7.0's serialization.
//
// RESTORE reads the three list types a Redis server up to 7.0 dumps: a
// quicklist of listpacks (RDB type 18, Redis 7.0; plain nodes too), a
// quicklist of ziplists (type 14, Redis 3.2 to 6.2), and the plain list
// (type 1), every node possibly LZF-compressed. Redis checks a node only
// shallowly unless sanitize-dump-payload is on; here every entry is
// decoded, so a node Redis would take with broken entries is refused with
// -ERR Bad data format, as is a list with no element.
//
// DUMP writes type 18 as redis-server 7.0 does with its defaults
// (list-max-listpack-size -2: nodes of at most 8 KiB) for a list built by
// RPUSH alone, with rdbcompression no: its nodes are split where Redis
// splits them as the elements come one by one at the tail. A list Redis
// built otherwise (LPUSH, LINSERT, pops) may be split elsewhere there;
// both payloads hold the same elements, and each server restores the
// other's.

// RDB object types of a list, and the containers of a quicklist-2 node.
const (
	rdbTypeList        = 1
	rdbTypeQuicklist   = 14
	rdbTypeQuicklist2  = 18
	qlContainerPlain   = 1
	qlContainerPacked  = 2
	listpackNodeLimit  = 8192 // list-max-listpack-size -2
	quicklistOverhead  = 8    // SIZE_ESTIMATE_OVERHEAD
	listpackHeaderSize = 6
)

// restoreList reads the list object of a DUMP payload after its type
// byte t; it answers ErrBadData for anything malformed or empty.
func restoreList(t byte, b []byte) ([]byte, error) {
	n, enc, b, ok := readRDBLen(b)
	if !ok || enc || n == 0 {
		return nil, ErrBadData
	}
	var elems [][]byte
	for ; n > 0; n-- {
		container := uint64(qlContainerPacked)
		if t == rdbTypeQuicklist2 {
			if container, enc, b, ok = readRDBLen(b); !ok || enc ||
				(container != qlContainerPlain && container != qlContainerPacked) {
				return nil, ErrBadData
			}
		}
		var s []byte
		var err error
		if s, b, err = readRDBString(b); err != nil {
			return nil, err
		}
		switch {
		case t == rdbTypeList || container == qlContainerPlain:
			elems = append(elems, s)
			continue
		case len(s) == 0:
			return nil, ErrBadData
		case t == rdbTypeQuicklist2:
			elems, err = listpackEntries(elems, s)
		default:
			elems, err = ziplistEntries(elems, s)
		}
		if err != nil {
			return nil, err
		}
	}
	if len(elems) == 0 {
		return nil, ErrBadData
	}
	return listenc.Append(nil, elems), nil
}

// listpackEntries appends the elements of listpack lp to out.
func listpackEntries(out [][]byte, lp []byte) ([][]byte, error) {
	if len(lp) < listpackHeaderSize+1 || int(binary.LittleEndian.Uint32(lp)) != len(lp) || lp[len(lp)-1] != 0xff {
		return nil, ErrBadData
	}
	p, end := listpackHeaderSize, len(lp)-1
	need := func(n int) bool { return p+n <= end }
	for p < end {
		c := lp[p]
		var elem []byte
		var size int // the entry's encoding and data, without its back length
		var num int64
		isNum := true
		switch {
		case c&0x80 == 0:
			num, size = int64(c), 1
		case c&0xc0 == 0x80:
			size = 1 + int(c&0x3f)
			if !need(size) {
				return nil, ErrBadData
			}
			elem, isNum = lp[p+1:p+size], false
		case c&0xe0 == 0xc0:
			if !need(2) {
				return nil, ErrBadData
			}
			num, size = int64(c&0x1f)<<8|int64(lp[p+1]), 2
			if num >= 1<<12 {
				num -= 1 << 13
			}
		case c&0xf0 == 0xe0:
			if !need(2) {
				return nil, ErrBadData
			}
			size = 2 + (int(c&0x0f)<<8 | int(lp[p+1]))
			if !need(size) {
				return nil, ErrBadData
			}
			elem, isNum = lp[p+2:p+size], false
		case c == 0xf0:
			if !need(5) {
				return nil, ErrBadData
			}
			l := uint64(binary.LittleEndian.Uint32(lp[p+1:]))
			if l > uint64(end-p-5) {
				return nil, ErrBadData
			}
			size = 5 + int(l)
			elem, isNum = lp[p+5:p+size], false
		case c >= 0xf1 && c <= 0xf4:
			w := [...]int{2, 3, 4, 8}[c-0xf1]
			size = 1 + w
			if !need(size) {
				return nil, ErrBadData
			}
			var u uint64
			for i := w - 1; i >= 0; i-- {
				u = u<<8 | uint64(lp[p+1+i])
			}
			num = int64(u<<(64-8*w)) >> (64 - 8*w) // sign-extended
		default:
			return nil, ErrBadData
		}
		if isNum {
			elem = strconv.AppendInt(nil, num, 10)
		}
		out = append(out, elem)
		p += size + backlenSize(size)
		if p > end {
			return nil, ErrBadData
		}
	}
	return out, nil
}

// backlenSize is the size of a listpack entry's back length for an entry
// of size bytes (lpEncodeBacklen).
func backlenSize(size int) int {
	switch {
	case size <= 127:
		return 1
	case size < 16383:
		return 2
	case size < 2097151:
		return 3
	case size < 268435455:
		return 4
	}
	return 5
}

// ziplistEntries appends the elements of ziplist zl to out.
func ziplistEntries(out [][]byte, zl []byte) ([][]byte, error) {
	const header = 10
	if len(zl) < header+1 || int(binary.LittleEndian.Uint32(zl)) != len(zl) || zl[len(zl)-1] != 0xff {
		return nil, ErrBadData
	}
	p, end := header, len(zl)-1
	for p < end {
		// The previous entry's length: one byte, or 0xfe and four.
		if zl[p] == 0xfe {
			p += 5
		} else {
			p++
		}
		if p >= end {
			return nil, ErrBadData
		}
		c := zl[p]
		var elem []byte
		var num int64
		isNum := true
		n := 0 // bytes of data after the encoding
		switch c >> 6 {
		case 0:
			n, isNum = int(c&0x3f), false
			p++
		case 1:
			if p+2 > end {
				return nil, ErrBadData
			}
			n, isNum = int(c&0x3f)<<8|int(zl[p+1]), false
			p += 2
		case 2:
			if p+5 > end {
				return nil, ErrBadData
			}
			n, isNum = int(binary.BigEndian.Uint32(zl[p+1:])), false
			p += 5
		default:
			p++
			w := 0
			switch c {
			case 0xc0:
				w = 2
			case 0xd0:
				w = 4
			case 0xe0:
				w = 8
			case 0xf0:
				w = 3
			case 0xfe:
				w = 1
			default:
				if c < 0xf1 || c > 0xfd {
					return nil, ErrBadData
				}
				num = int64(c&0x0f) - 1
			}
			if p+w > end {
				return nil, ErrBadData
			}
			if w > 0 {
				var u uint64
				for i := w - 1; i >= 0; i-- {
					u = u<<8 | uint64(zl[p+i])
				}
				num = int64(u<<(64-8*w)) >> (64 - 8*w)
				p += w
			}
		}
		if !isNum {
			if n < 0 || n > end-p {
				return nil, ErrBadData
			}
			elem = zl[p : p+n]
			p += n
		} else {
			elem = strconv.AppendInt(nil, num, 10)
		}
		out = append(out, elem)
	}
	return out, nil
}

// dumpList serializes a list as Redis 7.0's DUMP does with its default
// list-max-listpack-size and rdbcompression no, for a list built by
// RPUSH (see above).
func dumpList(data []byte) ([]byte, error) {
	elems, err := listenc.Decode(data)
	if err != nil {
		return nil, err
	}
	var nodes [][]byte
	var node []byte
	count := 0
	flush := func() {
		if node == nil {
			return
		}
		binary.LittleEndian.PutUint32(node, uint32(len(node)+1))
		binary.LittleEndian.PutUint16(node[4:], uint16(min(count, math.MaxUint16)))
		nodes = append(nodes, append(node, 0xff))
		node, count = nil, 0
	}
	for _, e := range elems {
		// _quicklistNodeAllowInsert: the node's bytes, the element's
		// and an estimate of its overhead within 8 KiB.
		if node == nil || len(node)+1+len(e)+quicklistOverhead > listpackNodeLimit {
			flush()
			node = make([]byte, listpackHeaderSize, 64)
		}
		node = appendListpackEntry(node, e)
		count++
	}
	flush()
	out := []byte{rdbTypeQuicklist2}
	out = appendRDBLen(out, uint64(len(nodes)))
	for _, n := range nodes {
		out = appendRDBLen(out, qlContainerPacked)
		out = append(appendRDBLen(out, uint64(len(n))), n...)
	}
	out = binary.LittleEndian.AppendUint16(out, rdbVersion)
	return binary.LittleEndian.AppendUint64(out, dumpCRC(out)), nil
}

// appendListpackEntry appends e as listpack's lpAppend encodes it: an
// integer in the smallest integer encoding, else a string, then the back
// length.
func appendListpackEntry(dst, e []byte) []byte {
	start := len(dst)
	if n, ok := parseInt(e); ok && len(e) <= 20 {
		switch {
		case n >= 0 && n <= 127:
			dst = append(dst, byte(n))
		case n >= -4096 && n <= 4095:
			u := uint64(n) & 0x1fff
			dst = append(dst, 0xc0|byte(u>>8), byte(u))
		case n >= math.MinInt16 && n <= math.MaxInt16:
			dst = binary.LittleEndian.AppendUint16(append(dst, 0xf1), uint16(n))
		case n >= -1<<23 && n < 1<<23:
			u := uint32(n)
			dst = append(dst, 0xf2, byte(u), byte(u>>8), byte(u>>16))
		case n >= math.MinInt32 && n <= math.MaxInt32:
			dst = binary.LittleEndian.AppendUint32(append(dst, 0xf3), uint32(n))
		default:
			dst = binary.LittleEndian.AppendUint64(append(dst, 0xf4), uint64(n))
		}
	} else {
		switch l := len(e); {
		case l < 64:
			dst = append(dst, 0x80|byte(l))
		case l < 4096:
			dst = append(dst, 0xe0|byte(l>>8), byte(l))
		default:
			dst = binary.LittleEndian.AppendUint32(append(dst, 0xf0), uint32(l))
		}
		dst = append(dst, e...)
	}
	return appendBacklen(dst, len(dst)-start)
}

// appendBacklen appends a listpack entry's back length (lpEncodeBacklen).
func appendBacklen(dst []byte, l int) []byte {
	switch backlenSize(l) {
	case 1:
		return append(dst, byte(l))
	case 2:
		return append(dst, byte(l>>7), byte(l&127)|128)
	case 3:
		return append(dst, byte(l>>14), byte((l>>7)&127)|128, byte(l&127)|128)
	case 4:
		return append(dst, byte(l>>21), byte((l>>14)&127)|128, byte((l>>7)&127)|128, byte(l&127)|128)
	}
	return append(dst, byte(l>>28), byte((l>>21)&127)|128, byte((l>>14)&127)|128, byte((l>>7)&127)|128, byte(l&127)|128)
}

// restoreValue reads a DUMP payload as Redis 7.0's RESTORE does: a
// string or a list. ErrDumpPayload when the version is newer than Redis
// 7.0's or the checksum is wrong, ErrBadData when the object is of
// another type or malformed. The value may share p's memory.
func restoreValue(p []byte) (store.Value, error) {
	if len(p) >= 10 {
		switch p[0] {
		case rdbTypeList, rdbTypeQuicklist, rdbTypeQuicklist2:
			if _, err := restoreString(p); err != nil && err != ErrBadData {
				return store.Value{}, err // the footer's checks
			}
			data, err := restoreList(p[0], p[1:])
			if err != nil {
				return store.Value{}, err
			}
			return store.Value{Kind: store.KindList, Data: data}, nil
		}
	}
	s, err := restoreString(p)
	return store.Value{Kind: store.KindString, Data: s}, err
}
