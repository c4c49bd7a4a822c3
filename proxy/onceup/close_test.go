package onceup

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/oncekv/oncekv/internal/testredis"
	"github.com/oncekv/oncekv/resp"
)

// TestClose: Close answers the waiters with the shutdown error, and the
// engine leaves no goroutine behind (timers, checks, subscriptions).
func TestClose(t *testing.T) {
	s := testredis.Standalone(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := context.Background()
	up := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, MaxRetries: -1})
	defer up.Close()
	e := New(up, Config{})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	srv := resp.NewServer(resp.Config{Addrs: []string{"127.0.0.1:0"}}, handler{e})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := redis.NewClient(&redis.Options{Addr: srv.Addrs()[0].String(), Protocol: 2, DisableIdentity: true, ReadTimeout: 30 * time.Second})
	defer c.Close()
	if r := do(ctx, c, "ONCE.CLAIM", "k", "LEASE", 20000); r.state != "claimed" {
		t.Fatalf("CLAIM = %v", r)
	}
	res := make(chan reply, 2)
	for _, args := range [][]any{{"ONCE.CLAIM", "k", "WAIT", 0}, {"ONCE.WAIT", "k"}} {
		w := redis.NewClient(&redis.Options{Addr: srv.Addrs()[0].String(), Protocol: 2, DisableIdentity: true, ReadTimeout: 30 * time.Second})
		defer w.Close()
		go func() { res <- do(ctx, w, args...) }()
	}
	eventually(t, 5*time.Second, "two waiters", func() bool { return e.Waiting() == 2 })
	eventually(t, 5*time.Second, "the subscription", func() bool { return e.Stats.Subscribes.Load() > 0 })
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if r := <-res; errText(r.err) != "ERR server is shutting down" {
			t.Fatalf("waiter at Close got %v", r)
		}
	}
	if err := c.Do(ctx, "ONCE.CLAIM", "k2").Err(); errText(err) != "ERR server is shutting down" {
		t.Fatalf("CLAIM after Close: %v", err)
	}
	if e.Waiting() != 0 {
		t.Fatalf("%d waiting after Close", e.Waiting())
	}
}
