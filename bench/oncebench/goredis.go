package main

// The cycle systems that use go-redis, the client most Go users run: the
// baselines are what they build on redis-server without ONCE, and oncekv
// is driven with the same client (plus a row through kv, oncekv's own Go
// client, which sends ONCE.CLAIM … WAIT and ONCE.COMPLETE through go-redis).
// Every worker shares one *redis.Client whose pool has one connection
// per worker, as an application's goroutines would.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncekv/oncekv/kv"
)

var (
	goCAS   = redis.NewScript(casScript)
	goClaim = redis.NewScript(claimScript)
)

// goRedisSystem is a system whose n workers share one go-redis client to
// addr with a pool of n connections; cycle runs one cycle with it.
func goRedisSystem(name string, rtts int, oncekv bool, addr, prefix string,
	cycle func(ctx context.Context, rdb *redis.Client, key, answer string) error) system {
	return system{
		name: name, client: clientGoRedis, rtts: rtts, oncekv: oncekv, prefix: prefix,
		open: func(n int) ([]cycleFunc, func(), error) {
			rdb := newGoRedis(addr, n)
			ctx := context.Background()
			if err := rdb.Ping(ctx).Err(); err != nil {
				rdb.Close()
				return nil, nil, err
			}
			fn := func(key, answer string) error { return cycle(ctx, rdb, key, answer) }
			fns := make([]cycleFunc, n)
			for i := range fns {
				fns[i] = fn
			}
			return fns, func() { rdb.Close() }, nil
		},
	}
}

func newGoRedis(addr string, poolSize int) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, PoolSize: poolSize, MinIdleConns: poolSize})
}

// goComplete runs the CAS script with go-redis.
func goComplete(ctx context.Context, rdb *redis.Client, key, tok, answer string) error {
	n, err := goCAS.Run(ctx, rdb, []string{key}, tok, answer, keepMs).Int()
	if err != nil {
		return fmt.Errorf("complete script on %s: %w", key, err)
	}
	if n != 1 {
		return fmt.Errorf("complete script on %s: stale, want 1", key)
	}
	return nil
}

// newGoOnceSystem: ONCE.CLAIM k LEASE 30000, ONCE.COMPLETE k tok answer
// KEEP 60000, sent with rdb.Do.
func newGoOnceSystem(addr, prefix string) system {
	return goRedisSystem("oncekv: ONCE.CLAIM + ONCE.COMPLETE", 2, true, addr, prefix,
		func(ctx context.Context, rdb *redis.Client, key, answer string) error {
			v, err := rdb.Do(ctx, "ONCE.CLAIM", key, "LEASE", leaseMs).Slice()
			if err != nil {
				return fmt.Errorf("ONCE.CLAIM %s: %w", key, err)
			}
			if len(v) != 2 || v[0] != "claimed" {
				return fmt.Errorf("ONCE.CLAIM %s: %v, want [claimed, token]", key, v)
			}
			tok, ok := v[1].(int64)
			if !ok {
				return fmt.Errorf("ONCE.CLAIM %s: token %v (%T), want an integer", key, v[1], v[1])
			}
			s, err := rdb.Do(ctx, "ONCE.COMPLETE", key, tok, answer, "KEEP", keepMs).Text()
			if err != nil || s != "OK" {
				return fmt.Errorf("ONCE.COMPLETE %s: %q, %v; want OK", key, s, err)
			}
			return nil
		})
}

// newGoPingSystem is the floor of a two-round-trip cycle with go-redis:
// PING, PING.
func newGoPingSystem(name string, oncekv bool, addr, prefix string) system {
	s := goRedisSystem(name, 2, oncekv, addr, prefix,
		func(ctx context.Context, rdb *redis.Client, _, _ string) error {
			for range 2 {
				if err := rdb.Ping(ctx).Err(); err != nil {
					return fmt.Errorf("PING: %w", err)
				}
			}
			return nil
		})
	s.floor = true
	return s
}

// newGoKVSystem runs kv.Once[string].Run with a function that returns the
// answer at once: ONCE.CLAIM … WAIT, then ONCE.COMPLETE, through kv.
func newGoKVSystem(addr, prefix string) system {
	return system{
		name: "oncekv via kv.Once.Run (this repo's Go client)", client: clientGoRedis, rtts: 2, oncekv: true, extra: true,
		open: func(n int) ([]cycleFunc, func(), error) {
			rdb := newGoRedis(addr, n)
			ctx := context.Background()
			if err := rdb.Ping(ctx).Err(); err != nil {
				rdb.Close()
				return nil, nil, err
			}
			store := kv.New(rdb)
			once, err := kv.OpenOnce[string](store, prefix+"kv", kv.Keep(60*time.Second), kv.Lease(30*time.Second))
			if err != nil {
				store.Close()
				rdb.Close()
				return nil, nil, err
			}
			fn := func(key, answer string) error {
				info, err := once.RunInfo(ctx, key, func(context.Context) (string, error) { return answer, nil })
				if err != nil {
					return fmt.Errorf("kv Run %s: %w", key, err)
				}
				if info.Replayed || info.Value != answer {
					return fmt.Errorf("kv Run %s: replayed %v, value %q; want a fresh run", key, info.Replayed, info.Value)
				}
				return nil
			}
			fns := make([]cycleFunc, n)
			for i := range fns {
				fns[i] = fn
			}
			return fns, func() { store.Close(); rdb.Close() }, nil
		},
	}
}

// newGoLuaClaimSystem: EVALSHA claimScript (GET, INCR fence, SET … PX in
// one call), then the CAS script: the baseline with ONCE's answers and
// fencing in two round trips.
func newGoLuaClaimSystem(addr, prefix string) system {
	fence := prefix + "fence"
	return goRedisSystem("redis: EVALSHA claim + EVALSHA CAS", 2, false, addr, prefix,
		func(ctx context.Context, rdb *redis.Client, key, answer string) error {
			v, err := goClaim.Run(ctx, rdb, []string{key, fence}, leaseMs).Slice()
			if err != nil {
				return fmt.Errorf("claim script on %s: %w", key, err)
			}
			if len(v) != 2 || v[0] != "claimed" {
				return fmt.Errorf("claim script on %s: %v, want [claimed, token]", key, v)
			}
			tok, ok := v[1].(int64)
			if !ok {
				return fmt.Errorf("claim script on %s: token %v (%T), want an integer", key, v[1], v[1])
			}
			return goComplete(ctx, rdb, key, strconv.FormatInt(tok, 10), answer)
		})
}

// newGoSetNXSystem: SET k running:<random> NX PX 30000, then the CAS
// script: the common recipe, without fencing (tokens do not grow).
func newGoSetNXSystem(addr, prefix string) system {
	return goRedisSystem("redis: SET NX PX (random token) + EVALSHA CAS", 2, false, addr, prefix,
		func(ctx context.Context, rdb *redis.Client, key, answer string) error {
			tok := strconv.FormatUint(rand.Uint64(), 36)
			ok, err := rdb.SetNX(ctx, key, runningPrefix+tok, 30*time.Second).Result()
			if err != nil {
				return fmt.Errorf("SET %s NX: %w", key, err)
			}
			if !ok {
				return fmt.Errorf("SET %s NX: taken, want a fresh key", key)
			}
			return goComplete(ctx, rdb, key, tok, answer)
		})
}

// newGoIncrSystem: INCR fence, SET k running:<tok> NX PX 30000, then the
// CAS script: fenced as ONCE is, in three round trips.
func newGoIncrSystem(addr, prefix string) system {
	fence := prefix + "fence"
	return goRedisSystem("redis: INCR + SET NX PX + EVALSHA CAS", 3, false, addr, prefix,
		func(ctx context.Context, rdb *redis.Client, key, answer string) error {
			n, err := rdb.Incr(ctx, fence).Result()
			if err != nil {
				return fmt.Errorf("INCR %s: %w", fence, err)
			}
			tok := strconv.FormatInt(n, 10)
			ok, err := rdb.SetNX(ctx, key, runningPrefix+tok, 30*time.Second).Result()
			if err != nil {
				return fmt.Errorf("SET %s NX: %w", key, err)
			}
			if !ok {
				return fmt.Errorf("SET %s NX: taken, want a fresh key", key)
			}
			return goComplete(ctx, rdb, key, tok, answer)
		})
}
