package zcodec

import (
	"bytes"
	"math"
	"slices"
	"testing"
)

func entries(pairs ...any) []Entry {
	var out []Entry
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Entry{Score: pairs[i].(float64), Member: []byte(pairs[i+1].(string))})
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		enc  byte
		in   []Entry
	}{
		{"empty", Listpack, nil},
		{"one", Listpack, entries(1.5, "a")},
		{"empty member", Skiplist, entries(0.0, "", 1.0, "x")},
		{"equal scores by member", Listpack, entries(1.0, "a", 1.0, "ab", 1.0, "b")},
		{"inf and binary", Skiplist, entries(math.Inf(-1), "\x00\xff", -0.5, "m", math.Inf(1), "\r\n")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := Encode(c.enc, c.in)
			v, err := Check(b)
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if v.Encoding() != c.enc || v.Len() != len(c.in) {
				t.Fatalf("encoding %c len %d, want %c %d", v.Encoding(), v.Len(), c.enc, len(c.in))
			}
			for i, e := range c.in {
				got := v.At(i)
				if !bytes.Equal(got.Member, e.Member) || math.Float64bits(got.Score) != math.Float64bits(e.Score) {
					t.Errorf("At(%d) = %q %v, want %q %v", i, got.Member, got.Score, e.Member, e.Score)
				}
				if v.Find(e.Member) != i {
					t.Errorf("Find(%q) = %d, want %d", e.Member, v.Find(e.Member), i)
				}
			}
			if v.Find([]byte("absent")) != -1 {
				t.Errorf("Find(absent) found something")
			}
		})
	}
}

func TestSearch(t *testing.T) {
	v, err := Decode(Encode(Listpack, entries(1.0, "a", 2.0, "b", 2.0, "c", 3.0, "d")))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		min  float64
		want int
	}{{0, 0}, {1, 0}, {1.5, 1}, {2, 1}, {2.5, 3}, {3, 3}, {4, 4}} {
		if got := v.Search(func(e Entry) bool { return e.Score >= c.min }); got != c.want {
			t.Errorf("first score >= %v: rank %d, want %d", c.min, got, c.want)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	good := Encode(Listpack, entries(1.0, "a", 2.0, "b"))
	nan := Encode(Listpack, entries(1.0, "a"))
	copy(nan[len(nan)-9:], []byte{0x7f, 0xf8, 0, 0, 0, 0, 0, 1})
	unordered := Encode(Listpack, entries(2.0, "a", 1.0, "b"))
	dup := Encode(Listpack, entries(1.0, "a", 2.0, "a"))
	cases := []struct {
		name  string
		b     []byte
		check bool // only Check refuses it
	}{
		{"nil", nil, false},
		{"short", good[:4], false},
		{"bad encoding byte", append([]byte{'x'}, good[1:]...), false},
		{"count too large", append([]byte{'L', 0, 0, 1, 0}, good[5:]...), false},
		{"truncated entry", good[:len(good)-8], false},
		{"trailing bytes without entries", []byte{'L', 0, 0, 0, 0, 1}, false},
		{"nan score", nan, false},
		{"out of order", unordered, true},
		{"duplicate member", dup, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, derr := Decode(c.b)
			_, cerr := Check(c.b)
			if cerr == nil {
				t.Errorf("Check accepted it")
			}
			if (derr == nil) != c.check {
				t.Errorf("Decode error %v, want refusal only by Check: %v", derr, c.check)
			}
		})
	}
}

// FuzzDecode: Decode never panics, and what it accepts reads back and
// encodes again to the same bytes.
func FuzzDecode(f *testing.F) {
	f.Add(Encode(Listpack, entries(1.0, "a", 2.0, "b")))
	f.Add(Encode(Skiplist, entries(math.Inf(-1), "", 0.0, "\x00")))
	f.Add([]byte{'L', 0, 0, 0, 0})
	f.Add([]byte{'K', 0, 0, 0, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Decode(b)
		if err != nil {
			return
		}
		es := v.Entries()
		for _, e := range es {
			if math.IsNaN(e.Score) {
				t.Fatalf("NaN score accepted")
			}
		}
		if again := Encode(v.Encoding(), es); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n%x\n%x", b, again)
		}
		if _, err := Check(b); err == nil && !slices.IsSortedFunc(es, Compare) {
			t.Fatalf("Check accepted entries out of order")
		}
	})
}

// FuzzRoundTrip: any sorted, unique entries encode and decode back.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("a\x00b\x00c"), 1.5, -2.0)
	f.Fuzz(func(t *testing.T, members []byte, s1, s2 float64) {
		if math.IsNaN(s1) || math.IsNaN(s2) {
			return
		}
		seen := map[string]bool{}
		var in []Entry
		for i, m := range bytes.Split(members, []byte{0}) {
			if seen[string(m)] {
				continue
			}
			seen[string(m)] = true
			s := s1
			if i%2 == 1 {
				s = s2
			}
			in = append(in, Entry{Member: m, Score: s})
		}
		slices.SortFunc(in, Compare)
		v, err := Check(Encode(Skiplist, in))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		for i, e := range in {
			got := v.At(i)
			if !bytes.Equal(got.Member, e.Member) || math.Float64bits(got.Score) != math.Float64bits(e.Score) {
				t.Fatalf("At(%d) = %q %v, want %q %v", i, got.Member, got.Score, e.Member, e.Score)
			}
		}
	})
}
