package kv

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncekv/oncekv/internal/testserver"
)

// server starts an in-process oncekv and returns its address.
func server(tb testing.TB, args ...string) string {
	tb.Helper()
	return testserver.Start(tb, args...).Addr().String()
}

// client connects to addr; mod adjusts the options. Closed at cleanup.
func client(tb testing.TB, addr string, mod ...func(*redis.Options)) *redis.Client {
	tb.Helper()
	o := &redis.Options{Addr: addr}
	for _, m := range mod {
		m(o)
	}
	c := redis.NewClient(o)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// store makes a Store over rdb, closed at cleanup.
func store(tb testing.TB, rdb redis.UniversalClient, opts ...StoreOption) *Store {
	tb.Helper()
	s := New(rdb, opts...)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// open opens a Once or fails tb.
func open[T any](tb testing.TB, s *Store, name string, opts ...Option) *Once[T] {
	tb.Helper()
	o, err := OpenOnce[T](s, name, opts...)
	if err != nil {
		tb.Fatalf("OpenOnce(%q): %v", name, err)
	}
	return o
}

// ctxFor is a context that ends after d or at cleanup.
func ctxFor(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

// status is ONCE.STATUS key as a map (nil when free).
func status(tb testing.TB, rdb *redis.Client, key string) map[string]any {
	tb.Helper()
	v, err := rdb.Do(context.Background(), "once.status", key).Result()
	if err == redis.Nil {
		return nil
	}
	if err != nil {
		tb.Fatalf("ONCE.STATUS %s: %v", key, err)
	}
	out := map[string]any{}
	switch v := v.(type) {
	case map[any]any:
		for k, x := range v {
			out[k.(string)] = x
		}
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			out[v[i].(string)] = v[i+1]
		}
	default:
		tb.Fatalf("ONCE.STATUS %s: unexpected reply %T %v", key, v, v)
	}
	return out
}

// statusInt is one integer field of ONCE.STATUS key (-100 when free).
func statusInt(tb testing.TB, rdb *redis.Client, key, field string) int64 {
	tb.Helper()
	st := status(tb, rdb, key)
	if st == nil {
		return -100
	}
	n, _ := st[field].(int64)
	return n
}

// info is INFO once as a map.
func serverInfo(tb testing.TB, rdb *redis.Client) map[string]int64 {
	tb.Helper()
	s, err := rdb.Info(context.Background(), "once").Result()
	if err != nil {
		tb.Fatalf("INFO once: %v", err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err == nil {
			out[k] = n
		}
	}
	if _, ok := out["waiting_clients"]; !ok {
		tb.Fatalf("INFO once has no waiting_clients: %q", s)
	}
	return out
}

// clients counts the server's connections (CLIENT LIST).
func clients(tb testing.TB, rdb *redis.Client) int {
	tb.Helper()
	s, err := rdb.ClientList(context.Background()).Result()
	if err != nil {
		tb.Fatalf("CLIENT LIST: %v", err)
	}
	return strings.Count(strings.TrimSpace(s), "\n") + 1
}

// eventually polls cond every 5 ms for up to d.
func eventually(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// members is the number of callers in the flight of a key (no fingerprint).
func members(s *Store, full string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.flights[flightKey{key: full}]
	if f == nil {
		return 0
	}
	return len(f.members)
}

// flights is the number of flights under way on s.
func flights(s *Store) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.flights)
}

// serverWaiters is the waiters field of ONCE.STATUS key.
func serverWaiters(tb testing.TB, rdb *redis.Client, key string) int64 {
	tb.Helper()
	return statusInt(tb, rdb, key, "waiters")
}

// result is one Run's outcome.
type result[T any] struct {
	info RunInfo[T]
	err  error
	took time.Duration
}

// runAll starts n goroutines calling run and returns their results once
// all are done; start is closed to let them go together.
func runAll[T any](n int, run func(i int) (RunInfo[T], error)) func() []result[T] {
	out := make([]result[T], n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			info, err := run(i)
			out[i] = result[T]{info, err, time.Since(t0)}
		}()
	}
	return func() []result[T] {
		wg.Wait()
		return out
	}
}

// recv receives from ch, failing tb after 15 s instead of hanging.
func recv[T any](tb testing.TB, ch <-chan T) T {
	tb.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(15 * time.Second):
		tb.Fatalf("nothing received in 15 s")
		panic("unreachable")
	}
}

// hold starts o.Run of key with a function that returns v once release
// is called, deaf to its context, and returns when the function runs;
// done gets Run's error. The test's end releases it too.
func hold[T any](tb testing.TB, o *Once[T], key string, v T) (release func(), done <-chan error) {
	tb.Helper()
	started := make(chan struct{})
	proceed := make(chan struct{})
	errs := make(chan error, 1)
	go func() {
		_, err := o.Run(ctxFor(tb, 20*time.Second), key, func(context.Context) (T, error) {
			close(started)
			<-proceed
			return v, nil
		})
		errs <- err
	}()
	recv(tb, started)
	var once sync.Once
	release = func() { once.Do(func() { close(proceed) }) }
	tb.Cleanup(release)
	return release, errs
}
