package hashcodec

import (
	"bytes"
	"reflect"
	"testing"
)

func pairs(kv ...string) []Pair {
	var out []Pair
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, Pair{[]byte(kv[i]), []byte(kv[i+1])})
	}
	return out
}

// equal compares hashes, an empty pair list and a nil one alike.
func equal(tb testing.TB, got, want Hash) {
	tb.Helper()
	if got.Table != want.Table || len(got.Pairs) != len(want.Pairs) {
		tb.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range got.Pairs {
		if !bytes.Equal(got.Pairs[i].Field, want.Pairs[i].Field) || !bytes.Equal(got.Pairs[i].Value, want.Pairs[i].Value) {
			tb.Fatalf("pair %d: got %q=%q, want %q=%q", i, got.Pairs[i].Field, got.Pairs[i].Value, want.Pairs[i].Field, want.Pairs[i].Value)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 300)
	for _, tc := range []struct {
		name string
		h    Hash
	}{
		{"empty", Hash{}},
		{"one", Hash{Pairs: pairs("a", "1")}},
		{"empty strings", Hash{Pairs: pairs("", "", "f", "")}},
		{"binary", Hash{Pairs: pairs("\x00\r\n", "\xff\x00")}},
		{"table", Hash{Table: true, Pairs: pairs("a", "1", "b", "2")}},
		{"long", Hash{Pairs: []Pair{{big, big}, {[]byte("s"), big}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := Encode(nil, tc.h)
			got, err := Decode(enc)
			if err != nil {
				t.Fatal(err)
			}
			equal(t, got, tc.h)
		})
	}
}

func TestEncodeLayout(t *testing.T) {
	got := Encode([]byte("pre"), Hash{Table: true, Pairs: pairs("ab", "c")})
	want := []byte("pre\x01\x01\x02ab\x01c")
	if !bytes.Equal(got, want) {
		t.Fatalf("Encode = %q, want %q", got, want)
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    string
	}{
		{"nothing", ""},
		{"unknown flag", "\x02\x00"},
		{"no count", "\x00"},
		{"count beyond bytes", "\x00\x05\x00\x00"},
		{"short field", "\x00\x01\x05ab"},
		{"missing value", "\x00\x01\x01a"},
		{"short value", "\x00\x01\x01a\x03b"},
		{"trailing", "\x00\x01\x01a\x01bX"},
		{"long form length", "\x00\x01\x81\x00a\x01b"},
		{"huge length", "\x00\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if h, err := Decode([]byte(tc.b)); err != ErrCorrupt {
				t.Fatalf("Decode(%q) = %+v, %v; want ErrCorrupt", tc.b, h, err)
			}
		})
	}
}

func TestSetDeleteKeepOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  func(h *Hash) []bool
		want []Pair
		res  []bool
	}{
		{"set appends", func(h *Hash) []bool {
			return []bool{h.Set([]byte("a"), []byte("1")), h.Set([]byte("b"), []byte("2")), h.Set([]byte("c"), []byte("3"))}
		}, pairs("a", "1", "b", "2", "c", "3"), []bool{true, true, true}},
		{"overwrite in place", func(h *Hash) []bool {
			return []bool{h.Set([]byte("a"), []byte("1")), h.Set([]byte("b"), []byte("2")), h.Set([]byte("a"), []byte("9"))}
		}, pairs("a", "9", "b", "2"), []bool{true, true, false}},
		{"delete in place", func(h *Hash) []bool {
			h.Set([]byte("a"), []byte("1"))
			h.Set([]byte("b"), []byte("2"))
			h.Set([]byte("c"), []byte("3"))
			return []bool{h.Delete([]byte("b")), h.Delete([]byte("zz")), h.Set([]byte("b"), []byte("4"))}
		}, pairs("a", "1", "c", "3", "b", "4"), []bool{true, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h Hash
			res := tc.ops(&h)
			if !reflect.DeepEqual(res, tc.res) {
				t.Fatalf("results %v, want %v", res, tc.res)
			}
			got, err := Decode(Encode(nil, h))
			if err != nil {
				t.Fatal(err)
			}
			equal(t, got, Hash{Pairs: tc.want})
		})
	}
}

// FuzzDecode: Decode never panics, and what it accepts encodes back to
// the same bytes (the format has one encoding of each hash).
func FuzzDecode(f *testing.F) {
	f.Add([]byte{})
	f.Add(Encode(nil, Hash{Pairs: pairs("a", "1", "", "")}))
	f.Add(Encode(nil, Hash{Table: true, Pairs: pairs("field", "value")}))
	f.Add([]byte("\x00\x01\xff\xff\xff\xff\x0fa"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Decode(b)
		if err != nil {
			return
		}
		if again := Encode(nil, h); !bytes.Equal(again, b) {
			t.Fatalf("Encode(Decode(%q)) = %q", b, again)
		}
	})
}

// FuzzRoundTrip: any hash built of fuzzed pairs decodes to itself.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("a\x00b\x00c"), true)
	f.Fuzz(func(t *testing.T, raw []byte, table bool) {
		parts := bytes.Split(raw, []byte{0})
		h := Hash{Table: table}
		for i := 0; i+1 < len(parts); i += 2 {
			h.Pairs = append(h.Pairs, Pair{parts[i], parts[i+1]})
		}
		got, err := Decode(Encode(nil, h))
		if err != nil {
			t.Fatal(err)
		}
		equal(t, got, h)
	})
}
