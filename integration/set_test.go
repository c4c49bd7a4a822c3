package integration

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Sets beyond what a diff with redis-server can show: survival across
// restarts and crashes (KV-6), concurrent moves (KV-1), the ONCE
// engine's type checks, and the random commands' properties.

// setMembers runs SMEMBERS key and returns the members sorted.
func setMembers(tb testing.TB, c *RawConn, key string) []string {
	tb.Helper()
	f, err := rawDo(c, "SMEMBERS", key)
	if err != nil || (f.Type != '*' && f.Type != '~') {
		tb.Fatalf("SMEMBERS %s: %v, %v", key, f, err)
	}
	var out []string
	for _, e := range f.Elems {
		out = append(out, e.Str)
	}
	slices.Sort(out)
	return out
}

// mustDo sends a command and returns its reply, failing on a connection
// error or an error reply.
func mustDo(tb testing.TB, c *RawConn, args ...string) *Frame {
	tb.Helper()
	f, err := rawDo(c, args...)
	if err != nil || f.Type == '-' {
		tb.Fatalf("%s: %v, %v", fmtArgs(args), f, err)
	}
	return f
}

// TestSetRestart: sets, their encodings and deadlines survive a graceful
// restart, and a kill -9 under appendfsync always (KV-6).
func TestSetRestart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		down func(*Oncekv, testing.TB)
	}{
		{"graceful", nil, (*Oncekv).Stop},
		{"kill9-always", []string{"--appendfsync", "always"}, (*Oncekv).Kill},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := StartOncekv(t, tc.args...)
			c := DialRaw(t, o.Addr)
			want := map[string][]string{
				"intset":    {"-5", "1", "7"},
				"hashtable": {"", "a", "b\x00\r\n"},
				"big":       ints(1, 600),
				"shrunk":    {"1"},
			}
			for k, ms := range want {
				mustDo(t, c, with(ms, "SADD", k)...)
			}
			// An object changed member by member, with a member too long
			// for an element's name.
			long := strings.Repeat("L", 5000)
			want["edited"] = append(words("e", 700)[2:], "-3", long)
			mustDo(t, c, with(words("e", 700), "SADD", "edited")...)
			mustDo(t, c, "SREM", "edited", "e0", "e1")
			mustDo(t, c, "SADD", "edited", "-3", long)
			mustDo(t, c, "SADD", "shrunk", "x")
			mustDo(t, c, "SREM", "shrunk", "x")
			mustDo(t, c, "EXPIRE", "intset", "1000")
			mustDo(t, c, "SADD", "gone", "1")
			mustDo(t, c, "SPOP", "gone")
			encodings := map[string]string{"intset": "intset", "hashtable": "hashtable", "big": "hashtable", "shrunk": "hashtable", "edited": "hashtable"}
			tc.down(o, t)
			o = o.Restart(t)
			c = DialRaw(t, o.Addr)
			for k, ms := range want {
				ms = slices.Clone(ms)
				slices.Sort(ms)
				if got := setMembers(t, c, k); !slices.Equal(got, ms) {
					t.Errorf("after the restart, SMEMBERS %s = %.80q, want %.80q", k, got, ms)
				}
				if f := mustDo(t, c, "OBJECT", "ENCODING", k); f.Str != encodings[k] {
					t.Errorf("after the restart, OBJECT ENCODING %s = %s, want %s", k, f.Str, encodings[k])
				}
			}
			if f := mustDo(t, c, "TTL", "intset"); f.Str == "-1" || f.Str == "-2" {
				t.Errorf("after the restart, TTL intset = %s, want its deadline", f.Str)
			}
			if f := mustDo(t, c, "EXISTS", "gone"); f.Str != "0" {
				t.Errorf("after the restart, a set emptied by SPOP exists")
			}
		})
	}
}

// TestSetConcurrentMoves: clients on several connections SMOVE members
// between two sets, SADD them back and SREM them, at once; every command
// is atomic (KV-1), so no member is ever lost or doubled: the two sets'
// SCARDs always sum to the members in play, and at the end each member is
// in exactly one of them.
func TestSetConcurrentMoves(t *testing.T) {
	t.Parallel()
	const members, workers, rounds = 40, 6, 300
	o := StartOncekv(t)
	setup := DialRaw(t, o.Addr)
	all := words("m", members)
	mustDo(t, setup, with(all, "SADD", "a")...)
	var wg sync.WaitGroup
	errs := make(chan error, workers+1)
	conns := dialRawN(t, o.Addr, workers+1)
	for w := range workers {
		c := conns[w]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				m := all[(w*7+i)%members]
				src, dst := "a", "b"
				if (w+i)%2 == 1 {
					src, dst = dst, src
				}
				// A member in neither set is never made; a member moved
				// away by another client just answers 0.
				if _, err := rawDo(c, "SMOVE", src, dst, m); err != nil {
					errs <- err
					return
				}
				// SREM from both then SADD in one transaction: the
				// member stays in play, in one set.
				for _, args := range [][]string{{"MULTI"}, {"SREM", "a", m}, {"SREM", "b", m}, {"SADD", dst, m}, {"EXEC"}} {
					if _, err := rawDo(c, args...); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	// A watcher checks the sum while they run: SCARD of both in one
	// MULTI, which runs in one transaction.
	stop := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Add(1)
	go func() {
		defer watcher.Done()
		c := conns[workers]
		for {
			select {
			case <-stop:
				return
			default:
			}
			rawDo(c, "MULTI")
			rawDo(c, "SCARD", "a")
			rawDo(c, "SCARD", "b")
			f, err := rawDo(c, "EXEC")
			if err != nil || len(f.Elems) != 2 {
				errs <- fmt.Errorf("EXEC of two SCARDs: %v, %v", f, err)
				return
			}
			x, _ := f.Elems[0].Int()
			y, _ := f.Elems[1].Int()
			if x+y != members {
				errs <- fmt.Errorf("SCARD a + SCARD b = %d + %d, want %d", x, y, members)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	close(stop)
	watcher.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	a, b := setMembers(t, setup, "a"), setMembers(t, setup, "b")
	both := append(slices.Clone(a), b...)
	slices.Sort(both)
	want := slices.Clone(all)
	slices.Sort(want)
	if !slices.Equal(both, want) {
		t.Errorf("a ∪ b = %q (%d + %d), want each of the %d members once", both, len(a), len(b), members)
	}
}

// TestSetOnceWrongType: the ONCE commands on a set and the set commands
// on a ONCE record answer Redis's WRONGTYPE; neither value changes.
func TestSetOnceWrongType(t *testing.T) {
	t.Parallel()
	o := StartOncekv(t)
	c := DialRaw(t, o.Addr)
	const wrong = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
	mustDo(t, c, "SADD", "set", "a")
	mustDo(t, c, "ONCE.CLAIM", "rec")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"claim a set", []string{"ONCE.CLAIM", "set"}},
		{"status of a set", []string{"ONCE.STATUS", "set"}},
		{"complete a set", []string{"ONCE.COMPLETE", "set", "1", "x"}},
		{"abort a set", []string{"ONCE.ABORT", "set", "1"}},
		{"extend a set", []string{"ONCE.EXTEND", "set", "1", "LEASE", "1000"}},
		{"wait on a set", []string{"ONCE.WAIT", "set", "TIMEOUT", "10"}},
		{"SADD to a record", []string{"SADD", "rec", "a"}},
		{"SMEMBERS of a record", []string{"SMEMBERS", "rec"}},
		{"SMOVE into a record", []string{"SMOVE", "set", "rec", "a"}},
		{"SINTER with a record", []string{"SINTER", "set", "rec"}},
		{"SUNIONSTORE from a record", []string{"SUNIONSTORE", "d", "rec"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.Do(tc.args...); string(got) != wrong {
				t.Errorf("%s: %q, want %q", fmtArgs(tc.args), got, wrong)
			}
		})
	}
	if got := setMembers(t, c, "set"); !slices.Equal(got, []string{"a"}) {
		t.Errorf("SMEMBERS set = %q after the refused commands", got)
	}
	if f := mustDo(t, c, "TYPE", "rec"); f.Str != "once" {
		t.Errorf("TYPE rec = %s after the refused commands", f.Str)
	}
}

// TestSetRandomProperties: SPOP and SRANDMEMBER answer members of the
// set, distinct ones where Redis promises that, as many as asked; SPOP
// removes what it answers; SRANDMEMBER with a negative count repeats.
func TestSetRandomProperties(t *testing.T) {
	t.Parallel()
	o := StartOncekv(t, "--proto-max-bulk-len", "1mb")
	c := DialRaw(t, o.Addr)
	for _, tc := range []struct {
		name    string
		members []string
	}{
		{"intset", ints(1, 20)},
		{"hashtable", words("w", 20)},
		{"large", ints(1, 700)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "r:" + tc.name
			mustDo(t, c, with(tc.members, "SADD", key)...)
			in := map[string]bool{}
			for _, m := range tc.members {
				in[m] = true
			}
			check := func(args []string, n int, distinct bool) []string {
				t.Helper()
				f := mustDo(t, c, args...)
				if len(f.Elems) != n {
					t.Fatalf("%s: %d members, want %d", fmtArgs(args), len(f.Elems), n)
				}
				seen := map[string]bool{}
				var out []string
				for _, e := range f.Elems {
					if !in[e.Str] {
						t.Fatalf("%s: %q is not a member", fmtArgs(args), e.Str)
					}
					if distinct && seen[e.Str] {
						t.Fatalf("%s: %q twice", fmtArgs(args), e.Str)
					}
					seen[e.Str] = true
					out = append(out, e.Str)
				}
				return out
			}
			check([]string{"SRANDMEMBER", key, "5"}, 5, true)
			// 200 draws with repetition from 20+ members repeat one at
			// least once unless the draws are not random.
			reps := check([]string{"SRANDMEMBER", key, "-200"}, 200, false)
			if len(tc.members) <= 20 && len(slices.Compact(slices.Sorted(slices.Values(reps)))) == 200 {
				t.Errorf("SRANDMEMBER -200 of %d members repeated none", len(tc.members))
			}
			if f := mustDo(t, c, "SRANDMEMBER", key); !in[f.Str] {
				t.Errorf("SRANDMEMBER: %q is not a member", f.Str)
			}
			popped := check([]string{"SPOP", key, "3"}, 3, true)
			f := mustDo(t, c, "SPOP", key)
			popped = append(popped, f.Str)
			for _, m := range popped {
				if !in[m] {
					t.Fatalf("SPOP: %q is not a member", m)
				}
				if f := mustDo(t, c, "SISMEMBER", key, m); f.Str != "0" {
					t.Errorf("%q is still a member after SPOP answered it", m)
				}
			}
			if f := mustDo(t, c, "SCARD", key); f.Str != strconv.Itoa(len(tc.members)-4) {
				t.Errorf("SCARD after popping 4 of %d: %s", len(tc.members), f.Str)
			}
			// Draws vary: 30 single SRANDMEMBERs of 16+ members are not
			// all the same.
			first := mustDo(t, c, "SRANDMEMBER", key).Str
			varied := false
			for range 30 {
				if mustDo(t, c, "SRANDMEMBER", key).Str != first {
					varied = true
					break
				}
			}
			if !varied {
				t.Errorf("30 SRANDMEMBERs all answered %q", first)
			}
		})
	}
	// A reply past proto-max-bulk-len (1 MB here: 6 bytes a member at
	// least) is refused rather than built (README, "Sets").
	for _, tc := range []struct{ count, want string }{
		{"-174763", "-ERR value is out of range\r\n"},
		{"-4611686018427387904", "-ERR value is out of range\r\n"},
		{"-174762", "*174762\r\n"},
		{"-1", "*1\r\n"},
	} {
		if got := c.Do("SRANDMEMBER", "r:intset", tc.count); !strings.HasPrefix(string(got), tc.want) {
			t.Errorf("SRANDMEMBER r:intset %s: %.40q, want %q", tc.count, got, tc.want)
		}
	}
}

// TestSetScanUnderWrites: an SSCAN of a hashtable set, paged, returns
// every member present throughout, while another client adds and removes
// other members between its calls (README, "Sets").
func TestSetScanUnderWrites(t *testing.T) {
	t.Parallel()
	o := StartOncekv(t)
	conns := dialRawN(t, o.Addr, 2)
	c, w := conns[0], conns[1]
	keep := words("keep:", 300)
	mustDo(t, c, with(keep, "SADD", "s")...)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Members before, among and after the kept ones in byte order.
			m := []string{"a", "keep:" + strconv.Itoa(i%300) + "x", "z"}[i%3] + strconv.Itoa(i)
			rawDo(w, "SADD", "s", m)
			if i%2 == 1 {
				rawDo(w, "SREM", "s", m)
			}
		}
	}()
	seen := map[string]int{}
	cursor, calls := "0", 0
	for {
		f := mustDo(t, c, "SSCAN", "s", cursor, "COUNT", "7")
		if len(f.Elems) != 2 {
			t.Fatalf("SSCAN: %q", f.Raw)
		}
		for _, e := range f.Elems[1].Elems {
			seen[e.Str]++
		}
		calls++
		if cursor = f.Elems[0].Str; cursor == "0" {
			break
		}
	}
	close(stop)
	<-done
	if calls < 300/7 {
		t.Errorf("SSCAN … COUNT 7 of 300+ members took %d calls", calls)
	}
	for _, m := range keep {
		if seen[m] != 1 {
			t.Errorf("SSCAN returned %q %d times, want once", m, seen[m])
		}
	}
}

// TestSetLargerThanOneValue: a hashtable-encoded set keeps its members
// apart, so it may grow past the 64 MiB a stored value holds (it was
// refused with "value is too long" while a set was one value); a member
// is at most that.
func TestSetLargerThanOneValue(t *testing.T) {
	t.Parallel()
	o := StartOncekv(t)
	c := DialRaw(t, o.Addr)
	c.Timeout = 30 * time.Second
	big := make([]string, 68)
	for i := range big {
		big[i] = fmt.Sprintf("%04d", i) + mib[4:]
	}
	for _, step := range []struct {
		args []string
		want string
	}{
		{with(big[:64], "SADD", "s"), ":64\r\n"},
		{with(big[60:], "SADD", "s"), ":4\r\n"},
		{[]string{"SCARD", "s"}, ":68\r\n"},
		{[]string{"SISMEMBER", "s", big[67]}, ":1\r\n"},
		{[]string{"SISMEMBER", "s", big[67][:len(big[67])-1]}, ":0\r\n"},
		{[]string{"SREM", "s", big[0], big[0]}, ":1\r\n"},
		{[]string{"SCARD", "s"}, ":67\r\n"},
		{[]string{"OBJECT", "ENCODING", "s"}, "$9\r\nhashtable\r\n"},
		// One member is at most a stored value (it is kept as one); a
		// SADD refused so adds none of its members.
		{[]string{"SADD", "s", "fits", strings.Repeat("m", 65<<20)}, "-ERR value is too long (at most 67108855 bytes)\r\n"},
		{[]string{"SISMEMBER", "s", "fits"}, ":0\r\n"},
		{[]string{"SCARD", "s"}, ":67\r\n"},
	} {
		if got := string(c.Do(step.args...)); got != step.want {
			t.Errorf("%s %s… (%d args): %q, want %q", step.args[0], step.args[1], len(step.args), got, step.want)
		}
	}
}
