package commands

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/oncekv/oncekv/internal/zcodec"
)

// DUMP of a one-member listpack set (member m) is redis-server 7.0's
// payload for each score, copied from its replies (rdbcompression no):
// d2string's text, an integer when it is one.
func TestDumpZsetListpackIsRedis(t *testing.T) {
	for _, tc := range []struct {
		score   float64
		payload string
	}{
		{1, "\x11\x0c\x0c\x00\x00\x00\x02\x00\x81m\x02\x01\x01\xff\n\x00&\xe3\xfd\x9d\xdd}n\xcb"},
		{-1, "\x11\r\r\x00\x00\x00\x02\x00\x81m\x02\xdf\xff\x02\xff\n\x00\x9eV.\xb4\xcc\x10\xad\xa7"},
		{0, "\x11\x0c\x0c\x00\x00\x00\x02\x00\x81m\x02\x00\x01\xff\n\x008>[\x06V\x98j\xfe"},
		{1.5, "\x11\x0f\x0f\x00\x00\x00\x02\x00\x81m\x02\x831.5\x04\xff\n\x00I\xd9\x87`x%N\x8a"},
		{0.1, "\x11\x1f\x1f\x00\x00\x00\x02\x00\x81m\x02\x930.10000000000000001\x14\xff\n\x00q\xbaI\xd7\x8e\x99\xb9w"},
		{1e300, "\x11##\x00\x00\x00\x02\x00\x81m\x02\x971.0000000000000001e+300\x18\xff\n\x00\xe1\x9a5\xfbWs\xc8\xf6"},
		{math.Inf(1), "\x11\x0f\x0f\x00\x00\x00\x02\x00\x81m\x02\x83inf\x04\xff\n\x00\x12\x8fx\xecw\x90\x9aW"},
		{math.Inf(-1), "\x11\x10\x10\x00\x00\x00\x02\x00\x81m\x02\x84-inf\x05\xff\n\x00\xf6\xad\xb1\x86\xe1\xa8\xe3\x9c"},
		{3e-5, "\x11\"\"\x00\x00\x00\x02\x00\x81m\x02\x963.0000000000000001e-05\x17\xff\n\x00\x9b\xf4;\xfa\xc83\xd5\x81"},
		{9007199254740993, "\x11\x14\x14\x00\x00\x00\x02\x00\x81m\x02\xf4\x00\x00\x00\x00\x00\x00 \x00\t\xff\n\x00\x1c\x84\xd0(\x11\xc6\xc9\x97"},
		{123456789012, "\x11\x14\x14\x00\x00\x00\x02\x00\x81m\x02\xf4\x14\x1a\x99\xbe\x1c\x00\x00\x00\t\xff\n\x00}\x9e]!\xe3\xb5\t\x04"},
		{-4503599627370495, "\x11\x14\x14\x00\x00\x00\x02\x00\x81m\x02\xf4\x01\x00\x00\x00\x00\x00\xf0\xff\t\xff\n\x00\x84\xeb\x94\xd9\xbe7\x988"},
		{5e-324, "\x11##\x00\x00\x00\x02\x00\x81m\x02\x974.9406564584124654e-324\x18\xff\n\x00\xef]\xb2\xb5\x8b\xe7\xf8D"},
	} {
		z := mustZview(t, zcodec.Listpack, zcodec.Entry{Member: []byte("m"), Score: tc.score})
		if got := string(dumpZset(z)); got != tc.payload {
			t.Errorf("DUMP of score %v = %q, want %q", tc.score, got, tc.payload)
		}
	}
}

// DUMP of a skiplist set walks it from the greatest member, as Redis's
// (ZADD s 1 a 0 12 inf x 2.5 y with zset-max-listpack-entries 2).
func TestDumpZsetSkiplistIsRedis(t *testing.T) {
	z := mustZview(t, zcodec.Skiplist,
		zcodec.Entry{Member: []byte("12"), Score: 0}, zcodec.Entry{Member: []byte("a"), Score: 1},
		zcodec.Entry{Member: []byte("y"), Score: 2.5}, zcodec.Entry{Member: []byte("x"), Score: math.Inf(1)})
	want := "\x05\x04\x01x\x00\x00\x00\x00\x00\x00\xf0\x7f\x01y\x00\x00\x00\x00\x00\x00\x04@\x01a\x00\x00\x00\x00\x00\x00\xf0?" +
		"\xc0\x0c\x00\x00\x00\x00\x00\x00\x00\x00\n\x00_\x02\xce\xc1X\xcb\xa0\x11"
	if got := string(dumpZset(z)); got != want {
		t.Errorf("DUMP = %q, want %q", got, want)
	}
}

func mustZview(t *testing.T, enc byte, entries ...zcodec.Entry) zcodec.View {
	t.Helper()
	z, err := zcodec.Check(zcodec.Encode(enc, entries))
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// lpOf is a listpack of the strings ss (the test's own, through the
// package's writer).
func lpOf(ss ...string) string {
	lp := make([]byte, 6)
	for _, s := range ss {
		lp = appendLPEntry(lp, []byte(s))
	}
	lp = append(lp, 0xff)
	lp[0], lp[1], lp[2], lp[3] = byte(len(lp)), byte(len(lp)>>8), byte(len(lp)>>16), byte(len(lp)>>24)
	lp[4], lp[5] = byte(len(ss)), byte(len(ss)>>8)
	return string(lp)
}

// RESTORE of hand-made payloads reads them as redis-server 7.0 did
// (results copied from it), or refuses them with -ERR Bad data format
// where Redis refuses them or would crash (an odd listpack).
func TestRestoreZsetPayloads(t *testing.T) {
	t3 := func(scores ...string) string {
		o := "\x03" + string(rune(len(scores)))
		for i, s := range scores {
			o += "\x01" + string(rune('a'+i))
			if len(s) == 1 && s[0] >= 253 {
				o += s
			} else {
				o += string(rune(len(s))) + s
			}
		}
		return o
	}
	lp := func(ss ...string) string {
		l := lpOf(ss...)
		return string(appendRDBLen([]byte{rdbTypeZsetListpack}, uint64(len(l)))) + l
	}
	negZero := math.Copysign(0, -1)
	for _, tc := range []struct {
		name, object string
		enc          byte
		want         []zcodec.Entry
	}{
		{"t3 trailing bytes", t3("1.5xyz"), zcodec.Listpack, ents("a", 1.5)},
		{"t3 space", t3(" 2"), zcodec.Listpack, ents("a", 2)},
		{"t3 hex", t3("0x10"), zcodec.Listpack, ents("a", 16)},
		{"t3 1e", t3("1e"), zcodec.Listpack, ents("a", 1)},
		{"t3 1e999", t3("1e999"), zcodec.Listpack, ents("a", math.Inf(1))},
		{"t3 inf bytes", t3("\xfe", "\xff"), zcodec.Listpack, ents("b", math.Inf(-1), "a", math.Inf(1))},
		{"t3 -0", t3("-0"), zcodec.Listpack, ents("a", 0)},
		{"t3 nan byte", t3("\xfd"), 0, nil},
		{"t3 nan", t3("nan"), 0, nil},
		{"t3 empty score", t3(""), 0, nil},
		{"t3 abc", t3("abc"), 0, nil},
		{"t3 no member", "\x03\x00", 0, nil},
		{"t3 duplicate", "\x03\x02\x01a\x011\x01a\x012", 0, nil},
		{"lp", lp("m", "1", "n", "1.5"), zcodec.Listpack, ents("m", 1, "n", 1.5)},
		{"lp 1.50", lp("m", "1.50"), zcodec.Listpack, ents("m", 1.5)},
		{"lp abc", lp("m", "abc"), zcodec.Listpack, ents("m", 0)},
		{"lp space", lp("m", " 1"), zcodec.Listpack, ents("m", 1)},
		{"lp -0 kept", lp("m", "-0"), zcodec.Listpack, ents("m", negZero)},
		{"lp out of order", lp("m", "2", "n", "1"), zcodec.Listpack, ents("n", 1, "m", 2)},
		{"lp long member", lp(strings.Repeat("x", 100), "1"), zcodec.Listpack, ents(strings.Repeat("x", 100), 1)},
		{"lp nan", lp("m", "nan"), 0, nil},
		{"lp odd", lp("m", "1", "n"), 0, nil},
		{"lp duplicate", lp("m", "1", "m", "2"), 0, nil},
		{"lp empty", lp(), 0, nil},
		{"lp broken", "\x11\x07\x07\x00\x00\x00\x02\x00\xfe", 0, nil},
		{"zset2", "\x05\x02\x01n\x00\x00\x00\x00\x00\x00\xf0?\x01m\x00\x00\x00\x00\x00\x00\x00\x80", zcodec.Listpack, ents("m", 0, "n", 1)},
		{"zset2 long member", "\x05\x01\x41\x00" + strings.Repeat("x", 256) + "\x00\x00\x00\x00\x00\x00\x00\x80",
			zcodec.Skiplist, ents(strings.Repeat("x", 256), negZero)},
		{"zset2 nan", "\x05\x01\x01m\x00\x00\x00\x00\x00\x00\xf8\x7f", 0, nil},
		{"zset2 short score", "\x05\x01\x0bm", 0, nil}, // the member takes the footer
		{"zset2 duplicate", "\x05\x02\x01m\x00\x00\x00\x00\x00\x00\xf0?\x01m\x00\x00\x00\x00\x00\x00\xf0?", 0, nil},
	} {
		x := &Ctx{S: &Server{}}
		x.S.SetZsetLimits(-1, -1)
		v, err := x.restoreValue([]byte(dumpPayload(t, tc.object, rdbVersion)))
		if tc.want == nil {
			if err != ErrBadData {
				t.Errorf("%s: %v, want %v", tc.name, err, ErrBadData)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		z, err := zcodec.Check(v.Data)
		if err != nil || z.Encoding() != tc.enc || !sameEntries(z.Entries(), tc.want) {
			t.Errorf("%s: %c %v %v, want %c %v", tc.name, z.Encoding(), z.Entries(), err, tc.enc, tc.want)
		}
	}
}

// ents is member, score, member, score…
func ents(kv ...any) []zcodec.Entry {
	var out []zcodec.Entry
	for i := 0; i < len(kv); i += 2 {
		var score float64
		switch v := kv[i+1].(type) {
		case int:
			score = float64(v)
		case float64:
			score = v
		}
		out = append(out, zcodec.Entry{Member: []byte(kv[i].(string)), Score: score})
	}
	return out
}

func sameEntries(a, b []zcodec.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if string(a[i].Member) != string(b[i].Member) || math.Float64bits(a[i].Score) != math.Float64bits(b[i].Score) {
			return false
		}
	}
	return true
}

// What DUMP writes RESTORE reads back to the same set, bit for bit (-0
// in a skiplist included), in the same encoding.
func TestZsetDumpRestoreRoundTrip(t *testing.T) {
	var entries []zcodec.Entry
	for i, s := range []float64{math.Inf(-1), -1e300, -4503599627370495, -1.5, math.Copysign(0, -1), 5e-324, 0.1,
		1, 127, 128, 4095, 70000, 9007199254740992, 4611686018427387904, 1e17, math.MaxFloat64, math.Inf(1)} {
		entries = append(entries, zcodec.Entry{Member: []byte(strings.Repeat("m", i) + itoa(int64(i))), Score: s})
	}
	entries = append(entries, zcodec.Entry{Member: []byte("-7"), Score: 2}, zcodec.Entry{Member: []byte{0, 0xff}, Score: 3})
	for _, enc := range []byte{zcodec.Listpack, zcodec.Skiplist} {
		in := slices.Clone(entries)
		if enc == zcodec.Listpack {
			in[4].Score = 0 // a listpack keeps no -0
		}
		slices.SortFunc(in, zcodec.Compare)
		p := dumpZset(mustZview(t, enc, in...))
		limit := int64(len(in))
		if enc == zcodec.Skiplist {
			limit-- // too many for a listpack
		}
		data, err := restoreZset(p[0], p[1:], limit, 64)
		if err != nil {
			t.Fatalf("%c: %v", enc, err)
		}
		z, err := zcodec.Check(data)
		if err != nil || z.Encoding() != enc || !sameEntries(z.Entries(), in) {
			t.Errorf("%c: restored %c %v %v, want %v", enc, z.Encoding(), z.Entries(), err, in)
		}
	}
}
