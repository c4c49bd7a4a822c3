package integration

import (
	"fmt"
	"strings"
	"testing"
)

// TestDiffLists compares the list commands with a real redis-server 7.0,
// byte for byte in RESP2 and RESP3: every command and option, negative
// and out-of-range indexes, arity and syntax errors, WRONGTYPE both ways
// (with strings and ONCE records), binary elements, deadlines kept, an
// emptied list deleted, and the key commands on lists.
func TestDiffLists(t *testing.T) {
	t.Parallel()
	bin := "a\x00b\r\n\xff"
	RunDiffScripts(t, []Script{
		{"push-pop", []Step{
			cmd("LPUSH", "l", "a", "b", "c"), cmd("RPUSH", "l", "d", "e"),
			cmd("LRANGE", "l", "0", "-1"), cmd("LLEN", "l"), cmd("TYPE", "l"),
			cmd("LPOP", "l"), cmd("RPOP", "l"), cmd("LPOP", "l", "2"), cmd("RPOP", "l", "0"),
			cmd("RPOP", "l", "5"), cmd("EXISTS", "l"), cmd("TYPE", "l"), cmd("LLEN", "l"),
			cmd("LPOP", "l"), cmd("LPOP", "l", "1"), cmd("RPOP", "l", "0"), cmd("RPOP", "nosuch", "3"),
			cmd("LPOP", "l", "-1"), cmd("LPOP", "l", "x"), cmd("LPOP", "l", "1", "2"), cmd("LPOP"),
			cmd("RPUSH", "l", "x"), cmd("LPOP", "l", "-1"), cmd("LPOP", "l", "1.5"),
			cmd("LPUSHX", "nosuch", "a"), cmd("RPUSHX", "nosuch", "a"), cmd("EXISTS", "nosuch"),
			cmd("LPUSHX", "l", "a", "b"), cmd("RPUSHX", "l", "c"), cmd("LRANGE", "l", "0", "-1"),
			cmd("LPUSH", "l"), cmd("RPUSHX", "l"), cmd("LLEN"), cmd("LLEN", "a", "b"),
			cmd("RPUSH", "b", bin, "", bin), cmd("LRANGE", "b", "0", "-1"), cmd("LPOP", "b", "3"),
		}},
		{"range-index", []Step{
			cmd("RPUSH", "l", "0", "1", "2", "3", "4", "5"),
			cmd("LRANGE", "l", "0", "2"), cmd("LRANGE", "l", "-3", "-1"), cmd("LRANGE", "l", "-100", "100"),
			cmd("LRANGE", "l", "4", "2"), cmd("LRANGE", "l", "6", "10"), cmd("LRANGE", "l", "-1", "-2"),
			cmd("LRANGE", "l", "x", "1"), cmd("LRANGE", "l", "1", "y"), cmd("LRANGE", "nosuch", "0", "-1"),
			cmd("LRANGE", "nosuch", "x", "1"), cmd("LRANGE", "l", "0"),
			cmd("LRANGE", "l", "-9223372036854775808", "9223372036854775807"),
			cmd("LINDEX", "l", "0"), cmd("LINDEX", "l", "-1"), cmd("LINDEX", "l", "6"), cmd("LINDEX", "l", "-7"),
			cmd("LINDEX", "l", "x"), cmd("LINDEX", "nosuch", "x"), cmd("LINDEX", "nosuch", "0"),
			cmd("LSET", "l", "0", "zero"), cmd("LSET", "l", "-1", "last"), cmd("LSET", "l", "6", "x"),
			cmd("LSET", "l", "-7", "x"), cmd("LSET", "l", "x", "y"), cmd("LSET", "nosuch", "0", "x"),
			cmd("LSET", "nosuch", "x", "x"), cmd("LRANGE", "l", "0", "-1"),
		}},
		{"insert-rem-trim", []Step{
			cmd("RPUSH", "l", "a", "b", "a", "c", "a"),
			cmd("LINSERT", "l", "BEFORE", "a", "x"), cmd("LINSERT", "l", "after", "c", "y"),
			cmd("LINSERT", "l", "before", "nope", "z"), cmd("LINSERT", "l", "middle", "a", "z"),
			cmd("LINSERT", "nosuch", "before", "a", "z"), cmd("LINSERT", "nosuch", "middle", "a", "z"),
			cmd("LRANGE", "l", "0", "-1"),
			cmd("LREM", "l", "1", "a"), cmd("LRANGE", "l", "0", "-1"), cmd("LREM", "l", "-1", "a"),
			cmd("LRANGE", "l", "0", "-1"), cmd("LREM", "l", "0", "a"), cmd("LREM", "l", "0", "nope"),
			cmd("LREM", "l", "x", "a"), cmd("LREM", "nosuch", "x", "a"), cmd("LREM", "nosuch", "1", "a"),
			cmd("RPUSH", "m", "a", "a", "b", "a", "a"), cmd("LREM", "m", "-3", "a"), cmd("LRANGE", "m", "0", "-1"),
			cmd("LREM", "m", "-9223372036854775808", "a"), cmd("LREM", "m", "0", "b"), cmd("EXISTS", "m"),
			cmd("RPUSH", "t", "0", "1", "2", "3", "4", "5"),
			cmd("LTRIM", "t", "1", "-2"), cmd("LRANGE", "t", "0", "-1"), cmd("LTRIM", "t", "-100", "100"),
			cmd("LTRIM", "t", "1", "1"), cmd("LRANGE", "t", "0", "-1"), cmd("LTRIM", "t", "x", "1"),
			cmd("LTRIM", "nosuch", "0", "1"), cmd("LTRIM", "nosuch", "x", "1"), cmd("LTRIM", "t", "5", "1"),
			cmd("EXISTS", "t"), cmd("LTRIM", "t"),
		}},
		{"lpos", []Step{
			cmd("RPUSH", "l", "a", "b", "c", "1", "2", "3", "c", "c"),
			cmd("LPOS", "l", "c"), cmd("LPOS", "l", "nope"), cmd("LPOS", "l", "c", "RANK", "2"),
			cmd("LPOS", "l", "c", "RANK", "-1"), cmd("LPOS", "l", "c", "RANK", "-3"), cmd("LPOS", "l", "c", "RANK", "4"),
			cmd("LPOS", "l", "c", "COUNT", "0"), cmd("LPOS", "l", "c", "COUNT", "2"), cmd("LPOS", "l", "c", "COUNT", "2", "RANK", "-1"),
			cmd("LPOS", "l", "c", "COUNT", "0", "MAXLEN", "7"), cmd("LPOS", "l", "c", "MAXLEN", "2"),
			cmd("LPOS", "l", "c", "RANK", "-1", "MAXLEN", "1"), cmd("LPOS", "l", "nope", "COUNT", "3"),
			cmd("LPOS", "l", "c", "RANK", "0"), cmd("LPOS", "l", "c", "RANK", "x"), cmd("LPOS", "l", "c", "RANK", "-9223372036854775808"),
			cmd("LPOS", "l", "c", "COUNT", "-1"), cmd("LPOS", "l", "c", "COUNT", "x"), cmd("LPOS", "l", "c", "MAXLEN", "-1"),
			cmd("LPOS", "l", "c", "MAXLEN", "x"), cmd("LPOS", "l", "c", "COUNT"), cmd("LPOS", "l", "c", "FOO", "1"),
			cmd("LPOS", "nosuch", "c"), cmd("LPOS", "nosuch", "c", "COUNT", "0"), cmd("LPOS", "nosuch", "c", "RANK", "0"),
			cmd("LPOS", "l"), cmd("LPOS", "l", "c", "count", "1", "count", "3"),
		}},
		{"move", []Step{
			cmd("RPUSH", "s", "a", "b", "c"),
			cmd("LMOVE", "s", "d", "LEFT", "RIGHT"), cmd("LMOVE", "s", "d", "right", "left"),
			cmd("LRANGE", "s", "0", "-1"), cmd("LRANGE", "d", "0", "-1"),
			cmd("LMOVE", "s", "s", "LEFT", "RIGHT"), cmd("RPUSH", "s", "e"), cmd("LMOVE", "s", "s", "LEFT", "RIGHT"),
			cmd("LRANGE", "s", "0", "-1"), cmd("LMOVE", "s", "d", "UP", "LEFT"), cmd("LMOVE", "s", "d", "LEFT", "DOWN"),
			cmd("LMOVE", "nosuch", "d", "LEFT", "LEFT"), cmd("LMOVE", "nosuch", "d", "UP", "LEFT"),
			cmd("RPOPLPUSH", "s", "d"), cmd("RPOPLPUSH", "s", "d"), cmd("EXISTS", "s"), cmd("RPOPLPUSH", "s", "d"),
			cmd("LRANGE", "d", "0", "-1"), cmd("SET", "str", "v"), cmd("RPOPLPUSH", "d", "str"), cmd("RPOPLPUSH", "str", "d"),
			cmd("LMOVE", "d", "str", "LEFT", "LEFT"), cmd("RPOPLPUSH", "nosuch", "str"), cmd("LRANGE", "d", "0", "-1"),
		}},
		{"lmpop", []Step{
			cmd("RPUSH", "b", "1", "2", "3"), cmd("RPUSH", "c", "x"),
			cmd("LMPOP", "2", "a", "b", "LEFT"), cmd("LMPOP", "3", "a", "b", "c", "RIGHT", "COUNT", "10"),
			cmd("LMPOP", "2", "a", "b", "LEFT"), cmd("LMPOP", "1", "c", "left", "count", "5"), cmd("LMPOP", "1", "c", "LEFT"),
			cmd("LMPOP", "0", "a", "LEFT"), cmd("LMPOP", "x", "a", "LEFT"), cmd("LMPOP", "-1", "a", "LEFT"),
			cmd("LMPOP", "3", "a", "b", "LEFT"), cmd("LMPOP", "1", "a", "UP"), cmd("LMPOP", "1", "a", "LEFT", "COUNT", "0"),
			cmd("LMPOP", "1", "a", "LEFT", "COUNT", "x"), cmd("LMPOP", "1", "a", "LEFT", "COUNT", "1", "COUNT", "2"),
			cmd("LMPOP", "1", "a", "LEFT", "FOO"), cmd("LMPOP", "1", "a"), cmd("LMPOP", "1", "a", "LEFT", "COUNT"),
			cmd("SET", "s", "v"), cmd("RPUSH", "z", "q"), cmd("LMPOP", "2", "s", "z", "LEFT"), cmd("LMPOP", "2", "z", "s", "LEFT"),
			cmd("LMPOP", "2", "nosuch", "s", "LEFT"),
		}},
		{"wrongtype", []Step{
			cmd("SET", "s", "v"), cmd("RPUSH", "l", "a"),
			cmd("LPUSH", "s", "a"), cmd("RPUSH", "s", "a"), cmd("LPUSHX", "s", "a"), cmd("RPUSHX", "s", "a"),
			cmd("LPOP", "s"), cmd("RPOP", "s", "1"), cmd("LLEN", "s"), cmd("LRANGE", "s", "0", "1"),
			cmd("LINDEX", "s", "0"), cmd("LSET", "s", "0", "x"), cmd("LINSERT", "s", "before", "a", "b"),
			cmd("LREM", "s", "0", "a"), cmd("LTRIM", "s", "0", "1"), cmd("LPOS", "s", "a"),
			cmd("BLPOP", "s", "0"), cmd("BRPOP", "nosuch", "s", "0"), cmd("BLMOVE", "s", "l", "LEFT", "LEFT", "0"),
			cmd("BLMPOP", "0", "1", "s", "LEFT"), cmd("BRPOPLPUSH", "l", "s", "0"),
			cmd("GET", "l"), cmd("APPEND", "l", "x"), cmd("INCR", "l"), cmd("STRLEN", "l"), cmd("GETRANGE", "l", "0", "1"),
			cmd("SETRANGE", "l", "0", "x"), cmd("GETDEL", "l"), cmd("GETEX", "l"), cmd("SET", "l", "x", "GET"),
			cmd("MGET", "l", "s"), cmd("TYPE", "l"), cmd("OBJECT", "ENCODING", "l"), cmd("SET", "l", "v"), cmd("TYPE", "l"),
		}},
		{"keys", []Step{
			cmd("RPUSH", "l", "a", "b"), cmd("EXPIRE", "l", "100"), cmd("LPUSH", "l", "c"), cmd("TTL", "l"),
			cmd("RPOP", "l"), cmd("TTL", "l"), cmd("LSET", "l", "0", "z"), cmd("TTL", "l"), cmd("PERSIST", "l"), cmd("TTL", "l"),
			cmd("RENAME", "l", "m"), cmd("LRANGE", "m", "0", "-1"), cmd("COPY", "m", "n"), cmd("LPUSH", "n", "x"),
			cmd("LRANGE", "m", "0", "-1"), cmd("LRANGE", "n", "0", "-1"), cmd("RENAMENX", "n", "m"),
			cmd("MOVE", "n", "1"), cmd("SELECT", "1"), cmd("LRANGE", "n", "0", "-1"), cmd("SELECT", "0"),
			cmd("SWAPDB", "0", "1"), cmd("LRANGE", "n", "0", "-1"), sorted("KEYS", "*"), cmd("DBSIZE"),
			scan("SCAN", "0", "TYPE", "list"), scan("SCAN", "0", "TYPE", "string"), cmd("DEL", "n"),
			cmd("OBJECT", "ENCODING", "n"), cmd("FLUSHDB"), cmd("DBSIZE"),
			cmd("RPUSH", "e", "x"), cmd("PEXPIRE", "e", "1"), sleep(20), cmd("LLEN", "e"), cmd("EXISTS", "e"),
		}},
		{"blocking-at-once", []Step{
			cmd("RPUSH", "b", "1", "2", "3"),
			cmd("BLPOP", "a", "b", "0"), cmd("BRPOP", "a", "b", "0"), cmd("BLMPOP", "0", "2", "a", "b", "LEFT", "COUNT", "5"),
			cmd("RPUSH", "b", "x", "y"), cmd("BLMOVE", "b", "c", "LEFT", "RIGHT", "0"), cmd("BRPOPLPUSH", "b", "c", "0"),
			cmd("LRANGE", "c", "0", "-1"), cmd("BLPOP", "a", "0.01"), cmd("BRPOP", "a", ".02"),
			cmd("BLMOVE", "a", "c", "LEFT", "RIGHT", "0.01"), cmd("BRPOPLPUSH", "a", "c", "0.01"),
			cmd("BLMPOP", "0.01", "1", "a", "RIGHT"),
			cmd("BLPOP", "a", "-1"), cmd("BLPOP", "a", "x"), cmd("BLPOP", "a", "1e400"), cmd("BLPOP", "a", "inf"),
			cmd("BLPOP", "a", "nan"), cmd("BLPOP", "a", " 1"),
			cmd("BLPOP", "a", "9223372036854775807"), cmd("BLPOP", "a"),
			cmd("BLMOVE", "a", "c", "UP", "RIGHT", "x"), cmd("BLMOVE", "a", "c", "LEFT", "RIGHT", "x"),
			cmd("BRPOPLPUSH", "a", "c", "-1"), cmd("BLMPOP", "x", "1", "a", "LEFT"), cmd("BLMPOP", "0", "0", "a", "LEFT"),
			cmd("BLMPOP", "0", "1", "a", "UP"), cmd("BLMPOP", "0", "1", "a", "LEFT", "COUNT", "0"),
			cmd("MULTI"), cmd("BLPOP", "a", "0"), cmd("BRPOP", "a", "0"), cmd("BLMOVE", "a", "c", "LEFT", "LEFT", "0"),
			cmd("BRPOPLPUSH", "a", "c", "0"), cmd("BLMPOP", "0", "1", "a", "LEFT"), cmd("EXEC"),
		}},
		{"command-info", []Step{
			cmd("COMMAND", "INFO", "lpush", "rpush", "lpushx", "rpushx", "lpop", "rpop", "llen", "lrange", "lindex", "lset", "linsert"),
			cmd("COMMAND", "INFO", "lrem", "ltrim", "lpos", "lmove", "rpoplpush", "lmpop", "blpop", "brpop", "blmove", "brpoplpush", "blmpop"),
			cmd("COMMAND", "GETKEYS", "LMPOP", "2", "a", "b", "LEFT"), cmd("COMMAND", "GETKEYS", "LMPOP", "3", "a", "b", "LEFT"),
			cmd("COMMAND", "GETKEYS", "LMPOP", "0", "a", "LEFT"), cmd("COMMAND", "GETKEYS", "LMPOP", "x", "a", "LEFT"),
			cmd("COMMAND", "GETKEYS", "LMPOP", "5", "a", "LEFT"), cmd("COMMAND", "GETKEYSANDFLAGS", "BLMPOP", "0", "2", "a", "b", "LEFT"),
			cmd("COMMAND", "GETKEYS", "BLMPOP", "0", "-1", "a", "LEFT"), cmd("COMMAND", "GETKEYSANDFLAGS", "BLPOP", "a", "b", "0"),
			cmd("COMMAND", "GETKEYSANDFLAGS", "BLMOVE", "a", "b", "LEFT", "LEFT", "0"), cmd("COMMAND", "GETKEYSANDFLAGS", "LTRIM", "a", "0", "1"),
		}},
		{"blocking-served", []Step{
			held("BLPOP", "q", "0").On(1),
			cmd("LPUSH", "q", "job1"), readNext().On(1), cmd("EXISTS", "q"),
			held("BRPOP", "q1", "q2", "0").On(1), held("BRPOP", "q2", "0").On(2),
			cmd("RPUSH", "q2", "a", "b", "c"), readNext().On(1), readNext().On(2), cmd("LRANGE", "q2", "0", "-1"),
			held("BLMPOP", "0", "2", "x", "y", "RIGHT", "COUNT", "2").On(1),
			cmd("RPUSH", "y", "1", "2", "3"), readNext().On(1), cmd("LRANGE", "y", "0", "-1"),
			held("BLMOVE", "src", "dst", "RIGHT", "LEFT", "0").On(1), held("BLPOP", "dst", "0").On(2),
			cmd("RPUSH", "src", "m"), readNext().On(1), readNext().On(2), cmd("EXISTS", "src", "dst"),
			held("BRPOPLPUSH", "src", "dst2", "0").On(1), cmd("SET", "dst2", "str"),
			cmd("RPUSH", "src", "n"), readNext().On(1), cmd("LRANGE", "src", "0", "-1"),
		}},
		{"blocking-multi-wakes-after", []Step{
			held("BLPOP", "q", "0").On(1),
			cmd("MULTI"), cmd("LPUSH", "q", "a"), cmd("LPOP", "q"), cmd("EXEC"),
			cmd("MULTI"), cmd("LPUSH", "q", "b", "c"), cmd("LLEN", "q"), cmd("EXEC"),
			readNext().On(1), cmd("LRANGE", "q", "0", "-1"),
		}},
		{"blocking-timeout", []Step{
			cmd("BLPOP", "q", "0.05").On(1), cmd("BRPOP", "q", "0.05").On(1),
			cmd("BLMOVE", "q", "d", "LEFT", "LEFT", "0.05").On(1), cmd("BLMPOP", "0.05", "1", "q", "LEFT").On(1),
			cmd("BRPOPLPUSH", "q", "d", "0.05").On(1),
		}},
		{"blocking-rename", []Step{
			held("BLPOP", "q", "0").On(1), cmd("RPUSH", "tmp", "v"), cmd("RENAME", "tmp", "q"), readNext().On(1),
			held("BLPOP", "q", "0").On(1), cmd("RPUSH", "tmp", "w"), cmd("COPY", "tmp", "q"), readNext().On(1),
			held("BLPOP", "q", "0").On(1), cmd("SELECT", "1"), cmd("RPUSH", "q", "z"), cmd("MOVE", "q", "0"), readNext().On(1),
			cmd("SELECT", "0"), held("BLPOP", "q", "0").On(1), cmd("SELECT", "1"), cmd("RPUSH", "q", "s"),
			cmd("SWAPDB", "0", "1"), readNext().On(1), cmd("SELECT", "0"), cmd("DBSIZE"),
			held("BLPOP", "q", "0").On(1), cmd("SET", "q", "str"), cmd("DEL", "q"), cmd("RPUSH", "q", "after"), readNext().On(1),
			held("BLPOP", "q", "0").On(1), cmd("RPUSH", "s", "v"), cmd("LMOVE", "s", "q", "LEFT", "LEFT"), readNext().On(1),
			held("BRPOP", "q", "0").On(1), cmd("RPUSH", "s", "w"), cmd("RPOPLPUSH", "s", "q"), readNext().On(1),
			held("BLPOP", "q", "0").On(1), cmd("RESTORE", "q", "0", rdbPayload("\x01\x01\x01r", 10)), readNext().On(1),
		}},
	})
}

// listDumpSteps build lists by RPUSH whose DUMP Redis 7.0 splits into
// nodes as oncekv does (8 KiB listpacks), of every shape of element, and
// dump, restore and read them back; then payloads of the older list
// types (a plain list, type 1; a quicklist of ziplists, type 14) that
// Redis 7.0 still restores, and malformed ones.
func listDumpSteps() []Step {
	var steps []Step
	shapes := dumpShapes()
	steps = append(steps, cmd(append([]string{"RPUSH", "shapes"}, shapes[:len(shapes)-2]...)...),
		cmd("DUMP", "shapes"))
	var many []string
	for i := range 3000 {
		many = append(many, fmt.Sprint(i*37-1000), strings.Repeat("v", i%90))
	}
	steps = append(steps, cmd(append([]string{"RPUSH", "many"}, many...)...), cmd("DUMP", "many"),
		cmd("RPUSH", "big", strings.Repeat("b", 9000), "x", strings.Repeat("c", 8170), "y", "z"), cmd("DUMP", "big"))
	for _, k := range []string{"shapes", "many", "big"} {
		// Each side restores its own payload: the same list again.
		steps = append(steps, cmd("DUMP", k), cmd("DEL", k+":r"))
	}
	plain := rdbPayload("\x01\x03\x01a\xc0\x05\x00", 10)
	zl := "\x14\x00\x00\x00\x0f\x00\x00\x00\x03\x00" + "\x00\x01a" + "\x03\xf6" + "\x02\xc0\xe8\x03" + "\xff"
	ziplist := rdbPayload("\x0e\x01\x14"+zl, 10)
	lp := "\x0e\x00\x00\x00\x02\x00" + "\x81a\x02" + "\x05\x01" + "\xff"
	quick2 := rdbPayload("\x12\x02\x02\x0e"+lp+"\x01\x03abc", 10)
	empty := rdbPayload("\x12\x00", 10)
	badLp := rdbPayload("\x12\x01\x02\x07\x09\x00\x00\x00\x00\x00\xff", 10)
	badContainer := rdbPayload("\x12\x01\x03\x01a", 10)
	for i, p := range []string{plain, ziplist, quick2, empty, badLp, badContainer} {
		k := fmt.Sprint("old", i)
		steps = append(steps, cmd("RESTORE", k, "0", p), cmd("LRANGE", k, "0", "-1"), cmd("TYPE", k))
	}
	return steps
}

// TestDiffListDumpRestore compares DUMP of lists byte for byte with a
// redis-server 7.0 that does not compress (rdbcompression no), and
// RESTORE of Redis's list payloads of every type it loads.
func TestDiffListDumpRestore(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	for _, addr := range []string{p.Redis, p.Other} {
		if addr == p.Other && p.O != nil {
			continue
		}
		if r := DialRaw(t, addr).Do("CONFIG", "SET", "rdbcompression", "no"); string(r) != "+OK\r\n" {
			t.Fatalf("%s: CONFIG SET rdbcompression no: %q", addr, r)
		}
	}
	p.RunScripts(t, []Script{{"list-dump", listDumpSteps()}})
}

// TestListDumpCrossRestore moves lists both ways with Redis's default,
// LZF-compressed payloads, lists built so that Redis splits them
// otherwise than oncekv (LPUSH, LINSERT, pops) included: each restores
// the other's, element for element.
func TestListDumpCrossRestore(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	r, o := DialRaw(t, p.Redis), DialRaw(t, p.Other)
	var elems []string
	for i := range 2500 {
		elems = append(elems, fmt.Sprint(i), strings.Repeat("e", i%50))
	}
	builds := [][][]string{
		{append([]string{"LPUSH", "k"}, elems...)},
		{append([]string{"RPUSH", "k"}, elems...), {"LINSERT", "k", "BEFORE", "7", "ins"}, {"LPOP", "k", "333"}, {"RPOP", "k", "10"}},
		{append([]string{"RPUSH", "k"}, dumpShapes()...)},
	}
	for i, b := range builds {
		for _, c := range []*RawConn{r, o} {
			c.Do("DEL", "k", "k:from")
			for _, args := range b {
				c.Do(args...)
			}
		}
		want := string(r.Do("LRANGE", "k", "0", "-1"))
		if got := string(o.Do("LRANGE", "k", "0", "-1")); got != want {
			t.Fatalf("build %d: the lists differ before DUMP", i)
		}
		fromRedis := r.ReadFrameAfterDo(t, "DUMP", "k").Str
		fromOncekv := o.ReadFrameAfterDo(t, "DUMP", "k").Str
		if got := string(o.Do("RESTORE", "k:from", "0", fromRedis)); got != "+OK\r\n" {
			t.Fatalf("build %d: oncekv RESTORE of redis's DUMP: %q", i, got)
		}
		if got := string(r.Do("RESTORE", "k:from", "0", fromOncekv)); got != "+OK\r\n" {
			t.Fatalf("build %d: redis RESTORE of oncekv's DUMP: %q", i, got)
		}
		for _, c := range []*RawConn{r, o} {
			if got := string(c.Do("LRANGE", "k:from", "0", "-1")); got != want {
				t.Errorf("build %d: %s: the restored list differs (%d bytes, want %d)", i, c.Addr, len(got), len(want))
			}
		}
	}
}

// TestDiffListConfig compares the list directives with redis-server
// 7.0's: list-max-listpack-size (and its alias list-max-ziplist-size) and
// list-compress-depth, set, read back and refused as Redis does.
func TestDiffListConfig(t *testing.T) {
	t.Parallel()
	RunDiffScripts(t, []Script{{"list-config", []Step{
		cmd("CONFIG", "GET", "list-max-listpack-size"), cmd("CONFIG", "GET", "list-max-ziplist-size"),
		cmd("CONFIG", "GET", "list-compress-depth"),
		cmd("CONFIG", "SET", "list-max-listpack-size", "128"), cmd("CONFIG", "GET", "list-max-ziplist-size"),
		cmd("CONFIG", "SET", "list-max-ziplist-size", "-3"), cmd("CONFIG", "GET", "list-max-listpack-size"),
		cmd("CONFIG", "SET", "list-compress-depth", "2"), cmd("CONFIG", "GET", "list-compress-depth"),
		cmd("CONFIG", "SET", "list-compress-depth", "-1"), cmd("CONFIG", "SET", "list-compress-depth", "x"),
		cmd("CONFIG", "SET", "list-max-listpack-size", "2147483648"), cmd("CONFIG", "SET", "list-max-listpack-size", "-2147483648"),
		cmd("CONFIG", "GET", "list-max-listpack-size"),
		cmd("CONFIG", "SET", "list-max-listpack-size", "-2", "list-compress-depth", "0"),
		cmd("RPUSH", "l", "a"), cmd("OBJECT", "ENCODING", "l"),
	}}})
}
