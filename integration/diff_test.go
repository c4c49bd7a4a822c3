package integration

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"
)

// Mode says how a step's two replies are compared.
type Mode int

const (
	// Exact compares the raw replies byte for byte (the default).
	Exact Mode = iota
	// Sorted compares an array (or set) reply as a multiset of elements,
	// for replies whose order differs by design (KEYS). Other replies are
	// compared exactly.
	Sorted
	// Approx compares integer replies within ±Tol (TTL, PTTL); other
	// replies exactly.
	Approx
	// TypeOnly compares the replies' shapes: types, nullness and element
	// counts, recursively, but not values (TIME, CLIENT ID).
	TypeOnly
	// NoCompare sends the command to both sides and reads both replies
	// without comparing them.
	NoCompare
	// ScanAll runs a SCAN-like command (its Args[Cursor] is the cursor) to
	// the end on each side and compares the union of the keys returned,
	// sorted and without duplicates. If the first reply is not a
	// [cursor, keys] pair (an error, say), it is compared exactly.
	ScanAll
)

func (m Mode) String() string {
	return [...]string{"exact", "sorted", "approx", "type-only", "no-compare", "scan-all"}[m]
}

// Step is one command of a script, or a pause.
type Step struct {
	Args []string
	// Raw, when non-nil, is sent as it is instead of Args (one reply is
	// read; an empty Raw sends nothing and just reads the next reply).
	Raw  []byte
	Mode Mode
	// Tol is Approx's tolerance.
	Tol int64
	// Cursor is the index of ScanAll's cursor argument (1 for SCAN).
	Cursor int
	// Conn picks the connection (0, 1, 2…) of the script the step runs on;
	// each is opened on first use, on both sides.
	Conn int
	// Sleep, when non-zero, makes the step a pause with no command.
	Sleep time.Duration
	// Proto, when non-zero, runs the step only in that protocol (2 or 3).
	Proto int
	// Closed makes the step a check, sending nothing, that both sides
	// closed connection Conn (CLIENT KILL); the connection is then
	// forgotten, so that a later step on it dials afresh.
	Closed bool
	// Held sends the command on both sides and checks that neither
	// answers it within heldFor (CLIENT PAUSE holds it); a readNext step
	// on the same connection reads and compares the answer later.
	Held bool
	// Alike, when non-nil, accepts an Exact step's replies (redis's a,
	// the other's b) whose bytes differ: a deliberate difference the
	// README states, taught to the comparison narrowly.
	Alike func(a, b *Frame) bool
}

// On returns the step run on connection n.
func (s Step) On(n int) Step { s.Conn = n; return s }

// InResp returns the step run only in protocol proto (2 or 3).
func (s Step) InResp(proto int) Step { s.Proto = proto; return s }

func (s Step) String() string {
	switch {
	case s.Sleep > 0:
		return fmt.Sprintf("sleep %v", s.Sleep)
	case s.Closed:
		return fmt.Sprintf("conn %d closed", s.Conn)
	case s.Held:
		return fmt.Sprintf("conn %d: %s (held)", s.Conn, fmtArgs(s.Args))
	case s.Raw != nil && len(s.Raw) == 0:
		return "read the next reply"
	case s.Raw != nil:
		return fmt.Sprintf("raw %q", s.Raw)
	}
	str := fmtArgs(s.Args)
	if s.Mode != Exact {
		str += " (" + s.Mode.String() + ")"
	}
	if s.Conn != 0 {
		str = fmt.Sprintf("conn %d: %s", s.Conn, str)
	}
	return str
}

// Script is a named list of steps, run on a flushed server with fresh
// connections.
type Script struct {
	Name  string
	Steps []Step
}

// Step constructors, to keep the tables short.

// cmd is a step compared exactly.
func cmd(args ...string) Step { return Step{Args: args} }

// sorted is a step whose array reply is compared as a multiset.
func sorted(args ...string) Step { return Step{Args: args, Mode: Sorted} }

// approx is a step whose integer reply is compared within ±tol.
func approx(tol int64, args ...string) Step { return Step{Args: args, Mode: Approx, Tol: tol} }

// typeOnly is a step whose reply is compared by shape only.
func typeOnly(args ...string) Step { return Step{Args: args, Mode: TypeOnly} }

// send is a step whose replies are not compared.
func send(args ...string) Step { return Step{Args: args, Mode: NoCompare} }

// scan is a SCAN step (cursor at index 1) iterated to the end.
func scan(args ...string) Step { return Step{Args: args, Mode: ScanAll, Cursor: 1} }

// raw is a step that sends bytes as they are and compares the reply exactly.
func raw(b string) Step { return Step{Raw: []byte(b)} }

// readNext is a step that sends nothing and compares the next reply (after
// a reply that comes in two frames, such as a push and then the answer).
func readNext() Step { return Step{Raw: []byte{}} }

// closed is a step that checks that both sides closed connection n.
func closed(n int) Step { return Step{Closed: true, Conn: n} }

// held is a step that sends a command both sides must hold (not answer
// yet); see Step.Held.
func held(args ...string) Step { return Step{Args: args, Held: true} }

// heldFor is how long a held step's command must go unanswered.
const heldFor = 300 * time.Millisecond

// sleep is a pause of ms milliseconds.
func sleep(ms int) Step { return Step{Sleep: time.Duration(ms) * time.Millisecond} }

// diffReadTimeout bounds each reply in a diff script: a server that hangs
// fails the script within it.
const diffReadTimeout = 3 * time.Second

// DiffPair is a real redis-server and the server under test.
type DiffPair struct {
	Redis string
	// Other is the address of the server under test; OtherName is
	// "oncekv", or "redis2" with ONCEKV_DIFF_AGAINST=redis.
	Other     string
	OtherName string
	// O is the oncekv process (nil with ONCEKV_DIFF_AGAINST=redis).
	O *Oncekv

	tb       testing.TB // owns the servers (their cleanups)
	reported bool       // O's exit was reported
}

// NewDiffPair starts a redis-server and an oncekv (or a second
// redis-server with ONCEKV_DIFF_AGAINST=redis), stopped by tb's cleanup.
func NewDiffPair(tb testing.TB) *DiffPair {
	tb.Helper()
	p := &DiffPair{Redis: StartRedis(tb), tb: tb}
	if os.Getenv("ONCEKV_DIFF_AGAINST") == "redis" {
		p.Other, p.OtherName = StartRedis(tb), "redis2"
		return p
	}
	p.O = StartOncekv(tb)
	p.Other, p.OtherName = p.O.Addr, "oncekv"
	return p
}

// noteFailure is called when the server under test failed to answer: if
// its process exits within a second, it reports that with its output.
func (p *DiffPair) noteFailure(t *testing.T) {
	if p.O == nil || p.reported {
		return
	}
	select {
	case <-p.O.p.done:
	case <-time.After(time.Second):
		return
	}
	p.reported = true
	t.Errorf("oncekv exited (%v); output (tail):\n%s", p.O.p.c.Err(), p.O.p.tail(6000))
}

// alive restarts the server under test, on the same port and directory, if
// it died (reporting it, if that was not done yet).
func (p *DiffPair) alive(t *testing.T) {
	if p.O == nil || !p.O.Exited() {
		return
	}
	if !p.reported {
		t.Errorf("oncekv exited (%v) before this script; output (tail):\n%s", p.O.p.c.Err(), p.O.p.tail(6000))
	}
	t.Logf("restarting oncekv on %s", p.O.Addr)
	var err error
	var o *Oncekv
	for attempt := 0; attempt < 3; attempt++ {
		if o, err = startOncekv(p.tb, p.O.bin, p.O.Dir, p.O.Port, p.O.Args, p.O.Env...); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("restarting oncekv: %v", err)
	}
	p.O, p.Other, p.reported = o, o.Addr, false
}

// RunDiffScripts runs each script against both servers of a fresh pair, in
// RESP2 and again in RESP3, as subtests resp2/<name> and resp3/<name>.
func RunDiffScripts(t *testing.T, scripts []Script) {
	t.Helper()
	NewDiffPair(t).RunScripts(t, scripts)
}

// RunScripts runs each script on the pair, in RESP2 and again in RESP3, as
// subtests resp2/<name> and resp3/<name>.
func (p *DiffPair) RunScripts(t *testing.T, scripts []Script) {
	t.Helper()
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			for _, s := range scripts {
				t.Run(s.Name, func(t *testing.T) { p.Run(t, s, proto) })
			}
		})
	}
}

// side is one server's connections in a script.
type side struct {
	name  string
	addr  string
	conns map[int]*RawConn
}

// Run runs one script on the pair in protocol proto (2 or 3): FLUSHALL,
// then each step on both sides, comparing replies as the step says.
func (p *DiffPair) Run(t *testing.T, s Script, proto int) {
	t.Helper()
	p.alive(t)
	r := &scriptRun{t: t, pair: p, script: s, proto: proto,
		sides: [2]*side{
			{name: "redis", addr: p.Redis, conns: map[int]*RawConn{}},
			{name: p.OtherName, addr: p.Other, conns: map[int]*RawConn{}},
		}}
	for _, sd := range r.sides {
		c := r.dial(sd, -1)
		if c == nil {
			return
		}
		reply, err := c.TryDo("FLUSHALL")
		if err != nil || string(reply) != "+OK\r\n" {
			r.failed(sd)
			t.Fatalf("%s: FLUSHALL before the script: %q %v", sd.name, reply, err)
		}
		c.Close()
	}
	for i, st := range s.Steps {
		if !r.step(i, st) {
			return
		}
	}
	// A last PING on every connection catches extra, unread replies.
	var open []int
	for n := range r.sides[0].conns {
		if r.sides[1].conns[n] != nil {
			open = append(open, n)
		}
	}
	sort.Ints(open)
	for _, n := range open {
		if !r.step(len(s.Steps), cmd("PING").On(n)) {
			return
		}
	}
}

type scriptRun struct {
	t      *testing.T
	pair   *DiffPair
	script Script
	proto  int
	sides  [2]*side
	fails  int
}

// dial opens a connection to sd and, in RESP3, switches it with HELLO 3.
// n < 0 is a setup connection, not recorded.
func (r *scriptRun) dial(sd *side, n int) *RawConn {
	r.t.Helper()
	c, err := TryDialRaw(r.t, sd.addr)
	if err != nil {
		r.failed(sd)
		r.t.Fatalf("%s: script %q: dial %s: %v", sd.name, r.script.Name, sd.addr, err)
		return nil
	}
	c.Timeout = diffReadTimeout
	if r.proto == 3 {
		f, err := c.TryReadFrameAfter(EncodeCommand("HELLO", "3"))
		if err != nil || f.Type != '%' {
			var got []byte
			if f != nil {
				got = f.Raw
			}
			r.failed(sd)
			r.t.Fatalf("%s: script %q: HELLO 3 did not answer a map: %q %v", sd.name, r.script.Name, got, err)
			return nil
		}
	}
	if n >= 0 {
		sd.conns[n] = c
	}
	return c
}

// failed notes that sd did not answer; if sd is the server under test and
// its process died, that is reported.
func (r *scriptRun) failed(sd *side) {
	if sd == r.sides[1] {
		r.pair.noteFailure(r.t)
	}
}

// conn returns connection n of sd, opening it on first use.
func (r *scriptRun) conn(sd *side, n int) *RawConn {
	if c := sd.conns[n]; c != nil {
		return c
	}
	return r.dial(sd, n)
}

// reply is one side's answer to a step.
type reply struct {
	f   *Frame
	err error
}

func (rp reply) String() string {
	if rp.err != nil {
		return fmt.Sprintf("<error: %v>", rp.err)
	}
	return fmt.Sprintf("%q", rp.f.Raw)
}

// maxFails stops a script after that many mismatches.
const maxFails = 20

// step runs step i; it returns false when the script cannot go on.
func (r *scriptRun) step(i int, st Step) bool {
	r.t.Helper()
	if st.Proto != 0 && st.Proto != r.proto {
		return true
	}
	if st.Sleep > 0 {
		time.Sleep(st.Sleep)
		return true
	}
	if st.Mode == ScanAll {
		return r.scanStep(i, st)
	}
	if st.Closed {
		return r.afterQuit(i, st)
	}
	if st.Held {
		return r.heldStep(i, st)
	}
	var replies [2]reply
	for k, sd := range r.sides {
		c := r.conn(sd, st.Conn)
		if c == nil {
			return false
		}
		out := st.Raw
		if out == nil {
			out = EncodeCommand(st.Args...)
		}
		replies[k].f, replies[k].err = c.TryReadFrameAfter(out)
	}
	if replies[0].err != nil {
		r.t.Fatalf("script %q step %d %s: redis itself failed: %v (a bad step?)", r.script.Name, i, st, replies[0].err)
		return false
	}
	if replies[1].err != nil {
		r.mismatch(i, st, replies, "")
		r.failed(r.sides[1])
		return false
	}
	if why := compare(st, replies[0].f, replies[1].f); why != "" {
		r.mismatch(i, st, replies, why)
		if r.fails >= maxFails {
			r.t.Errorf("script %q: stopping after %d mismatches", r.script.Name, r.fails)
			return false
		}
	}
	if len(st.Args) > 0 && strings.EqualFold(st.Args[0], "QUIT") {
		return r.afterQuit(i, st)
	}
	return true
}

// heldStep sends a held step's command on both sides and checks that
// neither answers it within heldFor.
func (r *scriptRun) heldStep(i int, st Step) bool {
	r.t.Helper()
	var cs [2]*RawConn
	for k, sd := range r.sides {
		if cs[k] = r.conn(sd, st.Conn); cs[k] == nil {
			return false
		}
		if err := cs[k].TrySend(EncodeCommand(st.Args...)); err != nil {
			r.t.Fatalf("script %q step %d %s: %s: send: %v", r.script.Name, i, st, sd.name, err)
			return false
		}
	}
	time.Sleep(heldFor)
	for k, sd := range r.sides {
		c := cs[k]
		_ = c.Conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if _, err := c.r.Peek(1); err == nil {
			var got []byte
			if f, err := c.TryReadFrame(); err == nil {
				got = f.Raw
			}
			if k == 0 {
				r.t.Fatalf("script %q step %d %s: redis itself answered %q (a bad step?)", r.script.Name, i, st, got)
				return false
			}
			r.fails++
			r.t.Errorf("script %q step %d %s: %s answered %q; redis holds it", r.script.Name, i, st, sd.name, got)
			return false
		}
	}
	return true
}

// afterQuit checks that both sides closed the connection QUIT was sent on
// (or the one a closed step names), and forgets it, so that a later step
// on it dials afresh.
func (r *scriptRun) afterQuit(i int, st Step) bool {
	r.t.Helper()
	ok := true
	for _, sd := range r.sides {
		c := sd.conns[st.Conn]
		if c == nil {
			r.fails++
			r.t.Errorf("script %q step %d %s: connection %d was never opened", r.script.Name, i, st, st.Conn)
			return false
		}
		c.Timeout = time.Second
		if f, err := c.TryReadFrame(); err == nil {
			r.fails++
			r.t.Errorf("script %q step %d %s: %s did not close the connection; sent %q",
				r.script.Name, i, st, sd.name, f.Raw)
			ok = false
		}
		c.Close()
		delete(sd.conns, st.Conn)
	}
	return ok
}

func (r *scriptRun) mismatch(i int, st Step, replies [2]reply, why string) {
	r.t.Helper()
	r.fails++
	if why != "" {
		why = " (" + why + ")"
	}
	r.t.Errorf("script %q (resp%d) step %d %s%s:\n\t%-7s %s\n\t%-7s %s",
		r.script.Name, r.proto, i, st, why,
		r.sides[0].name+":", replies[0], r.sides[1].name+":", replies[1])
}

// compare returns why the replies differ under st's mode, or "".
func compare(st Step, a, b *Frame) string {
	switch st.Mode {
	case Sorted:
		if a.IsAggregate() && a.Type == b.Type && b.IsAggregate() {
			if !bytes.Equal(sortedElems(a), sortedElems(b)) {
				return "as multisets"
			}
			return ""
		}
	case Approx:
		x, okA := a.Int()
		y, okB := b.Int()
		if okA && okB {
			if x-y > st.Tol || y-x > st.Tol {
				return fmt.Sprintf("differ by more than %d", st.Tol)
			}
			return ""
		}
	case TypeOnly:
		if sa, sb := a.Shape(), b.Shape(); sa != sb {
			return fmt.Sprintf("shapes %s vs %s", sa, sb)
		}
		return ""
	case NoCompare:
		return ""
	}
	if !bytes.Equal(a.Raw, b.Raw) && (st.Alike == nil || !st.Alike(a, b)) {
		return "bytes"
	}
	return ""
}

// sortedElems returns the raw encodings of f's elements, sorted and joined
// (for maps, the key/value pairs are kept together).
func sortedElems(f *Frame) []byte {
	per := 1
	if f.Type == '%' {
		per = 2
	}
	var items []string
	for i := 0; i+per <= len(f.Elems); i += per {
		var b []byte
		for _, e := range f.Elems[i : i+per] {
			b = append(b, e.Raw...)
		}
		items = append(items, string(b))
	}
	sort.Strings(items)
	return []byte(strings.Join(items, ""))
}

// maxScanCalls bounds a ScanAll iteration, in case a cursor never returns
// to 0.
const maxScanCalls = 10000

// scanStep runs a ScanAll step.
func (r *scriptRun) scanStep(i int, st Step) bool {
	r.t.Helper()
	var firsts [2]reply
	var unions [2][]string
	var calls [2]int
	for k, sd := range r.sides {
		c := r.conn(sd, st.Conn)
		if c == nil {
			return false
		}
		args := append([]string(nil), st.Args...)
		args[st.Cursor] = "0"
		seen := map[string]bool{}
		for {
			calls[k]++
			f, err := c.TryReadFrameAfter(EncodeCommand(args...))
			if calls[k] == 1 {
				firsts[k] = reply{f, err}
			}
			if err != nil {
				if k == 0 {
					r.t.Fatalf("script %q step %d %s: redis itself failed: %v", r.script.Name, i, st, err)
				}
				r.mismatch(i, st, [2]reply{firsts[0], {err: err}}, fmt.Sprintf("call %d, cursor %q", calls[k], args[st.Cursor]))
				r.failed(sd)
				return false
			}
			cursor, keys, ok := scanReply(f)
			if !ok {
				if calls[k] > 1 {
					r.mismatch(i, st, [2]reply{firsts[0], {f: f}}, fmt.Sprintf("call %d, cursor %q: not a [cursor, keys] reply", calls[k], args[st.Cursor]))
					return false
				}
				break
			}
			for _, key := range keys {
				seen[key] = true
			}
			if cursor == "0" {
				break
			}
			if calls[k] >= maxScanCalls {
				r.fails++
				r.t.Errorf("script %q step %d %s: %s: cursor not back to 0 after %d calls", r.script.Name, i, st, sd.name, calls[k])
				return false
			}
			args[st.Cursor] = cursor
		}
		for key := range seen {
			unions[k] = append(unions[k], key)
		}
		sort.Strings(unions[k])
	}
	_, _, ok0 := scanReply(firsts[0].f)
	_, _, ok1 := scanReply(firsts[1].f)
	if !ok0 || !ok1 {
		if !bytes.Equal(firsts[0].f.Raw, firsts[1].f.Raw) {
			r.mismatch(i, st, firsts, "first reply")
		}
		return true
	}
	if fmt.Sprint(unions[0]) != fmt.Sprint(unions[1]) {
		r.fails++
		r.t.Errorf("script %q (resp%d) step %d %s: the keys differ:\n\t%-7s %q (%d calls)\n\t%-7s %q (%d calls)",
			r.script.Name, r.proto, i, st, r.sides[0].name+":", unions[0], calls[0], r.sides[1].name+":", unions[1], calls[1])
	}
	return true
}

// scanReply splits a SCAN-like reply [cursor, [keys…]].
func scanReply(f *Frame) (cursor string, keys []string, ok bool) {
	if f == nil || f.Type != '*' || f.Null || len(f.Elems) != 2 {
		return "", nil, false
	}
	c, ks := f.Elems[0], f.Elems[1]
	if c.Type != '$' || c.Null || !ks.IsAggregate() {
		return "", nil, false
	}
	for _, k := range ks.Elems {
		keys = append(keys, string(k.Raw))
	}
	return c.Str, keys, true
}
