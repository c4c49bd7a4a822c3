package integration

// KV-5/KV-6/KV-7 across restarts: keys in several databases, binary keys
// and values, a 1 MiB value, deletions, overwrites and FLUSHDB come back as
// they were after a graceful restart and, under appendfsync always, after
// kill -9, with per-database DBSIZE, KEYS order and INFO keyspace right.
// Writers killed mid-stream lose no acknowledged write.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// restartDataset is what each database should hold.
type restartDataset map[int]map[string]string

func buildRestartDataset() restartDataset {
	rng := rand.New(rand.NewPCG(1, 2))
	randBytes := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return string(b)
	}
	allBytes := make([]byte, 256)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	ds := restartDataset{
		0: {
			"plain":                       "value",
			"":                            "the empty key",
			"empty-value":                 "",
			"bin:\x00\x01\x02\xff":        string(allBytes),
			"\x00":                        "\x00",
			"crlf\r\nkey":                 "\r\n$3\r\nfoo\r\n*1\r\n",
			"utf8:ключ":                   "значение ✓",
			"bad-utf8:\xff\xfe":           "\xc3\x28\xa0\xa1",
			"big":                         randBytes(1 << 20),
			"long-key:" + randBytes(1000): "x",
		},
		1:  {},
		7:  {"medium": randBytes(64 << 10), "bin": string(allBytes[128:])},
		19: {"last-db": "nineteen"},
	}
	for i := range 100 {
		ds[1][fmt.Sprintf("n:%03d", i)] = strconv.Itoa(i * i)
	}
	return ds
}

// writeRestartDataset writes ds, plus history that must not come back:
// overwritten values, deleted keys, a flushed database (db 2).
func writeRestartDataset(tb testing.TB, ctx context.Context, addr string, ds restartDataset) {
	tb.Helper()
	for db, kv := range ds {
		c := grClient(tb, addr, withDB(db))
		for k, v := range kv {
			if err := c.Set(ctx, k, "overwritten", 0).Err(); err != nil {
				tb.Fatalf("db %d: SET %q: %v", db, k, err)
			}
			if err := c.Set(ctx, k, v, 0).Err(); err != nil {
				tb.Fatalf("db %d: SET %q (%d bytes): %v", db, k, len(v), err)
			}
		}
		if err := c.Set(ctx, "deleted", "x", 0).Err(); err != nil {
			tb.Fatalf("db %d: SET deleted: %v", db, err)
		}
		if n, err := c.Del(ctx, "deleted").Result(); err != nil || n != 1 {
			tb.Fatalf("db %d: DEL deleted = %d, %v", db, n, err)
		}
	}
	c2 := grClient(tb, addr, withDB(2))
	for i := range 50 {
		if err := c2.Set(ctx, fmt.Sprintf("flushed:%d", i), "x", 0).Err(); err != nil {
			tb.Fatalf("db 2: SET: %v", err)
		}
	}
	if err := c2.FlushDB(ctx).Err(); err != nil {
		tb.Fatalf("db 2: FLUSHDB: %v", err)
	}
}

// verifyRestartDataset checks every database against ds: values, DBSIZE,
// KEYS in byte order, INFO keyspace.
func verifyRestartDataset(tb testing.TB, ctx context.Context, addr string, ds restartDataset, phase string, dbs int) {
	tb.Helper()
	c0 := grClient(tb, addr)
	info, err := c0.Info(ctx, "keyspace").Result()
	if err != nil {
		tb.Fatalf("%s: INFO keyspace: %v", phase, err)
	}
	ks := parseKeyspace(tb, info)
	for db := range dbs {
		want := ds[db]
		c := grClient(tb, addr, withDB(db))
		n, err := c.DBSize(ctx).Result()
		if err != nil {
			tb.Fatalf("%s: db %d: DBSIZE: %v", phase, db, err)
		}
		if n != int64(len(want)) {
			tb.Errorf("%s: db %d: DBSIZE = %d, want %d", phase, db, n, len(want))
		}
		if got := ks[db].keys; got != int64(len(want)) {
			tb.Errorf("%s: db %d: INFO keyspace keys = %d, want %d (INFO: %q)", phase, db, got, len(want), info)
		}
		if len(want) == 0 {
			continue
		}
		keys, err := c.Keys(ctx, "*").Result()
		if err != nil {
			tb.Fatalf("%s: db %d: KEYS *: %v", phase, db, err)
		}
		wantKeys := slices.Sorted(maps.Keys(want))
		if !slices.Equal(keys, wantKeys) {
			tb.Errorf("%s: db %d: KEYS * = %d keys %q…; want %d keys in byte order (KV-7) %q…",
				phase, db, len(keys), firstFew(keys), len(wantKeys), firstFew(wantKeys))
		}
		for _, k := range wantKeys {
			v, err := c.Get(ctx, k).Result()
			if err != nil || v != want[k] {
				tb.Errorf("%s: db %d: GET %q = %s, %v; want %s", phase, db, k, describeValue(v), err, describeValue(want[k]))
			}
		}
		if v, err := c.Get(ctx, "deleted").Result(); !errors.Is(err, redis.Nil) {
			tb.Errorf("%s: db %d: GET deleted = %q, %v; want nil (it was deleted)", phase, db, v, err)
		}
	}
}

// describeValue shortens a value for a message.
func describeValue(v string) string {
	if len(v) <= 40 {
		return strconv.Quote(v)
	}
	return fmt.Sprintf("%q…(%d bytes)", v[:20], len(v))
}

// TestRestartData: the dataset survives Stop/Restart, and kill -9 under
// appendfsync always; the database count (--databases 20) too.
func TestRestartData(t *testing.T) {
	t.Parallel()
	const dbs = 20
	cases := []struct {
		name string
		args []string
		down func(*Oncekv, testing.TB)
	}{
		{"graceful", []string{"--databases", "20"}, (*Oncekv).Stop},
		{"graceful-always", []string{"--databases", "20", "--appendfsync", "always"}, (*Oncekv).Stop},
		{"kill9-always", []string{"--databases", "20", "--appendfsync", "always"}, (*Oncekv).Kill},
	}
	ds := buildRestartDataset()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := grCtx(t, 45*time.Second)
			o := StartOncekv(t, tc.args...)
			writeRestartDataset(t, ctx, o.Addr, ds)
			verifyRestartDataset(t, ctx, o.Addr, ds, "before the restart", dbs)
			if t.Failed() {
				t.FailNow() // not a restart problem
			}
			tc.down(o, t)
			o = o.Restart(t)
			verifyRestartDataset(t, ctx, o.Addr, ds, "after the restart", dbs)
			c := grClient(t, o.Addr)
			if err := c.Do(ctx, "SELECT", "19").Err(); err != nil {
				t.Errorf("SELECT 19 after a restart with --databases 20: %v", err)
			}
			if err := c.Do(ctx, "SELECT", "20").Err(); err == nil || err.Error() != "ERR DB index is out of range" {
				t.Errorf("SELECT 20 with --databases 20 = %v; want ERR DB index is out of range", err)
			}
			// A second restart, after writes on the restarted server.
			c19 := grClient(t, o.Addr, withDB(19))
			if err := c19.Set(ctx, "after-restart", "yes", 0).Err(); err != nil {
				t.Fatalf("SET after the restart: %v", err)
			}
			ds2 := restartDataset{}
			for db, kv := range ds {
				ds2[db] = kv
			}
			ds2[19] = map[string]string{"last-db": "nineteen", "after-restart": "yes"}
			tc.down(o, t)
			o = o.Restart(t)
			verifyRestartDataset(t, ctx, o.Addr, ds2, "after the second restart", dbs)
		})
	}
}

// TestRestartKillDuringWrites: 8 connections write as fast as they can
// under appendfsync always (SET with a TTL, INCR); kill -9 lands in the
// middle. After the restart every acknowledged write is there, with its TTL,
// and nothing that was never sent.
func TestRestartKillDuringWrites(t *testing.T) {
	t.Parallel()
	const writers = 8
	ctx := grCtx(t, 45*time.Second)
	o := StartOncekv(t, "--appendfsync", "always")
	val := func(w, j int) string { return fmt.Sprintf("w%d-%d-%s", w, j, bytes.Repeat([]byte{'v'}, j%50)) }

	acked := make([]int, writers) // SETs acknowledged: w:<w>:0..acked-1
	incrs := make([]int64, writers)
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := dialRawN(t, o.Addr, writers)
	for w, c := range conns {
		c.Timeout = 5 * time.Second
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				f, err := rawDo(c, "SET", fmt.Sprintf("w:%d:%06d", w, j), val(w, j), "PX", "600000")
				if err != nil || f.Type != '+' {
					return // killed
				}
				mu.Lock()
				acked[w] = j + 1
				mu.Unlock()
				f, err = rawDo(c, "INCR", fmt.Sprintf("c:%d", w))
				if err != nil {
					return
				}
				n, ok := f.Int()
				if !ok {
					return
				}
				mu.Lock()
				incrs[w] = n
				mu.Unlock()
			}
		}()
	}
	// Let them write for a while, then kill.
	waitFor(t, 20*time.Second, 10*time.Millisecond, "some writes acknowledged", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		total := 0
		for _, a := range acked {
			total += a
		}
		return total >= 400, fmt.Sprintf("%d SETs acknowledged", total)
	})
	time.Sleep(100 * time.Millisecond)
	o.Kill(t)
	wg.Wait()
	killedAt := time.Now()

	o = o.Restart(t)
	c := grClient(t, o.Addr)
	total := 0
	for w := range writers {
		total += acked[w]
		for j := range acked[w] {
			k := fmt.Sprintf("w:%d:%06d", w, j)
			v, err := c.Get(ctx, k).Result()
			if err != nil || v != val(w, j) {
				t.Errorf("GET %s (acknowledged before kill -9) = %q, %v; want %q (KV-6)", k, v, err, val(w, j))
				break
			}
		}
		if acked[w] > 0 {
			k := fmt.Sprintf("w:%d:%06d", w, 0)
			d, err := c.PTTL(ctx, k).Result()
			if limit := 600*time.Second - time.Since(killedAt); err != nil || d <= 0 || d > limit {
				t.Errorf("PTTL %s after kill -9 = %v, %v; want in (0, %v]", k, d, err, limit)
			}
		}
		// At most the one SET in flight at the kill may be there too.
		if n, err := c.Exists(ctx, fmt.Sprintf("w:%d:%06d", w, acked[w]+1)).Result(); err != nil || n != 0 {
			t.Errorf("EXISTS w:%d:%06d = %d, %v; want 0: that SET was never sent", w, acked[w]+1, n, err)
		}
		got, err := c.Get(ctx, fmt.Sprintf("c:%d", w)).Int64()
		if errors.Is(err, redis.Nil) {
			got, err = 0, nil
		}
		if err != nil || got < incrs[w] || got > incrs[w]+1 {
			t.Errorf("GET c:%d after kill -9 = %d, %v; acknowledged INCR reached %d, so want %d or %d", w, got, err, incrs[w], incrs[w], incrs[w]+1)
		}
	}
	t.Logf("%d SETs acknowledged before kill -9", total)
}
