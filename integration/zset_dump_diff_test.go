package integration

import (
	bin "encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
)

// DUMP and RESTORE of sorted sets, compared with redis-server 7.0: DUMP
// byte for byte with a Redis that does not compress (rdbcompression no),
// in both encodings; RESTORE of hand-made payloads of every type Redis
// loads (17 listpack, 12 ziplist, 5 and 3), the encoding it chooses
// included; and sets moved both ways with Redis's default, compressing
// DUMP.

// zsetScores are scores whose listpack text takes every path of
// zzlInsertAt's d2string: integers (within and past 2^52, and past what
// %.17g writes in digits), fractions that %.17g rounds, exponents, the
// infinities, zeros.
var zsetScores = []string{
	"1", "-1", "0", "-0", "1.5", "0.1", "1e300", "inf", "-inf", "3e-5", "9007199254740993", "123456789012",
	"4503599627370496", "-4503599627370495", "4611686018427387904", "1e17", "5e-324", "1.7976931348623157e308",
	"-2.5e-10", "127", "128", "-4096", "4095", "32767", "-32769", "8388607", "-8388609", "2147483648",
}

// zsetMembers are members whose listpack and RDB encodings differ: ones
// stored as integers, binary, empty, 63 and 64 bytes.
var zsetMembers = []string{"a", "1", "-5", "300", maxInt64, "01", binary, "", strings.Repeat("m", 63), strings.Repeat("n", 64)}

func zsetDumpSteps() []Step {
	var steps []Step
	for i, s := range zsetScores {
		k := fmt.Sprint("one", i)
		steps = append(steps, zadd(k, s, "m"), cmd("DUMP", k))
	}
	var all, members []string
	for i, s := range zsetScores {
		all = append(all, s, fmt.Sprint("s", i))
	}
	for i, m := range zsetMembers {
		members = append(members, strconv.Itoa(i%3), m)
	}
	long := strings.Repeat("L", 65)
	steps = append(steps,
		zadd("all", all...), cmd("OBJECT", "ENCODING", "all"), cmd("DUMP", "all"),
		zadd("members", members...), cmd("OBJECT", "ENCODING", "members"), cmd("DUMP", "members"),
		// Skiplists: too many members, a member too long; -0 kept by
		// the members added once it is one.
		zadd("many", manyPairs(200, "m")...), cmd("OBJECT", "ENCODING", "many"), cmd("DUMP", "many"),
		zadd("long", "2", long, "-0", "z", "-0", "a", "1.5", "1", "-inf", binary),
		zadd("long", append([]string{"INCR", "0.25"}, "a")...),
		cmd("OBJECT", "ENCODING", "long"), cmd("DUMP", "long"),
		zadd("sk", all...), zadd("sk", members...), zadd("sk", "7", long), cmd("DUMP", "sk"),
		// Made by other commands.
		cmd("ZINCRBY", "inc", "0.1", "a"), cmd("ZINCRBY", "inc", "0.2", "a"), cmd("DUMP", "inc"),
		cmd("ZUNIONSTORE", "u", "2", "all", "members", "WEIGHTS", "2", "0.5"), cmd("DUMP", "u"),
		cmd("ZRANGESTORE", "r", "many", "0", "9"), cmd("OBJECT", "ENCODING", "r"), cmd("DUMP", "r"),
		cmd("ZPOPMIN", "all", "3"), cmd("DUMP", "all"),
	)
	return steps
}

// ziplistOf is Redis's ziplist (before 7.0) of the strings ss: zlbytes,
// zltail, zllen, then each entry (the previous one's length, its
// encoding, its bytes), 0xFF. A string that is an integer is stored as
// one, as zipTryEncoding does.
func ziplistOf(ss ...string) string {
	zl := make([]byte, 10)
	prev, tail := 0, 10
	for _, s := range ss {
		tail = len(zl)
		start := len(zl)
		if prev < 254 {
			zl = append(zl, byte(prev))
		} else {
			zl = bin.LittleEndian.AppendUint32(append(zl, 0xfe), uint32(prev))
		}
		v, err := strconv.ParseInt(s, 10, 64)
		switch {
		case err != nil || strconv.FormatInt(v, 10) != s:
			switch n := len(s); {
			case n <= 63:
				zl = append(zl, byte(n))
			case n <= 16383:
				zl = append(zl, 0x40|byte(n>>8), byte(n))
			default:
				zl = bin.BigEndian.AppendUint32(append(zl, 0x80), uint32(n))
			}
			zl = append(zl, s...)
		case v >= 0 && v <= 12:
			zl = append(zl, 0xf1+byte(v))
		case v >= math.MinInt8 && v <= math.MaxInt8:
			zl = append(zl, 0xfe, byte(v))
		case v >= math.MinInt16 && v <= math.MaxInt16:
			zl = bin.LittleEndian.AppendUint16(append(zl, 0xc0), uint16(v))
		case v >= math.MinInt32 && v <= math.MaxInt32:
			zl = bin.LittleEndian.AppendUint32(append(zl, 0xd0), uint32(v))
		default:
			zl = bin.LittleEndian.AppendUint64(append(zl, 0xe0), uint64(v))
		}
		prev = len(zl) - start
	}
	zl = append(zl, 0xff)
	bin.LittleEndian.PutUint32(zl, uint32(len(zl)))
	bin.LittleEndian.PutUint32(zl[4:], uint32(tail))
	bin.LittleEndian.PutUint16(zl[8:], uint16(len(ss)))
	return string(zl)
}

// listpackOf is Redis 7.0's listpack of the strings ss, an integer from 0
// to 127 stored as one (as lpInsertString stores it), so that Redis, which
// DUMPs a listpack's bytes as they are, gives back what oncekv writes;
// other integers are stored as text, which Redis gives back as it is.
func listpackOf(ss ...string) string {
	lp := make([]byte, 6)
	for _, s := range ss {
		start := len(lp)
		v, err := strconv.ParseInt(s, 10, 64)
		switch n := len(s); {
		case err == nil && strconv.FormatInt(v, 10) == s && v >= 0 && v <= 127:
			lp = append(lp, byte(v))
		case n < 64:
			lp = append(append(lp, 0x80|byte(n)), s...)
		case n < 4096:
			lp = append(append(lp, 0xe0|byte(n>>8), byte(n)), s...)
		default:
			lp = append(bin.LittleEndian.AppendUint32(append(lp, 0xf0), uint32(n)), s...)
		}
		l := len(lp) - start
		if l < 128 {
			lp = append(lp, byte(l))
		} else {
			lp = append(lp, byte(l>>7), 0x80|byte(l&127)) // entries below 16 KiB
		}
	}
	lp = append(lp, 0xff)
	bin.LittleEndian.PutUint32(lp, uint32(len(lp)))
	bin.LittleEndian.PutUint16(lp[4:], uint16(len(ss)))
	return string(lp)
}

// rdbString is s as an RDB string, its length then its bytes.
func rdbString(s string) string {
	switch n := len(s); {
	case n < 64:
		return string(rune(n)) + s
	case n < 16384:
		return string([]byte{0x40 | byte(n>>8), byte(n)}) + s
	}
	return string(bin.BigEndian.AppendUint32([]byte{0x80}, uint32(len(s)))) + s
}

// zsetPayloads are RDB objects of sorted sets: packed ones (type 17 or
// 12) of member, score strings; type 5 and type 3 ones of member, score
// pairs.
func zpacked(typ byte, ss ...string) string {
	var blob string
	if typ == 12 {
		blob = ziplistOf(ss...)
	} else {
		blob = listpackOf(ss...)
	}
	return rdbPayload(string(rune(typ))+rdbString(blob), 10)
}

func zset2(pairs ...any) string {
	o := []byte{5, byte(len(pairs) / 2)}
	for i := 0; i < len(pairs); i += 2 {
		o = append(o, rdbString(pairs[i].(string))...)
		o = bin.LittleEndian.AppendUint64(o, math.Float64bits(pairs[i+1].(float64)))
	}
	return rdbPayload(string(o), 10)
}

// zset3 takes its scores as RDB's text doubles: "\xfd" NaN, "\xfe" +inf,
// "\xff" -inf, else the text after its length byte.
func zset3(pairs ...string) string {
	o := string([]byte{3, byte(len(pairs) / 2)})
	for i := 0; i < len(pairs); i += 2 {
		o += rdbString(pairs[i])
		if s := pairs[i+1]; len(s) == 1 && s[0] >= 0xfd {
			o += s
		} else {
			o += string([]byte{byte(len(s))}) + s
		}
	}
	return rdbPayload(o, 10)
}

func zsetRestoreSteps() []Step {
	long := strings.Repeat("x", 70)
	negZero := math.Copysign(0, -1)
	var steps []Step
	for _, pl := range []string{
		// Good: each as Redis loads it, encoding included.
		zpacked(17, "a", "1", "b", "1.5", "c", "inf"),
		zpacked(17, "m", "-0"), zpacked(17, long, "2", "b", "3"),
		zpacked(12, "f", "-inf", "b", "-2.5", "a", "1", "c", "300", "d", "70000", "e", "5000000000"),
		zpacked(12, "1", "1", "2", "2"), zpacked(12, long, "0"),
		zset2("b", 2.0, "a", 1.0, "c", math.Inf(-1), "d", negZero), zset2(long, 1.0, "a", negZero),
		zset2("1", 0.1, "12345678901", 1e300, "", 3.0),
		zset3("a", "1.5", "b", "\xfe", "c", "\xff", "d", "-0", "e", "0x10", "f", " 2", "g", "3.5xyz", "h", "1e"),
		zset3("a", "0.10000000000000001", long, "7"),
		// Bad: empty, a member twice, NaN, short or broken.
		zpacked(17), zpacked(12), zpacked(12, "a", "1", "a", "2"), zpacked(12, "a"),
		zset2(), zset2("a", 1.0, "a", 2.0), zset2("a", math.NaN()),
		zset3(), zset3("a", "1", "a", "2"), zset3("a", "\xfd"), zset3("a", "nan"), zset3("a", "abc"), zset3("a", ""),
		rdbPayload("\x05\x01\x0bm", 10), rdbPayload("\x03\x01\x01a\x40", 10), rdbPayload("\x11\x03abc", 10),
		rdbPayload("\x0c\x03abc", 10), rdbPayload("\x05\xc0\x01", 10),
	} {
		steps = append(steps, cmd("RESTORE", "r", "0", pl, "REPLACE"), cmd("TYPE", "r"), cmd("OBJECT", "ENCODING", "r"),
			cmd("ZRANGE", "r", "0", "-1", "WITHSCORES"), cmd("DUMP", "r"), cmd("DEL", "r"))
	}
	return steps
}

// zsetRestoreLimitSteps: the encoding RESTORE gives under small limits,
// as rdbLoadObject chooses it: a packed set by its length alone, a type 5
// or 3 one by both limits.
func zsetRestoreLimitSteps() []Step {
	var steps []Step
	for _, limits := range [][2]string{{"2", "4"}, {"0", "64"}, {"3", "0"}} {
		steps = append(steps, cmd("CONFIG", "SET", "zset-max-listpack-entries", limits[0], "zset-max-listpack-value", limits[1]))
		for _, pl := range []string{
			zpacked(17, "a", "1", "b", "2"), zpacked(17, "a", "1", "b", "2", "c", "3"), zpacked(17, "abcde", "1"),
			zpacked(12, "a", "1", "b", "2"), zpacked(12, "a", "1", "b", "2", "c", "3"), zpacked(12, "abcde", "1"),
			zset2("a", 1.0, "b", 2.0), zset2("a", 1.0, "b", 2.0, "c", 3.0), zset2("abcd", 1.0), zset2("abcde", 1.0),
			zset2("12345", math.Copysign(0, -1)), zset3("a", "1", "b", "2"), zset3("a", "1", "b", "2", "c", "3"),
			zset3("abcde", "1"),
		} {
			steps = append(steps, cmd("RESTORE", "r", "0", pl, "REPLACE"), cmd("OBJECT", "ENCODING", "r"),
				cmd("ZRANGE", "r", "0", "-1", "WITHSCORES"), cmd("DUMP", "r"),
				// Written to after: a listpack restored past the
				// value limit converts as Redis's does.
				zadd("r", "5", "new"), cmd("OBJECT", "ENCODING", "r"))
		}
	}
	return append(steps, cmd("CONFIG", "SET", "zset-max-listpack-entries", "128", "zset-max-listpack-value", "64"))
}

// TestDiffZsetDump: DUMP of a sorted set is Redis's payload byte for byte
// in both encodings; RESTORE of hand-made payloads of types 17, 12, 5 and
// 3 makes the same set, encoding included, or the same error, on both.
func TestDiffZsetDump(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	noCompression(t, p)
	p.RunScripts(t, []Script{
		{"zset-dump", zsetDumpSteps()},
		{"zset-restore", zsetRestoreSteps()},
		{"zset-restore-limits", zsetRestoreLimitSteps()},
	})
}

// TestZsetCrossRestore: a sorted set dumped by either server (Redis with
// its default compression) is restored by the other with the same
// members, scores and encoding, read in RESP2 and RESP3.
func TestZsetCrossRestore(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	r, o := DialRaw(t, p.Redis), DialRaw(t, p.Other)
	r3, o3 := DialRaw(t, p.Redis), DialRaw(t, p.Other)
	for _, c := range []*RawConn{r3, o3} {
		if f := c.ReadFrameAfterDo(t, "HELLO", "3"); f.Type != '%' {
			t.Fatalf("%s: HELLO 3: %q", c.Addr, f.Raw)
		}
	}
	var scored []string
	for i, s := range zsetScores {
		scored = append(scored, s, fmt.Sprint("s", i))
	}
	for i, m := range zsetMembers {
		scored = append(scored, strconv.Itoa(i), m)
	}
	long := strings.Repeat("long", 30)
	for _, tc := range []struct {
		name  string
		pairs []string
	}{
		{"small", []string{"1", "a", "-0", "b", "2.5", "c"}},
		{"scores and members", scored},
		{"long member", []string{"1", long, "-0", "z", "inf", "i"}},
		{"many", append(manyPairs(300, "m"), "-0", "zero", "0.1", "tenth")},
		{"compressible", manyPairs(130, strings.Repeat("p", 40))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []*RawConn{r, o} {
				c.Do("DEL", "src", "from-other")
				if f := c.ReadFrameAfterDo(t, append([]string{"ZADD", "src"}, tc.pairs...)...); f.Type != ':' {
					t.Fatalf("%s: ZADD: %q", c.Addr, f.Raw)
				}
			}
			fromRedis := r.ReadFrameAfterDo(t, "DUMP", "src").Str
			fromOncekv := o.ReadFrameAfterDo(t, "DUMP", "src").Str
			if got := o.Do("RESTORE", "from-other", "0", fromRedis); string(got) != "+OK\r\n" {
				t.Fatalf("oncekv RESTORE of redis's DUMP: %q", got)
			}
			if got := r.Do("RESTORE", "from-other", "0", fromOncekv); string(got) != "+OK\r\n" {
				t.Fatalf("redis RESTORE of oncekv's DUMP: %q", got)
			}
			for _, c := range []*RawConn{r, o, r3, o3} {
				want := string(r.Do("ZRANGE", "src", "0", "-1", "WITHSCORES"))
				if c == r3 || c == o3 {
					want = string(r3.Do("ZRANGE", "src", "0", "-1", "WITHSCORES"))
				}
				for _, k := range []string{"src", "from-other"} {
					if got := string(c.Do("ZRANGE", k, "0", "-1", "WITHSCORES")); got != want {
						t.Errorf("%s: ZRANGE %s WITHSCORES %.300q, want redis's src %.300q", c.Addr, k, got, want)
					}
				}
				if a, b := string(c.Do("OBJECT", "ENCODING", "src")), string(c.Do("OBJECT", "ENCODING", "from-other")); a != b {
					t.Errorf("%s: restored encoding %q, want %q", c.Addr, b, a)
				}
			}
		})
	}
}
