package onceup

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestStandalone runs the behaviour suite with three engines (three
// simulated oncekv instances) over one standalone redis-server.
func TestStandalone(t *testing.T) {
	up := standaloneUpstream(t)
	runSuite(t, up)
	t.Run("resubscribe", func(t *testing.T) { testResubscribe(t, up) })
	t.Run("missed-announcement", func(t *testing.T) { testMissed(t, up) })
	t.Run("stale-check", func(t *testing.T) { testStaleCheck(t, up) })
	t.Run("databases", func(t *testing.T) { testDatabases(t, up) })
	t.Run("unsubscribe", func(t *testing.T) { testUnsubscribe(t, up) })
	t.Run("flushed", func(t *testing.T) { testFlushed(t, up) }) // last: flushes everything
}

// TestCluster runs the same suite over a 3-master Redis Cluster.
func TestCluster(t *testing.T) {
	up := clusterUpstream(t, 3, 0)
	runSuite(t, up)
	t.Run("resubscribe", func(t *testing.T) { testResubscribe(t, up) })
	t.Run("missed-announcement", func(t *testing.T) { testMissed(t, up) })
	t.Run("flushed", func(t *testing.T) { testFlushed(t, up) }) // last: flushes everything
}

func runSuite(t *testing.T, up *upstream) {
	ps := startProxies(t, up, 3, Config{})
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, up *upstream, ps []*proxy)
	}{
		{"basics", testBasics},
		{"errors", testErrors},
		{"status", testStatus},
		{"keep", testKeep},
		{"abort", testAbort},
		{"fingerprint", testFingerprint},
		{"handover", testHandover},
		{"wait-free-at-lapse", testWaitFree},
		{"timeouts", testTimeouts},
		{"disconnect", testDisconnect},
		{"touched", testTouched},
		{"stress", testStress},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, up, ps) })
	}
}

// key returns a key unique to the test, spread over slots.
func key(t *testing.T, s string) string { return t.Name() + ":" + s }

// KV-8, KV-9: a claim, its answer kept and replayed through every
// instance; tokens are integers.
func testBasics(t *testing.T, up *upstream, ps []*proxy) {
	ctx := context.Background()
	c0, c1 := dial(t, ps[0]), dial(t, ps[1])
	k := key(t, "k")
	r := do(ctx, c0, "ONCE.CLAIM", k)
	if r.err != nil || r.state != "claimed" || r.n <= 0 {
		t.Fatalf("CLAIM = %v", r)
	}
	if r2 := do(ctx, c1, "once.claim", k); r2.state != "running" || r2.n <= 0 || r2.n > 30000 {
		t.Fatalf("second CLAIM = %v, want running with the lease left", r2)
	}
	if err := c0.Do(ctx, "ONCE.COMPLETE", k, r.n, "answer").Err(); err != nil {
		t.Fatalf("COMPLETE: %v", err)
	}
	for _, c := range []*redis.Client{c0, c1, dial(t, ps[2])} {
		if r := do(ctx, c, "ONCE.CLAIM", k, "WAIT", 1000); r.state != "done" || r.detail != "answer" {
			t.Fatalf("CLAIM after COMPLETE = %v, want done answer", r)
		}
		if r := do(ctx, c, "ONCE.WAIT", k); r.state != "done" || r.detail != "answer" {
			t.Fatalf("WAIT after COMPLETE = %v", r)
		}
	}
	// The record is a hash at the key: it expires, is deleted and shows
	// its keep as any key.
	if ttl := up.client(t).PTTL(ctx, k).Val(); ttl != -1 {
		t.Fatalf("PTTL of a kept answer = %v, want -1", ttl)
	}
	if typ := up.client(t).Type(ctx, k).Val(); typ != "hash" {
		t.Fatalf("TYPE = %q, want hash (documented difference)", typ)
	}
	if r := do(ctx, c1, "ONCE.WAIT", key(t, "free")); r.state != "free" || r.detail != "" {
		t.Fatalf("WAIT on a free key = %v", r)
	}
	// Once completed, the token no longer holds the claim: a repeated
	// COMPLETE is stale, with the same answer or another (CONTRACT.md,
	// KV-13), and changes nothing.
	for _, ans := range []string{"answer", "other"} {
		if err := c1.Do(ctx, "ONCE.COMPLETE", k, r.n, ans).Err(); !strings.HasPrefix(errText(err), "STALE ") {
			t.Fatalf("repeated COMPLETE (%s) after done: %v, want -STALE", ans, err)
		}
	}
	if r := do(ctx, c0, "ONCE.CLAIM", k); r.state != "done" || r.detail != "answer" {
		t.Fatalf("CLAIM after the repeated COMPLETEs = %v", r)
	}

	// Binary keys, fingerprints and answers, through a waiter on another
	// instance (the announcement path).
	bk, bfp, bans := k+"\x00 {x} \r\n", "f\x00p ", "a\x00 b\r\n\xff"
	bt := do(ctx, c0, "ONCE.CLAIM", bk, "FINGERPRINT", bfp).n
	res := make(chan reply, 1)
	go func() { res <- do(ctx, c1, "ONCE.CLAIM", bk, "FINGERPRINT", bfp, "WAIT", 10000) }()
	eventually(t, 5*time.Second, "the waiter", func() bool { return ps[1].e.Waiting() == 1 })
	if err := c0.Do(ctx, "ONCE.COMPLETE", bk, bt, bans, "KEEP", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if r := <-res; r.state != "done" || r.detail != bans {
		t.Fatalf("binary waiter got %q", r)
	}
}

// Argument and state errors, worded as the embedded server words them.
func testErrors(t *testing.T, up *upstream, ps []*proxy) {
	ctx := context.Background()
	c := dial(t, ps[0])
	k := key(t, "k")
	tok := do(ctx, c, "ONCE.CLAIM", k).n
	up.client(t).Set(ctx, key(t, "str"), "v", 0)
	up.client(t).HSet(ctx, key(t, "hash"), "field", "v")
	stale := "STALE token no longer holds the claim (it completed, was aborted, lapsed or was handed over)"
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"ONCE.CLAIM"}, "ERR wrong number of arguments for 'once.claim' command"},
		{[]any{"once.complete", k, 1}, "ERR wrong number of arguments for 'once.complete' command"},
		{[]any{"ONCE.ABORT", k}, "ERR wrong number of arguments for 'once.abort' command"},
		{[]any{"ONCE.EXTEND", k, 1, "LEASE"}, "ERR wrong number of arguments for 'once.extend' command"},
		{[]any{"ONCE.WAIT"}, "ERR wrong number of arguments for 'once.wait' command"},
		{[]any{"ONCE.STATUS", k, "x"}, "ERR wrong number of arguments for 'once.status' command"},
		{[]any{"ONCE.CLAIM", k, "LEASE"}, "ERR syntax error"},
		{[]any{"ONCE.CLAIM", k, "BOGUS", 1}, "ERR syntax error"},
		{[]any{"ONCE.CLAIM", k, "LEASE", 0}, "ERR invalid lease"},
		{[]any{"ONCE.CLAIM", k, "LEASE", -5}, "ERR invalid lease"},
		{[]any{"ONCE.CLAIM", k, "LEASE", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"ONCE.CLAIM", k, "WAIT", "x"}, "ERR timeout is not an integer or out of range"},
		{[]any{"ONCE.CLAIM", k, "WAIT", -1}, "ERR timeout is negative"},
		{[]any{"ONCE.WAIT", k, "TIMEOUT", -1}, "ERR timeout is negative"},
		{[]any{"ONCE.WAIT", k, "TIMEOUT", "x"}, "ERR timeout is not an integer or out of range"},
		{[]any{"ONCE.WAIT", k, "NOPE", 1}, "ERR syntax error"},
		{[]any{"ONCE.COMPLETE", k, "x", "a"}, "ERR value is not an integer or out of range"},
		{[]any{"ONCE.COMPLETE", k, -1, "a"}, "ERR value is not an integer or out of range"},
		{[]any{"ONCE.COMPLETE", k, tok, "a", "KEEP", -1}, "ERR invalid keep"},
		{[]any{"ONCE.COMPLETE", k, tok, "a", "KEPT", 1}, "ERR syntax error"},
		{[]any{"ONCE.COMPLETE", k, tok, "a", "KEEP"}, "ERR syntax error"},
		{[]any{"ONCE.COMPLETE", k, tok + 1, "a"}, stale},
		{[]any{"ONCE.ABORT", k, tok + 1}, stale},
		{[]any{"ONCE.EXTEND", k, tok + 1, "LEASE", 100}, stale},
		{[]any{"ONCE.EXTEND", k, tok, "LEASE", 0}, "ERR invalid lease"},
		{[]any{"ONCE.EXTEND", k, tok, "LEAS", 10}, "ERR syntax error"},
		{[]any{"ONCE.COMPLETE", key(t, "free"), 1, "a"}, stale},
		{[]any{"ONCE.CLAIM", key(t, "str")}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"ONCE.CLAIM", key(t, "hash")}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"ONCE.WAIT", key(t, "str")}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"ONCE.STATUS", key(t, "str")}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"ONCE.COMPLETE", key(t, "str"), 1, "a"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"ONCE.ABORT", key(t, "hash"), 1}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"ONCE.EXTEND", key(t, "hash"), 1, "LEASE", 5}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
	} {
		err := c.Do(ctx, tc.args...).Err()
		if errText(err) != tc.want {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	// Nothing above changed the claim.
	if err := c.Do(ctx, "ONCE.EXTEND", k, tok, "lease", 5000).Err(); err != nil {
		t.Fatalf("EXTEND with the live token: %v", err)
	}
	if v := up.client(t).Get(ctx, key(t, "str")).Val(); v != "v" {
		t.Fatalf("string key changed: %q", v)
	}
}

// ONCE.STATUS in RESP2 (flat array) and RESP3 (map); the waiters field
// counts this instance's waiters.
func testStatus(t *testing.T, up *upstream, ps []*proxy) {
	ctx := context.Background()
	c2, c3 := dial(t, ps[0]), dial(t, ps[0], 3)
	k := key(t, "k")
	if v, err := c2.Do(ctx, "ONCE.STATUS", k).Result(); err != redis.Nil {
		t.Fatalf("STATUS of a free key = %v, %v; want nil", v, err)
	}
	tok := do(ctx, c2, "ONCE.CLAIM", k, "LEASE", 5000, "FINGERPRINT", "fp1").n
	waiting := make(chan reply, 1)
	go func() { waiting <- do(ctx, dial(t, ps[0]), "ONCE.CLAIM", k, "WAIT", 10000) }()
	eventually(t, 5*time.Second, "a waiter", func() bool { return ps[0].e.Waiting() > 0 })

	v, err := c2.Do(ctx, "ONCE.STATUS", k).Result()
	if err != nil {
		t.Fatal(err)
	}
	flat, ok := v.([]any)
	if !ok || len(flat) != 12 {
		t.Fatalf("RESP2 STATUS = %#v, want 12 elements", v)
	}
	got := map[string]any{}
	for i := 0; i < 12; i += 2 {
		got[flat[i].(string)] = flat[i+1]
	}
	if got["state"] != "running" || got["token"] != tok || got["keep-ms"] != int64(-1) ||
		got["waiters"] != int64(1) || got["fingerprint"] != "fp1" {
		t.Fatalf("STATUS = %v", got)
	}
	if l := got["lease-ms"].(int64); l <= 0 || l > 5000 {
		t.Fatalf("lease-ms %d", l)
	}
	m, err := c3.Do(ctx, "ONCE.STATUS", k).Result()
	if err != nil {
		t.Fatal(err)
	}
	mm, ok := m.(map[any]any)
	if !ok || len(mm) != 6 || mm["state"] != "running" || mm["waiters"] != int64(1) {
		t.Fatalf("RESP3 STATUS = %#v", m)
	}
	if err := c2.Do(ctx, "ONCE.COMPLETE", k, tok, "x", "KEEP", 60000).Err(); err != nil {
		t.Fatal(err)
	}
	if r := <-waiting; r.state != "done" || r.detail != "x" {
		t.Fatalf("waiter got %v", r)
	}
	m, _ = c3.Do(ctx, "ONCE.STATUS", k).Result()
	mm = m.(map[any]any)
	if mm["state"] != "done" || mm["lease-ms"] != int64(-1) || mm["waiters"] != int64(0) {
		t.Fatalf("STATUS after COMPLETE = %v", mm)
	}
	if keep := mm["keep-ms"].(int64); keep <= 0 || keep > 60000 {
		t.Fatalf("keep-ms %d", keep)
	}
	tok2 := do(ctx, c2, "ONCE.CLAIM", key(t, "nofp")).n
	m, _ = c3.Do(ctx, "ONCE.STATUS", key(t, "nofp")).Result()
	if mm = m.(map[any]any); mm["fingerprint"] != nil || mm["token"] != tok2 {
		t.Fatalf("STATUS without fingerprint = %v", mm)
	}
}

// KV-14: KEEP ms, then free again with a larger token; KEEP 0 hands the
// answer to the waiters of the moment only (a singleflight across
// instances). Tokens grow across the record's expiry (KV-13).
func testKeep(t *testing.T, up *upstream, ps []*proxy) {
	ctx := context.Background()
	c0, c1, c2 := dial(t, ps[0]), dial(t, ps[1]), dial(t, ps[2])
	k := key(t, "k")
	t1 := do(ctx, c0, "ONCE.CLAIM", k).n
	if err := c0.Do(ctx, "ONCE.COMPLETE", k, t1, "a1", "KEEP", 150).Err(); err != nil {
		t.Fatal(err)
	}
	if r := do(ctx, c1, "ONCE.CLAIM", k); r.state != "done" || r.detail != "a1" {
		t.Fatalf("CLAIM within the keep = %v", r)
	}
	if p := up.client(t).PTTL(ctx, k).Val(); p <= 0 || p > 150*time.Millisecond {
		t.Fatalf("PTTL within the keep = %v", p)
	}
	var t2 int64
	eventually(t, 5*time.Second, "the keep to end", func() bool {
		r := do(ctx, c2, "ONCE.CLAIM", k, "LEASE", 100)
		t2 = r.n
		return r.state == "claimed"
	})
	if t2 <= t1 {
		t.Fatalf("token after the keep %d, not above %d", t2, t1)
	}
	// Lapse with no waiter: the key is free; the next token is larger still.
	var t3 int64
	eventually(t, 5*time.Second, "the lease to lapse", func() bool {
		r := do(ctx, c0, "ONCE.CLAIM", k, "LEASE", 5000)
		t3 = r.n
		return r.state == "claimed"
	})
	if t3 <= t2 {
		t.Fatalf("token after the lapse %d, not above %d", t3, t2)
	}

	// KEEP 0: both waiters (on two other instances) get the answer, and
	// the key is free at once.
	res := make(chan reply, 2)
	for _, c := range []*redis.Client{c1, c2} {
		go func(c *redis.Client) { res <- do(ctx, c, "ONCE.CLAIM", k, "WAIT", 10000) }(c)
	}
	eventually(t, 5*time.Second, "two waiters", func() bool { return ps[1].e.Waiting() == 1 && ps[2].e.Waiting() == 1 })
	if err := c0.Do(ctx, "ONCE.COMPLETE", k, t3, "shared", "KEEP", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if r := <-res; r.state != "done" || r.detail != "shared" {
			t.Fatalf("KEEP 0 waiter got %v", r)
		}
	}
	if r := do(ctx, c0, "ONCE.CLAIM", k); r.state != "claimed" || r.n <= t3 {
		t.Fatalf("CLAIM after KEEP 0 = %v, want claimed with a token above %d", r, t3)
	}
	if n := up.client(t).Exists(ctx, k).Val(); n != 1 {
		t.Fatalf("EXISTS = %d", n)
	}
}

// KV-12: ABORT frees the key and keeps nothing; waiters on every instance
// get ["failed", message]; the next CLAIM runs again.
func testAbort(t *testing.T, up *upstream, ps []*proxy) {
	ctx := context.Background()
	c0 := dial(t, ps[0])
	for _, tc := range []struct{ msg, want string }{{"card declined", "card declined"}, {"", "aborted"}} {
		k := key(t, tc.want)
		tok := do(ctx, c0, "ONCE.CLAIM", k).n
		res := make(chan reply, 3)
		for _, p := range ps {
			go func(p *proxy) { res <- do(ctx, dial(t, p), "ONCE.CLAIM", k, "WAIT", 10000) }(p)
		}
		go func() { res <- do(ctx, dial(t, ps[1]), "ONCE.WAIT", k) }()
		eventually(t, 5*time.Second, "four waiters", func() bool {
			return ps[0].e.Waiting()+ps[1].e.Waiting()+ps[2].e.Waiting() == 4
		})
		args := []any{"ONCE.ABORT", k, tok}
		if tc.msg != "" {
			args = append(args, tc.msg)
		}
		if err := c0.Do(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 4; i++ {
			if r := <-res; r.state != "failed" || r.detail != tc.want {
				t.Fatalf("waiter got %v, want failed %q", r, tc.want)
			}
		}
		if n := up.client(t).Exists(ctx, k).Val(); n != 0 {
			t.Fatalf("key exists after ABORT")
		}
		// A repeated ABORT of the same run is stale: the token no
		// longer holds the claim (CONTRACT.md).
		if err := c0.Do(ctx, args...).Err(); !strings.HasPrefix(errText(err), "STALE ") {
			t.Fatalf("repeated ABORT: %v, want -STALE", err)
		}
		if r := do(ctx, c0, "ONCE.CLAIM", k); r.state != "claimed" || r.n <= tok {
			t.Fatalf("CLAIM after ABORT = %v", r)
		}
		// The old token cannot abort the new run, nor complete it.
		if err := c0.Do(ctx, args...).Err(); !strings.HasPrefix(errText(err), "STALE") {
			t.Fatalf("ABORT with the old token: %v", err)
		}
		if err := c0.Do(ctx, "ONCE.COMPLETE", k, tok, "x").Err(); !strings.HasPrefix(errText(err), "STALE") {
			t.Fatalf("COMPLETE with the aborted token: %v", err)
		}
	}
}

// KV-15: a CLAIM with another fingerprint gets -MISMATCH, on a running key
// and on a kept answer; no fingerprint on either side matches anything.
func testFingerprint(t *testing.T, up *upstream, ps []*proxy) {
	ctx := context.Background()
	c0, c1 := dial(t, ps[0]), dial(t, ps[1])
	k := key(t, "k")
	mismatch := "MISMATCH fingerprint differs from the one stored with this key"
	tok := do(ctx, c0, "ONCE.CLAIM", k, "FINGERPRINT", "A").n
	if err := c1.Do(ctx, "ONCE.CLAIM", k, "FINGERPRINT", "B", "WAIT", 1000).Err(); errText(err) != mismatch {
		t.Fatalf("CLAIM B on running A: %v", err)
	}
	if r := do(ctx, c1, "ONCE.CLAIM", k); r.state != "running" {
		t.Fatalf("CLAIM without fingerprint on running A = %v", r)
	}
	if err := c0.Do(ctx, "ONCE.COMPLETE", k, tok, "receipt").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c1.Do(ctx, "ONCE.CLAIM", k, "FINGERPRINT", "B").Err(); errText(err) != mismatch {
		t.Fatalf("CLAIM B on done A: %v", err)
	}
	for _, args := range [][]any{{"ONCE.CLAIM", k, "FINGERPRINT", "A"}, {"ONCE.CLAIM", k}} {
		if r := do(ctx, c1, args...); r.state != "done" || r.detail != "receipt" {
			t.Fatalf("%v = %v", args, r)
		}
	}
	k2 := key(t, "nofp")
	tok2 := do(ctx, c0, "ONCE.CLAIM", k2).n
	if r := do(ctx, c1, "ONCE.CLAIM", k2, "FINGERPRINT", "Z"); r.state != "running" {
		t.Fatalf("CLAIM with fingerprint on a record without = %v", r)
	}
	c0.Do(ctx, "ONCE.COMPLETE", k2, tok2, "v")
	if r := do(ctx, c1, "ONCE.CLAIM", k2, "FINGERPRINT", "Z"); r.state != "done" {
		t.Fatalf("= %v", r)
	}
}

// KV-13: when a lease lapses, exactly one waiting CLAIM … WAIT caller,
// whichever instance it is on, gets the claim with a larger token; the
// old token is stale; ONCE.WAIT callers keep waiting through the handover
// and get the new run's answer; the others get it too. The handed-over
// claim keeps the record's fingerprint.
func testHandover(t *testing.T, up *upstream, ps []*proxy) {
	ctx := context.Background()
	c0 := dial(t, ps[0])
	for round := 0; round < 3; round++ {
		k := key(t, fmt.Sprint(round))
		// Long enough for the eight waiters below to be waiting before
		// it runs out, even under -race on a loaded machine: a ONCE.WAIT
		// sent after the lapse finds the key free (the record expired
		// upstream) and answers so, where the test wants it woken by
		// the handed-over run. (300 ms failed once that way.)
		const lease = 1000
		start := time.Now()
		dead := do(ctx, c0, "ONCE.CLAIM", k, "LEASE", lease, "FINGERPRINT", "fp").n
		type got struct {
			r    reply
			at   time.Time
			wait bool
			c    *redis.Client
		}
		res := make(chan got, 8)
		for i := 0; i < 6; i++ {
			c := dial(t, ps[i%3])
			go func() {
				args := []any{"ONCE.CLAIM", k, "LEASE", 5000, "WAIT", 10000}
				if i%2 == 0 {
					args = append(args, "FINGERPRINT", "fp")
				}
				r := do(ctx, c, args...)
				res <- got{r: r, at: time.Now(), c: c}
			}()
		}
		for i := 0; i < 2; i++ {
			c := dial(t, ps[i])
			go func() { res <- got{r: do(ctx, c, "ONCE.WAIT", k), at: time.Now(), wait: true} }()
		}
		var winner got
		var others []got
		for i := 0; i < 8; i++ {
			g := <-res
			if g.r.state == "claimed" {
				if winner.c != nil {
					t.Fatalf("round %d: two claims after the lapse: %v and %v", round, winner.r, g.r)
				}
				winner = g
				// The new runner finishes; the others get its answer.
				if err := c0.Do(ctx, "ONCE.COMPLETE", k, dead, "late").Err(); !strings.HasPrefix(errText(err), "STALE") {
					t.Fatalf("COMPLETE with the lapsed token: %v", err)
				}
				if err := c0.Do(ctx, "ONCE.EXTEND", k, dead, "LEASE", 1000).Err(); !strings.HasPrefix(errText(err), "STALE") {
					t.Fatalf("EXTEND with the lapsed token: %v", err)
				}
				st, _ := c0.Do(ctx, "ONCE.STATUS", k).Slice()
				if len(st) != 12 || st[11] != "fp" {
					t.Fatalf("handed-over claim's STATUS = %v, want the record's fingerprint", st)
				}
				if err := g.c.Do(ctx, "ONCE.COMPLETE", k, g.r.n, "answer-"+itoa(g.r.n)).Err(); err != nil {
					t.Fatalf("COMPLETE by the new holder: %v", err)
				}
				continue
			}
			others = append(others, g)
		}
		if winner.c == nil {
			t.Fatalf("round %d: no waiter got the claim; replies %v", round, others)
		}
		if winner.r.n <= dead {
			t.Fatalf("round %d: handed-over token %d not above %d", round, winner.r.n, dead)
		}
		want := "answer-" + itoa(winner.r.n)
		for _, g := range others {
			if g.r.state != "done" || g.r.detail != want {
				t.Fatalf("round %d: waiter (wait-only %v) got %v, want done %s", round, g.wait, g.r, want)
			}
		}
		t.Logf("round %d: lease %d ms, handed over after %v", round, lease, winner.at.Sub(start).Round(time.Millisecond))
	}
}

// A lapse with only ONCE.WAIT waiters frees the key: they get ["free", ""].
func testWaitFree(t *testing.T, up *upstream, ps []*proxy) {
	ctx := context.Background()
	k := key(t, "k")
	do(ctx, dial(t, ps[0]), "ONCE.CLAIM", k, "LEASE", 200)
	res := make(chan reply, 2)
	for _, p := range ps[1:] {
		c := dial(t, p)
		go func() { res <- do(ctx, c, "ONCE.WAIT", k, "TIMEOUT", 10000) }()
	}
	for i := 0; i < 2; i++ {
		if r := <-res; r.state != "free" || r.detail != "" {
			t.Fatalf("WAIT at the lapse = %v, want free", r)
		}
	}
}

// CLAIM … WAIT and ONCE.WAIT that run out answer ["running", ms-left];
// the waiter is withdrawn.
func testTimeouts(t *testing.T, up *upstream, ps []*proxy) {
	ctx := context.Background()
	c0, c1 := dial(t, ps[0]), dial(t, ps[1])
	k := key(t, "k")
	tok := do(ctx, c0, "ONCE.CLAIM", k, "LEASE", 10000).n
	for _, args := range [][]any{{"ONCE.CLAIM", k, "WAIT", 100}, {"ONCE.WAIT", k, "TIMEOUT", 100}} {
		start := time.Now()
		r := do(ctx, c1, args...)
		if r.state != "running" || r.n <= 0 || r.n > 10000 {
			t.Fatalf("%v = %v, want running", args, r)
		}
		if d := time.Since(start); d < 100*time.Millisecond {
			t.Fatalf("%v answered after %v, before its timeout", args, d)
		}
	}
	eventually(t, 5*time.Second, "the waiters withdrawn", func() bool { return ps[1].e.Waiting() == 0 })
	c0.Do(ctx, "ONCE.ABORT", k, tok)
}

// A waiting client that disconnects is dropped: at the lapse, the claim
// goes to a waiter still there, not to the one that left.
func testDisconnect(t *testing.T, up *upstream, ps []*proxy) {
	ctx := context.Background()
	k := key(t, "k")
	dead := do(ctx, dial(t, ps[0]), "ONCE.CLAIM", k, "LEASE", 400).n
	nc, err := net.Dial("tcp", ps[1].addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(nc, "*4\r\n$10\r\nONCE.CLAIM\r\n$%d\r\n%s\r\n$4\r\nWAIT\r\n$5\r\n10000\r\n", len(k), k)
	eventually(t, 5*time.Second, "the raw client waiting", func() bool { return ps[1].e.Waiting() == 1 })
	res := make(chan reply, 1)
	go func() { res <- do(ctx, dial(t, ps[2]), "ONCE.CLAIM", k, "WAIT", 10000) }()
	eventually(t, 5*time.Second, "the second waiter", func() bool { return ps[2].e.Waiting() == 1 })
	nc.Close()
	eventually(t, 5*time.Second, "the gone waiter dropped", func() bool { return ps[1].e.Waiting() == 0 })
	if r := <-res; r.state != "claimed" || r.n <= dead {
		t.Fatalf("remaining waiter got %v, want the claim", r)
	}

	// A waiter handed a claim just as it leaves passes it on: with
	// both racing, the claim is never stuck on a gone client for a lease.
	k2 := key(t, "k2")
	tok := do(ctx, dial(t, ps[0]), "ONCE.CLAIM", k2, "LEASE", 10000).n
	nc2, err := net.Dial("tcp", ps[1].addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(nc2, "*4\r\n$10\r\nONCE.CLAIM\r\n$%d\r\n%s\r\n$4\r\nWAIT\r\n$5\r\n10000\r\n", len(k2), k2)
	eventually(t, 5*time.Second, "the raw client waiting", func() bool { return ps[1].e.Waiting() == 1 })
	// Release as a lapse would (the runner's process is gone): the raw
	// client is handed the claim, reads it, and disconnects.
	dial(t, ps[0]).Do(ctx, "ONCE.ABORT", k2, tok)
	line, _ := bufio.NewReader(nc2).ReadString('\n')
	nc2.Close()
	if !strings.HasPrefix(line, "*2") {
		t.Fatalf("raw waiter got %q", line)
	}
}

// testResubscribe: the upstream drops every subscription connection
// (CLIENT KILL TYPE pubsub) while callers wait, and the runs complete
// while the engine is not subscribed (a test hook holds its SSUBSCRIBEs
// until then): the announcements reach no one, and the waiters must get
// the answers from the checks the engine makes once it is subscribed
// again (the record, or the outcome record for KEEP 0). At most maxChecks
// checks run at once.
func testResubscribe(t *testing.T, up *upstream) {
	ctx := context.Background()
	ps := startProxies(t, up, 2, Config{})
	c0 := dial(t, ps[0])
	const n = 40
	keys := make([]string, n)
	toks := make([]int64, n)
	res := make(chan reply, n)
	for i := range keys {
		keys[i] = key(t, fmt.Sprint(i))
		toks[i] = do(ctx, c0, "ONCE.CLAIM", keys[i], "LEASE", 20000).n
		c := dial(t, ps[1])
		go func(k string) { res <- do(ctx, c, "ONCE.CLAIM", k, "WAIT", 20000) }(keys[i])
	}
	e := ps[1].e
	eventually(t, 5*time.Second, "the waiters", func() bool { return e.Waiting() == n })
	eventually(t, 5*time.Second, "the subscriptions", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, sub := range e.slots {
			if sub.state != subActive {
				return false
			}
		}
		return len(e.slots) > 0
	})
	eventually(t, 5*time.Second, "the first checks", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.checksNow == 0 && len(e.checkQ) == 0
	})
	hold := make(chan struct{})
	e.holdSubscribe.Store(&hold)
	subsBefore, recheckedBefore, eventsBefore := e.Stats.Subscribes.Load(), e.Stats.Rechecked.Load(), e.Stats.Events.Load()
	e.mu.Lock()
	e.checksPeak = 0
	e.mu.Unlock()
	var nodes []*redis.Client
	if up.cluster != nil {
		for _, a := range up.cluster.Addrs() {
			nodes = append(nodes, up.cluster.Node(a).Client())
		}
	} else {
		nodes = append(nodes, up.server.Client())
	}
	for _, c := range nodes {
		if err := c.Do(ctx, "client", "kill", "type", "pubsub").Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Complete half with KEEP 0 (no record left to read) and half kept,
	// while no subscription is up.
	for i, k := range keys {
		keep := []any{"KEEP", 0}
		if i%2 == 1 {
			keep = []any{}
		}
		if err := c0.Do(ctx, append([]any{"ONCE.COMPLETE", k, toks[i], "v" + k}, keep...)...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if e.Waiting() != n {
		t.Fatalf("%d waiters left before the subscriptions are back: the announcements reached them", e.Waiting())
	}
	e.holdSubscribe.Store(nil)
	close(hold)
	got := map[string]bool{}
	for i := 0; i < n; i++ {
		select {
		case r := <-res:
			if r.state != "done" || !strings.HasPrefix(r.detail, "v") {
				t.Fatalf("waiter got %v", r)
			}
			got[r.detail] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("waiters not woken after the subscriptions were killed (%d of %d)", i, n)
		}
	}
	if len(got) != n {
		t.Fatalf("answers %v", got)
	}
	if after := e.Stats.Subscribes.Load(); after <= subsBefore {
		t.Errorf("no resubscription counted (%d → %d)", subsBefore, after)
	}
	if d := e.Stats.Rechecked.Load() - recheckedBefore; d != n {
		t.Errorf("%d waiters answered by a check, want all %d (events received meanwhile: %d)", d, n, e.Stats.Events.Load()-eventsBefore)
	}
	e.mu.Lock()
	peak := e.checksPeak
	e.mu.Unlock()
	if peak > maxChecks || peak == 0 {
		t.Errorf("%d checks ran at once, want between 1 and %d", peak, maxChecks)
	}
	t.Logf("%d waiters answered by the checks after resubscribing; at most %d checks at once", n, peak)
}

// waitersSettled waits until e has n waiters of key k, subscribed to its
// slot and checked once.
func waitersSettled(tb testing.TB, e *Engine, k string, n int64) {
	tb.Helper()
	eventually(tb, 5*time.Second, "the waiters, subscribed and checked once", func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		sub := e.slots[chanID(0, Slot([]byte(k)))]
		return e.Waiting() == n && sub != nil && sub.state == subActive && e.checksNow == 0 && len(e.checkQ) == 0
	})
}

// testMissed: a waiter that misses the announcement of the outcome (a
// test hook drops them) looks again at the lease deadline it saw, long
// after OutcomeTTL: it must get the outcome of the run it waited for,
// never the claim of a key whose run completed while it waited: for KEEP
// 0, a KEEP shorter than the lease, and ABORT. (The outcome record is kept
// for the run's remaining lease plus OutcomeTTL.)
func testMissed(t *testing.T, up *upstream) {
	ctx := context.Background()
	ps := startProxies(t, up, 2, Config{OutcomeTTL: 100 * time.Millisecond})
	e := ps[1].e
	e.dropEvents.Store(true)
	c0 := dial(t, ps[0])
	const lease = 1200
	for _, tc := range []struct {
		name  string
		end   func(k string, tok int64) error
		state string
	}{
		{"keep-0", func(k string, tok int64) error { return c0.Do(ctx, "ONCE.COMPLETE", k, tok, "ans-"+k, "KEEP", 0).Err() }, "done"},
		{"keep-shorter-than-the-lease", func(k string, tok int64) error {
			return c0.Do(ctx, "ONCE.COMPLETE", k, tok, "ans-"+k, "KEEP", 300).Err()
		}, "done"},
		{"abort", func(k string, tok int64) error { return c0.Do(ctx, "ONCE.ABORT", k, tok, "ans-"+k).Err() }, "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := key(t, "k")
			tok := do(ctx, c0, "ONCE.CLAIM", k, "LEASE", lease).n
			res := make(chan reply, 2)
			go func() { res <- do(ctx, dial(t, ps[1]), "ONCE.CLAIM", k, "LEASE", 5000, "WAIT", 10000) }()
			go func() { res <- do(ctx, dial(t, ps[1]), "ONCE.WAIT", k, "TIMEOUT", 10000) }()
			waitersSettled(t, e, k, 2)
			before := e.Stats.Rechecked.Load()
			start := time.Now()
			if err := tc.end(k, tok); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ {
				r := <-res
				if r.err != nil || r.state != tc.state || r.detail != "ans-"+k {
					t.Fatalf("waiter that missed the announcement got %v, want %s ans-%s", r, tc.state, k)
				}
			}
			if el := time.Since(start); el < lease*time.Millisecond/2 {
				t.Errorf("answered %v after the outcome: not at the lease deadline, the announcement was not missed", el)
			}
			if d := e.Stats.Rechecked.Load() - before; d != 2 {
				t.Errorf("%d waiters answered by a check, want 2", d)
			}
			// The key is free (KEEP 0, ABORT) or done; nobody else runs it.
			if tc.name != "keep-shorter-than-the-lease" {
				if r := do(ctx, c0, "ONCE.CLAIM", k); r.state != "claimed" || r.n <= tok {
					t.Fatalf("CLAIM afterwards = %v", r)
				}
			}
		})
	}
}

// testStaleCheck: a check asks how the run a waiter waited for ended; while
// it runs, a new run starts and a second waiter comes that finds it
// running. The check's answer (the first run failed) must not reach the
// second waiter, whose call came after the new run started (a failure of
// TestProxyOnceStress: "got fail:…, but run … had already started").
func testStaleCheck(t *testing.T, up *upstream) {
	ctx := context.Background()
	ps := startProxies(t, up, 2, Config{OutcomeTTL: 5 * time.Second})
	e := ps[1].e
	e.dropEvents.Store(true) // waiters learn outcomes from checks only
	c0 := dial(t, ps[0])
	k := key(t, "k")
	tok1 := do(ctx, c0, "ONCE.CLAIM", k, "LEASE", 600).n
	first := make(chan reply, 1)
	go func() { first <- do(ctx, dial(t, ps[1]), "ONCE.WAIT", k, "TIMEOUT", 20000) }()
	waitersSettled(t, e, k, 1)
	if err := c0.Do(ctx, "ONCE.ABORT", k, tok1, "run-1-failed").Err(); err != nil {
		t.Fatal(err)
	}
	tok2 := do(ctx, c0, "ONCE.CLAIM", k, "LEASE", 20000).n
	second := make(chan reply, 1)
	hooked := make(chan struct{})
	var once sync.Once
	e.mu.Lock()
	e.checkRan = func(key string) {
		if key != k {
			return
		}
		once.Do(func() { // between the check's script and its reply's use
			go func() { second <- do(ctx, dial(t, ps[1]), "ONCE.WAIT", k, "TIMEOUT", 20000) }()
			deadline := time.Now().Add(5 * time.Second)
			for e.Waiting() < 2 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			close(hooked)
		})
	}
	e.mu.Unlock()
	// The first run's lease deadline (600 ms) has the first waiter's key
	// checked; the second waiter comes during that check.
	select {
	case <-hooked:
	case <-time.After(10 * time.Second):
		t.Fatal("no check of the key within 10 s of the first run's lease deadline")
	}
	time.Sleep(100 * time.Millisecond) // the check's reply is acted on
	select {
	case r := <-second:
		t.Fatalf("the second waiter, which found run %d running, got %v", tok2, r)
	default:
	}
	e.dropEvents.Store(false)
	if err := c0.Do(ctx, "ONCE.COMPLETE", k, tok2, "run-2-answer").Err(); err != nil {
		t.Fatal(err)
	}
	if r := <-second; r.err != nil || r.state != "done" || r.detail != "run-2-answer" {
		t.Fatalf("the second waiter got %v, want done run-2-answer", r)
	}
	if r := <-first; r.err != nil || !(r.state == "failed" && r.detail == "run-1-failed" || r.state == "done" && r.detail == "run-2-answer") {
		t.Fatalf("the first waiter got %v, want its run's failure or the next run's answer", r)
	}
}

// testStress checks the invariants under load, with many goroutines over
// the three instances.
func testStress(t *testing.T, up *upstream, ps []*proxy) {
	t.Run("kept", func(t *testing.T) { stressKept(t, ps) })
	t.Run("singleflight", func(t *testing.T) { stressSingleflight(t, ps) })
}

// stressKept (KV-8, KV-9, KV-10): rounds of fresh keys that every
// goroutine claims at once: exactly one runner per key, every other
// caller gets its answer, and the waiters are woken by the announcement,
// far sooner than the 10 s lease.
func stressKept(t *testing.T, ps []*proxy) {
	ctx := context.Background()
	const goroutines, keys, rounds, lease = 18, 5, 4, 10000
	clients := make([]*redis.Client, goroutines)
	for i := range clients {
		clients[i] = dial(t, ps[i%len(ps)])
	}
	var wakes []time.Duration
	for round := 0; round < rounds; round++ {
		var mu sync.Mutex
		claimed := map[string][]int64{}
		completedAt := map[string]time.Time{}
		answers := map[string]map[string]int{}
		type recv struct {
			k  string
			at time.Time
		}
		var recvs []recv
		var wg sync.WaitGroup
		startGate := make(chan struct{})
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				<-startGate
				c := clients[g]
				for j := 0; j < keys; j++ {
					k := fmt.Sprintf("%s:r%d:k%d", t.Name(), round, (j+g)%keys)
					r := do(ctx, c, "ONCE.CLAIM", k, "LEASE", lease, "WAIT", 20000)
					switch {
					case r.err != nil:
						t.Errorf("CLAIM %s: %v", k, r.err)
						return
					case r.state == "claimed":
						mu.Lock()
						claimed[k] = append(claimed[k], r.n)
						mu.Unlock()
						time.Sleep(30 * time.Millisecond)
						ans := fmt.Sprintf("answer:%s:%d", k, r.n)
						if err := c.Do(ctx, "ONCE.COMPLETE", k, r.n, ans).Err(); err != nil {
							t.Errorf("COMPLETE %s: %v", k, err)
							return
						}
						now := time.Now()
						mu.Lock()
						completedAt[k] = now
						if answers[k] == nil {
							answers[k] = map[string]int{}
						}
						answers[k][ans]++
						mu.Unlock()
					case r.state == "done":
						now := time.Now()
						mu.Lock()
						if answers[k] == nil {
							answers[k] = map[string]int{}
						}
						answers[k][r.detail]++
						recvs = append(recvs, recv{k, now})
						mu.Unlock()
					default:
						t.Errorf("CLAIM %s … WAIT = %v", k, r)
						return
					}
				}
			}(g)
		}
		close(startGate)
		wg.Wait()
		if t.Failed() {
			return
		}
		for j := 0; j < keys; j++ {
			k := fmt.Sprintf("%s:r%d:k%d", t.Name(), round, j)
			if len(claimed[k]) != 1 {
				t.Fatalf("%s claimed %d times: %v (KV-9)", k, len(claimed[k]), claimed[k])
			}
			if len(answers[k]) != 1 || answers[k][fmt.Sprintf("answer:%s:%d", k, claimed[k][0])] != goroutines {
				t.Fatalf("%s: answers %v, want one answer for all %d callers (KV-8)", k, answers[k], goroutines)
			}
		}
		for _, r := range recvs {
			wakes = append(wakes, max(r.at.Sub(completedAt[r.k]), 0))
		}
	}
	var worst, sum time.Duration
	for _, w := range wakes {
		worst = max(worst, w)
		sum += w
	}
	t.Logf("%d callers served after the COMPLETE reply: mean %v, worst %v after it (lease %d ms)",
		len(wakes), (sum / time.Duration(max(len(wakes), 1))).Round(time.Microsecond), worst.Round(time.Microsecond), lease)
	if worst > lease*time.Millisecond/5 {
		t.Fatalf("a waiter was woken %v after the COMPLETE: not by push (KV-10)", worst)
	}
}

// stressSingleflight: two keys completed with KEEP 0 over and over by
// whoever claims them: never two runners of a key at once, tokens only
// grow, and every caller that waited gets the answer of a completed run.
func stressSingleflight(t *testing.T, ps []*proxy) {
	ctx := context.Background()
	const goroutines = 12
	dur := 1500 * time.Millisecond
	keys := []string{t.Name() + ":a", t.Name() + ":b"}
	var mu sync.Mutex
	running := map[string]int{}
	last := map[string]int64{}
	completed := map[string]bool{}
	runs, shared := 0, 0
	stop := time.Now().Add(dur)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		c := dial(t, ps[g%len(ps)])
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; time.Now().Before(stop); i++ {
				k := keys[(g+i)%len(keys)]
				r := do(ctx, c, "ONCE.CLAIM", k, "LEASE", 5000, "WAIT", 10000)
				switch r.state {
				case "claimed":
					ans := fmt.Sprintf("%s=%d", k, r.n)
					mu.Lock()
					running[k]++
					if running[k] != 1 {
						t.Errorf("%s: %d runners at once (KV-9)", k, running[k])
					}
					if r.n <= last[k] {
						t.Errorf("%s: token %d after %d (KV-13)", k, r.n, last[k])
					}
					last[k] = r.n
					completed[ans] = true // before COMPLETE: waiters may see it first
					runs++
					mu.Unlock()
					time.Sleep(2 * time.Millisecond)
					mu.Lock()
					running[k]--
					mu.Unlock()
					if err := c.Do(ctx, "ONCE.COMPLETE", k, r.n, ans, "KEEP", 0).Err(); err != nil {
						t.Errorf("COMPLETE: %v", err)
						return
					}
				case "done":
					mu.Lock()
					if !completed[r.detail] || !strings.HasPrefix(r.detail, k+"=") {
						t.Errorf("%s: answer %q of no completed run", k, r.detail)
					}
					shared++
					mu.Unlock()
				default:
					t.Errorf("CLAIM = %v", r)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	t.Logf("%d runs, %d callers shared a run's answer (KEEP 0)", runs, shared)
	if runs == 0 || shared == 0 {
		t.Fatalf("runs %d, shared %d: the test exercised nothing", runs, shared)
	}
}

// Touched (the proxy calls it after DEL/UNLINK/SET of a key): a running
// record deleted that way is a lapse at once, on every instance, not at
// its lease deadline.
func testTouched(t *testing.T, up *upstream, ps []*proxy) {
	ctx := context.Background()
	k := key(t, "k")
	dead := do(ctx, dial(t, ps[0]), "ONCE.CLAIM", k, "LEASE", 20000).n
	res := make(chan reply, 1)
	go func() { res <- do(ctx, dial(t, ps[1]), "ONCE.CLAIM", k, "WAIT", 20000) }()
	eventually(t, 5*time.Second, "the waiter", func() bool { return ps[1].e.Waiting() == 1 })
	start := time.Now()
	if err := up.client(t).Del(ctx, k).Err(); err != nil {
		t.Fatal(err)
	}
	if err := ps[2].e.Touched(ctx, 0, []byte(k)); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-res:
		if r.state != "claimed" || r.n <= dead {
			t.Fatalf("waiter after DEL + Touched got %v", r)
		}
		t.Logf("handed over %v after the DEL (lease 20 s)", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not told of the DEL")
	}
}

// KV-7: each command runs in the caller's database (SELECT): the same key
// names in two databases are two records, with separate tokens, waiters
// and announcements, and the records are in the selected database in the
// upstream. Touched and Flushed act on one database.
func testDatabases(t *testing.T, up *upstream) {
	ctx := context.Background()
	p, q := startProxy(t, up, Config{}), startProxy(t, up, Config{})
	c0, c1 := dialDB(t, p, 0, 2), dialDB(t, p, 1, 2)
	raw := func(db int) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: up.server.Addr(), DB: db})
		t.Cleanup(func() { c.Close() })
		return c
	}
	k := key(t, "k")
	t1 := do(ctx, c1, "ONCE.CLAIM", k)
	if t1.state != "claimed" {
		t.Fatalf("CLAIM on db 1 = %v", t1)
	}
	if n := raw(0).Exists(ctx, k).Val(); n != 0 {
		t.Fatalf("a claim in db 1 made a record in db 0")
	}
	if n := raw(1).Exists(ctx, k).Val(); n != 1 {
		t.Fatalf("the claim in db 1 has no record in db 1")
	}
	t0 := do(ctx, c0, "ONCE.CLAIM", k)
	if t0.state != "claimed" {
		t.Fatalf("CLAIM on db 0 = %v, want its own claim", t0)
	}
	res := make(chan reply, 1)
	go func() { res <- do(ctx, dialDB(t, q, 1, 2), "ONCE.CLAIM", k, "WAIT", 20000) }()
	eventually(t, 5*time.Second, "the waiter on db 1", func() bool { return q.e.Waiting() == 1 })
	if err := c0.Do(ctx, "ONCE.COMPLETE", k, t0.n, "db0", "KEEP", 0).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-res:
		t.Fatalf("db 1 waiter woken by db 0's run: %v", r)
	case <-time.After(300 * time.Millisecond):
	}
	if err := c1.Do(ctx, "ONCE.COMPLETE", k, t1.n, "db1").Err(); err != nil {
		t.Fatal(err)
	}
	if r := <-res; r.state != "done" || r.detail != "db1" {
		t.Fatalf("db 1 waiter got %v", r)
	}
	if r := do(ctx, c1, "ONCE.CLAIM", k); r.state != "done" || r.detail != "db1" {
		t.Fatalf("CLAIM on db 1 after = %v", r)
	}
	if r := do(ctx, c0, "ONCE.CLAIM", k); r.state != "claimed" {
		t.Fatalf("CLAIM on db 0 after its KEEP 0 = %v", r)
	}
	if v, err := dialDB(t, p, 2, 2).Do(ctx, "ONCE.STATUS", k).Result(); err != redis.Nil {
		t.Fatalf("STATUS on db 2 = %v %v, want nil", v, err)
	}

	// A DEL in db 1 announced by Touched, and a FLUSHDB of db 3
	// announced by Flushed (through the other engine: the broadcast),
	// are lapses at once for the waiters of that database only.
	for _, tc := range []struct {
		name   string
		db     int
		remove func(k string) error
	}{
		{"touched", 1, func(k string) error {
			if err := raw(1).Del(ctx, k).Err(); err != nil {
				return err
			}
			return p.e.Touched(ctx, 1, []byte(k))
		}},
		{"flushed", 3, func(k string) error {
			if err := raw(3).FlushDB(ctx).Err(); err != nil {
				return err
			}
			return p.e.Flushed(ctx, 3)
		}},
	} {
		k := key(t, tc.name)
		dead := do(ctx, dialDB(t, p, tc.db, 2), "ONCE.CLAIM", k, "LEASE", 20000).n
		other := do(ctx, dialDB(t, p, 0, 2), "ONCE.CLAIM", k, "LEASE", 20000)
		res := make(chan reply, 2)
		go func() { res <- do(ctx, dialDB(t, q, tc.db, 2), "ONCE.CLAIM", k, "WAIT", 20000) }()
		go func() { res <- do(ctx, dialDB(t, q, 0, 2), "ONCE.CLAIM", k, "WAIT", 3000) }()
		eventually(t, 5*time.Second, "the waiters", func() bool { return q.e.Waiting() == 2 })
		time.Sleep(100 * time.Millisecond) // subscribed
		if err := tc.remove(k); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for i := 0; i < 2; i++ {
			r := <-res
			switch {
			case r.state == "claimed" && r.n > dead && time.Since(start) < 2*time.Second:
			case r.state == "running":
				// The db 0 waiter: its run was not touched; it ran out.
			default:
				t.Fatalf("%s: waiter got %v after %v", tc.name, r, time.Since(start))
			}
		}
		if err := dialDB(t, p, 0, 2).Do(ctx, "ONCE.COMPLETE", k, other.n, "kept").Err(); err != nil {
			t.Fatalf("%s: the db 0 run was disturbed: %v", tc.name, err)
		}
	}
}

// A slot's channel is unsubscribed a while after its last waiter left
// (PUBSUB SHARDNUMSUB counts the subscribers in the upstream).
func testUnsubscribe(t *testing.T, up *upstream) {
	ctx := context.Background()
	p := startProxy(t, up, Config{})
	c := dial(t, p)
	k := key(t, "k")
	ch := Channel(Slot([]byte(k)), 0)
	subs := func() int64 {
		v, err := up.server.Client().Do(ctx, "pubsub", "shardnumsub", ch).Slice()
		if err != nil || len(v) != 2 {
			t.Fatalf("PUBSUB SHARDNUMSUB: %v %v", v, err)
		}
		return v[1].(int64)
	}
	tok := do(ctx, c, "ONCE.CLAIM", k).n
	res := make(chan reply, 1)
	go func() { res <- do(ctx, dial(t, p), "ONCE.CLAIM", k, "WAIT", 20000) }()
	eventually(t, 5*time.Second, "the subscription", func() bool { return subs() == 1 })
	c.Do(ctx, "ONCE.COMPLETE", k, tok, "v")
	<-res
	eventually(t, 4*unsubscribeAfter, "the unsubscription", func() bool { return subs() == 0 })
}

// testFlushed: FLUSHDB / FLUSHALL of the upstream removes running records;
// Flushed, called by another instance, makes the waiters take the keys
// over at once rather than at the lease deadline (in a cluster the
// broadcast reaches every instance through any node).
func testFlushed(t *testing.T, up *upstream) {
	ctx := context.Background()
	ps := startProxies(t, up, 2, Config{})
	c0 := dial(t, ps[0])
	keys := []string{key(t, "a"), key(t, "b"), key(t, "c")}
	res := make(chan reply, len(keys))
	var dead int64
	for _, k := range keys {
		dead = max(dead, do(ctx, c0, "ONCE.CLAIM", k, "LEASE", 30000).n)
		go func(k string) { res <- do(ctx, dial(t, ps[1]), "ONCE.CLAIM", k, "WAIT", 30000) }(k)
	}
	eventually(t, 5*time.Second, "the waiters", func() bool { return ps[1].e.Waiting() == int64(len(keys)) })
	eventually(t, 5*time.Second, "the subscriptions", func() bool {
		e := ps[1].e
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, k := range keys {
			if sub := e.slots[chanID(0, Slot([]byte(k)))]; sub == nil || sub.state != subActive {
				return false
			}
		}
		return true
	})
	if up.cluster != nil {
		if err := up.cluster.Client().ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return c.FlushAll(ctx).Err()
		}); err != nil {
			t.Fatal(err)
		}
	} else if err := up.server.Client().FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := ps[0].e.Flushed(ctx, -1); err != nil {
		t.Fatal(err)
	}
	for range keys {
		select {
		case r := <-res:
			if r.state != "claimed" || r.n <= 0 {
				t.Fatalf("waiter after FLUSHALL got %v", r)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the waiters were not told of the FLUSHALL (lease 30 s)")
		}
	}
	t.Logf("handed over %v after the FLUSHALL", time.Since(start).Round(time.Millisecond))
}
