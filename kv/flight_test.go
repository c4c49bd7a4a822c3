package kv

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// handFlight makes a flight on key, without its claiming loop, with n
// members, as if it had just been answered "claimed"; it returns the
// flight, its members and the token, claimed by hand.
func handFlight(t *testing.T, s *Store, full string, n int) (*flight, []*member, int64) {
	t.Helper()
	v, err := s.rdb.Do(context.Background(), "once.claim", full, "lease", 5000).Slice()
	if err != nil || v[0] != "claimed" {
		t.Fatalf("ONCE.CLAIM: %v %v", v, err)
	}
	k := flightKey{key: full}
	f := &flight{s: s, k: k, lease: 5 * time.Second, reports: make(chan runReport, 1), abandon: make(chan struct{})}
	var ms []*member
	s.mu.Lock()
	s.flights[k] = f
	for range n {
		m := &member{ch: make(chan flightMsg, 1)}
		f.members = append(f.members, m)
		ms = append(ms, m)
	}
	s.mu.Unlock()
	return f, ms, v[1].(int64)
}

// TestRunnersAreReused: flights that wait run on the store's runners,
// which wait for the next flight rather than exit (a new goroutine per
// flight grew its stack through go-redis' calls on every Run), and Close
// ends them.
func TestRunnersAreReused(t *testing.T) {
	rdb := client(t, server(t))
	s := New(rdb)
	o := open[string](t, s, "rr")
	for i := range 20 {
		// The key runs elsewhere: the Run waits, on a runner.
		full := "rr:k" + strconv.Itoa(i)
		v, err := rdb.Do(context.Background(), "once.claim", full, "lease", 5000).Slice()
		if err != nil || v[0] != "claimed" {
			t.Fatalf("ONCE.CLAIM: %v %v", v, err)
		}
		got := make(chan string, 1)
		go func() {
			v, err := o.Run(ctxFor(t, 10*time.Second), "k"+strconv.Itoa(i), nil2[string]())
			if err != nil {
				t.Error(err)
			}
			got <- v
		}()
		eventually(t, 5*time.Second, "the Run to wait", func() bool { return serverWaiters(t, rdb, full) == 1 })
		if err := rdb.Do(context.Background(), "once.complete", full, v[1], `"v"`).Err(); err != nil {
			t.Fatal(err)
		}
		if v := recv(t, got); v != "v" {
			t.Fatalf("Run got %q", v)
		}
	}
	// A Run may start its flight before the last flight's runner is
	// back: a second runner is started then.
	if n := s.runnersStarted.Load(); n < 1 || n > 3 {
		t.Fatalf("%d runners started for 20 waits one after another, want 1 to 3", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the runners end after Close", func() bool { return s.runners.Load() == 0 })
}

// TestFirstCallerClaims: the caller that starts a flight sends its first
// claim itself, so Runs of free keys and of kept answers, from many
// goroutines, start no runner; each free key still runs once and every
// caller gets its answer.
func TestFirstCallerClaims(t *testing.T) {
	rdb := client(t, server(t))
	s := store(t, rdb)
	o := open[string](t, s, "fc")
	var calls atomic.Int32
	fn := func(_ context.Context, key string) (string, error) {
		calls.Add(1)
		return "v" + key, nil
	}
	const keys, callers = 40, 5
	for round := range 2 { // fresh keys, then kept answers
		results := runAll(keys*callers, func(i int) (RunInfo[string], error) {
			key := strconv.Itoa(i % keys)
			return o.RunInfo(ctxFor(t, 10*time.Second), key, func(ctx context.Context) (string, error) { return fn(ctx, key) })
		})()
		for i, r := range results {
			if want := "v" + strconv.Itoa(i%keys); r.err != nil || r.info.Value != want {
				t.Fatalf("round %d, caller %d: %+v %v, want %q", round, i, r.info, r.err, want)
			}
			if round == 1 && !r.info.Replayed {
				t.Fatalf("caller %d ran a kept key again", i)
			}
		}
	}
	if n := calls.Load(); n != keys {
		t.Fatalf("%d runs for %d keys", n, keys)
	}
	if n := s.runnersStarted.Load(); n != 0 {
		t.Fatalf("%d runners started for free and kept keys, want 0", n)
	}
}

// directCase is a flight started the way a first caller starts one, with
// two members, whose first claim went to its first member (token).
type directCase struct {
	rdb   *redis.Client
	s     *Store
	o     *Once[string]
	f     *flight
	ms    []*member
	token int64
}

// newDirect makes a directCase on name+":k".
func newDirect(t *testing.T, name string) directCase {
	t.Helper()
	c := directCase{rdb: client(t, server(t))}
	c.s = store(t, c.rdb)
	c.o = open[string](t, c.s, name)
	for i := range 2 {
		f, m, first := c.s.join(context.Background(), flightKey{key: name + ":k"}, 5*time.Second)
		if first != (i == 0) {
			t.Fatalf("member %d: first %v", i, first)
		}
		c.f = f
		c.ms = append(c.ms, m)
	}
	c.f.claimFirst()
	msg := recv(t, c.ms[0].ch)
	if !msg.claimed {
		t.Fatalf("first member got %+v", msg)
	}
	c.token = msg.token
	return c
}

// TestDirectGiveBack: a first caller handed its own claim after its
// context ended gives it back; a runner starts and hands it on.
func TestDirectGiveBack(t *testing.T) {
	c := newDirect(t, "dg")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	fn := func(context.Context) (string, error) { return "ran", nil }
	if _, err := c.o.runClaimed(cancelled, c.f, "k", "dg:k", c.token, fn); err != context.Canceled {
		t.Fatalf("cancelled member: %v", err)
	}
	next := recv(t, c.ms[1].ch)
	if !next.claimed || next.token != c.token {
		t.Fatalf("second member got %+v, want the claim %d", next, c.token)
	}
	info, err := c.o.runClaimed(ctxFor(t, time.Second), c.f, "k", "dg:k", next.token, fn)
	if err != nil || info.Value != "ran" || info.Replayed {
		t.Fatalf("second member: %+v %v", info, err)
	}
	if n := c.s.runnersStarted.Load(); n != 1 {
		t.Fatalf("%d runners started, want 1 (for the give-back)", n)
	}
	eventually(t, time.Second, "the flight to end", func() bool { return flights(c.s) == 0 })
}

// TestDirectRetry: when the first caller's run loses its claim, a runner
// starts and claims again for the callers still there.
func TestDirectRetry(t *testing.T) {
	c := newDirect(t, "dr")
	lose := func(context.Context) (string, error) {
		// DEL of a running record acts as a lapse: the claim is lost.
		if err := c.rdb.Del(context.Background(), "dr:k").Err(); err != nil {
			t.Error(err)
		}
		return "lost", nil
	}
	if _, err := c.o.runClaimed(ctxFor(t, time.Second), c.f, "k", "dr:k", c.token, lose); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("first member: %v, want ErrLeaseLost", err)
	}
	next := recv(t, c.ms[1].ch)
	if !next.claimed || next.token <= c.token {
		t.Fatalf("second member got %+v, want a new claim after %d", next, c.token)
	}
	info, err := c.o.runClaimed(ctxFor(t, time.Second), c.f, "k", "dr:k", next.token, func(context.Context) (string, error) { return "again", nil })
	if err != nil || info.Value != "again" {
		t.Fatalf("second member: %+v %v", info, err)
	}
	if got, err := c.rdb.Do(context.Background(), "once.claim", "dr:k").Slice(); err != nil || got[0] != "done" || got[1] != `"again"` {
		t.Fatalf("ONCE.CLAIM after: %v %v", got, err)
	}
}

// TestGiveBack: a caller handed the claim after its context ended gives
// it back, and the next caller runs.
func TestGiveBack(t *testing.T) {
	rdb := client(t, server(t))
	s := store(t, rdb)
	o := open[string](t, s, "gb")
	f, ms, tok := handFlight(t, s, "gb:k", 3)
	again := make(chan bool, 1)
	go func() { again <- f.runClaimed(tok) }()

	var calls atomic.Int32
	fn := func(context.Context) (string, error) { calls.Add(1); return "ran", nil }
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	msg := recv(t, ms[0].ch)
	if !msg.claimed || msg.token != tok {
		t.Fatalf("first member got %+v", msg)
	}
	if _, err := o.runClaimed(cancelled, f, "k", "gb:k", msg.token, fn); err != context.Canceled {
		t.Fatalf("cancelled member: %v", err)
	}
	msg = recv(t, ms[1].ch)
	if !msg.claimed || msg.token != tok {
		t.Fatalf("second member got %+v", msg)
	}
	info, err := o.runClaimed(ctxFor(t, time.Second), f, "k", "gb:k", msg.token, fn)
	if err != nil || info.Value != "ran" || info.Token != tok || info.Replayed {
		t.Fatalf("second member: %+v %v", info, err)
	}
	if <-again {
		t.Fatal("the flight wants to claim again after a completed run")
	}
	out := recv(t, ms[2].ch)
	if out.claimed || string(out.out.answer) != `"ran"` || out.out.token != tok {
		t.Fatalf("third member got %+v", out)
	}
	if calls.Load() != 1 || flights(s) != 0 {
		t.Fatalf("calls %d, flights %d", calls.Load(), flights(s))
	}
}

// TestReleaseToOtherProcess: a claim no caller here can run is released
// as a lapse, so a waiter elsewhere takes it over (not told it failed).
func TestReleaseToOtherProcess(t *testing.T) {
	addr := server(t)
	rdb := client(t, addr)
	s := store(t, rdb)
	o := open[string](t, s, "rel")
	f, ms, tok := handFlight(t, s, "rel:k", 1)

	other := open[string](t, store(t, client(t, addr)), "rel")
	out := make(chan RunInfo[string], 1)
	errs := make(chan error, 1)
	go func() {
		info, err := other.RunInfo(ctxFor(t, 5*time.Second), "k", func(context.Context) (string, error) { return "other", nil })
		out <- info
		errs <- err
	}()
	eventually(t, time.Second, "the other process to wait", func() bool { return serverWaiters(t, rdb, "rel:k") == 1 })

	go f.runClaimed(tok)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	msg := recv(t, ms[0].ch)
	if _, err := o.runClaimed(cancelled, f, "k", "rel:k", msg.token, nil2[string]()); err != context.Canceled {
		t.Fatal(err)
	}
	if err := recv(t, errs); err != nil {
		t.Fatalf("other process: %v, want it to take the claim over", err)
	}
	if info := recv(t, out); info.Value != "other" || info.Replayed || info.Token <= tok {
		t.Fatalf("other process: %+v", info)
	}
	if in := serverInfo(t, rdb); in["aborts"] != 0 || in["handoffs"] != 1 {
		t.Fatalf("INFO once: aborts %d handoffs %d", in["aborts"], in["handoffs"])
	}
}

// TestAbandon: when every caller left, the flight leaves the store and a
// new caller starts afresh.
func TestAbandon(t *testing.T) {
	addr := server(t)
	rdb := client(t, addr)
	runner := open[int](t, store(t, client(t, addr)), "ab")
	s := store(t, rdb, WaitSlice(time.Second))
	o := open[int](t, s, "ab")
	release := make(chan struct{})
	started := make(chan struct{})
	go func() {
		_, _ = runner.Run(ctxFor(t, 5*time.Second), "k", func(context.Context) (int, error) {
			close(started)
			<-release
			return 3, nil
		})
	}()
	recv(t, started)
	ctx, cancel := context.WithCancel(context.Background())
	wait := runAll(10, func(int) (RunInfo[int], error) { return o.RunInfo(ctx, "k", nil2[int]()) })
	eventually(t, time.Second, "the flight", func() bool { return members(s, "ab:k") == 10 })
	cancel()
	for _, r := range wait() {
		if r.err != context.Canceled {
			t.Fatalf("%v", r.err)
		}
	}
	if flights(s) != 0 {
		t.Fatalf("%d flights after every caller left", flights(s))
	}
	later := make(chan int, 1)
	go func() {
		v, _ := o.Run(ctxFor(t, 5*time.Second), "k", nil2[int]())
		later <- v
	}()
	eventually(t, time.Second, "a new flight", func() bool { return members(s, "ab:k") == 1 })
	close(release)
	if v := recv(t, later); v != 3 {
		t.Fatalf("later caller got %d", v)
	}
	// The abandoned flight's wait ends with its slice, and then the
	// flight is gone.
	eventually(t, 2*time.Second, "the waits to end", func() bool { return serverInfo(t, rdb)["waiting_clients"] == 0 })
}
