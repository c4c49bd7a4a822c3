package onceup

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncekv/oncekv/internal/testredis"
)

// Slot migration (CLUSTER SETSLOT … MIGRATING / IMPORTING, MIGRATE,
// SETSLOT … NODE) of keys in use: while a slot moves, every script on it
// is answered TRYAGAIN (its outcome record is missing on both nodes), the
// record and the token counter move separately, and the waiters'
// subscriptions are on the old owner.

// finishAfter ends migration m after d, in the background; wait waits
// for it (the test's cleanup does too).
func finishAfter(tb testing.TB, m *testredis.Migration, d time.Duration) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(d)
		m.Finish()
	}()
	wait = func() { <-done }
	tb.Cleanup(wait)
	return wait
}

// TestMigration: a running key's slot moves to another master while its
// runner extends, reads and ends the run (KV-10, KV-12) and callers on
// both instances wait for it or try to claim it (KV-9): every command
// issued during the move is answered once the move ends, as without it,
// the runner alone holds the claim, and every waiter gets the run's
// outcome from the new owner.
func TestMigration(t *testing.T) {
	up := clusterUpstream(t, 3, 0)
	cl := up.cluster
	ps := startProxies(t, up, 2, Config{})
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		moved  bool   // the record moves before the runner's commands
		end    []any  // the runner's last command, after the key
		want   string // what the waiters get
		detail string
	}{
		{"complete-record-moved", true, []any{"ONCE.COMPLETE", "", "answer"}, "done", "answer"},
		{"complete-keep-0-nothing-moved", false, []any{"ONCE.COMPLETE", "", "answer", "KEEP", 0}, "done", "answer"},
		{"abort-record-moved", true, []any{"ONCE.ABORT", "", "boom"}, "failed", "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := "{" + tc.name + "}k"
			runner := dial(t, ps[0])
			claim := do(ctx, runner, "ONCE.CLAIM", k, "LEASE", 20000)
			if claim.state != "claimed" {
				t.Fatalf("CLAIM = %v", claim)
			}
			// Waiters on both instances, several connections each.
			type got struct {
				r  reply
				at time.Time
			}
			var waiters []chan got
			for i := 0; i < 8; i++ {
				c := dial(t, ps[i%2])
				ch := make(chan got, 1)
				waiters = append(waiters, ch)
				args := []any{"ONCE.WAIT", k, "TIMEOUT", 15000}
				if i%4 >= 2 {
					args = []any{"ONCE.CLAIM", k, "WAIT", 15000}
				}
				go func() { r := do(ctx, c, args...); ch <- got{r, time.Now()} }()
			}
			eventually(t, 5*time.Second, "8 waiters", func() bool { return ps[0].e.Waiting()+ps[1].e.Waiting() == 8 })

			m := cl.BeginMigration(cl.KeySlot(k), cl.OtherMaster(cl.MasterForKey(k)))
			if tc.moved {
				m.Move(k, TokenKey(Slot([]byte(k))))
			}
			// Callers that try to claim the running key meanwhile.
			var wg sync.WaitGroup
			claims := make(chan reply, 8)
			for i := 0; i < 8; i++ {
				c := dial(t, ps[i%2])
				wg.Add(1)
				go func() { defer wg.Done(); claims <- do(ctx, c, "ONCE.CLAIM", k) }()
			}
			const hold = 300 * time.Millisecond
			finished := finishAfter(t, m, hold)
			start := time.Now()
			if err := runner.Do(ctx, "ONCE.EXTEND", k, claim.n, "LEASE", 20000).Err(); err != nil {
				t.Fatalf("EXTEND while the slot moves: %v", err)
			}
			st, err := runner.Do(ctx, "ONCE.STATUS", k).Slice()
			if err != nil || len(st) < 4 || st[1] != "running" || st[3] != claim.n {
				t.Fatalf("STATUS while the slot moves = %v, %v", st, err)
			}
			end := append([]any{tc.end[0], k, claim.n}, tc.end[2:]...)
			if err := runner.Do(ctx, end...).Err(); err != nil {
				t.Fatalf("%v while the slot moves: %v", end, err)
			}
			ended := time.Now()
			finished()
			if d := time.Since(start); d < hold {
				t.Errorf("the runner's commands were answered in %v, before the move ended: they did not meet it", d)
			}
			wg.Wait()
			close(claims)
			// Before the run ended: running; after it: its answer, or
			// (nothing kept) one new claim at most, with a larger token.
			var again int
			for r := range claims {
				switch {
				case r.state == "running", r.state == "done" && r.detail == tc.detail:
				case r.state == "claimed" && r.n > claim.n && (tc.want == "failed" || len(tc.end) > 3):
					again++
				default:
					t.Errorf("CLAIM during the move = %v, want running (the runner holds the claim)", r)
				}
			}
			if again > 1 {
				t.Errorf("%d callers claimed the key after the run ended, want one at most", again)
			}
			for i, ch := range waiters {
				select {
				case g := <-ch:
					if g.r.state != tc.want || g.r.detail != tc.detail {
						t.Errorf("waiter %d got %v, want %s %s", i, g.r, tc.want, tc.detail)
					}
					if d := g.at.Sub(ended); d > 2*time.Second {
						t.Errorf("waiter %d woken %v after the run ended", i, d)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("waiter %d not woken 5 s after the run ended", i)
				}
			}
			if owner := cl.MasterForKey(k); owner != m.To {
				t.Errorf("slot served by %s after the move, want %s", owner, m.To)
			}
		})
	}
}

// TestMigrationOneRunner: callers on two instances and several
// connections each claim a free key (CLAIM … WAIT) while its slot moves
// (KV-9): exactly one gets the claim, and the others get its answer
// (KV-10).
func TestMigrationOneRunner(t *testing.T) {
	up := clusterUpstream(t, 3, 0)
	cl := up.cluster
	ps := startProxies(t, up, 2, Config{})
	ctx := context.Background()
	for round := 0; round < 3; round++ {
		k := "{one}" + itoa(int64(round))
		m := cl.BeginMigration(cl.KeySlot(k), cl.OtherMaster(cl.MasterForKey(k)))
		finished := finishAfter(t, m, 200*time.Millisecond)
		const callers = 16
		res := make(chan reply, callers)
		var clients []*redis.Client
		for i := 0; i < 4; i++ {
			clients = append(clients, dial(t, ps[i%2]))
		}
		for i := 0; i < callers; i++ {
			c := clients[i%len(clients)]
			go func() {
				r := do(ctx, c, "ONCE.CLAIM", k, "LEASE", 10000, "WAIT", 10000)
				if r.state == "claimed" {
					if err := c.Do(ctx, "ONCE.COMPLETE", k, r.n, "by-"+itoa(r.n)).Err(); err != nil {
						r.err = err
					}
				}
				res <- r
			}()
		}
		var winner int64
		var rest []reply
		for i := 0; i < callers; i++ {
			r := <-res
			switch {
			case r.err != nil:
				t.Fatalf("round %d: %v", round, r.err)
			case r.state == "claimed" && winner != 0:
				t.Fatalf("round %d: two claims, tokens %d and %d", round, winner, r.n)
			case r.state == "claimed":
				winner = r.n
			default:
				rest = append(rest, r)
			}
		}
		finished()
		if winner == 0 {
			t.Fatalf("round %d: no claim: %v", round, rest)
		}
		for _, r := range rest {
			if r.state != "done" || r.detail != "by-"+itoa(winner) {
				t.Errorf("round %d: a caller got %v, want done by-%d", round, r, winner)
			}
		}
	}
}

// TestMigrationWakeupBounded: what a move can make the waiters miss. While
// a slot is half moved, a script whose keys (record, token counter and
// outcome record) are all on the target already runs there (ASK), and its
// SPUBLISH reaches the target's subscribers, not the waiters' connections,
// which stay on the old owner until the move ends; and the checks of the
// waited keys (three keys, some missing on both nodes) are answered
// TRYAGAIN until it ends. The waiters still learn the outcome at the lease
// deadline they saw, with the move still open: the loss is bounded by the
// lease.
func TestMigrationWakeupBounded(t *testing.T) {
	up := clusterUpstream(t, 3, 0)
	cl := up.cluster
	ps := startProxies(t, up, 2, Config{})
	ctx := context.Background()
	runner := dial(t, ps[0])
	for _, tc := range []struct {
		name string
		// early: an aborted run first leaves an outcome record, so that
		// the three keys exist, move, and the run's end runs on the
		// target; else the run ends before the move, its announcement
		// dropped (a waiter that missed it).
		early  bool
		end    []any
		want   string
		detail string
	}{
		{"complete-on-the-target", true, []any{"ONCE.COMPLETE", "", "answer"}, "done", "answer"},
		{"abort-on-the-target", true, []any{"ONCE.ABORT", "", "boom"}, "failed", "boom"},
		{"kept-answer-missed", false, []any{"ONCE.COMPLETE", "", "answer"}, "done", "answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := "{bounded-" + tc.name + "}k"
			if tc.early {
				first := do(ctx, runner, "ONCE.CLAIM", k)
				if err := runner.Do(ctx, "ONCE.ABORT", k, first.n).Err(); err != nil {
					t.Fatalf("ABORT: %v", err)
				}
			}
			const lease = 1500
			claim := do(ctx, runner, "ONCE.CLAIM", k, "LEASE", lease)
			if claim.state != "claimed" {
				t.Fatalf("CLAIM = %v", claim)
			}
			claimed := time.Now()
			type got struct {
				r  reply
				at time.Time
			}
			res := make(chan got, 4)
			for i := 0; i < 4; i++ {
				c := dial(t, ps[i%2])
				args := []any{"ONCE.WAIT", k, "TIMEOUT", 10000}
				if i >= 2 {
					args = []any{"ONCE.CLAIM", k, "WAIT", 10000}
				}
				go func() { r := do(ctx, c, args...); res <- got{r, time.Now()} }()
			}
			eventually(t, time.Second, "4 waiters", func() bool { return ps[0].e.Waiting()+ps[1].e.Waiting() == 4 })
			end := append([]any{tc.end[0], k, claim.n}, tc.end[2:]...)
			if !tc.early {
				for _, p := range ps {
					p.e.dropEvents.Store(true)
				}
				t.Cleanup(func() {
					for _, p := range ps {
						p.e.dropEvents.Store(false)
					}
				})
				if err := runner.Do(ctx, end...).Err(); err != nil {
					t.Fatalf("%v: %v", end, err)
				}
			}
			m := cl.BeginMigration(cl.KeySlot(k), cl.OtherMaster(cl.MasterForKey(k)))
			m.MoveAll()
			if tc.early {
				if err := runner.Do(ctx, end...).Err(); err != nil {
					t.Fatalf("%v on the half-moved slot: %v", end, err)
				}
			}
			for i := 0; i < 4; i++ {
				select {
				case g := <-res:
					if g.r.state != tc.want || g.r.detail != tc.detail {
						t.Errorf("waiter got %v, want %s %s", g.r, tc.want, tc.detail)
					}
					if d := g.at.Sub(claimed); d > lease*time.Millisecond+time.Second {
						t.Errorf("waiter woken %v after the claim, past its lease (%d ms) and a second", d, lease)
					}
				case <-time.After(lease*time.Millisecond + 3*time.Second):
					t.Fatalf("a waiter was not woken %v after the claim, the move still open", time.Since(claimed))
				}
			}
			m.Finish()
		})
	}
}

// TestMigrationLapse: a runner's lease lapses while its key's slot is
// half moved (KV-13). The takeover writes the record and the token
// counter, which Redis Cluster refuses (TRYAGAIN) until the move ends:
// exactly one claim waiter gets the claim, with a larger token, once the
// move has ended (within a second: the checks retry), and the others,
// ONCE.WAIT callers included, get its answer; the lapsed runner's
// COMPLETE is stale.
func TestMigrationLapse(t *testing.T) {
	up := clusterUpstream(t, 3, 0)
	cl := up.cluster
	ps := startProxies(t, up, 2, Config{})
	ctx := context.Background()
	k := "{lapse}k"
	runner := dial(t, ps[0])
	const lease = 500
	dead := do(ctx, runner, "ONCE.CLAIM", k, "LEASE", lease)
	if dead.state != "claimed" {
		t.Fatalf("CLAIM = %v", dead)
	}
	type got struct {
		r     reply
		c     *redis.Client
		claim bool
		at    time.Time
	}
	res := make(chan got, 8)
	for i := 0; i < 8; i++ {
		c := dial(t, ps[i%2])
		claim := i < 6
		go func() {
			args := []any{"ONCE.WAIT", k, "TIMEOUT", 15000}
			if claim {
				args = []any{"ONCE.CLAIM", k, "LEASE", 10000, "WAIT", 15000}
			}
			r := do(ctx, c, args...)
			if r.state == "claimed" {
				if err := c.Do(ctx, "ONCE.COMPLETE", k, r.n, "by-"+itoa(r.n)).Err(); err != nil {
					r.err = err
				}
			}
			res <- got{r, c, claim, time.Now()}
		}()
	}
	eventually(t, time.Second, "8 waiters", func() bool { return ps[0].e.Waiting()+ps[1].e.Waiting() == 8 })
	m := cl.BeginMigration(cl.KeySlot(k), cl.OtherMaster(cl.MasterForKey(k)))
	m.Move(k)
	time.Sleep(lease*time.Millisecond + time.Second) // the lease lapses, the move still open
	m.Finish()
	moved := time.Now()
	var winner int64
	var others []got
	for i := 0; i < 8; i++ {
		select {
		case g := <-res:
			switch {
			case g.r.err != nil:
				t.Fatalf("waiter: %v", g.r.err)
			case g.r.state == "claimed" && winner != 0:
				t.Fatalf("two claims after the lapse: %d and %d", winner, g.r.n)
			case g.r.state == "claimed":
				winner = g.r.n
				if d := g.at.Sub(moved); d > 2*time.Second {
					t.Errorf("the claim was handed over %v after the move ended", d)
				}
			default:
				others = append(others, g)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("waiters not answered 10 s after the move ended")
		}
	}
	if winner <= dead.n {
		t.Fatalf("handed-over token %d, want one above %d", winner, dead.n)
	}
	for _, g := range others {
		if g.r.state != "done" || g.r.detail != "by-"+itoa(winner) {
			t.Errorf("a waiter (claim %v) got %v, want done by-%d", g.claim, g.r, winner)
		}
	}
	if err := runner.Do(ctx, "ONCE.COMPLETE", k, dead.n, "late").Err(); !strings.HasPrefix(errText(err), "STALE") {
		t.Errorf("COMPLETE with the lapsed token: %v, want STALE", err)
	}
}
