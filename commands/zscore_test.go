package commands

import (
	"math"
	"testing"

	"github.com/oncekv/oncekv/resp"
)

func TestParseScore(t *testing.T) {
	cases := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1", 1, true}, {"-1.5", -1.5, true}, {"+5", 5, true}, {".5", 0.5, true}, {"1e3", 1000, true},
		{"inf", math.Inf(1), true}, {"-inf", math.Inf(-1), true}, {"+Infinity", math.Inf(1), true},
		{"0x10", 16, true}, {"0x1p-2", 0.25, true}, {"1e-320", 1e-320, true}, {"-0", math.Copysign(0, -1), true},
		{"0e400", 0, true},
		{"nan", 0, false}, {"-nan", 0, false}, {"", 0, false}, {" 1", 0, false}, {"1 ", 0, false},
		{"1e400", 0, false}, {"1e-400", 0, false}, {"1_0", 0, false}, {"abc", 0, false}, {"+-1", 0, false},
		{"0x", 0, false}, {"1e", 0, false},
	}
	for _, c := range cases {
		got, ok := parseScore([]byte(c.in))
		if ok != c.ok || (ok && math.Float64bits(got) != math.Float64bits(c.want)) {
			t.Errorf("parseScore(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseRangeScore(t *testing.T) {
	cases := []struct {
		in       string
		want     float64
		excl, ok bool
	}{
		{"1", 1, false, true}, {"(1", 1, true, true}, {"", 0, false, true}, {"(", 0, true, true},
		{" 2", 2, false, true}, {"1\x00junk", 1, false, true}, {"1e400", math.Inf(1), false, true},
		{"-inf", math.Inf(-1), false, true}, {"   ", 0, false, false}, {"nan", 0, false, false},
		{"(nan", 0, true, false}, {"x", 0, false, false}, {"1 ", 0, false, false},
	}
	for _, c := range cases {
		got, excl, ok := parseRangeScore([]byte(c.in))
		if ok != c.ok || (ok && (got != c.want || excl != c.excl)) {
			t.Errorf("parseRangeScore(%q) = %v %v %v; want %v %v %v", c.in, got, excl, ok, c.want, c.excl, c.ok)
		}
	}
}

// TestScoreFormats: replies print scores as Redis 7.0's addReplyDouble
// ("%.17g"), ZSCAN as its d2string.
func TestScoreFormats(t *testing.T) {
	cases := []struct {
		in          float64
		reply, scan string
	}{
		{0.1, "0.10000000000000001", "0.10000000000000001"},
		{3, "3", "3"},
		{1e300, "1.0000000000000001e+300", "1.0000000000000001e+300"},
		{1.0 / 3, "0.33333333333333331", "0.33333333333333331"},
		{math.Copysign(0, -1), "-0", "-0"},
		{1e17, "1e+17", "100000000000000000"},
		{1e21, "1e+21", "1e+21"},
		{-1.5, "-1.5", "-1.5"},
		{math.Inf(1), "inf", "inf"},
		{math.Inf(-1), "-inf", "-inf"},
		{5e-324, "4.9406564584124654e-324", "4.9406564584124654e-324"},
	}
	for _, c := range cases {
		if got := formatScore(c.in); got != c.reply {
			t.Errorf("formatScore(%v) = %q, want %q", c.in, got, c.reply)
		}
		if got := scanScore(c.in); got != c.scan {
			t.Errorf("scanScore(%v) = %q, want %q", c.in, got, c.scan)
		}
		for proto, want := range map[int]string{2: "$" + itoa(int64(len(c.reply))) + "\r\n" + c.reply + "\r\n", 3: "," + c.reply + "\r\n"} {
			w := resp.NewWriter(proto)
			writeScore(w, c.in)
			if got := string(w.Bytes()); got != want {
				t.Errorf("writeScore(%v) in RESP%d = %q, want %q", c.in, proto, got, want)
			}
		}
	}
}

// scanDouble takes the longest number at the start, as strtod does.
func TestScanDouble(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1.5", 1.5, true}, {"1.5xyz", 1.5, true}, {" \t2", 2, true}, {"1e", 1, true}, {"1e+", 1, true},
		{"1e-2x", 0.01, true}, {"1.", 1, true}, {".5", 0.5, true}, {".", 0, false}, {"-.e1", 0, false},
		{"0x10", 16, true}, {"0x", 0, true}, {"0xg", 0, true}, {"0x.8", 0.5, true}, {"0x1p4z", 16, true},
		{"0x1p", 1, true}, {"inf", math.Inf(1), true}, {"-Infinity!", math.Inf(-1), true},
		{"infin", math.Inf(1), true}, {"+-1", 0, false}, {"", 0, false}, {"abc", 0, false},
		{"1e999", math.Inf(1), true}, {"-0", math.Copysign(0, -1), true}, {"12\x003", 12, true},
	} {
		got, ok := scanDouble([]byte(tc.in))
		if ok != tc.ok || math.Float64bits(got) != math.Float64bits(tc.want) {
			t.Errorf("scanDouble(%q) = %v %v, want %v %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if f, ok := scanDouble([]byte("nan(x)")); !ok || !math.IsNaN(f) {
		t.Errorf("scanDouble(nan) = %v %v", f, ok)
	}
}
