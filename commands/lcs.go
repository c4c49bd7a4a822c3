package commands

import "math"

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN], as Redis
// 7.0's lcsCommand: the longest common subsequence of two strings (a
// missing key is the empty string), by the dynamic programming table of
// (len1+1)·(len2+1) 32-bit lengths. That table is the command's memory,
// and as in Redis it may not exceed proto-max-bulk-len (512 MiB by
// default: two strings of some 11,500 bytes each); a larger one is
// refused before anything is allocated.

// lcsOpts are LCS's options.
type lcsOpts struct {
	getLen, getIdx, withMatchLen bool
	minMatchLen                  int64
}

// parseLCS parses LCS's options (args from the third on), as Redis does:
// MINMATCHLEN below 0 is 0, and LEN with IDX is refused after the rest.
func parseLCS(args [][]byte) (lcsOpts, error) {
	var o lcsOpts
	for j := 0; j < len(args); j++ {
		switch a := args[j]; {
		case eq(a, "idx"):
			o.getIdx = true
		case eq(a, "len"):
			o.getLen = true
		case eq(a, "withmatchlen"):
			o.withMatchLen = true
		case eq(a, "minmatchlen") && j+1 < len(args):
			n, ok := parseInt(args[j+1])
			if !ok {
				return o, ErrNotInteger
			}
			o.minMatchLen = max(n, 0)
			j++
		default:
			return o, ErrSyntax
		}
	}
	if o.getLen && o.getIdx {
		return o, ErrLCSLenAndIdx
	}
	return o, nil
}

func lcsCmd(x *Ctx) {
	var vals [2][]byte
	for i := range vals {
		v, ok, err := x.readString(x.Args[1+i])
		switch {
		case err == ErrWrongType:
			x.Fail(ErrLCSNotString)
			return
		case err != nil:
			x.Fail(err)
			return
		case ok:
			vals[i] = v.Data
		}
	}
	o, err := parseLCS(x.Args[3:])
	if err != nil {
		x.Fail(err)
		return
	}
	a, b := vals[0], vals[1]
	cells := uint64(len(a)+1) * uint64(len(b)+1)
	if cells > math.MaxUint64/4 || cells*4 > uint64(x.S.protoMaxBulkLen()) {
		x.Fail(ErrLCSTooBig)
		return
	}
	writeLCS(x, a, b, o)
}

// writeLCS computes the LCS of a and b and writes the reply o asks for.
func writeLCS(x *Ctx, a, b []byte, o lcsOpts) {
	alen, blen := len(a), len(b)
	w := blen + 1
	t := make([]uint32, (alen+1)*w)
	for i := 1; i <= alen; i++ {
		row, prev := t[i*w:(i+1)*w], t[(i-1)*w:i*w]
		for j := 1; j <= blen; j++ {
			switch {
			case a[i-1] == b[j-1]:
				row[j] = prev[j-1] + 1
			case prev[j] > row[j-1]:
				row[j] = prev[j]
			default:
				row[j] = row[j-1]
			}
		}
	}
	total := t[alen*w+blen]
	if o.getLen {
		x.W.Int(int64(total))
		return
	}
	// Walk back from the end, as Redis does, building the string and
	// the ranges of contiguous matches (from the last to the first).
	result := make([]byte, total)
	type match struct{ a0, a1, b0, b1 int }
	var matches []match
	idx := int(total)
	const unset = -1
	as, ae, bs, be := unset, 0, 0, 0
	i, j := alen, blen
	for i > 0 && j > 0 {
		emit := false
		if a[i-1] == b[j-1] {
			result[idx-1] = a[i-1]
			switch {
			case as == unset:
				as, ae, bs, be = i-1, i-1, j-1, j-1
			case as == i && bs == j:
				as--
				bs--
			default:
				emit = true
			}
			if as == 0 || bs == 0 {
				emit = true
			}
			idx--
			i--
			j--
		} else {
			if t[(i-1)*w+j] > t[i*w+j-1] {
				i--
			} else {
				j--
			}
			if as != unset {
				emit = true
			}
		}
		if emit {
			if n := int64(ae - as + 1); o.minMatchLen == 0 || n >= o.minMatchLen {
				matches = append(matches, match{as, ae, bs, be})
			}
			as = unset
		}
	}
	if !o.getIdx {
		x.W.Bulk(result)
		return
	}
	x.W.Map(2)
	x.W.BulkString("matches")
	x.W.Array(len(matches))
	for _, m := range matches {
		if o.withMatchLen {
			x.W.Array(3)
		} else {
			x.W.Array(2)
		}
		x.W.Array(2)
		x.W.Int(int64(m.a0))
		x.W.Int(int64(m.a1))
		x.W.Array(2)
		x.W.Int(int64(m.b0))
		x.W.Int(int64(m.b1))
		if o.withMatchLen {
			x.W.Int(int64(m.a1 - m.a0 + 1))
		}
	}
	x.W.BulkString("len")
	x.W.Int(int64(total))
}
