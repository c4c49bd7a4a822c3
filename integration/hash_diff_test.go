package integration

import (
	"fmt"
	"strings"
	"testing"
)

// Hashes, byte for byte with redis-server 7.0 in RESP2 and RESP3. A
// listpack-encoded hash answers in insertion order on both sides; a
// hashtable-encoded one in an order of its own here, so its whole-hash
// replies are compared as multisets (sorted) and its scans by their union.

func TestDiffHashes(t *testing.T) {
	t.Parallel()
	RunDiffScripts(t, hashScripts())
}

// TestDiffHashDump: DUMP of a listpack-encoded hash is Redis's payload
// byte for byte (redis-server with rdbcompression no, as
// TestDiffDumpRestore runs it); RESTORE makes the same hash, encoding
// included, on both sides.
func TestDiffHashDump(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	if r := DialRaw(t, p.Redis).Do("CONFIG", "SET", "rdbcompression", "no"); string(r) != "+OK\r\n" {
		t.Fatalf("CONFIG SET rdbcompression no: %q", r)
	}
	long := strings.Repeat("L", 100)
	p.RunScripts(t, []Script{{"hash-dump", []Step{
		hset("h", "f", "1", "g", "-5", "n", "300", "m", "-70000", "x", "9000000", "y", "3000000000",
			"z", maxInt64, "w", minInt64, "s", "hello", "e", "", binary, binary),
		cmd("DUMP", "h"),
		hset("h64", "a", strings.Repeat("v", 64), strings.Repeat("k", 63), "1"),
		cmd("DUMP", "h64"),
		cmd("RESTORE", "h2", "0", hashPayload),
		cmd("HGETALL", "h2"),
		cmd("OBJECT", "ENCODING", "h2"),
		cmd("DUMP", "h2"),
		cmd("RESTORE", "h2", "0", hashPayload),
		cmd("RESTORE", "h2", "0", hashPayload, "REPLACE"),
		cmd("RESTORE", "bad", "0", hashPayload[:len(hashPayload)-1]+"x"),
		cmd("RESTORE", "bad", "0", rdbPayload("\x10\x03abc", 10)),
		cmd("RESTORE", "bad", "0", rdbPayload("\x04\x00", 10)),
		cmd("EXISTS", "bad"),
		hset("t", "a", long, "b", "2"),
		cmd("OBJECT", "ENCODING", "t"),
		cmd("RESTORE", "t2", "0", rdbPayload("\x04\x02\x01a\x40\x64"+long+"\x01b\xc0\x02", 10)),
		cmd("OBJECT", "ENCODING", "t2"),
		sorted("HGETALL", "t2"),
		cmd("RESTORE", "t3", "0", rdbPayload("\x04\x02\x01a\x011\x01b\xc0\x02", 10)),
		cmd("OBJECT", "ENCODING", "t3"),
		cmd("HGETALL", "t3"),
		cmd("PTTL", "t3"),
		cmd("RESTORE", "t4", "100000", rdbPayload("\x04\x02\x01a\x011\x01b\xc0\x02", 10)),
		approx(1000, "PTTL", "t4"),
	}}})
}

// hashPayload is a DUMP of a two-field listpack hash (a=1, b=hello).
var hashPayload = rdbPayload("\x10\x13\x13\x00\x00\x00\x04\x00\x81a\x02\x01\x01\x81b\x02\x85hello\x06\xff", 10)

// TestHashCrossRestore: a hash dumped by either server is restored by the
// other with the same fields and values, listpack- and hashtable-encoded.
func TestHashCrossRestore(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	r, o := DialRaw(t, p.Redis), DialRaw(t, p.Other)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"small", []string{"a", "1", "b", "-300", "c", "", binary, "x"}},
		{"long value", []string{"a", strings.Repeat("v", 200), "b", "2"}},
		{"many", fieldArgs(600)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []*RawConn{r, o} {
				c.Do("DEL", "src", "from-other")
				c.Do(append([]string{"HSET", "src"}, tc.args...)...)
			}
			fromRedis := r.ReadFrameAfterDo(t, "DUMP", "src").Str
			fromOncekv := o.ReadFrameAfterDo(t, "DUMP", "src").Str
			if got := o.Do("RESTORE", "from-other", "0", fromRedis); string(got) != "+OK\r\n" {
				t.Fatalf("oncekv RESTORE of redis's DUMP: %q", got)
			}
			if got := r.Do("RESTORE", "from-other", "0", fromOncekv); string(got) != "+OK\r\n" {
				t.Fatalf("redis RESTORE of oncekv's DUMP: %q", got)
			}
			for _, c := range []*RawConn{r, o} {
				want := sortedElems(c.ReadFrameAfterDo(t, "HGETALL", "src"))
				got := sortedElems(c.ReadFrameAfterDo(t, "HGETALL", "from-other"))
				if string(got) != string(want) {
					t.Errorf("%s: restored %.200q, want %.200q", c.Addr, got, want)
				}
				if a, b := string(c.Do("OBJECT", "ENCODING", "src")), string(c.Do("OBJECT", "ENCODING", "from-other")); a != b {
					t.Errorf("%s: restored encoding %q, want %q", c.Addr, b, a)
				}
			}
		})
	}
}

// TestDiffHashConfig: hash-max-listpack-entries and -value, and their
// ziplist aliases, read and set as in Redis 7.0 and obeyed by later
// writes; a hash converted stays so when the limits rise again.
func TestDiffHashConfig(t *testing.T) {
	t.Parallel()
	RunDiffScripts(t, []Script{{"hash-config", []Step{
		sorted("CONFIG", "GET", "hash-max-*"),
		cmd("CONFIG", "SET", "hash-max-listpack-entries", "2"),
		cmd("CONFIG", "SET", "hash-max-ziplist-value", "4"),
		sorted("CONFIG", "GET", "hash-max-*"),
		cmd("CONFIG", "SET", "hash-max-listpack-entries", "-1"),
		cmd("CONFIG", "SET", "hash-max-listpack-value", "abc"),
		hset("two", "a", "1", "b", "2"),
		cmd("OBJECT", "ENCODING", "two"),
		hset("three", "a", "1", "b", "2", "c", "3"),
		cmd("OBJECT", "ENCODING", "three"),
		hset("v4", "a", "1234"),
		cmd("OBJECT", "ENCODING", "v4"),
		hset("v5", "a", "12345"),
		cmd("OBJECT", "ENCODING", "v5"),
		cmd("RESTORE", "r", "0", hashPayload),
		cmd("OBJECT", "ENCODING", "r"),
		cmd("CONFIG", "SET", "hash-max-ziplist-entries", "512", "hash-max-listpack-value", "64"),
		cmd("HDEL", "three", "c"),
		cmd("OBJECT", "ENCODING", "three"),
		sorted("CONFIG", "GET", "hash-max-*"),
	}}})
}

// fieldArgs is HSET's field/value list of n fields f0..f(n-1).
func fieldArgs(n int) []string {
	out := make([]string, 0, 2*n)
	for i := range n {
		out = append(out, fmt.Sprintf("f%d", i), fmt.Sprintf("v%d", i))
	}
	return out
}

// hscan is scan for HSCAN, whose cursor is its third argument.
func hscan(args ...string) Step { return Step{Args: args, Mode: ScanAll, Cursor: 2} }

func hset(key string, kv ...string) Step { return cmd(append([]string{"HSET", key}, kv...)...) }

func hashScripts() []Script {
	long2k, long70k := strings.Repeat("k", 2000), strings.Repeat("K", 70000)
	long64 := strings.Repeat("x", 64)
	long65 := strings.Repeat("y", 65)
	return []Script{
		{"hset-hget-basics", []Step{
			cmd("HSET", "h", "a", "1"),
			cmd("HSET", "h", "a", "2", "b", "3"),
			cmd("HGET", "h", "a"),
			cmd("HGET", "h", "nofield"),
			cmd("HGET", "nokey", "a"),
			cmd("HSETNX", "h", "a", "9"),
			cmd("HSETNX", "h", "c", "9"),
			cmd("HSETNX", "new", "c", "9"),
			cmd("HMSET", "h", "d", "4", "a", "5"),
			cmd("HGETALL", "h"),
			cmd("HKEYS", "h"),
			cmd("HVALS", "h"),
			cmd("HLEN", "h"),
			cmd("HLEN", "nokey"),
			cmd("HEXISTS", "h", "a"),
			cmd("HEXISTS", "h", "zz"),
			cmd("HEXISTS", "nokey", "a"),
			cmd("HSTRLEN", "h", "a"),
			cmd("HSTRLEN", "h", "zz"),
			cmd("HSTRLEN", "nokey", "zz"),
			cmd("HMGET", "h", "a", "zz", "b"),
			cmd("HMGET", "nokey", "a", "b"),
			cmd("HGETALL", "nokey"),
			cmd("HKEYS", "nokey"),
			cmd("HVALS", "nokey"),
			cmd("TYPE", "h"),
			cmd("OBJECT", "ENCODING", "h"),
		}},
		{"hdel-order-and-empty", []Step{
			hset("h", "a", "1", "b", "2", "c", "3", "d", "4"),
			cmd("HDEL", "h", "b"),
			cmd("HGETALL", "h"),
			cmd("HSET", "h", "b", "5"),
			cmd("HGETALL", "h"),
			cmd("HDEL", "h", "zz", "a", "a"),
			cmd("HDEL", "nokey", "a"),
			cmd("HDEL", "h", "c", "d", "b"),
			cmd("EXISTS", "h"),
			cmd("TYPE", "h"),
			cmd("HLEN", "h"),
		}},
		{"binary-and-empty", []Step{
			hset(binaryKey, binary, binary, "", "", "e", ""),
			cmd("HGETALL", binaryKey),
			cmd("HGET", binaryKey, ""),
			cmd("HSTRLEN", binaryKey, binary),
			cmd("HEXISTS", binaryKey, ""),
			cmd("HDEL", binaryKey, ""),
			cmd("HKEYS", binaryKey),
			cmd("HSET", "", "", "x"),
			cmd("HGETALL", ""),
			cmd("HSET", "utf8", "clé", "wörld ✓"),
			cmd("HGETALL", "utf8"),
		}},
		{"arity", []Step{
			cmd("HSET"), cmd("HSET", "h"), cmd("HSET", "h", "a"),
			cmd("HSET", "h", "a", "1", "b"),
			cmd("HMSET", "h", "a"), cmd("HMSET", "h", "a", "1", "b"),
			cmd("HSETNX", "h", "a"), cmd("HSETNX", "h", "a", "1", "2"),
			cmd("HGET", "h"), cmd("HGET", "h", "a", "b"),
			cmd("HMGET", "h"), cmd("HGETALL"), cmd("HGETALL", "h", "x"),
			cmd("HKEYS"), cmd("HVALS", "a", "b"), cmd("HDEL", "h"),
			cmd("HLEN"), cmd("HEXISTS", "h"), cmd("HSTRLEN", "h"),
			cmd("HINCRBY", "h", "a"), cmd("HINCRBYFLOAT", "h", "a"),
			cmd("HRANDFIELD"), cmd("HSCAN", "h"),
			cmd("EXISTS", "h"),
		}},
		{"wrongtype-both-ways", []Step{
			cmd("SET", "s", "v"),
			cmd("HSET", "s", "a", "1"), cmd("HMSET", "s", "a", "1"), cmd("HSETNX", "s", "a", "1"),
			cmd("HGET", "s", "a"), cmd("HMGET", "s", "a"), cmd("HGETALL", "s"),
			cmd("HKEYS", "s"), cmd("HVALS", "s"), cmd("HDEL", "s", "a"),
			cmd("HLEN", "s"), cmd("HEXISTS", "s", "a"), cmd("HSTRLEN", "s", "a"),
			cmd("HINCRBY", "s", "a", "1"), cmd("HINCRBYFLOAT", "s", "a", "1"),
			cmd("HRANDFIELD", "s"), cmd("HRANDFIELD", "s", "2"), cmd("HSCAN", "s", "0"),
			cmd("HSCAN", "s", "0", "COUNT", "0"),
			hset("h", "a", "1"),
			cmd("GET", "h"), cmd("SET", "h", "x", "GET"), cmd("APPEND", "h", "x"),
			cmd("INCR", "h"), cmd("INCRBYFLOAT", "h", "1"), cmd("STRLEN", "h"),
			cmd("GETRANGE", "h", "0", "1"), cmd("SETRANGE", "h", "0", "x"),
			cmd("GETDEL", "h"), cmd("GETEX", "h"), cmd("GETSET", "h", "x"),
			cmd("MGET", "h", "s"),
			cmd("SETNX", "h", "x"),
			cmd("HGETALL", "h"),
			cmd("SET", "h", "now-a-string"),
			cmd("TYPE", "h"),
			cmd("GET", "h"),
		}},
		{"hincrby", []Step{
			cmd("HINCRBY", "h", "n", "5"),
			cmd("HINCRBY", "h", "n", "-7"),
			cmd("HINCRBY", "h", "n", "x"),
			cmd("HINCRBY", "h", "n", "1.5"),
			cmd("HINCRBY", "h", "n", overMax),
			hset("h", "big", maxInt64, "small", minInt64, "s", "abc", "sp", " 1", "f", "1.0"),
			cmd("HINCRBY", "h", "big", "1"),
			cmd("HINCRBY", "h", "big", "0"),
			cmd("HINCRBY", "h", "small", "-1"),
			cmd("HINCRBY", "h", "small", minInt64),
			cmd("HINCRBY", "h", "s", "1"),
			cmd("HINCRBY", "h", "sp", "1"),
			cmd("HINCRBY", "h", "f", "1"),
			cmd("HGETALL", "h"),
			cmd("HINCRBY", "nokey", "n", "x"),
			cmd("EXISTS", "nokey"),
			cmd("HINCRBY", "nokey2", "n", "0"),
			cmd("HGETALL", "nokey2"),
		}},
		{"hincrbyfloat", []Step{
			cmd("HINCRBYFLOAT", "h", "f", "10.5"),
			cmd("HINCRBYFLOAT", "h", "f", "0.1"),
			cmd("HINCRBYFLOAT", "h", "f", "-5"),
			cmd("HINCRBYFLOAT", "h", "f", "5.0e3"),
			cmd("HINCRBYFLOAT", "h", "f", "abc"),
			cmd("HINCRBYFLOAT", "h", "f", "inf"),
			cmd("HINCRBYFLOAT", "h", "f", "-inf"),
			cmd("HINCRBYFLOAT", "h", "f", "nan"),
			cmd("HINCRBYFLOAT", "h", "f", ""),
			cmd("HINCRBYFLOAT", "h", "f", " 1"),
			hset("h", "s", "abc", "i", "inf", "n", "17", "e", "1e308"),
			cmd("HINCRBYFLOAT", "h", "s", "1"),
			cmd("HINCRBYFLOAT", "h", "i", "1"),
			cmd("HINCRBYFLOAT", "h", "n", "0.5"),
			cmd("HINCRBYFLOAT", "h", "e", "1e308"),
			cmd("HINCRBYFLOAT", "h", "x", "1e4932"),
			cmd("HINCRBYFLOAT", "h", "x", "1.18973149535723176502e+4932"),
			cmd("HINCRBYFLOAT", "h", "y", "3"),
			cmd("HINCRBYFLOAT", "h", "y", "-3"),
			sorted("HGETALL", "h"), // hashtable-encoded: a value of 309 bytes
			cmd("OBJECT", "ENCODING", "h"),
		}},
		{"hrandfield-deterministic", []Step{
			cmd("HRANDFIELD", "nokey"),
			cmd("HRANDFIELD", "nokey", "3"),
			cmd("HRANDFIELD", "nokey", "-3", "WITHVALUES"),
			hset("h", "a", "1", "b", "2", "c", "3"),
			cmd("HRANDFIELD", "h", "0"),
			cmd("HRANDFIELD", "h", "3"),
			cmd("HRANDFIELD", "h", "100", "WITHVALUES"),
			cmd("HRANDFIELD", "h", "100", "withvalues"),
			cmd("HRANDFIELD", "h", maxInt64),
			cmd("HRANDFIELD", "h", minInt64),
			cmd("HRANDFIELD", "h", "x"),
			cmd("HRANDFIELD", "h", "1", "FOO"),
			cmd("HRANDFIELD", "h", "1", "WITHVALUES", "x"),
			cmd("HRANDFIELD", "h", "5000000000000000000", "WITHVALUES"),
			cmd("HRANDFIELD", "h", "-5000000000000000000", "WITHVALUES"),
			cmd("HRANDFIELD", "nokey", "x"),
			typeOnly("HRANDFIELD", "h", "-5", "WITHVALUES"),
			typeOnly("HRANDFIELD", "h", "-5"),
			typeOnly("HRANDFIELD", "h", "2", "WITHVALUES"),
			typeOnly("HRANDFIELD", "h", "1"),
			hset("one", "only", "v"),
			cmd("HRANDFIELD", "one"),
			cmd("HRANDFIELD", "one", "-3", "WITHVALUES"),
			cmd("HRANDFIELD", "one", "1", "WITHVALUES"),
		}},
		{"hscan", []Step{
			cmd("HSCAN", "nokey", "0"),
			cmd("HSCAN", "nokey", "0", "COUNT", "0"),
			cmd("HSCAN", "nokey", "x"),
			hset("h", "apple", "1", "avocado", "2", "banana", "3", "a*", "4"),
			cmd("HSCAN", "h", "0"),
			cmd("HSCAN", "h", "0", "MATCH", "a*"),
			cmd("HSCAN", "h", "0", "MATCH", "a\\*"),
			cmd("HSCAN", "h", "0", "match", "*an*", "count", "1"),
			cmd("HSCAN", "h", "0", "COUNT", "1"),
			cmd("HSCAN", "h", "12345"),
			cmd("HSCAN", "h", "x"),
			cmd("HSCAN", "h", "-1"),
			cmd("HSCAN", "h", "0", "COUNT", "0"),
			cmd("HSCAN", "h", "0", "COUNT", "x"),
			cmd("HSCAN", "h", "0", "COUNT"),
			cmd("HSCAN", "h", "0", "TYPE", "string"),
			cmd("HSCAN", "h", "0", "NOVALUES"),
		}},
		{"encoding-thresholds", []Step{
			hset("h512", fieldArgs(512)...),
			cmd("OBJECT", "ENCODING", "h512"),
			cmd("HGETALL", "h512"),
			cmd("HSCAN", "h512", "0", "COUNT", "3"), // listpack: all of it, cursor 0
			cmd("HSET", "h512", "f512", "v"),
			cmd("OBJECT", "ENCODING", "h512"),
			cmd("HDEL", "h512", "f0", "f1", "f2"),
			cmd("OBJECT", "ENCODING", "h512"),
			sorted("HGETALL", "h512"),
			sorted("HKEYS", "h512"),
			sorted("HVALS", "h512"),
			hscan("HSCAN", "h512", "0"),
			hscan("HSCAN", "h512", "0", "MATCH", "f1*", "COUNT", "7"),
			cmd("HSET", "v64", long64, long64),
			cmd("OBJECT", "ENCODING", "v64"),
			cmd("HSET", "v65", "a", long65),
			cmd("OBJECT", "ENCODING", "v65"),
			cmd("HDEL", "v65", "a"),
			cmd("HSET", "f65", long65, "a"),
			cmd("OBJECT", "ENCODING", "f65"),
			cmd("HSET", "mixed", "a", "1", "b", long65),
			cmd("OBJECT", "ENCODING", "mixed"),
			cmd("HSETNX", "nx", "a", "1"),
			cmd("HSETNX", "nx", "a", long65),
			cmd("OBJECT", "ENCODING", "nx"),
			cmd("HSETNX", "nx", "b", long65),
			cmd("OBJECT", "ENCODING", "nx"),
			cmd("HINCRBY", "incr", long65, "1"),
			cmd("OBJECT", "ENCODING", "incr"),
			cmd("HINCRBYFLOAT", "incrf", "a", "1e100"),
			cmd("OBJECT", "ENCODING", "incrf"),
		}},
		// A hashtable-encoded hash keeps its fields apart (commands/
		// hashobj.go): the key commands move, copy and drop them all.
		{"keyspace-of-hashtable-hashes", []Step{
			hset("t", fieldArgs(600)...),
			cmd("HSET", "t", "long", long65),
			cmd("OBJECT", "ENCODING", "t"),
			cmd("HLEN", "t"),
			cmd("HGET", "t", "f599"),
			cmd("HMGET", "t", "f0", "nofield", "long"),
			cmd("HEXISTS", "t", "f300"),
			cmd("HSTRLEN", "t", "long"),
			cmd("HSET", "t", "f0", "new", "added", "1"),
			cmd("HSETNX", "t", "f1", "x"),
			cmd("HSETNX", "t", "nx", "x"),
			cmd("HINCRBY", "t", "n", "5"),
			cmd("HINCRBYFLOAT", "t", "n", "0.5"),
			cmd("HDEL", "t", "f2", "f3", "nofield"),
			// Fields longer than a store key may be (named by their
			// SHA-256 here).
			cmd("HSET", "t", long2k, "a", long70k, "b", long70k+"2", "c"),
			cmd("HGET", "t", long2k),
			cmd("HGET", "t", long70k),
			cmd("HMGET", "t", long70k+"2", long70k+"3"),
			cmd("HSTRLEN", "t", long70k),
			cmd("HEXISTS", "t", long70k+"3"),
			cmd("HSETNX", "t", long2k, "x"),
			cmd("HINCRBY", "t", long2k+"n", "7"),
			cmd("HDEL", "t", long70k+"2", long2k+"n"),
			cmd("HLEN", "t"),
			sorted("HKEYS", "t"),
			sorted("HVALS", "t"),
			hscan("HSCAN", "t", "0", "COUNT", "17"),
			hscan("HSCAN", "t", "0", "MATCH", "f5*"),
			cmd("EXPIRE", "t", "100"),
			cmd("TTL", "t"),
			cmd("HSET", "t", "f4", "4"),
			cmd("TTL", "t"),
			cmd("PERSIST", "t"),
			cmd("RENAME", "t", "t2"),
			cmd("HLEN", "t2"),
			cmd("EXISTS", "t"),
			cmd("COPY", "t2", "t3"),
			cmd("HDEL", "t3", "f5", "f6"),
			cmd("HSET", "t3", "only-in-t3", "1"),
			cmd("HLEN", "t2"),
			cmd("HLEN", "t3"),
			cmd("HEXISTS", "t2", "only-in-t3"),
			cmd("HGET", "t2", "f5"),
			cmd("MOVE", "t3", "1"),
			cmd("SELECT", "1"),
			cmd("HLEN", "t3"),
			cmd("HGET", "t3", "only-in-t3"),
			cmd("COPY", "t3", "back", "DB", "0"),
			cmd("SELECT", "0"),
			cmd("HLEN", "back"),
			cmd("SWAPDB", "0", "1"),
			cmd("HLEN", "t3"),
			cmd("HLEN", "t2"),
			cmd("SWAPDB", "0", "1"),
			cmd("DEL", "t2"),
			cmd("HSET", "t2", "fresh", long65), // a new hash under the old name
			sorted("HGETALL", "t2"),
			cmd("HLEN", "t2"),
			cmd("SET", "back", "now a string"),
			cmd("GET", "back"),
			cmd("HSET", "back", "a", "1"),
			cmd("DEL", "back"),
			cmd("HSET", "back", "a", "1"),
			cmd("HGETALL", "back"),
			cmd("OBJECT", "ENCODING", "back"),
			cmd("HDEL", "t2", "fresh"),
			cmd("EXISTS", "t2"),
			cmd("FLUSHALL"),
			cmd("HLEN", "t3"),
			hset("t", fieldArgs(513)...),
			cmd("OBJECT", "ENCODING", "t"),
			cmd("PEXPIRE", "t", "1"),
			sleep(20),
			cmd("HLEN", "t"),
			cmd("EXISTS", "t"),
		}},
		{"keyspace-of-hashes", []Step{
			hset("h", "a", "1", "b", "2"),
			cmd("SET", "s", "v"),
			cmd("TYPE", "h"),
			scan("SCAN", "0", "TYPE", "hash"),
			scan("SCAN", "0", "TYPE", "string"),
			sorted("KEYS", "*"),
			cmd("DBSIZE"),
			cmd("EXISTS", "h", "s", "h"),
			cmd("EXPIRE", "h", "100"),
			cmd("TTL", "h"),
			cmd("HSET", "h", "c", "3"),
			cmd("TTL", "h"),
			cmd("HDEL", "h", "c"),
			cmd("TTL", "h"),
			cmd("PERSIST", "h"),
			cmd("TTL", "h"),
			cmd("RENAME", "h", "h2"),
			cmd("HGETALL", "h2"),
			cmd("EXISTS", "h"),
			cmd("RENAMENX", "h2", "s"),
			cmd("COPY", "h2", "h3"),
			cmd("HSET", "h3", "z", "9"),
			cmd("HGETALL", "h2"),
			cmd("HGETALL", "h3"),
			cmd("MOVE", "h3", "1"),
			cmd("SELECT", "1"),
			cmd("HGETALL", "h3"),
			cmd("COPY", "h3", "back", "DB", "0"),
			cmd("SELECT", "0"),
			cmd("HGETALL", "back"),
			cmd("SWAPDB", "0", "1"),
			cmd("HGETALL", "h3"),
			cmd("SWAPDB", "0", "1"),
			cmd("UNLINK", "h2"),
			cmd("DEL", "back", "s"),
			cmd("DBSIZE"),
			cmd("FLUSHDB"),
			cmd("HGETALL", "h3"),
		}},
		{"hash-expiry", []Step{
			hset("h", "a", "1"),
			cmd("PEXPIRE", "h", "50"),
			sleep(120),
			cmd("HGET", "h", "a"),
			cmd("EXISTS", "h"),
			cmd("TYPE", "h"),
			hset("h2", "a", "1"),
			cmd("EXPIRE", "h2", "0"),
			cmd("EXISTS", "h2"),
			hset("h3", "a", "1"),
			cmd("SET", "h3", "v", "KEEPTTL"),
			cmd("GET", "h3"),
		}},
		{"command-info", []Step{
			cmd("COMMAND", "INFO", "hset", "hmset", "hsetnx", "hget", "hmget", "hgetall", "hkeys", "hvals"),
			cmd("COMMAND", "INFO", "hdel", "hlen", "hexists", "hstrlen", "hincrby", "hincrbyfloat", "hrandfield", "hscan"),
			cmd("COMMAND", "GETKEYSANDFLAGS", "HSET", "k", "f", "v"),
			cmd("COMMAND", "GETKEYSANDFLAGS", "HDEL", "k", "f"),
			cmd("COMMAND", "GETKEYS", "HMGET", "k", "a", "b"),
			sorted("COMMAND", "LIST", "FILTERBY", "ACLCAT", "hash"), // Redis: its dict order
		}},
		{"watch-hash", []Step{
			hset("h", "a", "1"),
			cmd("WATCH", "h"),
			cmd("HSET", "h", "a", "1").On(1),
			cmd("MULTI"),
			cmd("HGET", "h", "a"),
			cmd("EXEC"),
			cmd("WATCH", "h"),
			cmd("HSETNX", "h", "a", "2").On(1),
			cmd("HDEL", "h", "zz").On(1),
			cmd("MULTI"),
			cmd("HGET", "h", "a"),
			cmd("EXEC"),
			cmd("WATCH", "h"),
			cmd("HINCRBY", "h", "a", "x").On(1),
			cmd("HINCRBY", "h", "a", "1").On(1),
			cmd("MULTI"),
			cmd("HGET", "h", "a"),
			cmd("EXEC"),
			cmd("MULTI"),
			cmd("HSET", "h", "b", "2"),
			cmd("HINCRBY", "h", "b", "x"),
			cmd("HGETALL", "h"),
			cmd("EXEC"),
		}},
	}
}
