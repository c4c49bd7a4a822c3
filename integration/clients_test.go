package integration

// Real clients against the server: go-redis v9 with its default options
// (RESP3, negotiated with HELLO 3) and with Protocol 2, and redis-cli
// (scripted commands, --raw, -n, -a, --pipe). Every scenario runs against
// oncekv and, as a check of the test itself, against Debian's redis-server;
// the one promise Redis does not make (KV-7: KEYS and SCAN in byte order) is
// checked on oncekv only.
//
// This file also holds the helpers the expiry, concurrency and restart tests
// share (kvTarget, grClient, grCtx, parseKeyspace, infoField, waitFor,
// checkScanned); concurrency_test.go holds the raw-connection ones (rawDo,
// dialRawN, errSink).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// kvTarget is a kind of server a scenario runs against.
type kvTarget struct {
	name string
	// start starts a fresh server with extra redis-style arguments
	// (--requirepass p, --databases n…) and returns its address.
	start func(tb testing.TB, extra ...string) string
	// byteOrder: KEYS and SCAN return keys in byte order (KV-7). Redis
	// does not promise it.
	byteOrder bool
}

// kvTargets are oncekv, the server under test, and redis-server, which
// checks that the expectations themselves are Redis's.
var kvTargets = []kvTarget{
	{name: "oncekv", start: func(tb testing.TB, extra ...string) string {
		tb.Helper()
		return StartOncekv(tb, extra...).Addr
	}, byteOrder: true},
	{name: "redis", start: StartRedis},
}

// grClient returns a go-redis v9 client of addr: default options unless
// opts change them. Cleanup closes it.
func grClient(tb testing.TB, addr string, opts ...func(*redis.Options)) *redis.Client {
	tb.Helper()
	o := &redis.Options{Addr: addr}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// withProto, withDB, withPassword and withOneConn are grClient options.
func withProto(p int) func(*redis.Options)        { return func(o *redis.Options) { o.Protocol = p } }
func withDB(db int) func(*redis.Options)          { return func(o *redis.Options) { o.DB = db } }
func withPassword(pw string) func(*redis.Options) { return func(o *redis.Options) { o.Password = pw } }
func withOneConn() func(*redis.Options)           { return func(o *redis.Options) { o.PoolSize = 1 } }
func withMaxRetries(n int) func(*redis.Options)   { return func(o *redis.Options) { o.MaxRetries = n } }
func withReadTimeout(d time.Duration) func(*redis.Options) {
	return func(o *redis.Options) { o.ReadTimeout = d }
}

// grCtx returns a context that ends after d or when the test ends.
func grCtx(tb testing.TB, d time.Duration) context.Context {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

// dbStat is one line of INFO keyspace.
type dbStat struct{ keys, expires int64 }

// parseKeyspace parses the dbN:keys=…,expires=… lines of an INFO reply.
func parseKeyspace(tb testing.TB, info string) map[int]dbStat {
	tb.Helper()
	out := map[int]dbStat{}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimRight(line, "\r")
		name, fields, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "db") {
			continue
		}
		db, err := strconv.Atoi(name[2:])
		if err != nil {
			continue
		}
		var st dbStat
		for _, f := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			switch {
			case k == "keys" && err == nil:
				st.keys = n
			case k == "expires" && err == nil:
				st.expires = n
			case k == "keys" || k == "expires":
				tb.Errorf("INFO keyspace: bad line %q", line)
			}
		}
		out[db] = st
	}
	return out
}

// infoField returns field's value in an INFO reply ("" if absent).
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), field+":"); ok {
			return v
		}
	}
	return ""
}

// waitFor calls cond every interval until it reports done or timeout
// passes, then fails tb with cond's last explanation.
func waitFor(tb testing.TB, timeout, interval time.Duration, what string, cond func() (done bool, state string)) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		done, state := cond()
		if done {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not reached within %v; last state: %s", what, timeout, state)
		}
		time.Sleep(interval)
	}
}

// TestClientGoRedis drives the server with go-redis v9, as applications do:
// with default options (go-redis negotiates RESP3 with HELLO 3) and with
// Protocol: 2.
func TestClientGoRedis(t *testing.T) {
	t.Parallel()
	for _, tg := range kvTargets {
		for _, proto := range []int{3, 2} {
			t.Run(fmt.Sprintf("%s/resp%d", tg.name, proto), func(t *testing.T) {
				t.Parallel()
				testGoRedis(t, tg, proto)
			})
		}
	}
}

func testGoRedis(t *testing.T, tg kvTarget, proto int) {
	addr := tg.start(t)
	var opts []func(*redis.Options)
	if proto != 3 {
		opts = append(opts, withProto(proto)) // 3 is go-redis's default: keep the options untouched
	}
	c := grClient(t, addr, opts...)
	ctx := grCtx(t, 30*time.Second)

	t.Run("hello", func(t *testing.T) {
		// HELLO with no version reports the protocol the connection speaks.
		v, err := c.Do(ctx, "HELLO").Result()
		if err != nil {
			t.Fatalf("HELLO: %v", err)
		}
		var got any
		switch m := v.(type) {
		case map[any]any: // RESP3 map
			got = m["proto"]
		case []any: // RESP2 flat array
			for i := 0; i+1 < len(m); i += 2 {
				if m[i] == "proto" {
					got = m[i+1]
				}
			}
		default:
			t.Fatalf("HELLO: reply %T %v, want a map or an array", v, v)
		}
		if got != int64(proto) {
			t.Errorf("HELLO: proto = %v (%T), want %d", got, got, proto)
		}
	})

	t.Run("strings", func(t *testing.T) {
		if err := c.Set(ctx, "s:a", "hello", 0).Err(); err != nil {
			t.Fatalf("SET s:a: %v", err)
		}
		if v, err := c.Get(ctx, "s:a").Result(); err != nil || v != "hello" {
			t.Errorf("GET s:a = %q, %v; want \"hello\"", v, err)
		}
		if v, err := c.Get(ctx, "s:missing").Result(); !errors.Is(err, redis.Nil) {
			t.Errorf("GET s:missing = %q, %v; want redis.Nil", v, err)
		}
		for want := int64(1); want <= 3; want++ {
			if n, err := c.Incr(ctx, "s:n").Result(); err != nil || n != want {
				t.Errorf("INCR s:n = %d, %v; want %d", n, err, want)
			}
		}
		if n, err := c.IncrBy(ctx, "s:n", -10).Result(); err != nil || n != -7 {
			t.Errorf("INCRBY s:n -10 = %d, %v; want -7", n, err)
		}
		err := c.Incr(ctx, "s:a").Err()
		var rerr redis.Error
		if !errors.As(err, &rerr) || err.Error() != "ERR value is not an integer or out of range" {
			t.Errorf("INCR s:a (a string) = %v; want redis.Error \"ERR value is not an integer or out of range\"", err)
		}
		if v, _ := c.Get(ctx, "s:a").Result(); v != "hello" {
			t.Errorf("GET s:a after failed INCR = %q, want \"hello\" (KV-2: unchanged)", v)
		}
		if v, err := c.Type(ctx, "s:a").Result(); err != nil || v != "string" {
			t.Errorf("TYPE s:a = %q, %v; want string", v, err)
		}
		if v, err := c.Type(ctx, "s:missing").Result(); err != nil || v != "none" {
			t.Errorf("TYPE s:missing = %q, %v; want none", v, err)
		}
		vals, err := c.MGet(ctx, "s:a", "s:missing", "s:n").Result()
		if err != nil || !slices.Equal(vals, []any{"hello", nil, "-7"}) {
			t.Errorf("MGET s:a s:missing s:n = %#v, %v; want [hello <nil> -7]", vals, err)
		}
		if n, err := c.Exists(ctx, "s:a", "s:missing", "s:n", "s:a").Result(); err != nil || n != 3 {
			t.Errorf("EXISTS s:a s:missing s:n s:a = %d, %v; want 3", n, err)
		}
	})

	t.Run("expire", func(t *testing.T) {
		if err := c.Set(ctx, "e:k", "v", 0).Err(); err != nil {
			t.Fatalf("SET: %v", err)
		}
		if d, err := c.TTL(ctx, "e:k").Result(); err != nil || d != -1 {
			t.Errorf("TTL of a key without expiry = %v, %v; want -1 (go-redis: -1ns)", d, err)
		}
		if d, err := c.TTL(ctx, "e:missing").Result(); err != nil || d != -2 {
			t.Errorf("TTL of a missing key = %v, %v; want -2 (go-redis: -2ns)", d, err)
		}
		if ok, err := c.Expire(ctx, "e:k", 100*time.Second).Result(); err != nil || !ok {
			t.Errorf("EXPIRE e:k 100 = %v, %v; want true", ok, err)
		}
		if d, err := c.TTL(ctx, "e:k").Result(); err != nil || d < 99*time.Second || d > 100*time.Second {
			t.Errorf("TTL after EXPIRE 100 = %v, %v; want 99s..100s", d, err)
		}
		if d, err := c.PTTL(ctx, "e:k").Result(); err != nil || d <= 98*time.Second || d > 100*time.Second {
			t.Errorf("PTTL after EXPIRE 100 = %v, %v; want ~100s", d, err)
		}
		if ok, err := c.Expire(ctx, "e:missing", time.Second).Result(); err != nil || ok {
			t.Errorf("EXPIRE of a missing key = %v, %v; want false", ok, err)
		}
		if ok, err := c.Persist(ctx, "e:k").Result(); err != nil || !ok {
			t.Errorf("PERSIST = %v, %v; want true", ok, err)
		}
		if d, err := c.TTL(ctx, "e:k").Result(); err != nil || d != -1 {
			t.Errorf("TTL after PERSIST = %v, %v; want -1", d, err)
		}
		if err := c.Set(ctx, "e:ex", "v", 50*time.Second).Err(); err != nil {
			t.Fatalf("SET EX: %v", err)
		}
		if d, err := c.TTL(ctx, "e:ex").Result(); err != nil || d < 49*time.Second || d > 50*time.Second {
			t.Errorf("TTL after SET EX 50 = %v, %v; want 49s..50s", d, err)
		}
	})

	t.Run("pipeline", func(t *testing.T) {
		const n = 200
		cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range n {
				p.Set(ctx, fmt.Sprintf("p:%03d", i), fmt.Sprintf("val%d", i), 0)
				p.Incr(ctx, "p:counter")
				p.Get(ctx, fmt.Sprintf("p:%03d", i))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("pipeline of %d commands: %v", 3*n, err)
		}
		if len(cmds) != 3*n {
			t.Fatalf("pipeline: %d results, want %d", len(cmds), 3*n)
		}
		for i := range n {
			if v, err := cmds[3*i].(*redis.StatusCmd).Result(); err != nil || v != "OK" {
				t.Errorf("pipeline SET #%d = %q, %v", i, v, err)
			}
			if v, err := cmds[3*i+1].(*redis.IntCmd).Result(); err != nil || v != int64(i+1) {
				t.Errorf("pipeline INCR #%d = %d, %v; want %d", i, v, err, i+1)
			}
			if v, err := cmds[3*i+2].(*redis.StringCmd).Result(); err != nil || v != fmt.Sprintf("val%d", i) {
				t.Errorf("pipeline GET #%d = %q, %v; want val%d", i, v, err, i)
			}
		}
	})

	t.Run("tx-pipeline", func(t *testing.T) {
		var incr1, incr2 *redis.IntCmd
		var get *redis.StringCmd
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "tx:n", "10", 0)
			incr1 = p.Incr(ctx, "tx:n")
			incr2 = p.IncrBy(ctx, "tx:n", 5)
			get = p.Get(ctx, "tx:n")
			return nil
		})
		if err != nil {
			t.Fatalf("TxPipelined: %v", err)
		}
		if incr1.Val() != 11 || incr2.Val() != 16 || get.Val() != "16" {
			t.Errorf("TxPipelined: INCR=%d INCRBY=%d GET=%q; want 11 16 \"16\"", incr1.Val(), incr2.Val(), get.Val())
		}
		// A command that fails at EXEC time fails alone: the others apply.
		var bad *redis.IntCmd
		var after *redis.StringCmd
		_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "tx:s", "text", 0)
			bad = p.Incr(ctx, "tx:s")
			p.Set(ctx, "tx:t", "applied", 0)
			after = p.Get(ctx, "tx:t")
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), "not an integer") {
			t.Errorf("TxPipelined with INCR of a string: err = %v; want the INCR's error", err)
		}
		if bad.Err() == nil || after.Val() != "applied" {
			t.Errorf("TxPipelined: INCR err = %v, GET after = %q; want an error and \"applied\"", bad.Err(), after.Val())
		}
	})

	t.Run("scan-iterator", func(t *testing.T) {
		// A database of its own, chosen with Options.DB.
		cs := grClient(t, addr, append(slices.Clone(opts), withDB(5))...)
		const n = 1000
		want := make([]string, 0, n)
		_, err := cs.Pipelined(ctx, func(p redis.Pipeliner) error {
			// Insert in a scrambled order: the order SCAN returns must not
			// be the insertion order by accident.
			for i := range n {
				j := (i * 7919) % n
				p.Set(ctx, fmt.Sprintf("scan:%04d", j), strconv.Itoa(j), 0)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("inserting %d keys: %v", n, err)
		}
		for i := range n {
			want = append(want, fmt.Sprintf("scan:%04d", i))
		}
		for _, count := range []int64{0, 10, 97, 5000} {
			var got []string
			it := cs.Scan(ctx, 0, "", count).Iterator()
			for it.Next(ctx) {
				got = append(got, it.Val())
			}
			if err := it.Err(); err != nil {
				t.Fatalf("SCAN COUNT %d iteration: %v", count, err)
			}
			checkScanned(t, fmt.Sprintf("ScanIterator COUNT %d", count), got, want, tg.byteOrder)
		}
		var got []string
		it := cs.Scan(ctx, 0, "scan:00*", 10).Iterator()
		for it.Next(ctx) {
			got = append(got, it.Val())
		}
		if err := it.Err(); err != nil {
			t.Fatalf("SCAN MATCH iteration: %v", err)
		}
		checkScanned(t, "ScanIterator MATCH scan:00*", got, want[:100], tg.byteOrder)

		keys, err := cs.Keys(ctx, "*").Result()
		if err != nil {
			t.Fatalf("KEYS *: %v", err)
		}
		checkScanned(t, "KEYS *", keys, want, tg.byteOrder)
		if n2, err := cs.DBSize(ctx).Result(); err != nil || n2 != n {
			t.Errorf("DBSIZE in db 5 = %d, %v; want %d", n2, err, n)
		}
	})

	t.Run("select-db", func(t *testing.T) {
		c3 := grClient(t, addr, append(slices.Clone(opts), withDB(3))...)
		c0 := grClient(t, addr, opts...)
		if err := c3.Set(ctx, "db:only-in-3", "three", 0).Err(); err != nil {
			t.Fatalf("SET in db 3: %v", err)
		}
		if v, err := c3.Get(ctx, "db:only-in-3").Result(); err != nil || v != "three" {
			t.Errorf("GET in db 3 = %q, %v; want three", v, err)
		}
		if v, err := c0.Get(ctx, "db:only-in-3").Result(); !errors.Is(err, redis.Nil) {
			t.Errorf("GET in db 0 of a key of db 3 = %q, %v; want redis.Nil", v, err)
		}
		if n, err := c3.DBSize(ctx).Result(); err != nil || n != 1 {
			t.Errorf("DBSIZE in db 3 = %d, %v; want 1", n, err)
		}
	})

	t.Run("info", func(t *testing.T) {
		m, err := c.InfoMap(ctx).Result()
		if err != nil {
			t.Fatalf("INFO (InfoMap): %v", err)
		}
		if m["Server"]["redis_version"] == "" {
			t.Errorf("INFO: no redis_version in section Server; sections: %v", slices.Sorted(maps.Keys(m)))
		}
		if m["Clients"]["connected_clients"] == "" {
			t.Errorf("INFO: no connected_clients in section Clients")
		}
		ks, err := c.Info(ctx, "keyspace").Result()
		if err != nil {
			t.Fatalf("INFO keyspace: %v", err)
		}
		if !strings.HasPrefix(ks, "# Keyspace") {
			t.Errorf("INFO keyspace = %q, want it to start with \"# Keyspace\"", ks)
		}
		n, err := c.DBSize(ctx).Result()
		if err != nil {
			t.Fatalf("DBSIZE: %v", err)
		}
		stats := parseKeyspace(t, ks)
		if stats[0].keys != n {
			t.Errorf("INFO keyspace db0 keys = %d, DBSIZE = %d; want equal (INFO keyspace: %q)", stats[0].keys, n, ks)
		}
		if m["Keyspace"]["db0"] == "" {
			t.Errorf("InfoMap: no db0 in section Keyspace: %v", m["Keyspace"])
		}
		if stats[0].expires < 1 {
			t.Errorf("INFO keyspace db0 expires = %d, want ≥ 1 (e:ex has a TTL)", stats[0].expires)
		}
	})
}

// checkScanned checks that got holds each of want exactly once and nothing
// else, and, with byteOrder, in want's (byte) order.
func checkScanned(tb testing.TB, what string, got, want []string, byteOrder bool) {
	tb.Helper()
	seen := map[string]int{}
	for _, k := range got {
		seen[k]++
	}
	var dups, extra, missing []string
	for k, n := range seen {
		if n > 1 {
			dups = append(dups, k)
		}
	}
	wantSet := map[string]bool{}
	for _, k := range want {
		wantSet[k] = true
		if seen[k] == 0 {
			missing = append(missing, k)
		}
	}
	for k := range seen {
		if !wantSet[k] {
			extra = append(extra, k)
		}
	}
	slices.Sort(dups)
	slices.Sort(extra)
	slices.Sort(missing)
	if len(dups)+len(extra)+len(missing) > 0 {
		tb.Errorf("%s: %d keys returned, want %d each once; duplicates %v, unexpected %v, missing %v",
			what, len(got), len(want), firstFew(dups), firstFew(extra), firstFew(missing))
		return
	}
	if byteOrder && !slices.IsSorted(got) {
		i := 1
		for i < len(got) && got[i-1] < got[i] {
			i++
		}
		tb.Errorf("%s: keys not in byte order (KV-7): %q comes after %q (position %d)", what, got[i], got[i-1], i)
	}
}

// firstFew shortens a list for a message.
func firstFew(s []string) []string {
	if len(s) > 10 {
		return append(s[:10:10], fmt.Sprintf("…(%d more)", len(s)-10))
	}
	return s
}

// TestClientGoRedisAuth: a server with --requirepass refuses clients without
// the password (NOAUTH) or with a wrong one (WRONGPASS) and serves those with
// it, in RESP3 (HELLO 3 AUTH) and RESP2.
func TestClientGoRedisAuth(t *testing.T) {
	t.Parallel()
	const pass = "s3cret pass"
	for _, tg := range kvTargets {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			addr := tg.start(t, "--requirepass", pass)
			ctx := grCtx(t, 30*time.Second)
			for _, proto := range []int{3, 2} {
				t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
					p := withProto(proto)
					noPass := grClient(t, addr, p, withMaxRetries(-1))
					if err := noPass.Get(ctx, "k").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
						t.Errorf("GET without a password = %v; want NOAUTH Authentication required.", err)
					}
					if err := noPass.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
						t.Errorf("SET without a password = %v; want NOAUTH Authentication required.", err)
					}
					wrong := grClient(t, addr, p, withPassword("wrong"), withMaxRetries(-1))
					if err := wrong.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
						t.Errorf("PING with a wrong password = %v; want WRONGPASS invalid username-password pair or user is disabled.", err)
					}
					good := grClient(t, addr, p, withPassword(pass), withDB(2))
					key := fmt.Sprintf("auth:%d", proto)
					if err := good.Set(ctx, key, "ok", 0).Err(); err != nil {
						t.Fatalf("SET with the password: %v", err)
					}
					if v, err := good.Get(ctx, key).Result(); err != nil || v != "ok" {
						t.Errorf("GET with the password = %q, %v; want ok", v, err)
					}
					if n, err := good.DBSize(ctx).Result(); err != nil || n < 1 {
						t.Errorf("DBSIZE in db 2 with the password = %d, %v; want ≥ 1", n, err)
					}
				})
			}
		})
	}
}

// redisCli runs redis-cli against port with args (and stdin, if not nil),
// bounded by a timeout, and returns its stdout, stderr and exit code.
func redisCli(tb testing.TB, port int, stdin []byte, args ...string) (stdout, stderr string, code int) {
	tb.Helper()
	bin, err := exec.LookPath("redis-cli")
	if err != nil {
		tb.Fatalf("redis-cli not found on PATH: install it with `apt-get install -y redis-tools` (./test.sh does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	all := append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(port)}, args...)
	c := exec.CommandContext(ctx, bin, all...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	err = c.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		tb.Fatalf("redis-cli %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		tb.Fatalf("redis-cli %s: no exit within 20s; stdout %q stderr %q", strings.Join(args, " "), out.String(), errb.String())
	}
	return out.String(), errb.String(), code
}

// portOf returns the port of a "127.0.0.1:port" address.
func portOf(tb testing.TB, addr string) int {
	tb.Helper()
	_, p, _ := strings.Cut(addr, ":")
	n, err := strconv.Atoi(p)
	if err != nil {
		tb.Fatalf("bad address %q", addr)
	}
	return n
}

// TestClientRedisCli scripts redis-cli, as an operator would. Its output is
// not a terminal, so it prints raw replies unless told --no-raw.
func TestClientRedisCli(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redis-cli not found on PATH: install it with `apt-get install -y redis-tools` (./test.sh does)")
	}
	type step struct {
		args   []string
		stdin  string
		stdout string // exact stdout
		// contains, when set, is checked on stdout+stderr instead of stdout.
		contains string
	}
	const pass = "cli-pass"
	plain := []step{
		{args: []string{"set", "a", "b"}, stdout: "OK\n"},
		{args: []string{"get", "a"}, stdout: "b\n"},
		{args: []string{"--raw", "get", "a"}, stdout: "b\n"},
		{args: []string{"--no-raw", "get", "a"}, stdout: "\"b\"\n"},
		{args: []string{"get", "missing"}, stdout: "\n"},
		{args: []string{"--no-raw", "get", "missing"}, stdout: "(nil)\n"},
		{args: []string{"incr", "n"}, stdout: "1\n"},
		{args: []string{"--no-raw", "incr", "n"}, stdout: "(integer) 2\n"},
		{args: []string{"incr", "a"}, contains: "ERR value is not an integer or out of range"},
		{args: []string{"set", "spaced", "a b  c"}, stdout: "OK\n"},
		{args: []string{"get", "spaced"}, stdout: "a b  c\n"},
		{args: []string{"-x", "set", "fromstdin"}, stdin: "line1\nline2\n", stdout: "OK\n"},
		{args: []string{"--no-raw", "get", "fromstdin"}, stdout: "\"line1\\nline2\\n\"\n"},
		{args: []string{"--no-raw", "mget", "a", "missing", "n"}, stdout: "1) \"b\"\n2) (nil)\n3) \"2\"\n"},
		{args: []string{"-n", "3", "set", "k", "three"}, stdout: "OK\n"},
		{args: []string{"-n", "3", "get", "k"}, stdout: "three\n"},
		{args: []string{"get", "k"}, stdout: "\n"},
		{args: []string{"-n", "3", "dbsize"}, stdout: "1\n"},
		{args: []string{"-n", "3", "--no-raw", "keys", "*"}, stdout: "1) \"k\"\n"},
		{args: []string{"-n", "3", "--no-raw", "type", "k"}, stdout: "string\n"},
		{args: []string{"--no-raw", "expire", "a", "100"}, stdout: "(integer) 1\n"},
		{args: []string{"ttl", "a"}, stdout: "100\n"},
		{args: []string{"-3", "--no-raw", "get", "a"}, stdout: "\"b\"\n"},
		{args: []string{"-3", "--no-raw", "get", "missing"}, stdout: "(nil)\n"},
		{args: []string{"ping"}, stdout: "PONG\n"},
	}
	withPass := []step{
		{args: []string{"get", "a"}, contains: "NOAUTH Authentication required."},
		{args: []string{"-a", pass, "set", "a", "b"}, stdout: "OK\n"},
		{args: []string{"-a", pass, "--no-auth-warning", "get", "a"}, stdout: "b\n"},
		{args: []string{"-a", "wrong", "get", "a"}, contains: "WRONGPASS"},
		{args: []string{"-a", pass, "-n", "3", "set", "x", "y"}, stdout: "OK\n"},
		{args: []string{"-a", pass, "-n", "3", "get", "x"}, stdout: "y\n"},
		{args: []string{"-a", pass, "get", "x"}, stdout: "\n"},
	}
	run := func(t *testing.T, port int, steps []step) {
		for _, s := range steps {
			var in []byte
			if s.stdin != "" {
				in = []byte(s.stdin)
			}
			out, errOut, _ := redisCli(t, port, in, s.args...)
			if s.contains != "" {
				if !strings.Contains(out+errOut, s.contains) {
					t.Errorf("redis-cli %s: stdout %q stderr %q; want %q in them", strings.Join(s.args, " "), out, errOut, s.contains)
				}
				continue
			}
			if out != s.stdout {
				t.Errorf("redis-cli %s: stdout %q; want %q (stderr %q)", strings.Join(s.args, " "), out, s.stdout, errOut)
			}
		}
	}
	for _, tg := range kvTargets {
		t.Run(tg.name, func(t *testing.T) {
			t.Parallel()
			t.Run("commands", func(t *testing.T) {
				t.Parallel()
				run(t, portOf(t, tg.start(t)), plain)
			})
			t.Run("requirepass", func(t *testing.T) {
				t.Parallel()
				run(t, portOf(t, tg.start(t, "--requirepass", pass)), withPass)
			})
			t.Run("pipe", func(t *testing.T) {
				t.Parallel()
				testCliPipe(t, tg.start(t))
			})
		})
	}
}

// massInsert returns the RESP encoding of n SETs of pipe:%05d in a scrambled
// order, the way the Redis mass-insertion guide generates it.
func massInsert(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		j := (i * 7919) % n
		b.Write(EncodeCommand("SET", fmt.Sprintf("pipe:%05d", j), fmt.Sprintf("value %d\r\n", j)))
	}
	return b.Bytes()
}

func testCliPipe(t *testing.T, addr string) {
	port := portOf(t, addr)
	ctx := grCtx(t, 30*time.Second)
	const n = 5000
	// -n 7: redis-cli selects the database before it pipes.
	out, errOut, code := redisCli(t, port, massInsert(n), "-n", "7", "--pipe")
	want := fmt.Sprintf("errors: 0, replies: %d", n)
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("redis-cli --pipe of %d SETs: exit %d, stdout %q stderr %q; want exit 0 and %q", n, code, out, errOut, want)
	}
	c7 := grClient(t, addr, withDB(7))
	if got, err := c7.DBSize(ctx).Result(); err != nil || got != n {
		t.Errorf("DBSIZE in db 7 after --pipe = %d, %v; want %d", got, err, n)
	}
	if v, err := c7.Get(ctx, "pipe:04321").Result(); err != nil || v != "value 4321\r\n" {
		t.Errorf("GET pipe:04321 = %q, %v; want \"value 4321\\r\\n\"", v, err)
	}
	if n0, err := grClient(t, addr).DBSize(ctx).Result(); err != nil || n0 != 0 {
		t.Errorf("DBSIZE in db 0 after --pipe into db 7 = %d, %v; want 0", n0, err)
	}

	// A stream with one failing command: --pipe counts it and exits 1.
	var in bytes.Buffer
	in.Write(EncodeCommand("SET", "pipe:text", "not a number"))
	for i := range 1000 {
		in.Write(EncodeCommand("INCR", fmt.Sprintf("pipe:counter:%d", i%10)))
	}
	in.Write(EncodeCommand("INCR", "pipe:text"))
	out, errOut, code = redisCli(t, port, in.Bytes(), "--pipe")
	want = "errors: 1, replies: 1002"
	if code != 1 || !strings.Contains(out, want) {
		t.Errorf("redis-cli --pipe with one failing INCR: exit %d, stdout %q stderr %q; want exit 1 and %q", code, out, errOut, want)
	}
	if !strings.Contains(out+errOut, "ERR value is not an integer or out of range") {
		t.Errorf("redis-cli --pipe with one failing INCR: the error is not printed: stdout %q stderr %q", out, errOut)
	}
	c0 := grClient(t, addr)
	for i := range 10 {
		if v, err := c0.Get(ctx, fmt.Sprintf("pipe:counter:%d", i)).Result(); err != nil || v != "100" {
			t.Errorf("GET pipe:counter:%d after --pipe = %q, %v; want 100", i, v, err)
		}
	}
}
