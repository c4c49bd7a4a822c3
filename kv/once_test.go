package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

type receipt struct {
	ID     string            `json:"id"`
	Amount int               `json:"amount"`
	Items  []string          `json:"items"`
	Meta   map[string]string `json:"meta"`
}

// TestRunOnce: 50 concurrent callers of one key run fn once and all get
// its answer (KV-9, KV-10), whether they share a Store (singleflight in
// the process) or each has its own (one runner across connections).
func TestRunOnce(t *testing.T) {
	const n = 50
	addr := server(t)
	for _, tc := range []struct {
		name  string
		store func(i int) *Store
	}{
		{"one store", func() func(int) *Store {
			s := store(t, client(t, addr))
			return func(int) *Store { return s }
		}()},
		{"a store each, one client", func() func(int) *Store {
			rdb := client(t, addr)
			stores := make([]*Store, n)
			for i := range stores {
				stores[i] = store(t, rdb, MaxBlockingConns(1))
			}
			return func(i int) *Store { return stores[i] }
		}()},
		{"a client each", func() func(int) *Store {
			stores := make([]*Store, n)
			for i := range stores {
				stores[i] = store(t, client(t, addr, func(o *redis.Options) { o.PoolSize = 2 }))
			}
			return func(i int) *Store { return stores[i] }
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			key := "order-" + strings.ReplaceAll(tc.name, " ", "-")
			wait := runAll(n, func(i int) (RunInfo[receipt], error) {
				o := open[receipt](t, tc.store(i), "charges")
				return o.RunInfo(ctxFor(t, 10*time.Second), key, func(ctx context.Context) (receipt, error) {
					c := calls.Add(1)
					time.Sleep(200 * time.Millisecond)
					return receipt{ID: fmt.Sprintf("r-%d-%d", c, i), Amount: 42}, nil
				})
			})
			res := wait()
			if got := calls.Load(); got != 1 {
				t.Fatalf("fn ran %d times, want 1", got)
			}
			runners := 0
			want := ""
			for i, r := range res {
				if r.err != nil {
					t.Fatalf("caller %d: %v", i, r.err)
				}
				if !r.info.Replayed {
					runners++
					want = r.info.Value.ID
					if r.info.Token <= 0 {
						t.Errorf("runner's token %d, want > 0", r.info.Token)
					}
				}
			}
			if runners != 1 {
				t.Fatalf("%d callers report they ran fn, want 1", runners)
			}
			for i, r := range res {
				if r.info.Value.ID != want || r.info.Value.Amount != 42 {
					t.Errorf("caller %d got %+v, want ID %s", i, r.info.Value, want)
				}
			}
			// A later call replays it.
			o := open[receipt](t, tc.store(0), "charges")
			info, err := o.RunInfo(ctxFor(t, time.Second), key, func(context.Context) (receipt, error) {
				t.Error("fn ran again")
				return receipt{}, nil
			})
			if err != nil || !info.Replayed || info.Value.ID != want {
				t.Fatalf("replay: %+v, %v", info, err)
			}
		})
	}
}

// TestKeep: Keep(d) keeps the answer for d (KV-14); Keep(0) shares it
// with the callers waiting at that moment only; no Keep keeps it.
func TestKeep(t *testing.T) {
	addr := server(t)
	rdb := client(t, addr)
	for _, tc := range []struct {
		name      string
		opts      []Option
		pause     time.Duration
		wantCalls int32
		keepMs    func(int64) bool // ONCE.STATUS keep-ms right after the run (-100: free)
	}{
		{"keep 200ms, called again after 300ms", []Option{Keep(200 * time.Millisecond)}, 300 * time.Millisecond, 2,
			func(n int64) bool { return n > 0 && n <= 200 }},
		{"keep 200ms, called again at once", []Option{Keep(200 * time.Millisecond)}, 0, 1,
			func(n int64) bool { return n > 0 && n <= 200 }},
		{"no keep", nil, 300 * time.Millisecond, 1, func(n int64) bool { return n == -1 }},
		{"keep 0", []Option{Keep(0)}, 0, 2, func(n int64) bool { return n == -100 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := open[int](t, store(t, rdb), "keep", tc.opts...)
			var calls atomic.Int32
			fn := func(context.Context) (int, error) { return int(calls.Add(1)), nil }
			if _, err := o.Run(ctxFor(t, time.Second), tc.name, fn); err != nil {
				t.Fatal(err)
			}
			if got := statusInt(t, rdb, "keep:"+tc.name, "keep-ms"); !tc.keepMs(got) {
				t.Errorf("keep-ms right after the run: %d", got)
			}
			time.Sleep(tc.pause)
			v, err := o.Run(ctxFor(t, time.Second), tc.name, fn)
			if err != nil {
				t.Fatal(err)
			}
			if calls.Load() != tc.wantCalls || v != int(tc.wantCalls) {
				t.Fatalf("fn ran %d times (second Run got %d), want %d", calls.Load(), v, tc.wantCalls)
			}
		})
	}

	// Keep(0) is a singleflight: callers waiting when the run completes
	// share it, in this process and in others.
	t.Run("keep 0 shares with current waiters", func(t *testing.T) {
		local := open[int](t, store(t, rdb), "share", Keep(0))
		var calls atomic.Int32
		release := make(chan struct{})
		fn := func(context.Context) (int, error) {
			<-release
			return int(calls.Add(1)), nil
		}
		wait := runAll(20, func(i int) (RunInfo[int], error) {
			o := local
			if i%2 == 1 { // other "processes"
				o = open[int](t, store(t, client(t, addr)), "share", Keep(0))
			}
			return o.RunInfo(ctxFor(t, 5*time.Second), "k", fn)
		})
		eventually(t, 2*time.Second, "10 waiters on the server", func() bool {
			return serverWaiters(t, rdb, "share:k") == 10 || serverWaiters(t, rdb, "share:k") == 9
		})
		eventually(t, 2*time.Second, "local callers", func() bool { return members(local.s, "share:k") >= 9 })
		time.Sleep(50 * time.Millisecond)
		close(release)
		for i, r := range wait() {
			if r.err != nil || r.info.Value != 1 {
				t.Fatalf("caller %d: %+v %v", i, r.info, r.err)
			}
		}
		if status(t, rdb, "share:k") != nil {
			t.Fatal("Keep(0) kept the answer")
		}
		v, err := local.Run(ctxFor(t, time.Second), "k", fn)
		if err != nil || v != 2 {
			t.Fatalf("later Run: %d %v, want a new run (2)", v, err)
		}
	})
}

// TestFailure: fn's error aborts the run; the callers waiting on it get
// ErrRunFailed with its message, here and elsewhere; the next Run runs
// again (KV-12).
func TestFailure(t *testing.T) {
	addr := server(t)
	rdb := client(t, addr)
	local := open[string](t, store(t, rdb), "pay")
	var calls atomic.Int32
	failing := make(chan struct{})
	runnerErr := errors.New("card declined: insufficient funds")
	runner := make(chan error, 1)
	go func() {
		_, err := local.Run(ctxFor(t, 5*time.Second), "o1", func(context.Context) (string, error) {
			calls.Add(1)
			<-failing
			return "", runnerErr
		})
		runner <- err
	}()
	eventually(t, 2*time.Second, "the claim", func() bool { return status(t, rdb, "pay:o1") != nil })
	fn := func(context.Context) (string, error) {
		calls.Add(1)
		return "paid", nil
	}
	wait := runAll(20, func(i int) (RunInfo[string], error) {
		o := local
		if i%2 == 1 {
			o = open[string](t, store(t, client(t, addr)), "pay")
		}
		return o.RunInfo(ctxFor(t, 5*time.Second), "o1", fn)
	})
	eventually(t, 2*time.Second, "waiters", func() bool {
		return serverWaiters(t, rdb, "pay:o1") == 10 && members(local.s, "pay:o1") == 10
	})
	close(failing)
	if err := recv(t, runner); err != runnerErr {
		t.Fatalf("runner got %v, want its own error", err)
	}
	for i, r := range wait() {
		var fe *FailedError
		if !errors.Is(r.err, ErrRunFailed) || !errors.As(r.err, &fe) || fe.Message != runnerErr.Error() || fe.Key != "o1" {
			t.Fatalf("caller %d: %v, want ErrRunFailed with %q", i, r.err, runnerErr)
		}
	}
	if status(t, rdb, "pay:o1") != nil {
		t.Fatal("the key holds something after the abort")
	}
	v, err := local.Run(ctxFor(t, time.Second), "o1", fn)
	if err != nil || v != "paid" || calls.Load() != 2 {
		t.Fatalf("retry: %q %v, calls %d", v, err, calls.Load())
	}
}

// TestPanic: a panic in fn frees the key (ABORT "panic: …"), fails the
// waiters and goes on in the runner's goroutine.
func TestPanic(t *testing.T) {
	addr := server(t)
	rdb := client(t, addr)
	o := open[int](t, store(t, rdb), "p")
	other := open[int](t, store(t, client(t, addr)), "p")
	started := make(chan struct{})
	proceed := make(chan struct{})
	recovered := make(chan any, 1)
	go func() {
		defer func() { recovered <- recover() }()
		_, _ = o.Run(ctxFor(t, 5*time.Second), "k", func(context.Context) (int, error) {
			close(started)
			<-proceed
			panic("boom")
		})
	}()
	recv(t, started)
	waiter := make(chan error, 1)
	go func() {
		_, err := other.Run(ctxFor(t, 5*time.Second), "k", func(context.Context) (int, error) { return 0, nil })
		waiter <- err
	}()
	eventually(t, 2*time.Second, "the waiter", func() bool { return serverWaiters(t, rdb, "p:k") == 1 })
	close(proceed)
	if p := recv(t, recovered); p != "boom" {
		t.Fatalf("recovered %v, want the panic to propagate", p)
	}
	var fe *FailedError
	if err := recv(t, waiter); !errors.As(err, &fe) || fe.Message != "panic: boom" {
		t.Fatalf("waiter: %v, want ErrRunFailed \"panic: boom\"", err)
	}
	v, err := o.Run(ctxFor(t, time.Second), "k", func(context.Context) (int, error) { return 7, nil })
	if err != nil || v != 7 {
		t.Fatalf("after the panic: %d %v, want a new run", v, err)
	}
}

// TestLeaseExtension: a run longer than its lease keeps its claim (the
// runner extends it); no one else runs.
func TestLeaseExtension(t *testing.T) {
	addr := server(t)
	rdb := client(t, addr)
	o := open[int](t, store(t, rdb), "ext", Lease(300*time.Millisecond))
	other := open[int](t, store(t, client(t, addr)), "ext", Lease(300*time.Millisecond))
	var calls atomic.Int32
	fn := func(ctx context.Context) (int, error) {
		n := calls.Add(1)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
		return int(n), nil
	}
	done := make(chan RunInfo[int], 2)
	errs := make(chan error, 2)
	for _, x := range []*Once[int]{o, other} {
		go func() {
			info, err := x.RunInfo(ctxFor(t, 5*time.Second), "k", fn)
			done <- info
			errs <- err
		}()
		if x == o {
			eventually(t, time.Second, "the claim", func() bool { return status(t, rdb, "ext:k") != nil })
		}
	}
	minLease := int64(1 << 62)
	for len(done) < 2 {
		st := status(t, rdb, "ext:k")
		if st == nil || st["state"] != "running" {
			break
		}
		minLease = min(minLease, st["lease-ms"].(int64))
		time.Sleep(20 * time.Millisecond)
	}
	for range 2 {
		if err := recv(t, errs); err != nil {
			t.Fatal(err)
		}
		if info := recv(t, done); info.Value != 1 {
			t.Fatalf("got %+v, want the first run's answer", info)
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("fn ran %d times", calls.Load())
	}
	if minLease <= 0 || minLease > 300 {
		t.Fatalf("lowest lease-ms seen while running: %d, want in (0, 300]", minLease)
	}
	if in := serverInfo(t, rdb); in["lease_lapses"] != 0 || in["handoffs"] != 0 {
		t.Fatalf("INFO once: %v", in)
	}
}

// TestRunnerCallerGivingUpHandsTheRunOn (KV-9, KV-12): the caller that
// holds the claim gives up (its context is cancelled) and fn stops with
// it. That is not a failure of the run: another caller waiting for the key,
// on the same Store or another, runs fn and gets its value rather than
// the first caller's "context canceled".
func TestRunnerCallerGivingUpHandsTheRunOn(t *testing.T) {
	addr := server(t)
	s := store(t, client(t, addr))
	o := open[int](t, s, "giveup")
	elsewhere := open[int](t, store(t, client(t, addr)), "giveup")
	for _, c := range []struct {
		key    string
		waiter *Once[int]
	}{{"same-store", o}, {"other-store", elsewhere}} {
		t.Run(c.key, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			started := make(chan struct{})
			runner := make(chan error, 1)
			go func() {
				_, err := o.Run(ctx, c.key, func(ctx context.Context) (int, error) {
					close(started)
					<-ctx.Done()
					return 0, ctx.Err()
				})
				runner <- err
			}()
			recv(t, started)
			out := make(chan result[int], 1)
			go func() {
				info, err := c.waiter.RunInfo(ctxFor(t, 5*time.Second), c.key, func(context.Context) (int, error) { return 7, nil })
				out <- result[int]{info: info, err: err}
			}()
			eventually(t, 5*time.Second, "the waiter waiting", func() bool {
				return members(s, "giveup:"+c.key) == 1 || statusInt(t, client(t, addr), "giveup:"+c.key, "waiters") == 1
			})
			cancel()
			if err := recv(t, runner); !errors.Is(err, context.Canceled) {
				t.Fatalf("the caller that gave up got %v, want context.Canceled", err)
			}
			if r := recv(t, out); r.err != nil || r.info.Value != 7 || r.info.Replayed {
				t.Fatalf("the waiter got %+v, %v; want to run fn itself (7)", r.info, r.err)
			}
		})
	}
}

// panicky's encoding panics, as a MarshalJSON method may.
type panicky struct{ N int }

func (panicky) MarshalJSON() ([]byte, error) { panic("marshal boom") }

// TestEncodingPanicAbortsTheRun (KV-12): fn succeeds but encoding its
// value panics. The run is aborted as if fn had panicked: the claim is
// freed, the flight's other caller gets the failure at once rather than
// waiting, and the runner's caller gets the panic back.
func TestEncodingPanicAbortsTheRun(t *testing.T) {
	addr := server(t)
	rdb := client(t, addr)
	s := store(t, rdb)
	o := open[panicky](t, s, "mp", Lease(time.Second))
	release := make(chan struct{})
	repanicked := make(chan any, 1)
	go func() {
		defer func() { repanicked <- recover() }()
		_, _ = o.Run(context.Background(), "k", func(context.Context) (panicky, error) {
			<-release
			return panicky{1}, nil
		})
	}()
	eventually(t, 5*time.Second, "the claim", func() bool { return status(t, rdb, "mp:k") != nil })
	out := make(chan error, 1)
	go func() {
		_, err := o.Run(context.Background(), "k", func(context.Context) (panicky, error) {
			return panicky{}, errors.New("the second caller ran")
		})
		out <- err
	}()
	eventually(t, 5*time.Second, "the second caller in the flight", func() bool { return members(s, "mp:k") == 1 })
	close(release)
	if p := recv(t, repanicked); p == nil || !strings.Contains(fmt.Sprint(p), "marshal boom") {
		t.Fatalf("the runner's caller recovered %v, want the encoding's panic", p)
	}
	var failed *FailedError
	if err := recv(t, out); !errors.As(err, &failed) || !strings.Contains(failed.Message, "marshal boom") {
		t.Fatalf("the flight's other caller got %v, want the run's failure with the panic", err)
	}
	if st := status(t, rdb, "mp:k"); st != nil && st["state"] == "running" {
		t.Fatalf("the claim is still held after the run panicked: %v", st)
	}
}

// replyDropper lets one ONCE.COMPLETE reach the server, reads the reply
// and closes the connection instead of handing the reply on: a reply lost
// on the network (a restart, a proxy, a NAT timeout).
type replyDropper struct {
	net.Conn
	armed *atomic.Bool
	doom  atomic.Bool
}

func (c *replyDropper) Write(b []byte) (int, error) {
	if bytes.Contains(bytes.ToLower(b), []byte("once.complete")) && c.armed.CompareAndSwap(true, false) {
		c.doom.Store(true)
	}
	return c.Conn.Write(b)
}

func (c *replyDropper) Read(b []byte) (int, error) {
	if c.doom.Load() {
		_, _ = c.Conn.Read(make([]byte, 4096)) // the server's +OK
		_ = c.Conn.Close()
		return 0, io.EOF
	}
	return c.Conn.Read(b)
}

// TestLostCompleteReplyIsNotALostLease (KV-13): the server stored the
// answer but its reply was lost; go-redis sends the COMPLETE again, which
// finds the claim done and answers STALE. Run asks ONCE.STATUS, finds the
// answer stored under its own token, and returns the value, not
// ErrLeaseLost (which tells the caller that fn may run again elsewhere).
func TestLostCompleteReplyIsNotALostLease(t *testing.T) {
	addr := server(t)
	var armed atomic.Bool
	armed.Store(true)
	rdb := client(t, addr, func(o *redis.Options) {
		o.Dialer = func(ctx context.Context, network, a string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, a)
			if err != nil {
				return nil, err
			}
			return &replyDropper{Conn: c, armed: &armed}, nil
		}
	})
	o := open[int](t, store(t, rdb), "lc", Keep(time.Hour))
	v, err := o.Run(ctxFor(t, 5*time.Second), "k", func(context.Context) (int, error) { return 5, nil })
	if armed.Load() {
		t.Fatal("no COMPLETE reply was dropped: the test did not test")
	}
	if err != nil || v != 5 {
		t.Fatalf("Run: %d, %v; the server holds %v", v, err, status(t, client(t, addr), "lc:k"))
	}
}

// TestCompleteThatNeverArrivedIsSentAgain (KV-13): a COMPLETE that did
// not take effect, lost on the network after go-redis' own retries, or
// answered with an error reply that says the command did not run and
// may be sent again (-TRYAGAIN: proxy mode, a slot being moved; -LOADING,
// -MASTERDOWN …: an upstream failing over), left the claim running under
// the run's token. Run asks ONCE.STATUS, sees the claim still its own,
// and sends the answer again: it is stored, and no one runs fn again.
// Before, a transient reply was taken for a refusal of the answer: the
// run was aborted, and every caller waiting for it told it failed
// (KV-12), though the answer would have been stored.
func TestCompleteThatNeverArrivedIsSentAgain(t *testing.T) {
	addr := server(t)
	for _, tc := range []struct {
		name string
		err  error // nil: lost on the network
	}{
		{"lost on the network", nil},
		{"TRYAGAIN", replyErr("TRYAGAIN the slot of the key is moving, try again")},
		{"LOADING", replyErr("LOADING Redis is loading the dataset in memory")},
		{"MASTERDOWN", replyErr("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.")},
		{"CLUSTERDOWN", replyErr("CLUSTERDOWN The cluster is down")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "resend-" + strings.ToLower(strings.ReplaceAll(tc.name, " ", "-"))
			rdb := client(t, addr)
			h := &failingCmd{name: "once.complete", first: 1, last: 1, err: tc.err}
			rdb.AddHook(h)
			o := open[int](t, store(t, rdb), name, Keep(time.Hour))
			info, err := o.RunInfo(ctxFor(t, 5*time.Second), "k", func(context.Context) (int, error) { return 7, nil })
			if err != nil || info.Value != 7 || info.Replayed {
				t.Fatalf("Run: %+v, %v; the server holds %v", info, err, status(t, client(t, addr), name+":k"))
			}
			if h.calls.Load() != 2 {
				t.Fatalf("%d COMPLETEs sent, want the failed one and one more", h.calls.Load())
			}
			st := status(t, client(t, addr), name+":k")
			if st["state"] != "done" || st["token"] != info.Token {
				t.Fatalf("the server holds %v, want done under token %d", st, info.Token)
			}
			again, err := open[int](t, store(t, client(t, addr)), name).RunInfo(ctxFor(t, 5*time.Second), "k", nil2[int]())
			if err != nil || again.Value != 7 || !again.Replayed {
				t.Fatalf("a second Run: %+v, %v", again, err)
			}
		})
	}
}

// TestCompleteLostTwiceReleasesTheClaim (KV-13): when the answer cannot
// be stored (every COMPLETE is lost on the network, the claim still
// held), Run fails and releases the claim as a lapse: a caller waiting
// elsewhere takes it over at once, not when the 30 s lease would have
// run out.
func TestCompleteLostTwiceReleasesTheClaim(t *testing.T) {
	addr := server(t)
	rdb := client(t, addr)
	rdb.AddHook(&failingCmd{name: "once.complete", first: 1})
	o := open[string](t, store(t, rdb), "refused", Lease(30*time.Second))
	other := open[string](t, store(t, client(t, addr)), "refused", Lease(30*time.Second))

	release, first := hold(t, o, "k", "unstorable")
	second := make(chan RunInfo[string], 1)
	secondErr := make(chan error, 1)
	go func() {
		info, err := other.RunInfo(ctxFor(t, 10*time.Second), "k", func(context.Context) (string, error) { return "stored", nil })
		second <- info
		secondErr <- err
	}()
	eventually(t, 5*time.Second, "the other caller waiting on the server", func() bool {
		return serverWaiters(t, client(t, addr), "refused:k") == 1
	})
	release()
	if err := recv(t, first); err == nil || errors.Is(err, ErrLeaseLost) {
		t.Fatalf("the run whose answer was refused: %v, want a store error", err)
	}
	info, err := recv(t, second), recv(t, secondErr)
	if err != nil || info.Value != "stored" || info.Replayed {
		t.Fatalf("the waiter elsewhere: %+v, %v; want to run after the release", info, err)
	}
}

// freezer dials connections that it can freeze: from then on they carry
// no reply (what arrives is dropped), and stay open, as after a partition.
type freezer struct {
	mu    sync.Mutex
	conns []*freezable
}

type freezable struct {
	net.Conn
	frozen atomic.Bool
}

func (c *freezable) Read(b []byte) (int, error) {
	for {
		n, err := c.Conn.Read(b)
		if !c.frozen.Load() || err != nil {
			return n, err // frozen: the read deadline, or the close
		}
	}
}

func (f *freezer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	fc := &freezable{Conn: c}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.conns = append(f.conns, fc)
	return fc, nil
}

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.frozen.Store(true)
	}
}

// TestWaitOnADeadConnectionIsBounded (KV-10): a client with no read
// timeout (ReadTimeout -1) still gives the store's wait client one, a
// margin past the slice: a wait whose connection died without a reset is
// cut and sent again on another, and gets the answer. Before, it waited
// for the kernel to notice, if ever.
func TestWaitOnADeadConnectionIsBounded(t *testing.T) {
	defer func(d time.Duration) { waitMargin = d }(waitMargin)
	waitMargin = 300 * time.Millisecond
	addr := server(t)
	fz := &freezer{}
	c := client(t, addr, func(o *redis.Options) {
		o.ReadTimeout = -1
		o.Dialer = fz.dial
	})
	ws := store(t, c, WaitSlice(200*time.Millisecond))
	runner := open[string](t, store(t, client(t, addr)), "frozen")
	waiter := open[string](t, ws, "frozen")
	release, _ := hold(t, runner, "k", "answer")
	got := make(chan string, 1)
	go func() {
		v, err := waiter.Run(context.Background(), "k", nil2[string]())
		if err != nil {
			v = err.Error()
		}
		got <- v
	}()
	eventually(t, 5*time.Second, "the wait on the server", func() bool {
		return serverWaiters(t, client(t, addr), "frozen:k") == 1
	})
	fz.freeze()
	time.Sleep(100 * time.Millisecond)
	release()
	select {
	case v := <-got:
		if v != "answer" {
			t.Fatalf("waiter: %q", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait on a dead connection was never cut")
	}
}

// replyErr is an error reply of the server, as go-redis gives one.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// TestRefusedAnswerFailsTheRun (KV-12, KV-13): a COMPLETE the server
// refuses with an error reply (an answer too long for it) would be
// refused again, sent again or computed again by another caller: the run
// is aborted with the server's word, and the callers waiting for it, here
// and elsewhere, fail with it rather than run fn again one after another.
func TestRefusedAnswerFailsTheRun(t *testing.T) {
	addr := server(t)
	rdb := client(t, addr)
	const refusal = "ERR value is too long (at most 67108855 bytes)"
	h := &failingCmd{name: "once.complete", first: 1, err: replyErr(refusal)}
	rdb.AddHook(h)
	s := store(t, rdb)
	o := open[string](t, s, "refusedanswer")
	other := open[string](t, store(t, client(t, addr)), "refusedanswer")

	release, first := hold(t, o, "k", "too long")
	local := make(chan error, 1)
	go func() {
		_, err := o.Run(ctxFor(t, 10*time.Second), "k", nil2[string]())
		local <- err
	}()
	elsewhere := make(chan error, 1)
	go func() {
		_, err := other.Run(ctxFor(t, 10*time.Second), "k", nil2[string]())
		elsewhere <- err
	}()
	eventually(t, 5*time.Second, "a caller in the flight and one waiting on the server", func() bool {
		return members(s, "refusedanswer:k") == 1 && serverWaiters(t, client(t, addr), "refusedanswer:k") == 1
	})
	release()
	if err := recv(t, first); err == nil || !strings.Contains(err.Error(), refusal) {
		t.Fatalf("the runner: %v, want the refusal", err)
	}
	for what, ch := range map[string]chan error{"the caller in the flight": local, "the caller elsewhere": elsewhere} {
		var fe *FailedError
		if err := recv(t, ch); !errors.As(err, &fe) || !strings.Contains(fe.Message, refusal) {
			t.Fatalf("%s: %v, want the run failed with the refusal", what, err)
		}
	}
	if n := h.calls.Load(); n != 1 {
		t.Fatalf("%d COMPLETEs sent, want the refused one only", n)
	}
	if st := status(t, client(t, addr), "refusedanswer:k"); st != nil {
		t.Fatalf("the key holds %v, want it free", st)
	}
}

// TestLostLeaseFreesTheFlight (KV-13): when the extender finds the claim
// gone, the flight's other callers claim again at once, while fn, which
// ignores its cancelled context, still runs. Before, they waited for fn
// to return.
func TestLostLeaseFreesTheFlight(t *testing.T) {
	addr := server(t)
	s := store(t, client(t, addr))
	o := open[string](t, s, "lostlease", Lease(300*time.Millisecond))
	release, first := hold(t, o, "k", "late") // fn is deaf to its context
	second := make(chan RunInfo[string], 1)
	secondErr := make(chan error, 1)
	go func() {
		info, err := o.RunInfo(ctxFor(t, 20*time.Second), "k", func(context.Context) (string, error) { return "second", nil })
		second <- info
		secondErr <- err
	}()
	eventually(t, 5*time.Second, "the second caller in the flight", func() bool { return members(s, "lostlease:k") == 1 })
	// The running record is deleted: a lapse; the next EXTEND is STALE.
	if err := client(t, addr).Del(context.Background(), "lostlease:k").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case info := <-second:
		if err := <-secondErr; err != nil || info.Value != "second" || info.Replayed {
			t.Fatalf("second caller: %+v, %v", info, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second caller waited for the first run's fn, whose lease was lost")
	}
	release()
	if err := recv(t, first); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("first caller: %v, want ErrLeaseLost", err)
	}
	if got, err := o.Run(ctxFor(t, 5*time.Second), "k", nil2[string]()); err != nil || got != "second" {
		t.Fatalf("kept answer %q %v, want the second run's", got, err)
	}
}

// TestWaitTimeoutKeepsAFittedSlice: a wait on a client whose read
// timeout the store knows (its slice fits under it) that times out
// anyway lost its connection, not its slice: it is sent again, the same
// slice, and the store's slice does not shrink for good. Twice in a row
// is a failure, reported.
func TestWaitTimeoutKeepsAFittedSlice(t *testing.T) {
	addr := server(t)
	short := func(o *redis.Options) { o.ReadTimeout = 400 * time.Millisecond }
	for _, tc := range []struct {
		name     string
		timeouts int32 // waits that time out, in a row
		wantErr  bool
	}{
		{"one timeout", 1, false},
		{"two in a row", 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := client(t, addr, short)
			ws := store(t, c, BlockingClient(c))
			const slice = 200 * time.Millisecond
			if ws.maxSlice() != slice {
				t.Fatalf("slice %v, want %v", ws.maxSlice(), slice)
			}
			// The waiter's first claim (no WAIT) is call 1; its waits follow.
			c.AddHook(&failingCmd{name: "once.claim", first: 2, last: 1 + tc.timeouts, err: injectedTimeout{}})
			runner := open[string](t, store(t, client(t, addr)), "fit")
			waiter := open[string](t, ws, "fit")
			release, done := hold(t, runner, tc.name, "answer")
			time.AfterFunc(500*time.Millisecond, release)
			got, err := waiter.Run(ctxFor(t, 10*time.Second), tc.name, nil2[string]())
			<-done
			switch {
			case tc.wantErr && !isTimeout(err):
				t.Fatalf("waiter: %q %v, want the timeout", got, err)
			case !tc.wantErr && (err != nil || got != "answer"):
				t.Fatalf("waiter: %q %v", got, err)
			}
			if ws.maxSlice() != slice {
				t.Fatalf("slice %v after a timeout, want %v kept", ws.maxSlice(), slice)
			}
		})
	}
}

// failingCmd is a go-redis hook that makes the calls first…last (counted
// from 1; last 0: every one from first on) of the command name take delay
// and then fail with err, without reaching the server, as a slow or
// broken network would; the other calls go through.
type failingCmd struct {
	name        string
	first, last int32
	delay       time.Duration
	err         error
	calls       atomic.Int32
}

func (h *failingCmd) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *failingCmd) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *failingCmd) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), h.name) {
			if n := h.calls.Add(1); n >= h.first && (h.last == 0 || n <= h.last) {
				time.Sleep(h.delay)
				err := h.err
				if err == nil {
					err = errors.New("connection reset (injected)")
				}
				cmd.SetErr(err)
				return err
			}
		}
		return next(ctx, cmd)
	}
}

// injectedTimeout is a read timeout, as net.Error says one.
type injectedTimeout struct{}

func (injectedTimeout) Error() string   { return "i/o timeout (injected)" }
func (injectedTimeout) Timeout() bool   { return true }
func (injectedTimeout) Temporary() bool { return true }

// TestSlowFailedExtensionKeepsTheClaim (KV-13): a lease of 600 ms is
// extended every 200 ms, counted from when each extension starts. One
// that fails after 300 ms leaves the lease the one before set 300 ms to
// run, and the next goes at once: the claim holds. Timed from when each
// ended, the next went 200 ms after the failure, after the lease lapsed.
func TestSlowFailedExtensionKeepsTheClaim(t *testing.T) {
	addr := server(t)
	rdb := client(t, addr)
	h := &failingCmd{name: "once.extend", first: 2, last: 2, delay: 300 * time.Millisecond, err: injectedTimeout{}}
	rdb.AddHook(h)
	o := open[int](t, store(t, rdb), "slowext", Lease(600*time.Millisecond))
	_, err := o.RunInfo(ctxFor(t, 5*time.Second), "k", func(ctx context.Context) (int, error) {
		select {
		case <-time.After(1500 * time.Millisecond):
			return 1, nil
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
	})
	if err != nil {
		t.Fatalf("run: %v (extensions tried: %d)", err, h.calls.Load())
	}
	if in := serverInfo(t, client(t, addr)); in["lease_lapses"] != 0 {
		t.Fatalf("a lease lapsed: INFO once %v", in)
	}
}

// TestLeaseLost: a runner whose claim is gone gets its value with
// ErrLeaseLost, and fn's context is cancelled with that cause.
func TestLeaseLost(t *testing.T) {
	addr := server(t)
	rdb := client(t, addr)
	for _, tc := range []struct {
		name     string
		noExtend bool
		lease    time.Duration
		// lose makes the claim go while fn runs, then lets fn return.
		lose     func(t *testing.T, key string, proceed chan<- struct{})
		waitCtx  bool // fn returns when its context ends
		wantVal  bool
		otherRun bool // someone else runs the key meanwhile
	}{
		{name: "deleted while running", lease: time.Second, wantVal: true,
			lose: func(t *testing.T, key string, proceed chan<- struct{}) {
				if n, err := rdb.Del(context.Background(), key).Result(); n != 1 || err != nil {
					t.Errorf("DEL: %d %v", n, err)
				}
				close(proceed)
			}},
		{name: "lapsed, extension off", noExtend: true, lease: 150 * time.Millisecond, wantVal: true, otherRun: true,
			lose: func(t *testing.T, key string, proceed chan<- struct{}) {
				time.Sleep(200 * time.Millisecond)
				close(proceed)
			}},
		{name: "extender notices and cancels fn", lease: 150 * time.Millisecond, waitCtx: true,
			lose: func(t *testing.T, key string, proceed chan<- struct{}) {
				rdb.Del(context.Background(), key)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := open[string](t, store(t, rdb), "lost", Lease(tc.lease))
			o.noExtend = tc.noExtend
			key := strings.ReplaceAll(tc.name, " ", "-")
			started, proceed := make(chan struct{}), make(chan struct{})
			var cause error
			type res struct {
				v   string
				err error
			}
			out := make(chan res, 1)
			go func() {
				v, err := o.Run(ctxFor(t, 5*time.Second), key, func(ctx context.Context) (string, error) {
					close(started)
					if tc.waitCtx {
						<-ctx.Done()
						cause = context.Cause(ctx)
						return "", ctx.Err()
					}
					<-proceed
					return "computed", nil
				})
				out <- res{v, err}
			}()
			recv(t, started)
			tc.lose(t, "lost:"+key, proceed)
			if tc.otherRun {
				// The lapsed key is free: another process runs it.
				other := open[string](t, store(t, client(t, addr)), "lost")
				v, err := other.Run(ctxFor(t, time.Second), key, func(context.Context) (string, error) { return "other", nil })
				if err != nil || v != "other" {
					t.Fatalf("other process: %q %v", v, err)
				}
			}
			r := recv(t, out)
			if !errors.Is(r.err, ErrLeaseLost) {
				t.Fatalf("got %q, %v; want ErrLeaseLost", r.v, r.err)
			}
			if tc.wantVal && r.v != "computed" {
				t.Fatalf("value %q, want the computed one with the error", r.v)
			}
			if tc.waitCtx && !errors.Is(cause, ErrLeaseLost) {
				t.Fatalf("fn's context cause: %v, want ErrLeaseLost", cause)
			}
			if tc.otherRun {
				v, err := o.Run(ctxFor(t, time.Second), key, func(context.Context) (string, error) { return "again", nil })
				if v != "other" || err != nil {
					t.Fatalf("the kept answer is %q %v, want the other process's", v, err)
				}
			}
		})
	}
}

// TestTakeover: when a runner's lease lapses, a waiting caller takes the
// run over (KV-13) with a newer token.
func TestTakeover(t *testing.T) {
	addr := server(t)
	rdb := client(t, addr)
	const lease = 400 * time.Millisecond
	dead := open[int](t, store(t, rdb), "t", Lease(lease))
	dead.noExtend = true // as if its process hung
	live := open[int](t, store(t, client(t, addr)), "t", Lease(lease))
	started, hung := make(chan struct{}), make(chan struct{})
	deadOut := make(chan RunInfo[int], 1)
	deadErr := make(chan error, 1)
	go func() {
		info, err := dead.RunInfo(ctxFor(t, 5*time.Second), "k", func(context.Context) (int, error) {
			close(started)
			<-hung
			return 1, nil
		})
		deadOut <- info
		deadErr <- err
	}()
	recv(t, started)
	info, err := live.RunInfo(ctxFor(t, 5*time.Second), "k", func(context.Context) (int, error) { return 2, nil })
	if err != nil || info.Value != 2 || info.Replayed {
		t.Fatalf("waiter: %+v %v, want it to take the run over", info, err)
	}
	close(hung)
	if err := recv(t, deadErr); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("hung runner: %v", err)
	}
	if d := recv(t, deadOut); d.Token >= info.Token {
		t.Fatalf("tokens: first %d, takeover %d; want growing", d.Token, info.Token)
	}
	if in := serverInfo(t, rdb); in["handoffs"] != 1 {
		t.Fatalf("INFO once handoffs %d, want 1", in["handoffs"])
	}
}

// TestRunsHoldNoExtenderGoroutine: a run's lease extension is a timer, not
// a goroutine, so that many runs under way at once (slow functions) cost
// no stack each beside their callers'.
func TestRunsHoldNoExtenderGoroutine(t *testing.T) {
	o := open[int](t, store(t, client(t, server(t))), "extgo", Lease(30*time.Second))
	const n = 200
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(n)
	before := runtime.NumGoroutine()
	done := make(chan error, n)
	for i := range n {
		go func() {
			_, err := o.Run(ctxFor(t, 10*time.Second), strconv.Itoa(i), func(context.Context) (int, error) {
				started.Done()
				<-release
				return i, nil
			})
			done <- err
		}()
	}
	started.Wait()
	during := runtime.NumGoroutine() - before
	close(release)
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if during > n+n/4 {
		t.Fatalf("%d goroutines more while %d runs were under way, want about one per caller", during, n)
	}
}
