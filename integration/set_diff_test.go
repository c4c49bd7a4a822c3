package integration

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// Sets, compared with redis-server 7.0 in RESP2 and RESP3 (README,
// "Sets"). An intset lists its members in numeric order on both sides,
// so replies of intset-sized integer sets are compared byte for byte;
// a hashtable's order is Redis's hash table's there and byte order here,
// so those replies are compared as multisets (sorted), and SSCAN of one
// is run to the end (ScanAll with the cursor at index 2).

func TestDiffSets(t *testing.T) {
	t.Parallel()
	RunDiffScripts(t, setScripts())
}

// sscan is an SSCAN step run to the end on both sides.
func sscan(args ...string) Step { return Step{Args: args, Mode: ScanAll, Cursor: 2} }

// ints are the decimal integers from, from+1, … (n of them).
func ints(from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(from + i)
	}
	return out
}

// words are n members that are not integers.
func words(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(prefix, i)
	}
	return out
}

// with prepends a command and its first arguments to members.
func with(members []string, first ...string) []string {
	return append(first, members...)
}

func setScripts() []Script {
	return []Script{
		{"intset-basics", []Step{
			cmd("SADD", "s", "3", "1", "2", "2", "-5", maxInt64, minInt64),
			cmd("SMEMBERS", "s"),
			cmd("SCARD", "s"),
			cmd("SADD", "s", "1", "3"),
			cmd("SISMEMBER", "s", "2"),
			cmd("SISMEMBER", "s", "4"),
			cmd("SISMEMBER", "s", "02"),
			cmd("SISMEMBER", "s", "abc"),
			cmd("SISMEMBER", "nokey", "1"),
			cmd("SMISMEMBER", "s", "1", "4", "x", "3", "1"),
			cmd("SMISMEMBER", "nokey", "1", "2"),
			cmd("TYPE", "s"),
			cmd("OBJECT", "ENCODING", "s"),
			cmd("SREM", "s", "1", "1", "9", "x"),
			cmd("SMEMBERS", "s"),
			cmd("SREM", "nokey", "1"),
			cmd("SREM", "s", "3", "2", "-5", maxInt64, minInt64),
			cmd("EXISTS", "s"),
			cmd("TYPE", "s"),
			cmd("SMEMBERS", "s"),
			cmd("SCARD", "s"),
		}},
		{"hashtable-basics", []Step{
			cmd("SADD", "h", "b", "a", "c", "1"),
			sorted("SMEMBERS", "h"),
			cmd("OBJECT", "ENCODING", "h"),
			cmd("SCARD", "h"),
			cmd("SISMEMBER", "h", "a"),
			cmd("SISMEMBER", "h", "1"),
			cmd("SISMEMBER", "h", "z"),
			cmd("SMISMEMBER", "h", "a", "z", "1"),
			cmd("SREM", "h", "a", "1", "q"),
			sorted("SMEMBERS", "h"),
			cmd("SREM", "h", "b", "c"),
			cmd("EXISTS", "h"),
		}},
		{"binary-members", []Step{
			cmd("SADD", binaryKey, "", binary, "\x00", "héllo ✓", "a b", "\r\n"),
			sorted("SMEMBERS", binaryKey),
			cmd("SISMEMBER", binaryKey, ""),
			cmd("SISMEMBER", binaryKey, binary),
			cmd("SMISMEMBER", binaryKey, "\x00", "\x00\x00", "héllo ✓"),
			cmd("SREM", binaryKey, ""),
			cmd("SISMEMBER", binaryKey, ""),
			cmd("SCARD", binaryKey),
			cmd("SADD", "big", mib),
			cmd("SISMEMBER", "big", mib),
			cmd("SMEMBERS", "big"),
		}},
		{"arity", []Step{
			cmd("SADD"), cmd("SADD", "s"), cmd("SREM", "s"), cmd("SMEMBERS"), cmd("SMEMBERS", "a", "b"),
			cmd("SISMEMBER", "s"), cmd("SISMEMBER", "s", "a", "b"), cmd("SMISMEMBER", "s"),
			cmd("SCARD"), cmd("SCARD", "a", "b"), cmd("SPOP"), cmd("SRANDMEMBER"),
			cmd("SMOVE", "a", "b"), cmd("SMOVE", "a", "b", "c", "d"), cmd("SINTER"), cmd("SINTERSTORE", "d"),
			cmd("SINTERCARD", "1"), cmd("SUNION"), cmd("SUNIONSTORE", "d"), cmd("SDIFF"), cmd("SDIFFSTORE", "d"),
			cmd("SSCAN", "s"), cmd("sadd", "s", "1"), cmd("SaDd", "s", "2"), cmd("smembers", "s"),
			cmd("SPOP", "s", "1", "2"), cmd("SRANDMEMBER", "s", "1", "2"),
		}},
		{"wrongtype", []Step{
			cmd("SET", "str", "v"),
			cmd("SADD", "set", "a"),
			cmd("SADD", "str", "a"), cmd("SREM", "str", "a"), cmd("SMEMBERS", "str"), cmd("SISMEMBER", "str", "a"),
			cmd("SMISMEMBER", "str", "a"), cmd("SCARD", "str"), cmd("SPOP", "str"), cmd("SPOP", "str", "2"),
			cmd("SRANDMEMBER", "str"), cmd("SRANDMEMBER", "str", "2"), cmd("SSCAN", "str", "0"),
			cmd("SMOVE", "str", "set", "a"), cmd("SMOVE", "set", "str", "a"), cmd("SMOVE", "nokey", "str", "a"),
			cmd("SINTER", "set", "str"), cmd("SINTER", "nokey", "str"), cmd("SINTER", "str", "nokey"),
			cmd("SUNION", "set", "nokey", "str"), cmd("SDIFF", "nokey", "str"), cmd("SDIFF", "set", "str"),
			cmd("SINTERCARD", "2", "nokey", "str"), cmd("SINTERSTORE", "d", "set", "str"),
			cmd("SUNIONSTORE", "d", "str"), cmd("SDIFFSTORE", "d", "set", "str"), cmd("EXISTS", "d"),
			cmd("GET", "set"), cmd("APPEND", "set", "x"), cmd("INCR", "set"), cmd("STRLEN", "set"),
			cmd("GETRANGE", "set", "0", "1"), cmd("SETRANGE", "set", "0", "x"), cmd("GETDEL", "set"),
			cmd("GETEX", "set"), cmd("INCRBYFLOAT", "set", "1"), cmd("MGET", "set", "str"),
			cmd("GETSET", "set", "x"), cmd("SET", "set", "x", "GET"),
			cmd("SMEMBERS", "set"),
			cmd("SET", "set", "now a string"), cmd("TYPE", "set"), cmd("GET", "set"),
			cmd("SUNIONSTORE", "str", "nokey"), cmd("EXISTS", "str"),
		}},
		{"multi-key", []Step{
			cmd("SADD", "a", "1", "2", "3", "4"),
			cmd("SADD", "b", "3", "4", "5"),
			cmd("SADD", "c", "4", "x", "3"),
			cmd("SINTER", "a", "b"),
			cmd("SINTER", "a"),
			sorted("SINTER", "c", "a", "b"),
			cmd("SINTER", "a", "b", "nokey"),
			cmd("SUNION", "a", "b"),
			sorted("SUNION", "a", "c"),
			cmd("SUNION", "nokey", "b", "nokey2"),
			cmd("SUNION", "nokey"),
			cmd("SDIFF", "a", "b"),
			cmd("SDIFF", "a", "nokey", "b"),
			cmd("SDIFF", "nokey", "a"),
			cmd("SDIFF", "a", "a"),
			cmd("SDIFF", "c", "a"),
			cmd("SINTERCARD", "2", "a", "b"),
			cmd("SINTERCARD", "3", "a", "b", "c"),
			cmd("SINTERCARD", "2", "a", "b", "LIMIT", "1"),
			cmd("SINTERCARD", "2", "a", "b", "limit", "0"),
			cmd("SINTERCARD", "1", "a", "LIMIT", "1", "LIMIT", "3"),
			cmd("SINTERCARD", "2", "a", "nokey"),
			cmd("SINTERSTORE", "d", "a", "b"),
			cmd("SMEMBERS", "d"),
			cmd("OBJECT", "ENCODING", "d"),
			cmd("SINTERSTORE", "d", "a", "nokey"),
			cmd("EXISTS", "d"),
			cmd("SUNIONSTORE", "d", "a", "c"),
			sorted("SMEMBERS", "d"),
			cmd("OBJECT", "ENCODING", "d"),
			cmd("SDIFFSTORE", "d", "a", "a"),
			cmd("EXISTS", "d"),
			cmd("SDIFFSTORE", "d", "c", "a"),
			cmd("SMEMBERS", "d"),
			cmd("OBJECT", "ENCODING", "d"),
			cmd("SET", "d", "string"),
			cmd("EXPIRE", "d", "100"),
			cmd("SUNIONSTORE", "d", "a"),
			cmd("TTL", "d"),
			cmd("TYPE", "d"),
			cmd("SINTERSTORE", "a", "a", "b"),
			cmd("SMEMBERS", "a"),
			cmd("SUNIONSTORE", "d", "nokey"),
			cmd("EXISTS", "d"),
			cmd("SINTERSTORE", "nokey2", "nokey"),
			cmd("EXISTS", "nokey2"),
		}},
		{"sdiff-algorithms", []Step{
			// Redis's second algorithm (copy the first, remove the
			// others) keeps the copy's encoding.
			cmd("SADD", "a", "1", "2", "3", "4", "5", "6", "x"),
			cmd("SADD", "b", "x"),
			cmd("SADD", "c", "y"),
			cmd("SDIFFSTORE", "d", "a", "b", "c"),
			cmd("OBJECT", "ENCODING", "d"),
			sorted("SMEMBERS", "d"),
			cmd("SDIFFSTORE", "d", "a", "b"),
			cmd("OBJECT", "ENCODING", "d"),
			cmd("SMEMBERS", "d"),
			sorted("SDIFF", "a", "b", "c"),
		}},
		{"sintercard-errors", []Step{
			cmd("SADD", "s", "1", "2"),
			cmd("SINTERCARD", "0", "s"), cmd("SINTERCARD", "-1", "s"), cmd("SINTERCARD", "x", "s"),
			cmd("SINTERCARD", "2", "s"), cmd("SINTERCARD", overMax, "s"),
			cmd("SINTERCARD", "1", "s", "LIMIT", "-1"), cmd("SINTERCARD", "1", "s", "LIMIT", "x"),
			cmd("SINTERCARD", "1", "s", "FOO", "1"), cmd("SINTERCARD", "1", "s", "LIMIT"),
			cmd("SINTERCARD", "1", "s", "s"),
		}},
		{"encodings", []Step{
			cmd(with(ints(1, 512), "SADD", "i")...),
			cmd("OBJECT", "ENCODING", "i"),
			cmd("SMEMBERS", "i"),
			cmd("SADD", "i", "512"),
			cmd("OBJECT", "ENCODING", "i"),
			cmd("SADD", "i", "513"),
			cmd("OBJECT", "ENCODING", "i"),
			cmd(with(ints(100, 400), "SREM", "i")...),
			cmd("OBJECT", "ENCODING", "i"),
			cmd("SCARD", "i"),
			cmd(with(ints(-3, 513), "SADD", "j")...),
			cmd("OBJECT", "ENCODING", "j"),
			cmd("SADD", "k", "1", "2", "x"),
			cmd("OBJECT", "ENCODING", "k"),
			cmd("SREM", "k", "x"),
			cmd("OBJECT", "ENCODING", "k"),
			cmd("SADD", "n", "01", "-0", "+1", " 1", "1 "),
			cmd("OBJECT", "ENCODING", "n"),
			cmd("SADD", "o", overMax),
			cmd("OBJECT", "ENCODING", "o"),
			cmd("SADD", "p", underMin, "1"),
			cmd("OBJECT", "ENCODING", "p"),
			cmd("SADD", "q", maxInt64, minInt64, "0"),
			cmd("OBJECT", "ENCODING", "q"),
			cmd("SMEMBERS", "q"),
			cmd("SUNIONSTORE", "u", "i", "q"),
			cmd("OBJECT", "ENCODING", "u"),
			cmd("SINTERSTORE", "u", "i", "i"),
			cmd("OBJECT", "ENCODING", "u"),
			cmd("SMEMBERS", "u"),
			cmd("SUNION", "q", "k"),
			cmd("CONFIG", "SET", "set-max-intset-entries", "4"),
			cmd("CONFIG", "GET", "set-max-intset-entries"),
			cmd("SADD", "r", "1", "2", "3", "4"),
			cmd("OBJECT", "ENCODING", "r"),
			cmd("SADD", "r", "4"),
			cmd("OBJECT", "ENCODING", "r"),
			cmd("SADD", "r", "5"),
			cmd("OBJECT", "ENCODING", "r"),
			cmd("OBJECT", "ENCODING", "q"),
			cmd("SADD", "q", "0"),
			cmd("OBJECT", "ENCODING", "q"),
			cmd("SADD", "q", "7", "8"),
			cmd("OBJECT", "ENCODING", "q"),
			cmd("CONFIG", "SET", "set-max-intset-entries", "0"),
			cmd("SADD", "z", "1"),
			cmd("OBJECT", "ENCODING", "z"),
			cmd("CONFIG", "SET", "set-max-intset-entries", "-1"),
			cmd("CONFIG", "SET", "set-max-intset-entries", "x"),
			cmd("CONFIG", "SET", "set-max-intset-entries", "512"),
			cmd("OBJECT", "ENCODING", "nokey"),
		}},
		{"spop-srandmember", []Step{
			cmd("SPOP", "nokey"), cmd("SPOP", "nokey", "2"), cmd("SPOP", "nokey", "0"),
			cmd("SRANDMEMBER", "nokey"), cmd("SRANDMEMBER", "nokey", "2"), cmd("SRANDMEMBER", "nokey", "-2"),
			cmd("SADD", "s", "5", "1", "3"),
			cmd("SPOP", "s", "-1"), cmd("SPOP", "s", "x"), cmd("SPOP", "s", "0"),
			cmd("SRANDMEMBER", "s", "x"), cmd("SRANDMEMBER", "s", minInt64), cmd("SRANDMEMBER", "s", "0"),
			cmd("SRANDMEMBER", "s", "3"), cmd("SRANDMEMBER", "s", "100"), cmd("SRANDMEMBER", "s", maxInt64),
			cmd("SPOP", "s", "3"),
			cmd("EXISTS", "s"),
			cmd("SADD", "s", "7"),
			cmd("SPOP", "s"),
			cmd("EXISTS", "s"),
			cmd("SADD", "s", "a"),
			cmd("SRANDMEMBER", "s"),
			cmd("SRANDMEMBER", "s", "-3"),
			cmd("SPOP", "s", "1"),
			cmd("EXISTS", "s"),
			cmd("SADD", "h", "x", "y", "z"),
			sorted("SRANDMEMBER", "h", "5"),
			sorted("SPOP", "h", "10"),
			cmd("EXISTS", "h"),
			cmd("SADD", "r", "1", "2", "3", "4", "5", "6"),
			typeOnly("SPOP", "r", "2"),
			cmd("SCARD", "r"),
			typeOnly("SPOP", "r"),
			cmd("SCARD", "r"),
			typeOnly("SRANDMEMBER", "r", "2"),
			typeOnly("SRANDMEMBER", "r", "-7"),
			// A hashtable of integers that SPOP leaves few members of is
			// built again, an intset (Redis's third SPOP case).
			cmd(with(ints(1, 600), "SADD", "big")...),
			cmd("OBJECT", "ENCODING", "big"),
			typeOnly("SPOP", "big", "590"),
			cmd("SCARD", "big"),
			cmd("OBJECT", "ENCODING", "big"),
			cmd(with(ints(1, 600), "SADD", "big2")...),
			typeOnly("SPOP", "big2", "10"),
			cmd("OBJECT", "ENCODING", "big2"),
		}},
		{"smove", []Step{
			cmd("SADD", "a", "1", "2"),
			cmd("SMOVE", "nokey", "a", "1"),
			cmd("SMOVE", "a", "b", "9"),
			cmd("EXISTS", "b"),
			cmd("SMOVE", "a", "a", "1"),
			cmd("SMOVE", "a", "a", "9"),
			cmd("SMOVE", "a", "b", "1"),
			cmd("SMEMBERS", "a"),
			cmd("SMEMBERS", "b"),
			cmd("OBJECT", "ENCODING", "b"),
			cmd("SADD", "b", "2"),
			cmd("SMOVE", "a", "b", "2"),
			cmd("EXISTS", "a"),
			cmd("SMEMBERS", "b"),
			cmd("SADD", "w", "x"),
			cmd("SMOVE", "w", "b", "x"),
			cmd("OBJECT", "ENCODING", "b"),
			sorted("SMEMBERS", "b"),
			cmd("SMOVE", "b", "c", "x"),
			cmd("OBJECT", "ENCODING", "c"),
			cmd("EXPIRE", "b", "100"),
			cmd("SMOVE", "b", "c", "1"),
			cmd("TTL", "b"),
			cmd("TTL", "c"),
		}},
		{"sscan", []Step{
			cmd("SSCAN", "nokey", "0"),
			cmd("SSCAN", "nokey", "x"),
			cmd("SADD", "i", "10", "2", "33", "-4"),
			cmd("SSCAN", "i", "0"),
			cmd("SSCAN", "i", "0", "COUNT", "1"),
			cmd("SSCAN", "i", "0", "MATCH", "*3*"),
			cmd("SSCAN", "i", "0", "match", "1?", "count", "100"),
			cmd("SSCAN", "i", "7"),
			cmd("SSCAN", "i", "x"),
			cmd("SSCAN", "i", "-1"),
			cmd("SSCAN", "i", "0", "COUNT", "0"),
			cmd("SSCAN", "i", "0", "COUNT", "x"),
			cmd("SSCAN", "i", "0", "TYPE", "set"),
			cmd("SSCAN", "i", "0", "MATCH"),
			cmd("SSCAN", "i", "0", "FOO", "1"),
			cmd(with(words("m", 300), "SADD", "h")...),
			sscan("SSCAN", "h", "0"),
			sscan("SSCAN", "h", "0", "COUNT", "7"),
			sscan("SSCAN", "h", "0", "MATCH", "m1*", "COUNT", "25"),
			sscan("SSCAN", "h", "0", "MATCH", "nothing"),
			cmd(with(ints(1, 1000), "SADD", "bigint")...),
			sscan("SSCAN", "bigint", "0", "COUNT", "100"),
		}},
		{"expiry", []Step{
			cmd("SADD", "s", "1", "2"),
			cmd("EXPIRE", "s", "100"),
			cmd("SADD", "s", "3"),
			cmd("TTL", "s"),
			cmd("SREM", "s", "1"),
			cmd("TTL", "s"),
			typeOnly("SPOP", "s"),
			cmd("TTL", "s"),
			cmd("PERSIST", "s"),
			cmd("TTL", "s"),
			cmd("PEXPIRE", "s", "20"),
			sleep(60),
			cmd("SMEMBERS", "s"),
			cmd("EXISTS", "s"),
			cmd("SCARD", "s"),
			cmd("SADD", "s", "9"),
			cmd("TTL", "s"),
			cmd("SADD", "t", "a"),
			cmd("EXPIREAT", "t", "1"),
			cmd("EXISTS", "t"),
		}},
		{"keyspace", []Step{
			cmd("SADD", "s", "1", "2", "a"),
			cmd("SADD", "i", "1", "2"),
			cmd("SET", "str", "v"),
			cmd("DBSIZE"),
			sorted("KEYS", "*"),
			scan("SCAN", "0", "TYPE", "set"),
			scan("SCAN", "0", "TYPE", "string"),
			cmd("RENAME", "s", "s2"),
			cmd("EXISTS", "s", "s2"),
			sorted("SMEMBERS", "s2"),
			cmd("OBJECT", "ENCODING", "s2"),
			cmd("RENAMENX", "s2", "str"),
			cmd("RENAMENX", "s2", "s3"),
			cmd("COPY", "s3", "c"),
			cmd("COPY", "s3", "c"),
			cmd("COPY", "i", "c", "REPLACE"),
			cmd("SMEMBERS", "c"),
			cmd("OBJECT", "ENCODING", "c"),
			cmd("COPY", "s3", "c", "DB", "1"),
			cmd("MOVE", "i", "1"),
			cmd("MOVE", "s3", "1"),
			cmd("EXISTS", "i"),
			cmd("SELECT", "1"),
			cmd("SMEMBERS", "i"),
			sorted("SMEMBERS", "c"),
			cmd("OBJECT", "ENCODING", "c"),
			cmd("SWAPDB", "0", "1"),
			cmd("SMEMBERS", "i"),
			cmd("SELECT", "0"),
			sorted("SMEMBERS", "c"),
			cmd("EXISTS", "i"),
			cmd("DEL", "c", "s3"),
			cmd("UNLINK", "str"),
			cmd("DBSIZE"),
			cmd("RANDOMKEY"),
			cmd("FLUSHDB"),
			cmd("EXISTS", "c", "s3"),
			cmd("SADD", "only", "1"),
			cmd("RANDOMKEY"),
			cmd("RENAME", "only", "only"),
			cmd("TYPE", "only"),
		}},
		{"keyspace-of-hashtable-sets", hashtableSetSteps()},
		{"command-info", []Step{
			cmd("COMMAND", "INFO", "sadd", "srem", "smembers", "sismember", "smismember", "scard"),
			cmd("COMMAND", "INFO", "spop", "srandmember", "smove", "sinter", "sinterstore", "sintercard"),
			cmd("COMMAND", "INFO", "sunion", "sunionstore", "sdiff", "sdiffstore", "sscan"),
			cmd("COMMAND", "GETKEYS", "SINTERCARD", "2", "a", "b", "LIMIT", "1"),
			cmd("COMMAND", "GETKEYS", "SINTERCARD", "3", "a", "b"),
			cmd("COMMAND", "GETKEYS", "SINTERCARD", "0", "a"),
			cmd("COMMAND", "GETKEYSANDFLAGS", "SINTERSTORE", "d", "a", "b"),
			cmd("COMMAND", "GETKEYSANDFLAGS", "SMOVE", "a", "b", "m"),
			cmd("COMMAND", "GETKEYSANDFLAGS", "SINTERCARD", "2", "a", "b"),
		}},
		{"watch", []Step{
			cmd("SADD", "s", "1"),
			cmd("WATCH", "s"),
			cmd("SADD", "s", "1").On(1),
			cmd("SREM", "s", "7").On(1),
			cmd("SMOVE", "s", "s", "1").On(1),
			cmd("SMOVE", "nokey", "s", "1").On(1),
			cmd("MULTI"),
			cmd("SCARD", "s"),
			cmd("EXEC"),
			cmd("WATCH", "s"),
			cmd("SADD", "s", "2").On(1),
			cmd("MULTI"),
			cmd("SCARD", "s"),
			cmd("EXEC"),
			cmd("WATCH", "d"),
			cmd("SINTERSTORE", "d", "s", "nokey").On(1),
			cmd("MULTI"),
			cmd("SCARD", "s"),
			cmd("EXEC"),
			cmd("WATCH", "d"),
			cmd("SUNIONSTORE", "d", "s").On(1),
			cmd("MULTI"),
			cmd("SCARD", "s"),
			cmd("EXEC"),
			cmd("WATCH", "t"),
			cmd("SMOVE", "s", "t", "1").On(1),
			cmd("MULTI"),
			cmd("SCARD", "s"),
			cmd("EXEC"),
			cmd("MULTI"),
			cmd("SADD", "m", "1", "2"),
			cmd("SMEMBERS", "m"),
			cmd("SPOP", "m", "5"),
			cmd("SINTERCARD", "1", "m"),
			cmd("EXEC"),
		}},
	}
}

// TestDiffSetLargeMembers checks sets of sizes past one encoding's page
// against Redis: SADD of 100,000 integers in steps, then SCARD,
// SISMEMBER and an SSCAN run to the end.
func TestDiffSetLarge(t *testing.T) {
	t.Parallel()
	var steps []Step
	for i := 0; i < 20; i++ {
		steps = append(steps, cmd(with(ints(i*1000, 1000), "SADD", "big")...))
	}
	steps = append(steps,
		cmd("SCARD", "big"), cmd("SISMEMBER", "big", "19999"), cmd("SISMEMBER", "big", "20000"),
		cmd("OBJECT", "ENCODING", "big"), sscan("SSCAN", "big", "0", "COUNT", "500"),
		cmd(with(strings.Fields("1 2 3 4 5"), "SREM", "big")...), cmd("SCARD", "big"),
		cmd("SINTERCARD", "1", "big", "LIMIT", "100"))
	RunDiffScripts(t, []Script{{"large", steps}})
}

// setDumpShapes are sets whose payloads take every path of the two
// encodings: intsets of 16-, 32- and 64-bit integers and at the size
// limit, hashtables of words, of integers past the limit, with binary
// members and members that RDB stores as integers.
func setDumpShapes() [][]string {
	return [][]string{
		{"1"}, {"-1", "0", "32767", "-32768"}, {"32768", "1"}, {"-2147483648", "2147483647"},
		{"2147483648", "0"}, {minInt64, maxInt64, "5"}, ints(-256, 512),
		{"a"}, {"1", "a", "-70000", "4294967296", "12345678901"}, {"", binary, "héllo", "01", "-0"},
		ints(1, 513), append(words("w", 100), mib[:1000]),
	}
}

func TestDiffSetDumpRestore(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	noCompression(t, p)
	var dumps []Step
	for i, shape := range setDumpShapes() {
		k := fmt.Sprint("s", i)
		dumps = append(dumps, cmd(with(shape, "SADD", k)...), cmd("OBJECT", "ENCODING", k))
		if len(shape) <= 512 && allIntegers(shape) {
			// An intset's payload is Redis's byte for byte.
			dumps = append(dumps, cmd("DUMP", k))
		}
	}
	obj := func(o string) string { return rdbPayload(o, 10) }
	intset := func(enc uint32, vals ...int64) string {
		b := []byte{byte(enc), 0, 0, 0, byte(len(vals)), 0, 0, 0}
		for _, v := range vals {
			for i := uint32(0); i < enc; i++ {
				b = append(b, byte(uint64(v)>>(8*i)))
			}
		}
		return "\x0b" + string(rune(len(b))) + string(b)
	}
	var payloads []Step
	for _, pl := range []string{
		obj("\x02\x01\x01a"), obj("\x02\x02\x01a\x01b"), obj("\x02\x02\xc0\x01\xc0\x02"),
		obj("\x02\x00"), obj("\x02\x02\x01a\x01a"), obj("\x02\x02\xc0\x01\x011"), obj("\x02\x03\x01a"),
		obj("\x02\x01\xc3\x01a"), obj("\x02"), obj("\x02\x40\x01\x01a"),
		obj(intset(2, -3, 7)), obj(intset(4, 70000, -70000)), obj(intset(8, 1<<40, 2)), obj(intset(2)),
		obj(intset(3, 1)), obj("\x0b\x08\x02\x00\x00\x00\x05\x00\x00\x00"), obj("\x0b\x05abcde"),
		obj(intset(2, 1, 2)[:13]),
	} {
		payloads = append(payloads,
			cmd("RESTORE", "r", "0", pl, "REPLACE"), cmd("TYPE", "r"), cmd("OBJECT", "ENCODING", "r"),
			// Redis keeps a crafted intset out of order as it is;
			// oncekv sorts it (README).
			sorted("SMEMBERS", "r"), cmd("DEL", "r"))
	}
	p.RunScripts(t, []Script{
		{"set-dump", dumps},
		{"set-restore", payloads},
		{"set-restore-limit", []Step{
			cmd("CONFIG", "SET", "set-max-intset-entries", "2"),
			cmd("RESTORE", "a", "0", obj(intset(2, 1, 2, 3))), cmd("OBJECT", "ENCODING", "a"),
			cmd("RESTORE", "b", "0", obj("\x02\x03\xc0\x01\xc0\x02\xc0\x03")), cmd("OBJECT", "ENCODING", "b"),
			cmd("RESTORE", "c", "0", obj("\x02\x02\xc0\x01\xc0\x02")), cmd("OBJECT", "ENCODING", "c"),
			cmd("SMEMBERS", "c"),
			cmd("CONFIG", "SET", "set-max-intset-entries", "512"),
			cmd("RESTORE", "b", "0", obj("\x02\x01\x01a")), cmd("RESTORE", "d", "100000", obj("\x02\x01\x01a")),
			cmd("TTL", "d"),
		}},
	})
}

func allIntegers(ms []string) bool {
	for _, m := range ms {
		if n, err := strconv.ParseInt(m, 10, 64); err != nil || strconv.FormatInt(n, 10) != m {
			return false
		}
	}
	return true
}

// TestSetDumpCrossRestore moves every shape of set both ways with
// Redis's default, LZF-compressing DUMP: the set restored on the other
// side has the same members and the encoding Redis 7.0 would give it.
func TestSetDumpCrossRestore(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	r, o := DialRaw(t, p.Redis), DialRaw(t, p.Other)
	bulk := func(c *RawConn, args ...string) string {
		t.Helper()
		f := c.ReadFrameAfterDo(t, args...)
		if f.Type != '$' || f.Null {
			t.Fatalf("%s: %.200s: %q, want a string", c.Addr, fmtArgs(args), f.Raw)
		}
		return f.Str
	}
	do := func(c *RawConn, want string, args ...string) {
		t.Helper()
		if got := c.Do(args...); string(got) != want {
			t.Fatalf("%s: %.200s: %q, want %q", c.Addr, fmtArgs(args), got, want)
		}
	}
	for i, shape := range setDumpShapes() {
		k := fmt.Sprint("s", i)
		for _, c := range []*RawConn{r, o} {
			c.Do(with(shape, "SADD", k)...)
		}
		fromRedis, fromOncekv := bulk(r, "DUMP", k), bulk(o, "DUMP", k)
		do(o, "+OK\r\n", "RESTORE", k+":from-redis", "0", fromRedis)
		do(r, "+OK\r\n", "RESTORE", k+":from-oncekv", "0", fromOncekv)
		card := fmt.Sprintf(":%d\r\n", len(shape))
		for _, c := range []*RawConn{r, o} {
			from := "redis"
			if c == r {
				from = "oncekv"
			}
			key := k + ":from-" + from
			do(c, card, "SCARD", key)
			ones := "*" + strconv.Itoa(len(shape)) + "\r\n" + strings.Repeat(":1\r\n", len(shape))
			do(c, ones, with(shape, "SMISMEMBER", key)...)
			if want, got := bulk(r, "OBJECT", "ENCODING", k), bulk(c, "OBJECT", "ENCODING", key); got != want {
				t.Errorf("%s: %s restored as %s, redis made it %s", c.Addr, key, got, want)
			}
		}
	}
}

// hashtableSetSteps drive hashtable-encoded sets, which oncekv keeps as
// store objects (one element per member), through the set commands and
// every key command: a copy must own its members (changing it leaves the
// original as it was), a key deleted, replaced, flushed or expired and
// made again must start empty, and a set moving between an object and an
// intset (SMOVE, the STORE forms, RESTORE) must read the same.
func hashtableSetSteps() []Step {
	dumpRestore := "return redis.call('RESTORE', KEYS[2], 0, redis.call('DUMP', KEYS[1]))"
	long2k := strings.Repeat("L", 2000) // named by its SHA-256 in an object
	return []Step{
		cmd(with(ints(0, 600), "SADD", "t")...),
		cmd("OBJECT", "ENCODING", "t"),
		cmd("SADD", "t", "word", "599", "600", long2k),
		cmd("SCARD", "t"),
		cmd("SISMEMBER", "t", long2k),
		cmd("SISMEMBER", "t", long2k[1:]),
		cmd("SISMEMBER", "t", "word"),
		cmd("SISMEMBER", "t", "300"),
		cmd("SISMEMBER", "t", "601"),
		cmd("SMISMEMBER", "t", "0", "nope", "599", "word", "0"),
		cmd("SREM", "t", "0", "1", "nope", "1"),
		cmd("SREM", "t", "nope"),
		cmd("SREM", "t", long2k+"x", long2k),
		cmd("SADD", "t", long2k),
		cmd("SCARD", "t"),
		cmd("SISMEMBER", "t", "1"),
		sorted("SMEMBERS", "t"),
		sscan("SSCAN", "t", "0"),
		sscan("SSCAN", "t", "0", "COUNT", "17"),
		sscan("SSCAN", "t", "0", "MATCH", "5*", "COUNT", "3"),
		// SMOVE from an object to an intset, and back.
		cmd("SADD", "i", "-1", "-2"),
		cmd("SMOVE", "t", "i", "42"),
		cmd("SMOVE", "t", "i", "42"),
		cmd("OBJECT", "ENCODING", "i"),
		cmd("SMEMBERS", "i"),
		cmd("SISMEMBER", "t", "42"),
		cmd("SCARD", "t"),
		cmd("SMOVE", "i", "t", "-1"),
		cmd("SMOVE", "i", "t", "42"),
		cmd("SMOVE", "i", "t", "-2"),
		cmd("EXISTS", "i"),
		cmd("SCARD", "t"),
		cmd("SMOVE", "t", "i", "word"),
		cmd("OBJECT", "ENCODING", "i"),
		cmd("SMEMBERS", "i"),
		cmd("SMOVE", "t", "t", "5"),
		cmd("SMOVE", "t", "fresh", "7"),
		cmd("OBJECT", "ENCODING", "fresh"),
		cmd("SMEMBERS", "fresh"),
		// Set algebra over objects, intsets and missing keys.
		cmd(with(ints(550, 100), "SADD", "u")...),
		cmd("SADD", "small", "3", "560", "599", "x"),
		sorted("SINTER", "t", "u"),
		sorted("SINTER", "small", "t", "u"),
		cmd("SINTERCARD", "2", "t", "u"),
		cmd("SINTERCARD", "2", "t", "u", "LIMIT", "5"),
		sorted("SUNION", "t", "u", "i", "nokey"),
		sorted("SDIFF", "t", "u", "small"),
		sorted("SDIFF", "u", "t"),
		cmd("SINTERSTORE", "st", "small", "t"),
		cmd("OBJECT", "ENCODING", "st"),
		cmd("SMEMBERS", "st"),
		cmd("SUNIONSTORE", "st", "t", "u"),
		cmd("OBJECT", "ENCODING", "st"),
		cmd("SCARD", "st"),
		cmd("SISMEMBER", "st", "649"),
		cmd("SDIFFSTORE", "st", "u", "t"),
		cmd("OBJECT", "ENCODING", "st"),
		cmd("SMEMBERS", "st"),
		cmd("SUNIONSTORE", "t", "t", "small"),
		cmd("SCARD", "t"),
		cmd("SINTERSTORE", "t", "t", "u"),
		cmd("SCARD", "t"),
		cmd("OBJECT", "ENCODING", "t"),
		sorted("ZUNION", "2", "t", "small", "WITHSCORES"),
		cmd("ZINTERCARD", "2", "t", "u"),
		cmd("SINTERSTORE", "t", "small", "nokey"),
		cmd("EXISTS", "t"),
		// The key commands.
		cmd(with(words("m", 600), "SADD", "t")...),
		cmd("EXPIRE", "t", "100"),
		cmd("TTL", "t"),
		cmd("SADD", "t", "one more"),
		cmd("SREM", "t", "m7"),
		cmd("TTL", "t"),
		cmd("PERSIST", "t"),
		cmd("TTL", "t"),
		cmd("RENAME", "t", "t2"),
		cmd("EXISTS", "t"),
		cmd("SCARD", "t2"),
		cmd("SISMEMBER", "t2", "one more"),
		cmd("COPY", "t2", "t3"),
		cmd("SREM", "t3", "m5", "m6"),
		cmd("SADD", "t3", "only-in-t3"),
		cmd("SCARD", "t2"),
		cmd("SCARD", "t3"),
		cmd("SISMEMBER", "t2", "only-in-t3"),
		cmd("SISMEMBER", "t2", "m5"),
		sorted("SDIFF", "t2", "t3"),
		cmd("MOVE", "t3", "1"),
		cmd("SELECT", "1"),
		cmd("SCARD", "t3"),
		cmd("SISMEMBER", "t3", "only-in-t3"),
		cmd("COPY", "t3", "back", "DB", "0"),
		cmd("SELECT", "0"),
		cmd("SCARD", "back"),
		cmd("SREM", "back", "only-in-t3"),
		cmd("SWAPDB", "0", "1"),
		cmd("SCARD", "t3"),
		cmd("SISMEMBER", "t3", "only-in-t3"),
		cmd("SCARD", "t2"),
		cmd("SWAPDB", "0", "1"),
		cmd("DEL", "t2"),
		cmd("SADD", "t2", "fresh", "1"), // a new set under the old name
		sorted("SMEMBERS", "t2"),
		cmd("OBJECT", "ENCODING", "t2"),
		cmd("SADD", "t2", "2"),
		cmd("SREM", "t2", "fresh"),
		cmd("OBJECT", "ENCODING", "t2"),
		sorted("SMEMBERS", "t2"), // a hashtable's order, though integers
		cmd("SET", "back", "now a string"),
		cmd("GET", "back"),
		cmd("SADD", "back", "a"),
		cmd("DEL", "back"),
		cmd("SADD", "back", "1"),
		cmd("SMEMBERS", "back"),
		cmd("OBJECT", "ENCODING", "back"),
		// DUMP and RESTORE of a big set (on each side), and RESTORE over
		// an object.
		cmd(with(words("d", 700), "SADD", "d", long2k)...),
		cmd("EVAL", dumpRestore, "2", "d", "r"),
		cmd("OBJECT", "ENCODING", "r"),
		cmd("SCARD", "r"),
		sorted("SDIFF", "d", "r"),
		cmd("SADD", "r", "new"),
		cmd("SISMEMBER", "d", "new"),
		cmd(with(ints(0, 10), "SADD", "small2")...),
		cmd("EVAL", "return redis.call('RESTORE', KEYS[2], 0, redis.call('DUMP', KEYS[1]), 'REPLACE')", "2", "small2", "r"),
		cmd("OBJECT", "ENCODING", "r"),
		cmd("SMEMBERS", "r"),
		cmd("SCARD", "d"),
		// SPOP and SRANDMEMBER of an object.
		typeOnly("SPOP", "d"),
		typeOnly("SRANDMEMBER", "d"),
		cmd("SCARD", "d"),
		typeOnly("SPOP", "d", "10"),
		cmd("SCARD", "d"),
		typeOnly("SRANDMEMBER", "d", "-5"),
		typeOnly("SRANDMEMBER", "d", "5"),
		cmd("EVAL", "return #redis.call('SRANDMEMBER', KEYS[1], 800)", "1", "d"),
		cmd("EVAL", "return #redis.call('SPOP', KEYS[1], 600)", "1", "d"),
		cmd("SCARD", "d"),
		cmd("EVAL", "return #redis.call('SPOP', KEYS[1], 700)", "1", "d"),
		cmd("EXISTS", "d"),
		cmd("FLUSHALL"),
		cmd("SCARD", "t3"),
		cmd("SCARD", "r"),
		cmd(with(ints(0, 513), "SADD", "t")...),
		cmd("OBJECT", "ENCODING", "t"),
		cmd("PEXPIRE", "t", "1"),
		sleep(20),
		cmd("SCARD", "t"),
		cmd("EXISTS", "t"),
		cmd("SADD", "t", "1"),
		cmd("SMEMBERS", "t"),
		cmd("OBJECT", "ENCODING", "t"),
	}
}
