package integration

import (
	"fmt"
	"strings"
	"testing"
)

// bigList is the elements of a list of n elements that oncekv keeps as
// an object (more than 128 elements: commands/listobj.go): "e0", "e1"…,
// every 50th (from the 7th) "dup", and one of 100 bytes.
func bigList(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint("e", i)
		if i%50 == 7 {
			out[i] = "dup"
		}
	}
	if n > 20 {
		out[20] = strings.Repeat("L", 100)
	}
	return out
}

// rpush is RPUSH key vals….
func rpush(key string, vals ...string) Step { return cmd(append([]string{"RPUSH", key}, vals...)...) }

// TestDiffListObjects compares with redis-server 7.0 the list commands on
// lists large enough to be store objects (600 elements): every command
// on both ends and by index, the O(n) ones (LINSERT, LREM, LPOS) that
// rewrite or scan, moves between an object list and a small one both
// ways, blocking pops served by a push, and the key commands (a COPY must
// own elements of its own: changing it leaves the original as it was).
func TestDiffListObjects(t *testing.T) {
	t.Parallel()
	big := bigList(600)
	RunDiffScripts(t, []Script{
		{"object-list-commands", []Step{
			rpush("L", big...),
			cmd("OBJECT", "ENCODING", "L"), cmd("LLEN", "L"), cmd("TYPE", "L"),
			cmd("LINDEX", "L", "0"), cmd("LINDEX", "L", "-1"), cmd("LINDEX", "L", "300"), cmd("LINDEX", "L", "-600"),
			cmd("LINDEX", "L", "-601"), cmd("LINDEX", "L", "600"), cmd("LINDEX", "L", "20"),
			cmd("LSET", "L", "-1", "last"), cmd("LSET", "L", "0", "first"), cmd("LSET", "L", "-300", "mid"),
			cmd("LSET", "L", "600", "x"), cmd("LSET", "L", "-601", "x"),
			cmd("LRANGE", "L", "0", "-1"), cmd("LRANGE", "L", "10", "20"), cmd("LRANGE", "L", "-10", "-1"),
			cmd("LRANGE", "L", "-1000", "5"), cmd("LRANGE", "L", "595", "1000"), cmd("LRANGE", "L", "300", "200"),
			cmd("LRANGE", "L", "600", "700"), cmd("LRANGE", "L", "-601", "-600"), cmd("LRANGE", "L", "0", "0"),
			cmd("LRANGE", "L", "-1", "-1"), cmd("LRANGE", "L", "299", "-299"),
			cmd("LRANGE", "L", "-9223372036854775808", "9223372036854775807"),
			cmd("LPUSH", "L", "a", "b", "c"), cmd("RPUSH", "L", "x", "y", "z"), cmd("LPUSHX", "L", "px"), cmd("RPUSHX", "L", "rx"),
			cmd("LLEN", "L"), cmd("LRANGE", "L", "0", "5"), cmd("LRANGE", "L", "-5", "-1"), cmd("LINDEX", "L", "4"),
			cmd("LPOS", "L", "dup"), cmd("LPOS", "L", "dup", "RANK", "2"), cmd("LPOS", "L", "dup", "RANK", "-1"),
			cmd("LPOS", "L", "dup", "COUNT", "0"), cmd("LPOS", "L", "dup", "COUNT", "3", "RANK", "-2"),
			cmd("LPOS", "L", "dup", "MAXLEN", "100", "COUNT", "0"), cmd("LPOS", "L", "dup", "RANK", "-1", "MAXLEN", "50", "COUNT", "0"),
			cmd("LPOS", "L", "nope"), cmd("LPOS", "L", "nope", "COUNT", "0"), cmd("LPOS", "L", "e599"), cmd("LPOS", "L", "x", "RANK", "-1"),
			cmd("LINSERT", "L", "BEFORE", "e100", "ins1"), cmd("LINSERT", "L", "AFTER", "dup", "ins2"),
			cmd("LINSERT", "L", "AFTER", "rx", "ins3"), cmd("LINSERT", "L", "BEFORE", "px", "ins4"),
			cmd("LINSERT", "L", "BEFORE", "nope", "x"), cmd("LLEN", "L"), cmd("LRANGE", "L", "0", "-1"),
			cmd("LREM", "L", "2", "dup"), cmd("LRANGE", "L", "0", "-1"), cmd("LREM", "L", "-2", "dup"), cmd("LRANGE", "L", "0", "-1"),
			cmd("LREM", "L", "0", "dup"), cmd("LREM", "L", "0", "nope"), cmd("LLEN", "L"), cmd("LRANGE", "L", "0", "-1"),
			cmd("LTRIM", "L", "5", "-5"), cmd("LLEN", "L"), cmd("LRANGE", "L", "0", "3"), cmd("LRANGE", "L", "-3", "-1"),
			cmd("LTRIM", "L", "-1000", "1000"), cmd("LLEN", "L"), cmd("LTRIM", "L", "1", "-1"), cmd("LTRIM", "L", "0", "-2"),
			cmd("LRANGE", "L", "0", "-1"),
			rpush("s", "s1", "s2"),
			cmd("LMOVE", "L", "s", "LEFT", "RIGHT"), cmd("LMOVE", "L", "s", "RIGHT", "LEFT"),
			cmd("LMOVE", "s", "L", "LEFT", "LEFT"), cmd("LMOVE", "s", "L", "RIGHT", "RIGHT"),
			cmd("LRANGE", "s", "0", "-1"), cmd("LRANGE", "L", "0", "3"), cmd("LRANGE", "L", "-3", "-1"),
			cmd("LMOVE", "L", "L", "LEFT", "RIGHT"), cmd("RPOPLPUSH", "L", "L"), cmd("LMOVE", "L", "L", "LEFT", "LEFT"),
			cmd("LRANGE", "L", "0", "2"), cmd("LRANGE", "L", "-2", "-1"),
			cmd("RPOPLPUSH", "L", "new"), cmd("LRANGE", "new", "0", "-1"),
			cmd("LMOVE", "s", "L", "LEFT", "RIGHT"), cmd("LMOVE", "s", "L", "LEFT", "LEFT"), cmd("EXISTS", "s"),
			cmd("LMPOP", "2", "nosuch", "L", "LEFT", "COUNT", "3"), cmd("LMPOP", "1", "L", "RIGHT", "COUNT", "2"),
			cmd("BLPOP", "nosuch", "L", "0"), cmd("BRPOP", "L", "0"), cmd("BLMPOP", "0", "1", "L", "LEFT", "COUNT", "5"),
			cmd("BLMOVE", "L", "s", "RIGHT", "LEFT", "0"), cmd("BRPOPLPUSH", "L", "s", "0"), cmd("LRANGE", "s", "0", "-1"),
			cmd("LLEN", "L"), cmd("LRANGE", "L", "0", "-1"),
			cmd("LPOP", "L"), cmd("RPOP", "L"), cmd("LPOP", "L", "100"), cmd("RPOP", "L", "100"), cmd("LLEN", "L"),
			cmd("LPOP", "L", "0"), cmd("RPOP", "L", "1000"), cmd("EXISTS", "L"), cmd("LLEN", "L"), cmd("LPOP", "L"),
			cmd("RPUSH", "L", "again"), cmd("LRANGE", "L", "0", "-1"),
		}},
		{"object-list-one-by-one", oneByOne()},
		{"object-list-blocking", []Step{
			held("BLPOP", "q", "0").On(1),
			rpush("q", big...), readNext().On(1), cmd("LLEN", "q"), cmd("LINDEX", "q", "0"),
			held("BRPOP", "q2", "0").On(1), held("BLMPOP", "0", "1", "q2", "LEFT", "COUNT", "3").On(2),
			rpush("q2", big...), readNext().On(1), readNext().On(2), cmd("LLEN", "q2"), cmd("LRANGE", "q2", "0", "2"),
			held("BLMOVE", "q3", "q", "LEFT", "RIGHT", "0").On(1), held("BRPOPLPUSH", "q3", "q2", "0").On(2),
			rpush("q3", big...), readNext().On(1), readNext().On(2),
			cmd("LLEN", "q"), cmd("LRANGE", "q", "-2", "-1"), cmd("LLEN", "q2"), cmd("LINDEX", "q2", "0"), cmd("LLEN", "q3"),
			held("BLPOP", "small", "0").On(1), cmd("LMOVE", "q", "small", "LEFT", "LEFT"), readNext().On(1),
			cmd("LRANGE", "q", "0", "1"),
		}},
		{"keyspace-of-object-lists", []Step{
			rpush("L", big...),
			cmd("EXPIRE", "L", "100"), cmd("TTL", "L"), cmd("LPUSH", "L", "n"), cmd("TTL", "L"),
			cmd("RPOP", "L"), cmd("TTL", "L"), cmd("LSET", "L", "5", "z"), cmd("TTL", "L"), cmd("PERSIST", "L"), cmd("TTL", "L"),
			cmd("RENAME", "L", "L2"), cmd("LLEN", "L2"), cmd("EXISTS", "L"), cmd("LINDEX", "L2", "5"),
			cmd("COPY", "L2", "L3"),
			cmd("LPUSH", "L3", "onlyL3"), cmd("RPOP", "L3", "5"), cmd("LSET", "L3", "100", "changed"),
			cmd("LTRIM", "L3", "10", "-10"), cmd("LREM", "L3", "0", "dup"), cmd("LINSERT", "L3", "BEFORE", "e300", "i"),
			cmd("LLEN", "L2"), cmd("LLEN", "L3"), cmd("LRANGE", "L2", "0", "-1"), cmd("LRANGE", "L3", "0", "-1"),
			cmd("MOVE", "L3", "1"), cmd("SELECT", "1"), cmd("LLEN", "L3"), cmd("LRANGE", "L3", "0", "2"),
			cmd("COPY", "L3", "back", "DB", "0"), cmd("RPUSH", "L3", "db1"), cmd("SELECT", "0"), cmd("LLEN", "back"),
			cmd("LRANGE", "back", "-2", "-1"),
			cmd("SWAPDB", "0", "1"), cmd("LLEN", "L3"), cmd("LLEN", "L2"), cmd("LRANGE", "L3", "-1", "-1"), cmd("SWAPDB", "0", "1"),
			cmd("LLEN", "L2"),
			cmd("DEL", "L2"), cmd("EXISTS", "L2"), cmd("RPUSH", "L2", "fresh"), cmd("LRANGE", "L2", "0", "-1"), cmd("LLEN", "L2"),
			rpush("L2", big...), cmd("LLEN", "L2"), cmd("LRANGE", "L2", "0", "3"),
			cmd("SET", "back", "now a string"), cmd("GET", "back"), cmd("LPUSH", "back", "x"), cmd("LLEN", "back"),
			cmd("DEL", "back"), cmd("RPUSH", "back", "a"), cmd("LRANGE", "back", "0", "-1"), cmd("OBJECT", "ENCODING", "back"),
			cmd("EVAL", "redis.call('RESTORE', KEYS[2], 0, redis.call('DUMP', KEYS[1])) return redis.call('LRANGE', KEYS[2], 0, -1)", "2", "L2", "R"),
			cmd("LLEN", "R"), cmd("LPUSH", "R", "r"), cmd("RPOP", "R", "2"), cmd("LINDEX", "R", "0"), cmd("LLEN", "L2"),
			cmd("EVAL", "redis.call('RESTORE', KEYS[2], 0, redis.call('DUMP', KEYS[1]), 'REPLACE') return redis.call('LLEN', KEYS[2])", "2", "back", "R"),
			cmd("LRANGE", "R", "0", "-1"),
			send("CONFIG", "SET", "rdbcompression", "no"), cmd("DUMP", "L2"), // oncekv never compresses
			cmd("FLUSHALL"), cmd("LLEN", "L2"), cmd("DBSIZE"),
			rpush("E", big...), cmd("PEXPIRE", "E", "1"), sleep(20), cmd("LLEN", "E"), cmd("EXISTS", "E"), cmd("LPUSH", "E", "new"),
			cmd("LRANGE", "E", "0", "-1"),
		}},
	})
}

// oneByOne grows a list one element at a time at the head past the
// inline limits, then empties it one at a time at the tail, and again
// the other way round with LMOVE.
func oneByOne() []Step {
	var steps []Step
	for i := range 200 {
		steps = append(steps, cmd("LPUSH", "one", fmt.Sprint(i)))
	}
	steps = append(steps, cmd("LRANGE", "one", "125", "135"), cmd("LINDEX", "one", "-1"))
	for range 201 {
		steps = append(steps, cmd("RPOP", "one"))
	}
	steps = append(steps, cmd("EXISTS", "one"))
	for i := range 150 {
		steps = append(steps, cmd("RPUSH", "src", fmt.Sprint(i, strings.Repeat("x", i))))
	}
	for range 151 {
		steps = append(steps, cmd("LMOVE", "src", "dst", "RIGHT", "LEFT"))
	}
	steps = append(steps, cmd("EXISTS", "src"), cmd("LLEN", "dst"), cmd("LRANGE", "dst", "0", "-1"))
	return steps
}
