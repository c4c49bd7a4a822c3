package integration

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRestartCopyMove: what COPY, MOVE and SWAPDB wrote is durable as any write
// (KV-6): after a graceful restart and after kill -9 under appendfsync
// always, the copies and moved keys are there with their deadlines, the
// sources as they were left, and INFO keyspace counts keys and expires
// per database right (KV-7). A moved or copied key with a deadline is
// found by the TTL sweeper in its new database (KV-4): expired_keys grows
// without anyone reading it.
func TestRestartCopyMove(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		down func(*Oncekv, testing.TB)
	}{
		{"graceful", nil, (*Oncekv).Stop},
		{"kill9-always", []string{"--appendfsync", "always"}, (*Oncekv).Kill},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := grCtx(t, 45*time.Second)
			o := StartOncekv(t, tc.args...)
			c0 := grClient(t, o.Addr)
			for _, args := range [][]any{
				{"SET", "keep", "v0"},
				{"SET", "ttl", "v1", "EX", "1000"},
				{"COPY", "keep", "copy"},
				{"COPY", "ttl", "ttl", "DB", "2"},
				{"SET", "mv", "v2", "EX", "1000"},
				{"MOVE", "mv", "3"},
				{"SET", "short", "v3", "PX", "400"},
				{"MOVE", "short", "4"},
				{"SET", "shortc", "v4", "PX", "400"},
				{"COPY", "shortc", "shortc", "DB", "5"},
				{"DEL", "shortc"},
				{"SWAPDB", "2", "7"},
			} {
				if err := c0.Do(ctx, args...).Err(); err != nil {
					t.Fatalf("%v: %v", args, err)
				}
			}
			// A write after the swap goes where database 7 is now.
			if err := grClient(t, o.Addr, withDB(7)).Set(ctx, "after-swap", "in7", 0).Err(); err != nil {
				t.Fatalf("SET in db 7 after SWAPDB: %v", err)
			}
			tc.down(o, t)
			o = o.Restart(t)
			c := func(db int) *redis.Client { return grClient(t, o.Addr, withDB(db)) }
			want := []struct {
				db       int
				key, val string
				ttl      bool
			}{
				{0, "keep", "v0", false}, {0, "copy", "v0", false}, {0, "ttl", "v1", true},
				{7, "ttl", "v1", true}, {3, "mv", "v2", true}, {7, "after-swap", "in7", false},
			}
			for _, w := range want {
				assertKey(t, ctx, c(w.db), w.db, w.key, w.val, w.ttl)
			}
			if n := existsIn(t, ctx, c(0), "mv"); n != 0 {
				t.Errorf("db 0 still has the moved key after the restart")
			}
			// The short keys expire in databases 4 and 5; the sweeper
			// deletes them there, unread.
			base := expiredKeys(t, ctx, c(0))
			waitFor(t, 10*time.Second, 50*time.Millisecond, "the sweeper to delete the moved and copied keys", func() (bool, string) {
				n := expiredKeys(t, ctx, c(0))
				return n-base >= 2 || base >= 2, strconv.FormatInt(n, 10)
			})
			ks := parseKeyspace(t, c(0).Info(ctx, "keyspace").Val())
			wantKS := map[int]dbStat{0: {3, 1}, 3: {1, 1}, 7: {2, 1}}
			for db, w := range wantKS {
				if ks[db] != w {
					t.Errorf("INFO keyspace db%d = %+v, want %+v (all: %v)", db, ks[db], w, ks)
				}
			}
			for _, db := range []int{2, 4, 5} {
				if st, ok := ks[db]; ok {
					t.Errorf("INFO keyspace db%d = %+v after the sweep, want no line", db, st)
				}
			}
		})
	}
}

// assertKey checks key's value in db and whether it has a deadline.
func assertKey(tb testing.TB, ctx context.Context, c *redis.Client, db int, key, val string, ttl bool) {
	tb.Helper()
	got, err := c.Get(ctx, key).Result()
	if err != nil || got != val {
		tb.Errorf("db %d GET %s = %q, %v; want %q", db, key, got, err, val)
	}
	d, err := c.PTTL(ctx, key).Result()
	if err != nil || (d > 0) != ttl {
		tb.Errorf("db %d PTTL %s = %v, %v; want a deadline: %v", db, key, d, err, ttl)
	}
}

func existsIn(tb testing.TB, ctx context.Context, c *redis.Client, key string) int64 {
	tb.Helper()
	n, err := c.Exists(ctx, key).Result()
	if err != nil {
		tb.Fatalf("EXISTS %s: %v", key, err)
	}
	return n
}

// expiredKeys is INFO stats expired_keys.
func expiredKeys(tb testing.TB, ctx context.Context, c *redis.Client) int64 {
	tb.Helper()
	n, err := strconv.ParseInt(infoField(c.Info(ctx, "stats").Val(), "expired_keys"), 10, 64)
	if err != nil {
		tb.Fatalf("INFO stats expired_keys: %v", err)
	}
	return n
}
