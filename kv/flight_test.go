package kv

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
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

// TestRunnersAreReused: flights run on the store's runners, which wait
// for the next flight rather than exit (a new goroutine per flight grew
// its stack through go-redis' calls on every Run), and Close ends them.
func TestRunnersAreReused(t *testing.T) {
	rdb := client(t, server(t))
	s := New(rdb)
	o := open[string](t, s, "rr")
	fn := func(context.Context) (string, error) { return "v", nil }
	for i := range 50 {
		if _, err := o.Run(ctxFor(t, 10*time.Second), "k"+strconv.Itoa(i), fn); err != nil {
			t.Fatal(err)
		}
	}
	// A Run may start its flight before the last flight's runner is
	// back: a second runner is started then.
	if n := s.runnersStarted.Load(); n < 1 || n > 3 {
		t.Fatalf("%d runners started for 50 Runs one after another, want 1 to 3", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the runners end after Close", func() bool { return s.runners.Load() == 0 })
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
