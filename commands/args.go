package commands

import (
	"math"
)

// parseInt parses a signed 64-bit integer exactly as Redis's string2ll
// does: optional '-', no '+', no spaces, no leading zeros.
func parseInt(b []byte) (int64, bool) {
	n := len(b)
	if n == 0 || n > 20 {
		return 0, false
	}
	if n == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	i := 0
	if b[0] == '-' {
		neg = true
		i = 1
		if n == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < n; i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// eq compares an argument with a lower-case keyword, ignoring case.
func eq(arg []byte, lower string) bool {
	if len(arg) != len(lower) {
		return false
	}
	for i := range arg {
		c := arg[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// intArg parses argument i as an integer, writing the error reply if it
// is not one.
func (x *Ctx) intArg(i int) (int64, bool) {
	n, ok := parseInt(x.Args[i])
	if !ok {
		x.Fail(ErrNotInteger)
	}
	return n, ok
}
