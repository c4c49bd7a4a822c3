package integration

// KV-6 and KV-16 under kill -9: many connections drive SET, INCR, MULTI/EXEC
// (two INCRs) and ONCE (CLAIM, then COMPLETE or not) against the built
// binary; the test records
// every write that got a reply, kills the process mid-load, restarts it on
// the same directory and checks what survived, cycle after cycle.
//
// Under appendfsync always nothing acknowledged may be lost: every SET is
// there with its value, every counter is at least its last acknowledged
// value, the two counters of each EXEC moved together, every acknowledged claim is running with its token and every
// acknowledged answer is kept, and tokens handed out after the restart are
// greater than every token seen before. Under everysec only what the policy
// promises is asserted (nothing acknowledged more than everysecGrace before
// the kill is lost); what was lost is measured and logged.
//
// A process kill leaves the operating system's page cache intact, so it
// proves the server's own ordering (acknowledge only after the write reached
// the kernel, and under always after fsync returned); it cannot prove that
// fsync reaches the platter (power loss), which would need a VM or a
// fault-injecting block device.
//
// Tunable for a longer soak run by hand:
//
//	ONCEKV_CRASH_CYCLES=50 ONCEKV_CRASH_LOAD=5s ONCEKV_CRASH_CONNS=64 ONCEKV_CRASH_PACE=0 \
//	    go test ./integration -run TestCrash -v -timeout 1h

import (
	"bufio"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// everysecGrace is how old an acknowledged write must be at the kill for
// everysec to promise it ("about one second", with margin).
const everysecGrace = 2 * time.Second

// crashLease is the lease of the harness's claims: far longer than the
// test, so a recorded claim must still be running after every restart.
const crashLease = 10 * time.Minute

const crashCounters = 8

// crashPairs are the pairs of counters that MULTI/EXEC steps increment
// together: a crash must keep both increments of an EXEC or neither.
const crashPairs = 4

type crashParams struct {
	cycles int
	load   time.Duration // the kill comes in its second half
	conns  int
	pace   time.Duration // pause between a worker's commands
}

func crashParamsFromEnv(tb testing.TB, load, pace time.Duration) crashParams {
	tb.Helper()
	p := crashParams{cycles: 5, load: load, conns: 16, pace: pace}
	if v := os.Getenv("ONCEKV_CRASH_CYCLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			tb.Fatalf("ONCEKV_CRASH_CYCLES=%q: want a positive integer", v)
		}
		p.cycles = n
	}
	if v := os.Getenv("ONCEKV_CRASH_LOAD"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			tb.Fatalf("ONCEKV_CRASH_LOAD=%q: want a duration such as 3s", v)
		}
		p.load = d
	}
	if v := os.Getenv("ONCEKV_CRASH_PACE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			tb.Fatalf("ONCEKV_CRASH_PACE=%q: want a duration such as 1ms or 0", v)
		}
		p.pace = d
	}
	if v := os.Getenv("ONCEKV_CRASH_CONNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			tb.Fatalf("ONCEKV_CRASH_CONNS=%q: want a positive integer", v)
		}
		p.conns = n
	}
	return p
}

// The ledger: what the clients were told, and when.

type ackSet struct {
	val string
	at  time.Time
}

type ackIncr struct {
	counter int
	val     int64
	at      time.Time
}

type ackToken struct {
	token int64
	at    time.Time
}

type ackOnce struct {
	key    string
	token  int64
	answer string
	done   bool
	at     time.Time // of the last acknowledged step
	// completing: a COMPLETE was sent and got no reply, so running and
	// done (with pendingAnswer) are both right.
	completing    bool
	pendingAnswer string
}

// workerLog is one connection's record of one cycle.
type workerLog struct {
	sets      map[string]ackSet
	maybeSets map[string]string // sent, no reply: absent or this value
	incrs     []ackIncr
	incrSent  [crashCounters]int64
	execs     []ackIncr // counter: the pair; val: its value after the EXEC
	execSent  [crashPairs]int64
	onces     []*ackOnce
	tokens    []ackToken
	ops       int
	err       error // an error before the kill: a test failure
}

// runCrashWorker drives one connection until stop is closed or the
// connection breaks (the kill). A step is recorded as acknowledged only
// once its reply is read.
func runCrashWorker(addr string, cycle, w int, pace time.Duration, stop <-chan struct{}, killed func() bool) *workerLog {
	l := &workerLog{sets: map[string]ackSet{}, maybeSets: map[string]string{}}
	nc, err := net.DialTimeout("tcp", addr, DefaultTimeout)
	if err != nil {
		l.err = err
		return l
	}
	defer nc.Close()
	c := &RawConn{Addr: addr, Conn: nc, Timeout: DefaultTimeout, r: bufio.NewReader(nc)}
	rng := rand.New(rand.NewPCG(uint64(cycle), uint64(w)))
	fail := func(what string, err error) *workerLog {
		if !killed() {
			l.err = fmt.Errorf("worker %d: %s: %v", w, what, err)
		}
		return l
	}
	for seq := 0; ; seq++ {
		if pace > 0 {
			time.Sleep(pace)
		}
		select {
		case <-stop:
			return l
		default:
		}
		l.ops++
		switch r := rng.IntN(10); {
		case r < 4:
			key := fmt.Sprintf("s:%d:%d:%d", cycle, w, seq)
			val := key + "=" + strings.Repeat(strconv.Itoa(seq%10), 16+rng.IntN(100))
			l.maybeSets[key] = val
			f, err := rawDo(c, "SET", key, val)
			if err != nil {
				return fail("SET", err)
			}
			if f.Type != '+' || f.Str != "OK" {
				return fail("SET", fmt.Errorf("reply %q", f.Raw))
			}
			delete(l.maybeSets, key)
			l.sets[key] = ackSet{val, time.Now()}
		case r < 5:
			pair := rng.IntN(crashPairs)
			l.execSent[pair]++
			a, b := pairKeys(pair)
			var req []byte
			for _, cmd := range [][]string{{"MULTI"}, {"INCR", a}, {"INCR", b}, {"EXEC"}} {
				req = append(req, EncodeCommand(cmd...)...)
			}
			if err := c.TrySend(req); err != nil {
				return fail("MULTI/EXEC", err)
			}
			var f *Frame
			for range 4 {
				if f, err = c.TryReadFrame(); err != nil {
					return fail("MULTI/EXEC", err)
				}
			}
			if len(f.Elems) != 2 {
				return fail("EXEC", fmt.Errorf("reply %q", f.Raw))
			}
			n, err := frameInt(f.Elems[0])
			if m, err2 := frameInt(f.Elems[1]); err != nil || err2 != nil || m != n {
				return fail("EXEC", fmt.Errorf("reply %q: the pair's counters differ", f.Raw))
			}
			l.execs = append(l.execs, ackIncr{pair, n, time.Now()})
		case r < 8:
			ctr := rng.IntN(crashCounters)
			l.incrSent[ctr]++
			f, err := rawDo(c, "INCR", "c:"+strconv.Itoa(ctr))
			if err != nil {
				return fail("INCR", err)
			}
			n, err := frameInt(f)
			if err != nil || f.Type != ':' {
				return fail("INCR", fmt.Errorf("reply %q", f.Raw))
			}
			l.incrs = append(l.incrs, ackIncr{ctr, n, time.Now()})
		default:
			key := fmt.Sprintf("o:%d:%d:%d", cycle, w, seq)
			f, err := rawDo(c, "ONCE.CLAIM", key, "LEASE", strconv.FormatInt(crashLease.Milliseconds(), 10))
			if err != nil {
				return fail("ONCE.CLAIM", err)
			}
			if len(f.Elems) != 2 || f.Elems[0].Str != "claimed" || f.Elems[1].Type != ':' {
				return fail("ONCE.CLAIM", fmt.Errorf("reply %q", f.Raw))
			}
			tok, _ := strconv.ParseInt(f.Elems[1].Str, 10, 64)
			rec := &ackOnce{key: key, token: tok, at: time.Now()}
			l.onces = append(l.onces, rec)
			l.tokens = append(l.tokens, ackToken{tok, rec.at})
			if rng.IntN(2) == 0 {
				continue // leave it running
			}
			answer := "answer-of-" + key
			rec.completing, rec.pendingAnswer = true, answer
			f, err = rawDo(c, "ONCE.COMPLETE", key, strconv.FormatInt(tok, 10), answer)
			if err != nil {
				return fail("ONCE.COMPLETE", err)
			}
			if f.Type != '+' {
				return fail("ONCE.COMPLETE", fmt.Errorf("reply %q", f.Raw))
			}
			rec.completing, rec.done, rec.answer, rec.at = false, true, answer, time.Now()
		}
	}
}

// crashLedger is everything acknowledged over all cycles.
type crashLedger struct {
	sets      map[string]ackSet
	maybeSets map[string]string
	incrs     [crashCounters][]ackIncr // every acknowledged value, by counter
	incrSent  [crashCounters]int64
	execs     [crashPairs][]ackIncr // every acknowledged EXEC, by pair
	execSent  [crashPairs]int64
	onces     map[string]*ackOnce
	tokens    []ackToken // of the last cycle
	maxToken  int64      // every token ever seen
}

func newCrashLedger() *crashLedger {
	return &crashLedger{sets: map[string]ackSet{}, maybeSets: map[string]string{}, onces: map[string]*ackOnce{}}
}

// merge adds a cycle's logs and returns how many acknowledged writes they
// hold.
func (lg *crashLedger) merge(logs []*workerLog) (acked int) {
	lg.tokens = lg.tokens[:0]
	for _, l := range logs {
		for k, a := range l.sets {
			lg.sets[k] = a
		}
		for k, v := range l.maybeSets {
			lg.maybeSets[k] = v
		}
		for _, a := range l.incrs {
			lg.incrs[a.counter] = append(lg.incrs[a.counter], a)
		}
		for i, n := range l.incrSent {
			lg.incrSent[i] += n
		}
		for _, a := range l.execs {
			lg.execs[a.counter] = append(lg.execs[a.counter], a)
		}
		for i, n := range l.execSent {
			lg.execSent[i] += n
		}
		for _, o := range l.onces {
			lg.onces[o.key] = o
			if o.done {
				acked++
			}
		}
		lg.tokens = append(lg.tokens, l.tokens...)
		acked += len(l.sets) + len(l.incrs) + len(l.execs) + len(l.onces)
	}
	return acked
}

// maxTokenBefore is the largest token of this cycle acknowledged before t
// (all of them for a zero t), and of every earlier cycle.
func (lg *crashLedger) maxTokenBefore(t time.Time) int64 {
	m := lg.maxToken
	for _, a := range lg.tokens {
		if t.IsZero() || a.at.Before(t) {
			m = max(m, a.token)
		}
	}
	return m
}

// crashCheck is what one verification found.
type crashCheck struct {
	checked  int
	lost     int           // acknowledged, not there
	lostOld  int           // acknowledged more than everysecGrace before the kill, not there
	oldest   time.Duration // the oldest lost write's age at the kill
	problems []string      // wrong whatever the policy: garbage, impossible values
}

func (cc *crashCheck) problem(format string, a ...any) {
	if len(cc.problems) < 20 {
		cc.problems = append(cc.problems, fmt.Sprintf(format, a...))
	}
}

// counter checks a counter's value n after the crash against the acks of
// the commands (cmd) that raised it: none above n may be lost, and n is
// not above the count sent. It returns the acks still held.
func (cc *crashCheck) counter(name, cmd string, n int64, acks []ackIncr, sent int64, killAt time.Time) []ackIncr {
	kept := acks[:0]
	for _, a := range acks {
		if a.val > n {
			cc.lose(a.at, killAt, fmt.Sprintf("%s = %d after the crash, %s acknowledged %d", name, n, cmd, a.val))
			continue
		}
		kept = append(kept, a)
	}
	if n > sent {
		cc.problem("%s = %d, more than the %d %ss ever sent", name, n, sent, cmd)
	}
	return kept
}

func (cc *crashCheck) lose(at, killAt time.Time, what string) {
	cc.lost++
	age := killAt.Sub(at)
	cc.oldest = max(cc.oldest, age)
	if age > everysecGrace {
		cc.lostOld++
		cc.problem("%s (acknowledged %v before the kill)", what, age.Round(time.Millisecond))
	}
}

// pipeline sends cmds in batches and returns one reply per command.
func pipeline(tb testing.TB, c *RawConn, cmds [][]string) []*Frame {
	tb.Helper()
	out := make([]*Frame, 0, len(cmds))
	const batch = 500
	for i := 0; i < len(cmds); i += batch {
		end := min(i+batch, len(cmds))
		var buf []byte
		for _, cmd := range cmds[i:end] {
			buf = append(buf, EncodeCommand(cmd...)...)
		}
		c.Send(buf)
		for range cmds[i:end] {
			out = append(out, c.ReadFrame())
		}
	}
	return out
}

// statusField reads a field of an ONCE.STATUS reply ("" when free).
func statusField(f *Frame, name string) string {
	for i := 0; i+1 < len(f.Elems); i += 2 {
		if f.Elems[i].Str == name {
			return f.Elems[i+1].Str
		}
	}
	return ""
}

// verify checks the restarted server against the ledger. What was lost is
// counted once and then forgotten, and what was in doubt (no reply) is
// settled as found, so later cycles check the state the server has.
func (lg *crashLedger) verify(tb testing.TB, addr string, killAt time.Time) crashCheck {
	tb.Helper()
	var cc crashCheck
	c := DialRaw(tb, addr)
	c.Timeout = 30 * time.Second
	defer c.Close()

	setKeys := slices.Collect(maps.Keys(lg.sets))
	maybeKeys := slices.Collect(maps.Keys(lg.maybeSets))
	onceKeys := slices.Collect(maps.Keys(lg.onces))
	var cmds [][]string
	for _, k := range setKeys {
		cmds = append(cmds, []string{"GET", k})
	}
	for _, k := range maybeKeys {
		cmds = append(cmds, []string{"GET", k})
	}
	for i := range crashCounters {
		cmds = append(cmds, []string{"GET", "c:" + strconv.Itoa(i)})
	}
	for i := range crashPairs {
		a, b := pairKeys(i)
		cmds = append(cmds, []string{"GET", a}, []string{"GET", b})
	}
	for _, k := range onceKeys {
		cmds = append(cmds, []string{"ONCE.STATUS", k})
		if o := lg.onces[k]; o.done || o.completing {
			// Reads a kept answer; never claims.
			cmds = append(cmds, []string{"ONCE.WAIT", k, "TIMEOUT", "1"})
		}
	}
	replies := pipeline(tb, c, cmds)
	next := func() *Frame { f := replies[0]; replies = replies[1:]; return f }

	// SET: every acknowledged key holds its value; a key sent without a
	// reply is absent or holds the value sent.
	for _, k := range setKeys {
		a, f := lg.sets[k], next()
		cc.checked++
		switch {
		case f.Null:
			cc.lose(a.at, killAt, "SET "+k+": acknowledged, gone after the crash")
			delete(lg.sets, k)
		case f.Str != a.val:
			cc.problem("SET %s: holds %q, acknowledged %q", k, f.Str, a.val)
		}
	}
	for _, k := range maybeKeys {
		if f := next(); !f.Null && f.Str != lg.maybeSets[k] {
			cc.problem("SET %s (sent, no reply): holds %q, sent %q", k, f.Str, lg.maybeSets[k])
		}
	}
	// INCR: never below the last acknowledged value, never above the
	// number of INCRs sent.
	for i := range crashCounters {
		f := next()
		n, err := frameInt(f)
		if err != nil {
			cc.problem("counter c:%d: %v", i, err)
			continue
		}
		cc.checked++
		lg.incrs[i] = cc.counter(fmt.Sprintf("counter c:%d", i), "INCR", n, lg.incrs[i], lg.incrSent[i], killAt)
	}
	// MULTI/EXEC: both counters of a pair moved together (KV-6: a crash
	// keeps a transaction whole or not at all); never below the last
	// acknowledged EXEC, never above the EXECs sent.
	for i := range crashPairs {
		fa, fb := next(), next()
		a, errA := frameInt(fa)
		b, errB := frameInt(fb)
		if errA != nil || errB != nil {
			cc.problem("pair %d: %v %v", i, errA, errB)
			continue
		}
		cc.checked++
		if a != b {
			cc.problem("pair %d: %d and %d after the crash: an EXEC was kept in part", i, a, b)
		}
		lg.execs[i] = cc.counter(fmt.Sprintf("pair %d", i), "EXEC", a, lg.execs[i], lg.execSent[i], killAt)
	}
	// ONCE: an acknowledged answer is kept; an acknowledged claim is still
	// running (its lease has not passed) with its token.
	for _, k := range onceKeys {
		o := lg.onces[k]
		status := next()
		st, tok := statusField(status, "state"), statusField(status, "token")
		var wait *Frame
		if o.done || o.completing {
			wait = next()
		}
		cc.checked++
		switch {
		case st == "done":
			want := o.answer
			if !o.done {
				want = o.pendingAnswer
			}
			if len(wait.Elems) != 2 || wait.Elems[0].Str != "done" || wait.Elems[1].Str != want {
				cc.problem("ONCE %s: done, but ONCE.WAIT answers %q, want the answer %q", k, wait.Raw, want)
			}
			o.done, o.completing, o.answer = true, false, want
		case st == "running" && o.done:
			cc.lose(o.at, killAt, "ONCE "+k+": answer acknowledged, running again after the crash")
			o.done = false
		case st == "running" && tok != strconv.FormatInt(o.token, 10):
			cc.problem("ONCE %s: running with token %s, acknowledged claim had token %d", k, tok, o.token)
		case st == "running":
			o.completing = false
		case st == "":
			what := "claim"
			if o.done {
				what = "answer"
			}
			cc.lose(o.at, killAt, fmt.Sprintf("ONCE %s: %s (token %d) acknowledged, key free after the crash", k, what, o.token))
			delete(lg.onces, k)
		default:
			cc.problem("ONCE %s: state %q", k, st)
		}
	}
	return cc
}

// pairKeys are the keys of pair i's two counters.
func pairKeys(i int) (a, b string) {
	return "p:" + strconv.Itoa(i) + ":a", "p:" + strconv.Itoa(i) + ":b"
}

// TestCrash runs kill -9 cycles under appendfsync always and everysec.
func TestCrash(t *testing.T) {
	t.Parallel()
	t.Run("always", func(t *testing.T) {
		t.Parallel()
		testCrash(t, "always", crashParamsFromEnv(t, 1500*time.Millisecond, 0))
	})
	t.Run("everysec", func(t *testing.T) {
		t.Parallel()
		// Long enough that writes older than everysecGrace exist at the
		// kill; paced, or the volume to verify grows beyond the time
		// budget (everysec takes ~25k writes/s here).
		testCrash(t, "everysec", crashParamsFromEnv(t, 2*everysecGrace+time.Second, 2*time.Millisecond))
	})
}

func testCrash(t *testing.T, policy string, p crashParams) {
	srv := StartOncekv(t, "--appendfsync", policy, "--loglevel", "warning")
	lg := newCrashLedger()
	var acked, lostPerCycle []int
	checked := 0
	for cycle := range p.cycles {
		stop := make(chan struct{})
		var killed atomic.Bool
		logs := make([]*workerLog, p.conns)
		var wg sync.WaitGroup
		for w := range p.conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				logs[w] = runCrashWorker(srv.Addr, cycle, w, p.pace, stop, killed.Load)
			}()
		}
		// Kill at a random moment of the second half of the load.
		time.Sleep(p.load/2 + rand.N(p.load/2))
		killed.Store(true)
		killAt := time.Now()
		srv.Kill(t)
		close(stop)
		wg.Wait()
		ops := 0
		for _, l := range logs {
			ops += l.ops
			if l.err != nil {
				t.Errorf("%s cycle %d: %v", policy, cycle, l.err)
			}
		}
		n := lg.merge(logs)
		acked = append(acked, n)
		promised := lg.maxTokenBefore(killAt.Add(-everysecGrace))
		seen := lg.maxTokenBefore(time.Time{})

		began := time.Now()
		srv = srv.Restart(t) // fails the test if it does not open by itself
		took := time.Since(began)

		vbegan := time.Now()
		cc := lg.verify(t, srv.Addr, killAt)
		vtook := time.Since(vbegan)
		checked = cc.checked
		lostPerCycle = append(lostPerCycle, cc.lost)
		t.Logf("%s cycle %d: %d ops, %d writes acknowledged; %d checked after the restart (all cycles); lost %d (oldest %v before the kill); restart %v, verify %v",
			policy, cycle, ops, n, cc.checked, cc.lost, cc.oldest.Round(100*time.Microsecond), took.Round(time.Millisecond), vtook.Round(time.Millisecond))
		for _, pr := range cc.problems {
			t.Errorf("%s cycle %d: %s", policy, cycle, pr)
		}
		if policy == "always" && cc.lost > 0 {
			t.Errorf("%s cycle %d: %d acknowledged writes lost (KV-6: none may be)", policy, cycle, cc.lost)
		}

		// Tokens only grow across the crash (KV-13, KV-16): a claim now gets
		// a token above every token handed out before.
		c := DialRaw(t, srv.Addr)
		f, err := rawDo(c, "ONCE.CLAIM", fmt.Sprintf("probe:%d", cycle), "LEASE", "60000")
		if err != nil || len(f.Elems) != 2 || f.Elems[0].Str != "claimed" {
			t.Fatalf("probe claim: %v %v", f, err)
		}
		c.Close()
		tok, _ := strconv.ParseInt(f.Elems[1].Str, 10, 64)
		switch {
		case policy == "always" && tok <= seen:
			t.Errorf("%s cycle %d: first token after the restart %d, not above %d handed out before (KV-13)", policy, cycle, tok, seen)
		case tok <= promised:
			t.Errorf("%s cycle %d: first token after the restart %d, not above %d handed out %v before the kill", policy, cycle, tok, promised, everysecGrace)
		case tok <= seen:
			t.Logf("%s cycle %d: first token after the restart %d repeats a token (max %d) acknowledged within %v of the kill", policy, cycle, tok, seen, everysecGrace)
		}
		lg.maxToken = max(seen, tok)
		if t.Failed() {
			t.Logf("server output (tail):\n%s", srv.p.tail(3000))
			return
		}
	}
	total := 0
	for _, n := range acked {
		total += n
	}
	t.Logf("%s summary: %d kill -9 cycles of %v with %d connections (pace %v); %d writes acknowledged; %d checked after the last restart; lost per cycle %v",
		policy, p.cycles, p.load, p.conns, p.pace, total, checked, lostPerCycle)
}
