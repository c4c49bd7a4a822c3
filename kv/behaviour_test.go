package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestReentrant: a Run of a key inside its own run fails at once (KV-11);
// other keys are fine. Also through another Store made on the same
// client: the same server, so the same key (before, the nested Run
// waited for its own run until its context ended).
func TestReentrant(t *testing.T) {
	addr := server(t)
	rdb := client(t, addr)
	s := store(t, rdb)
	o := open[string](t, s, "re")
	same := open[string](t, s, "re")             // another handle on the same keys
	twin := open[string](t, store(t, rdb), "re") // another Store on the same client
	otherName := open[string](t, s, "other")
	inner := func(context.Context) (string, error) { return "inner", nil }
	for _, tc := range []struct {
		name    string
		key     string
		nested  func(ctx context.Context) (string, error)
		wantErr error
		want    string
	}{
		{"same key", "a", func(ctx context.Context) (string, error) { return o.Run(ctx, "a", inner) }, ErrReentrant, ""},
		{"same key, other handle, fingerprint", "b", func(ctx context.Context) (string, error) {
			return same.WithFingerprint("x").Run(ctx, "b", inner)
		}, ErrReentrant, ""},
		{"same key from a goroutine with fn's context", "c", func(ctx context.Context) (string, error) {
			ch := make(chan error, 1)
			go func() { _, err := o.Run(ctx, "c", inner); ch <- err }()
			return "", <-ch
		}, ErrReentrant, ""},
		{"same key through another Store on the same client", "h", func(ctx context.Context) (string, error) {
			return twin.Run(ctx, "h", inner)
		}, ErrReentrant, ""},
		{"through another key", "d", func(ctx context.Context) (string, error) {
			return o.Run(ctx, "d2", func(ctx context.Context) (string, error) { return o.Run(ctx, "d", inner) })
		}, ErrReentrant, ""},
		{"other key", "e", func(ctx context.Context) (string, error) { return o.Run(ctx, "e2", inner) }, nil, "inner"},
		{"same key, other name", "f", func(ctx context.Context) (string, error) { return otherName.Run(ctx, "f", inner) }, nil, "inner"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxFor(t, time.Second)
			var nestedErr error
			var took time.Duration
			v, err := o.Run(ctx, tc.key, func(ctx context.Context) (string, error) {
				t0 := time.Now()
				v, err := tc.nested(ctx)
				took, nestedErr = time.Since(t0), err
				return v, err
			})
			if !errors.Is(nestedErr, tc.wantErr) {
				t.Fatalf("nested Run: %v, want %v", nestedErr, tc.wantErr)
			}
			if took > 200*time.Millisecond {
				t.Fatalf("nested Run took %v: detected by timing out?", took)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, ErrReentrant) {
					t.Fatalf("outer Run: %v", err)
				}
				return
			}
			if err != nil || v != tc.want {
				t.Fatalf("outer Run: %q %v", v, err)
			}
		})
	}
	// Callers in the same flight as the runner are not re-entrant: they
	// wait for it as usual.
	release := make(chan struct{})
	wait := runAll(5, func(int) (RunInfo[string], error) {
		return o.RunInfo(ctxFor(t, 2*time.Second), "g", func(context.Context) (string, error) {
			<-release
			return "g", nil
		})
	})
	time.Sleep(50 * time.Millisecond)
	close(release)
	for _, r := range wait() {
		if r.err != nil || r.info.Value != "g" {
			t.Fatalf("%+v %v", r.info, r.err)
		}
	}
}

// TestMismatch: a fingerprint that differs from the key's fails with
// ErrMismatch, while the key runs and once it is done (KV-15).
func TestMismatch(t *testing.T) {
	addr := server(t)
	rdb := client(t, addr)
	o := open[string](t, store(t, rdb), "fp")
	byKey := open[string](t, store(t, client(t, addr)), "fp", Fingerprint(func(key string) string { return "fp-of-" + key }))
	started, release := make(chan struct{}), make(chan struct{})
	runner := make(chan error, 1)
	go func() {
		_, err := o.WithFingerprint("sha256:aaa").Run(ctxFor(t, 5*time.Second), "k", func(context.Context) (string, error) {
			close(started)
			<-release
			return "receipt-a", nil
		})
		runner <- err
	}()
	recv(t, started)
	fn := func(context.Context) (string, error) { return "receipt-b", nil }
	check := func(when string) {
		for _, tc := range []struct {
			name string
			o    *Once[string]
			want error
		}{
			{"other fingerprint", o.WithFingerprint("sha256:bbb"), ErrMismatch},
			{"fingerprint from the key", byKey, ErrMismatch},
			{"the per-call one wins", byKey.WithFingerprint("sha256:aaa"), nil},
			{"no fingerprint", o, nil},
			{"empty per-call fingerprint is none", byKey.WithFingerprint(""), nil},
		} {
			ctx := ctxFor(t, 2*time.Second)
			if tc.want == nil && when == "running" {
				continue // would wait
			}
			t0 := time.Now()
			v, err := tc.o.Run(ctx, "k", fn)
			if !errors.Is(err, tc.want) {
				t.Fatalf("%s, %s: %q %v, want %v", when, tc.name, v, err, tc.want)
			}
			if tc.want == nil && v != "receipt-a" {
				t.Fatalf("%s, %s: %q, want the kept answer", when, tc.name, v)
			}
			if time.Since(t0) > 500*time.Millisecond {
				t.Fatalf("%s, %s took %v", when, tc.name, time.Since(t0))
			}
		}
	}
	check("running")
	close(release)
	if err := recv(t, runner); err != nil {
		t.Fatal(err)
	}
	check("done")
	if fp := status(t, rdb, "fp:k")["fingerprint"]; fp != "sha256:aaa" {
		t.Fatalf("stored fingerprint %v", fp)
	}
}

// TestCancel: a waiter whose context ends returns ctx.Err() promptly and
// the run goes on.
func TestCancel(t *testing.T) {
	addr := server(t)
	rdb := client(t, addr)
	runnerStore := store(t, rdb)
	for _, tc := range []struct {
		name     string
		sameSt   bool // the waiter shares the runner's store (in-process flight)
		deadline bool // the waiter's context has a deadline, else it is cancelled
	}{
		{"cancelled, same store", true, false},
		{"cancelled, other store", false, false},
		{"deadline, same store", true, true},
		{"deadline, other store", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := tc.name
			o := open[int](t, runnerStore, "c")
			ws := runnerStore
			if !tc.sameSt {
				ws = store(t, client(t, addr))
			}
			w := open[int](t, ws, "c")
			started := make(chan struct{})
			runner := make(chan error, 1)
			go func() {
				_, err := o.Run(ctxFor(t, 5*time.Second), key, func(ctx context.Context) (int, error) {
					close(started)
					select {
					case <-time.After(500 * time.Millisecond):
						return 5, nil
					case <-ctx.Done():
						return 0, ctx.Err()
					}
				})
				runner <- err
			}()
			recv(t, started)
			ctx, cancel := context.WithCancel(context.Background())
			want := context.Canceled
			if tc.deadline {
				ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
				want = context.DeadlineExceeded
			}
			defer cancel()
			out := make(chan error, 1)
			go func() {
				_, err := w.Run(ctx, key, func(context.Context) (int, error) { return 0, errors.New("waiter ran") })
				out <- err
			}()
			if tc.deadline {
				<-ctx.Done()
			} else {
				time.Sleep(100 * time.Millisecond)
				cancel()
			}
			t0 := time.Now()
			select {
			case err := <-out:
				if !errors.Is(err, want) {
					t.Fatalf("waiter: %v, want %v", err, want)
				}
				if d := time.Since(t0); d > 100*time.Millisecond {
					t.Fatalf("waiter returned %v after its context ended", d)
				}
			case <-time.After(300 * time.Millisecond):
				t.Fatal("waiter did not return when its context ended")
			}
			if err := recv(t, runner); err != nil {
				t.Fatalf("runner: %v", err)
			}
			if v, err := w.Run(ctxFor(t, time.Second), key, nil2[int]()); v != 5 || err != nil {
				t.Fatalf("after: %d %v", v, err)
			}
		})
	}
	eventually(t, time.Second, "no flights left", func() bool { return flights(runnerStore) == 0 })
}

// nil2 is a function that must not run.
func nil2[T any]() func(context.Context) (T, error) {
	return func(context.Context) (T, error) {
		var z T
		return z, errors.New("ran")
	}
}

// TestLongWait: waits longer than the client's read timeout still get the
// answer: they are sent in slices.
func TestLongWait(t *testing.T) {
	addr := server(t)
	short := func(o *redis.Options) { o.ReadTimeout = 200 * time.Millisecond }
	for _, tc := range []struct {
		name     string
		store    func(t *testing.T) *Store
		runFor   time.Duration
		maxSlice time.Duration // the store's wait slice afterwards
	}{
		{"dedicated blocking client", func(t *testing.T) *Store { return store(t, client(t, addr, short)) },
			time.Second, DefaultWaitSlice},
		{"shared client, slices under its read timeout", func(t *testing.T) *Store {
			c := client(t, addr, short)
			return store(t, c, BlockingClient(c))
		}, time.Second, 100 * time.Millisecond},
		{"dedicated client, short slices", func(t *testing.T) *Store {
			return store(t, client(t, addr, short), WaitSlice(50*time.Millisecond))
		}, time.Second, 50 * time.Millisecond},
		// New cannot see this client's read timeout: the first waits time
		// out, and the store shortens its slices until they fit.
		{"wrapped client (not a *redis.Client)", func(t *testing.T) *Store {
			return store(t, wrapped{client(t, addr, short)})
		}, 3 * time.Second, 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runner := open[string](t, store(t, client(t, addr, short)), "long")
			ws := tc.store(t)
			waiter := open[string](t, ws, "long")
			started := make(chan struct{})
			go func() {
				_, _ = runner.Run(ctxFor(t, 10*time.Second), tc.name, func(context.Context) (string, error) {
					close(started)
					time.Sleep(tc.runFor)
					return "slow answer", nil
				})
			}()
			recv(t, started)
			t0 := time.Now()
			info, err := waiter.RunInfo(ctxFor(t, 10*time.Second), tc.name, nil2[string]())
			if err != nil || info.Value != "slow answer" || !info.Replayed {
				t.Fatalf("waiter: %+v %v", info, err)
			}
			if d := time.Since(t0); d < tc.runFor-200*time.Millisecond {
				t.Fatalf("waited only %v", d)
			}
			if got := ws.maxSlice(); got > tc.maxSlice {
				t.Fatalf("wait slice %v, want ≤ %v", got, tc.maxSlice)
			}
		})
	}
}

// wrapped hides the *redis.Client type, as a user's wrapper would.
type wrapped struct{ redis.UniversalClient }

// TestSingleflight: a thousand callers of one key in one process hold one
// connection and one server wait, and the pool stays free for others.
func TestSingleflight(t *testing.T) {
	const n = 1000
	addr := server(t)
	admin := client(t, addr)
	t.Run("waiting on another process's run", func(t *testing.T) {
		runner := open[int](t, store(t, client(t, addr)), "sf")
		rdb := client(t, addr, func(o *redis.Options) { o.PoolSize = 4 })
		s := store(t, rdb)
		o := open[int](t, s, "sf")
		release := make(chan struct{})
		started := make(chan struct{})
		go func() {
			_, _ = runner.Run(ctxFor(t, 10*time.Second), "k", func(context.Context) (int, error) {
				close(started)
				<-release
				return 99, nil
			})
		}()
		recv(t, started)
		before := clients(t, admin)
		var calls atomic.Int32
		wait := runAll(n, func(int) (RunInfo[int], error) {
			return o.RunInfo(ctxFor(t, 10*time.Second), "k", func(context.Context) (int, error) {
				calls.Add(1)
				return 0, nil
			})
		})
		eventually(t, 5*time.Second, "all callers in the flight", func() bool { return members(s, "sf:k") == n })
		time.Sleep(50 * time.Millisecond)
		if w := serverInfo(t, admin)["waiting_clients"]; w > 2 {
			t.Errorf("waiting_clients %d for %d callers, want ≤ 2", w, n)
		}
		if c := clients(t, admin) - before; c > 2 {
			t.Errorf("%d more connections for %d callers, want ≤ 2", c, n)
		}
		// The client's own pool is free for other commands.
		for i := range 20 {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			t0 := time.Now()
			err := rdb.Set(ctx, "plain"+strconv.Itoa(i), i, 0).Err()
			if err == nil {
				err = rdb.Get(ctx, "plain"+strconv.Itoa(i)).Err()
			}
			cancel()
			if err != nil || time.Since(t0) > 100*time.Millisecond {
				t.Fatalf("SET/GET during the wait: %v after %v", err, time.Since(t0))
			}
		}
		close(release)
		for i, r := range wait() {
			if r.err != nil || r.info.Value != 99 || !r.info.Replayed {
				t.Fatalf("caller %d: %+v %v", i, r.info, r.err)
			}
		}
		if calls.Load() != 0 {
			t.Fatalf("fn ran %d times in the waiting process", calls.Load())
		}
	})
	t.Run("one of them runs", func(t *testing.T) {
		s := store(t, client(t, addr))
		o := open[int](t, s, "sf")
		var calls atomic.Int32
		release := make(chan struct{})
		wait := runAll(n, func(int) (RunInfo[int], error) {
			return o.RunInfo(ctxFor(t, 10*time.Second), "mine", func(context.Context) (int, error) {
				<-release
				return int(calls.Add(1)), nil
			})
		})
		eventually(t, 5*time.Second, "all callers in the flight", func() bool { return members(s, "sf:mine") == n-1 })
		if w := serverInfo(t, admin)["waiting_clients"]; w != 0 {
			t.Errorf("waiting_clients %d, want 0: the callers wait in the process", w)
		}
		close(release)
		ran := 0
		var tok int64
		for i, r := range wait() {
			if r.err != nil || r.info.Value != 1 {
				t.Fatalf("caller %d: %+v %v", i, r.info, r.err)
			}
			if !r.info.Replayed {
				ran++
				tok = r.info.Token
			}
		}
		if ran != 1 || calls.Load() != 1 {
			t.Fatalf("%d runners, fn ran %d times", ran, calls.Load())
		}
		for i, r := range wait() {
			if r.info.Token != tok {
				t.Fatalf("caller %d has token %d, the run's is %d", i, r.info.Token, tok)
			}
		}
	})
	// Waits that share the client's own pool (BlockingClient(rdb), or a
	// client New cannot clone) leave a connection of it to other commands:
	// before, the default of 4 waits took all of a pool of 3, and other
	// commands queued behind a wait slice.
	t.Run("waits on a shared client leave it a connection", func(t *testing.T) {
		runner := open[int](t, store(t, client(t, addr)), "shared")
		rdb := client(t, addr, func(o *redis.Options) { o.PoolSize = 3 })
		s := store(t, rdb, BlockingClient(rdb))
		o := open[int](t, s, "shared")
		const keys = 6
		release := make(chan struct{})
		for k := range keys {
			started := make(chan struct{})
			go func() {
				_, _ = runner.Run(ctxFor(t, 10*time.Second), strconv.Itoa(k), func(context.Context) (int, error) {
					close(started)
					<-release
					return k, nil
				})
			}()
			recv(t, started)
		}
		wait := runAll(keys, func(i int) (RunInfo[int], error) {
			return o.RunInfo(ctxFor(t, 10*time.Second), strconv.Itoa(i), nil2[int]())
		})
		eventually(t, 5*time.Second, "server waits", func() bool { return serverInfo(t, admin)["waiting_clients"] >= 2 })
		time.Sleep(50 * time.Millisecond)
		if w := serverInfo(t, admin)["waiting_clients"]; w != 2 {
			t.Errorf("waiting_clients %d, want 2: all of the pool of 3 but one", w)
		}
		for i := range 10 {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			t0 := time.Now()
			err := rdb.Get(ctx, "nothing").Err()
			cancel()
			if err != redis.Nil || time.Since(t0) > 100*time.Millisecond {
				t.Fatalf("GET %d during the waits: %v after %v", i, err, time.Since(t0))
			}
		}
		close(release)
		for i, r := range wait() {
			if r.err != nil || r.info.Value != i {
				t.Fatalf("caller %d: %+v %v", i, r.info, r.err)
			}
		}
	})
	t.Run("many keys do not starve the pool", func(t *testing.T) {
		runner := open[int](t, store(t, client(t, addr)), "many")
		rdb := client(t, addr, func(o *redis.Options) { o.PoolSize = 3 })
		s := store(t, rdb, MaxBlockingConns(8))
		o := open[int](t, s, "many")
		const keys = 20
		release := make(chan struct{})
		for k := range keys {
			started := make(chan struct{})
			go func() {
				_, _ = runner.Run(ctxFor(t, 10*time.Second), strconv.Itoa(k), func(context.Context) (int, error) {
					close(started)
					<-release
					return k, nil
				})
			}()
			recv(t, started)
		}
		wait := runAll(keys*10, func(i int) (RunInfo[int], error) {
			return o.RunInfo(ctxFor(t, 10*time.Second), strconv.Itoa(i%keys), nil2[int]())
		})
		eventually(t, 5*time.Second, "8 server waits", func() bool { return serverInfo(t, admin)["waiting_clients"] == 8 })
		time.Sleep(50 * time.Millisecond)
		if w := serverInfo(t, admin)["waiting_clients"]; w != 8 {
			t.Errorf("waiting_clients %d, want MaxBlockingConns (8)", w)
		}
		for i := range 10 {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			t0 := time.Now()
			err := rdb.Get(ctx, "nothing").Err()
			cancel()
			if err != redis.Nil || time.Since(t0) > 100*time.Millisecond {
				t.Fatalf("GET %d during the waits: %v after %v", i, err, time.Since(t0))
			}
		}
		close(release)
		for i, r := range wait() {
			if r.err != nil || r.info.Value != i%keys {
				t.Fatalf("caller %d: %+v %v", i, r.info, r.err)
			}
		}
	})
}

// TestCodec: JSON by default, or the codec given; every caller decodes its
// own copy.
func TestCodec(t *testing.T) {
	addr := server(t)
	rdb := client(t, addr)
	s := store(t, rdb)
	want := receipt{ID: "r1", Amount: 1250, Items: []string{"book", "pen"}, Meta: map[string]string{"card": "visa"}}
	for _, tc := range []struct {
		name  string
		opts  []Option
		bytes string // the stored answer
	}{
		{"json", nil, `{"id":"r1","amount":1250,"items":["book","pen"],"meta":{"card":"visa"}}`},
		{"custom", []Option{WithCodec(pipeCodec{})}, "r1|1250|book,pen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := open[receipt](t, s, "codec-"+tc.name, tc.opts...)
			got, err := o.Run(ctxFor(t, time.Second), "k", func(context.Context) (receipt, error) { return want, nil })
			if err != nil || got.ID != want.ID {
				t.Fatal(got, err)
			}
			raw, err := rdb.Do(context.Background(), "once.wait", "codec-"+tc.name+":k").Slice()
			if err != nil || raw[0] != "done" || raw[1] != tc.bytes {
				t.Fatalf("stored %q %v, want %q", raw, err, tc.bytes)
			}
			a, err := o.Run(ctxFor(t, time.Second), "k", nil2[receipt]())
			if err != nil {
				t.Fatal(err)
			}
			b, _ := o.Run(ctxFor(t, time.Second), "k", nil2[receipt]())
			if a.ID != "r1" || a.Amount != 1250 || fmt.Sprint(a.Items) != "[book pen]" {
				t.Fatalf("replayed %+v", a)
			}
			a.Items[0] = "changed"
			if b.Items[0] != "book" {
				t.Fatal("replays share memory")
			}
		})
	}
	t.Run("undecodable answer", func(t *testing.T) {
		o := open[receipt](t, s, "codec-bad", WithCodec(pipeCodec{}))
		if _, err := open[string](t, s, "codec-bad").Run(ctxFor(t, time.Second), "k", func(context.Context) (string, error) {
			return "just a string", nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := o.Run(ctxFor(t, time.Second), "k", nil2[receipt]()); err == nil {
			t.Fatal("decoded a foreign answer")
		}
	})
	t.Run("unencodable answer aborts", func(t *testing.T) {
		o := open[func()](t, s, "codec-fn")
		_, err := o.Run(ctxFor(t, time.Second), "k", func(context.Context) (func(), error) { return func() {}, nil })
		if err == nil || status(t, rdb, "codec-fn:k") != nil {
			t.Fatalf("err %v, status %v; want an error and a free key", err, status(t, rdb, "codec-fn:k"))
		}
	})
}

// pipeCodec encodes receipts as id|amount|items.
type pipeCodec struct{}

func (pipeCodec) Marshal(v any) ([]byte, error) {
	r, ok := v.(receipt)
	if !ok {
		return nil, fmt.Errorf("pipeCodec: %T", v)
	}
	return fmt.Appendf(nil, "%s|%d|%s", r.ID, r.Amount, bytes.Join(func() [][]byte {
		var out [][]byte
		for _, it := range r.Items {
			out = append(out, []byte(it))
		}
		return out
	}(), []byte(","))), nil
}

func (pipeCodec) Unmarshal(data []byte, v any) error {
	r, ok := v.(*receipt)
	parts := bytes.Split(data, []byte("|"))
	if !ok || len(parts) != 3 {
		return fmt.Errorf("pipeCodec: cannot decode %q into %T", data, v)
	}
	n, err := strconv.Atoi(string(parts[1]))
	if err != nil {
		return err
	}
	*r = receipt{ID: string(parts[0]), Amount: n}
	for _, it := range bytes.Split(parts[2], []byte(",")) {
		r.Items = append(r.Items, string(it))
	}
	return nil
}

// TestErrors: argument checks and server errors.
func TestErrors(t *testing.T) {
	addr := server(t)
	rdb := client(t, addr)
	s := store(t, rdb)
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"negative keep", []Option{Keep(-time.Second)}},
		{"zero lease", []Option{Lease(0)}},
		{"nil codec", []Option{WithCodec(nil)}},
	} {
		if _, err := OpenOnce[int](s, "x", tc.opts...); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if _, err := OpenOnce[int](s, ""); err == nil {
		t.Error("empty name: no error")
	}
	o := open[int](t, s, "e")
	if _, err := o.Run(context.Background(), "k", nil); err == nil {
		t.Error("nil fn: no error")
	}
	rdb.Set(context.Background(), "e:str", "x", 0)
	if _, err := o.Run(ctxFor(t, time.Second), "str", nil2[int]()); err == nil || !bytes.Contains([]byte(err.Error()), []byte("WRONGTYPE")) {
		t.Errorf("string key: %v, want WRONGTYPE", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := o.Run(ctx, "k", nil2[int]()); err != context.Canceled {
		t.Errorf("cancelled context: %v", err)
	}
}

// TestWaitSliceFitsClusterAndRingTimeouts: a cluster's or a ring's read
// timeout is read from its options, as a client's is, and the wait slice
// fits under it (half of it). Before, both were assumed to have 5 s, which
// a ring's shards (3 s by default) leave 0.5 s of room for, and a
// timeout of theirs shrank the slice for good.
func TestWaitSliceFitsClusterAndRingTimeouts(t *testing.T) {
	addrs := []string{"127.0.0.1:1"} // never dialled: New only reads options
	for _, tc := range []struct {
		name  string
		rdb   redis.UniversalClient
		slice time.Duration
	}{
		{"cluster, 400 ms", redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ReadTimeout: 400 * time.Millisecond}), 200 * time.Millisecond},
		{"cluster, default", redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs}), 2500 * time.Millisecond},
		{"cluster, none", redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ReadTimeout: -1}), DefaultWaitSlice},
		{"ring, 400 ms", redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": addrs[0]}, ReadTimeout: 400 * time.Millisecond}), 200 * time.Millisecond},
		{"ring, default", redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": addrs[0]}}), 1500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer tc.rdb.Close()
			s := New(tc.rdb)
			defer s.Close()
			if got := s.maxSlice(); got != tc.slice || !s.fitted {
				t.Fatalf("slice %v (fitted %v), want %v, fitted", got, s.fitted, tc.slice)
			}
		})
	}
}
