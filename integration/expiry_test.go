package integration

// KV-3/KV-4: keys with short TTLs, set every way Redis allows, vanish from
// every command the moment their deadline passes; the background sweeper
// removes them from DBSIZE and INFO keyspace without anyone reading them;
// TTLs are deadlines that survive a graceful restart and a kill -9 under
// appendfsync always.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ttlMethod is one way to give a key an expiry.
type ttlMethod struct {
	name string
	// rel is a relative TTL, counted from when the server runs the
	// command; abs, when set instead, computes an absolute deadline from
	// the time the commands are sent.
	rel time.Duration
	abs func(now time.Time) time.Time
	// set queues the commands that leave key holding "42" with the expiry
	// (ttl is rel; at is abs's result).
	set func(p redis.Pipeliner, key string, ttl time.Duration, at time.Time)
}

func msArg(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// ttlMethods covers SET EX|PX|EXAT|PXAT|KEEPTTL, SETEX, PSETEX, EXPIRE,
// PEXPIRE (with LT), EXPIREAT, PEXPIREAT, GETEX, and INCR on a key with a
// TTL (KV-2: INCR keeps it).
func ttlMethods() []ttlMethod {
	const short = 150 * time.Millisecond
	inMs := func(now time.Time) time.Time { return now.Add(short) }
	// Second-granularity deadlines: the next whole second but one, so that
	// there is always at least a second to look at the key first.
	inSecs := func(now time.Time) time.Time { return time.Unix(now.Unix()+2, 0) }
	ctx := ttlCmdCtx
	return []ttlMethod{
		{name: "SET-PX", rel: short, set: func(p redis.Pipeliner, k string, d time.Duration, _ time.Time) {
			p.Do(ctx, "SET", k, "42", "PX", msArg(d))
		}},
		{name: "PSETEX", rel: short, set: func(p redis.Pipeliner, k string, d time.Duration, _ time.Time) {
			p.Do(ctx, "PSETEX", k, msArg(d), "42")
		}},
		{name: "SET-EX", rel: time.Second, set: func(p redis.Pipeliner, k string, _ time.Duration, _ time.Time) {
			p.Do(ctx, "SET", k, "42", "EX", "1")
		}},
		{name: "SETEX", rel: time.Second, set: func(p redis.Pipeliner, k string, _ time.Duration, _ time.Time) {
			p.Do(ctx, "SETEX", k, "1", "42")
		}},
		{name: "PEXPIRE", rel: short, set: func(p redis.Pipeliner, k string, d time.Duration, _ time.Time) {
			p.Do(ctx, "SET", k, "42")
			p.Do(ctx, "PEXPIRE", k, msArg(d))
		}},
		{name: "PEXPIRE-LT", rel: short, set: func(p redis.Pipeliner, k string, d time.Duration, _ time.Time) {
			p.Do(ctx, "SET", k, "42", "EX", "1000")
			p.Do(ctx, "PEXPIRE", k, msArg(d), "LT")
		}},
		{name: "EXPIRE", rel: time.Second, set: func(p redis.Pipeliner, k string, _ time.Duration, _ time.Time) {
			p.Do(ctx, "SET", k, "42")
			p.Do(ctx, "EXPIRE", k, "1")
		}},
		{name: "GETEX-PX", rel: short, set: func(p redis.Pipeliner, k string, d time.Duration, _ time.Time) {
			p.Do(ctx, "SET", k, "42")
			p.Do(ctx, "GETEX", k, "PX", msArg(d))
		}},
		{name: "SET-KEEPTTL", rel: short, set: func(p redis.Pipeliner, k string, d time.Duration, _ time.Time) {
			p.Do(ctx, "SET", k, "old", "PX", msArg(d))
			p.Do(ctx, "SET", k, "42", "KEEPTTL")
		}},
		{name: "INCR-keeps-TTL", rel: short, set: func(p redis.Pipeliner, k string, d time.Duration, _ time.Time) {
			p.Do(ctx, "SET", k, "41", "PX", msArg(d))
			p.Do(ctx, "INCR", k)
		}},
		{name: "SET-PXAT", abs: inMs, set: func(p redis.Pipeliner, k string, _ time.Duration, at time.Time) {
			p.Do(ctx, "SET", k, "42", "PXAT", strconv.FormatInt(at.UnixMilli(), 10))
		}},
		{name: "PEXPIREAT", abs: inMs, set: func(p redis.Pipeliner, k string, _ time.Duration, at time.Time) {
			p.Do(ctx, "SET", k, "42")
			p.Do(ctx, "PEXPIREAT", k, strconv.FormatInt(at.UnixMilli(), 10))
		}},
		{name: "SET-EXAT", abs: inSecs, set: func(p redis.Pipeliner, k string, _ time.Duration, at time.Time) {
			p.Do(ctx, "SET", k, "42", "EXAT", strconv.FormatInt(at.Unix(), 10))
		}},
		{name: "EXPIREAT", abs: inSecs, set: func(p redis.Pipeliner, k string, _ time.Duration, at time.Time) {
			p.Do(ctx, "SET", k, "42")
			p.Do(ctx, "EXPIREAT", k, strconv.FormatInt(at.Unix(), 10))
		}},
	}
}

// ttlCmdCtx is the context of the commands ttlMethods queue: a pipeline's
// context is Exec's, so this one is never used for waiting.
var ttlCmdCtx = context.Background()

// expiredReader is one command run, first thing after the deadline, on an
// expired key of its own. check returns "" or what is wrong.
type expiredReader struct {
	name  string
	check func(c *redis.Client, key, prefix string) string
}

func expiredReaders() []expiredReader {
	ctx := ttlCmdCtx
	intIs := func(want int64, f func(c *redis.Client, k string) *redis.IntCmd) func(*redis.Client, string, string) string {
		return func(c *redis.Client, k, _ string) string {
			n, err := f(c, k).Result()
			if err != nil || n != want {
				return fmt.Sprintf("got %d, %v; want %d", n, err, want)
			}
			return ""
		}
	}
	nilString := func(f func(c *redis.Client, k string) *redis.StringCmd) func(*redis.Client, string, string) string {
		return func(c *redis.Client, k, _ string) string {
			v, err := f(c, k).Result()
			if !errors.Is(err, redis.Nil) {
				return fmt.Sprintf("got %q, %v; want nil", v, err)
			}
			return ""
		}
	}
	boolIs := func(want bool, f func(c *redis.Client, k string) *redis.BoolCmd) func(*redis.Client, string, string) string {
		return func(c *redis.Client, k, _ string) string {
			v, err := f(c, k).Result()
			if err != nil || v != want {
				return fmt.Sprintf("got %v, %v; want %v", v, err, want)
			}
			return ""
		}
	}
	durIs := func(want time.Duration, f func(c *redis.Client, k string) *redis.DurationCmd) func(*redis.Client, string, string) string {
		return func(c *redis.Client, k, _ string) string {
			v, err := f(c, k).Result()
			if err != nil || v != want {
				return fmt.Sprintf("got %d, %v; want %d", int64(v), err, int64(want))
			}
			return ""
		}
	}
	// KEYS and SCAN come first: later readers (APPEND, INCR, SETNX…)
	// create keys again.
	return []expiredReader{
		{"KEYS", func(c *redis.Client, _, prefix string) string {
			keys, err := c.Keys(ctx, prefix+"*").Result()
			if err != nil || len(keys) != 0 {
				return fmt.Sprintf("KEYS %s* = %q, %v; want none", prefix, keys, err)
			}
			return ""
		}},
		{"SCAN", func(c *redis.Client, _, prefix string) string {
			var keys []string
			it := c.Scan(ctx, 0, prefix+"*", 5).Iterator()
			for it.Next(ctx) {
				keys = append(keys, it.Val())
			}
			if err := it.Err(); err != nil || len(keys) != 0 {
				return fmt.Sprintf("SCAN MATCH %s* = %q, %v; want none", prefix, keys, err)
			}
			return ""
		}},
		{"GET", nilString(func(c *redis.Client, k string) *redis.StringCmd { return c.Get(ctx, k) })},
		{"EXISTS", intIs(0, func(c *redis.Client, k string) *redis.IntCmd { return c.Exists(ctx, k) })},
		{"TTL", durIs(-2, func(c *redis.Client, k string) *redis.DurationCmd { return c.TTL(ctx, k) })},
		{"PTTL", durIs(-2, func(c *redis.Client, k string) *redis.DurationCmd { return c.PTTL(ctx, k) })},
		{"TYPE", func(c *redis.Client, k, _ string) string {
			if v, err := c.Type(ctx, k).Result(); err != nil || v != "none" {
				return fmt.Sprintf("got %q, %v; want none", v, err)
			}
			return ""
		}},
		{"STRLEN", intIs(0, func(c *redis.Client, k string) *redis.IntCmd { return c.StrLen(ctx, k) })},
		{"MGET", func(c *redis.Client, k, _ string) string {
			v, err := c.MGet(ctx, k).Result()
			if err != nil || len(v) != 1 || v[0] != nil {
				return fmt.Sprintf("got %#v, %v; want [nil]", v, err)
			}
			return ""
		}},
		{"GETRANGE", func(c *redis.Client, k, _ string) string {
			if v, err := c.GetRange(ctx, k, 0, -1).Result(); err != nil || v != "" {
				return fmt.Sprintf("got %q, %v; want \"\"", v, err)
			}
			return ""
		}},
		{"GETDEL", nilString(func(c *redis.Client, k string) *redis.StringCmd { return c.GetDel(ctx, k) })},
		{"GETEX", nilString(func(c *redis.Client, k string) *redis.StringCmd { return c.GetEx(ctx, k, 0) })},
		{"TOUCH", intIs(0, func(c *redis.Client, k string) *redis.IntCmd { return c.Touch(ctx, k) })},
		{"DEL", intIs(0, func(c *redis.Client, k string) *redis.IntCmd { return c.Del(ctx, k) })},
		{"UNLINK", intIs(0, func(c *redis.Client, k string) *redis.IntCmd { return c.Unlink(ctx, k) })},
		{"EXPIRE", boolIs(false, func(c *redis.Client, k string) *redis.BoolCmd { return c.Expire(ctx, k, time.Hour) })},
		{"PERSIST", boolIs(false, func(c *redis.Client, k string) *redis.BoolCmd { return c.Persist(ctx, k) })},
		{"RENAME", func(c *redis.Client, k, _ string) string {
			if err := c.Rename(ctx, k, k+":renamed").Err(); err == nil || err.Error() != "ERR no such key" {
				return fmt.Sprintf("got %v; want ERR no such key", err)
			}
			return ""
		}},
		{"APPEND", intIs(1, func(c *redis.Client, k string) *redis.IntCmd { return c.Append(ctx, k, "x") })},
		{"INCR", intIs(1, func(c *redis.Client, k string) *redis.IntCmd { return c.Incr(ctx, k) })},
		{"DECRBY", intIs(-5, func(c *redis.Client, k string) *redis.IntCmd { return c.DecrBy(ctx, k, 5) })},
		{"SETRANGE", intIs(1, func(c *redis.Client, k string) *redis.IntCmd { return c.SetRange(ctx, k, 0, "x") })},
		{"SETNX", boolIs(true, func(c *redis.Client, k string) *redis.BoolCmd { return c.SetNX(ctx, k, "new", 0) })},
		{"MSETNX", boolIs(true, func(c *redis.Client, k string) *redis.BoolCmd { return c.MSetNX(ctx, k, "new") })},
		{"SET-GET", func(c *redis.Client, k, _ string) string {
			v, err := c.SetArgs(ctx, k, "new", redis.SetArgs{Get: true}).Result()
			if !errors.Is(err, redis.Nil) {
				return fmt.Sprintf("got %q, %v; want nil (no old value)", v, err)
			}
			return ""
		}},
		{"GETSET", nilString(func(c *redis.Client, k string) *redis.StringCmd { return c.GetSet(ctx, k, "new") })},
	}
}

// TestExpiryReads: for every way to set an expiry and every command, the
// command run just past the deadline on a key nobody touched since sees no
// key (KV-4: checked on every read, not left to the sweeper).
func TestExpiryReads(t *testing.T) {
	t.Parallel()
	for _, tg := range kvTargets {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			addr := tg.start(t)
			for _, m := range ttlMethods() {
				t.Run(m.name, func(t *testing.T) {
					t.Parallel()
					testExpiryReads(t, addr, m)
				})
			}
		})
	}
}

func testExpiryReads(t *testing.T, addr string, m ttlMethod) {
	ctx := grCtx(t, 20*time.Second)
	c := grClient(t, addr, withOneConn())
	if err := c.Ping(ctx).Err(); err != nil { // connect before the clock starts
		t.Fatalf("PING: %v", err)
	}
	prefix := "x:" + m.name + ":"
	live := "live:" + m.name
	readers := expiredReaders()

	sent := time.Now()
	var at time.Time
	if m.abs != nil {
		at = m.abs(sent)
	}
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, live, "alive", 0)
		for _, r := range readers {
			m.set(p, prefix+r.name, m.rel, at)
		}
		return nil
	})
	recv := time.Now()
	if err != nil {
		for _, cmd := range cmds {
			if cmd.Err() != nil {
				t.Fatalf("setting the keys: %v: %v", cmd.Args(), cmd.Err())
			}
		}
		t.Fatalf("setting the keys: %v", err)
	}
	earliest, latest := at, at
	if m.abs == nil {
		earliest, latest = sent.Add(m.rel), recv.Add(m.rel)
	}

	// Before the deadline: the keys are there, with a TTL no longer than
	// asked. Results that arrive after the earliest deadline are void.
	var before []string
	probe := prefix + "GET"
	if v, err := c.Get(ctx, probe).Result(); err != nil || v != "42" {
		before = append(before, fmt.Sprintf("GET %s = %q, %v; want \"42\"", probe, v, err))
	}
	maxTTL := latest.Sub(sent)
	if d, err := c.PTTL(ctx, probe).Result(); err != nil || d <= 0 || d > maxTTL+time.Millisecond {
		before = append(before, fmt.Sprintf("PTTL %s = %v, %v; want in (0, %v]", probe, d, err, maxTTL))
	}
	if keys, err := c.Keys(ctx, prefix+"*").Result(); err != nil || len(keys) != len(readers) {
		before = append(before, fmt.Sprintf("KEYS %s* = %d keys, %v; want %d", prefix, len(keys), err, len(readers)))
	}
	if time.Now().Before(earliest) {
		for _, b := range before {
			t.Errorf("before the deadline: %s", b)
		}
	} else {
		t.Logf("the checks before the deadline took past it: not judged (%d complaints)", len(before))
	}

	// Just past the deadline, each command on its own key.
	time.Sleep(time.Until(latest.Add(10 * time.Millisecond)))
	for _, r := range readers {
		if msg := r.check(c, prefix+r.name, prefix); msg != "" {
			t.Errorf("%s %s, %v past its deadline (set with %s): %s",
				r.name, prefix+r.name, time.Since(latest).Round(time.Millisecond), m.name, msg)
		}
	}
	if v, err := c.Get(ctx, live).Result(); err != nil || v != "alive" {
		t.Errorf("GET %s (no TTL) = %q, %v; want alive", live, v, err)
	}
}

// TestExpirySweeper: expired keys leave DBSIZE and INFO keyspace without
// being read (KV-4's background sweep), in every database, and the keys
// without a TTL or with a long one stay. Only DBSIZE and INFO are polled.
func TestExpirySweeper(t *testing.T) {
	t.Parallel()
	for _, tg := range kvTargets {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			testExpirySweeper(t, tg.start(t))
		})
	}
}

func testExpirySweeper(t *testing.T, addr string) {
	ctx := grCtx(t, 30*time.Second)
	c0 := grClient(t, addr)
	c3 := grClient(t, addr, withDB(3))
	const (
		short0     = 1000 // db 0, PX 100
		persistent = 10   // db 0, no TTL
		long       = 5    // db 0, EX 3600
		short3     = 300  // db 3, PX 100..200
	)
	// The count before the keys are set: on a loaded machine the first
	// of them may expire (100 ms) before the last is set.
	info0, err := c0.Info(ctx, "stats").Result()
	if err != nil {
		t.Fatalf("INFO stats: %v", err)
	}
	expired0, _ := strconv.ParseInt(infoField(info0, "expired_keys"), 10, 64)
	_, err = c0.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range short0 {
			p.Set(ctx, fmt.Sprintf("sweep:%04d", i), "v", 100*time.Millisecond)
		}
		for i := range persistent {
			p.Set(ctx, fmt.Sprintf("keep:%02d", i), "v", 0)
		}
		for i := range long {
			p.Set(ctx, fmt.Sprintf("long:%02d", i), "v", time.Hour)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("filling db 0: %v", err)
	}
	_, err = c3.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range short3 {
			p.Set(ctx, fmt.Sprintf("sweep:%04d", i), "v", time.Duration(100+i%100)*time.Millisecond)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("filling db 3: %v", err)
	}
	filled := time.Now()

	const liveKeys = persistent + long
	waitFor(t, 3*time.Second+200*time.Millisecond, 25*time.Millisecond, "expired keys swept from DBSIZE and INFO keyspace", func() (bool, string) {
		n0, err0 := c0.DBSize(ctx).Result()
		n3, err3 := c3.DBSize(ctx).Result()
		ks, err := c0.Info(ctx, "keyspace").Result()
		if err0 != nil || err3 != nil || err != nil {
			t.Fatalf("polling: DBSIZE db0: %v, DBSIZE db3: %v, INFO keyspace: %v", err0, err3, err)
		}
		st := parseKeyspace(t, ks)
		_, db3Listed := st[3]
		state := fmt.Sprintf("DBSIZE db0 = %d (want %d), DBSIZE db3 = %d (want 0), INFO keyspace %q (want db0:keys=%d,expires=%d and no db3)",
			n0, liveKeys, n3, strings.TrimSpace(ks), liveKeys, long)
		return n0 == liveKeys && n3 == 0 && st[0] == (dbStat{liveKeys, long}) && !db3Listed, state
	})
	t.Logf("swept %d keys %v after they were set", short0+short3, time.Since(filled).Round(time.Millisecond))

	info, err := c0.Info(ctx, "stats").Result()
	if err != nil {
		t.Fatalf("INFO stats: %v", err)
	}
	if n, err := strconv.ParseInt(infoField(info, "expired_keys"), 10, 64); err != nil || n-expired0 < short0+short3 {
		t.Errorf("INFO stats expired_keys went from %d to %q; want it up by ≥ %d", expired0, infoField(info, "expired_keys"), short0+short3)
	}
	// The survivors are intact.
	for i := range persistent {
		k := fmt.Sprintf("keep:%02d", i)
		if v, err := c0.Get(ctx, k).Result(); err != nil || v != "v" {
			t.Errorf("GET %s = %q, %v; want v", k, v, err)
		}
	}
	for i := range long {
		k := fmt.Sprintf("long:%02d", i)
		if d, err := c0.TTL(ctx, k).Result(); err != nil || d < 3590*time.Second {
			t.Errorf("TTL %s = %v, %v; want ~1h", k, d, err)
		}
	}
}

// TestExpirySurvivesRestart: values and TTLs (as deadlines, not durations)
// survive a graceful restart and, under appendfsync always, a kill -9; a key
// whose deadline passed while the server was down is gone after it.
func TestExpirySurvivesRestart(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		down func(*Oncekv, testing.TB)
	}{
		{"graceful", nil, (*Oncekv).Stop},
		{"graceful-always", []string{"--appendfsync", "always"}, (*Oncekv).Stop},
		{"kill9-always", []string{"--appendfsync", "always"}, (*Oncekv).Kill},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testExpiryRestart(t, tc.args, tc.down)
		})
	}
}

func testExpiryRestart(t *testing.T, args []string, down func(*Oncekv, testing.TB)) {
	ctx := grCtx(t, 30*time.Second)
	o := StartOncekv(t, args...)
	c := grClient(t, o.Addr, withMaxRetries(-1))
	const n = 20
	type ttlKey struct {
		key, val string
		pttl     time.Duration // PTTL read before the restart
		read     time.Time     // when that PTTL reply arrived
	}
	var withTTL []ttlKey
	for i := range n {
		k := fmt.Sprintf("ttl:%02d", i)
		v := fmt.Sprintf("value-%d", i)
		var err error
		switch i % 4 {
		case 0:
			err = c.Set(ctx, k, v, time.Duration(60+i)*time.Second).Err()
		case 1:
			err = c.Do(ctx, "SET", k, v, "PX", strconv.Itoa(120000+i)).Err()
		case 2:
			err = c.Do(ctx, "SET", k, v, "EXAT", strconv.FormatInt(time.Now().Unix()+3600, 10)).Err()
		case 3:
			if err = c.Set(ctx, k, v, 0).Err(); err == nil {
				err = c.PExpire(ctx, k, 90*time.Second).Err()
			}
		}
		if err != nil {
			t.Fatalf("setting %s: %v", k, err)
		}
	}
	for i := range n {
		k := fmt.Sprintf("persist:%02d", i)
		if err := c.Set(ctx, k, "p"+k, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
		k = fmt.Sprintf("short:%02d", i)
		if err := c.Set(ctx, k, "s", 200*time.Millisecond).Err(); err != nil {
			t.Fatalf("SET %s PX 200: %v", k, err)
		}
	}
	shortDeadline := time.Now().Add(200 * time.Millisecond)
	for i := range n {
		k := fmt.Sprintf("ttl:%02d", i)
		d, err := c.PTTL(ctx, k).Result()
		if err != nil || d <= 0 {
			t.Fatalf("PTTL %s before the restart = %v, %v", k, d, err)
		}
		withTTL = append(withTTL, ttlKey{k, fmt.Sprintf("value-%d", i), d, time.Now()})
	}
	c.Close()

	down(o, t)
	o = o.Restart(t)
	time.Sleep(time.Until(shortDeadline.Add(10 * time.Millisecond)))
	c = grClient(t, o.Addr)
	for _, k := range withTTL {
		sent := time.Now()
		if v, err := c.Get(ctx, k.key).Result(); err != nil || v != k.val {
			t.Errorf("GET %s after the restart = %q, %v; want %q", k.key, v, err, k.val)
			continue
		}
		d, err := c.PTTL(ctx, k.key).Result()
		if err != nil {
			t.Fatalf("PTTL %s: %v", k.key, err)
		}
		// The deadline is absolute: the time that passed since the first
		// PTTL (the restart included) is gone from the TTL.
		elapsed := sent.Sub(k.read)
		if d <= 0 || d > k.pttl || d > k.pttl-elapsed+2*time.Millisecond {
			t.Errorf("PTTL %s: %v before the restart, %v after it, %v later; want positive and ≤ %v (the deadline must not move)",
				k.key, k.pttl, d, elapsed.Round(time.Millisecond), k.pttl-elapsed)
		}
	}
	for i := range n {
		k := fmt.Sprintf("persist:%02d", i)
		if v, err := c.Get(ctx, k).Result(); err != nil || v != "p"+k {
			t.Errorf("GET %s after the restart = %q, %v; want %q", k, v, err, "p"+k)
		}
		if d, err := c.PTTL(ctx, k).Result(); err != nil || d != -1 {
			t.Errorf("PTTL %s (no expiry) after the restart = %d, %v; want -1", k, d, err)
		}
	}
	// The short keys expired during the restart: gone at once for
	// readers, and swept from DBSIZE soon. Checking DBSIZE first keeps the
	// reads below from doing the sweeper's work.
	waitFor(t, 3*time.Second, 25*time.Millisecond, "keys expired during the restart leave DBSIZE", func() (bool, string) {
		got, err := c.DBSize(ctx).Result()
		if err != nil {
			t.Fatalf("DBSIZE: %v", err)
		}
		return got == 2*n, fmt.Sprintf("DBSIZE = %d, want %d", got, 2*n)
	})
	for i := range n {
		k := fmt.Sprintf("short:%02d", i)
		if v, err := c.Get(ctx, k).Result(); !errors.Is(err, redis.Nil) {
			t.Errorf("GET %s (expired while down) = %q, %v; want nil", k, v, err)
		}
	}
}
