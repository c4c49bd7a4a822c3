package integration

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestZsetObjectKill: a skiplist-encoded sorted set keeps each member
// under several elements (commands/zsetobj.go, zsetpages.go): its member
// index, its score index, and the counted pages of the score index, with
// the member count and the score index's bounds in the key's value. Under
// appendfsync always, kill -9 in the middle of writers that add, rescore,
// remove and pop members, remove ranges, store ranges into other keys and
// drop and rebuild whole sets, and after the restart every set holds
// exactly what its writer's acknowledged commands left (the one command in
// flight at the kill counted either way), and the set agrees with itself:
// ZCARD, ZCOUNT, the member index (ZSCORE, ZSCAN), the score index
// (ZRANGE, BYSCORE) and the page counts (ZRANK, ZREVRANK, ranges by rank)
// tell the same set (a command's value and elements are one write, KV-1
// and KV-6). Then a few more writes, checked the same, before and after a
// graceful restart: the recovered structure is still writable.
func TestZsetObjectKill(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	o := StartOncekv(t, "--appendfsync", "always")
	ctx := context.Background()

	const workers = 6
	ws := make([]*zkWriter, workers)
	setup := redis.NewClient(&redis.Options{Addr: o.Addr})
	for w := range workers {
		z := &zkWriter{
			w:     w,
			rng:   rand.New(rand.NewPCG(seed, uint64(w))),
			model: map[string]map[string]float64{},
			keys:  []string{fmt.Sprintf("zk%d:a", w), fmt.Sprintf("zk%d:b", w), fmt.Sprintf("zk%d:dst", w)},
		}
		ws[w] = z
		for _, k := range z.keys[:2] {
			m := zkFresh(k, 600)
			if err := setup.ZAdd(ctx, k, zkPairs(m)...).Err(); err != nil {
				t.Fatal(err)
			}
			z.model[k] = m
			if enc := setup.ObjectEncoding(ctx, k).Val(); enc != "skiplist" {
				t.Fatalf("OBJECT ENCODING %s = %q after ZADD of 600 members", k, enc)
			}
		}
	}
	setup.Close()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, z := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			z.run(t, o.Addr, stop)
		}()
	}
	rng := rand.New(rand.NewPCG(seed, 1<<32))
	time.Sleep(1500*time.Millisecond + time.Duration(rng.Int64N(int64(time.Second))))
	o.Kill(t)
	close(stop)
	wg.Wait()
	o = o.Restart(t)

	c := redis.NewClient(&redis.Options{Addr: o.Addr})
	defer c.Close()
	total, inflight, applied := 0, 0, 0
	for _, z := range ws {
		total += z.acked
		if z.broken {
			continue // already reported
		}
		if z.pending != nil {
			inflight++
		}
		for _, k := range z.keys {
			accept := []map[string]float64{z.model[k]}
			if z.pending != nil && slices.Contains(z.pending.keys, k) {
				alt := zkClone(z.model)
				z.pending.apply(alt)
				accept = append(accept, alt[k])
			}
			got, ok := zkCheck(t, ctx, c, k, accept, fmt.Sprintf("after the kill (in flight: %s)", z.pendingDesc()))
			if !ok {
				continue
			}
			if len(accept) > 1 && !maps.Equal(got, accept[0]) {
				applied++
			}
			// Whichever state it is, it is the one to go on from.
			if len(got) == 0 {
				delete(z.model, k)
			} else {
				z.model[k] = got
			}
		}
		z.pending = nil
	}
	if total < 2*workers {
		t.Fatalf("only %d acknowledged writes before the kill: the load did not run", total)
	}
	t.Logf("%d writes acknowledged before the kill; %d writers had one in flight, %d of which applied", total, inflight, applied)
	if t.Failed() {
		return
	}

	// The recovered sets take writes, and stay whole through another
	// (graceful) restart.
	for _, z := range ws {
		for _, k := range z.keys {
			z.after(t, ctx, c, k)
		}
	}
	check := func(when string) {
		for _, z := range ws {
			for _, k := range z.keys {
				zkCheck(t, ctx, c, k, []map[string]float64{z.model[k]}, when)
			}
		}
	}
	check("after writes following the restart")
	c.Close()
	o = o.Restart(t)
	c = redis.NewClient(&redis.Options{Addr: o.Addr})
	check("after a graceful restart")
}

// zkOp is one write command: its keys, a description, and what it does to
// a model (returning what it should reply).
type zkOp struct {
	keys  []string
	desc  string
	apply func(st map[string]map[string]float64) any
	send  func(ctx context.Context, c *redis.Client) (any, error)
}

// zkWriter owns its keys: its model is exact for every acknowledged reply.
type zkWriter struct {
	w       int
	rng     *rand.Rand
	keys    []string // two sets, then a ZRANGESTORE destination
	model   map[string]map[string]float64
	acked   int
	pending *zkOp // sent, unacknowledged: the kill came first
	broken  bool
	n       int
}

func (z *zkWriter) pendingDesc() string {
	if z.pending == nil {
		return "none"
	}
	return z.pending.desc
}

func (z *zkWriter) run(t *testing.T, addr string, stop <-chan struct{}) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second, PoolSize: 1})
	defer c.Close()
	for {
		select {
		case <-stop:
			return
		default:
		}
		for _, op := range z.next() {
			z.pending = &op
			reply, err := op.send(ctx, c)
			if err != nil {
				var rerr redis.Error
				if errors.As(err, &rerr) {
					t.Errorf("writer %d: %s: error reply %v", z.w, op.desc, err)
					z.broken = true
				}
				return // killed (or broken): the op stays pending
			}
			z.pending = nil
			z.acked++
			want := op.apply(z.model)
			if !zkSameReply(reply, want) {
				t.Errorf("writer %d: %s replied %v, the model says %v", z.w, op.desc, reply, want)
				z.broken = true
				return
			}
		}
	}
}

// next picks the next command (or two: DEL then a new ZADD).
func (z *zkWriter) next() []zkOp {
	z.n++
	r := z.rng
	k := z.keys[r.IntN(2)]
	m := z.model[k]
	size := len(m)
	switch {
	case r.IntN(80) == 0:
		return []zkOp{zkDel(k), zkAdd(k, zkFresh(fmt.Sprintf("%s#%d", k, z.n), 600), nil)}
	case size < 300:
		return []zkOp{zkAdd(k, z.newMembers(k, 30), m)}
	}
	switch pick := r.IntN(100); {
	case pick < 30: // new members and new scores for old ones
		add := z.newMembers(k, 1+r.IntN(4))
		for range r.IntN(3) {
			add[z.anyMember(m)] = zkScore(r)
		}
		return []zkOp{zkAdd(k, add, m)}
	case pick < 45:
		mem := z.anyMember(m)
		if r.IntN(4) == 0 {
			mem = fmt.Sprintf("w%d-incr-%d", z.w, z.n)
		}
		return []zkOp{zkIncr(k, mem, float64(r.IntN(41)-20)/4)}
	case pick < 58:
		rem := []string{fmt.Sprintf("absent-%d", z.n)}
		for range 1 + r.IntN(3) {
			rem = append(rem, z.anyMember(m))
		}
		return []zkOp{zkRem(k, rem)}
	case pick < 72:
		count := 1 + r.IntN(5)
		if size > 900 {
			count += 20
		}
		return []zkOp{zkPop(k, count, r.IntN(2) == 0)}
	case pick < 80:
		start := r.IntN(size+20) - 10 // sometimes past the end, sometimes from it
		return []zkOp{zkRemRank(k, start, start+r.IntN(4))}
	case pick < 88:
		lo := zkScore(r)
		hi := lo + float64(r.IntN(3))/4
		return []zkOp{zkRemScore(k, lo, hi, r.IntN(2) == 0)}
	default:
		dst := z.keys[2]
		if r.IntN(3) == 0 {
			lo := zkScore(r)
			return []zkOp{zkStoreScore(dst, k, lo, lo+float64(r.IntN(80))/4)}
		}
		start := r.IntN(size)
		stop := start + r.IntN(10)
		if r.IntN(2) == 0 {
			stop = start + 130 + r.IntN(200) // an object
		}
		return []zkOp{zkStoreRank(dst, k, start, stop, r.IntN(3) == 0)}
	}
}

// newMembers: n members no one has yet (some past 64 bytes).
func (z *zkWriter) newMembers(k string, n int) map[string]float64 {
	add := map[string]float64{}
	for i := range n {
		mem := fmt.Sprintf("w%d-%d-%d", z.w, z.n, i)
		if z.rng.IntN(8) == 0 {
			mem += "-" + strings.Repeat("long", 20)
		}
		add[mem] = zkScore(z.rng)
	}
	return add
}

func (z *zkWriter) anyMember(m map[string]float64) string {
	if len(m) == 0 {
		return "none"
	}
	i := z.rng.IntN(len(m))
	for mem := range m {
		if i == 0 {
			return mem
		}
		i--
	}
	return "none"
}

// after writes a few commands on k, checking their replies.
func (z *zkWriter) after(t *testing.T, ctx context.Context, c *redis.Client, k string) {
	ops := []zkOp{zkAdd(k, z.newMembers(k, 5), z.model[k])}
	m := z.model[k]
	if len(m) > 0 {
		rescore := map[string]float64{}
		for range 3 {
			rescore[z.anyMember(m)] = zkScore(z.rng)
		}
		ops = append(ops, zkAdd(k, rescore, m),
			zkRem(k, []string{z.anyMember(m), z.anyMember(m), "absent"}),
			zkIncr(k, z.anyMember(m), 2.5))
	}
	ops = append(ops, zkPop(k, 2, true), zkPop(k, 2, false), zkRemRank(k, 3, 5))
	for _, op := range ops {
		reply, err := op.send(ctx, c)
		if err != nil {
			t.Fatalf("%s after the restart: %v", op.desc, err)
		}
		if want := op.apply(z.model); !zkSameReply(reply, want) {
			t.Errorf("%s after the restart replied %v, the model says %v", op.desc, reply, want)
		}
	}
}

// zkFresh is a new set of n members, with ties of score (so that members
// order them) and a few members past 64 bytes.
func zkFresh(prefix string, n int) map[string]float64 {
	m := make(map[string]float64, n)
	for j := range n {
		mem := fmt.Sprintf("%s:i%d", prefix, j)
		if j%50 == 7 {
			mem += ":" + strings.Repeat("x", 70)
		}
		m[mem] = float64(j%97)/4 - 5
	}
	return m
}

// zkScore: a score on a grid of quarters, exact in a float64 and as text.
func zkScore(r *rand.Rand) float64 { return float64(r.IntN(161)-40) / 4 }

func zkPairs(m map[string]float64) []redis.Z {
	zs := make([]redis.Z, 0, len(m))
	for _, e := range zkSorted(m) {
		zs = append(zs, redis.Z{Member: e.Member, Score: e.Score})
	}
	return zs
}

// zkEntry is a member and its score.
type zkEntry struct {
	Member string
	Score  float64
}

func zkCmp(a, b zkEntry) int {
	if c := cmp.Compare(a.Score, b.Score); c != 0 {
		return c
	}
	return strings.Compare(a.Member, b.Member)
}

// zkSorted is m in (score, member) order, as ZRANGE gives it.
func zkSorted(m map[string]float64) []zkEntry {
	es := make([]zkEntry, 0, len(m))
	for mem, s := range m {
		es = append(es, zkEntry{mem, s})
	}
	slices.SortFunc(es, zkCmp)
	return es
}

func zkClone(st map[string]map[string]float64) map[string]map[string]float64 {
	out := make(map[string]map[string]float64, len(st))
	for k, m := range st {
		out[k] = maps.Clone(m)
	}
	return out
}

// zkSet gives st[k], made if it is not there; zkTidy drops it if empty.
func zkSet(st map[string]map[string]float64, k string) map[string]float64 {
	if st[k] == nil {
		st[k] = map[string]float64{}
	}
	return st[k]
}

func zkTidy(st map[string]map[string]float64, k string) {
	if len(st[k]) == 0 {
		delete(st, k)
	}
}

// zkRankRange is Redis's clamping of a rank range over n members: the
// indexes [lo, hi) it covers.
func zkRankRange(n, start, stop int) (int, int) {
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	start = max(start, 0)
	if start > stop || start >= n {
		return 0, 0
	}
	stop = min(stop, n-1)
	return start, stop + 1
}

func zkFmt(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func zkDel(k string) zkOp {
	return zkOp{
		keys: []string{k}, desc: "DEL " + k,
		apply: func(st map[string]map[string]float64) any {
			_, had := st[k]
			delete(st, k)
			if had {
				return int64(1)
			}
			return int64(0)
		},
		send: func(ctx context.Context, c *redis.Client) (any, error) { return c.Del(ctx, k).Result() },
	}
}

// zkAdd: ZADD k of add (old is k's members when it was chosen, for the
// description only).
func zkAdd(k string, add map[string]float64, old map[string]float64) zkOp {
	news := 0
	for mem := range add {
		if _, ok := old[mem]; !ok {
			news++
		}
	}
	return zkOp{
		keys: []string{k}, desc: fmt.Sprintf("ZADD %s (%d pairs, %d new)", k, len(add), news),
		apply: func(st map[string]map[string]float64) any {
			m := zkSet(st, k)
			added := int64(0)
			for mem, s := range add {
				if _, ok := m[mem]; !ok {
					added++
				}
				m[mem] = s
			}
			return added
		},
		send: func(ctx context.Context, c *redis.Client) (any, error) {
			return c.ZAdd(ctx, k, zkPairs(add)...).Result()
		},
	}
}

func zkIncr(k, mem string, by float64) zkOp {
	return zkOp{
		keys: []string{k}, desc: fmt.Sprintf("ZINCRBY %s %s %s", k, zkFmt(by), mem),
		apply: func(st map[string]map[string]float64) any {
			m := zkSet(st, k)
			m[mem] += by
			return m[mem]
		},
		send: func(ctx context.Context, c *redis.Client) (any, error) {
			return c.ZIncrBy(ctx, k, by, mem).Result()
		},
	}
}

func zkRem(k string, mems []string) zkOp {
	return zkOp{
		keys: []string{k}, desc: fmt.Sprintf("ZREM %s %s", k, strings.Join(mems, " ")),
		apply: func(st map[string]map[string]float64) any {
			m := st[k]
			n := int64(0)
			for _, mem := range mems {
				if _, ok := m[mem]; ok {
					delete(m, mem)
					n++
				}
			}
			zkTidy(st, k)
			return n
		},
		send: func(ctx context.Context, c *redis.Client) (any, error) {
			args := make([]any, len(mems))
			for i, mem := range mems {
				args[i] = mem
			}
			return c.ZRem(ctx, k, args...).Result()
		},
	}
}

func zkPop(k string, count int, minSide bool) zkOp {
	name := "ZPOPMAX"
	if minSide {
		name = "ZPOPMIN"
	}
	return zkOp{
		keys: []string{k}, desc: fmt.Sprintf("%s %s %d", name, k, count),
		apply: func(st map[string]map[string]float64) any {
			es := zkSorted(st[k])
			if !minSide {
				slices.Reverse(es)
			}
			es = es[:min(count, len(es))]
			for _, e := range es {
				delete(st[k], e.Member)
			}
			zkTidy(st, k)
			return es
		},
		send: func(ctx context.Context, c *redis.Client) (any, error) {
			var zs []redis.Z
			var err error
			if minSide {
				zs, err = c.ZPopMin(ctx, k, int64(count)).Result()
			} else {
				zs, err = c.ZPopMax(ctx, k, int64(count)).Result()
			}
			return zkEntries(zs), err
		},
	}
}

func zkRemRank(k string, start, stop int) zkOp {
	return zkOp{
		keys: []string{k}, desc: fmt.Sprintf("ZREMRANGEBYRANK %s %d %d", k, start, stop),
		apply: func(st map[string]map[string]float64) any {
			es := zkSorted(st[k])
			lo, hi := zkRankRange(len(es), start, stop)
			for _, e := range es[lo:hi] {
				delete(st[k], e.Member)
			}
			zkTidy(st, k)
			return int64(hi - lo)
		},
		send: func(ctx context.Context, c *redis.Client) (any, error) {
			return c.ZRemRangeByRank(ctx, k, int64(start), int64(stop)).Result()
		},
	}
}

// zkRemScore: ZREMRANGEBYSCORE k lo hi, lo exclusive if open.
func zkRemScore(k string, lo, hi float64, open bool) zkOp {
	from := zkFmt(lo)
	if open {
		from = "(" + from
	}
	return zkOp{
		keys: []string{k}, desc: fmt.Sprintf("ZREMRANGEBYSCORE %s %s %s", k, from, zkFmt(hi)),
		apply: func(st map[string]map[string]float64) any {
			n := int64(0)
			for mem, s := range st[k] {
				if (s > lo || !open && s == lo) && s <= hi {
					delete(st[k], mem)
					n++
				}
			}
			zkTidy(st, k)
			return n
		},
		send: func(ctx context.Context, c *redis.Client) (any, error) {
			return c.ZRemRangeByScore(ctx, k, from, zkFmt(hi)).Result()
		},
	}
}

// zkStore sets dst to es (the whole of it; dst goes if es is empty).
func zkStore(st map[string]map[string]float64, dst string, es []zkEntry) any {
	delete(st, dst)
	for _, e := range es {
		zkSet(st, dst)[e.Member] = e.Score
	}
	return int64(len(es))
}

func zkStoreRank(dst, src string, start, stop int, rev bool) zkOp {
	desc := fmt.Sprintf("ZRANGESTORE %s %s %d %d", dst, src, start, stop)
	if rev {
		desc += " REV"
	}
	return zkOp{
		keys: []string{dst}, desc: desc,
		apply: func(st map[string]map[string]float64) any {
			es := zkSorted(st[src])
			if rev {
				slices.Reverse(es)
			}
			lo, hi := zkRankRange(len(es), start, stop)
			return zkStore(st, dst, es[lo:hi])
		},
		send: func(ctx context.Context, c *redis.Client) (any, error) {
			return c.ZRangeStore(ctx, dst, redis.ZRangeArgs{Key: src, Start: start, Stop: stop, Rev: rev}).Result()
		},
	}
}

func zkStoreScore(dst, src string, lo, hi float64) zkOp {
	return zkOp{
		keys: []string{dst}, desc: fmt.Sprintf("ZRANGESTORE %s %s %s %s BYSCORE", dst, src, zkFmt(lo), zkFmt(hi)),
		apply: func(st map[string]map[string]float64) any {
			var es []zkEntry
			for _, e := range zkSorted(st[src]) {
				if e.Score >= lo && e.Score <= hi {
					es = append(es, e)
				}
			}
			return zkStore(st, dst, es)
		},
		send: func(ctx context.Context, c *redis.Client) (any, error) {
			return c.ZRangeStore(ctx, dst, redis.ZRangeArgs{Key: src, Start: zkFmt(lo), Stop: zkFmt(hi), ByScore: true}).Result()
		},
	}
}

func zkEntries(zs []redis.Z) []zkEntry {
	es := make([]zkEntry, len(zs))
	for i, z := range zs {
		es[i] = zkEntry{fmt.Sprint(z.Member), z.Score}
	}
	return es
}

func zkSameReply(got, want any) bool {
	if g, ok := got.([]zkEntry); ok {
		w, ok := want.([]zkEntry)
		return ok && slices.Equal(g, w)
	}
	return got == want
}

// zkDiff describes how got differs from want (the first few differences).
func zkDiff(got []zkEntry, want map[string]float64) string {
	var out []string
	gm := map[string]float64{}
	for _, e := range got {
		gm[e.Member] = e.Score
	}
	for _, e := range zkSorted(want) {
		if s, ok := gm[e.Member]; !ok {
			out = append(out, fmt.Sprintf("missing %s (%s)", e.Member, zkFmt(e.Score)))
		} else if s != e.Score {
			out = append(out, fmt.Sprintf("%s scored %s, want %s", e.Member, zkFmt(s), zkFmt(e.Score)))
		}
	}
	for _, e := range got {
		if _, ok := want[e.Member]; !ok {
			out = append(out, fmt.Sprintf("extra %s (%s)", e.Member, zkFmt(e.Score)))
		}
	}
	if len(out) > 12 {
		out = append(out[:12], fmt.Sprintf("... %d more", len(out)-12))
	}
	return fmt.Sprintf("%d members, want %d: %s", len(got), len(want), strings.Join(out, "; "))
}

// zkCheck reads k whole, checks it is one of the states accept and that
// every way of reading it tells the same set, and returns what it holds.
func zkCheck(t *testing.T, ctx context.Context, c *redis.Client, k string, accept []map[string]float64, when string) (map[string]float64, bool) {
	t.Helper()
	zs, err := c.ZRangeWithScores(ctx, k, 0, -1).Result()
	if err != nil {
		t.Errorf("%s: ZRANGE %s 0 -1: %v", when, k, err)
		return nil, false
	}
	got := zkEntries(zs)
	gm := make(map[string]float64, len(got))
	for _, e := range got {
		gm[e.Member] = e.Score
	}
	ok := true
	bad := func(format string, a ...any) {
		t.Helper()
		t.Errorf("%s: %s: %s", when, k, fmt.Sprintf(format, a...))
		ok = false
	}
	if !slices.IsSortedFunc(got, zkCmp) || len(gm) != len(got) {
		bad("ZRANGE 0 -1 is not in (score, member) order or repeats a member")
	}
	matched := false
	for _, a := range accept {
		if maps.Equal(gm, a) {
			matched = true
		}
	}
	if !matched {
		bad("not a state its writer left: %s", zkDiff(got, accept[0]))
		if len(accept) > 1 {
			t.Logf("  with the command in flight applied: %s", zkDiff(got, accept[1]))
		}
	}
	n := int64(len(got))
	if card := c.ZCard(ctx, k).Val(); card != n {
		bad("ZCARD %d, ZRANGE 0 -1 has %d", card, n)
	}
	if cnt := c.ZCount(ctx, k, "-inf", "+inf").Val(); cnt != n {
		bad("ZCOUNT -inf +inf = %d, ZRANGE 0 -1 has %d", cnt, n)
	}
	if n > 128 {
		if enc := c.ObjectEncoding(ctx, k).Val(); enc != "skiplist" {
			bad("OBJECT ENCODING %q with %d members", enc, n)
		}
	}
	bys, err := c.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: k, Start: "-inf", Stop: "+inf", ByScore: true}).Result()
	if err != nil || !slices.Equal(zkEntries(bys), got) {
		bad("ZRANGE -inf +inf BYSCORE differs from ZRANGE 0 -1 (%d vs %d members, %v)", len(bys), n, err)
	}
	rev, err := c.ZRevRangeWithScores(ctx, k, 0, -1).Result()
	r := zkEntries(rev)
	slices.Reverse(r)
	if err != nil || !slices.Equal(r, got) {
		bad("ZREVRANGE 0 -1 is not ZRANGE 0 -1 reversed (%d vs %d members, %v)", len(r), n, err)
	}

	// Each member through the member index (ZSCORE) and its rank through
	// the page counts (ZRANK, ZREVRANK).
	p := c.Pipeline()
	scores := make([]*redis.FloatCmd, n)
	ranks := make([]*redis.IntCmd, n)
	revs := make([]*redis.IntCmd, n)
	for i, e := range got {
		scores[i] = p.ZScore(ctx, k, e.Member)
		ranks[i] = p.ZRank(ctx, k, e.Member)
		revs[i] = p.ZRevRank(ctx, k, e.Member)
	}
	// Ranges by rank and counts by score from inside the set.
	type window struct {
		at  int
		cmd *redis.ZSliceCmd
		cnt *redis.IntCmd
	}
	var wins []window
	for i := 0; i < len(got); i += 1 + len(got)/12 {
		j := min(i+4, len(got)-1)
		wins = append(wins, window{i, p.ZRangeWithScores(ctx, k, int64(i), int64(i+4)),
			p.ZCount(ctx, k, zkFmt(got[i].Score), zkFmt(got[j].Score))})
	}
	if _, err := p.Exec(ctx); err != nil {
		bad("pipelined ZSCORE/ZRANK/ZREVRANK: %v", err)
		return gm, false
	}
	misses := 0
	for i, e := range got {
		if s := scores[i].Val(); s != e.Score {
			bad("ZSCORE %s = %s, ZRANGE says %s", e.Member, zkFmt(s), zkFmt(e.Score))
			misses++
		}
		if r := ranks[i].Val(); r != int64(i) {
			bad("ZRANK %s = %d, its index in ZRANGE 0 -1 is %d", e.Member, r, i)
			misses++
		}
		if r := revs[i].Val(); r != n-1-int64(i) {
			bad("ZREVRANK %s = %d, want %d", e.Member, r, n-1-int64(i))
			misses++
		}
		if misses > 10 {
			break
		}
	}
	for _, w := range wins {
		want := got[w.at:min(w.at+5, len(got))]
		if g := zkEntries(w.cmd.Val()); !slices.Equal(g, want) {
			bad("ZRANGE %d %d = %v, want %v", w.at, w.at+4, g, want)
		}
		lo, hi := got[w.at].Score, got[min(w.at+4, len(got)-1)].Score
		want2 := int64(0)
		for _, e := range got {
			if e.Score >= lo && e.Score <= hi {
				want2++
			}
		}
		if cnt := w.cnt.Val(); cnt != want2 {
			bad("ZCOUNT %s %s = %d, want %d", zkFmt(lo), zkFmt(hi), cnt, want2)
		}
	}

	// ZSCAN walks the member index.
	seen := map[string]float64{}
	var cursor uint64
	for steps := 0; ; steps++ {
		if steps > 10000 {
			bad("ZSCAN does not end")
			break
		}
		keys, next, err := c.ZScan(ctx, k, cursor, "*", 50).Result()
		if err != nil {
			bad("ZSCAN: %v", err)
			break
		}
		for i := 0; i+1 < len(keys); i += 2 {
			s, _ := strconv.ParseFloat(keys[i+1], 64)
			seen[keys[i]] = s
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	if !maps.Equal(seen, gm) {
		bad("ZSCAN walks another set: %s", zkDiff(zkSorted(seen), gm))
	}
	return gm, ok
}
