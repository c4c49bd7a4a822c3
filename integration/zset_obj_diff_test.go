package integration

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// Long members of the big sorted sets: zoPrefix (1100 bytes) alone and
// as the shared start of zoLongA and zoLongB, which have the same score,
// so that their order (and zoPrefix's, before both) is decided by their
// full bytes; and members of 100, 1025 and 2000 bytes.
var (
	zoPrefix = strings.Repeat("p", 1100)
	zoLongA  = zoPrefix + "A" + strings.Repeat("a", 200)
	zoLongB  = zoPrefix + "B" + strings.Repeat("b", 100)
	zo100    = "L" + strings.Repeat("l", 99)
	zo1025   = strings.Repeat("r", 1025)
	zo2000   = strings.Repeat("q", 2000)
)

// zoScores are the scores of bigZset's members, by index modulo their
// number: many ties (ordered by member), negatives, -0 and 0, fractions.
var zoScores = []string{"0", "1", "2", "-1", "-2.5", "0.5", "-0", "3", "1e3", "0.125", "-7", "2", "1"}

// bigZset is the (score, member) pairs of a sorted set of n+8 members,
// kept as a skiplist by Redis (more than 128 members, some longer than
// 64 bytes): prefix000… scored by zoScores, with inf at 5 and n-3, -inf
// at 7, 1.5e-7 at 11, 123456.789 at 13; then the long members, the empty
// one and a binary one.
func bigZset(n int, prefix string) []string {
	var p []string
	for i := 0; i < n; i++ {
		s := zoScores[i%len(zoScores)]
		switch i {
		case 5, n - 3:
			s = "inf"
		case 7:
			s = "-inf"
		case 11:
			s = "1.5e-7"
		case 13:
			s = "123456.789"
		}
		p = append(p, s, fmt.Sprintf("%s%03d", prefix, i))
	}
	return append(p, "1", zoLongB, "1", zoPrefix, "1", zoLongA, "1", zo100, "-1", zo2000, "inf", zo1025,
		"1", "", "1", "\xff\xfe")
}

// lexZset is a sorted set whose members all have score 0 (for the BYLEX
// commands): a long member first (so that Redis makes a skiplist at
// once), k000…, the long members, the empty one and a binary one.
func lexZset(n int) []string {
	p := []string{"0", zoLongA}
	for i := 0; i < n; i++ {
		p = append(p, "0", fmt.Sprintf("k%03d", i))
	}
	return append(p, "0", zoLongB, "0", zoPrefix, "0", zo100, "0", zo2000, "0", zo1025, "0", "", "0", "\xff")
}

// mixedLexZset has scores that vary (with ties) in the order of its
// members' bytes, so that a lex range over it is well defined (over a
// skiplist whose two orders disagree, Redis's answer depends on its
// random levels).
func mixedLexZset(n int) []string {
	var p []string
	for i := 0; i < n; i++ {
		p = append(p, strconv.Itoa(i/10-5), fmt.Sprintf("a%03d", i))
	}
	return p
}

// zoRandCheck checks a ZRANDMEMBER reply in a script: its length, how
// many of its members are in the set, whether they are distinct (for a
// positive count) and whether the scores (WITHSCORES) are the set's.
const zoRandCheck = `
local r = redis.call('ZRANDMEMBER', KEYS[1], ARGV[1], unpack(ARGV, 2))
local step = 1
if ARGV[2] then step = 2 end
local seen, distinct, in_set, good_scores = {}, 0, 0, 0
for i = 1, #r, step do
  local m = r[i]
  if not seen[m] then seen[m] = true; distinct = distinct + 1 end
  local s = redis.call('ZSCORE', KEYS[1], m)
  if s then in_set = in_set + 1 end
  if step == 2 and s == r[i+1] then good_scores = good_scores + 1 end
end
if tonumber(ARGV[1]) < 0 then distinct = -1 end
return {#r, in_set, distinct, good_scores}`

// TestDiffZsetObjects compares with redis-server 7.0, byte for byte in
// RESP2 and RESP3, the sorted set commands on sets large enough to be
// skiplists (300 to 600 members, some of 100 to 2000 bytes, tied,
// negative, zero, infinite and fractional scores), which oncekv keeps as
// store objects with a key per member: reads by rank, score and lex from
// both ends and deep inside, writes with every ZADD option, removals by
// range, pops, random members, ZSCAN, the set operations with small sets
// and plain sets, the key commands (a COPY must own its members), DUMP
// and RESTORE, transactions and WATCH, and a set growing past 128
// members one at a time and shrinking back.
func TestDiffZsetObjects(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	noCompression(t, p) // DUMP payloads compared byte for byte
	p.RunScripts(t, zsetObjScripts())
}

func zsetObjScripts() []Script {
	big := bigZset(400, "m")
	n := strconv.Itoa(len(big) / 2)
	return []Script{
		{"object-zset-reads", []Step{
			zadd("z", big...),
			cmd("OBJECT", "ENCODING", "z"), cmd("TYPE", "z"), cmd("ZCARD", "z"),
			cmd("ZSCORE", "z", "m000"), cmd("ZSCORE", "z", "m006"), cmd("ZSCORE", "z", "m019"), cmd("ZSCORE", "z", "m396"),
			cmd("ZSCORE", "z", "m397"), cmd("ZSCORE", "z", "m011"), cmd("ZSCORE", "z", "m013"), cmd("ZSCORE", "z", zoLongA),
			cmd("ZSCORE", "z", zo2000), cmd("ZSCORE", "z", ""), cmd("ZSCORE", "z", "nope"), cmd("ZSCORE", "z", zoPrefix+"A"),
			cmd("ZMSCORE", "z", "m001", "nope", "m007", zoLongB, "m005", "", "m399", "\xff\xfe"),
			cmd("ZRANK", "z", "m007"), cmd("ZREVRANK", "z", "m007"), cmd("ZRANK", "z", "m200"), cmd("ZREVRANK", "z", "m200"),
			cmd("ZRANK", "z", zo1025), cmd("ZREVRANK", "z", zo1025), cmd("ZRANK", "z", "m397"), cmd("ZREVRANK", "z", "m005"),
			cmd("ZRANK", "z", zoPrefix), cmd("ZRANK", "z", zoLongA), cmd("ZRANK", "z", zoLongB), cmd("ZREVRANK", "z", zoLongB),
			cmd("ZRANK", "z", "m006"), cmd("ZRANK", "z", "m019"), cmd("ZRANK", "z", ""), cmd("ZREVRANK", "z", "\xff\xfe"),
			cmd("ZRANK", "z", "nope"), cmd("ZREVRANK", "z", "nope"), cmd("ZRANK", "z", zoPrefix+"C"),
			// By rank.
			cmd("ZRANGE", "z", "0", "-1"), cmd("ZRANGE", "z", "0", "-1", "WITHSCORES"),
			cmd("ZRANGE", "z", "0", "4", "WITHSCORES"), cmd("ZRANGE", "z", "-5", "-1", "WITHSCORES"),
			cmd("ZRANGE", "z", "200", "215", "WITHSCORES"), cmd("ZRANGE", "z", "-215", "-200"),
			cmd("ZRANGE", "z", "-1000", "3"), cmd("ZRANGE", "z", "400", "1000"), cmd("ZRANGE", "z", n, "1000"),
			cmd("ZRANGE", "z", "500", "600"), cmd("ZRANGE", "z", "10", "5"), cmd("ZRANGE", "z", "-1", "-3"),
			cmd("ZRANGE", "z", "-1", "-1", "WITHSCORES"), cmd("ZRANGE", "z", "0", "0"), cmd("ZRANGE", "z", minInt64, maxInt64),
			cmd("ZRANGE", "z", "0", "4", "REV", "WITHSCORES"), cmd("ZRANGE", "z", "-5", "-1", "REV"),
			cmd("ZRANGE", "z", "150", "160", "REV", "WITHSCORES"), cmd("ZRANGE", "z", "0", "-1", "REV"),
			cmd("ZREVRANGE", "z", "0", "4"), cmd("ZREVRANGE", "z", "-4", "-1", "WITHSCORES"),
			cmd("ZREVRANGE", "z", "300", "310", "WITHSCORES"), cmd("ZREVRANGE", "z", "0", "-1", "WITHSCORES"),
			// By score.
			cmd("ZRANGE", "z", "-inf", "+inf", "BYSCORE"), cmd("ZRANGE", "z", "1", "1", "BYSCORE"),
			cmd("ZRANGE", "z", "(0", "(2", "BYSCORE", "WITHSCORES"), cmd("ZRANGE", "z", "(1", "1", "BYSCORE"),
			cmd("ZRANGE", "z", "0", "0", "BYSCORE", "WITHSCORES"), cmd("ZRANGE", "z", "-0", "(0.5", "BYSCORE"),
			cmd("ZRANGE", "z", "(-1", "(0", "BYSCORE", "WITHSCORES"), cmd("ZRANGE", "z", "-2.5", "-2.5", "BYSCORE"),
			cmd("ZRANGE", "z", "-inf", "-inf", "BYSCORE", "WITHSCORES"), cmd("ZRANGE", "z", "inf", "+inf", "BYSCORE", "WITHSCORES"),
			cmd("ZRANGE", "z", "(-inf", "(inf", "BYSCORE", "LIMIT", "0", "3"), cmd("ZRANGE", "z", "1000", "1e6", "BYSCORE", "WITHSCORES"),
			cmd("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "300", "5", "WITHSCORES"),
			cmd("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "350", "-1"),
			cmd("ZRANGE", "z", "1", "3", "BYSCORE", "LIMIT", "40", "-1", "WITHSCORES"),
			cmd("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "407", "10"),
			cmd("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "408", "10"),
			cmd("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "-1", "10"),
			cmd("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "5", "0"),
			cmd("ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "0", "6", "WITHSCORES"),
			cmd("ZRANGE", "z", "(3", "(-1", "BYSCORE", "REV", "LIMIT", "100", "-1", "WITHSCORES"),
			cmd("ZRANGE", "z", "2", "2", "BYSCORE", "REV"), cmd("ZRANGE", "z", "1", "3", "BYSCORE", "REV"),
			cmd("ZRANGE", "z", "3", "1", "BYSCORE"), cmd("ZRANGE", "z", "(2", "(2", "BYSCORE"),
			cmd("ZRANGEBYSCORE", "z", "-1", "1"), cmd("ZRANGEBYSCORE", "z", "(-1", "1", "WITHSCORES"),
			cmd("ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES", "LIMIT", "200", "20"),
			cmd("ZRANGEBYSCORE", "z", "0", "+inf", "LIMIT", "250", "-1"),
			cmd("ZREVRANGEBYSCORE", "z", "+inf", "-inf", "LIMIT", "390", "100", "WITHSCORES"),
			cmd("ZREVRANGEBYSCORE", "z", "2", "(0", "WITHSCORES"), cmd("ZREVRANGEBYSCORE", "z", "(1", "(-1"),
			cmd("ZREVRANGEBYSCORE", "z", "-1", "1"),
			cmd("ZCOUNT", "z", "-inf", "+inf"), cmd("ZCOUNT", "z", "(-inf", "(+inf"), cmd("ZCOUNT", "z", "1", "1"),
			cmd("ZCOUNT", "z", "(1", "(2"), cmd("ZCOUNT", "z", "-0", "0"), cmd("ZCOUNT", "z", "(0", "1e3"),
			cmd("ZCOUNT", "z", "3", "1"), cmd("ZCOUNT", "z", "-2.5", "(0"), cmd("ZCOUNT", "z", "inf", "inf"),
		}},
		{"object-zset-lex", []Step{
			zadd("lz", lexZset(400)...), cmd("OBJECT", "ENCODING", "lz"), cmd("ZCARD", "lz"),
			cmd("ZRANGE", "lz", "0", "-1"), cmd("ZRANGE", "lz", "0", "3", "WITHSCORES"),
			cmd("ZLEXCOUNT", "lz", "-", "+"), cmd("ZLEXCOUNT", "lz", "[k100", "(k200"), cmd("ZLEXCOUNT", "lz", "(k100", "[k200"),
			cmd("ZLEXCOUNT", "lz", "[", "(k"), cmd("ZLEXCOUNT", "lz", "(", "+"), cmd("ZLEXCOUNT", "lz", "["+zoPrefix, "+"),
			cmd("ZLEXCOUNT", "lz", "("+zoPrefix, "["+zoLongB), cmd("ZLEXCOUNT", "lz", "[k5", "+"), cmd("ZLEXCOUNT", "lz", "[z", "-"),
			cmd("ZRANGEBYLEX", "lz", "-", "+"), cmd("ZRANGEBYLEX", "lz", "-", "+", "LIMIT", "250", "5"),
			cmd("ZRANGEBYLEX", "lz", "[k398", "+"), cmd("ZRANGEBYLEX", "lz", "-", "(k003"),
			cmd("ZRANGEBYLEX", "lz", "["+zoPrefix, "["+zoLongB), cmd("ZRANGEBYLEX", "lz", "("+zoPrefix, "+"),
			cmd("ZRANGEBYLEX", "lz", "[k150", "[k160", "LIMIT", "3", "-1"), cmd("ZRANGEBYLEX", "lz", "[k2", "(k3", "LIMIT", "90", "20"),
			cmd("ZRANGEBYLEX", "lz", "[b", "[c"), cmd("ZRANGEBYLEX", "lz", "(k200", "(k200"),
			cmd("ZREVRANGEBYLEX", "lz", "+", "-", "LIMIT", "0", "5"), cmd("ZREVRANGEBYLEX", "lz", "(k300", "[k290"),
			cmd("ZREVRANGEBYLEX", "lz", "+", "[q", "LIMIT", "1", "3"), cmd("ZREVRANGEBYLEX", "lz", "-", "+"),
			cmd("ZRANGE", "lz", "[k100", "[k110", "BYLEX"), cmd("ZRANGE", "lz", "+", "-", "BYLEX", "REV", "LIMIT", "390", "100"),
			cmd("ZRANGE", "lz", "-", "+", "BYLEX", "LIMIT", "399", "-1"), cmd("ZRANGE", "lz", "(k399", "+", "BYLEX", "REV"),
			cmd("ZRANGE", "lz", "-", "+", "BYLEX", "WITHSCORES"),
			zadd("mz", mixedLexZset(300)...), cmd("OBJECT", "ENCODING", "mz"),
			cmd("ZLEXCOUNT", "mz", "-", "+"), cmd("ZLEXCOUNT", "mz", "[a100", "(a250"), cmd("ZLEXCOUNT", "mz", "(a299", "+"),
			cmd("ZRANGEBYLEX", "mz", "[a120", "[a135"), cmd("ZREVRANGEBYLEX", "mz", "+", "(a280", "LIMIT", "2", "5"),
			cmd("ZRANGE", "mz", "(a050", "[a060", "BYLEX"), cmd("ZRANGE", "mz", "[a060", "(a050", "BYLEX", "REV", "LIMIT", "2", "-1"),
			cmd("ZRANGESTORE", "ld", "lz", "[k100", "(k150", "BYLEX"), cmd("ZRANGE", "ld", "0", "-1", "WITHSCORES"),
			cmd("ZRANGESTORE", "ld", "lz", "+", "-", "BYLEX", "REV", "LIMIT", "5", "10"), cmd("ZRANGE", "ld", "0", "-1"),
			// Removals by lex: the ends, the middle, a long member, then all.
			cmd("ZREMRANGEBYLEX", "lz", "-", "(k005"), cmd("ZREMRANGEBYLEX", "lz", "(k395", "+"),
			cmd("ZREMRANGEBYLEX", "lz", "[k100", "[k150"), cmd("ZREMRANGEBYLEX", "lz", "["+zoLongA, "["+zoLongA),
			cmd("ZREMRANGEBYLEX", "lz", "[k100", "[k150"), cmd("ZCARD", "lz"), cmd("ZRANGE", "lz", "0", "-1"),
			cmd("ZLEXCOUNT", "lz", "-", "+"), cmd("OBJECT", "ENCODING", "lz"),
			cmd("ZREMRANGEBYLEX", "lz", "-", "+"), cmd("EXISTS", "lz"), cmd("ZLEXCOUNT", "lz", "-", "+"),
			cmd("ZREMRANGEBYLEX", "mz", "[a000", "[a299"), cmd("EXISTS", "mz"),
		}},
		{"object-zset-writes", []Step{
			zadd("z", big...),
			zadd("z", "NX", "100", "m001", "100", "new1"), zadd("z", "XX", "5", "m002", "5", "new2"),
			zadd("z", "XX", "CH", "5", "m003", "1", "m001", "7", "nothere"),
			zadd("z", "GT", "CH", "-100", "m004", "100", "m008", "-5", "new3"),
			zadd("z", "LT", "CH", "-100", "m009", "100", "m010", "9", "new4"),
			zadd("z", "CH", "1", "m012", "-0", "m014", "0", "m015", "2", zoLongA),
			zadd("z", "INCR", "2.5", "m016"), zadd("z", "INCR", "2.5", "m005"), zadd("z", "INCR", "-1", zo2000),
			zadd("z", "NX", "INCR", "1", "m017"), zadd("z", "XX", "INCR", "1", "nothere"),
			zadd("z", "GT", "INCR", "-1", "m018"), zadd("z", "LT", "INCR", "-1", "m018"),
			zadd("z", "INCR", "-inf", "m005"), zadd("z", "INCR", "nan", "m020"),
			cmd("ZINCRBY", "z", "-inf", "m005"), cmd("ZINCRBY", "z", "inf", "m007"), cmd("ZINCRBY", "z", "inf", "m397"),
			cmd("ZINCRBY", "z", "0.1", "m021"), cmd("ZINCRBY", "z", "-0", "m019"), cmd("ZINCRBY", "z", "0", "m022"),
			cmd("ZINCRBY", "z", "1", "fresh"), cmd("ZINCRBY", "z", "3", zoLongB), cmd("ZINCRBY", "z", "x", "m023"),
			zadd("z", "1", zoPrefix+"Z", "1", zoPrefix, "1", zoPrefix+"\x00"),
			cmd("ZCARD", "z"), cmd("ZMSCORE", "z", "m001", "m002", "m003", "m004", "m008", "m009", "m010", "new1", "new2", "new3", "new4"),
			cmd("ZMSCORE", "z", "m005", "m007", "m012", "m014", "m015", "m016", "m017", "m018", "m019", "m021", "m022", "fresh"),
			cmd("ZRANK", "z", zoLongA), cmd("ZRANK", "z", zoLongB), cmd("ZRANK", "z", zoPrefix+"Z"), cmd("ZRANK", "z", "fresh"),
			cmd("ZRANGE", "z", "0", "-1", "WITHSCORES"),
			cmd("ZREM", "z", "m001", "nope", "m001", zoLongA, "m200"), cmd("ZREM", "z", "nope"), cmd("ZREM", "z", zo2000, zo1025, ""),
			cmd("ZCARD", "z"), cmd("ZRANK", "z", "m201"), cmd("ZSCORE", "z", "m200"),
			cmd("ZRANGE", "z", "190", "210", "WITHSCORES"), cmd("ZRANGE", "z", "-8", "-1", "WITHSCORES"),
			cmd("OBJECT", "ENCODING", "z"), cmd("TYPE", "z"),
		}},
		{"object-zset-remove-ranges", []Step{
			zadd("z", big...),
			cmd("ZREMRANGEBYRANK", "z", "0", "4"), cmd("ZREMRANGEBYRANK", "z", "-5", "-1"),
			cmd("ZREMRANGEBYRANK", "z", "100", "150"), cmd("ZREMRANGEBYRANK", "z", "-50", "-60"),
			cmd("ZREMRANGEBYRANK", "z", "1000", "2000"), cmd("ZCARD", "z"),
			cmd("ZRANGE", "z", "0", "-1", "WITHSCORES"),
			cmd("ZREMRANGEBYSCORE", "z", "-inf", "(-1"), cmd("ZREMRANGEBYSCORE", "z", "(1e3", "+inf"),
			cmd("ZREMRANGEBYSCORE", "z", "(0", "(1"), cmd("ZREMRANGEBYSCORE", "z", "3", "1"),
			cmd("ZREMRANGEBYSCORE", "z", "-0", "0"), cmd("ZCARD", "z"), cmd("ZRANGE", "z", "0", "-1", "WITHSCORES"),
			cmd("ZCOUNT", "z", "-inf", "+inf"), cmd("ZRANK", "z", "m200"), cmd("OBJECT", "ENCODING", "z"),
			cmd("ZREMRANGEBYRANK", "z", "0", "-1"), cmd("EXISTS", "z"), cmd("ZCARD", "z"),
			zadd("z2", big...), cmd("ZREMRANGEBYSCORE", "z2", "-inf", "+inf"), cmd("EXISTS", "z2"),
			zadd("z3", big...), cmd("ZREMRANGEBYRANK", "z3", "-1000", "1000"), cmd("EXISTS", "z3"),
		}},
		{"object-zset-pops", []Step{
			zadd("z", big...),
			cmd("ZPOPMIN", "z", "0"), cmd("ZPOPMAX", "z", "0"), cmd("ZPOPMIN", "z"), cmd("ZPOPMAX", "z"),
			cmd("ZPOPMIN", "z", "1"), cmd("ZPOPMAX", "z", "1"), cmd("ZPOPMIN", "z", "5"), cmd("ZPOPMAX", "z", "5"),
			cmd("ZCARD", "z"),
			cmd("ZMPOP", "1", "z", "MIN"), cmd("ZMPOP", "2", "nokey", "z", "MAX", "COUNT", "7"),
			cmd("ZMPOP", "1", "z", "MIN", "COUNT", "50"),
			cmd("BZPOPMIN", "z", "0"), cmd("BZPOPMAX", "nokey", "z", "0"),
			cmd("BZMPOP", "0", "1", "z", "MIN", "COUNT", "4"), cmd("BZMPOP", "0.5", "2", "nokey", "z", "MAX", "COUNT", "3"),
			cmd("ZCARD", "z"), cmd("ZRANGE", "z", "0", "2", "WITHSCORES"), cmd("ZRANGE", "z", "-3", "-1", "WITHSCORES"),
			cmd("ZPOPMIN", "z", "1000"), cmd("EXISTS", "z"), cmd("ZPOPMIN", "z"), cmd("ZPOPMIN", "z", "5"),
			zadd("z2", big...), cmd("ZPOPMAX", "z2", "1000"), cmd("EXISTS", "z2"),
			zadd("z3", big...), cmd("ZMPOP", "1", "z3", "MAX", "COUNT", "1000"), cmd("EXISTS", "z3"),
			zadd("z4", big...), cmd("BZMPOP", "0", "1", "z4", "MIN", "COUNT", "999"), cmd("EXISTS", "z4"),
			zadd("z5", big...), cmd("ZPOPMIN", "z5", "400"), cmd("ZCARD", "z5"), cmd("OBJECT", "ENCODING", "z5"),
			cmd("ZRANGE", "z5", "0", "-1", "WITHSCORES"),
			// Blocked clients served by a ZADD that makes a big set.
			held("BZPOPMIN", "w", "0").On(1), held("BZMPOP", "0", "1", "w", "MAX", "COUNT", "10").On(2),
			zadd("w", big...), readNext().On(1), readNext().On(2), cmd("ZCARD", "w"),
		}},
		{"object-zset-randmember", []Step{
			zadd("z", big...),
			sorted("ZRANDMEMBER", "z", n), sorted("ZRANDMEMBER", "z", "1000"), sorted("ZRANDMEMBER", "z", "1000", "WITHSCORES"),
			sorted("ZRANDMEMBER", "z", n, "WITHSCORES"),
			typeOnly("ZRANDMEMBER", "z"), typeOnly("ZRANDMEMBER", "z", "5"), typeOnly("ZRANDMEMBER", "z", "-5"),
			typeOnly("ZRANDMEMBER", "z", "50", "WITHSCORES"), typeOnly("ZRANDMEMBER", "z", "-1000", "WITHSCORES"),
			cmd("ZRANDMEMBER", "z", "0"), cmd("ZRANDMEMBER", "z", "0", "WITHSCORES"),
			cmd("EVAL", zoRandCheck, "1", "z", "1"), cmd("EVAL", zoRandCheck, "1", "z", "5"),
			cmd("EVAL", zoRandCheck, "1", "z", "50"), cmd("EVAL", zoRandCheck, "1", "z", "200"),
			cmd("EVAL", zoRandCheck, "1", "z", "407"), cmd("EVAL", zoRandCheck, "1", "z", n),
			cmd("EVAL", zoRandCheck, "1", "z", "-5"), cmd("EVAL", zoRandCheck, "1", "z", "-1000"),
			cmd("EVAL", zoRandCheck, "1", "z", "30", "WITHSCORES"), cmd("EVAL", zoRandCheck, "1", "z", "400", "WITHSCORES"),
			cmd("EVAL", zoRandCheck, "1", "z", "-700", "WITHSCORES"),
			cmd("ZCARD", "z"),
		}},
		{"object-zset-scan", []Step{
			zadd("z", big...),
			scan("ZSCAN", "z", "0").withCursor(2),
			scan("ZSCAN", "z", "0", "COUNT", "7").withCursor(2),
			scan("ZSCAN", "z", "0", "MATCH", "m1*", "COUNT", "20").withCursor(2),
			scan("ZSCAN", "z", "0", "MATCH", "*pA*").withCursor(2),
			scan("ZSCAN", "z", "0", "MATCH", "nomatch*", "COUNT", "1000").withCursor(2),
			scan("ZSCAN", "z", "0", "COUNT", "1000").withCursor(2),
			cmd("ZREM", "z", "m100", "m101", zoLongB), zadd("z", "9", "added"),
			scan("ZSCAN", "z", "0", "MATCH", "m10*").withCursor(2),
			scan("ZSCAN", "z", "0", "MATCH", "*d*").withCursor(2),
		}},
		{"object-zset-setops", []Step{
			zadd("z", bigZset(300, "m")...),
			zadd("s", "10", "m001", "-3", "m002", "0.5", "m150", "4", zoLongA, "7", "only-s"),
			cmd("SADD", "p", "m001", "m003", "m299", zoLongB, "x", "m005"),
			zadd("z2", bigZset(350, "m")...),
			cmd("ZUNION", "3", "z", "s", "p", "WITHSCORES"), cmd("ZUNION", "2", "z", "s"),
			cmd("ZUNION", "3", "z", "s", "p", "WEIGHTS", "1", "2", "3", "AGGREGATE", "MIN", "WITHSCORES"),
			cmd("ZUNION", "3", "z", "s", "p", "WEIGHTS", "-1", "0.5", "0", "AGGREGATE", "MAX", "WITHSCORES"),
			cmd("ZUNION", "2", "z", "z2", "WITHSCORES"), cmd("ZUNION", "2", "z", "z2", "WEIGHTS", "0", "1", "WITHSCORES"),
			cmd("ZUNION", "2", "z", "z2", "WEIGHTS", "1", "-1", "WITHSCORES"),
			cmd("ZINTER", "2", "z", "s", "WITHSCORES"), cmd("ZINTER", "3", "z", "s", "p", "WITHSCORES"),
			cmd("ZINTER", "2", "z", "p", "WEIGHTS", "2", "5", "AGGREGATE", "MAX", "WITHSCORES"),
			cmd("ZINTER", "2", "z", "z2", "AGGREGATE", "MIN"), cmd("ZINTER", "2", "z", "nokey"),
			cmd("ZDIFF", "2", "z", "s", "WITHSCORES"), cmd("ZDIFF", "3", "z", "s", "p"), cmd("ZDIFF", "2", "s", "z", "WITHSCORES"),
			cmd("ZDIFF", "2", "z2", "z", "WITHSCORES"), cmd("ZDIFF", "2", "p", "z"), cmd("ZDIFF", "1", "z"),
			cmd("ZINTERCARD", "2", "z", "s"), cmd("ZINTERCARD", "2", "z", "p", "LIMIT", "2"), cmd("ZINTERCARD", "2", "z", "z2"),
			cmd("ZINTERCARD", "2", "z", "z2", "LIMIT", "100"), cmd("ZINTERCARD", "3", "z", "s", "p"),
			cmd("ZUNIONSTORE", "d", "3", "z", "s", "p"), cmd("ZRANGE", "d", "0", "-1", "WITHSCORES"), cmd("OBJECT", "ENCODING", "d"),
			cmd("ZINTERSTORE", "d", "2", "z", "s", "WEIGHTS", "2", "0.5"), cmd("ZRANGE", "d", "0", "-1", "WITHSCORES"),
			cmd("OBJECT", "ENCODING", "d"),
			cmd("ZDIFFSTORE", "d", "2", "z", "s"), cmd("ZCARD", "d"), cmd("ZRANGE", "d", "-5", "-1", "WITHSCORES"),
			cmd("ZINTERSTORE", "d", "2", "z", "nokey"), cmd("EXISTS", "d"),
			cmd("ZUNIONSTORE", "d", "2", "z", "z2", "AGGREGATE", "MAX"), cmd("ZCARD", "d"), cmd("ZRANGE", "d", "0", "9", "WITHSCORES"),
			cmd("ZDIFFSTORE", "d", "2", "z", "z2"), cmd("EXISTS", "d"),
			// Storing into one of the inputs.
			cmd("ZUNIONSTORE", "z", "2", "z", "s", "WEIGHTS", "2", "1"), cmd("ZRANGE", "z", "0", "-1", "WITHSCORES"),
			cmd("ZINTERSTORE", "s", "2", "z", "s"), cmd("ZRANGE", "s", "0", "-1", "WITHSCORES"), cmd("OBJECT", "ENCODING", "s"),
			cmd("ZDIFFSTORE", "z2", "2", "z2", "p"), cmd("ZCARD", "z2"), cmd("ZRANGE", "z2", "0", "9", "WITHSCORES"),
			cmd("ZINTERSTORE", "p", "2", "p", "z2"), cmd("TYPE", "p"), cmd("ZRANGE", "p", "0", "-1", "WITHSCORES"),
			cmd("ZUNIONSTORE", "z", "1", "z", "WEIGHTS", "0"), cmd("ZRANGE", "z", "0", "5", "WITHSCORES"),
			cmd("ZDIFFSTORE", "z", "2", "z", "z"), cmd("EXISTS", "z"),
		}},
		{"object-zset-rangestore", []Step{
			zadd("z", big...), zadd("big2", bigZset(300, "n")...),
			cmd("ZRANGESTORE", "d", "z", "0", "-1"), cmd("ZRANGE", "d", "0", "-1", "WITHSCORES"), cmd("OBJECT", "ENCODING", "d"),
			cmd("ZRANGESTORE", "d", "z", "(0", "2", "BYSCORE", "LIMIT", "10", "20"), cmd("ZRANGE", "d", "0", "-1", "WITHSCORES"),
			cmd("OBJECT", "ENCODING", "d"),
			cmd("ZRANGESTORE", "d", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "300", "-1"), cmd("ZRANGE", "d", "0", "-1", "WITHSCORES"),
			cmd("ZRANGESTORE", "big2", "z", "0", "9"), cmd("ZRANGE", "big2", "0", "-1", "WITHSCORES"), cmd("ZCARD", "big2"),
			cmd("ZSCORE", "big2", "n100"), cmd("OBJECT", "ENCODING", "big2"),
			zadd("big2", bigZset(300, "n")...),
			cmd("ZRANGESTORE", "big2", "z", "10", "5"), cmd("EXISTS", "big2"), cmd("ZSCORE", "big2", "n100"),
			zadd("big2", bigZset(300, "n")...),
			cmd("ZRANGESTORE", "big2", "z", "(5", "(5", "BYSCORE"), cmd("EXISTS", "big2"),
			cmd("ZRANGESTORE", "big2", "nokey", "0", "-1"), cmd("EXISTS", "big2"),
			cmd("ZRANGESTORE", "z", "z", "5", "200", "REV"), cmd("ZCARD", "z"), cmd("ZRANGE", "z", "0", "-1", "WITHSCORES"),
			cmd("ZRANGESTORE", "z", "z", "0", "-1", "BYSCORE"), cmd("EXISTS", "z"),
		}},
		{"object-zset-keyspace", []Step{
			zadd("z", big...),
			cmd("RENAME", "z", "z2"), cmd("EXISTS", "z"), cmd("ZCARD", "z2"), cmd("ZRANGE", "z2", "0", "4", "WITHSCORES"),
			cmd("ZSCORE", "z2", zoLongA), cmd("ZRANK", "z2", "m250"), cmd("RENAMENX", "z2", "z2"),
			cmd("COPY", "z2", "c"), cmd("COPY", "z2", "c"), cmd("OBJECT", "ENCODING", "c"),
			zadd("c", "7", "onlyc"), cmd("ZREM", "c", "m000", "m001", zoLongA), cmd("ZINCRBY", "c", "10", "m002"),
			cmd("ZPOPMAX", "c", "3"), cmd("ZREMRANGEBYRANK", "c", "100", "120"),
			cmd("ZCARD", "z2"), cmd("ZCARD", "c"), cmd("ZRANGE", "z2", "0", "-1", "WITHSCORES"), cmd("ZRANGE", "c", "0", "-1", "WITHSCORES"),
			cmd("ZSCORE", "z2", "onlyc"), cmd("ZSCORE", "z2", zoLongA), cmd("ZSCORE", "z2", "m002"),
			// And the other way round: the copy keeps what the original loses.
			cmd("COPY", "z2", "c2"), cmd("ZREM", "z2", "m010"), zadd("z2", "1", "onlyz2"), cmd("ZPOPMIN", "z2", "2"),
			cmd("ZSCORE", "c2", "m010"), cmd("ZSCORE", "c2", "onlyz2"), cmd("ZCARD", "c2"), cmd("ZRANGE", "c2", "0", "3", "WITHSCORES"),
			cmd("COPY", "z2", "c", "REPLACE"), cmd("ZCARD", "c"), cmd("ZSCORE", "c", "onlyc"),
			cmd("MOVE", "c", "1"), cmd("EXISTS", "c"), cmd("SELECT", "1"), cmd("ZCARD", "c"), cmd("ZRANGE", "c", "-3", "-1", "WITHSCORES"),
			zadd("c", "1", "db1"), cmd("MOVE", "c", "0"), cmd("EXISTS", "c"), cmd("SELECT", "0"), cmd("ZSCORE", "c", "db1"), cmd("ZCARD", "c"),
			cmd("SELECT", "1"), zadd("c", "1", "x"), cmd("SELECT", "0"), cmd("MOVE", "c", "1"), cmd("ZCARD", "c"),
			cmd("COPY", "c", "c", "DB", "1", "REPLACE"), cmd("SELECT", "1"), cmd("ZCARD", "c"), zadd("c", "2", "db1only"), cmd("SELECT", "0"),
			cmd("ZSCORE", "c", "db1only"),
			cmd("SWAPDB", "0", "1"), cmd("ZCARD", "c"), cmd("ZCARD", "z2"), cmd("ZSCORE", "c", "db1only"), cmd("SWAPDB", "0", "1"),
			cmd("ZCARD", "z2"), cmd("ZRANGE", "z2", "0", "2"),
			cmd("DEL", "z2"), cmd("EXISTS", "z2"), cmd("ZCARD", "z2"), cmd("ZSCORE", "z2", "m003"), cmd("ZRANGE", "z2", "0", "-1"),
			zadd("z2", "1", "fresh"), cmd("ZRANGE", "z2", "0", "-1", "WITHSCORES"), cmd("OBJECT", "ENCODING", "z2"),
			zadd("z2", big...), cmd("ZCARD", "z2"), cmd("ZSCORE", "z2", "fresh"),
			cmd("SET", "z2", "str"), cmd("GET", "z2"), cmd("TYPE", "z2"), cmd("ZCARD", "z2"), cmd("ZSCORE", "z2", "m001"),
			cmd("DEL", "z2"), zadd("z2", "1", "a"), cmd("ZRANGE", "z2", "0", "-1", "WITHSCORES"),
			cmd("RENAME", "c", "c2"), cmd("ZCARD", "c2"), cmd("ZSCORE", "c2", "m010"), cmd("EXISTS", "c"),
			cmd("UNLINK", "c2"), cmd("EXISTS", "c2"), zadd("c2", big...), cmd("ZCARD", "c2"),
			sorted("KEYS", "*"), cmd("DBSIZE"), scan("SCAN", "0", "TYPE", "zset"),
			cmd("FLUSHALL"), cmd("ZCARD", "c2"), cmd("DBSIZE"), cmd("SELECT", "1"), cmd("DBSIZE"), cmd("SELECT", "0"),
			zadd("c2", "1", "after"), cmd("ZRANGE", "c2", "0", "-1"),
		}},
		{"object-zset-expiry", []Step{
			zadd("e", big...),
			cmd("EXPIRE", "e", "100"), cmd("TTL", "e"), zadd("e", "1", "x"), cmd("TTL", "e"), cmd("ZREM", "e", "x"), cmd("TTL", "e"),
			cmd("ZPOPMIN", "e"), cmd("TTL", "e"), cmd("PERSIST", "e"), cmd("TTL", "e"),
			cmd("EXPIRE", "e", "1"), zadd("p", big...), cmd("PEXPIRE", "p", "100"),
			zadd("k", big...), cmd("PEXPIRE", "k", "100000"), approx(1000, "PTTL", "k"),
			sleep(1400),
			cmd("ZCARD", "e"), cmd("EXISTS", "e"), cmd("ZSCORE", "p", "m001"), cmd("ZRANGE", "p", "0", "-1"), cmd("EXISTS", "p"),
			zadd("p", "1", "new"), cmd("ZRANGE", "p", "0", "-1", "WITHSCORES"), cmd("TTL", "p"), cmd("ZCARD", "k"),
			zadd("q", big...), cmd("EXPIRE", "q", "0"), cmd("EXISTS", "q"),
			zadd("q", big...), cmd("PEXPIREAT", "q", "1"), cmd("EXISTS", "q"), cmd("ZCARD", "q"),
		}},
		{"object-zset-dump-restore", []Step{
			zadd("z", big...), cmd("DUMP", "z"),
			cmd("EVAL", "redis.call('RESTORE', KEYS[2], 0, redis.call('DUMP', KEYS[1])) return redis.call('ZCARD', KEYS[2])", "2", "z", "r"),
			cmd("OBJECT", "ENCODING", "r"), cmd("ZRANGE", "r", "0", "-1", "WITHSCORES"), cmd("DUMP", "r"),
			zadd("r", "1", "onlyr"), cmd("ZREM", "r", "m001"), cmd("ZSCORE", "z", "m001"), cmd("ZSCORE", "z", "onlyr"),
			cmd("EVAL", "return redis.pcall('RESTORE', KEYS[2], 0, redis.call('DUMP', KEYS[1]))", "2", "z", "r"),
			zadd("small", "1", "a", "2", "b"),
			cmd("EVAL", "return redis.call('RESTORE', KEYS[2], 0, redis.call('DUMP', KEYS[1]), 'REPLACE')", "2", "small", "r"),
			cmd("ZRANGE", "r", "0", "-1", "WITHSCORES"), cmd("OBJECT", "ENCODING", "r"), cmd("ZSCORE", "r", "m002"),
			cmd("EVAL", "return redis.call('RESTORE', KEYS[2], 0, redis.call('DUMP', KEYS[1]), 'REPLACE')", "2", "z", "small"),
			cmd("ZCARD", "small"), cmd("ZRANGE", "small", "0", "-1", "WITHSCORES"),
			cmd("EVAL", "return redis.call('RESTORE', KEYS[2], 100000, redis.call('DUMP', KEYS[1]))", "2", "z", "t"),
			approx(1000, "PTTL", "t"), cmd("ZCARD", "t"),
			zadd("lz", lexZset(300)...), cmd("DUMP", "lz"), cmd("ZREM", "lz", "k000", "k150", zoLongB), cmd("DUMP", "lz"),
			cmd("ZPOPMIN", "z", "100"), cmd("ZREMRANGEBYRANK", "z", "50", "100"), zadd("z", "0.25", "late", "-0", "negzero"),
			cmd("DUMP", "z"), cmd("DEL", "z"), cmd("DUMP", "z"),
		}},
		{"object-zset-multi-watch", []Step{
			zadd("z", big...),
			cmd("MULTI"), zadd("z", "5", "m001", "5", "tx"), cmd("ZREM", "z", "m002", zoLongB), cmd("ZPOPMIN", "z", "2"),
			cmd("ZINCRBY", "z", "1", "tx"), cmd("ZRANGE", "z", "0", "4", "WITHSCORES"), cmd("ZCARD", "z"), cmd("EXEC"),
			cmd("ZRANGE", "z", "0", "-1", "WITHSCORES"),
			cmd("MULTI"), zadd("z", "1", "q"), cmd("ZADD", "z", "x", "y"), cmd("ZCARD", "z"), cmd("EXEC"),
			cmd("MULTI"), zadd("z", "1", "r"), cmd("ZADD", "z"), cmd("EXEC"), cmd("ZSCORE", "z", "r"),
			cmd("MULTI"), cmd("ZPOPMAX", "z", "3"), cmd("DISCARD"), cmd("ZCARD", "z"),
			cmd("WATCH", "z"), zadd("z", "XX", "7", "m010").On(1), cmd("MULTI"), cmd("ZCARD", "z"), cmd("EXEC"),
			cmd("WATCH", "z"), zadd("z", "XX", "7", "m010").On(1), cmd("MULTI"), cmd("ZCARD", "z"), cmd("EXEC"),
			cmd("WATCH", "z"), cmd("ZREM", "z", "nothere").On(1), cmd("MULTI"), cmd("ZCARD", "z"), cmd("EXEC"),
			cmd("WATCH", "z"), zadd("z", "INCR", "0", "m011").On(1), cmd("MULTI"), cmd("ZCARD", "z"), cmd("EXEC"),
			// ZINCRBY by 0 is no change (EXEC runs): oncekv at afff502
			// counted it as one.
			cmd("WATCH", "z"), cmd("ZINCRBY", "z", "0", "m011").On(1), cmd("MULTI"), cmd("ZCARD", "z"), cmd("EXEC"),
			cmd("WATCH", "z"), cmd("ZINCRBY", "z", "-0", "m011").On(1), cmd("MULTI"), cmd("ZCARD", "z"), cmd("EXEC"),
			cmd("WATCH", "z"), cmd("ZPOPMIN", "z", "0").On(1), cmd("MULTI"), cmd("ZCARD", "z"), cmd("EXEC"),
			cmd("WATCH", "z"), cmd("ZREMRANGEBYSCORE", "z", "(5", "(5").On(1), cmd("MULTI"), cmd("ZCARD", "z"), cmd("EXEC"),
			cmd("WATCH", "z"), cmd("ZREMRANGEBYRANK", "z", "0", "0").On(1), cmd("MULTI"), cmd("ZCARD", "z"), cmd("EXEC"),
			cmd("WATCH", "z"), cmd("ZREM", "z", zo2000).On(1), cmd("MULTI"), cmd("ZCARD", "z"), cmd("EXEC"),
			cmd("WATCH", "z"), cmd("ZRANGESTORE", "z", "z", "0", "-1").On(1), cmd("MULTI"), cmd("ZCARD", "z"), cmd("EXEC"),
			cmd("WATCH", "z"), cmd("ZPOPMAX", "z").On(1), cmd("MULTI"), cmd("ZCARD", "z"), cmd("EXEC"),
			cmd("WATCH", "z"), cmd("COPY", "z", "zc").On(1), cmd("MULTI"), cmd("ZCARD", "z"), cmd("EXEC"),
			cmd("WATCH", "z"), cmd("ZADD", "zc", "1", "m000").On(1), cmd("MULTI"), zadd("z", "2", "w"), cmd("EXEC"),
			cmd("WATCH", "z"), cmd("DEL", "z").On(1), cmd("MULTI"), cmd("ZCARD", "z"), cmd("EXEC"), cmd("EXISTS", "z"),
			cmd("ZCARD", "zc"), cmd("UNWATCH"),
		}},
		{"object-zset-grow-and-shrink", growShrinkZset()},
	}
}

// growShrinkZset grows a sorted set one ZADD at a time past 128 members
// (Redis converts it to a skiplist at the 129th), another by one member
// longer than 64 bytes, and a third by ZINCRBY; then shrinks them one
// member at a time (Redis keeps them skiplists) to nothing.
func growShrinkZset() []Step {
	var steps []Step
	for i := 0; i < 135; i++ {
		steps = append(steps, zadd("g", strconv.Itoa(i%5-2), fmt.Sprintf("g%03d", 134-i)))
		if i >= 126 && i <= 129 {
			steps = append(steps, cmd("OBJECT", "ENCODING", "g"))
		}
	}
	steps = append(steps, cmd("ZRANGE", "g", "0", "-1", "WITHSCORES"), cmd("ZRANK", "g", "g000"), cmd("ZREVRANK", "g", "g134"),
		zadd("v", "1", "a", "2", "b", "-0", "c"), cmd("OBJECT", "ENCODING", "v"),
		zadd("v", "1", strings.Repeat("v", 64)), cmd("OBJECT", "ENCODING", "v"),
		zadd("v", "1", strings.Repeat("v", 65)), cmd("OBJECT", "ENCODING", "v"), cmd("ZRANGE", "v", "0", "-1", "WITHSCORES"),
		cmd("ZREM", "v", strings.Repeat("v", 65)), cmd("OBJECT", "ENCODING", "v"), cmd("ZRANGE", "v", "0", "-1", "WITHSCORES"))
	for i := 0; i < 130; i++ {
		steps = append(steps, cmd("ZINCRBY", "i", strconv.Itoa(i%3), fmt.Sprint("i", i%131)))
	}
	steps = append(steps, cmd("OBJECT", "ENCODING", "i"), cmd("ZCARD", "i"), cmd("ZRANGE", "i", "0", "-1", "WITHSCORES"))
	for i := 0; i < 135; i++ {
		if i%2 == 0 {
			steps = append(steps, cmd("ZREM", "g", fmt.Sprintf("g%03d", i)))
		} else {
			steps = append(steps, cmd("ZPOPMAX", "g"))
		}
		if i == 120 || i == 130 {
			steps = append(steps, cmd("OBJECT", "ENCODING", "g"), cmd("ZRANGE", "g", "0", "-1", "WITHSCORES"))
		}
	}
	steps = append(steps, cmd("EXISTS", "g"), cmd("ZCARD", "g"),
		cmd("ZREMRANGEBYRANK", "i", "0", "-4"), cmd("OBJECT", "ENCODING", "i"), cmd("ZRANGE", "i", "0", "-1", "WITHSCORES"),
		zadd("i", "1", "back"), cmd("OBJECT", "ENCODING", "i"), cmd("ZPOPMIN", "i", "10"), cmd("EXISTS", "i"))
	return steps
}
