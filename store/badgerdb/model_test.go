package badgerdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncekv/oncekv/store"
)

// modelSeed, when not 0, adds a case on that seed to TestModelAgainstMap
// (in each configuration), to replay a failure printed by it:
//
//	go test -race -run TestModelAgainstMap ./store/badgerdb/ -model.seed=N
var modelSeed = flag.Uint64("model.seed", 0, "TestModelAgainstMap: also run this seed")

// The model test's keyspace: modelKeys keys in each of modelDBs databases.
const (
	modelDBs   = 2
	modelKeys  = 64
	modelStart = 1_000_000 // the fake clock at the start, Unix ms
)

// modelKeyNames are the keys the operations pick from (by index): the
// empty key, keys that are prefixes of others, and bytes at both ends of
// the range, so that byte order and seeks are exercised.
var modelKeyNames = func() []string {
	names := []string{"", "\x00", "\xff", "k", "k\x00", "k\xff"}
	for i := 0; len(names) < modelKeys; i++ {
		names = append(names, fmt.Sprintf("k%d", i))
	}
	return names
}()

type opKind int

// The operations. A write (opSet, opDel, opExpire) runs in a transaction
// of its own, or with others in one (opMulti, as MULTI/EXEC).
const (
	opSet     opKind = iota // SET, with a deadline now+rel when exp
	opDel                   // DEL
	opExpire                // the live value set again with only its deadline changed (EXPIRE, PERSIST)
	opMulti                 // sub, in one transaction
	opAdvance               // the clock moves n ms on (back, if n < 0)
	// opSweep is Sweep(0), one round of database 0, or, full,
	// Sweep(time.Hour); with sub, the sweep runs sub (and a drain, with
	// drain) while it runs without the keyspace lock: after its scan
	// of the index, or, later, after its reads of keys memory did not
	// hold (scanHook, sweepHook).
	opSweep
	opSweepAll // two full sweeps, after which no expired key is left
	opDrain    // the applier writes everything staged to Badger
	opRestart  // Close, and Open of the same directory: Badger holds everything
	opCrash    // an image of the open store's directory opened: the log is replayed
	opFlush    // FLUSHDB
)

var opNames = [...]string{"opSet", "opDel", "opExpire", "opMulti", "opAdvance", "opSweep", "opSweepAll", "opDrain", "opRestart", "opCrash", "opFlush"}

func (k opKind) String() string { return opNames[k] }

// mop is one operation of the model test; its GoString is a Go literal,
// so that a printed sequence can be pasted into a case's ops.
type mop struct {
	k    opKind
	db   int
	key  int    // index into modelKeyNames
	val  string // the value's data: val, then pad bytes 'x'
	pad  int
	once bool  // store.KindOnce rather than store.KindString
	exp  bool  // opSet, opExpire: the deadline is now+rel (else none)
	rel  int64 // ... which may be in the past
	same bool  // opExpire: the deadline the key has (set again as it is)
	n    int64 // opAdvance: milliseconds
	sub  []mop // opMulti, opSweep
	// opSweep
	full, later, drain bool
}

func (o mop) GoString() string {
	var b strings.Builder
	fmt.Fprintf(&b, "{k: %v", o.k)
	switch o.k {
	case opSet, opDel, opExpire, opFlush:
		fmt.Fprintf(&b, ", db: %d", o.db)
		if o.k != opFlush {
			fmt.Fprintf(&b, ", key: %d", o.key)
		}
	}
	if o.val != "" {
		fmt.Fprintf(&b, ", val: %q", o.val)
	}
	if o.pad != 0 {
		fmt.Fprintf(&b, ", pad: %d", o.pad)
	}
	if o.once {
		b.WriteString(", once: true")
	}
	if o.exp {
		fmt.Fprintf(&b, ", exp: true, rel: %d", o.rel)
	}
	if o.same {
		b.WriteString(", same: true")
	}
	if o.n != 0 {
		fmt.Fprintf(&b, ", n: %d", o.n)
	}
	if o.full {
		b.WriteString(", full: true")
	}
	if o.later {
		b.WriteString(", later: true")
	}
	if o.drain {
		b.WriteString(", drain: true")
	}
	if len(o.sub) > 0 {
		b.WriteString(", sub: []mop{")
		for i, s := range o.sub {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(s.GoString())
		}
		b.WriteString("}")
	}
	b.WriteString("}")
	return b.String()
}

// value is the value an opSet writes at now.
func (o mop) value(now int64) store.Value {
	v := store.Value{Kind: store.KindString, Data: []byte(o.val + strings.Repeat("x", o.pad))}
	if o.once {
		v.Kind = store.KindOnce
	}
	if o.exp {
		v.ExpireAt = now + o.rel
	}
	return v
}

// genOps is the operation sequence of seed: a function of the seed alone,
// never of what the store answers, so that a seed replays.
func genOps(seed uint64, n int) []mop {
	g := &gen{r: rand.New(rand.NewPCG(seed, 0x6d6f64656c)), now: modelStart}
	for db := range g.at {
		g.at[db] = map[int]int64{}
	}
	r := g.r
	ops := make([]mop, 0, n)
	restarts := 0
	for i := 0; len(ops) < n; i++ {
		var o mop
		switch w := r.IntN(100); {
		case w < 55:
			o = g.write(i, -1)
		case w < 61:
			o = mop{k: opMulti}
			for j := range 2 + r.IntN(4) {
				o.sub = append(o.sub, g.write(i*10+j, -1))
			}
			if r.IntN(2) == 0 { // the same key more than once
				for j := range o.sub {
					o.sub[j].key, o.sub[j].db = o.sub[0].key, o.sub[0].db
				}
			}
		case w < 76:
			switch x := r.IntN(30); {
			case x < 3:
				o = mop{k: opAdvance, n: 100 + r.Int64N(2000)}
			case x < 4:
				o = mop{k: opAdvance, n: -1 - r.Int64N(20)} // a wall clock stepped back
			default:
				o = mop{k: opAdvance, n: 1 + r.Int64N(6)}
			}
			g.now += o.n
		case w < 86:
			o = mop{k: opSweep, full: r.IntN(2) == 0}
			if r.IntN(2) == 0 {
				// Writes during the sweep: mostly to keys that may be
				// due (the sweep's candidates), or new deadlines due at
				// once, which its scan may or may not see.
				for j := range 1 + r.IntN(3) {
					o.sub = append(o.sub, g.write(i*10+j, 1+r.IntN(2)))
				}
				o.later, o.drain = r.IntN(2) == 0, r.IntN(3) == 0
			}
		case w < 88:
			o = mop{k: opSweepAll}
		case w < 95:
			o = mop{k: opDrain}
		case w < 98:
			if restarts >= 6 {
				continue
			}
			restarts++
			o = mop{k: opRestart}
			if r.IntN(2) == 0 {
				o.k = opCrash
			}
		default:
			if r.IntN(3) != 0 {
				continue // rarer than the rest
			}
			o = mop{k: opFlush, db: r.IntN(modelDBs)}
			clear(g.at[o.db])
		}
		switch o.k {
		case opSet, opDel, opExpire:
			g.wrote(o)
		case opMulti, opSweep:
			for _, w := range o.sub {
				g.wrote(w)
			}
		}
		ops = append(ops, o)
	}
	return ops
}

// gen makes random operations. It keeps a rough view of the keys (their
// deadlines, as if no sweep ever ran) to aim some writes at keys that
// are due.
type gen struct {
	r   *rand.Rand
	now int64
	at  [modelDBs]map[int]int64 // key index → deadline (0: none), if set
}

// due picks a key of a database whose deadline may have passed.
func (g *gen) due() (db, key int, ok bool) {
	var c [][2]int
	for db := range g.at {
		for k, at := range g.at[db] {
			if at != 0 && at <= g.now {
				c = append(c, [2]int{db, k})
			}
		}
	}
	if len(c) == 0 {
		return 0, 0, false
	}
	slices.SortFunc(c, func(a, b [2]int) int { return (a[0]-b[0])*modelKeys + a[1] - b[1] })
	p := c[g.r.IntN(len(c))]
	return p[0], p[1], true
}

// wrote updates the view with write o.
func (g *gen) wrote(o mop) {
	at, ok := g.at[o.db][o.key]
	switch o.k {
	case opSet:
		g.at[o.db][o.key] = 0
		if o.exp {
			g.at[o.db][o.key] = g.now + o.rel
		}
	case opDel:
		delete(g.at[o.db], o.key)
	case opExpire:
		if ok && (at == 0 || at > g.now) && !o.same {
			g.at[o.db][o.key] = 0
			if o.exp {
				g.at[o.db][o.key] = g.now + o.rel
			}
		}
	}
}

// write is a random write: a set with or without a deadline (past, now,
// near or far), a delete, or a change of deadline only. aim 1 writes a
// key that may be due, aim 2 sets a deadline due at once; -1 is neither.
func (g *gen) write(i, aim int) mop {
	r := g.r
	o := mop{db: r.IntN(modelDBs)}
	if r.IntN(2) == 0 {
		o.key = r.IntN(8) // hot keys, rewritten often
	} else {
		o.key = r.IntN(modelKeys)
	}
	if aim == 1 {
		if db, k, ok := g.due(); ok {
			o.db, o.key = db, k
		}
	}
	deadline := func() {
		o.exp = true
		switch x := r.IntN(20); {
		case x < 3 || aim == 2:
			o.rel = -1 - r.Int64N(50) // past
		case x < 4:
			o.rel = 0 // due at once
		case x < 14:
			o.rel = 1 + r.Int64N(12) // a few ms ahead
		default:
			o.rel = 100_000 + r.Int64N(10_000_000) // far
		}
	}
	switch w := r.IntN(100); {
	case w < 60 || aim == 2:
		o.k = opSet
		o.val = fmt.Sprintf("v%d", i)
		switch x := r.IntN(10); {
		case x == 0:
			o.val = "" // empty
		case x == 1:
			o.pad = 200 + r.IntN(400) // past the small caches' entry bound
		}
		o.once = r.IntN(5) == 0
		if r.IntN(2) == 0 || aim == 2 {
			deadline()
		}
	case w < 72:
		o.k = opDel
	default:
		o.k = opExpire
		switch x := r.IntN(10); {
		case x < 2: // PERSIST
		case x < 4:
			o.same = true
		default:
			deadline()
		}
	}
	return o
}

// mval is what the model holds for a key.
type mval struct {
	data string
	kind store.Kind
	at   int64 // deadline, 0: none
}

func (v mval) live(now int64) bool { return v.at == 0 || v.at > now }

func (v mval) String() string { return fmt.Sprintf("{%q %v at %d}", v.data, v.kind, v.at) }

// modelConfig is a store configuration for the model test.
type modelConfig struct {
	name      string
	cacheSize int64
	// applyDelay 0 applies each log round at once, in the background;
	// long, only drains and the pending bounds apply.
	applyDelay time.Duration
	maxPending int
	sweepKeys  int
	fsync      Fsync
	memTable   int64
	// allGets reads every key with Get after every step (which fills the
	// cache with them all); otherwise a few, and all every 16 steps.
	allGets bool
	// smallFilter gives the presence filter (presence.go) room for a
	// few keys, so that it fills and is rebuilt while the test runs.
	smallFilter bool
}

var modelConfigs = []modelConfig{
	{name: "uncached,applied-at-once", cacheSize: 0, applyDelay: 0, sweepKeys: 4, fsync: FsyncEverysec, memTable: 1 << 20, allGets: true, smallFilter: true},
	{name: "small-cache,gathered", cacheSize: 4 << 10, applyDelay: time.Hour, maxPending: 40, sweepKeys: 3, fsync: FsyncAlways, memTable: 1 << 20, smallFilter: true},
	{name: "cache,short-delay", cacheSize: 64 << 10, applyDelay: 2 * time.Millisecond, maxPending: 6, sweepKeys: 64, fsync: FsyncNo, memTable: 1 << 20},
}

// modelCase is a run: a seed's random sequence, or a fixed one (ops).
type modelCase struct {
	name string
	cfg  modelConfig
	seed uint64
	n    int   // operations of the seed's sequence
	ops  []mop // fixed sequence, instead of the seed's
}

// TestModelAgainstMap runs random sequences of writes, deadlines, clock
// moves, sweeps, applies, restarts and crash images against the store and
// against a map of key → value and deadline, and after every step
// compares, in every database: each key's value and deadline as Get reads
// it (a key past its deadline is absent: KV-4), Scan from the start and
// from a random key (SCAN, KEYS), Len (DBSIZE) and Expiring (INFO
// keyspace's expires), and what the store holds: the keyspace with the
// expired keys not yet swept, and the expiry index, which must hold
// exactly one entry per key with a deadline.
//
// Which expired keys a sweep deletes is the store's business: after each
// sweep, the keys it deleted are read from the store's keyspace (they
// must be expired keys, as many as Sweep reports), and the model drops
// them. After two full sweeps no expired key may be left (opSweepAll).
// Some sweeps run writes in the middle (the hooks the sweeper has for
// tests), where they would come from other clients. A crash image may
// lose the deletions of the last sweeps, which nothing waits for to be
// logged: those keys may come back, expired, as they were (revive).
//
// The configurations cover a store whose entries leave memory once
// applied, one with a small cache that applies only when drained or at
// its pending bound, and one with a larger cache that applies within
// milliseconds and holds writers back; the first two with a presence
// filter small enough to be rebuilt. After a restart the first check
// leaves the counts alone, so that the next writes may come while the
// keys are counted.
//
// On a failure it prints the seed and the sequence up to the failed step
// as Go literals: a case in modelCases with those ops replays it, and so
// does -model.seed with the seed.
func TestModelAgainstMap(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 120
	}
	var cases []modelCase
	for i, cfg := range modelConfigs {
		for _, seed := range []uint64{uint64(1 + i), uint64(101 + i)} {
			cases = append(cases, modelCase{name: fmt.Sprintf("%s/seed=%d", cfg.name, seed), cfg: cfg, seed: seed, n: n})
		}
		if *modelSeed != 0 {
			cases = append(cases, modelCase{name: fmt.Sprintf("%s/seed=%d", cfg.name, *modelSeed), cfg: cfg, seed: *modelSeed, n: n})
		}
	}
	cases = append(cases, modelCases...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runModel(t, c) })
	}
}

// modelCases are fixed sequences, run besides the seeds'.
var modelCases = []modelCase{
	{
		// A round of Sweep(0) stops at SweepKeys (3) due keys and
		// leaves a cursor; a deadline set then, already due, sorts
		// before it. The round that ends the backlog does not go back
		// for it, but the next sweep's scan must start there
		// (setSince, nextSweep).
		name: "small-cache,gathered/deadline-behind-a-sweep-cursor",
		cfg:  modelConfigs[1],
		ops: []mop{
			{k: opSet, db: 0, key: 10, val: "a", exp: true, rel: 1},
			{k: opSet, db: 0, key: 11, val: "a", exp: true, rel: 2},
			{k: opSet, db: 0, key: 12, val: "a", exp: true, rel: 3},
			{k: opSet, db: 0, key: 13, val: "a", exp: true, rel: 4},
			{k: opSet, db: 0, key: 14, val: "a", exp: true, rel: 5},
			{k: opAdvance, n: 10},
			{k: opSweep},
			{k: opSet, db: 0, key: 20, val: "b", exp: true, rel: -100},
			{k: opSweep},
			{k: opSweepAll},
		},
	},
}

// modelRun is the state of one run: the store, the clock and the model.
type modelRun struct {
	t     *testing.T
	c     modelCase
	ops   []mop
	step  int
	opts  Options
	clock *atomic.Int64
	s     *DB
	m     [modelDBs]map[string]mval
	// chk picks what the checks look at (a few Gets, the scans' start):
	// apart from the operations' generator, so that a fixed sequence
	// replays with the same checks.
	chk *rand.Rand
	// kbuf and vbuf hold each Set's key and data, and are scribbled over
	// after it: the store must keep neither.
	kbuf, vbuf []byte
	swept      int // keys the sweeps deleted, in all
	restarts   int
	// unlogged are the sweeps' deletions that the log may not hold yet:
	// nothing waits for them, so a crash may lose them, and the keys
	// come back, expired, as the sweep found them.
	unlogged []sweptKey
	revived  int // keys a crash brought back so
	counting bool
}

// sweptKey is a key a sweep deleted, with the last op staged then.
type sweptKey struct {
	db  int
	key string
	v   mval
	n   uint64
}

func (k sweptKey) String() string { return fmt.Sprintf("db %d %q:%v (op %d)", k.db, k.key, k.v, k.n) }

func runModel(t *testing.T, c modelCase) {
	ops := c.ops
	if ops == nil {
		ops = genOps(c.seed, c.n)
	}
	var clock atomic.Int64
	clock.Store(modelStart)
	opts := DefaultOptions(t.TempDir())
	opts.Databases = modelDBs
	opts.Fsync = c.cfg.fsync
	opts.Clock = clock.Load
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
	opts.CacheSize = c.cfg.cacheSize
	opts.ApplyDelay = c.cfg.applyDelay
	opts.CalmApply = 0
	opts.MaxPending = c.cfg.maxPending
	opts.SweepKeys = c.cfg.sweepKeys
	opts.MemTableSize = c.cfg.memTable
	r := &modelRun{t: t, c: c, ops: ops, opts: opts, clock: &clock, chk: rand.New(rand.NewPCG(c.seed, 7))}
	for db := range r.m {
		r.m[db] = map[string]mval{}
	}
	r.open()
	t.Cleanup(func() { r.s.Close() })
	r.step = -1 // before the first op
	r.check()
	for r.step = range ops {
		r.apply(ops[r.step])
		r.check()
	}
	if err := r.s.Close(); err != nil {
		r.fatalf("close: %v", err)
	}
	t.Logf("%d ops, %d keys swept, %d restarts, %d swept keys back after a crash; at the end %d and %d keys",
		len(ops), r.swept, r.restarts, r.revived, len(r.m[0]), len(r.m[1]))
}

// fatalf fails the run with the seed and the operations up to this step.
func (r *modelRun) fatalf(format string, args ...any) {
	r.t.Helper()
	var b strings.Builder
	for i, o := range r.ops[:r.step+1] {
		fmt.Fprintf(&b, "\t%#v, // %d\n", o, i)
	}
	r.t.Fatalf("%s\n\nat step %d (clock %d = start+%d); config %s, seed %d. The ops up to it:\n[]mop{\n%s}",
		fmt.Sprintf(format, args...), r.step, r.clock.Load(), r.clock.Load()-modelStart, r.c.cfg.name, r.c.seed, b.String())
}

func (r *modelRun) open() {
	s, err := Open(r.opts)
	if err != nil {
		r.fatalf("open: %v", err)
	}
	if r.c.cfg.smallFilter {
		s.presMin = 4
		s.pres.Store(newPresence(0, s.presMin)) // as Open made it, smaller
	}
	s.Start()
	r.s = s
	// The keys are being counted: the step's check leaves the counts
	// alone, so that the next writes may come while the count runs.
	r.counting = true
}

func (r *modelRun) wait(tk store.Ticket) {
	if tk == nil {
		return
	}
	if err := tk.Wait(context.Background()); err != nil {
		r.fatalf("ticket: %v", err)
	}
}

func (r *modelRun) apply(o mop) {
	s := r.s
	switch o.k {
	case opSet, opDel, opExpire:
		r.update([]mop{o})
	case opMulti:
		r.update(o.sub)
	case opAdvance:
		r.clock.Add(o.n)
	case opSweep:
		budget := time.Duration(0)
		if o.full {
			budget = time.Hour
		}
		hooked, early := false, 0
		if len(o.sub) > 0 {
			// Sweep runs here, on this goroutine, and the hooks with
			// it: the writes run while it holds no lock but its own.
			hook := func() {
				if hooked {
					return
				}
				hooked = true
				// The keys the sweep deleted so far go first: a write
				// to one of them must not look as if it deleted it.
				early = r.sweptGone()
				r.update(o.sub)
				if o.drain {
					if err := s.drainForTest(); err != nil {
						r.fatalf("drain: %v", err)
					}
				}
			}
			if o.later {
				s.sweepHook = hook
			} else {
				s.scanHook = hook
			}
		}
		n := s.Sweep(budget)
		s.scanHook, s.sweepHook = nil, nil
		r.swept1(n - early)
		r.swept += early
		if len(o.sub) > 0 && !hooked { // no key was due: after it, then
			r.update(o.sub)
		}
	case opSweepAll:
		n := s.Sweep(time.Hour)
		n += s.Sweep(time.Hour)
		r.swept1(n)
		now := r.clock.Load()
		for db := range r.m {
			for k, v := range r.m[db] {
				if !v.live(now) {
					r.fatalf("db %d key %q (deadline %d) is still there after two full sweeps", db, k, v.at)
				}
			}
		}
	case opDrain:
		if err := s.drainForTest(); err != nil {
			r.fatalf("drain: %v", err)
		}
		r.unlogged = r.unlogged[:0]
	case opRestart:
		if err := s.Close(); err != nil {
			r.fatalf("close: %v", err)
		}
		r.unlogged = r.unlogged[:0]
		r.restarts++
		r.open()
	case opCrash:
		// Every write's ticket was waited for: the log holds them all,
		// so the image, opened as after a crash, replays them. The
		// sweeps' deletions that were not logged yet may be lost.
		r.pruneUnlogged()
		image := r.image()
		if err := s.Close(); err != nil {
			r.fatalf("close: %v", err)
		}
		r.opts.Dir = image
		r.restarts++
		r.open()
		r.revive()
	case opFlush:
		tk, err := s.Update(func(tx store.Tx) error { return tx.Flush(o.db) })
		if err != nil {
			r.fatalf("flush: %v", err)
		}
		r.wait(tk)
		clear(r.m[o.db])
	}
}

// image copies the open store's directory, as a crash would leave it.
// Badger may flush a memtable meanwhile, which adds and deletes files: the
// copy is taken again until no file came or went while it was made.
func (r *modelRun) image() string {
	var err error
	for range 20 {
		before := treeNames(r.opts.Dir)
		dst := r.t.TempDir()
		if err = copyTreeErr(r.opts.Dir, dst); err == nil && slices.Equal(before, treeNames(r.opts.Dir)) {
			return dst
		}
	}
	r.fatalf("no steady image of the directory: %v", err)
	return ""
}

// treeNames lists the files under dir, sorted.
func treeNames(dir string) []string {
	var names []string
	filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err == nil {
			names = append(names, path)
		}
		return nil
	})
	return names
}

// copyTreeErr is copyTree, returning errors (a file deleted meanwhile).
func copyTreeErr(src, dst string) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		if e.IsDir() {
			if err := os.Mkdir(to, 0o755); err != nil {
				return err
			}
			if err := copyTreeErr(from, to); err != nil {
				return err
			}
			continue
		}
		if err := copySparse(from, to); err != nil {
			return err
		}
	}
	return nil
}

// update runs writes in one transaction, applying each to the model as it
// goes, and checks each key as the transaction reads it right after.
func (r *modelRun) update(ops []mop) {
	var errs []string
	tk, err := r.s.Update(func(tx store.Tx) error {
		now := tx.Now()
		if now != r.clock.Load() {
			errs = append(errs, fmt.Sprintf("tx.Now() = %d, clock %d", now, r.clock.Load()))
		}
		for _, o := range ops {
			name := modelKeyNames[o.key]
			m := r.m[o.db]
			old, had := m[name]
			wasLive := had && old.live(now)
			switch o.k {
			case opSet:
				v := o.value(now)
				r.kbuf = append(r.kbuf[:0], name...)
				r.vbuf = append(r.vbuf[:0], v.Data...)
				v.Data = r.vbuf
				if err := tx.Set(o.db, r.kbuf, v); err != nil {
					return err
				}
				m[name] = mval{data: string(v.Data), kind: v.Kind, at: v.ExpireAt}
				for i := range r.kbuf {
					r.kbuf[i] = '#'
				}
				for i := range r.vbuf {
					r.vbuf[i] = '#'
				}
			case opDel:
				ok, err := tx.Delete(o.db, []byte(name))
				if err != nil {
					return err
				}
				if ok != wasLive {
					errs = append(errs, fmt.Sprintf("Delete(%d, %q) = %v, want %v (model %v, had %v)", o.db, name, ok, wasLive, old, had))
				}
				delete(m, name)
			case opExpire:
				v, ok, err := tx.Get(o.db, []byte(name))
				if err != nil {
					return err
				}
				if ok != wasLive {
					errs = append(errs, fmt.Sprintf("Get(%d, %q) before a new deadline: found %v, want %v", o.db, name, ok, wasLive))
				}
				if !ok {
					break
				}
				switch {
				case o.same:
				case o.exp:
					v.ExpireAt = now + o.rel
				default:
					v.ExpireAt = 0
				}
				// v.Data is the store's, passed back as EXPIRE does.
				if err := tx.Set(o.db, []byte(name), v); err != nil {
					return err
				}
				if wasLive {
					old.at = v.ExpireAt
					m[name] = old
				}
			}
			want, had := m[name]
			wantLive := had && want.live(now)
			v, ok, err := tx.Get(o.db, []byte(name))
			if err != nil {
				return err
			}
			if ok != wantLive || ok && (string(v.Data) != want.data || v.Kind != want.kind || v.ExpireAt != want.at) {
				errs = append(errs, fmt.Sprintf("after %#v in the transaction: Get(%d, %q) = %q kind %v at %d, found %v; want %v, found %v",
					o, o.db, name, v.Data, v.Kind, v.ExpireAt, ok, want, wantLive))
			}
		}
		return nil
	})
	if err != nil {
		r.fatalf("update: %v", err)
	}
	r.wait(tk)
	if len(errs) > 0 {
		r.fatalf("%s", strings.Join(errs, "\n"))
	}
}

// swept1 takes a sweep that reported n deleted keys: the model drops the
// keys the store no longer holds, which must be n expired ones.
func (r *modelRun) swept1(n int) {
	if gone := r.sweptGone(); gone != n {
		r.fatalf("the sweep reported %d keys deleted; %d expired keys are gone", n, gone)
	}
	r.swept += n
	r.pruneUnlogged()
}

// sweptGone drops from the model the keys the store no longer holds: keys
// a sweep deleted, which must have been expired. It returns how many.
func (r *modelRun) sweptGone() (gone int) {
	now := r.clock.Load()
	r.s.omu.RLock()
	staged := r.s.staged // the sweep's deletions are up to it
	r.s.omu.RUnlock()
	for db := range r.m {
		held := r.held(db)
		for k, v := range r.m[db] {
			if _, ok := held[k]; ok {
				continue
			}
			if v.live(now) {
				r.fatalf("db %d key %q (%v) is gone after a sweep at %d, before its deadline", db, k, v, now)
			}
			delete(r.m[db], k)
			r.unlogged = append(r.unlogged, sweptKey{db, k, v, staged})
			gone++
		}
	}
	return gone
}

// pruneUnlogged forgets the sweeps' deletions that the log holds.
func (r *modelRun) pruneUnlogged() {
	logged := r.s.logged.Load()
	r.unlogged = slices.DeleteFunc(r.unlogged, func(k sweptKey) bool { return k.n <= logged })
}

// revive takes, after a crash, the keys that came back: only keys whose
// deletion by a sweep the log may not have held, as the sweep found them.
func (r *modelRun) revive() {
	for db := range r.m {
		for k, v := range r.held(db) {
			if _, ok := r.m[db][k]; ok {
				continue
			}
			i := slices.IndexFunc(r.unlogged, func(u sweptKey) bool { return u.db == db && u.key == k })
			if i < 0 || r.unlogged[i].v != v {
				r.fatalf("db %d key %q (%v) came back after a crash; the model has no such key (swept, maybe lost: %v)", db, k, v, r.unlogged)
			}
			r.m[db][k] = v
			r.revived++
		}
	}
	r.unlogged = r.unlogged[:0]
}

// held is what the store holds of db's keyspace, expired keys included.
func (r *modelRun) held(db int) map[string]mval {
	out := map[string]mval{}
	if _, err := r.s.View(func(store.Tx) error {
		prefix := dbPrefix(spaceKeys, db)
		return r.s.scanRaw(prefix, prefix, nil, func(raw, val []byte) (bool, error) {
			v, ok := decodeValue(val)
			if !ok {
				return false, fmt.Errorf("key %q holds %q: no value", raw, val)
			}
			out[string(raw[len(prefix):])] = mval{data: string(v.Data), kind: v.Kind, at: v.ExpireAt}
			return true, nil
		})
	}); err != nil {
		r.fatalf("scan of the keyspace: %v", err)
	}
	return out
}

// index is what the store's expiry index holds for db: key → deadline
// (an entry twice is an error).
func (r *modelRun) index(db int) map[string]int64 {
	out := map[string]int64{}
	var dup []string
	if _, err := r.s.View(func(store.Tx) error {
		prefix := dbPrefix(spaceExpiry, db)
		return r.s.scanRaw(prefix, prefix, nil, func(raw, _ []byte) (bool, error) {
			if len(raw) < 11 {
				return false, fmt.Errorf("index entry %q too short", raw)
			}
			k, at := string(raw[11:]), int64(binary.BigEndian.Uint64(raw[3:11]))
			if prev, ok := out[k]; ok {
				dup = append(dup, fmt.Sprintf("%q at %d and %d", k, prev, at))
			}
			out[k] = at
			return true, nil
		})
	}); err != nil {
		r.fatalf("scan of the expiry index: %v", err)
	}
	if len(dup) > 0 {
		r.fatalf("db %d: keys with two expiry index entries: %v", db, dup)
	}
	return out
}

type scanned struct {
	key string
	v   mval
}

func (s scanned) String() string { return fmt.Sprintf("%q:%v", s.key, s.v) }

// check compares the store with the model.
func (r *modelRun) check() {
	now := r.clock.Load()
	all := r.c.cfg.allGets || r.step%16 == 0
	var errs []string
	errf := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	for db := range r.m {
		m := r.m[db]
		// What SCAN, KEYS, DBSIZE and INFO see, in one transaction.
		var live []scanned
		for k, v := range m {
			if v.live(now) {
				live = append(live, scanned{k, v})
			}
		}
		slices.SortFunc(live, func(a, b scanned) int { return strings.Compare(a.key, b.key) })
		from := modelKeyNames[r.chk.IntN(modelKeys)]
		if r.chk.IntN(2) == 0 {
			from += "\x00"
		}
		limit := 1 + r.chk.IntN(8)
		var gets []int
		if all {
			for i := range modelKeys {
				gets = append(gets, i)
			}
		} else {
			for range 6 {
				gets = append(gets, r.chk.IntN(modelKeys))
			}
		}
		if _, err := r.s.View(func(tx store.Tx) error {
			if tx.Now() != now {
				errf("tx.Now() = %d, clock %d", tx.Now(), now)
			}
			for _, i := range gets {
				k := modelKeyNames[i]
				v, ok, err := tx.Get(db, []byte(k))
				if err != nil {
					return err
				}
				want, had := m[k]
				wantLive := had && want.live(now)
				if ok != wantLive || ok && (string(v.Data) != want.data || v.Kind != want.kind || v.ExpireAt != want.at) {
					errf("db %d: Get(%q) = %q kind %v at %d, found %v; want %v, found %v", db, k, v.Data, v.Kind, v.ExpireAt, ok, want, wantLive)
				}
			}
			var got []scanned
			if err := tx.Scan(db, nil, func(k []byte, v store.Value) (bool, error) {
				got = append(got, scanned{string(k), mval{string(v.Data), v.Kind, v.ExpireAt}})
				return true, nil
			}); err != nil {
				return err
			}
			if !slices.Equal(got, live) {
				errf("db %d: Scan from the start:\n\tgot  %v\n\twant %v", db, got, live)
			}
			got = nil
			if err := tx.Scan(db, []byte(from), func(k []byte, v store.Value) (bool, error) {
				got = append(got, scanned{string(k), mval{string(v.Data), v.Kind, v.ExpireAt}})
				return len(got) < limit, nil
			}); err != nil {
				return err
			}
			i, _ := slices.BinarySearchFunc(live, from, func(a scanned, k string) int { return strings.Compare(a.key, k) })
			if want := live[i:min(i+limit, len(live))]; !slices.Equal(got, want) {
				errf("db %d: Scan from %q for %d keys:\n\tgot  %v\n\twant %v", db, from, limit, got, want)
			}
			expiring := 0
			for _, v := range m {
				if v.at != 0 {
					expiring++
				}
			}
			if r.counting {
				return nil
			}
			if n, e := tx.Len(db), tx.Expiring(db); n != len(m) || e != expiring {
				errf("db %d: Len %d, Expiring %d; want %d keys (%d live, the others expired, not swept yet), %d with a deadline",
					db, n, e, len(m), len(live), expiring)
			}
			return nil
		}); err != nil {
			r.fatalf("view: %v", err)
		}
		// What the store holds: the model's keys, expired ones included,
		// each with a deadline indexed at it, and nothing else.
		held := r.held(db)
		if !maps.Equal(held, m) {
			errf("db %d: the keyspace holds\n\t%v\nwant\n\t%v", db, sortedMap(held), sortedMap(m))
		}
		idx := r.index(db)
		wantIdx := map[string]int64{}
		for k, v := range m {
			if v.at != 0 {
				wantIdx[k] = v.at
			}
		}
		if !maps.Equal(idx, wantIdx) {
			errf("db %d: the expiry index holds\n\t%v\nwant\n\t%v", db, sortedMap(idx), sortedMap(wantIdx))
		}
	}
	r.counting = false
	if len(errs) > 0 {
		r.fatalf("%s", strings.Join(errs, "\n"))
	}
}

// sortedMap prints a map in key order.
func sortedMap[V any](m map[string]V) string {
	var b bytes.Buffer
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%q:%v ", k, m[k])
	}
	return b.String()
}
