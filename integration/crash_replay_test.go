package integration

// KV-6, KV-7 and KV-16 under kill -9 for the commands TestCrash does not
// drive (MSET, INCRBY, DEL, EXPIRE, RENAME in two databases; ONCE.ABORT and
// ONCE.EXTEND), and for a crash during the restart itself: the log's
// replay is killed, several times, and must come out the same when it
// finally completes.

import (
	"bufio"
	"bytes"
	bin "encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// mixKey is one key a mix worker writes, and what a restarted server may
// show of it: the state it acknowledged last, and the one of a command
// sent without a reply.
type mixKey struct {
	db      int
	key     string
	kind    string   // "str", "ttl" (a string that may carry a TTL) or "once"
	allowed []string // observations (mixObserve) that are right
}

// mixGroup is keys whose states a crash must keep together.
type mixGroup struct {
	what string
	keys []*mixKey
	// ok checks the group's observations (in keys' order).
	ok func(obs []string) bool
}

// mixLog is one mix worker's record.
type mixLog struct {
	keys   []*mixKey
	groups []mixGroup
	tokens []int64
	ops    int
	err    error
}

// runMixWorker drives one connection, in database db, until stop is
// closed or the connection breaks. Every key is written by this worker
// only, one command at a time, so what it may hold is known exactly.
func runMixWorker(addr string, w, db int, stop <-chan struct{}, killed func() bool) *mixLog {
	l := &mixLog{}
	nc, err := net.DialTimeout("tcp", addr, DefaultTimeout)
	if err != nil {
		l.err = err
		return l
	}
	defer nc.Close()
	c := &RawConn{Addr: addr, Conn: nc, Timeout: DefaultTimeout, r: bufio.NewReader(nc)}
	rng := rand.New(rand.NewPCG(uint64(w), 99))
	fail := func(what string, err error) *mixLog {
		if !killed() {
			l.err = fmt.Errorf("worker %d: %s: %v", w, what, err)
		}
		return l
	}
	// do sends args; until the reply, each key may show its old state or
	// the next one; after it, only the next. check vets the reply.
	do := func(next map[*mixKey]string, check func(*Frame) error, args ...string) error {
		for k, s := range next {
			k.allowed = append(k.allowed, s)
		}
		f, err := rawDo(c, args...)
		if err == nil {
			err = check(f)
		}
		if err != nil {
			return fmt.Errorf("%s: %v", fmtArgs(args), err)
		}
		for k, s := range next {
			k.allowed = []string{s}
		}
		return nil
	}
	isOK := func(f *Frame) error {
		if f.Type != '+' || f.Str != "OK" {
			return fmt.Errorf("reply %q", f.Raw)
		}
		return nil
	}
	isInt := func(want int64) func(*Frame) error {
		return func(f *Frame) error {
			if n, err := frameInt(f); err != nil || f.Type != ':' || n != want {
				return fmt.Errorf("reply %q, want %d", f.Raw, want)
			}
			return nil
		}
	}
	newKey := func(kind, name string, state string) *mixKey {
		k := &mixKey{db: db, key: name, kind: kind, allowed: []string{state}}
		l.keys = append(l.keys, k)
		return k
	}
	if f, err := rawDo(c, "SELECT", strconv.Itoa(db)); err != nil || isOK(f) != nil {
		return fail("SELECT", fmt.Errorf("%v %v", f, err))
	}
	counter := newKey("str", fmt.Sprintf("x:%d:ctr", w), "<nil>")
	var total int64
	group := make([]*mixKey, 3)
	for i := range group {
		group[i] = newKey("str", fmt.Sprintf("x:%d:g%d", w, i), "<nil>")
	}
	l.groups = append(l.groups, mixGroup{what: "MSET", keys: group, ok: func(obs []string) bool {
		return obs[0] == obs[1] && obs[1] == obs[2]
	}})
	var live []*mixKey // string keys that hold a value, for DEL and RENAME
	for seq := 0; ; seq++ {
		select {
		case <-stop:
			return l
		default:
		}
		l.ops++
		name := fmt.Sprintf("x:%d:%d", w, seq)
		val := name + "=" + strings.Repeat("v", 8+rng.IntN(200))
		var err error
		switch r := rng.IntN(16); {
		case r < 3:
			k := newKey("str", name, "<nil>")
			err = do(map[*mixKey]string{k: "v:" + val}, isOK, "SET", name, val)
			live = append(live, k)
		case r < 5:
			n := int64(1 + rng.IntN(5))
			total += n
			err = do(map[*mixKey]string{counter: "v:" + strconv.FormatInt(total, 10)}, isInt(total),
				"INCRBY", counter.key, strconv.FormatInt(n, 10))
		case r < 7:
			gen := "gen" + strconv.Itoa(seq)
			next := map[*mixKey]string{}
			args := []string{"MSET"}
			for _, k := range group {
				next[k] = "v:" + gen
				args = append(args, k.key, gen)
			}
			err = do(next, isOK, args...)
		case r < 8 && len(live) > 0:
			k := live[0]
			live = live[1:]
			err = do(map[*mixKey]string{k: "<nil>"}, isInt(1), "DEL", k.key)
		case r < 9 && len(live) > 0:
			src := live[0]
			live = live[1:]
			v := strings.TrimPrefix(src.allowed[0], "v:")
			dst := newKey("str", name+":renamed", "<nil>")
			// dst is left alone from now on, so the pair shows one value.
			err = do(map[*mixKey]string{src: "<nil>", dst: "v:" + v}, isOK, "RENAME", src.key, dst.key)
			l.groups = append(l.groups, mixGroup{what: "RENAME", keys: []*mixKey{src, dst}, ok: func(obs []string) bool {
				return (obs[0] == "<nil>") != (obs[1] == "<nil>")
			}})
		case r < 11:
			k := newKey("ttl", name, "<nil>")
			if err = do(map[*mixKey]string{k: val + "|no-ttl"}, isOK, "SET", name, val); err == nil {
				err = do(map[*mixKey]string{k: val + "|ttl"}, isInt(1), "EXPIRE", name, "3600")
			}
		default:
			k := newKey("once", name, "free")
			var tok int64
			err = do(map[*mixKey]string{k: "running:short"}, func(f *Frame) error {
				if len(f.Elems) != 2 || f.Elems[0].Str != "claimed" || f.Elems[1].Type != ':' {
					return fmt.Errorf("reply %q", f.Raw)
				}
				tok, _ = strconv.ParseInt(f.Elems[1].Str, 10, 64)
				l.tokens = append(l.tokens, tok)
				return nil
			}, "ONCE.CLAIM", name, "LEASE", "600000")
			if err != nil {
				break
			}
			t := strconv.FormatInt(tok, 10)
			switch rng.IntN(3) {
			case 0:
				err = do(map[*mixKey]string{k: "done:answer-" + name}, isOK, "ONCE.COMPLETE", name, t, "answer-"+name)
			case 1:
				err = do(map[*mixKey]string{k: "free"}, isOK, "ONCE.ABORT", name, t)
			default:
				err = do(map[*mixKey]string{k: "running:long"}, isOK, "ONCE.EXTEND", name, t, "LEASE", "1800000")
			}
		}
		if err != nil {
			return fail("step", err)
		}
	}
}

// runBulkWorker pipelines SETs of large values in database 0, so that the
// log holds tens of megabytes that Badger may not have yet: the replay
// that the test kills takes a while. Values are checked by their length
// and head (mixKey "len:n:head").
func runBulkWorker(addr string, stop <-chan struct{}, killed func() bool) *mixLog {
	l := &mixLog{}
	nc, err := net.DialTimeout("tcp", addr, DefaultTimeout)
	if err != nil {
		l.err = err
		return l
	}
	defer nc.Close()
	c := &RawConn{Addr: addr, Conn: nc, Timeout: DefaultTimeout, r: bufio.NewReader(nc)}
	const batch, size = 32, 32 << 10
	for seq := 0; ; seq++ {
		select {
		case <-stop:
			return l
		default:
		}
		var req []byte
		var ks []*mixKey
		for i := range batch {
			name := fmt.Sprintf("b:%d:%d", seq, i)
			val := name + strings.Repeat("b", size)
			k := &mixKey{db: 0, key: name, kind: "bulk", allowed: []string{"<nil>", bulkObs(val)}}
			l.keys = append(l.keys, k)
			ks = append(ks, k)
			req = append(req, EncodeCommand("SET", name, val)...)
		}
		l.ops += batch
		if err := c.TrySend(req); err != nil {
			if !killed() {
				l.err = err
			}
			return l
		}
		for _, k := range ks {
			f, err := c.TryReadFrame()
			if err != nil || f.Type != '+' {
				if !killed() {
					l.err = fmt.Errorf("bulk SET: %v %v", f, err)
				}
				return l
			}
			k.allowed = k.allowed[1:]
		}
	}
}

// bulkObs is how mixObserve shows a bulk value.
func bulkObs(v string) string { return fmt.Sprintf("len:%d:%.12s", len(v), v) }

// mixObserve reads what the server holds of each key, in the terms of
// mixKey.allowed.
func mixObserve(tb testing.TB, c *RawConn, keys []*mixKey) map[*mixKey]string {
	tb.Helper()
	out := map[*mixKey]string{}
	for _, db := range []int{0, 2} {
		var ks []*mixKey
		cmds := [][]string{{"SELECT", strconv.Itoa(db)}}
		for _, k := range keys {
			if k.db != db {
				continue
			}
			ks = append(ks, k)
			switch k.kind {
			case "once":
				cmds = append(cmds, []string{"ONCE.STATUS", k.key}, []string{"ONCE.WAIT", k.key, "TIMEOUT", "1"})
			default:
				cmds = append(cmds, []string{"GET", k.key}, []string{"PTTL", k.key})
			}
		}
		replies := pipeline(tb, c, cmds)[1:]
		for i, k := range ks {
			a, b := replies[2*i], replies[2*i+1]
			switch k.kind {
			case "once":
				st := statusField(a, "state")
				lease, _ := strconv.ParseInt(statusField(a, "lease-ms"), 10, 64)
				switch {
				case st == "":
					out[k] = "free"
				case st == "done" && len(b.Elems) == 2:
					out[k] = "done:" + b.Elems[1].Str
				case st == "running" && lease > 900000:
					out[k] = "running:long"
				case st == "running":
					out[k] = "running:short"
				default:
					out[k] = "state " + st
				}
			case "ttl":
				ttl, _ := frameInt(b)
				switch {
				case a.Null:
					out[k] = "<nil>"
				case ttl > 0:
					out[k] = a.Str + "|ttl"
				case ttl == -1:
					out[k] = a.Str + "|no-ttl"
				default:
					out[k] = fmt.Sprintf("%s|pttl %d", a.Str, ttl)
				}
			case "bulk":
				if a.Null {
					out[k] = "<nil>"
				} else {
					out[k] = bulkObs(a.Str)
				}
			default:
				if a.Null {
					out[k] = "<nil>"
				} else {
					out[k] = "v:" + a.Str
				}
			}
		}
	}
	return out
}

// TestCrashMixAndReplay: under appendfsync always, 6 connections (in
// databases 0 and 2) run MSET, INCRBY, SET, DEL, RENAME, SET+EXPIRE and
// ONCE.CLAIM then COMPLETE, ABORT or EXTEND, and one more pipelines SETs
// of 32 KiB values (a long log to replay); the server is killed mid-load,
// then killed again at random moments of each of three restarts (during
// the log's replay, or just after), and finally started for good. Every
// key must then show its last acknowledged state or the one of the
// command in flight at the first kill (KV-6: no acknowledged write lost,
// an INCRBY chain never older; KV-16: answers, aborts and extended leases
// kept), MSET and RENAME whole, and a new token above every token handed
// out (KV-13).
func TestCrashMixAndReplay(t *testing.T) {
	t.Parallel()
	const conns = 6
	srv := StartOncekv(t, "--appendfsync", "always", "--loglevel", "warning")
	stop := make(chan struct{})
	var killed atomic.Bool
	logs := make([]*mixLog, conns)
	var wg sync.WaitGroup
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			logs[w] = runMixWorker(srv.Addr, w, 2*(w%2), stop, killed.Load)
		}()
	}
	var bulk *mixLog
	wg.Add(1)
	go func() {
		defer wg.Done()
		bulk = runBulkWorker(srv.Addr, stop, killed.Load)
	}()
	time.Sleep(1500*time.Millisecond + rand.N(time.Second))
	killed.Store(true)
	srv.Kill(t)
	close(stop)
	wg.Wait()
	var keys []*mixKey
	var groups []mixGroup
	var maxTok int64
	ops := 0
	for _, l := range append(logs, bulk) {
		if l.err != nil {
			t.Fatal(l.err)
		}
		keys = append(keys, l.keys...)
		groups = append(groups, l.groups...)
		for _, tok := range l.tokens {
			maxTok = max(maxTok, tok)
		}
		ops += l.ops
	}

	// Kill the restarts, at random moments of their first half second.
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(srv.Port), "--dir", srv.Dir}
	args = append(args, srv.Args...)
	ready := 0
	for i := range 3 {
		p, err := startProc(exec.Command(BuildOncekv(t), args...))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(rand.N(500 * time.Millisecond))
		if p.exited() {
			t.Fatalf("restart %d exited by itself:\n%s", i, p.tail(3000))
		}
		if _, err := net.DialTimeout("tcp", srv.Addr, 50*time.Millisecond); err == nil {
			ready++
		}
		p.kill()
	}
	srv = srv.Restart(t) // fails the test if the directory does not open by itself

	c := DialRaw(t, srv.Addr)
	c.Timeout = 30 * time.Second
	obs := mixObserve(t, c, keys)
	bad := 0
	for _, k := range keys {
		if !slices.Contains(k.allowed, obs[k]) {
			if bad++; bad <= 10 {
				t.Errorf("db %d %s: %.60q after the crashes, want one of %.120q", k.db, k.key, obs[k], k.allowed)
			}
		}
	}
	for _, g := range groups {
		var o []string
		for _, k := range g.keys {
			o = append(o, obs[k])
		}
		if !g.ok(o) {
			t.Errorf("%s kept in part: %s hold %q", g.what, g.keys[0].key, o)
		}
	}
	f := doFrame(t, c, "ONCE.CLAIM", "x:probe", "LEASE", "60000")
	if len(f.Elems) != 2 || f.Elems[0].Str != "claimed" {
		t.Fatalf("probe claim: %q", f.Raw)
	}
	if tok, _ := strconv.ParseInt(f.Elems[1].Str, 10, 64); tok <= maxTok {
		t.Errorf("first token after the crashes %d, not above %d handed out before (KV-13)", tok, maxTok)
	}
	t.Logf("%d ops on %d connections, %d keys and %d groups checked; %d of 3 killed restarts had opened", ops, conns, len(keys), len(groups), ready)
}

// lastWALRecord finds the last whole record of the newest log segment in
// dir (the store's format: u32 length, u32 CRC-32C, payload; a zero
// length or the end of the file ends the segment) and returns the
// segment's path, where the record starts and ends, and its payload.
func lastWALRecord(tb testing.TB, dir string) (path string, start, end int64, payload []byte) {
	tb.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "wal", "*.log"))
	if err != nil || len(segs) == 0 {
		tb.Fatalf("no log segment in %s: %v", dir, err)
	}
	slices.Sort(segs)
	for i := len(segs) - 1; i >= 0; i-- {
		b, err := os.ReadFile(segs[i])
		if err != nil {
			tb.Fatal(err)
		}
		start, end = -1, 0
		for off := int64(0); off+8 <= int64(len(b)); {
			n := int64(bin.LittleEndian.Uint32(b[off:]))
			if n == 0 || off+8+n > int64(len(b)) {
				break
			}
			start, end = off, off+8+n
			off = end
		}
		if start >= 0 {
			return segs[i], start, end, b[start+8 : end]
		}
	}
	tb.Fatalf("no record in the log segments %v", segs)
	return "", 0, 0, nil
}

// TestCrashTornLogTail: after a kill -9 under appendfsync always, the last
// record of the log is cut short, as a power loss in the middle of its
// write would leave it (KV-6). The restart must open by itself and keep
// every acknowledged write but those in the torn record; a second load,
// kill -9 and restart must too (the replay of a log that had a torn
// segment).
func TestCrashTornLogTail(t *testing.T) {
	t.Parallel()
	const conns = 4
	srv := StartOncekv(t, "--appendfsync", "always", "--loglevel", "warning")
	var keys []*mixKey
	var groups []mixGroup
	for round := range 2 {
		stop := make(chan struct{})
		var killed atomic.Bool
		logs := make([]*mixLog, conns)
		var wg sync.WaitGroup
		for w := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				logs[w] = runMixWorker(srv.Addr, 10*round+w, 2*(w%2), stop, killed.Load)
			}()
		}
		time.Sleep(time.Second + rand.N(500*time.Millisecond))
		killed.Store(true)
		srv.Kill(t)
		close(stop)
		wg.Wait()
		for _, l := range logs {
			if l.err != nil {
				t.Fatal(l.err)
			}
			keys = append(keys, l.keys...)
			groups = append(groups, l.groups...)
		}

		path, start, end, torn := lastWALRecord(t, srv.Dir)
		cut := end - 3
		if err := os.Truncate(path, cut); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: cut %s at %d, inside its last record [%d, %d)", round, filepath.Base(path), cut, start, end)
		// Whatever the torn record wrote may be lost: it is treated as
		// never acknowledged.
		inTorn := func(k *mixKey) bool { return bytes.Contains(torn, []byte(k.key)) }

		srv = srv.Restart(t) // fails the test if the directory does not open by itself
		c := DialRaw(t, srv.Addr)
		c.Timeout = 30 * time.Second
		obs := mixObserve(t, c, keys)
		bad, exempt := 0, 0
		for _, k := range keys {
			if inTorn(k) {
				exempt++
			} else if !slices.Contains(k.allowed, obs[k]) {
				if bad++; bad <= 10 {
					t.Errorf("round %d: db %d %s: %.60q after the torn tail, want one of %.120q", round, k.db, k.key, obs[k], k.allowed)
				}
			}
			// Later rounds check the state found now.
			k.allowed = []string{obs[k]}
		}
		for _, g := range groups {
			var o []string
			for _, k := range g.keys {
				o = append(o, obs[k])
			}
			if !g.ok(o) {
				t.Errorf("round %d: %s kept in part: %s hold %q", round, g.what, g.keys[0].key, o)
			}
		}
		c.Close()
		t.Logf("round %d: %d keys checked, %d exempt (in the torn record)", round, len(keys)-exempt, exempt)
		if t.Failed() {
			return
		}
	}
}

// TestCrashDuringSweep: keys with deadlines a few hundred milliseconds
// away (strings, and ONCE answers kept briefly) expire by the ten thousand
// while the server is killed, twice, mid-sweep. After each restart the
// keys without a near deadline are all there with their values and TTLs
// (KV-6), and the expired ones are gone without anyone reading them: the
// key count falls to the long-lived keys alone (KV-4; a crash that kept a
// key but lost its expiry index entry would leave it counted for good).
func TestCrashDuringSweep(t *testing.T) {
	t.Parallel()
	const (
		short = 20000
		long  = 2000
		onces = 1000
	)
	srv := StartOncekv(t, "--appendfsync", "always", "--loglevel", "warning")
	want := map[string]string{}
	for round := range 2 {
		c := DialRaw(t, srv.Addr)
		c.Timeout = 30 * time.Second
		var cmds [][]string
		for i := range long {
			k := fmt.Sprintf("l:%d:%d", round, i)
			want[k] = k + strings.Repeat("l", 50)
			cmds = append(cmds, []string{"SET", k, want[k], "EX", "3600"})
		}
		for i := range short {
			k := fmt.Sprintf("s:%d:%d", round, i)
			cmds = append(cmds, []string{"SET", k, k + strings.Repeat("s", 50), "PX", strconv.Itoa(300 + i%900)})
		}
		expectAllOK(t, pipeline(t, c, cmds))
		cmds = cmds[:0]
		for i := range onces {
			cmds = append(cmds, []string{"ONCE.CLAIM", fmt.Sprintf("o:%d:%d", round, i), "LEASE", "60000"})
		}
		claims := pipeline(t, c, cmds)
		cmds = cmds[:0]
		for i, f := range claims {
			if len(f.Elems) != 2 || f.Elems[0].Str != "claimed" {
				t.Fatalf("ONCE.CLAIM: %q", f.Raw)
			}
			cmds = append(cmds, []string{"ONCE.COMPLETE", fmt.Sprintf("o:%d:%d", round, i), f.Elems[1].Str, "answer", "KEEP", strconv.Itoa(300 + i%600)})
		}
		expectAllOK(t, pipeline(t, c, cmds))
		c.Close()
		// The first deadlines pass 300 ms after the load; the kill
		// comes while the sweeper deletes them.
		time.Sleep(400*time.Millisecond + rand.N(700*time.Millisecond))
		srv.Kill(t)
		srv = srv.Restart(t)

		c = DialRaw(t, srv.Addr)
		c.Timeout = 30 * time.Second
		cmds = cmds[:0]
		var ks []string
		for k := range want {
			ks = append(ks, k)
			cmds = append(cmds, []string{"GET", k}, []string{"TTL", k})
		}
		replies := pipeline(t, c, cmds)
		for i, k := range ks {
			v, ttl := replies[2*i], replies[2*i+1]
			if n, _ := frameInt(ttl); v.Str != want[k] || n <= 0 {
				t.Fatalf("round %d: %s = %.40q, TTL %q after a kill -9 mid-sweep; want its value and a TTL", round, k, v.Str, ttl.Raw)
			}
		}
		// Every short deadline has passed 1.2 s after the load; the
		// sweeper must then bring the count down to the long keys.
		deadline := time.Now().Add(15 * time.Second)
		for {
			f := doFrame(t, c, "DBSIZE")
			n, _ := frameInt(f)
			if n == int64(len(want)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: DBSIZE %d 15 s after every short deadline passed, want the %d long-lived keys (KV-4)", round, n, len(want))
			}
			time.Sleep(100 * time.Millisecond)
		}
		c.Close()
	}
}
