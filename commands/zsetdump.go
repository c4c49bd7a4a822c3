package commands

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/oncekv/oncekv/internal/hashcodec"
	"github.com/oncekv/oncekv/internal/zcodec"
)

// DUMP and RESTORE of sorted sets, in Redis 7.0's serialization.
//
// DUMP writes what redis-server 7.0 writes with rdbcompression off: a
// listpack-encoded set as RDB type 17, the listpack Redis holds (member,
// score, member, score… in the set's order, each score as zzlInsertAt
// writes it: d2string's text, stored as a listpack integer when it is
// one); a skiplist-encoded set as type 5, its length, then each member
// as an RDB string and its score as a little-endian binary double, from
// the greatest to the smallest, as Redis walks its skiplist from the tail.
//
// RESTORE reads those two and the types older Redis versions wrote,
// ziplist (12) and type 3 (scores as text), choosing the encoding as
// Redis 7.0's rdbLoadObject does: a listpack or ziplist stays one unless
// it has more members than zset-max-listpack-entries (its members'
// lengths are not looked at); a type 5 or 3 set becomes a listpack when
// both limits hold, its -0 scores then 0. An empty set, a member twice, a
// NaN score or anything malformed answers -ERR Bad data format. Redis
// checks a listpack's header only (unless sanitize-dump-payload is on):
// here every entry is read, a member twice is refused, and entries out
// of order are sorted; a score that is not a number reads as strtod reads
// it, as Redis's zzlGetScore does.

// RDB object types of a sorted set (rdb.h).
const (
	rdbTypeZset         = 3
	rdbTypeZset2        = 5
	rdbTypeZsetZiplist  = 12
	rdbTypeZsetListpack = 17
)

// Limits of Redis's encodings: LISTPACK_MAX_SAFETY_SIZE, past which no
// set becomes a listpack, and the bytes zzlStrtod reads of a score.
const (
	listpackSafetySize = 1 << 30
	zzlScoreMax        = 127
)

// dumpZset serializes z as Redis 7.0's DUMP does with rdbcompression off.
func dumpZset(z zcodec.View) []byte {
	var out []byte
	if z.Encoding() == zcodec.Listpack {
		// A listpack of pairs, as a hash's: the score is the pair's value.
		pairs := make([]hashcodec.Pair, z.Len())
		for i := range pairs {
			e := z.At(i)
			pairs[i] = hashcodec.Pair{Field: e.Member, Value: []byte(scanScore(e.Score))}
		}
		lp := listpackOf(pairs)
		out = append(out, rdbTypeZsetListpack)
		out = append(appendRDBLen(out, uint64(len(lp))), lp...)
	} else {
		out = appendRDBLen(append(out, rdbTypeZset2), uint64(z.Len()))
		for i := z.Len() - 1; i >= 0; i-- {
			e := z.At(i)
			out = appendRDBString(out, e.Member)
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(e.Score))
		}
	}
	out = binary.LittleEndian.AppendUint16(out, rdbVersion)
	return binary.LittleEndian.AppendUint64(out, dumpCRC(out))
}

// restoreZset reads the object of a sorted-set payload of type typ
// (after its type byte) into a zcodec encoding, under the limits
// zset-max-listpack-entries and -value.
func restoreZset(typ byte, b []byte, maxEntries, maxValue int64) ([]byte, error) {
	var entries []zcodec.Entry
	var err error
	switch typ {
	case rdbTypeZsetListpack, rdbTypeZsetZiplist:
		if entries, err = readPackedZset(typ, b); err != nil {
			return nil, err
		}
		enc := zcodec.Listpack
		if int64(len(entries)) > maxEntries {
			enc = zcodec.Skiplist
		}
		// Scores are kept as read, a "-0" too: Redis keeps the
		// listpack's text, which reads back as -0.
		return zcodec.Encode(enc, entries), nil
	case rdbTypeZset2, rdbTypeZset:
		if entries, err = readZsetPairs(typ, b); err != nil {
			return nil, err
		}
	default:
		return nil, ErrBadData
	}
	// Redis loads a skiplist, then converts it when it fits a listpack
	// (the members' lengths as loaded: an integer-encoded one by its
	// digits).
	enc := zcodec.Listpack
	total := 0
	for _, e := range entries {
		total += len(e.Member)
		if int64(len(e.Member)) > maxValue {
			enc = zcodec.Skiplist
		}
	}
	if int64(len(entries)) > maxEntries || total > listpackSafetySize {
		enc = zcodec.Skiplist
	}
	if enc == zcodec.Listpack {
		for i := range entries {
			if entries[i].Score == 0 {
				entries[i].Score = 0 // -0: zzlInsertAt writes it as the integer 0
			}
		}
	}
	return zcodec.Encode(enc, entries), nil
}

// readPackedZset reads a listpack (type 17) or ziplist (type 12) of
// member, score pairs into sorted entries.
func readPackedZset(typ byte, b []byte) ([]zcodec.Entry, error) {
	blob, _, err := readRDBString(b)
	if err != nil {
		return nil, err
	}
	// Listpacks and ziplists are read as hashes' are (dump_hash.go).
	var strs [][]byte
	var ok bool
	if typ == rdbTypeZsetListpack {
		strs, ok = parseListpack(blob)
	} else {
		strs, ok = parseZiplist(blob)
	}
	if !ok || len(strs) == 0 || len(strs)%2 != 0 {
		return nil, ErrBadData
	}
	entries := make([]zcodec.Entry, 0, len(strs)/2)
	for i := 0; i < len(strs); i += 2 {
		s := strs[i+1]
		if len(s) > zzlScoreMax {
			s = s[:zzlScoreMax]
		}
		// zzlGetScore's strtod: no number reads as 0.
		score, _ := scanDouble(s)
		if math.IsNaN(score) {
			return nil, ErrBadData
		}
		entries = append(entries, zcodec.Entry{Member: strs[i], Score: score})
	}
	return sortUniqueEntries(entries)
}

// readZsetPairs reads a type 5 or type 3 set: its length, then each
// member as an RDB string and its score, binary (5) or as text (3).
func readZsetPairs(typ byte, b []byte) ([]zcodec.Entry, error) {
	n, encoded, b, ok := readRDBLen(b)
	if !ok || encoded || n == 0 || n > uint64(len(b)) {
		// Each member takes two bytes at least: a longer count is a lie.
		return nil, ErrBadData
	}
	entries := make([]zcodec.Entry, 0, n)
	for ; n > 0; n-- {
		var m []byte
		var err error
		if m, b, err = readRDBString(b); err != nil {
			return nil, err
		}
		var score float64
		if typ == rdbTypeZset2 {
			if len(b) < 8 {
				return nil, ErrBadData
			}
			score, b = math.Float64frombits(binary.LittleEndian.Uint64(b)), b[8:]
		} else if score, b, ok = readRDBDouble(b); !ok {
			return nil, ErrBadData
		}
		if math.IsNaN(score) {
			return nil, ErrBadData // Redis: "Zset with NAN score detected"
		}
		entries = append(entries, zcodec.Entry{Member: m, Score: score})
	}
	return sortUniqueEntries(entries)
}

// readRDBDouble reads a score of type 3 as rdbLoadDoubleValue does: a
// length byte (253 NaN, 254 +inf, 255 -inf), then that many bytes of
// text that sscanf's %lg takes a number from.
func readRDBDouble(b []byte) (float64, []byte, bool) {
	if len(b) == 0 {
		return 0, nil, false
	}
	n := int(b[0])
	b = b[1:]
	switch n {
	case 253:
		return math.NaN(), b, true
	case 254:
		return math.Inf(1), b, true
	case 255:
		return math.Inf(-1), b, true
	}
	if n > len(b) {
		return 0, nil, false
	}
	f, ok := scanDouble(b[:n])
	return f, b[n:], ok
}

// sortUniqueEntries sorts entries as the set orders them; a member twice
// is ErrBadData (Redis: "Duplicate zset fields detected").
func sortUniqueEntries(entries []zcodec.Entry) ([]zcodec.Entry, error) {
	seen := make(map[string]struct{}, len(entries))
	for _, e := range entries {
		if _, dup := seen[string(e.Member)]; dup {
			return nil, ErrBadData
		}
		seen[string(e.Member)] = struct{}{}
	}
	slices.SortFunc(entries, zcodec.Compare)
	return entries, nil
}
