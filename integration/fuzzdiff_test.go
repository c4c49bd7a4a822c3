package integration

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// FuzzDiff is the randomized differential test: its input drives a
// generator (genScript) of short scripts of plain Redis commands, with
// arguments drawn from small vocabularies of edge values, which run on a
// redis-server and on oncekv as the hand-written diff scripts do
// (DiffPair.Run: FLUSHALL first, every reply compared byte for byte unless
// the step says otherwise). The pair is started once per fuzz process,
// with redis-server's rdbcompression set to no (dumpPayloads) so that
// DUMP compares exactly.
//
// The seed corpus (below, and testdata/fuzz/FuzzDiff) runs in every go
// test; to search for new differences, run it by hand:
//
//	go test -run X -fuzz FuzzDiff -fuzztime 10m -fuzzminimizetime 10x -parallel 2 ./integration
//
// (-fuzzminimizetime bounds the minimizing of every new interesting
// input too; with a time, the workers spent most of a 60 s run on it.)
//
// A failure prints the script; go test -fuzz writes the input to
// testdata/fuzz/FuzzDiff, where it stays as a seed.
func FuzzDiff(f *testing.F) {
	p := NewDiffPair(f)
	genPayloads = append(handPayloads[:len(handPayloads):len(handPayloads)], dumpPayloads(f, p)...)
	seed := func(i uint64) []byte {
		r := rand.New(rand.NewPCG(i, 0x6f6e63656b76))
		b := make([]byte, 32+r.IntN(200))
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		return b
	}
	for i := uint64(0); i < 40; i++ {
		f.Add(seed(i))
	}
	// Then, of the seeds that follow, those that first take a path of
	// the commands of the keyspace's databases, DUMP/RESTORE, Pub/Sub, LCS
	// and sets.
	paths := map[string]bool{}
	for _, name := range []string{"COPY", "MOVE", "SWAPDB", "OBJECT", "DUMP", "RESTORE", "PUBLISH", "PUBSUB", "LCS",
		"SMOVE", "SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE", "SSCAN", "SINTERCARD", "EVAL"} {
		paths[name] = false
	}
	paths["push"], paths["watch-swapdb"] = false, false
	for i := uint64(40); i < 2000 && slices.Contains(slices.Collect(maps.Values(paths)), false); i++ {
		b := seed(i)
		s, _ := genScript(b)
		added := false
		watched := false
		for k, st := range s.Steps {
			var took []string
			switch {
			case st.Raw != nil && st.Conn == 3 && k >= 4: // after the SUBSCRIBE and PSUBSCRIBE
				took = append(took, "push")
			case len(st.Args) > 0:
				name := strings.ToUpper(st.Args[0])
				took = append(took, name)
				if name == "WATCH" && st.Conn == 1 {
					watched = true
				}
				if name == "SWAPDB" && watched {
					took = append(took, "watch-swapdb")
				}
			}
			for _, p := range took {
				if done, ok := paths[p]; ok && !done {
					paths[p] = true
					if !added {
						f.Add(b)
						added = true
					}
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, proto := genScript(data)
		defer func() {
			if t.Failed() {
				t.Logf("the script (resp%d):\n%s", proto, s.listing())
			}
		}()
		p.Run(t, s, proto)
	})
}

// listing is the script's steps, one a line, numbered as Run's messages
// number them.
func (s Script) listing() string {
	var b strings.Builder
	for i, st := range s.Steps {
		fmt.Fprintf(&b, "\t%2d %s\n", i, st)
	}
	return b.String()
}

// genReader hands out the fuzz input a byte at a time; once it is used up,
// every byte is 0, so any input makes a script.
type genReader struct {
	b []byte
	i int
	// keys are the keys handed out, in order, once each.
	keys []string
	// zsets is set once the script may have written a sorted set: its
	// end reads each key's members too.
	zsets bool
}

func (g *genReader) byte() byte {
	if g.i >= len(g.b) {
		return 0
	}
	c := g.b[g.i]
	g.i++
	return c
}

func (g *genReader) empty() bool { return g.i >= len(g.b) }

// n returns a number in [0, k).
func (g *genReader) n(k int) int { return int(g.byte()) % k }

// chance is true with probability about 1/k.
func (g *genReader) chance(k int) bool { return g.n(k) == 0 }

func (g *genReader) pick(xs []string) string { return xs[g.n(len(xs))] }

// word is a command name or option in upper, lower or mixed case.
func (g *genReader) word(w string) string {
	switch g.n(4) {
	case 0:
		return strings.ToLower(w)
	case 1:
		var b strings.Builder
		for i, c := range w {
			if i%2 == 1 {
				c = []rune(strings.ToLower(string(c)))[0]
			}
			b.WriteRune(c)
		}
		return b.String()
	}
	return w
}

// Vocabularies of arguments, chosen for their edges.
var (
	genKeys = []string{"a", "b", "c:1", "", binaryKey}
	genVals = []string{"", "0", "-1", "1", "10", maxInt64, minInt64, overMax, underMin,
		"1e3", " 1", "1 ", "3.0", "abc", "+1", "-0", "0x10", "10.5", "inf", "-inf", "nan",
		"1.7976931348623157e308", "5e-324", binary, strings.Repeat("0123456789", 100)}
	genInts = []string{"0", "1", "-1", "5", "-100", maxInt64, minInt64, overMax, "abc",
		"", " 1", "3.0", "1e3", "100000000000"}
	// Relative deadlines: none short enough to lapse within a script (the
	// two servers run a step some milliseconds apart), many not positive
	// or out of range.
	genSecs = []string{"0", "-1", "100", "2000", maxInt64, minInt64, "9223372036854775",
		"9223372036854776", "abc", "1e3", "3.0", "", " 100"}
	genMillis = []string{"0", "-1", "100000", "2000000", maxInt64, minInt64, "9223372036854775",
		"abc", "1e3", ""}
	// Absolute deadlines: the past, the far future, out of range.
	genAtSecs   = []string{"1", "0", "-1", farFutureS, maxInt64, minInt64, "9223372036854775", "abc"}
	genAtMillis = []string{"1", "0", "-1", farFutureMs, maxInt64, minInt64, "abc"}
	genPatterns = []string{"*", "a", "?", "[a-c]*", "c:*", "\\*", "", "[", "[^a]*", "k\x00*", "*1"}
	genTypes    = []string{"string", "STRING", "once", "list", "none", "foo", "hash", "set", "SET", "zset"}
	genFields   = []string{"f", "g", "", "n", binary, "a*"}
	// genMembers are set members: integers (an intset's) and not.
	genMembers = []string{"1", "2", "3", "-1", "10", maxInt64, "a", "b", "", binary, "01"}
	genOffsets = []string{"0", "1", "3", "-1", "100", "abc", "536870912", maxInt64, minInt64}
	genFloats  = []string{"0", "1", "-1", "1.5", "1e3", "inf", "-inf", "nan", "abc", "",
		"1.7976931348623157e308", "-1.7976931348623157e308", "5e-324", " 1", "0x10", "3.0e0"}
)

// str is a string of up to max bytes drawn from alphabet.
func (g *genReader) str(alphabet string, max int) string {
	b := make([]byte, g.n(max+1))
	for i := range b {
		b[i] = alphabet[g.n(len(alphabet))]
	}
	return string(b)
}

// number is an integer or a float as a client might spell it, right or
// wrong: from a vocabulary, or random digits, signs, points and exponents.
func (g *genReader) number(vocab []string) string {
	if g.chance(3) {
		return g.str("0123456789-+.e 9", 12)
	}
	return g.pick(vocab)
}

// globChars spell the keys and patterns that exercise the glob matcher.
const globChars = "ab*?[]^-\\!c"

// key is a key of the vocabulary, now and then one made of glob
// characters, so that KEYS and SCAN MATCH meet them.
func (g *genReader) key() string {
	k := g.pick(genKeys)
	if g.chance(8) {
		k = g.str(globChars, 4)
	}
	if !slices.Contains(g.keys, k) {
		g.keys = append(g.keys, k)
	}
	return k
}

// pattern is a glob pattern of the vocabulary or a random one.
func (g *genReader) pattern() string {
	if g.chance(2) {
		return g.str(globChars, 6)
	}
	return g.pick(genPatterns)
}

// genCmd is one command template: gen returns its arguments (the name
// first) and how the replies are compared.
type genCmd struct {
	gen func(g *genReader) Step
	// w is how many times more often than others it is drawn (0: once).
	w int
}

// Sorted sets: scores and members of small vocabularies, so that
// members meet and scores tie (ordered by member), with the edges of
// parsing and formatting; now and then a member over
// zset-max-listpack-value makes a skiplist.
var (
	genScores   = []string{"0", "1", "-1", "1.5", "0.1", "-0", "3.0", "1e300", "inf", "-inf", "+inf", "nan", "abc", "", " 1", "1e400", "0x10", "5e-324", "(1"}
	genZMembers = []string{"a", "b", "c", "", "ab", binary, strings.Repeat("m", 65)}
	genRanges   = []string{"0", "1", "-1", "2", "-inf", "+inf", "(1", "(0", "1.5", "abc", "", maxInt64, minInt64, "(", "inf"}
	genLex      = []string{"-", "+", "[a", "(a", "[b", "(c", "[", "a", "++"}
	// lexKey is the one key of the lex range commands, whose members
	// all have score 0: on a set whose scores differ Redis's answer
	// depends on its skiplist's random levels.
	lexKey = "zlex"
)

// zsetPairs is 1 to 3 (score, member) pairs.
func zsetPairs(g *genReader) []string {
	var out []string
	for i := 1 + g.n(3); i > 0; i-- {
		out = append(out, g.number(genScores), g.pick(genZMembers))
	}
	return out
}

// zsetOpts are options of ZUNION, ZINTER and ZDIFF, some wrong.
func zsetOpts(g *genReader, n int) []string {
	var out []string
	for i := g.n(3); i > 0; i-- {
		switch g.n(4) {
		case 0:
			out = append(out, g.word("WEIGHTS"))
			for j := n - 1 + g.n(2); j >= 0; j-- {
				out = append(out, g.number(genScores))
			}
		case 1:
			out = append(out, g.word("AGGREGATE"), g.word(g.pick([]string{"SUM", "MIN", "MAX", "AVG"})))
		default:
			out = append(out, g.word("WITHSCORES"))
		}
	}
	return out
}

// zsetKeys is numkeys and that many keys (now and then one too many).
func zsetKeys(g *genReader) []string {
	keys := keyList(g, 1)
	n := len(keys)
	if g.chance(8) {
		n++
	}
	return append([]string{fmt.Sprint(n)}, keys...)
}

// zsetGenCmds are the templates of the sorted set commands.
var zsetGenCmds = []genCmd{
	{gen: func(g *genReader) Step {
		g.zsets = true
		var flags []string
		for i := g.n(3); i > 0; i-- {
			flags = append(flags, g.word(g.pick([]string{"NX", "XX", "GT", "LT", "CH", "INCR"})))
		}
		return ex(g, "ZADD", append(append([]string{g.key()}, flags...), zsetPairs(g)...)...)
	}, w: 4},
	{gen: func(g *genReader) Step {
		g.zsets = true
		return ex(g, "ZINCRBY", g.key(), g.number(genScores), g.pick(genZMembers))
	}},
	{gen: func(g *genReader) Step { return ex(g, "ZREM", g.key(), g.pick(genZMembers), g.pick(genZMembers)) }},
	{gen: func(g *genReader) Step { return ex(g, g.pick([]string{"ZCARD", "ZPOPMIN", "ZPOPMAX"}), g.key()) }},
	{gen: func(g *genReader) Step {
		return ex(g, g.pick([]string{"ZPOPMIN", "ZPOPMAX"}), g.key(), g.number(genInts))
	}},
	{gen: func(g *genReader) Step {
		return ex(g, g.pick([]string{"ZSCORE", "ZRANK", "ZREVRANK"}), g.key(), g.pick(genZMembers))
	}},
	{gen: func(g *genReader) Step { return ex(g, "ZMSCORE", g.key(), g.pick(genZMembers), g.pick(genZMembers)) }},
	{gen: func(g *genReader) Step {
		return ex(g, g.pick([]string{"ZCOUNT", "ZREMRANGEBYSCORE"}), g.key(), g.pick(genRanges), g.pick(genRanges))
	}},
	{gen: func(g *genReader) Step {
		return ex(g, "ZREMRANGEBYRANK", g.key(), g.number(genInts), g.number(genInts))
	}},
	{gen: func(g *genReader) Step {
		g.zsets = true
		return ex(g, "ZADD", lexKey, "0", g.pick(genZMembers), "0", g.pick(genZMembers))
	}},
	// Many members at once, so that sets pass the listpack's 128 and
	// become store objects (commands/zsetobj.go): members m0…, scores
	// from the generator's, ties among them; on lexKey all score 0.
	{gen: func(g *genReader) Step {
		g.zsets = true
		key, lex := g.key(), g.chance(3)
		if lex {
			key = lexKey
		}
		args := []string{key}
		for i := range 100 + g.n(100) {
			score := "0"
			if !lex {
				score = g.number(genScores)
			}
			args = append(args, score, fmt.Sprint("m", i*(1+g.n(3))))
		}
		return ex(g, "ZADD", args...)
	}},
	{gen: func(g *genReader) Step {
		name := g.pick([]string{"ZLEXCOUNT", "ZRANGEBYLEX", "ZREVRANGEBYLEX", "ZREMRANGEBYLEX"})
		args := []string{lexKey, g.pick(genLex), g.pick(genLex)}
		if name == "ZRANGEBYLEX" && g.chance(2) {
			args = append(args, g.word("LIMIT"), g.number(genInts), g.number(genInts))
		}
		return ex(g, name, args...)
	}},
	{gen: func(g *genReader) Step {
		var opts []string
		by := ""
		for i := g.n(4); i > 0; i-- {
			switch g.n(5) {
			case 0:
				by = g.word(g.pick([]string{"BYSCORE", "BYLEX"}))
				opts = append(opts, by)
			case 1:
				opts = append(opts, g.word("REV"))
			case 2:
				opts = append(opts, g.word("LIMIT"), g.number(genInts), g.number(genInts))
			default:
				opts = append(opts, g.word("WITHSCORES"))
			}
		}
		key := g.key()
		if strings.EqualFold(by, "BYLEX") {
			key = lexKey
		}
		lo, hi := g.pick(genRanges), g.pick(genRanges)
		if strings.EqualFold(by, "BYLEX") {
			lo, hi = g.pick(genLex), g.pick(genLex)
		}
		if g.chance(3) {
			return ex(g, "ZRANGESTORE", append([]string{g.key(), key, lo, hi}, opts...)...)
		}
		return ex(g, "ZRANGE", append([]string{key, lo, hi}, opts...)...)
	}, w: 2},
	{gen: func(g *genReader) Step {
		args := []string{g.key(), g.pick(genRanges), g.pick(genRanges)}
		if g.chance(2) {
			args = append(args, g.word("WITHSCORES"))
		}
		if g.chance(3) {
			args = append(args, g.word("LIMIT"), g.number(genInts), g.number(genInts))
		}
		return ex(g, g.pick([]string{"ZREVRANGE", "ZRANGEBYSCORE", "ZREVRANGEBYSCORE"}), args...)
	}},
	{gen: func(g *genReader) Step {
		args := zsetKeys(g)
		return ex(g, g.pick([]string{"ZUNION", "ZINTER", "ZDIFF"}), append(args, zsetOpts(g, len(args)-1)...)...)
	}, w: 2},
	{gen: func(g *genReader) Step {
		args := zsetKeys(g)
		return ex(g, g.pick([]string{"ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"}),
			append(append([]string{g.key()}, args...), zsetOpts(g, len(args)-1)...)...)
	}, w: 2},
	{gen: func(g *genReader) Step {
		args := zsetKeys(g)
		if g.chance(2) {
			args = append(args, g.word("LIMIT"), g.number(genInts))
		}
		return ex(g, "ZINTERCARD", args...)
	}},
	{gen: func(g *genReader) Step {
		args := append(zsetKeys(g), g.word(g.pick([]string{"MIN", "MAX", "FOO"})))
		if g.chance(2) {
			args = append(args, g.word("COUNT"), g.number(genInts))
		}
		return ex(g, "ZMPOP", args...)
	}},
	// What ZRANDMEMBER picks is random: its shape is compared.
	{gen: func(g *genReader) Step {
		args := []string{g.key()}
		if g.chance(3) {
			args = append(args, g.number(genInts))
			if g.chance(2) {
				args = append(args, g.word("WITHSCORES"))
			}
		}
		return typeOnly(append([]string{g.word("ZRANDMEMBER")}, args...)...)
	}},
	// A skiplist (a member over 64 bytes) scans in another order.
	{gen: func(g *genReader) Step {
		st := scan(append([]string{g.word("ZSCAN"), g.key(), "0"}, zscanOptions(g)...)...)
		st.Cursor = 2
		return st
	}},
}

// zscanOptions are ZSCAN's MATCH and COUNT, now and then wrong.
func zscanOptions(g *genReader) []string {
	var out []string
	for i := g.n(3); i > 0; i-- {
		switch g.n(3) {
		case 0:
			out = append(out, g.word("MATCH"), g.pattern())
		case 1:
			out = append(out, g.word("COUNT"), g.pick([]string{"1", "5", "0", "abc"}))
		default:
			out = append(out, g.word("TYPE"), "zset")
		}
	}
	return out
}

// genPick is genCmds with each template there w times.
var genPick = func() []genCmd {
	var out []genCmd
	for _, c := range append(genCmds[:len(genCmds):len(genCmds)], zsetGenCmds...) {
		for i := 0; i < max(c.w, 1); i++ {
			out = append(out, c)
		}
	}
	return out
}()

// ex returns a compared-exactly step with the name in any case.
func ex(g *genReader, name string, args ...string) Step {
	return cmd(append([]string{g.word(name)}, args...)...)
}

func keyList(g *genReader, min int) []string {
	var ks []string
	for i := 0; i < min+g.n(3); i++ {
		ks = append(ks, g.key())
	}
	return ks
}

// setOptions are SET's options in any order, case and combination, some
// of them conflicting.
func setOptions(g *genReader) []string {
	var out []string
	for i := g.n(4); i > 0; i-- {
		switch g.n(10) {
		case 0:
			out = append(out, g.word("NX"))
		case 1:
			out = append(out, g.word("XX"))
		case 2:
			out = append(out, g.word("GET"))
		case 3:
			out = append(out, g.word("KEEPTTL"))
		case 4:
			out = append(out, g.word("EX"), g.pick(genSecs))
		case 5:
			out = append(out, g.word("PX"), g.pick(genMillis))
		case 6:
			out = append(out, g.word("EXAT"), g.pick(genAtSecs))
		case 7:
			out = append(out, g.word("PXAT"), g.pick(genAtMillis))
		case 8:
			out = append(out, g.word("EX")) // its value missing
		default:
			out = append(out, g.word("PERSIST")) // GETEX's, not SET's
		}
	}
	return out
}

func getexOptions(g *genReader) []string {
	var out []string
	for i := g.n(3); i > 0; i-- {
		switch g.n(6) {
		case 0:
			out = append(out, g.word("PERSIST"))
		case 1:
			out = append(out, g.word("EX"), g.pick(genSecs))
		case 2:
			out = append(out, g.word("PX"), g.pick(genMillis))
		case 3:
			out = append(out, g.word("EXAT"), g.pick(genAtSecs))
		case 4:
			out = append(out, g.word("PXAT"), g.pick(genAtMillis))
		default:
			out = append(out, g.word("KEEPTTL"))
		}
	}
	return out
}

func expireOptions(g *genReader) []string {
	var out []string
	for i := g.n(4); i > 1; i-- {
		out = append(out, g.word(g.pick([]string{"NX", "XX", "GT", "LT", "XY"})))
	}
	return out
}

func scanOptions(g *genReader) []string {
	var out []string
	for i := g.n(4); i > 0; i-- {
		switch g.n(4) {
		case 0:
			out = append(out, g.word("MATCH"), g.pattern())
		case 1:
			out = append(out, g.word("COUNT"), g.pick([]string{"1", "2", "10", "0", "-1", "abc", maxInt64}))
		case 2:
			out = append(out, g.word("TYPE"), g.pick(genTypes))
		default:
			out = append(out, g.word(g.pick([]string{"MATCH", "COUNT", "TYPE", "FOO"})))
		}
	}
	return out
}

func flushOption(g *genReader) []string {
	switch g.n(5) {
	case 0:
		return []string{g.word("ASYNC")}
	case 1:
		return []string{g.word("SYNC")}
	case 2:
		return []string{"x"}
	}
	return nil
}

// genCmds are the templates. Left out: the ONCE commands (redis-server has
// none), commands whose replies differ by nature or by server (INFO, TIME,
// CLIENT ID/LIST/INFO, RANDOMKEY, LASTSAVE, COMMAND DOCS/INFO/COUNT/LIST,
// CONFIG, SLOWLOG, SHUTDOWN, SAVE, BGSAVE) and CLIENT KILL of a real client
// (the ids differ). COMMAND GETKEYS is generated by genScript, around
// another template's command.
var genCmds = []genCmd{
	{gen: func(g *genReader) Step { return ex(g, "GET", g.key()) }},
	{gen: func(g *genReader) Step {
		return ex(g, "SET", append([]string{g.key(), g.number(genVals)}, setOptions(g)...)...)
	}, w: 3},
	{gen: func(g *genReader) Step { return ex(g, "SET", g.key(), g.number(genVals)) }, w: 3},
	{gen: func(g *genReader) Step { return ex(g, "SETNX", g.key(), g.number(genVals)) }},
	{gen: func(g *genReader) Step { return ex(g, "SETEX", g.key(), g.pick(genSecs), g.number(genVals)) }},
	{gen: func(g *genReader) Step { return ex(g, "PSETEX", g.key(), g.pick(genMillis), g.number(genVals)) }},
	{gen: func(g *genReader) Step { return ex(g, "GETSET", g.key(), g.number(genVals)) }},
	{gen: func(g *genReader) Step { return ex(g, "GETDEL", g.key()) }},
	{gen: func(g *genReader) Step {
		return ex(g, "GETEX", append([]string{g.key()}, getexOptions(g)...)...)
	}},
	{gen: func(g *genReader) Step { return ex(g, "MGET", keyList(g, 1)...) }},
	{gen: func(g *genReader) Step {
		args := []string{}
		for i := 1 + g.n(3); i > 0; i-- {
			args = append(args, g.key(), g.number(genVals))
		}
		return ex(g, g.pick([]string{"MSET", "MSETNX"}), args...)
	}},
	{gen: func(g *genReader) Step { return ex(g, "APPEND", g.key(), g.number(genVals)) }},
	{gen: func(g *genReader) Step { return ex(g, "STRLEN", g.key()) }},
	{gen: func(g *genReader) Step {
		return ex(g, g.pick([]string{"GETRANGE", "SUBSTR"}), g.key(), g.number(genInts), g.number(genInts))
	}},
	{gen: func(g *genReader) Step {
		v := g.number(genVals)
		if len(v) > 10 {
			v = "xyz" // a long value at a far offset would build 512 MB in redis
		}
		return ex(g, "SETRANGE", g.key(), g.pick(genOffsets), v)
	}},
	{gen: func(g *genReader) Step {
		args := []string{g.key(), g.key()}
		for i := g.n(4); i > 0; i-- {
			switch g.n(5) {
			case 0:
				args = append(args, g.word("LEN"))
			case 1:
				args = append(args, g.word("IDX"))
			case 2:
				args = append(args, g.word("WITHMATCHLEN"))
			case 3:
				args = append(args, g.word("MINMATCHLEN"), g.number(genInts))
			case 4:
				args = append(args, g.word("MINMATCHLEN"))
			}
		}
		return ex(g, "LCS", args...)
	}},
	{gen: func(g *genReader) Step { return ex(g, g.pick([]string{"INCR", "DECR"}), g.key()) }},
	{gen: func(g *genReader) Step {
		return ex(g, g.pick([]string{"INCRBY", "DECRBY"}), g.key(), g.number(genInts))
	}},
	{gen: func(g *genReader) Step { return ex(g, "INCRBYFLOAT", g.key(), g.number(genFloats)) }},
	// Hashes over the same keys, so that every string command meets a
	// hash and every hash command a string. A hash that a long value made
	// hashtable-encoded answers in an order of its own (README), so the
	// whole-hash replies are compared as multisets; HRANDFIELD by shape.
	{gen: func(g *genReader) Step {
		args := []string{g.key()}
		for i := g.n(4); i >= 0; i-- {
			args = append(args, g.pick(genFields), g.number(genVals))
		}
		if g.chance(8) {
			args = args[:len(args)-1] // an odd count: an arity error
		}
		return ex(g, g.pick([]string{"HSET", "HMSET"}), args...)
	}, w: 3},
	{gen: func(g *genReader) Step { return ex(g, "HSETNX", g.key(), g.pick(genFields), g.number(genVals)) }},
	{gen: func(g *genReader) Step {
		return ex(g, g.pick([]string{"HGET", "HEXISTS", "HSTRLEN"}), g.key(), g.pick(genFields))
	}},
	{gen: func(g *genReader) Step {
		return ex(g, g.pick([]string{"HMGET", "HDEL"}), g.key(), g.pick(genFields), g.pick(genFields))
	}},
	{gen: func(g *genReader) Step { return ex(g, "HLEN", g.key()) }},
	{gen: func(g *genReader) Step { return sorted(g.word(g.pick([]string{"HGETALL", "HKEYS", "HVALS"})), g.key()) }},
	{gen: func(g *genReader) Step { return ex(g, "HINCRBY", g.key(), g.pick(genFields), g.number(genInts)) }},
	{gen: func(g *genReader) Step {
		return ex(g, "HINCRBYFLOAT", g.key(), g.pick(genFields), g.number(genFloats))
	}},
	{gen: func(g *genReader) Step {
		args := []string{g.word("HRANDFIELD"), g.key()}
		if g.chance(3) {
			return typeOnly(args...)
		}
		args = append(args, g.pick([]string{"0", "1", "2", "-3", "100", "abc", minInt64}))
		if g.chance(2) {
			args = append(args, g.word(g.pick([]string{"WITHVALUES", "FOO"})))
		}
		return typeOnly(args...)
	}},
	{gen: func(g *genReader) Step {
		args := []string{g.word("HSCAN"), g.key(), "0"}
		if g.chance(2) {
			args = append(args, g.word("MATCH"), g.pattern())
		}
		if g.chance(2) {
			args = append(args, g.word("COUNT"), g.pick([]string{"1", "10", "0", "abc"}))
		}
		return hscan(args...)
	}},
	{gen: func(g *genReader) Step {
		return ex(g, g.pick([]string{"DEL", "UNLINK", "EXISTS", "TOUCH"}), keyList(g, 1)...)
	}},
	{gen: func(g *genReader) Step {
		name, vals := "EXPIRE", genSecs
		switch g.n(4) {
		case 1:
			name, vals = "PEXPIRE", genMillis
		case 2:
			name, vals = "EXPIREAT", genAtSecs
		case 3:
			name, vals = "PEXPIREAT", genAtMillis
		}
		return ex(g, name, append([]string{g.key(), g.pick(vals)}, expireOptions(g)...)...)
	}},
	// The two servers run a step some milliseconds apart.
	{gen: func(g *genReader) Step { return approx(1, g.word("TTL"), g.key()) }},
	{gen: func(g *genReader) Step { return approx(1000, g.word("PTTL"), g.key()) }},
	{gen: func(g *genReader) Step { return approx(1, g.word("EXPIRETIME"), g.key()) }},
	{gen: func(g *genReader) Step { return approx(1000, g.word("PEXPIRETIME"), g.key()) }},
	{gen: func(g *genReader) Step { return ex(g, g.pick([]string{"PERSIST", "TYPE"}), g.key()) }},
	// KEYS and SCAN list keys in byte order, Redis in hash order; a SCAN
	// cursor is the server's own (README, "Differences from Redis 7.0").
	{gen: func(g *genReader) Step { return sorted(g.word("KEYS"), g.pattern()) }},
	{gen: func(g *genReader) Step { return scan(append([]string{g.word("SCAN"), "0"}, scanOptions(g)...)...) }},
	{gen: func(g *genReader) Step {
		// Cursors that are not numbers ("" is one: 0, to Redis).
		return ex(g, "SCAN", append([]string{g.pick([]string{"abc", " 0", "0x1", "-", "1 "})}, scanOptions(g)...)...)
	}},
	{gen: func(g *genReader) Step {
		return ex(g, g.pick([]string{"RENAME", "RENAMENX"}), g.key(), g.key())
	}},
	{gen: func(g *genReader) Step { return ex(g, "DBSIZE") }},
	{gen: func(g *genReader) Step { return ex(g, g.pick([]string{"FLUSHDB", "FLUSHALL"}), flushOption(g)...) }},
	{gen: func(g *genReader) Step {
		return ex(g, "SELECT", g.pick([]string{"0", "1", "15", "16", "-1", "abc", maxInt64, ""}))
	}},
	{gen: func(g *genReader) Step {
		if g.chance(2) {
			return ex(g, "PING")
		}
		return ex(g, g.pick([]string{"PING", "ECHO"}), g.number(genVals))
	}},
	{gen: func(g *genReader) Step { return ex(g, "MULTI") }},
	{gen: func(g *genReader) Step { return ex(g, "EXEC") }},
	{gen: func(g *genReader) Step { return ex(g, "DISCARD") }},
	{gen: func(g *genReader) Step { return ex(g, "WATCH", keyList(g, 1)...) }},
	{gen: func(g *genReader) Step { return ex(g, "UNWATCH") }},
	{gen: func(g *genReader) Step { return ex(g, "RESET") }},
	{gen: func(g *genReader) Step { return ex(g, "QUIT") }},
	{gen: func(g *genReader) Step {
		// A protocol switch is compared by shape (settle).
		switch g.n(4) {
		case 0:
			return ex(g, "HELLO", g.pick([]string{"2", "3"}))
		case 1:
			return ex(g, "HELLO", g.pick([]string{"4", "1", "abc", "-1", ""}))
		case 2:
			return ex(g, "HELLO", g.pick([]string{"2", "3"}), g.word("SETNAME"), g.pick([]string{"x", "a b", ""}))
		}
		return ex(g, "HELLO", g.pick([]string{"3", "2"}), g.word(g.pick([]string{"AUTH", "FOO"})), "x")
	}},
	{gen: func(g *genReader) Step { return ex(g, "AUTH", keyList(g, 0)...) }},
	{gen: func(g *genReader) Step {
		switch g.n(7) {
		case 5:
			// Not OFF or SKIP: they silence the replies, and the
			// runner expects one reply per step (reply_diff_test.go's
			// TestDiffClientReply compares them).
			return ex(g, "CLIENT", g.word("REPLY"), g.word(g.pick([]string{"ON", "x"})))
		case 0:
			return ex(g, "CLIENT", g.word("SETNAME"), g.pick([]string{"w1", "", "a b", "é"}))
		case 1:
			return ex(g, "CLIENT", g.word("GETNAME"))
		case 2:
			// Not NO-TOUCH: a Redis 7.2 subcommand, which oncekv takes
			// and Redis 7.0 does not (README, "Differences from Redis 7.0").
			return ex(g, "CLIENT", g.word("NO-EVICT"), g.word(g.pick([]string{"ON", "OFF", "x"})))
		case 3:
			return ex(g, "CLIENT", g.word("KILL"), g.pick([]string{"127.0.0.1:1", "ADDR", "x"}))
		case 4:
			return ex(g, "CLIENT", g.word("FOO"))
		}
		return ex(g, "CLIENT")
	}},
	{gen: func(g *genReader) Step { return ex(g, "NOSUCH", keyList(g, 0)...) }},
	{gen: func(g *genReader) Step {
		return ex(g, "COPY", append([]string{g.key(), g.key()}, copyOptions(g)...)...)
	}, w: 3},
	{gen: func(g *genReader) Step { return ex(g, "MOVE", g.key(), g.pick(genDBs)) }, w: 2},
	{gen: func(g *genReader) Step { return ex(g, "SWAPDB", g.pick(genDBs), g.pick(genDBs)) }, w: 2},
	{gen: objectStep, w: 2},
	// DUMP is compared byte for byte: FuzzDiff sets redis-server's
	// rdbcompression to no (README, "DUMP writes what Redis writes with
	// rdbcompression no").
	{gen: func(g *genReader) Step {
		st := ex(g, "DUMP", g.key())
		st.Alike = dumpAlike
		return st
	}, w: 2},
	{gen: func(g *genReader) Step {
		ttl, opts := g.pick(genMillis), restoreOptions(g)
		if slices.ContainsFunc(opts, func(o string) bool { return strings.EqualFold(o, "ABSTTL") }) {
			ttl = g.pick(genAtMillis)
		}
		return ex(g, "RESTORE", append([]string{g.key(), ttl, g.pick(genPayloads)}, opts...)...)
	}, w: 3},
	// Lists: pushes weigh more, so that the other commands find lists.
	{gen: func(g *genReader) Step {
		return ex(g, g.pick([]string{"LPUSH", "RPUSH", "LPUSHX", "RPUSHX"}), append([]string{g.key()}, keyList(g, 1)...)...)
	}, w: 4},
	// Many elements at once, so that lists pass the inline limits (128
	// elements, 8 KiB) and become store objects (commands/listobj.go).
	{gen: func(g *genReader) Step {
		args := []string{g.key()}
		v := g.number(genVals)
		for range 60 + g.n(100) {
			args = append(args, v)
		}
		return ex(g, g.pick([]string{"LPUSH", "RPUSH"}), args...)
	}},
	{gen: func(g *genReader) Step {
		args := []string{g.key()}
		if g.chance(2) {
			args = append(args, g.number(genListInts))
		}
		return ex(g, g.pick([]string{"LPOP", "RPOP"}), args...)
	}, w: 2},
	{gen: func(g *genReader) Step { return ex(g, "LLEN", g.key()) }},
	{gen: func(g *genReader) Step {
		return ex(g, "LRANGE", g.key(), g.number(genListInts), g.number(genListInts))
	}, w: 2},
	{gen: func(g *genReader) Step { return ex(g, "LINDEX", g.key(), g.number(genListInts)) }},
	{gen: func(g *genReader) Step { return ex(g, "LSET", g.key(), g.number(genListInts), g.number(genVals)) }},
	{gen: func(g *genReader) Step {
		return ex(g, "LINSERT", g.key(), g.word(g.pick([]string{"BEFORE", "AFTER", "x"})), g.number(genVals), g.number(genVals))
	}},
	{gen: func(g *genReader) Step { return ex(g, "LREM", g.key(), g.number(genListInts), g.number(genVals)) }},
	{gen: func(g *genReader) Step {
		return ex(g, "LTRIM", g.key(), g.number(genListInts), g.number(genListInts))
	}},
	{gen: func(g *genReader) Step {
		args := []string{g.key(), g.number(genVals)}
		for range g.n(3) {
			args = append(args, g.word(g.pick([]string{"RANK", "COUNT", "MAXLEN", "FOO"})), g.number(genListInts))
		}
		return ex(g, "LPOS", args...)
	}},
	{gen: func(g *genReader) Step {
		if g.chance(3) {
			return ex(g, "RPOPLPUSH", g.key(), g.key())
		}
		return ex(g, "LMOVE", g.key(), g.key(), g.word(g.pick(genWheres)), g.word(g.pick(genWheres)))
	}, w: 2},
	{gen: func(g *genReader) Step {
		keys := keyList(g, 1)
		args := append([]string{g.pick([]string{fmt.Sprint(len(keys)), "0", "x", "9"})}, keys...)
		args = append(args, g.word(g.pick(genWheres)))
		if g.chance(2) {
			args = append(args, g.word("COUNT"), g.number(genListInts))
		}
		return ex(g, "LMPOP", args...)
	}},
	// Blocking, with timeouts short enough to end the step (or none: a
	// command that finds an element, or queued in MULTI, answers at
	// once; one that would block for good is not generated).
	{gen: func(g *genReader) Step {
		t := g.pick([]string{"0.01", "0.02", "-1", "x"})
		switch g.n(4) {
		case 0:
			return ex(g, g.pick([]string{"BLPOP", "BRPOP"}), append(keyList(g, 1), t)...)
		case 1:
			return ex(g, "BLMOVE", g.key(), g.key(), g.word(g.pick(genWheres)), g.word(g.pick(genWheres)), t)
		case 2:
			return ex(g, "BRPOPLPUSH", g.key(), g.key(), t)
		}
		keys := keyList(g, 1)
		args := append([]string{t, fmt.Sprint(len(keys))}, keys...)
		return ex(g, "BLMPOP", append(args, g.word(g.pick(genWheres)), g.word("COUNT"), g.number(genListInts))...)
	}, w: 2},
	{gen: func(g *genReader) Step { return ex(g, "PUBLISH", g.pick(genChannels), g.number(genVals)) }, w: 2},
	{gen: setStep, w: 12},
	{gen: evalStep, w: 4},
	{gen: func(g *genReader) Step {
		switch g.n(4) {
		case 0:
			return ex(g, "PUBSUB", g.word("NUMSUB"), g.pick(genChannels), g.pick(genChannels))
		case 1:
			return ex(g, "PUBSUB", g.word("NUMPAT"))
		case 2:
			// PUBSUB CHANNELS lists in byte order, Redis in its hash
			// table's (README, "Pub/Sub").
			return sorted(g.word("PUBSUB"), g.word("CHANNELS"), g.pattern())
		}
		return sorted(g.word("PUBSUB"), g.word("CHANNELS"))
	}},
}

// genScriptBodies are the scripts EVAL runs over the generated keys
// (KEYS[1], KEYS[2]) and values (ARGV[1]): the lock-release and
// rate-limit patterns, conversions, and errors raised or caught.
var genScriptBodies = []string{
	"return redis.call('GET', KEYS[1])",
	"return redis.call('SET', KEYS[1], ARGV[1])",
	"return redis.pcall('INCRBY', KEYS[1], ARGV[1])",
	"return redis.call('INCRBY', KEYS[1], ARGV[1])",
	"if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
	"local n = redis.pcall('INCR', KEYS[1]) if type(n) == 'table' then return n end if n == 1 then redis.call('PEXPIRE', KEYS[1], 100000) end return n",
	"return {redis.call('EXISTS', KEYS[1]), redis.call('TYPE', KEYS[1]), redis.call('STRLEN', KEYS[1])}",
	"redis.call('APPEND', KEYS[1], ARGV[1]) return redis.call('STRLEN', KEYS[1])",
	"return redis.call('MGET', KEYS[1], KEYS[2])",
	"return redis.pcall('COPY', KEYS[1], KEYS[2])",
	"redis.setresp(3) return redis.call('GET', KEYS[1])",
	"return {tonumber(ARGV[1]), ARGV[1], #KEYS}",
	// The other types, through a script.
	"return redis.pcall('HSET', KEYS[1], 'f', ARGV[1])",
	"return redis.pcall('HGETALL', KEYS[1])",
	"return redis.pcall('SADD', KEYS[1], ARGV[1], 'm')",
	"return redis.pcall('SCARD', KEYS[1])",
	"return redis.pcall('ZADD', KEYS[1], ARGV[1], 'm')",
	"return redis.pcall('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')",
	"redis.setresp(3) return redis.pcall('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')",
	"return redis.pcall('ZUNIONSTORE', KEYS[2], 2, KEYS[1], KEYS[2])",
	"return redis.pcall('RPUSH', KEYS[1], ARGV[1])",
	"return redis.pcall('LRANGE', KEYS[1], 0, -1)",
	"return redis.pcall('BLPOP', KEYS[1], KEYS[2], 0)",
	"return redis.pcall('BZPOPMIN', KEYS[1], 0)",
	"return redis.pcall('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')",
}

// evalStep is EVAL (or EVAL_RO, or EVALSHA of a body EVAL cached) of one
// of genScriptBodies over two keys and a value.
func evalStep(g *genReader) Step {
	body := g.pick(genScriptBodies)
	args := []string{body, "2", g.key(), g.key(), g.number(genVals)}
	switch g.n(6) {
	case 0:
		return ex(g, "EVAL_RO", args...)
	case 1:
		sum := sha1.Sum([]byte(body))
		args[0] = hex.EncodeToString(sum[:])
		return ex(g, "EVALSHA", args...)
	case 2:
		args[1] = g.pick([]string{"-1", "3", "x", "0"})
	}
	return ex(g, "EVAL", args...)
}

// Vocabularies of the commands of the keyspace's databases, Pub/Sub and
// DUMP/RESTORE. The state genScript compares at the end covers databases
// 0, 1 and 15.
var (
	genWheres   = []string{"LEFT", "RIGHT", "LEFT", "RIGHT", "UP"}
	genListInts = []string{"0", "1", "2", "-1", "-2", "3", "-100", "100", "x", "9223372036854775807", "-9223372036854775808"}
	genDBs      = []string{"0", "1", "15", "0", "1", "15", "16", "-1", "abc", "", "01"}
	// genChannels are what the subscriber of genScript subscribes to,
	// and others; subChannels and subPatterns are its subscriptions. No
	// channel matches more than one of them: oncekv sends a channel's
	// pattern messages in the patterns' byte order, Redis in its hash
	// table's (README, "Pub/Sub").
	genChannels = []string{"a", "b", "c:1", "c:2", "", "ab", "?", "*"}
	subChannels = []string{"a", "c:1"}
	subPatterns = []string{"c:*", "?"}
	// genPayloads are RESTORE's payloads: handPayloads and, made by
	// FuzzDiff (dumpPayloads), what each server DUMPs.
	genPayloads []string
	// handPayloads are hand-made payloads, good and bad, of strings,
	// sets and sorted sets (a listpack, a skiplist's type 5, type 3). A
	// sorted set's listpack is one Redis writes: Redis loads a malformed
	// one unchecked, where oncekv refuses it (README, "DUMP and RESTORE").
	handPayloads = []string{
		rdbPayload("\x02\x02\x01a\xc0\x01", 10), rdbPayload("\x0b\x0c\x02\x00\x00\x00\x02\x00\x00\x00\x01\x00\x05\x00", 10),
		rdbPayload("\x02\x02\x01a\x01a", 10),
		rdbPayload("\x00\x03abc", 10), rdbPayload("\x00\xc0\x07", 10), rdbPayload("\x00\xc2\xff\xff\xff\x7f", 10),
		rdbPayload("\x00\x00", 10), rdbPayload("\x00\x03abc", 11), rdbPayload("\x00\x03abc", 9),
		rdbPayload("\x00\x03abc", 10)[:13] + "\x00", rdbPayload("\x00\x05ab", 10),
		"", "junk", "\x00\xc3\t\x1e\x01xx\xe0\x11\x00\x01xx\n\x00\xf0g?\xdf \x01\xeb\x95",
		rdbPayload("\x11\x0f\x0f\x00\x00\x00\x02\x00\x81m\x02\x831.5\x04\xff", 10),
		rdbPayload("\x05\x02\x01x\x00\x00\x00\x00\x00\x00\xf0\x7f\x01a\x00\x00\x00\x00\x00\x00\x00\x80", 10),
		rdbPayload("\x03\x02\x01a\x031.5\x01b\xff", 10), rdbPayload("\x05\x02\x01a\x00\x00\x00\x00\x00\x00\xf0?\x01a\x00\x00\x00\x00\x00\x00\xf0?", 10),
	}
	// dumpedVals are the values whose DUMPs FuzzDiff adds to genPayloads.
	dumpedVals = []string{"", "7", "-1", maxInt64, overMax, "abc", binary, strings.Repeat("a", 21),
		strings.Repeat("0123456789", 100), "1.5"}
)

// dumpPayloads returns what each server of p DUMPs of dumpedVals,
// redis-server with its default LZF compression, so that each RESTOREs
// the other's; then it sets rdbcompression no on redis-server, whose
// DUMPs then equal oncekv's (README, "DUMP and RESTORE").
func dumpPayloads(tb testing.TB, p *DiffPair) []string {
	tb.Helper()
	var out []string
	for _, addr := range []string{p.Redis, p.Other} {
		c := DialRaw(tb, addr)
		for _, v := range dumpedVals {
			if got := string(c.Do("SET", "fuzz:dump", v)); got != "+OK\r\n" {
				tb.Fatalf("%s: SET: %q", addr, got)
			}
			f := c.ReadFrameAfterDo(tb, "DUMP", "fuzz:dump")
			if f.Type != '$' || f.Null {
				tb.Fatalf("%s: DUMP of %.20q: %q", addr, v, f.Raw)
			}
			out = append(out, f.Str)
		}
		c.Do("DEL", "fuzz:dump")
	}
	noCompression(tb, p)
	return out
}

// copyOptions are COPY's options in any order and case, some wrong.
func copyOptions(g *genReader) []string {
	var out []string
	for i := g.n(4); i > 0; i-- {
		switch g.n(5) {
		case 0, 1:
			out = append(out, g.word("DB"), g.pick(genDBs))
		case 2:
			out = append(out, g.word("REPLACE"))
		case 3:
			out = append(out, g.word("DB")) // its value missing
		default:
			out = append(out, g.word("FOO"))
		}
	}
	return out
}

// restoreOptions are RESTORE's options in any order and case, some wrong.
func restoreOptions(g *genReader) []string {
	var out []string
	for i := g.n(4); i > 0; i-- {
		switch g.n(6) {
		case 0, 1:
			out = append(out, g.word("REPLACE"))
		case 2:
			out = append(out, g.word("ABSTTL"))
		case 3:
			out = append(out, g.word("IDLETIME"), g.pick([]string{"0", "10", "-1", "abc"}))
		case 4:
			out = append(out, g.word("FREQ"), g.pick([]string{"0", "255", "256", "-1"}))
		default:
			out = append(out, g.word(g.pick([]string{"FREQ", "FOO"})))
		}
	}
	return out
}

// objectStep is an OBJECT command. oncekv judges ENCODING and REFCOUNT
// from the value's bytes; Redis answers for the object a command built
// (README, "OBJECT ENCODING and REFCOUNT"): raw for a short string that
// APPEND or SETRANGE grew, embstr for an integer INCRBYFLOAT wrote,
// refcount 1 for a shared integer that COPY copied. objectAlike accepts
// those and only those. IDLETIME is 0 here
// (README), so it is compared by shape.
func objectStep(g *genReader) Step {
	switch g.n(6) {
	case 0, 1:
		st := ex(g, "OBJECT", g.word("ENCODING"), g.key())
		st.Alike = objectAlike
		return st
	case 2:
		st := ex(g, "OBJECT", g.word("REFCOUNT"), g.key())
		st.Alike = objectAlike
		return st
	case 3:
		return typeOnly(g.word("OBJECT"), g.word("IDLETIME"), g.key())
	case 4:
		return ex(g, "OBJECT", g.word("FREQ"), g.key())
	}
	return ex(g, "OBJECT", g.word(g.pick([]string{"HELP", "FOO", "ENCODING"})))
}

// dumpAlike accepts the DUMPs of a hashtable set (RDB type 2), which
// list its members in byte order where Redis lists its hash table's
// (README, "Sets"), and of a hashtable-encoded hash (type 4), its fields
// in insertion order where Redis's are in its dict's (README, hashes):
// two payloads of the same type and length. TestSetDumpCrossRestore and
// TestDumpCrossRestore restore them on the other side.
func dumpAlike(redis, other *Frame) bool {
	return redis.Type == '$' && other.Type == '$' && !redis.Null && !other.Null &&
		len(redis.Str) == len(other.Str) && len(redis.Str) > 0 && redis.Str[0] == other.Str[0] &&
		(redis.Str[0] == 2 || redis.Str[0] == 4)
}

// objectAlike accepts the OBJECT replies README states differ: redis's
// raw where oncekv judges int or embstr from the bytes, redis's embstr
// where oncekv judges int, and redis's refcount 1 where oncekv has a
// shared integer's 2147483647.
func objectAlike(redis, other *Frame) bool {
	if redis.Type != other.Type || redis.Null || other.Null {
		return false
	}
	switch redis.Type {
	case '$':
		return redis.Str == "raw" && (other.Str == "int" || other.Str == "embstr") ||
			redis.Str == "embstr" && other.Str == "int"
	case ':':
		return redis.Str == "1" && other.Str == "2147483647"
	}
	return false
}

// members are 1 to 3 set members.
func members(g *genReader) []string {
	out := []string{g.pick(genMembers)}
	for i := g.n(3); i > 0; i-- {
		out = append(out, g.pick(genMembers))
	}
	return out
}

// setStep is a set command. A hashtable set lists its members in byte
// order, Redis in its hash table's (README, "Sets"): replies that list
// members are compared as multisets, an SSCAN is run to the end. SPOP
// and SRANDMEMBER are drawn with counts that take the whole set (no set
// here has 100 members) or compared by shape, so that no random choice
// changes what later steps see; emit leaves their arity alone.
func setStep(g *genReader) Step {
	switch g.n(18) {
	case 0, 1, 2:
		return ex(g, "SADD", append([]string{g.key()}, members(g)...)...)
	case 3:
		return ex(g, "SREM", append([]string{g.key()}, members(g)...)...)
	case 4:
		return sorted(g.word("SMEMBERS"), g.key())
	case 5:
		return ex(g, "SISMEMBER", g.key(), g.pick(genMembers))
	case 6:
		return ex(g, "SMISMEMBER", append([]string{g.key()}, members(g)...)...)
	case 7:
		return ex(g, "SCARD", g.key())
	case 8:
		return sorted(g.word("SPOP"), g.key(), g.pick([]string{"100", "0", "-1", "abc", maxInt64}))
	case 9:
		if g.chance(2) {
			return typeOnly(g.word("SRANDMEMBER"), g.key(), g.pick([]string{"-3", "2", "-1"}))
		}
		return sorted(g.word("SRANDMEMBER"), g.key(), g.pick([]string{"100", "0", "abc", maxInt64, minInt64}))
	case 10:
		return ex(g, "SMOVE", g.key(), g.key(), g.pick(genMembers))
	case 11:
		return sorted(append([]string{g.word(g.pick([]string{"SINTER", "SUNION", "SDIFF"}))}, keyList(g, 1)...)...)
	case 12:
		return ex(g, g.pick([]string{"SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"}), keyList(g, 2)...)
	case 13:
		args := []string{g.pick([]string{"1", "2", "3", "0", "-1", "abc"})}
		args = append(args, keyList(g, 1)...)
		if g.chance(2) {
			args = append(args, g.word("LIMIT"), g.pick([]string{"0", "1", "2", "-1", "abc"}))
		}
		return ex(g, "SINTERCARD", args...)
	case 14:
		args := []string{g.word("SSCAN"), g.key(), "0"}
		for i := g.n(3); i > 0; i-- {
			if g.chance(2) {
				args = append(args, g.word("MATCH"), g.pattern())
			} else {
				args = append(args, g.word("COUNT"), g.pick([]string{"1", "2", "10", "0", "abc"}))
			}
		}
		return Step{Args: args, Mode: ScanAll, Cursor: 2}
	}
	return ex(g, "SADD", g.key(), g.pick(genMembers))
}

// isSetStep reports whether st is a set command (its name starts with S
// and is not one of the others').
func isSetStep(st Step) bool {
	return len(st.Args) > 0 && len(st.Args[0]) > 1 && (st.Args[0][0] == 'S' || st.Args[0][0] == 's') &&
		!slices.ContainsFunc([]string{"SET", "SETNX", "SETEX", "SETRANGE", "SELECT", "SCAN", "SWAPDB", "SUBSTR", "STRLEN", "SUBSCRIBE"},
			func(n string) bool { return strings.EqualFold(n, st.Args[0]) })
}

// randomSet reports whether st is SPOP or SRANDMEMBER, whose arity emit
// must not change: without its count, either answers a random member.
func randomSet(st Step) bool {
	return strings.EqualFold(st.Args[0], "SPOP") || strings.EqualFold(st.Args[0], "SRANDMEMBER")
}

// pushes is how many messages st, run on connection 0 or 1, sends the
// subscriber of genScript.
func pushes(st Step) int {
	if !strings.EqualFold(st.Args[0], "PUBLISH") || len(st.Args) != 3 {
		return 0
	}
	n := 0
	if slices.Contains(subChannels, st.Args[1]) {
		n++
	}
	for _, p := range subPatterns {
		if p == "?" && len(st.Args[1]) == 1 || p == "c:*" && strings.HasPrefix(st.Args[1], "c:") {
			n++
		}
	}
	return n
}

// settle sets how st's replies are compared where its arguments decide
// it: a SCAN left without its cursor is compared exactly, a HELLO that
// switches the protocol by shape (its map holds the connection's id).
func settle(st Step) Step {
	if st.Mode == ScanAll && len(st.Args) <= st.Cursor {
		st.Mode = Exact
	}
	if strings.EqualFold(st.Args[0], "HELLO") && (len(st.Args) == 1 || st.Args[1] == "2" || st.Args[1] == "3") {
		st.Mode = TypeOnly
	}
	return st
}

// inMultiOK reports whether st may be queued in MULTI: EXEC's reply is
// compared exactly, so only a step compared exactly (and with no Alike)
// may, and not DBSIZE
// (see reclaim), nor CLIENT REPLY, which oncekv refuses in MULTI (README,
// "Differences from Redis 7.0").
func inMultiOK(st Step) bool {
	if strings.EqualFold(st.Args[0], "CLIENT") && len(st.Args) > 1 && strings.EqualFold(st.Args[1], "REPLY") {
		return false
	}
	return settle(st).Mode == Exact && st.Alike == nil && !strings.EqualFold(st.Args[0], "DBSIZE")
}

// reclaim is sent, its replies not compared, before a DBSIZE. DBSIZE does
// not count keys past their deadline (README, "Differences from Redis
// 7.0"); Redis 7.0 counts them until it deletes them, when a command
// looks them up or its active expiry samples them, and SET … PXAT with a
// time already past leaves one. SCAN looks every key of the database up.
var reclaim = send("SCAN", "0", "COUNT", "1000")

// genScript turns data into a script of 1 to 30 commands on up to two
// connections, and the protocol (2 or 3) its connections start in.
func genScript(data []byte) (Script, int) {
	g := &genReader{b: data}
	proto := 2 + g.n(2)
	count := 1 + g.n(30)
	var inMulti [2]bool
	s := Script{Name: "fuzz"}
	// Now and then connection 3 subscribes, and reads each message a
	// PUBLISH sends it right after that PUBLISH. A PUBLISH that sends it
	// messages is not queued in MULTI (an EXEC a WATCH aborts sends none).
	subscribed := g.chance(2)
	if subscribed {
		s.Steps = append(s.Steps,
			cmd(append([]string{"SUBSCRIBE"}, subChannels...)...).On(3), readNext().On(3),
			cmd(append([]string{"PSUBSCRIBE"}, subPatterns...)...).On(3), readNext().On(3))
	}
	queueOK := func(st Step) bool { return inMultiOK(st) && !(subscribed && pushes(st) > 0) }
	// next is a command for conn, one that may be queued if conn is in
	// MULTI.
	next := func(conn int) Step {
		for {
			st := genPick[g.n(len(genPick))].gen(g)
			if g.chance(24) {
				// The keys COMMAND GETKEYS finds in it.
				st = cmd(append([]string{g.word("COMMAND"), g.word(g.pick([]string{"GETKEYS", "GETKEYSANDFLAGS"}))}, st.Args...)...)
			}
			if !inMulti[conn] || queueOK(st) {
				return st
			}
			if g.empty() {
				return cmd("EXEC")
			}
		}
	}
	emit := func(conn int, st Step, mutate bool) {
		// Now and then a wrong number of arguments.
		m := st
		switch g.n(16) {
		case 0:
			if len(st.Args) > 1 {
				m.Args = st.Args[:len(st.Args)-1]
			}
		case 1:
			m.Args = append(st.Args[:len(st.Args):len(st.Args)], g.number(genVals))
		}
		if m.Mode == ScanAll && m.Cursor >= len(m.Args) {
			m.Mode = Exact // HSCAN cut to its key: an arity error
		}
		if mutate && !randomSet(st) && (!inMulti[conn] || queueOK(m)) {
			st = m
		}
		st = settle(st)
		if strings.EqualFold(st.Args[0], "DBSIZE") {
			s.Steps = append(s.Steps, reclaim.On(conn))
		}
		switch name := strings.ToUpper(st.Args[0]); {
		case name == "MULTI" && len(st.Args) == 1:
			inMulti[conn] = true
		case name == "QUIT", len(st.Args) == 1 && (name == "EXEC" || name == "DISCARD" || name == "RESET"):
			inMulti[conn] = false
		}
		s.Steps = append(s.Steps, st.On(conn))
		if subscribed && !inMulti[conn] {
			for range pushes(st) {
				s.Steps = append(s.Steps, readNext().On(3))
			}
		}
	}
	for i := 0; i < count && (i == 0 || !g.empty()); i++ {
		if !inMulti[0] && !inMulti[1] && g.chance(12) {
			// A transaction that another connection's command may
			// spoil: WATCH, the other's command, MULTI, a command, EXEC.
			// Often SWAPDB, which touches the keys watched in both
			// databases (README, "SWAPDB").
			emit(1, ex(g, "WATCH", keyList(g, 1)...), false)
			if g.chance(3) {
				emit(0, ex(g, "SWAPDB", g.pick(genDBs), g.pick(genDBs)), true)
			} else {
				emit(0, next(0), true)
			}
			emit(1, ex(g, "MULTI"), false)
			emit(1, next(1), true)
			emit(1, ex(g, "EXEC"), false)
			continue
		}
		conn := 0
		if g.chance(4) {
			conn = 1
		}
		emit(conn, next(conn), true)
	}
	if subscribed {
		// Unsubscribed, so that the next script's PUBSUB counts do not
		// see it.
		s.Steps = append(s.Steps, cmd("RESET").On(3))
	}
	// Then the state each side is left with, on a connection of its own:
	// in three databases, the keys, the values of those the script named
	// and their deadlines.
	for _, db := range []string{"0", "1", "15"} {
		s.Steps = append(s.Steps, cmd("SELECT", db).On(2), sorted("KEYS", "*").On(2))
		if len(g.keys) > 0 {
			s.Steps = append(s.Steps, cmd(append([]string{"MGET"}, g.keys...)...).On(2))
		}
		for _, k := range g.keys {
			s.Steps = append(s.Steps, approx(1000, "PTTL", k).On(2))
			if slices.ContainsFunc(s.Steps, isSetStep) {
				enc := cmd("OBJECT", "ENCODING", k)
				enc.Alike = objectAlike // a string's encoding may differ
				s.Steps = append(s.Steps, sorted("SMEMBERS", k).On(2), enc.On(2))
			}
			if g.zsets {
				s.Steps = append(s.Steps, cmd("ZRANGE", k, "0", "-1", "WITHSCORES").On(2))
			}
		}
		if g.zsets {
			s.Steps = append(s.Steps, cmd("ZRANGE", lexKey, "0", "-1", "WITHSCORES").On(2))
		}
	}
	return s, proto
}
