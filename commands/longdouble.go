package commands

import (
	"math/big"
	"strings"
)

// Redis computes INCRBYFLOAT in C's long double: on x86-64 an 80-bit
// float with a 64-bit significand and a 15-bit exponent. big.Float with
// 64 bits of precision rounds the same way; the range is checked by hand.
const (
	ldPrec   = 64
	ldMaxExp = 16384  // values at or above 2^16384 overflow to inf
	ldMinExp = -16445 // below the smallest denormal, strtold gives 0 (ERANGE)
)

// parseLongDouble parses a number as Redis's string2ld does with strtold:
// no leading space, nothing left over, no NaN, and no overflow or
// underflow (both are errors there).
func parseLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) >= 5*1024 || isSpace(b[0]) {
		return nil, false
	}
	s := string(b)
	if strings.ContainsRune(s, '_') {
		return nil, false
	}
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case "inf", "infinity":
		return new(big.Float).SetInf(s[0] == '-'), true
	}
	f, _, err := big.ParseFloat(s, 0, ldPrec, big.ToNearestEven)
	if err != nil {
		return nil, false
	}
	if f.IsInf() {
		return f, true
	}
	if f.Sign() != 0 {
		exp := f.MantExp(nil)
		if exp > ldMaxExp || exp < ldMinExp {
			return nil, false
		}
	}
	return f, true
}

// addLongDouble adds as long double does; ok is false when the result is
// infinite or NaN.
func addLongDouble(a, b *big.Float) (*big.Float, bool) {
	if a.IsInf() || b.IsInf() {
		return nil, false
	}
	z := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven).Add(a, b)
	if z.Sign() != 0 && z.MantExp(nil) > ldMaxExp {
		return nil, false
	}
	return z, true
}

// formatLongDouble prints f as Redis's ld2string in human mode: "%.17Lf"
// with trailing zeros (and a trailing dot) removed, and "-0" as "0".
func formatLongDouble(f *big.Float) string {
	s := f.Text('f', 17)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}
