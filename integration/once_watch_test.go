package integration

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestOnceWatch: a WATCH of a ONCE key fails the EXEC once another
// connection changed the record, as Redis fails it for any write of a
// watched key: claimed, completed, aborted (KV-12), extended, deleted, its
// lease lapsed or its claim handed over (KV-13). A CLAIM that only reports
// the record, ONCE.STATUS, or a claim of the same name in another database
// is no change. The transaction holds a CLAIM … WAIT, which answers at
// once inside EXEC.
func TestOnceWatch(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	forProtos(t, func(t *testing.T, proto int) {
		ctx := grCtx(t, 30*time.Second)
		c, other := onceClient(t, addr, proto), onceClient(t, addr, proto)
		db1 := onceClient(t, addr, proto, func(o *redis.Options) { o.DB = 1 })
		claim := func(k string, opts ...any) int64 { return onceClaim(t, ctx, other, k, opts...) }
		for i, tc := range []struct {
			name string
			// before runs before WATCH, change between WATCH and EXEC.
			before func(k string) int64
			change func(k string, tok int64)
			// exec is what the CLAIM in EXEC answers, "" when EXEC
			// must abort.
			exec string
		}{
			{"claimed", nil, func(k string, _ int64) { claim(k) }, ""},
			{"completed", func(k string) int64 { return claim(k) },
				func(k string, tok int64) { onceOK(t, ctx, other, "ONCE.COMPLETE", k, tok, "A") }, ""},
			{"completed with KEEP 0", func(k string) int64 { return claim(k) },
				func(k string, tok int64) { onceOK(t, ctx, other, "ONCE.COMPLETE", k, tok, "A", "KEEP", 0) }, ""},
			{"aborted", func(k string) int64 { return claim(k) },
				func(k string, tok int64) { onceOK(t, ctx, other, "ONCE.ABORT", k, tok) }, ""},
			{"extended", func(k string) int64 { return claim(k) },
				func(k string, tok int64) { onceOK(t, ctx, other, "ONCE.EXTEND", k, tok, "LEASE", 60000) }, ""},
			{"deleted", func(k string) int64 { return claim(k) },
				func(k string, _ int64) { other.Del(ctx, k) }, ""},
			{"lease lapsed", func(k string) int64 { return claim(k, "LEASE", 100) },
				func(string, int64) { time.Sleep(250 * time.Millisecond) }, ""},
			{"handed over at the lapse", func(k string) int64 {
				tok := claim(k, "LEASE", 300)
				heir := asyncOnce(ctx, onceClient(t, addr, proto), "ONCE.CLAIM", k, "WAIT", 0)
				onceAwaitWaiters(t, ctx, other, k, 1)
				go func() { <-heir }()
				return tok
			}, func(k string, _ int64) {
				waitFor(t, 5*time.Second, 5*time.Millisecond, "the handover", func() (bool, string) {
					st := onceStatus(t, ctx, other, k)
					return statusInt(st, "waiters") == 0, fmt.Sprint(st)
				})
			}, ""},
			{"a CLAIM answered running", func(k string) int64 { return claim(k) },
				func(k string, _ int64) { onceWant(t, "CLAIM", onceMust(t, ctx, other, "ONCE.CLAIM", k), "running", "") }, "running"},
			{"a CLAIM answered done", func(k string) int64 {
				tok := claim(k)
				onceOK(t, ctx, other, "ONCE.COMPLETE", k, tok, "A")
				return tok
			}, func(k string, _ int64) { onceWant(t, "CLAIM", onceMust(t, ctx, other, "ONCE.CLAIM", k), "done", "A") }, "done"},
			{"ONCE.STATUS", func(k string) int64 { return claim(k) },
				func(k string, _ int64) { onceStatus(t, ctx, other, k) }, "running"},
			{"claimed in another database", nil, func(k string, _ int64) { onceClaim(t, ctx, db1, k) }, "claimed"},
		} {
			k := fmt.Sprintf("watch:%d:%d", proto, i)
			var tok int64
			if tc.before != nil {
				tok = tc.before(k)
			}
			var res *redis.Cmd
			err := c.Watch(ctx, func(tx *redis.Tx) error {
				tc.change(k, tok)
				_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
					res = p.Do(ctx, "ONCE.CLAIM", k, "WAIT", 5000)
					return nil
				})
				return err
			}, k)
			switch {
			case tc.exec == "" && !errors.Is(err, redis.TxFailedErr):
				t.Errorf("%s: EXEC: %v (%v), want it aborted", tc.name, err, res.Val())
			case tc.exec == "":
			case err != nil:
				t.Errorf("%s: EXEC: %v, want it run", tc.name, err)
			default:
				if r, perr := parseOnce(res.Val()); perr != nil || r.State != tc.exec {
					t.Errorf("%s: CLAIM … WAIT in EXEC: %v %v, want %s", tc.name, r, perr, tc.exec)
				}
			}
		}
	})
}
