package commands

import (
	"github.com/oncekv/oncekv/resp"
)

// parseInt parses a signed 64-bit integer exactly as Redis's string2ll
// does: optional '-', no '+', no spaces, no leading zeros.
func parseInt(b []byte) (int64, bool) { return resp.ParseInt(b) }

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
