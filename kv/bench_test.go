package kv

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Benchmarks of the client's cost per run against an in-process server,
// from 50 goroutines (the cycle benchmark of bench/oncebench):
//
//	go test ./kv -run '^$' -bench . -cpuprofile cpu.out
//
// BenchmarkRun is Once.Run of a fresh key whose function returns at once
// (ONCE.CLAIM … WAIT, then ONCE.COMPLETE, through the store);
// BenchmarkClaimCompleteDirect sends the same two commands through
// go-redis with nothing around them: the difference is what the client
// library adds.

const benchGoroutines = 50

func benchClient(b *testing.B) *redis.Client {
	return client(b, server(b, "--appendfsync", "everysec"), func(o *redis.Options) {
		o.PoolSize, o.MinIdleConns = benchGoroutines, benchGoroutines
	})
}

func runBench(b *testing.B, op func(ctx context.Context, key string) error) {
	var ids atomic.Int64
	prefix := "bench:" + strconv.FormatInt(time.Now().UnixNano(), 10) + ":"
	b.SetParallelism((benchGoroutines + 1) / 2)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		base := prefix + strconv.FormatInt(ids.Add(1), 10) + ":"
		for n := 0; pb.Next(); n++ {
			if err := op(ctx, base+strconv.Itoa(n)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
}

func BenchmarkRun(b *testing.B) {
	once := open[string](b, store(b, benchClient(b)), "bench", Keep(time.Minute), Lease(30*time.Second))
	runBench(b, func(ctx context.Context, key string) error {
		_, err := once.Run(ctx, key, func(context.Context) (string, error) { return "answer", nil })
		return err
	})
}

func BenchmarkClaimCompleteDirect(b *testing.B) {
	rdb := benchClient(b)
	runBench(b, func(ctx context.Context, key string) error {
		r, err := rdb.Do(ctx, "once.claim", key, "lease", 30000).Slice()
		if err != nil {
			return err
		}
		return rdb.Do(ctx, "once.complete", key, r[1], "answer", "keep", 60000).Err()
	})
}
