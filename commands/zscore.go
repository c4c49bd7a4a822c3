package commands

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/oncekv/oncekv/resp"
)

// parseScore parses a score, increment or weight as Redis 7.0's
// getDoubleFromObject does with strtod: the whole argument, no leading
// space, no NaN, and no overflow nor underflow to zero (a denormal is
// taken).
func parseScore(b []byte) (float64, bool) {
	if len(b) == 0 || isSpace(b[0]) {
		return 0, false
	}
	f, ok := strtod(b)
	if !ok || math.IsNaN(f) {
		return 0, false
	}
	if math.IsInf(f, 0) && !isInfWord(b) {
		return 0, false // ERANGE: overflow
	}
	if f == 0 && hasNonZeroDigit(b) {
		return 0, false // ERANGE: underflow to zero
	}
	return f, true
}

// parseRangeScore parses a bound of ZRANGEBYSCORE and the like as Redis's
// zslParseRange does: strtod, which skips leading space and stops at a
// NUL byte, without its errno; "(" makes the bound exclusive; NaN is
// refused.
func parseRangeScore(b []byte) (f float64, excl bool, ok bool) {
	if len(b) > 0 && b[0] == '(' {
		excl = true
		b = b[1:]
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) == 0 {
		return 0, excl, true // strtod converts nothing, and stops at the end
	}
	t := bytes.TrimLeft(b, " \t\n\v\f\r")
	if len(t) == 0 {
		return 0, excl, false
	}
	f, ok = strtod(t)
	if !ok || math.IsNaN(f) {
		return 0, excl, false
	}
	return f, excl, true
}

// strtod parses all of b as C's strtod would, overflow to ±Inf and
// underflow to 0 included: decimal or hexadecimal (with or without a
// binary exponent), "inf", "infinity" and "nan", with an optional sign.
func strtod(b []byte) (float64, bool) {
	s := string(b)
	if strings.ContainsAny(s, "_") {
		return 0, false
	}
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return 0, false
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		if s[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "nan":
		return math.NaN(), true
	}
	if len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') && !strings.ContainsAny(body, "pP") {
		s += "p0"
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	return f, true
}

func isInfWord(b []byte) bool {
	w := strings.ToLower(strings.TrimLeft(string(b), "+-"))
	return w == "inf" || w == "infinity"
}

// hasNonZeroDigit reports whether the significand of a number has a digit
// other than 0 (so that a 0 result is an underflow).
func hasNonZeroDigit(b []byte) bool {
	s := strings.ToLower(strings.TrimLeft(string(b), "+-"))
	hex := strings.HasPrefix(s, "0x")
	if hex {
		s = s[2:]
		if i := strings.IndexByte(s, 'p'); i >= 0 {
			s = s[:i]
		}
	} else if i := strings.IndexByte(s, 'e'); i >= 0 {
		s = s[:i]
	}
	for _, c := range s {
		if c >= '1' && c <= '9' || hex && c >= 'a' && c <= 'f' {
			return true
		}
	}
	return false
}

// formatScore is a score as Redis 7.0's addReplyDouble prints it: "%.17g",
// "inf" and "-inf".
func formatScore(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

// writeScore writes a score as addReplyDouble does: a bulk string in
// RESP2, a double in RESP3.
func writeScore(w *resp.Writer, f float64) {
	s := formatScore(f)
	if w.Proto == 3 {
		w.Raw([]byte("," + s + "\r\n"))
		return
	}
	w.BulkString(s)
}

// scanScore is a score as ZSCAN answers it, Redis 7.0's d2string: an
// integer's digits when the score is one within ±2^62 (its double2ll),
// "-0" for a negative zero (which only a skiplist keeps), else "%.17g".
func scanScore(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case f == 0 && math.Signbit(f):
		return "-0"
	case f >= -(1<<62) && f <= 1<<62 && f == math.Trunc(f):
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

// scanDouble reads a number from the start of b as C's strtod (and
// sscanf's %lg) does: leading space skipped, then the longest prefix that
// is a number, the rest ignored; ok is false when there is none (strtod
// then answers 0).
func scanDouble(b []byte) (f float64, ok bool) {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	start := i
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	word := func(w string) bool {
		if len(b)-i < len(w) {
			return false
		}
		for k := 0; k < len(w); k++ {
			if b[i+k]|0x20 != w[k] {
				return false
			}
		}
		return true
	}
	switch {
	case word("infinity"):
		return strtod(b[start : i+8])
	case word("inf"), word("nan"):
		return strtod(b[start : i+3])
	}
	hex := i+1 < len(b) && b[i] == '0' && b[i+1]|0x20 == 'x'
	digit := func(c byte) bool {
		return c >= '0' && c <= '9' || hex && (c|0x20 >= 'a' && c|0x20 <= 'f')
	}
	j := i
	if hex {
		j += 2
	}
	nd := 0
	for j < len(b) && digit(b[j]) {
		j, nd = j+1, nd+1
	}
	if j < len(b) && b[j] == '.' {
		k := j + 1
		for k < len(b) && digit(b[k]) {
			k, nd = k+1, nd+1
		}
		if nd > 0 {
			j = k
		}
	}
	if nd == 0 {
		if hex {
			return strtod(b[start : i+1]) // "0x" with no digit: the 0
		}
		return 0, false
	}
	if exp := byte('e'); j < len(b) {
		if hex {
			exp = 'p'
		}
		if b[j]|0x20 == exp {
			k := j + 1
			if k < len(b) && (b[k] == '+' || b[k] == '-') {
				k++
			}
			e := k
			for k < len(b) && b[k] >= '0' && b[k] <= '9' {
				k++
			}
			if k > e {
				j = k
			}
		}
	}
	return strtod(b[start:j])
}
