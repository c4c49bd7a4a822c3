package integration

import (
	"fmt"
	"testing"
	"time"
)

// TestOnceRename: RENAME moves a ONCE record whole, as it moves any value:
// a kept answer (KV-8) and its keep, a running claim with its token and
// lease. The source is free after it; a runner's token for the source is
// STALE there (the move is a lapse of the source's run, as DEL is: KV-13),
// and a waiting CLAIM on the source takes the claim over at once. The
// destination's own run, overwritten, lapses the same way. One token holds
// each key (KV-9).
func TestOnceRename(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	forProtos(t, func(t *testing.T, proto int) {
		ctx := grCtx(t, 20*time.Second)
		c := onceClient(t, addr, proto)
		p := fmt.Sprintf("rename:%d:", proto)
		rename := func(cmd, src, dst string) {
			t.Helper()
			if err := c.Do(ctx, cmd, src, dst).Err(); err != nil {
				t.Fatalf("%s %s %s: %v", cmd, src, dst, err)
			}
		}
		pttl := func(k string) int64 {
			t.Helper()
			n, err := c.PTTL(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			return n.Milliseconds()
		}

		// A kept answer moves with its keep.
		src, dst := p+"done", p+"done2"
		tok := onceClaim(t, ctx, c, src)
		onceOK(t, ctx, c, "ONCE.COMPLETE", src, tok, "A", "KEEP", 60000)
		rename("RENAME", src, dst)
		onceWant(t, "CLAIM of the destination", onceMust(t, ctx, c, "ONCE.CLAIM", dst), "done", "A")
		if ms := pttl(dst); ms <= 58000 || ms > 60000 {
			t.Fatalf("PTTL of the moved answer: %d, want ~60000", ms)
		}
		if st := onceStatus(t, ctx, c, src); st != nil {
			t.Fatalf("source after RENAME: %v", st)
		}

		// A running claim moves with its token and lease; the source is
		// free, and the old token holds nothing there.
		src, dst = p+"run", p+"run2"
		tok = onceClaim(t, ctx, c, src, "LEASE", 30000)
		rename("RENAMENX", src, dst)
		if st := onceStatus(t, ctx, c, dst); st["state"] != "running" || statusInt(st, "token") != tok {
			t.Fatalf("destination after RENAMENX: %v, want running with token %d", st, tok)
		}
		if ms := pttl(dst); ms <= 28000 || ms > 30000 {
			t.Fatalf("PTTL of the moved claim: %d, want ~30000", ms)
		}
		onceErr(t, ctx, c, "STALE", "ONCE.COMPLETE", src, tok, "late")
		tok2 := onceClaim(t, ctx, c, src)
		if tok2 <= tok {
			t.Fatalf("new claim of the source: token %d, not above %d", tok2, tok)
		}
		onceOK(t, ctx, c, "ONCE.COMPLETE", dst, tok, "B")
		onceOK(t, ctx, c, "ONCE.COMPLETE", src, tok2, "C")
		onceWant(t, "CLAIM of the destination", onceMust(t, ctx, c, "ONCE.CLAIM", dst), "done", "B")
		onceWant(t, "CLAIM of the source", onceMust(t, ctx, c, "ONCE.CLAIM", src), "done", "C")

		// A waiting CLAIM on the source takes the claim over at once.
		src, dst = p+"heir", p+"heir2"
		tok = onceClaim(t, ctx, c, src, "LEASE", 30000)
		heir := asyncOnce(ctx, onceClient(t, addr, proto), "ONCE.CLAIM", src, "WAIT", 0, "LEASE", 20000)
		onceAwaitWaiters(t, ctx, c, src, 1)
		rename("RENAME", src, dst)
		o := onceRecv(t, heir, 5*time.Second, "heir")
		if o.r.State != "claimed" || o.r.Token <= tok {
			t.Fatalf("heir after RENAME: %v, want [claimed >%d]", o.r, tok)
		}
		onceErr(t, ctx, c, "STALE", "ONCE.COMPLETE", src, tok, "late")
		onceOK(t, ctx, c, "ONCE.COMPLETE", src, o.r.Token, "D")

		// The destination's own run, overwritten, is stale.
		src, dst = p+"over", p+"over2"
		tok = onceClaim(t, ctx, c, src, "LEASE", 30000)
		dtok := onceClaim(t, ctx, c, dst, "LEASE", 30000)
		rename("RENAME", src, dst)
		onceErr(t, ctx, c, "STALE", "ONCE.COMPLETE", dst, dtok, "late")
		onceOK(t, ctx, c, "ONCE.COMPLETE", dst, tok, "E")
	})
}
