package commands

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/oncekv/oncekv/internal/hashcodec"
)

func hpairs(kv ...string) []hashcodec.Pair {
	var out []hashcodec.Pair
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, hashcodec.Pair{Field: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	return out
}

// redisHashDump is what redis-server 7.0 (rdbcompression no) answered to
// DUMP a after HSET a f 1 g -5 n 300 m -70000 x 9000000 y 3000000000
// z 9223372036854775807 s hello e "": every listpack integer encoding.
const redisHashDump = "\x10@RR\x00\x00\x00\x12\x00\x81f\x02\x01\x01\x81g\x02\xdf\xfb\x02\x81n\x02\xc1,\x02\x81m\x02\xf2\x90\xee\xfe\x04\x81x\x02\xf3@T\x89\x00\x05\x81y\x02\xf4\x00^\xd0\xb2\x00\x00\x00\x00\t\x81z\x02\xf4\xff\xff\xff\xff\xff\xff\xff\x7f\t\x81s\x02\x85hello\x06\x81e\x02\x80\x01\xff\n\x00)u\xdd\xdd!\x98\x7fy"

var redisHashPairs = hpairs("f", "1", "g", "-5", "n", "300", "m", "-70000", "x", "9000000",
	"y", "3000000000", "z", "9223372036854775807", "s", "hello", "e", "")

func TestDumpHashIsRedis(t *testing.T) {
	if got := dumpHash(hashcodec.Hash{Pairs: redisHashPairs}); string(got) != redisHashDump {
		t.Fatalf("dumpHash = %q\nwant      %q", got, redisHashDump)
	}
}

func equalPairs(tb testing.TB, got, want []hashcodec.Pair) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("%d pairs, want %d: %q", len(got), len(want), got)
	}
	for i := range got {
		if !bytes.Equal(got[i].Field, want[i].Field) || !bytes.Equal(got[i].Value, want[i].Value) {
			tb.Fatalf("pair %d = %q=%q, want %q=%q", i, got[i].Field, got[i].Value, want[i].Field, want[i].Value)
		}
	}
}

// restoreOf runs restoreHash on a whole payload with Redis's defaults.
func restoreOf(tb testing.TB, p string) (hashcodec.Hash, error) {
	tb.Helper()
	return restoreHash(p[0], []byte(p[1:len(p)-10]), defaultHashMaxEntries, defaultHashMaxValue)
}

func TestRestoreHashRoundTrip(t *testing.T) {
	long := string(bytes.Repeat([]byte("L"), 5000))
	for _, tc := range []struct {
		name string
		h    hashcodec.Hash
	}{
		{"redis's", hashcodec.Hash{Pairs: redisHashPairs}},
		{"edges", hashcodec.Hash{Pairs: hpairs("-4096", "4095", "-4097", "127", "128", "-0", "01", "+1", "-8388608", "8388607", "-8388609", "-9223372036854775808")}},
		{"long strings", hashcodec.Hash{Pairs: hpairs(long, "x", "mid", long[:100])}},
		{"binary", hashcodec.Hash{Pairs: hpairs("\x00\xff", "\r\n", "", "")}},
		{"hashtable", hashcodec.Hash{Table: true, Pairs: hpairs("a", "1", "b", long, "12345678901", "-2147483648")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := restoreOf(t, string(dumpHash(tc.h)))
			if err != nil {
				t.Fatal(err)
			}
			equalPairs(t, h.Pairs, tc.h.Pairs)
			if h.Table != tc.h.Table {
				t.Fatalf("Table = %v, want %v", h.Table, tc.h.Table)
			}
		})
	}
}

// rdbBlob is an RDB object of type typ holding blob as a plain string.
func rdbBlob(typ byte, blob []byte) string {
	return string(append(appendRDBLen([]byte{typ}, uint64(len(blob))), blob...))
}

func TestRestoreHashOlderEncodings(t *testing.T) {
	// A ziplist of f=1 (an immediate integer) and g=hello.
	zl := []byte{0, 0, 0, 0, 18, 0, 0, 0, 4, 0,
		0, 0x01, 'f',
		3, 0xf2,
		2, 0x01, 'g',
		3, 0x05, 'h', 'e', 'l', 'l', 'o',
		0xff}
	binary.LittleEndian.PutUint32(zl, uint32(len(zl)))
	// A zipmap of a=bc with one free byte, and a long value.
	zm := append([]byte{2, 1, 'a', 2, 1, 'b', 'c', 'X', 1, 'z', 70, 0}, bytes.Repeat([]byte("v"), 70)...)
	zm = append(zm, 0xff)
	for _, tc := range []struct {
		name  string
		obj   string
		want  []hashcodec.Pair
		table bool
	}{
		{"ziplist", rdbBlob(rdbTypeHashZiplist, zl), hpairs("f", "1", "g", "hello"), false},
		{"zipmap", rdbBlob(rdbTypeHashZipmap, zm), hpairs("a", "bc", "z", string(bytes.Repeat([]byte("v"), 70))), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := restoreOf(t, dumpPayload(t, tc.obj, rdbVersion))
			if err != nil {
				t.Fatal(err)
			}
			equalPairs(t, h.Pairs, tc.want)
			if h.Table != tc.table {
				t.Fatalf("Table = %v, want %v", h.Table, tc.table)
			}
		})
	}
}

func TestRestoreHashRefuses(t *testing.T) {
	good := listpackOf(hpairs("a", "1"))
	for _, tc := range []struct {
		name string
		obj  string
	}{
		{"empty type 4", "\x04\x00"},
		{"short type 4", "\x04\x02\x01a\x011"},
		{"duplicate field", "\x04\x02\x01a\x011\x01a\x012"},
		{"empty listpack", rdbBlob(rdbTypeHashListpack, listpackOf(nil))},
		{"odd listpack", rdbBlob(rdbTypeHashListpack, []byte("\x0a\x00\x00\x00\x01\x00\x81a\x02\xff"))},
		{"listpack total wrong", rdbBlob(rdbTypeHashListpack, append([]byte{0xff}, good[1:]...))},
		{"listpack backlen wrong", rdbBlob(rdbTypeHashListpack, bytes.Replace(good, []byte("a\x02"), []byte("a\x03"), 1))},
		{"listpack count wrong", rdbBlob(rdbTypeHashListpack, append(append([]byte{}, good[:4]...), append([]byte{3, 0}, good[6:]...)...))},
		{"listpack dup", rdbBlob(rdbTypeHashListpack, listpackOf(hpairs("a", "1", "a", "2")))},
		{"ziplist cut", rdbBlob(rdbTypeHashZiplist, []byte("\x0c\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\xff"))},
		{"zipmap cut", rdbBlob(rdbTypeHashZipmap, []byte{1, 5, 'a'})},
		{"a list", "\x12\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if h, err := restoreOf(t, dumpPayload(t, tc.obj, rdbVersion)); err != ErrBadData {
				t.Fatalf("restoreHash = %+v, %v; want ErrBadData", h, err)
			}
		})
	}
}

// FuzzRestoreHash: no payload panics restoreHash, and what it accepts
// dumps and restores to the same hash.
func FuzzRestoreHash(f *testing.F) {
	f.Add(byte(rdbTypeHashListpack), []byte(redisHashDump[1:len(redisHashDump)-10]))
	f.Add(byte(rdbTypeHash), []byte("\x02\x01a\x011\x01b\xc0\x05"))
	f.Fuzz(func(t *testing.T, typ byte, b []byte) {
		h, err := restoreHash(typ, b, defaultHashMaxEntries, defaultHashMaxValue)
		if err != nil {
			return
		}
		again, err := restoreOf(t, string(dumpHash(h)))
		if err != nil {
			t.Fatalf("restore of a dump: %v", err)
		}
		equalPairs(t, again.Pairs, h.Pairs)
	})
}
