package listenc

import (
	"bytes"
	"slices"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	long := bytes.Repeat([]byte("x"), 300)
	tests := []struct {
		name  string
		elems [][]byte
	}{
		{"empty", nil},
		{"one", [][]byte{[]byte("a")}},
		{"empty element", [][]byte{{}}},
		{"binary", [][]byte{{0, 1, 2, 0xff}, []byte("\r\n")}},
		{"long element", [][]byte{long, []byte("b"), long}},
		{"many", slices.Repeat([][]byte{[]byte("job")}, 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc := Append(nil, tt.elems)
			got, err := Decode(enc)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if len(got) != len(tt.elems) {
				t.Fatalf("got %d elements, want %d", len(got), len(tt.elems))
			}
			for i := range got {
				if !bytes.Equal(got[i], tt.elems[i]) {
					t.Fatalf("element %d: got %q, want %q", i, got[i], tt.elems[i])
				}
			}
			if n, err := Len(enc); err != nil || n != len(tt.elems) {
				t.Fatalf("Len = %d, %v; want %d", n, err, len(tt.elems))
			}
			if again := Append(nil, got); !bytes.Equal(again, enc) {
				t.Fatalf("re-encoding differs: %x vs %x", again, enc)
			}
		})
	}
}

func TestDecodeCorrupt(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"nothing", nil},
		{"count too large", []byte{5, 1, 'a'}},
		{"length past the end", []byte{1, 9, 'a'}},
		{"trailing bytes", []byte{1, 1, 'a', 'b'}},
		{"bad varint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"huge length", []byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Decode(tt.data); err != ErrCorrupt {
				t.Fatalf("Decode(%x) = %v, want ErrCorrupt", tt.data, err)
			}
		})
	}
}

// FuzzDecode: Decode never panics, and what it accepts encodes back to
// the same bytes.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{0})
	f.Add(Append(nil, [][]byte{[]byte("a"), {}, []byte("bc")}))
	f.Add([]byte{3, 1, 'a'})
	f.Fuzz(func(t *testing.T, data []byte) {
		elems, err := Decode(data)
		if err != nil {
			return
		}
		if again := Append(nil, elems); !bytes.Equal(again, data) {
			// A varint may be written with needless continuation
			// bytes: accepted, but not what Append writes. Decode
			// of the canonical form must agree element by element.
			back, err := Decode(again)
			if err != nil || len(back) != len(elems) {
				t.Fatalf("round trip of %x failed: %v", data, err)
			}
			for i := range back {
				if !bytes.Equal(back[i], elems[i]) {
					t.Fatalf("element %d differs", i)
				}
			}
		}
	})
}
