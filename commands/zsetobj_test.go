package commands

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
	"github.com/oncekv/oncekv/store/badgerdb"
)

// zsetServer is a server on a store of its own whose sorted sets stay
// listpack encoded (inline) up to inline members (Redis's 128 when
// negative), and its answer to one command.
func zsetServer(tb testing.TB, inline int64) (*Server, func(args ...string) string) {
	tb.Helper()
	st, err := badgerdb.Open(badgerdb.DefaultOptions(tb.TempDir()))
	if err != nil {
		tb.Fatal(err)
	}
	st.Start()
	tb.Cleanup(func() { st.Close() })
	s := New(Config{}, st)
	if inline >= 0 {
		s.SetZsetLimits(inline, 1<<40)
	}
	return s, replies(s)
}

// replies is a connection of its own to s: its reply to one command, as
// RESP2 bytes.
func replies(s *Server) func(args ...string) string {
	c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
	return func(args ...string) string {
		a := make([][]byte, len(args))
		for i, arg := range args {
			a[i] = []byte(arg)
		}
		s.Serve(c, a)
		s.BeforeReply(c)
		out := string(c.W.Bytes())
		c.W.Reset()
		return out
	}
}

// zobjElems counts the elements of key's object by index ('m', 's'), and
// checks that each member's two elements agree, and that the pages count
// the score index: each page's count is the number of names from it to
// the next, the first page is there, and no other is under zpageMin or
// over zpageMax+zpageMin.
func zobjElems(tb testing.TB, s *Server, key string) (members, scores int) {
	tb.Helper()
	_, err := s.store.View(func(tx store.Tx) error {
		v, ok, err := tx.Get(0, []byte(key))
		if err != nil || !ok || v.Obj == 0 {
			return err
		}
		byMember := map[string][]byte{}
		type page struct {
			name  string
			count uint64
			seen  int
		}
		var pages []*page
		err = tx.ScanElems(v.Obj, nil, func(sub, val []byte) (bool, error) {
			switch sub[0] {
			case zPageIdx:
				c, _ := binary.Uvarint(val)
				pages = append(pages, &page{name: string(sub[1:]), count: c})
			case zMemberIdx:
				members++
				byMember["m"+string(sub[9:])] = bytes.Clone(val)
			case zScoreIdx:
				scores++
				byMember["s"+string(sub[9:])] = bytes.Clone(val)
				if len(pages) == 0 {
					tb.Errorf("score index name %q before every page", sub)
					return false, nil
				}
				// Pages sort before the score index: find this one's.
				i := 0
				for i+1 < len(pages) && pages[i+1].name <= string(sub) {
					i++
				}
				pages[i].seen++
			}
			return true, nil
		})
		for k, val := range byMember {
			if k[0] == 's' && !bytes.Equal(byMember["m"+k[1:]], val) {
				tb.Errorf("member %q: score index %x, member index %x", k[1:], val, byMember["m"+k[1:]])
			}
		}
		if len(pages) == 0 || pages[0].name != string(zfirstPage[1:]) {
			tb.Errorf("no first page: %d pages", len(pages))
		}
		// The pages in memory, if they are the value's, are the same.
		r, err := (&Ctx{S: s, Tx: tx}).zsetOf(0, []byte(key), v, true)
		if err != nil {
			return err
		}
		if p := s.zpages.get(v.Obj, r.stamp); p != nil {
			if len(p.names) != len(pages) {
				tb.Errorf("%d pages in memory, %d stored", len(p.names), len(pages))
			}
			for i := range min(len(p.names), len(pages)) {
				if string(p.names[i][1:]) != pages[i].name || p.counts[i] != int64(pages[i].count) {
					tb.Errorf("page %d in memory %q of %d, stored %q of %d", i, p.names[i][1:], p.counts[i], pages[i].name, pages[i].count)
				}
			}
		}
		for i, p := range pages {
			if p.count != uint64(p.seen) {
				tb.Errorf("page %d %q counts %d, holds %d", i, p.name, p.count, p.seen)
			}
			if i > 0 && (int64(p.count) < zpageMin || int64(p.count) > zpageMax+zpageMin) {
				tb.Errorf("page %d %q of %d names", i, p.name, p.count)
			}
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return members, scores
}

// TestZsetObjectModel runs random sorted-set commands on two servers: one
// whose sets become objects past 16 members, one whose sets stay inline
// (the reference: every write rewrites the whole set, every read decodes
// it). Their answers must agree byte for byte, and after each command an
// object holds exactly ZCARD members in each index, the two agreeing.
// Ranges get random bounds (exclusive, infinite, out of range), so the
// walks of the score index start and stop at every kind of place.
func TestZsetObjectModel(t *testing.T) {
	defer func(max, min int64) { zpageMax, zpageMin = max, min }(zpageMax, zpageMin)
	zpageMax, zpageMin = 8, 2 // pages split and join often
	obj, doObj := zsetServer(t, 16)
	_, doRef := zsetServer(t, 1<<40)
	rng := rand.New(rand.NewSource(2))
	scores := []string{"-inf", "+inf", "0", "1", "1", "2", "2.5", "-3", "7", "1e300", "-1e-300", "3"}
	member := func() string {
		switch rng.Intn(10) {
		case 0:
			return ""
		case 1:
			return "\xff" + strconv.Itoa(rng.Intn(3))
		}
		return fmt.Sprint("m", rng.Intn(150))
	}
	scoreBound := func() string {
		b := scores[rng.Intn(len(scores))]
		if rng.Intn(3) == 0 {
			b = "(" + b
		}
		return b
	}
	lexBound := func() string {
		switch rng.Intn(6) {
		case 0:
			return "-"
		case 1:
			return "+"
		case 2:
			return "(" + member()
		}
		return "[" + member()
	}
	rank := func() string { return strconv.Itoa(rng.Intn(90) - 45) }
	// revLimit adds REV, and LIMIT (an offset past a page at times), or
	// not, to a ZRANGE.
	revLimit := func(args []string) []string {
		if rng.Intn(2) == 0 {
			args = append(args, "REV")
		}
		if rng.Intn(2) == 0 {
			args = append(args, "LIMIT", strconv.Itoa(rng.Intn(12)-1), strconv.Itoa(rng.Intn(12)-2))
		}
		return args
	}
	objSteps := 0
	for step := range 3000 {
		// Phases: grow, churn, shrink; "e" holds only score 0 (lex
		// ranges in order), "z" mixed scores.
		phase := step / 300 % 3
		key := "z"
		if step%5 == 0 {
			key = "e"
		}
		score := func() string {
			if key == "e" {
				return "0"
			}
			return scores[rng.Intn(len(scores))]
		}
		var args []string
		switch op := rng.Intn(20); {
		case op < 5 && phase != 2 || op == 0:
			args = []string{"ZADD", key}
			switch rng.Intn(6) {
			case 0:
				args = append(args, "NX", "CH")
			case 1:
				args = append(args, "GT")
			case 2:
				args = append(args, "XX", "CH")
			}
			for range 1 + rng.Intn(1+8*(1-phase%2)) {
				args = append(args, score(), member())
			}
		case op == 1:
			args = []string{"ZADD", key, "INCR", score(), member()}
		case op == 2:
			args = []string{"ZINCRBY", key, score(), member()}
		case op == 3 || op == 4 && phase == 2:
			args = []string{"ZREM", key, member(), member(), member()}
		case op == 5:
			args = []string{"ZRANGE", key, rank(), rank()}
			if rng.Intn(2) == 0 {
				args = append(args, "REV")
			}
			args = append(args, "WITHSCORES")
		case op == 6:
			args = append(revLimit([]string{"ZRANGE", key, scoreBound(), scoreBound(), "BYSCORE"}), "WITHSCORES")
		case op == 7:
			args = revLimit([]string{"ZRANGE", key, lexBound(), lexBound(), "BYLEX"})
		case op == 8:
			args = []string{"ZCOUNT", key, scoreBound(), scoreBound()}
		case op == 9:
			args = []string{"ZLEXCOUNT", key, lexBound(), lexBound()}
		case op == 10:
			args = []string{"ZRANK", key, member()}
		case op == 11:
			args = []string{"ZREVRANK", key, member()}
		case op == 12:
			args = []string{"ZMSCORE", key, member(), member()}
		case op == 13 && phase == 2:
			args = []string{"ZREMRANGEBYSCORE", key, scoreBound(), scoreBound()}
		case op == 14 && phase == 2:
			args = []string{"ZREMRANGEBYLEX", key, lexBound(), lexBound()}
		case op == 15 && phase == 2:
			args = []string{"ZREMRANGEBYRANK", key, rank(), rank()}
		case op == 16:
			args = []string{"ZPOPMIN", key, strconv.Itoa(rng.Intn(3))}
			if rng.Intn(2) == 0 {
				args[0] = "ZPOPMAX"
			}
		case op == 17:
			args = []string{"ZRANGESTORE", "dst", key, rank(), rank()}
		case op == 18:
			args = []string{"ZSCORE", key, member()}
		default:
			args = []string{"ZCARD", key}
		}
		if step%7 == 0 { // the pages read again from the elements
			obj.zpages.mu.Lock()
			obj.zpages.m, obj.zpages.total = nil, 0
			obj.zpages.mu.Unlock()
		}
		got, want := doObj(args...), doRef(args...)
		if got != want {
			t.Fatalf("step %d: %q:\nobject %q\ninline %q", step, args, got, want)
		}
		for _, k := range []string{key, "dst"} {
			all := []string{"ZRANGE", k, "0", "-1", "WITHSCORES"}
			if got, want := doObj(all...), doRef(all...); got != want {
				t.Fatalf("step %d: after %q, %s:\nobject %q\ninline %q", step, args, k, got, want)
			}
			card, _ := strconv.Atoi(string(bytes.TrimSpace([]byte(doRef("ZCARD", k)[1:]))))
			if m, s := zobjElems(t, obj, k); m+s > 0 {
				objSteps++
				if m != card || s != card {
					t.Fatalf("step %d: after %q, %s has %d members and elements %d, %d", step, args, k, card, m, s)
				}
			}
		}
	}
	if objSteps < 1000 {
		t.Fatalf("only %d steps saw an object", objSteps)
	}
}

// zaddMany is a ZADD of n members m0, m1… to key, member i scored i%mod.
func zaddMany(key string, n, mod int) []string {
	args := []string{"ZADD", key}
	for i := range n {
		args = append(args, strconv.Itoa(i%mod), fmt.Sprint("m", i))
	}
	return args
}

// TestZsetLongMember: a member longer than an object's names hold makes
// an object set one value again, whole and in order, and a write once it
// is gone makes it an object again.
func TestZsetLongMember(t *testing.T) {
	s, do := zsetServer(t, -1)
	do(zaddMany("z", 200, 7)...)
	isObj := func() bool {
		var obj uint64
		if _, err := s.store.View(func(tx store.Tx) error {
			v, _, err := tx.Get(0, []byte("z"))
			obj = v.Obj
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return obj != 0
	}
	if !isObj() {
		t.Fatal("200 members: not an object")
	}
	long := strings.Repeat("L", zobjMaxMember+1)
	before := do("ZRANGE", "z", "0", "-1", "WITHSCORES")
	if got := do("ZADD", "z", "3", long, "9", "m0"); got != ":1\r\n" {
		t.Fatalf("ZADD of a long member: %q", got)
	}
	if isObj() {
		t.Fatal("a member of 64,983 bytes in an object")
	}
	if got := do("ZCARD", "z"); got != ":201\r\n" {
		t.Fatalf("ZCARD %q", got)
	}
	// After the 29 members of each score 0, 1 and 2 but m0 (now 9), and
	// before those of score 3 ("m…" > "L…").
	if got := do("ZRANK", "z", long); got != ":86\r\n" {
		t.Fatalf("ZRANK of the long member %q", got)
	}
	if got := do("ZSCORE", "z", "m0"); got != "$1\r\n9\r\n" {
		t.Fatalf("ZSCORE m0 %q", got)
	}
	do("ZREM", "z", long)
	do("ZADD", "z", "0", "m0")
	if !isObj() {
		t.Fatal("the long member gone, a write did not make an object again")
	}
	if got := do("ZRANGE", "z", "0", "-1", "WITHSCORES"); got != before {
		t.Fatalf("after the long member came and went: %.200q, want %.200q", got, before)
	}
	if got := do("OBJECT", "ENCODING", "z"); got != "$8\r\nskiplist\r\n" {
		t.Fatalf("OBJECT ENCODING %q", got)
	}
}

// TestZrandmemberUniform: ZRANDMEMBER of an object picks each member
// alike, as Redis's does (a pick by a random rank, not a random slot):
// 300 members, 30,000 picks of one and 600 of -50, each member expected
// 200 times; picks by slot made some ten times likelier than others.
func TestZrandmemberUniform(t *testing.T) {
	_, do := zsetServer(t, -1)
	do(zaddMany("z", 300, 5)...)
	seen := map[string]int{}
	for range 30000 {
		r := do("ZRANDMEMBER", "z")
		_, m, _ := strings.Cut(strings.TrimSuffix(r, "\r\n"), "\r\n")
		seen[m]++
	}
	for range 600 {
		parts := strings.Split(strings.TrimSuffix(do("ZRANDMEMBER", "z", "-50"), "\r\n"), "\r\n")
		for i := 2; i < len(parts); i += 2 {
			seen[parts[i]]++
		}
	}
	if len(seen) != 300 {
		t.Fatalf("%d members picked, want 300", len(seen))
	}
	for m, n := range seen {
		if n < 100*2-60 || n > 100*2+60 { // 200 expected, sd 14
			t.Errorf("%s picked %d times of 60,000, expected 200", m, n)
		}
	}
}
