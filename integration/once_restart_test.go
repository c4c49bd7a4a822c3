package integration

// KV-16: claims (with their lease deadlines), kept answers (with their
// keep) and the token counter survive a graceful restart and a kill -9,
// under appendfsync always (the built binary, restarted on the same
// directory and port).

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestOnceRestart(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"graceful", "kill-9"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			testOnceRestart(t, how)
		})
	}
}

// onceRunning is a claim left running across a restart.
type onceRunning struct {
	key   string
	token int64
	pttl  int64 // PTTL read at readAt
	at    time.Time
}

// onceKept is an answer left kept across a restart.
type onceKept struct {
	key, answer string
	pttl        int64 // -1: kept until deleted
	at          time.Time
}

func testOnceRestart(t *testing.T, how string) {
	srv := StartOncekv(t, "--appendfsync", "always")
	ctx := grCtx(t, 60*time.Second)
	var maxTok int64
	var running []onceRunning
	var kept []onceKept
	var gone []string // keys that must be free after the restart

	pttlOf := func(c *redis.Client, key string) int64 {
		t.Helper()
		n, err := c.Do(ctx, "PTTL", key).Int64()
		if err != nil {
			t.Fatalf("PTTL %s: %v", key, err)
		}
		return n
	}
	claim := func(c *redis.Client, key string, opts ...any) int64 {
		t.Helper()
		tok := onceClaim(t, ctx, c, key, opts...)
		if tok <= maxTok {
			t.Fatalf("CLAIM %s: token %d not above %d, the largest issued before", key, tok, maxTok)
		}
		maxTok = tok
		return tok
	}

	for cycle := range 2 {
		c := onceClient(t, srv.Addr, 3)
		c1 := onceClient(t, srv.Addr, 2, withDB(1))
		p := fmt.Sprintf("c%d:", cycle)
		// Use some tokens.
		for i := range 10 {
			k := fmt.Sprintf("%sfiller:%d", p, i)
			tok := claim(c, k)
			onceOK(t, ctx, c, "ONCE.COMPLETE", k, tok, "f", "KEEP", 0)
			gone = append(gone, k)
		}
		// Running claims with long leases (one in db 1, one with a
		// fingerprint).
		for i, spec := range []struct {
			c    *redis.Client
			opts []any
		}{
			{c, []any{"LEASE", 20000}},
			{c, []any{"LEASE", 25000, "FINGERPRINT", "req-1"}},
			{c1, []any{"LEASE", 30000}},
		} {
			k := fmt.Sprintf("%srun:%d", p, i)
			tok := claim(spec.c, k, spec.opts...)
			running = append(running, onceRunning{key: k, token: tok, pttl: pttlOf(spec.c, k), at: time.Now()})
		}
		// A claim whose lease passes while the server is down.
		claim(c, p+"short", "LEASE", 300)
		gone = append(gone, p+"short")
		// Kept answers: with a keep, forever, binary.
		for i, spec := range []struct{ answer, keep string }{
			{"receipt-1", "60000"}, {"receipt-2", ""}, {"\x00bin\r\nary\xff", "45000"},
		} {
			k := fmt.Sprintf("%sdone:%d", p, i)
			tok := claim(c, k, "FINGERPRINT", "req-d")
			args := []any{"ONCE.COMPLETE", k, tok, spec.answer}
			if spec.keep != "" {
				args = append(args, "KEEP", spec.keep)
			}
			onceOK(t, ctx, c, args...)
			kept = append(kept, onceKept{key: k, answer: spec.answer, pttl: pttlOf(c, k), at: time.Now()})
		}
		// Aborted and KEEP 0: nothing kept.
		tok := claim(c, p+"aborted")
		onceOK(t, ctx, c, "ONCE.ABORT", p+"aborted", tok)
		gone = append(gone, p+"aborted")

		down := time.Now()
		if how == "graceful" {
			srv = srv.Restart(t)
		} else {
			srv.Kill(t)
			srv = srv.Restart(t)
		}
		t.Logf("cycle %d: %s restart took %v", cycle, how, time.Since(down))
		// Let time pass, so that a lease or keep restarted from scratch
		// would show.
		if since := time.Since(down); since < 1500*time.Millisecond {
			time.Sleep(1500*time.Millisecond - since)
		}

		c = onceClient(t, srv.Addr, 3)
		c1 = onceClient(t, srv.Addr, 2, withDB(1))
		clientOf := func(key string) *redis.Client {
			if strings.HasSuffix(key, ":run:2") {
				return c1
			}
			return c
		}
		const tol = 500 // ms
		for _, r := range running {
			cl := clientOf(r.key)
			st := onceStatus(t, ctx, cl, r.key)
			if st == nil || st["state"] != "running" || statusInt(st, "token") != r.token {
				t.Fatalf("cycle %d: %s after restart: %v, want running with token %d", cycle, r.key, st, r.token)
			}
			want := r.pttl - time.Since(r.at).Milliseconds()
			got := pttlOf(cl, r.key)
			if got > want+tol || got < want-tol {
				t.Fatalf("cycle %d: %s: PTTL %d after restart, want about %d (%d before, %v ago): the lease deadline moved",
					cycle, r.key, got, want, r.pttl, time.Since(r.at))
			}
			rr := onceMust(t, ctx, cl, "ONCE.CLAIM", r.key)
			if rr.State != "running" || rr.Ms > want+tol || rr.Ms < want-tol {
				t.Fatalf("cycle %d: CLAIM %s after restart: %v, want [running ~%d]", cycle, r.key, rr, want)
			}
		}
		if st := onceStatus(t, ctx, c, running[len(running)-2].key); st["fingerprint"] != "req-1" {
			t.Fatalf("cycle %d: fingerprint after restart: %v", cycle, st)
		}
		onceErr(t, ctx, c, "MISMATCH", "ONCE.CLAIM", running[len(running)-2].key, "FINGERPRINT", "req-2")
		for _, k := range kept {
			onceWant(t, fmt.Sprintf("cycle %d: CLAIM %s after restart", cycle, k.key), onceMust(t, ctx, c, "ONCE.CLAIM", k.key), "done", k.answer)
			onceWant(t, fmt.Sprintf("cycle %d: ONCE.WAIT %s after restart", cycle, k.key), onceMust(t, ctx, c, "ONCE.WAIT", k.key), "done", k.answer)
			onceErr(t, ctx, c, "MISMATCH", "ONCE.CLAIM", k.key, "FINGERPRINT", "req-other")
			got := pttlOf(c, k.key)
			if k.pttl == -1 {
				if got != -1 {
					t.Fatalf("cycle %d: %s: PTTL %d after restart, want -1 (kept until deleted)", cycle, k.key, got)
				}
				continue
			}
			want := k.pttl - time.Since(k.at).Milliseconds()
			if got > want+tol || got < want-tol {
				t.Fatalf("cycle %d: %s: PTTL %d after restart, want about %d: the keep moved", cycle, k.key, got, want)
			}
		}
		for _, k := range gone {
			if n := c.Exists(ctx, k).Val(); n != 0 {
				t.Fatalf("cycle %d: %s exists after restart (ONCE.STATUS %v), want free", cycle, k, onceStatus(t, ctx, c, k))
			}
		}
		// The counter continues above every token issued before.
		before := maxTok
		tok = claim(c, fmt.Sprintf("%sfresh", p))
		t.Logf("cycle %d: first token after restart %d (largest before %d)", cycle, tok, before)
		// Old claims still hold for their tokens: the runner that
		// survived a server restart can finish.
		r0 := running[len(running)-3]
		onceOK(t, ctx, clientOf(r0.key), "ONCE.EXTEND", r0.key, r0.token, "LEASE", 40000)
		r0.pttl, r0.at = pttlOf(clientOf(r0.key), r0.key), time.Now()
		running[len(running)-3] = r0
		onceErr(t, ctx, c, "STALE", "ONCE.COMPLETE", r0.key, r0.token+1000000, "x")
		if cycle == 1 {
			for i, r := range running {
				args := []any{"ONCE.COMPLETE", r.key, r.token, "finished after restart"}
				if i%2 == 1 {
					args = []any{"ONCE.ABORT", r.key, r.token}
				}
				onceOK(t, ctx, clientOf(r.key), args...)
			}
		}
	}
}

// TestOnceRestartKillMidStream: kill -9 while clients claim and complete;
// after the restart every acknowledged claim is still running with its
// token (or done, if its COMPLETE was in flight), every acknowledged answer
// is replayed, and new tokens are above every acknowledged one.
func TestOnceRestartKillMidStream(t *testing.T) {
	t.Parallel()
	srv := StartOncekv(t, "--appendfsync", "always")
	type ack struct {
		key      string
		token    int64
		answered bool // COMPLETE acknowledged
		sent     bool // COMPLETE sent
	}
	const workers = 8
	acks := make([][]*ack, workers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		c := onceClient(t, srv.Addr, 2+w%2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				k := fmt.Sprintf("mid:%d:%d", w, i)
				r, err := onceDo(ctx, c, "ONCE.CLAIM", k, "LEASE", 60000)
				if err != nil || r.State != "claimed" {
					cancel()
					return // the server is gone
				}
				a := &ack{key: k, token: r.Token}
				acks[w] = append(acks[w], a)
				if i%3 != 0 {
					a.sent = true
					if c.Do(ctx, "ONCE.COMPLETE", k, r.Token, "answer:"+k).Err() == nil {
						a.answered = true
					}
				}
				cancel()
			}
		}()
	}
	time.Sleep(600 * time.Millisecond)
	srv.Kill(t)
	close(stop)
	wg.Wait()
	srv = srv.Restart(t)
	ctx := grCtx(t, 30*time.Second)
	c := onceClient(t, srv.Addr, 3)
	var maxTok int64
	n, answered := 0, 0
	for _, as := range acks {
		for _, a := range as {
			n++
			maxTok = max(maxTok, a.token)
			st := onceStatus(t, ctx, c, a.key)
			switch {
			case a.answered:
				answered++
				onceWant(t, "acknowledged answer of "+a.key, onceMust(t, ctx, c, "ONCE.CLAIM", a.key), "done", "answer:"+a.key)
			case st == nil:
				t.Fatalf("%s: acknowledged claim %d lost in the kill", a.key, a.token)
			case st["state"] == "done" && !a.sent:
				t.Fatalf("%s: done, but no COMPLETE was sent: %v", a.key, st)
			case statusInt(st, "token") != a.token:
				t.Fatalf("%s: token %d after the kill, want %d", a.key, statusInt(st, "token"), a.token)
			}
		}
	}
	if n < workers || answered == 0 {
		t.Fatalf("only %d acknowledged claims (%d answers) before the kill", n, answered)
	}
	tok := onceClaim(t, ctx, c, "mid:fresh")
	if tok <= maxTok {
		t.Fatalf("token after kill -9: %d, not above %d, the largest acknowledged before", tok, maxTok)
	}
	t.Logf("%d acknowledged claims, %d answers survived kill -9; next token %d (largest before %d)", n, answered, tok, maxTok)
}

// TestOnceRestartWakeDurable: under appendfsync always, an answer that a
// waiter was woken with, or that a CLAIM replayed, is durable: kill -9 at
// any moment, and every answer anyone saw is still kept after the restart
// ("a waiter is woken only with what is as durable as any acknowledged
// write"; KV-8 with KV-16).
func TestOnceRestartWakeDurable(t *testing.T) {
	t.Parallel()
	srv := StartOncekv(t, "--appendfsync", "always")
	const pairs = 8
	type seen struct {
		key, answer, how string
	}
	var mu sync.Mutex
	var seenAll []seen
	see := func(s seen) {
		mu.Lock()
		seenAll = append(seenAll, s)
		mu.Unlock()
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := range pairs {
		runner := onceClient(t, srv.Addr, 3)
		waiter := onceClient(t, srv.Addr, 2)
		replayer := onceClient(t, srv.Addr, 3)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				key := fmt.Sprintf("wd:%d:%d", p, i)
				answer := "answer:" + key
				r, err := onceDo(ctx, runner, "ONCE.CLAIM", key, "LEASE", 60000)
				if err != nil || r.State != "claimed" {
					cancel()
					return
				}
				woken := asyncOnce(ctx, waiter, "ONCE.WAIT", key)
				for {
					v, err := runner.Do(ctx, "ONCE.STATUS", key).Result()
					if err != nil {
						cancel()
						return
					}
					if m, _ := v.(map[any]any); m["waiters"] == int64(1) {
						break
					}
					time.Sleep(time.Millisecond)
				}
				completed := make(chan struct{})
				go func() {
					defer close(completed)
					_ = runner.Do(ctx, "ONCE.COMPLETE", key, r.Token, answer).Err()
				}()
				// Replays, racing the COMPLETE's sync.
				for {
					rr, err := onceDo(ctx, replayer, "ONCE.CLAIM", key, "WAIT", 1)
					if err != nil {
						break
					}
					if rr.State == "done" {
						see(seen{key, rr.Detail, "replayed by CLAIM"})
						break
					}
				}
				if o := <-woken; o.err == nil && o.r.State == "done" {
					see(seen{key, o.r.Detail, "woken waiter"})
				}
				<-completed
				cancel()
			}
		}()
	}
	time.Sleep(800 * time.Millisecond)
	srv.Kill(t)
	close(stop)
	wg.Wait()
	srv = srv.Restart(t)
	ctx := grCtx(t, 30*time.Second)
	c := onceClient(t, srv.Addr, 3)
	lost := map[string]int{}
	for _, s := range seenAll {
		st := onceStatus(t, ctx, c, s.key)
		if st == nil || st["state"] != "done" {
			lost[s.how]++
			t.Errorf("%s: the answer %q was %s before the kill, and is not kept after it (status %v)", s.key, s.answer, s.how, st)
		}
	}
	t.Logf("%d answers seen before kill -9; lost: %v", len(seenAll), lost)
	if len(seenAll) < pairs {
		t.Fatalf("only %d answers seen before the kill", len(seenAll))
	}
}

// TestOnceRestartInfo: INFO once after a restart tells the truth about the
// running records written before it (KV-16 with INFO's running_keys): they
// are counted without being touched, stop being counted when DEL, UNLINK,
// FLUSHDB or FLUSHALL removes them (a lapse at that moment) or when their
// lease passes, and are counted once when EXTEND saves them again. Their
// leases lapse as any claim's do (KV-13): a CLAIM … WAIT that arrives
// after the restart takes the claim over with a larger token, a ONCE.WAIT
// gets ["free", ""].
func TestOnceRestartInfo(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"graceful", "kill-9"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			testOnceRestartInfo(t, how)
		})
	}
}

func testOnceRestartInfo(t *testing.T, how string) {
	srv := StartOncekv(t, "--appendfsync", "always")
	ctx := grCtx(t, 90*time.Second)
	clients := func() []*redis.Client {
		return []*redis.Client{onceClient(t, srv.Addr, 3), onceClient(t, srv.Addr, 2, withDB(1)), onceClient(t, srv.Addr, 3, withDB(2))}
	}
	cs := clients()
	// lapseMs is the lease of the records whose lapse the test waits
	// for after the restart: long enough to see them counted first on
	// a loaded machine.
	const lapseMs = 10000
	claims := []struct {
		db    int
		key   string
		lease int
	}{
		{0, "long:0", 120000}, {0, "long:1", 120000}, {0, "long:2", 120000}, {0, "long:3", 120000},
		{0, "expire", lapseMs}, {0, "lapse-claim", lapseMs}, {0, "lapse-wait", lapseMs},
		{0, "short", 300}, // passes while the server is down
		{0, "done", 120000},
		{1, "db1:0", 120000}, {1, "db1:1", 120000},
		{2, "db2", 120000},
	}
	tokens := map[string]int64{}
	var maxTok int64
	for _, c := range claims {
		tok := onceClaim(t, ctx, cs[c.db], c.key, "LEASE", c.lease)
		tokens[c.key], maxTok = tok, max(maxTok, tok)
	}
	onceOK(t, ctx, cs[0], "ONCE.COMPLETE", "done", tokens["done"], "answer")
	if got := onceInfo(t, ctx, cs[0])["running_keys"]; got != 11 {
		t.Fatalf("before the restart: running_keys %d, want 11", got)
	}

	if how == "kill-9" {
		srv.Kill(t)
	}
	srv = srv.Restart(t)
	cs = clients()
	c := cs[0]

	// Counted without any command touching them; the counters count
	// from the start, and no one waits.
	want := map[string]int64{"running_keys": 10}
	for _, f := range onceInfoFields {
		if f != "running_keys" {
			want[f] = 0
		}
	}
	check := func(step string) {
		t.Helper()
		got := onceInfo(t, ctx, c)
		for _, f := range onceInfoFields {
			if got[f] != want[f] {
				t.Errorf("after %s: INFO once %s = %d, want %d", step, f, got[f], want[f])
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	waitFor(t, 5*time.Second, 10*time.Millisecond, "running_keys counting the claims of before the restart", func() (bool, string) {
		got := onceInfo(t, ctx, c)
		return got["running_keys"] == want["running_keys"], fmt.Sprint(got)
	})
	check("the restart")

	for _, step := range []struct {
		what string
		do   func() error
		// running is running_keys after it.
		running int64
	}{
		{"DEL long:0", func() error { return c.Del(ctx, "long:0").Err() }, 9},
		{"UNLINK long:1", func() error { return c.Unlink(ctx, "long:1").Err() }, 8},
		{"FLUSHDB in db 1", func() error { return cs[1].FlushDB(ctx).Err() }, 6},
		{"EXTEND long:2", func() error {
			return c.Do(ctx, "ONCE.EXTEND", "long:2", tokens["long:2"], "LEASE", 120000).Err()
		}, 6},
		{"DEL long:2 after EXTEND", func() error { return c.Del(ctx, "long:2").Err() }, 5},
	} {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		want["running_keys"] = step.running
		check(step.what)
	}

	// The leases of before the restart lapse: the claim passes to a
	// CLAIM … WAIT that came after it, a ONCE.WAIT learns the key is
	// free, and a lease that passes with no one waiting stops being
	// counted.
	heir := asyncOnce(ctx, onceClient(t, srv.Addr, 3), "ONCE.CLAIM", "lapse-claim", "WAIT", 0, "LEASE", 120000)
	waiter := asyncOnce(ctx, onceClient(t, srv.Addr, 3), "ONCE.WAIT", "lapse-wait")
	onceAwaitWaiters(t, ctx, c, "lapse-claim", 1)
	onceAwaitWaiters(t, ctx, c, "lapse-wait", 1)
	want["waits"], want["waiting_clients"] = 2, 2
	check("the waits")
	h := onceRecv(t, heir, 2*lapseMs*time.Millisecond, "CLAIM … WAIT on a claim of before the restart")
	if h.r.State != "claimed" || h.r.Token <= maxTok {
		t.Fatalf("CLAIM … WAIT on a claim of before the restart: %v, want claimed with a token above %d", h.r, maxTok)
	}
	onceWant(t, "ONCE.WAIT on a claim of before the restart", onceRecv(t, waiter, 2*lapseMs*time.Millisecond, "ONCE.WAIT").r, "free", "")
	waitFor(t, 5*time.Second, 10*time.Millisecond, "expire's lease passed", func() (bool, string) {
		n := c.Exists(ctx, "expire").Val()
		return n == 0, fmt.Sprintf("EXISTS expire = %d", n)
	})
	// long:3, the heir's lapse-claim and db2.
	want["running_keys"] = 3
	want["waiting_clients"], want["wakeups"], want["lease_lapses"], want["handoffs"], want["claims"] = 0, 2, 2, 1, 1
	check("the lapses")
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatalf("FLUSHALL: %v", err)
	}
	want["running_keys"] = 0
	check("FLUSHALL")
}
