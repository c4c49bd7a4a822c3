package kv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncekv/oncekv/internal/app"
	"github.com/oncekv/oncekv/internal/config"
	"github.com/oncekv/oncekv/kv"
)

// exampleServer starts an in-process oncekv on a free loopback port with
// its data in a temporary directory, and returns a client of it and a
// function that stops it all. (Examples have no testing.TB.)
func exampleServer() (*redis.Client, func()) {
	dir, err := os.MkdirTemp("", "oncekv-example-")
	if err != nil {
		panic(err)
	}
	cfg, err := config.Parse([]string{"--bind", "127.0.0.1", "--port", "0", "--dir", dir, "--loglevel", "warning"})
	if err != nil {
		panic(err)
	}
	a, err := app.New(cfg, nil)
	if err != nil {
		panic(err)
	}
	if err := a.Start(); err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: a.Addr().String()})
	return rdb, func() {
		_ = rdb.Close()
		_ = a.Close()
		_ = os.RemoveAll(dir)
	}
}

// A welcome tour shown once per user: INCR is atomic, so exactly one call
// sees 1 (KV-1), however many tabs the user opens at once.
func Example_welcomeTour() {
	rdb, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	showTour := func(user string) bool {
		n, err := rdb.Incr(ctx, "welcome:"+user).Result()
		return err == nil && n == 1
	}
	for _, user := range []string{"alice", "alice", "bob", "alice"} {
		fmt.Println(user, showTour(user))
	}
	// Output:
	// alice true
	// alice false
	// bob true
	// alice false
}

// A daily reward: the date is in the key, so each day has its own guard,
// and the key expires after two days so old days do not pile up.
func Example_dailyReward() {
	rdb, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	claimReward := func(user, day string) bool {
		key := "reward:" + user + ":" + day
		n, err := rdb.Incr(ctx, key).Result()
		if err != nil {
			return false
		}
		if n == 1 {
			rdb.Expire(ctx, key, 48*time.Hour)
		}
		return n == 1
	}
	fmt.Println(claimReward("alice", "2025-03-01"))
	fmt.Println(claimReward("alice", "2025-03-01"))
	fmt.Println(claimReward("alice", "2025-03-02"))
	ttl, _ := rdb.TTL(ctx, "reward:alice:2025-03-01").Result()
	fmt.Println(ttl > 47*time.Hour && ttl <= 48*time.Hour)
	// Output:
	// true
	// false
	// true
	// true
}

// Three free exports a day: INCR counts them, EXPIRE on the first lets
// the counter go with the day, and the fourth is refused.
func Example_freeExports() {
	rdb, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	const free = 3
	export := func(user, day string) error {
		key := "exports:" + user + ":" + day
		n, err := rdb.Incr(ctx, key).Result()
		if err != nil {
			return err
		}
		if n == 1 {
			rdb.Expire(ctx, key, 48*time.Hour)
		}
		if n > free {
			return fmt.Errorf("export %d refused: %d free exports a day", n, free)
		}
		return nil
	}
	for range 4 {
		if err := export("alice", "2025-03-01"); err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println("exported")
	}
	// Output:
	// exported
	// exported
	// exported
	// export 4 refused: 3 free exports a day
}

// Invoice numbers: INCR hands out distinct numbers, even to concurrent
// callers; zero-padded keys list in number order (KV-7).
func Example_invoiceNumbers() {
	rdb, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := rdb.Incr(ctx, "invoice:seq").Result()
			if err != nil {
				panic(err)
			}
			rdb.Set(ctx, fmt.Sprintf("invoice:%06d", n), "draft", 0)
		}()
	}
	wg.Wait()
	n, _ := rdb.Incr(ctx, "invoice:seq").Result()
	rdb.Set(ctx, fmt.Sprintf("invoice:%06d", n), "draft", 0)
	keys, _ := rdb.Keys(ctx, "invoice:0*").Result()
	fmt.Println(keys)
	// Output:
	// [invoice:000001 invoice:000002 invoice:000003 invoice:000004]
}

// Webhook deduplication across all users: a provider may deliver an event
// many times; the handler runs once per event ID and its outcome is kept
// for a week. A failure keeps nothing, so the provider's retry runs it.
func Example_webhookDedupe() {
	rdb, stop := exampleServer()
	defer stop()
	store := kv.New(rdb)
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	events, err := kv.OpenOnce[string](store, "webhooks", kv.Keep(7*24*time.Hour))
	if err != nil {
		panic(err)
	}
	attempts := 0
	handle := func(eventID string) {
		outcome, err := events.Run(ctx, eventID, func(ctx context.Context) (string, error) {
			attempts++
			if eventID == "evt_2" && attempts == 2 {
				return "", errors.New("database unavailable")
			}
			return "handled " + eventID, nil
		})
		if err != nil {
			fmt.Println("error:", err, "(the provider retries)")
			return
		}
		fmt.Println(outcome)
	}
	for _, id := range []string{"evt_1", "evt_2", "evt_1", "evt_2", "evt_2"} {
		handle(id)
	}
	fmt.Println("handler ran", attempts, "times")
	// Output:
	// handled evt_1
	// error: database unavailable (the provider retries)
	// handled evt_1
	// handled evt_2
	// handled evt_2
	// handler ran 3 times
}

type Receipt struct {
	ChargeID string
	Amount   int
}

// A payment charged once per idempotency key: a retried request gets the
// receipt of the first charge (RunInfo tells it was replayed), and a
// different request reusing the key is refused (fingerprint).
func ExampleOnce_RunInfo() {
	rdb, stop := exampleServer()
	defer stop()
	store := kv.New(rdb)
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	charges, err := kv.OpenOnce[Receipt](store, "charges", kv.Keep(24*time.Hour), kv.Lease(30*time.Second))
	if err != nil {
		panic(err)
	}
	charged := 0
	charge := func(orderID string, amount int) (kv.RunInfo[Receipt], error) {
		fp := fmt.Sprintf("%s/%d", orderID, amount) // what the request is
		return charges.WithFingerprint(fp).RunInfo(ctx, orderID, func(ctx context.Context) (Receipt, error) {
			charged++ // the payment provider also gets orderID as its idempotency key
			return Receipt{ChargeID: fmt.Sprintf("ch_%d", charged), Amount: amount}, nil
		})
	}
	first, _ := charge("order-7", 1250)
	retry, _ := charge("order-7", 1250)
	_, err = charge("order-7", 9900)
	fmt.Printf("%+v replayed=%v\n", first.Value, first.Replayed)
	fmt.Printf("%+v replayed=%v\n", retry.Value, retry.Replayed)
	fmt.Println(errors.Is(err, kv.ErrMismatch))
	fmt.Println("charged", charged, "time(s)")
	// Output:
	// {ChargeID:ch_1 Amount:1250} replayed=false
	// {ChargeID:ch_1 Amount:1250} replayed=true
	// true
	// charged 1 time(s)
}

// A dashboard memo: ten concurrent requests share one computation, and
// its result is kept for 30 s.
func ExampleKeep() {
	rdb, stop := exampleServer()
	defer stop()
	store := kv.New(rdb)
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	dashboards, err := kv.OpenOnce[map[string]int](store, "dashboard", kv.Keep(30*time.Second))
	if err != nil {
		panic(err)
	}
	var computed atomic.Int32
	var wg sync.WaitGroup
	totals := make([]int, 10)
	for i := range totals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := dashboards.Run(ctx, "team-42", func(ctx context.Context) (map[string]int, error) {
				computed.Add(1)
				time.Sleep(100 * time.Millisecond) // an expensive query
				return map[string]int{"open": 3, "closed": 39}, nil
			})
			if err != nil {
				panic(err)
			}
			totals[i] = d["open"] + d["closed"]
		}()
	}
	wg.Wait()
	fmt.Println(totals)
	fmt.Println("computed", computed.Load(), "time(s)")
	// Output:
	// [42 42 42 42 42 42 42 42 42 42]
	// computed 1 time(s)
}
