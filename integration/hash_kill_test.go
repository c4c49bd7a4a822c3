package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestHashObjectKill: a hashtable-encoded hash keeps its fields apart
// (commands/hashobj.go), its count in its value. Under appendfsync
// always, kill -9 in the middle of writers that add and delete fields and
// drop and rebuild whole hashes, and every acknowledged write is there
// after the restart, and each hash's count is the number of its fields
// (a command's value and elements are one write, KV-1 and KV-6).
func TestHashObjectKill(t *testing.T) {
	t.Parallel()
	o := StartOncekv(t, "--appendfsync", "always")
	ctx := context.Background()
	setup := redis.NewClient(&redis.Options{Addr: o.Addr})
	big := make([]any, 0, 1200)
	for i := range 600 {
		big = append(big, fmt.Sprintf("f%d", i), fmt.Sprintf("v%d", i))
	}
	if err := setup.HSet(ctx, "big", big...).Err(); err != nil {
		t.Fatal(err)
	}
	setup.Close()

	const workers = 6
	type acked struct {
		mu      sync.Mutex
		fields  map[string]string // field of big → value, acknowledged
		deleted map[string]bool   // field of big acknowledged deleted
	}
	got := acked{fields: map[string]string{}, deleted: map[string]bool{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: o.Addr, MaxRetries: -1, DialTimeout: time.Second})
			defer c.Close()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				f := fmt.Sprintf("w%d-%d", w, n)
				if err := c.HSet(ctx, "big", f, n).Err(); err != nil {
					return // killed
				}
				got.mu.Lock()
				got.fields[f] = fmt.Sprint(n)
				got.mu.Unlock()
				if n%3 == 2 {
					// Sent, the deletion may happen even if its reply
					// is lost: the field is no longer promised.
					old := fmt.Sprintf("w%d-%d", w, n-1)
					got.mu.Lock()
					delete(got.fields, old)
					got.mu.Unlock()
					if err := c.HDel(ctx, "big", old).Err(); err != nil {
						return
					}
					got.mu.Lock()
					got.deleted[old] = true
					got.mu.Unlock()
				}
				if n%10 == 0 { // a whole hash made, dropped, made again
					tmp := fmt.Sprintf("tmp%d", w)
					if err := c.HSet(ctx, tmp, big...).Err(); err != nil {
						return
					}
					if err := c.Del(ctx, tmp).Err(); err != nil {
						return
					}
					if err := c.HSet(ctx, tmp, "only", n).Err(); err != nil {
						return
					}
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	o.Kill(t)
	close(stop)
	wg.Wait()
	o = o.Restart(t)

	c := redis.NewClient(&redis.Options{Addr: o.Addr})
	defer c.Close()
	all, err := c.HGetAll(ctx, "big").Result()
	if err != nil {
		t.Fatal(err)
	}
	if n := c.HLen(ctx, "big").Val(); n != int64(len(all)) {
		t.Errorf("HLEN big = %d, but HGETALL has %d fields", n, len(all))
	}
	if enc := c.ObjectEncoding(ctx, "big").Val(); enc != "hashtable" {
		t.Errorf("OBJECT ENCODING big = %q", enc)
	}
	for i := range 600 {
		if v := all[fmt.Sprintf("f%d", i)]; v != fmt.Sprintf("v%d", i) {
			t.Fatalf("field f%d = %q after the kill", i, v)
		}
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	if len(got.fields) < workers {
		t.Fatalf("only %d acknowledged writes before the kill: the load did not run", len(got.fields))
	}
	for f, v := range got.fields {
		if all[f] != v {
			t.Errorf("acknowledged HSET big %s %s: after the kill %q", f, v, all[f])
		}
	}
	for f := range got.deleted {
		if _, ok := all[f]; ok {
			t.Errorf("acknowledged HDEL big %s: the field is back after the kill", f)
		}
	}
	for w := range workers {
		tmp := fmt.Sprintf("tmp%d", w)
		fields, err := c.HGetAll(ctx, tmp).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n := c.HLen(ctx, tmp).Val(); n != int64(len(fields)) {
			t.Errorf("HLEN %s = %d, but HGETALL has %d fields", tmp, n, len(fields))
		}
		switch len(fields) { // never made; made; dropped and made small; made over that
		case 0, 600, 1, 601:
		default:
			t.Errorf("%s has %d fields: not one state its writer left", tmp, len(fields))
		}
	}
	t.Logf("%d fields acknowledged, %d deletions; big has %d fields after the kill", len(got.fields), len(got.deleted), len(all))
}
