package commands

import (
	"bytes"
	"slices"
	"testing"
)

func members(ms ...string) [][]byte {
	out := make([][]byte, len(ms))
	for i, m := range ms {
		out[i] = []byte(m)
	}
	return out
}

func strs(ms [][]byte) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m)
	}
	return out
}

func TestBuildSetEncoding(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     []string
		max    int
		intset bool
		want   []string
	}{
		{"integers in numeric order", []string{"10", "-2", "3", "3", "-10"}, 512, true, []string{"-10", "-2", "3", "10"}},
		{"extremes", []string{"9223372036854775807", "-9223372036854775808", "0"}, 512, true,
			[]string{"-9223372036854775808", "0", "9223372036854775807"}},
		{"a word makes a hashtable in byte order", []string{"b", "10", "9"}, 512, false, []string{"10", "9", "b"}},
		{"not canonical integers", []string{"01", "-0", "+1", " 1"}, 512, false, []string{" 1", "+1", "-0", "01"}},
		{"past the limit", []string{"1", "2", "3"}, 2, false, []string{"1", "2", "3"}},
		{"at the limit", []string{"1", "2"}, 2, true, []string{"1", "2"}},
		{"limit 0", []string{"1"}, 0, false, []string{"1"}},
		{"empty", nil, 512, false, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := buildSet(members(tc.in...), tc.max)
			if s.intset != tc.intset || !slices.Equal(strs(s.m), tc.want) {
				t.Fatalf("buildSet(%q, %d) = intset %v %q, want intset %v %q", tc.in, tc.max, s.intset, strs(s.m), tc.intset, tc.want)
			}
		})
	}
}

func TestSetAddRemove(t *testing.T) {
	for _, tc := range []struct {
		name       string
		start, add []string
		max        int
		added      int
		intset     bool
		want       []string
	}{
		{"into an intset", []string{"1", "5"}, []string{"3", "5", "-1", "3"}, 512, 2, true, []string{"-1", "1", "3", "5"}},
		{"a word converts", []string{"1", "5"}, []string{"a"}, 512, 1, false, []string{"1", "5", "a"}},
		{"past the limit converts", []string{"1", "2"}, []string{"3"}, 2, 1, false, []string{"1", "2", "3"}},
		{"nothing new converts nothing", []string{"1", "2", "3"}, []string{"3"}, 2, 0, true, []string{"1", "2", "3"}},
		{"hashtable stays", []string{"a"}, []string{"2", "1"}, 512, 2, false, []string{"1", "2", "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := buildSet(members(tc.start...), 512)
			n := s.add(members(tc.add...), tc.max)
			if n != tc.added || s.intset != tc.intset || !slices.Equal(strs(s.m), tc.want) {
				t.Fatalf("add = %d intset %v %q, want %d intset %v %q", n, s.intset, strs(s.m), tc.added, tc.intset, tc.want)
			}
			for _, m := range tc.want {
				if !s.has([]byte(m)) {
					t.Fatalf("has(%q) = false", m)
				}
			}
			if got := s.remove(members(tc.want[0], "absent", tc.want[0])); got != 1 || s.has([]byte(tc.want[0])) {
				t.Fatalf("remove = %d, has %q after", got, tc.want[0])
			}
			if s.intset != tc.intset {
				t.Fatal("remove changed the encoding")
			}
		})
	}
}

func TestSetCodecRoundTrip(t *testing.T) {
	for _, in := range [][]string{
		{"1"}, {"-5", "0", "7", "9223372036854775807"}, {"", "\x00", "a", "\xff\r\n"},
		{string(bytes.Repeat([]byte("x"), 300)), "y"},
	} {
		s := buildSet(members(in...), 512)
		enc := s.encode(nil)
		got, err := decodeSet(enc)
		if err != nil {
			t.Fatalf("decode(encode(%q)): %v", in, err)
		}
		if got.intset != s.intset || !slices.EqualFunc(got.m, s.m, bytes.Equal) {
			t.Fatalf("round trip of %q: %v %q", in, got.intset, strs(got.m))
		}
	}
}

func TestSetCodecRefuses(t *testing.T) {
	for _, tc := range []struct{ name, data string }{
		{"empty", ""},
		{"unknown tag", "x\x01\x01a"},
		{"no members", "h\x00"},
		{"count past the data", "h\x05\x01a"},
		{"member past the data", "h\x01\x05ab"},
		{"trailing bytes", "h\x01\x01az"},
		{"out of order", "h\x02\x01b\x01a"},
		{"duplicate", "h\x02\x01a\x01a"},
		{"word in an intset", "i\x01\x01a"},
		{"intset out of numeric order", "i\x02\x0210\x019"},
		{"non-canonical integer in an intset", "i\x01\x0201"},
		{"bad varint", "h\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s, err := decodeSet([]byte(tc.data)); err == nil {
				t.Fatalf("decodeSet(%q) = %q, want an error", tc.data, strs(s.m))
			}
		})
	}
}

func TestCmpInt(t *testing.T) {
	order := []string{"-9223372036854775808", "-100", "-99", "-10", "-9", "-1", "0", "1", "9", "10", "99", "100", "9223372036854775807"}
	for i, a := range order {
		for j, b := range order {
			got := cmpInt([]byte(a), []byte(b))
			if (got < 0) != (i < j) || (got == 0) != (i == j) {
				t.Fatalf("cmpInt(%s, %s) = %d", a, b, got)
			}
		}
	}
}

// FuzzSetCodec: decoding never panics, and a value that decodes encodes
// back to the same bytes; a set built of any members decodes to itself.
func FuzzSetCodec(f *testing.F) {
	f.Add([]byte("i\x02\x01-\x011"), []byte("a\x001"))
	f.Add([]byte("h\x01\x00"), []byte("1\x002\x003"))
	f.Fuzz(func(t *testing.T, data, raw []byte) {
		if s, err := decodeSet(data); err == nil {
			if enc := s.encode(nil); !bytes.Equal(enc, data) {
				t.Fatalf("encode(decode(%q)) = %q", data, enc)
			}
		}
		ms := bytes.Split(raw, []byte{0})
		s := buildSet(ms, 3)
		for _, m := range ms {
			if !s.has(m) {
				t.Fatalf("built set misses %q", m)
			}
		}
		got, err := decodeSet(s.encode(nil))
		if err != nil || got.intset != s.intset || !slices.EqualFunc(got.m, s.m, bytes.Equal) {
			t.Fatalf("round trip of %q: %v", strs(ms), err)
		}
		extra := s.add([][]byte{[]byte("7"), []byte("x")}, 3)
		if extra > 2 || !s.has([]byte("x")) || s.intset {
			t.Fatalf("add: %d, intset %v", extra, s.intset)
		}
		if _, err := decodeSet(s.encode(nil)); err != nil {
			t.Fatalf("after add: %v", err)
		}
	})
}
