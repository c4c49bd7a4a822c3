package commands

import (
	"encoding/binary"
	"math"

	"github.com/oncekv/oncekv/internal/listenc"
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
		}
		// Listpacks and ziplists are read as hashes' are (dump_hash.go).
		var node [][]byte
		if t == rdbTypeQuicklist2 {
			node, ok = parseListpack(s)
		} else {
			node, ok = parseZiplist(s)
		}
		if !ok {
			return nil, ErrBadData
		}
		elems = append(elems, node...)
	}
	if len(elems) == 0 {
		return nil, ErrBadData
	}
	return listenc.Append(nil, elems), nil
}

// dumpList serializes a list as Redis 7.0's DUMP does with its default
// list-max-listpack-size and rdbcompression no, for a list built by
// RPUSH (see above); elems are the list's, from the head.
func dumpList(elems [][]byte) ([]byte, error) {
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
		node = appendLPEntry(node, e)
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
