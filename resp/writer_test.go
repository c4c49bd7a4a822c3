package resp

import (
	"math"
	"testing"
)

func TestWriterShapes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		write       func(w *Writer)
		resp2, rsp3 string
	}{
		{"null", func(w *Writer) { w.Null() }, "$-1\r\n", "_\r\n"},
		{"null array", func(w *Writer) { w.NullArray() }, "*-1\r\n", "_\r\n"},
		{"map", func(w *Writer) { w.Map(1); w.BulkString("k"); w.Int(1) }, "*2\r\n$1\r\nk\r\n:1\r\n", "%1\r\n$1\r\nk\r\n:1\r\n"},
		{"set", func(w *Writer) { w.Set(1); w.Simple("a") }, "*1\r\n+a\r\n", "~1\r\n+a\r\n"},
		{"push", func(w *Writer) { w.Push(0) }, "*0\r\n", ">0\r\n"},
		{"double", func(w *Writer) { w.Double(1.5) }, "$3\r\n1.5\r\n", ",1.5\r\n"},
		{"inf", func(w *Writer) { w.Double(math.Inf(1)) }, "$3\r\ninf\r\n", ",inf\r\n"},
		{"bool", func(w *Writer) { w.Bool(true) }, ":1\r\n", "#t\r\n"},
		{"verbatim", func(w *Writer) { w.Verbatim("hi") }, "$2\r\nhi\r\n", "=6\r\ntxt:hi\r\n"},
		{"error newlines", func(w *Writer) { w.Error("ERR a\r\nb") }, "-ERR a  b\r\n", "-ERR a  b\r\n"},
		{"binary bulk", func(w *Writer) { w.Bulk([]byte("\x00\r\n")) }, "$3\r\n\x00\r\n\r\n", "$3\r\n\x00\r\n\r\n"},
		{"ok", func(w *Writer) { w.OK() }, "+OK\r\n", "+OK\r\n"},
	} {
		for _, proto := range []int{2, 3} {
			w := NewWriter(proto)
			tc.write(w)
			want := tc.resp2
			if proto == 3 {
				want = tc.rsp3
			}
			if got := string(w.Bytes()); got != want {
				t.Errorf("%s RESP%d = %q, want %q", tc.name, proto, got, want)
			}
		}
	}
}

func TestFormatFloat(t *testing.T) {
	for in, want := range map[float64]string{1: "1", 1.5: "1.5", -0.0: "0", 1e21: "1000000000000000000000", math.Inf(-1): "-inf"} {
		if got := FormatFloat(in); got != want {
			t.Errorf("FormatFloat(%v) = %q, want %q", in, got, want)
		}
	}
}
