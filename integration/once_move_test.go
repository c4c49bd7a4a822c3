package integration

import (
	"fmt"
	"testing"
	"time"
)

// TestOnceCopyMove: COPY and MOVE of ONCE records, with several
// connections, follow RENAME (TestOnceRename). MOVE takes a record whole
// to the other database: a running claim keeps its token and lease there,
// the source is free, and a waiting CLAIM on the source takes a new claim
// with a greater token at once (KV-9, KV-13). COPY copies a kept answer
// with its keep (KV-8, KV-14), refuses a running claim (one token holds
// one key), and a REPLACE over a running destination is a lapse of that
// run, as DEL is.
func TestOnceCopyMove(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	forProtos(t, func(t *testing.T, proto int) {
		ctx := grCtx(t, 20*time.Second)
		c := onceClient(t, addr, proto)
		c1 := onceClient(t, addr, proto, withDB(1))
		p := fmt.Sprintf("move:%d:", proto)
		do := func(want int64, args ...any) {
			t.Helper()
			n, err := c.Do(ctx, args...).Int64()
			if err != nil || n != want {
				t.Fatalf("%v: got %d, %v; want %d", args, n, err, want)
			}
		}

		// COPY of a kept answer: both keys keep it, with the keep.
		src := p + "done"
		tok := onceClaim(t, ctx, c, src)
		onceOK(t, ctx, c, "ONCE.COMPLETE", src, tok, "A", "KEEP", 60000)
		do(1, "COPY", src, src+"2")
		do(1, "COPY", src, src, "DB", 1)
		onceWant(t, "CLAIM of the copy", onceMust(t, ctx, c, "ONCE.CLAIM", src+"2"), "done", "A")
		onceWant(t, "CLAIM of the copy in db 1", onceMust(t, ctx, c1, "ONCE.CLAIM", src), "done", "A")
		onceWant(t, "CLAIM of the source", onceMust(t, ctx, c, "ONCE.CLAIM", src), "done", "A")
		if ms := c1.PTTL(ctx, src).Val().Milliseconds(); ms <= 58000 || ms > 60000 {
			t.Fatalf("PTTL of the copied answer: %d, want ~60000", ms)
		}

		// COPY of a running claim is refused and changes nothing.
		src = p + "run"
		tok = onceClaim(t, ctx, c, src, "LEASE", 30000)
		onceErr(t, ctx, c, "ERR COPY of a running ONCE record", "COPY", src, src+"2")
		onceErr(t, ctx, c, "ERR COPY of a running ONCE record", "COPY", src, src, "DB", 1, "REPLACE")
		do(0, "EXISTS", src+"2")
		if n := c1.Exists(ctx, src).Val(); n != 0 {
			t.Fatalf("EXISTS in db 1 after a refused COPY: %d", n)
		}
		onceOK(t, ctx, c, "ONCE.COMPLETE", src, tok, "B")

		// COPY REPLACE of a kept answer over a running destination ends
		// that run, as DEL does: its waiter gets the copied answer, and
		// the old token is stale.
		src, dst := p+"over", p+"over2"
		tok = onceClaim(t, ctx, c, src)
		onceOK(t, ctx, c, "ONCE.COMPLETE", src, tok, "P")
		dtok := onceClaim(t, ctx, c, dst, "LEASE", 30000)
		heir := asyncOnce(ctx, onceClient(t, addr, proto), "ONCE.CLAIM", dst, "WAIT", 0, "LEASE", 20000)
		onceAwaitWaiters(t, ctx, c, dst, 1)
		do(1, "COPY", src, dst, "REPLACE")
		o := onceRecv(t, heir, 5*time.Second, "waiter of the replaced run")
		onceWant(t, "waiter after COPY REPLACE", o.r, "done", "P")
		onceErr(t, ctx, c, "STALE", "ONCE.COMPLETE", dst, dtok, "late")

		// MOVE of a running claim: the token holds it in db 1, the
		// source's waiter takes the source over with a greater token.
		src = p + "moved"
		tok = onceClaim(t, ctx, c, src, "LEASE", 30000)
		heir = asyncOnce(ctx, onceClient(t, addr, proto), "ONCE.CLAIM", src, "WAIT", 0, "LEASE", 20000)
		onceAwaitWaiters(t, ctx, c, src, 1)
		do(1, "MOVE", src, 1)
		o = onceRecv(t, heir, 5*time.Second, "waiter of the moved run")
		if o.r.State != "claimed" || o.r.Token <= tok {
			t.Fatalf("waiter after MOVE: %v, want [claimed >%d]", o.r, tok)
		}
		if st := onceStatus(t, ctx, c1, src); st["state"] != "running" || statusInt(st, "token") != tok {
			t.Fatalf("db 1 after MOVE: %v, want running with token %d", st, tok)
		}
		if ms := c1.PTTL(ctx, src).Val().Milliseconds(); ms <= 28000 || ms > 30000 {
			t.Fatalf("PTTL of the moved claim: %d, want ~30000", ms)
		}
		onceErr(t, ctx, c, "STALE", "ONCE.COMPLETE", src, tok, "late")
		onceOK(t, ctx, c1, "ONCE.COMPLETE", src, tok, "C")
		onceOK(t, ctx, c, "ONCE.COMPLETE", src, o.r.Token, "D")
		onceWant(t, "CLAIM in db 1", onceMust(t, ctx, c1, "ONCE.CLAIM", src), "done", "C")
		onceWant(t, "CLAIM in db 0", onceMust(t, ctx, c, "ONCE.CLAIM", src), "done", "D")

		// MOVE into a database that has the key moves nothing.
		do(0, "MOVE", src, 1)

		// A moved running claim with a short lease lapses in db 1 (the
		// engine knows it runs there), and a waiter there takes it over.
		src = p + "lapse"
		tok = onceClaim(t, ctx, c, src, "LEASE", 300)
		do(1, "MOVE", src, 1)
		o2 := onceMust(t, ctx, c1, "ONCE.CLAIM", src, "WAIT", 5000)
		if o2.State != "claimed" || o2.Token <= tok {
			t.Fatalf("CLAIM WAIT in db 1 on a moved lease: %v, want [claimed >%d]", o2, tok)
		}
		onceErr(t, ctx, c1, "STALE", "ONCE.COMPLETE", src, tok, "late")
	})
}

// TestOnceSwapDB: SWAPDB takes each database's ONCE records whole to the
// other, as MOVE takes one: a running claim keeps its token and lease
// there. Waiters stay on their key in their own database, as Redis's
// blocked clients do, and get what it holds after the swap: a waiting
// CLAIM on a key left empty takes a new claim with a greater token at
// once (KV-9, KV-13), a WAIT on a key that now holds a kept answer gets
// it (KV-10), and a moved short lease lapses to a waiter in the database
// it went to.
func TestOnceSwapDB(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	forProtos(t, func(t *testing.T, proto int) {
		ctx := grCtx(t, 20*time.Second)
		// Each protocol swaps its own pair of databases.
		da, db := 2*proto, 2*proto+1
		ca := onceClient(t, addr, proto, withDB(da))
		cb := onceClient(t, addr, proto, withDB(db))
		swap := func() {
			t.Helper()
			onceOK(t, ctx, ca, "SWAPDB", da, db)
		}

		// A running claim goes to the other database with its token;
		// its waiter, left on an empty key, takes a new claim.
		k := "run"
		tok := onceClaim(t, ctx, ca, k, "LEASE", 30000)
		heir := asyncOnce(ctx, onceClient(t, addr, proto, withDB(da)), "ONCE.CLAIM", k, "WAIT", 0, "LEASE", 20000)
		onceAwaitWaiters(t, ctx, ca, k, 1)
		swap()
		o := onceRecv(t, heir, 5*time.Second, "waiter after SWAPDB")
		if o.r.State != "claimed" || o.r.Token <= tok {
			t.Fatalf("waiter after SWAPDB: %v, want [claimed >%d]", o.r, tok)
		}
		if st := onceStatus(t, ctx, cb, k); st["state"] != "running" || statusInt(st, "token") != tok {
			t.Fatalf("the other database after SWAPDB: %v, want running with token %d", st, tok)
		}
		onceErr(t, ctx, ca, "STALE", "ONCE.COMPLETE", k, tok, "late")
		onceOK(t, ctx, cb, "ONCE.COMPLETE", k, tok, "B")
		onceOK(t, ctx, ca, "ONCE.COMPLETE", k, o.r.Token, "A")

		// A WAIT on a running key gets the kept answer the other
		// database had under that key.
		k = "answer"
		tok = onceClaim(t, ctx, cb, k)
		onceOK(t, ctx, cb, "ONCE.COMPLETE", k, tok, "kept", "KEEP", 60000)
		tok2 := onceClaim(t, ctx, ca, k, "LEASE", 30000)
		w := asyncOnce(ctx, onceClient(t, addr, proto, withDB(da)), "ONCE.WAIT", k)
		onceAwaitWaiters(t, ctx, ca, k, 1)
		swap()
		o = onceRecv(t, w, 5*time.Second, "WAIT after SWAPDB")
		onceWant(t, "WAIT after SWAPDB", o.r, "done", "kept")
		if st := onceStatus(t, ctx, cb, k); st["state"] != "running" || statusInt(st, "token") != tok2 {
			t.Fatalf("the other database: %v, want running with token %d", st, tok2)
		}

		// A short lease swapped away lapses in the database it went to:
		// a CLAIM … WAIT there takes it over with a greater token.
		k = "lapse"
		tok = onceClaim(t, ctx, ca, k, "LEASE", 300)
		swap()
		r := onceMust(t, ctx, cb, "ONCE.CLAIM", k, "WAIT", 5000)
		if r.State != "claimed" || r.Token <= tok {
			t.Fatalf("CLAIM WAIT on a swapped lease: %v, want [claimed >%d]", r, tok)
		}
		onceErr(t, ctx, cb, "STALE", "ONCE.COMPLETE", k, tok, "late")
	})
}
