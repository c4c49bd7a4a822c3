package integration

// Proxy mode (--upstream): oncekv as a stateless proxy in front of a real
// redis-server, Redis Cluster or Sentinel (proxy/proxy_test.go), started by
// the tests on loopback.
//
//   - Standalone: the differential scripts (strings, keys, transactions,
//     server, protocol) run through the proxy over one redis-server and
//     straight against another, compared byte for byte, in RESP2 and RESP3
//     (KV-5 binary safety, KV-7 keyspaces); and the replies to clients that
//     have not authenticated, with the proxy's own requirepass.
//   - Cluster (3 masters, two proxies): SCAN across the nodes returns every
//     key once, DBSIZE and KEYS cover every master, CROSSSLOT and SELECT
//     answer as Redis Cluster does, a pipeline over several nodes keeps its
//     order, MULTI/EXEC runs pinned to one node, a WATCH conflict caused
//     through the other proxy aborts the EXEC, and while a slot moves the
//     proxy follows ASK, then MOVED. With replicas: a master dies and the
//     proxy finds every key on the new master (WAIT through the proxy
//     first). Nodes announcing host names are reached by name.
//   - ONCE (KV-8…KV-13): the randomized stress of once_stress_test.go with
//     its workers spread over two proxies, over a redis-server and over a
//     cluster: its history checks hold across instances.

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncekv/oncekv/internal/testredis"
)

// startProxy runs an oncekv process in proxy mode in front of upstream
// (an --upstream address).
func startProxy(tb testing.TB, upstream string, extra ...string) *Oncekv {
	tb.Helper()
	return StartOncekv(tb, append([]string{"--upstream", upstream}, extra...)...)
}

// newProxyPair is a DiffPair whose server under test is a proxy over a
// second redis-server started the same way as the reference one.
func newProxyPair(tb testing.TB, extra ...string) *DiffPair {
	tb.Helper()
	up := testredis.Standalone(tb)
	o := startProxy(tb, "redis://"+up.Addr(), extra...)
	return &DiffPair{Redis: StartRedis(tb), Other: o.Addr, OtherName: "proxy", O: o, tb: tb}
}

// proxyScriptSkips are the differential scripts whose replies the proxy
// answers itself and which therefore differ from one redis-server's, with
// the reason.
var proxyScriptSkips = map[string]string{
	"config-get":                     "CONFIG GET shows the proxy's directives, not the upstream's",
	"encodings-at-thresholds":        "CONFIG SET sets the proxy's directives, not the upstream's",
	"eval-client-pause-write":        "the proxy refuses CLIENT PAUSE (README, proxy mode)",
	"negative-zero-past-max-entries": "CONFIG SET sets the proxy's directives, not the upstream's",
}

// TestProxyDiffStandalone runs the differential scripts through the proxy
// and compares them with a redis-server byte for byte.
func TestProxyDiffStandalone(t *testing.T) {
	t.Parallel()
	p := newProxyPair(t)
	var scripts []Script
	for _, family := range [][]Script{stringScripts(), keyScripts(), txScripts(), serverScripts(), protocolScripts(),
		copyMoveScripts(), swapdbScripts(), zsetScripts(), scriptingScripts()} {
		for _, s := range family {
			// The sorted set blocking scripts are served by the upstream
			// redis-server through the proxy, as the list ones are, whose
			// forwarding TestProxyListScripts compares: their held steps
			// (300 ms each) would only add to the CI's time here.
			if _, skip := proxyScriptSkips[s.Name]; !skip && !strings.HasPrefix(s.Name, "blocking-") {
				scripts = append(scripts, s)
			}
		}
	}
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			for _, s := range scripts {
				t.Run(s.Name, func(t *testing.T) { p.Run(t, s, proto) })
			}
		})
	}
	t.Run("closing", func(t *testing.T) {
		for _, ex := range closingExchanges() {
			t.Run(ex.name, func(t *testing.T) { compareExchange(t, p.Redis, p.Other, ex) })
		}
	})
	// CLIENT REPLY drops the replies of forwarded commands too, also of
	// blocking ones and of those whose replies the proxy writes later.
	t.Run("client-reply", func(t *testing.T) {
		exs := append(replyExchanges(),
			exchange{name: "skip-blocking", chunks: []string{"RPUSH l x\r\nCLIENT REPLY SKIP\r\nBLPOP l 1\r\nLLEN l\r\nCLIENT REPLY SKIP\r\nBLPOP nol 0.1\r\nPING\r\n"}},
			exchange{name: "off-blocking", chunks: []string{"CLIENT REPLY OFF\r\nBLPOP nol 0.1\r\nRPUSH l y\r\nBRPOP l 1\r\nWAIT 0 0\r\nCLIENT REPLY ON\r\nLLEN l\r\n"}},
			exchange{name: "skip-wait", chunks: []string{"CLIENT REPLY SKIP\r\nWAIT 0 0\r\nPING\r\n"}},
			exchange{name: "skip-in-a-long-pipeline", chunks: []string{strings.Repeat("INCR n\r\n", 1500) + "CLIENT REPLY SKIP\r\nGET n\r\nGET n\r\n"}},
		)
		for _, ex := range exs {
			t.Run(ex.name, func(t *testing.T) { compareExchange(t, p.Redis, p.Other, ex) })
		}
	})
}

// TestProxyDiffAuth compares the replies to clients that have not
// authenticated: a proxy with its own requirepass, in front of an upstream
// with another password (given in --upstream), against a redis-server
// with requirepass.
func TestProxyDiffAuth(t *testing.T) {
	t.Parallel()
	up := testredis.Standalone(t, "--requirepass", "upstream-secret")
	o := startProxy(t, "redis://:upstream-secret@"+up.Addr(), "--requirepass", "pw")
	r := StartRedis(t, "--requirepass", "pw")
	for _, ex := range []exchange{
		{name: "11-arguments", chunks: []string{"*11\r\n"}},
		{name: "16385-bytes", chunks: []string{"*1\r\n$16385\r\n"}},
		{name: "after-auth", chunks: []string{"AUTH pw\r\n*2\r\n$4\r\nECHO\r\n$20000\r\n" + strings.Repeat("e", 20000) + "\r\n"}},
		{name: "after-reset", chunks: []string{"AUTH pw\r\nRESET\r\n*11\r\n"}},
		{name: "noauth-replies", chunks: []string{"GET k\r\nEXEC\r\nMULTI\r\nHELLO 3\r\nAUTH nope\r\nAUTH default nope\r\nAUTH alice pw\r\nCLIENT LIST\r\nCLIENT\r\nGET\r\nFOO\r\nAUTH pw\r\nGET k\r\n"}},
		// Commands only the upstream knows: NOAUTH, or their arity error
		// first, as Redis answers.
		{name: "noauth-upstream-commands", chunks: []string{"LPUSH l x\r\nLPUSH\r\nHSET h\r\nNOSUCHCMD\r\nAUTH pw\r\nLPUSH l x\r\nLRANGE l 0 -1\r\nDEL l\r\n"}},
		{name: "hello-auth", chunks: []string{"HELLO 3 AUTH default nope\r\nHELLO 2 AUTH alice pw\r\nAUTH default pw\r\nSET k v\r\nGET k\r\nDEL k\r\n"}},
	} {
		t.Run(ex.name, func(t *testing.T) { compareExchange(t, r, o.Addr, ex) })
	}
}

// clusterUpstream is the --upstream address of a cluster: its masters as
// seeds.
func clusterUpstream(c *testredis.Cluster) string {
	return "redis-cluster://" + strings.Join(c.Masters(), ",")
}

// wantReply sends args on c and fails unless the raw reply is want.
func wantReply(tb testing.TB, c *RawConn, want string, args ...string) {
	tb.Helper()
	if got := string(c.Do(args...)); got != want {
		tb.Errorf("%s: %s = %q, want %q", c.Addr, fmtArgs(args), got, want)
	}
}

// sameReply sends args to both connections and fails unless the raw
// replies are equal.
func sameReply(tb testing.TB, direct, proxied *RawConn, args ...string) {
	tb.Helper()
	d, p := direct.Do(args...), proxied.Do(args...)
	if string(d) != string(p) {
		tb.Errorf("%s: direct %q, through the proxy %q", fmtArgs(args), d, p)
	}
}

// proxyInfoField reads one field of INFO section on c.
func proxyInfoField(tb testing.TB, c *RawConn, section, field string) string {
	tb.Helper()
	f := c.ReadFrameAfterDo(tb, "INFO", section)
	for _, line := range strings.Split(f.Str, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			return v
		}
	}
	tb.Fatalf("INFO %s has no %s:\n%s", section, field, f.Str)
	return ""
}

// ReadFrameAfterDo sends args and parses the reply.
func (c *RawConn) ReadFrameAfterDo(tb testing.TB, args ...string) *Frame {
	tb.Helper()
	f, err := c.TryReadFrameAfter(EncodeCommand(args...))
	if err != nil {
		tb.Fatalf("%s: %s: %v", c.Addr, fmtArgs(args), err)
	}
	return f
}

// keyOn returns a key (prefix + a number) whose slot is served by the
// master at addr.
func keyOn(tb testing.TB, c *testredis.Cluster, addr, prefix string) string {
	tb.Helper()
	for i := 0; i < 10000; i++ {
		k := prefix + strconv.Itoa(i)
		if c.MasterForKey(k) == addr {
			return k
		}
	}
	tb.Fatalf("no key %s* on %s", prefix, addr)
	return ""
}

// TestProxyCluster runs two proxies over a Redis Cluster of 3 masters.
func TestProxyCluster(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t, 3, 0)
	masters := cl.Masters()
	if len(masters) != 3 {
		t.Fatalf("masters %v", masters)
	}
	up := clusterUpstream(cl)
	p1, p2 := startProxy(t, up), startProxy(t, up)

	t.Run("scan-dbsize-keys-cover-every-master", func(t *testing.T) {
		c := DialRaw(t, p1.Addr)
		wantReply(t, c, "+OK\r\n", "FLUSHALL")
		const n = 1000
		var pipe []byte
		for i := 0; i < n; i++ {
			pipe = append(pipe, EncodeCommand("SET", "key:"+strconv.Itoa(i), strconv.Itoa(i))...)
		}
		c.Send(pipe)
		for i := 0; i < n; i++ {
			if r := c.ReadReply(); string(r) != "+OK\r\n" {
				t.Fatalf("SET %d: %q", i, r)
			}
		}
		var sum int64
		for _, m := range masters {
			f := DialRaw(t, m).ReadFrameAfterDo(t, "DBSIZE")
			k, _ := f.Int()
			if k == 0 {
				t.Errorf("master %s holds no key: the keys were not spread", m)
			}
			sum += k
		}
		if sum != n {
			t.Errorf("the masters hold %d keys, want %d", sum, n)
		}
		wantReply(t, c, ":"+strconv.Itoa(n)+"\r\n", "DBSIZE")
		wantReply(t, DialRaw(t, p2.Addr), ":"+strconv.Itoa(n)+"\r\n", "DBSIZE")

		seen := map[string]int{}
		cursor, calls := "0", 0
		for {
			calls++
			f := c.ReadFrameAfterDo(t, "SCAN", cursor, "COUNT", "50")
			if f.Type != '*' || len(f.Elems) != 2 || !f.Elems[1].IsAggregate() {
				t.Fatalf("SCAN %s: %q", cursor, f.Raw)
			}
			next := f.Elems[0].Str
			for _, k := range f.Elems[1].Elems {
				seen[k.Str]++
			}
			if next == "0" {
				break
			}
			if calls > 1000 {
				t.Fatal("SCAN does not end")
			}
			cursor = next
		}
		for i := 0; i < n; i++ {
			if k := "key:" + strconv.Itoa(i); seen[k] != 1 {
				t.Errorf("SCAN returned %s %d times, want once", k, seen[k])
			}
		}
		if len(seen) != n {
			t.Errorf("SCAN returned %d keys, want %d", len(seen), n)
		}
		// MATCH passes through to every master.
		f := c.ReadFrameAfterDo(t, "KEYS", "key:1??")
		if len(f.Elems) != 900-800 {
			t.Errorf("KEYS key:1?? returned %d keys, want 100", len(f.Elems))
		}
		wantReply(t, c, "-ERR invalid cursor\r\n", "SCAN", "abc")
		wantReply(t, c, "-ERR wrong number of arguments for 'scan' command\r\n", "SCAN")
		wantReply(t, c, "+OK\r\n", "FLUSHALL")
		wantReply(t, c, ":0\r\n", "DBSIZE")
		wantReply(t, c, "$-1\r\n", "RANDOMKEY")
		wantReply(t, c, "+OK\r\n", "SET", "only", "1")
		wantReply(t, c, "$4\r\nonly\r\n", "RANDOMKEY")
	})

	t.Run("crossslot-and-select-as-redis-cluster", func(t *testing.T) {
		c := DialRaw(t, p1.Addr)
		owner := DialRaw(t, cl.MasterForKey("a"))
		for _, args := range [][]string{
			{"MSET", "a", "1", "b", "2"},
			{"DEL", "a", "b", "c"},
			{"MGET", "a", "b"},
			{"SELECT", "1"},
			{"SELECT", "abc"},
			{"SELECT", "0"},
			{"SELECT", "99999999999"},
			{"MSET", "{t}a", "1", "{t}b", "2"},
			{"MGET", "{t}a", "{t}b", "{t}c"},
			{"EVAL", "return redis.call('GET', KEYS[1])", "1", "{t}a"},
			{"EVAL", "return 1", "2", "a", "b"},
			{"EVAL", "return 1", "0"},
		} {
			if args[0] == "MSET" && strings.HasPrefix(args[1], "{t}") || args[0] == "MGET" && strings.HasPrefix(args[1], "{t}") ||
				args[0] == "EVAL" && args[2] == "1" {
				owner = DialRaw(t, cl.MasterForKey("{t}"))
			}
			sameReply(t, owner, c, args...)
		}
		wantReply(t, c, "-CROSSSLOT Keys in request don't hash to the same slot\r\n", "MSET", "a", "1", "b", "2")
		wantReply(t, c, "-ERR SELECT is not allowed in cluster mode\r\n", "SELECT", "1")
	})

	// The set commands go to the master of their keys, SINTERCARD's
	// counted after its numkeys (a key spec oncekv's table has as
	// NumKeys, not as FirstKey).
	t.Run("sets-as-redis-cluster", func(t *testing.T) {
		c := DialRaw(t, p1.Addr)
		owner := DialRaw(t, cl.MasterForKey("{s}"))
		wantReply(t, c, ":3\r\n", "SADD", "{s}a", "1", "2", "3")
		wantReply(t, c, ":3\r\n", "SADD", "{s}b", "2", "3", "x")
		wantReply(t, c, ":2\r\n", "SINTERSTORE", "{s}d", "{s}a", "{s}b")
		wantReply(t, c, ":1\r\n", "SMOVE", "{s}a", "{s}d", "1")
		for _, args := range [][]string{
			{"SINTERCARD", "2", "{s}a", "{s}b"},
			{"SINTERCARD", "2", "{s}a", "{s}b", "LIMIT", "1"},
			{"SMEMBERS", "{s}d"},
			{"SCARD", "{s}d"},
			{"SDIFF", "{s}a", "{s}b"},
			{"OBJECT", "ENCODING", "{s}d"},
		} {
			sameReply(t, owner, c, args...)
		}
		// SINTERCARD goes to its keys' master at once, whatever slot they
		// are in: no MOVED to follow.
		moved := proxyInfoField(t, c, "proxy", "proxy_moved_redirections")
		for i := range 6 {
			tag := fmt.Sprintf("{s%d}", i)
			sameReply(t, DialRaw(t, cl.MasterForKey(tag)), c, "SINTERCARD", "2", tag+"a", tag+"b")
		}
		if got := proxyInfoField(t, c, "proxy", "proxy_moved_redirections"); got != moved {
			t.Errorf("SINTERCARD of keys in 6 slots: proxy_moved_redirections went from %s to %s", moved, got)
		}
		wantReply(t, c, "-CROSSSLOT Keys in request don't hash to the same slot\r\n", "SINTERCARD", "2", "a", "b")
	})
	// The sorted set commands that count their keys (ZUNION's numkeys)
	// go to the master of those keys, as the upstream's COMMAND GETKEYS
	// finds them; keys of two slots are CROSSSLOT at the proxy.
	t.Run("zset-numkeys-commands-go-to-their-keys", func(t *testing.T) {
		c := DialRaw(t, p1.Addr)
		owner := DialRaw(t, cl.MasterForKey("{z}"))
		wantReply(t, c, ":2\r\n", "ZADD", "{z}a", "1", "x", "2", "y")
		wantReply(t, c, ":1\r\n", "ZADD", "{z}b", "5", "y")
		for _, args := range [][]string{
			{"ZUNION", "2", "{z}a", "{z}b", "WITHSCORES"},
			{"ZINTER", "2", "{z}a", "{z}b", "WITHSCORES"},
			{"ZDIFF", "2", "{z}a", "{z}b"},
			{"ZINTERCARD", "2", "{z}a", "{z}b"},
			{"ZUNIONSTORE", "{z}d", "2", "{z}a", "{z}b"},
			{"ZRANGE", "{z}d", "0", "-1", "WITHSCORES"},
			{"ZRANGESTORE", "{z}e", "{z}a", "0", "-1"},
		} {
			sameReply(t, owner, c, args...)
		}
		wantReply(t, c, "*2\r\n$4\r\n{z}d\r\n*1\r\n*2\r\n$1\r\ny\r\n$1\r\n7\r\n", "ZMPOP", "2", "{z}none", "{z}d", "MAX")
		wantReply(t, c, "-CROSSSLOT Keys in request don't hash to the same slot\r\n", "ZUNION", "2", "a", "b")
	})

	// COPY, MOVE, SWAPDB and OBJECT go to the master of their keys (any
	// master for SWAPDB), which answers as Redis Cluster does: COPY in
	// one slot works, COPY … DB, MOVE and SWAPDB are refused there, and
	// keys of two slots are CROSSSLOT at the proxy.
	t.Run("copy-move-swapdb-object-as-redis-cluster", func(t *testing.T) {
		c := DialRaw(t, p1.Addr)
		owner := DialRaw(t, cl.MasterForKey("{c}"))
		wantReply(t, c, "+OK\r\n", "SET", "{c}a", "12")
		wantReply(t, c, ":1\r\n", "COPY", "{c}a", "{c}b")
		wantReply(t, c, ":0\r\n", "COPY", "{c}a", "{c}b")
		wantReply(t, c, ":1\r\n", "COPY", "{c}a", "{c}b", "REPLACE", "DB", "0")
		wantReply(t, c, "$2\r\n12\r\n", "GET", "{c}b")
		for _, args := range [][]string{
			{"COPY", "{c}a", "{c}d", "DB", "1"},
			{"MOVE", "{c}a", "1"},
			{"OBJECT", "ENCODING", "{c}a"},
			{"OBJECT", "REFCOUNT", "{c}a"},
			{"OBJECT", "FREQ", "{c}a"},
			{"OBJECT", "ENCODING", "{c}nokey"},
			{"SWAPDB", "0", "1"},
			{"SWAPDB", "0", "x"},
		} {
			sameReply(t, owner, c, args...)
		}
		wantReply(t, c, "-CROSSSLOT Keys in request don't hash to the same slot\r\n", "COPY", "a", "b")
		wantReply(t, c, "-ERR SWAPDB is not allowed in cluster mode\r\n", "SWAPDB", "0", "1")
		wantReply(t, c, "-ERR MOVE is not allowed in cluster mode\r\n", "MOVE", "{c}a", "1")
	})

	t.Run("pipeline-across-nodes-keeps-order", func(t *testing.T) {
		c := DialRaw(t, p2.Addr)
		var pipe []byte
		var want []string
		for i := 0; i < 300; i++ {
			k, v := "p:"+strconv.Itoa(i), "v"+strconv.Itoa(i)
			pipe = append(pipe, EncodeCommand("SET", k, v)...)
			pipe = append(pipe, EncodeCommand("GET", k)...)
			want = append(want, "+OK\r\n", "$"+strconv.Itoa(len(v))+"\r\n"+v+"\r\n")
			if i%50 == 0 {
				// Answered by the proxy itself, between forwarded replies.
				pipe = append(pipe, EncodeCommand("ECHO", "e"+strconv.Itoa(i))...)
				want = append(want, fmt.Sprintf("$%d\r\ne%d\r\n", len(strconv.Itoa(i))+1, i))
				pipe = append(pipe, EncodeCommand("MSET", "x", "1", "y", "2")...)
				want = append(want, "-CROSSSLOT Keys in request don't hash to the same slot\r\n")
			}
		}
		c.Send(pipe)
		for i, w := range want {
			if got := string(c.ReadReply()); got != w {
				t.Fatalf("reply %d: %q, want %q", i, got, w)
			}
		}
	})

	t.Run("multi-exec-pinned-to-one-node", func(t *testing.T) {
		c := DialRaw(t, p1.Addr)
		wantReply(t, c, "+OK\r\n", "MULTI")
		wantReply(t, c, "+QUEUED\r\n", "SET", "{u}a", "1")
		wantReply(t, c, "+QUEUED\r\n", "INCR", "{u}a")
		wantReply(t, c, "+QUEUED\r\n", "CLIENT", "SETNAME", "tx-client")
		wantReply(t, c, "+QUEUED\r\n", "GET", "{u}b")
		wantReply(t, c, "*4\r\n+OK\r\n:2\r\n+OK\r\n$-1\r\n", "EXEC")
		wantReply(t, c, "$9\r\ntx-client\r\n", "CLIENT", "GETNAME")

		// A key of another node: Redis Cluster's MOVED at queue time,
		// then EXECABORT; the same through the proxy as on the node.
		owner := cl.MasterForKey("{u}")
		var other string
		for _, m := range masters {
			if m != owner {
				other = m
				break
			}
		}
		far := keyOn(t, cl, other, "far")
		direct := DialRaw(t, owner)
		for _, args := range [][]string{{"MULTI"}, {"SET", "{u}a", "5"}, {"SET", far, "x"}, {"EXEC"}, {"GET", "{u}a"}} {
			sameReply(t, direct, c, args...)
		}
		// DISCARD gives the connection back; a new MULTI may go elsewhere.
		wantReply(t, c, "+OK\r\n", "MULTI")
		wantReply(t, c, "+QUEUED\r\n", "SET", far, "y")
		wantReply(t, c, "+OK\r\n", "DISCARD")
		wantReply(t, c, "$-1\r\n", "GET", far)
		wantReply(t, c, "+OK\r\n", "MULTI")
		wantReply(t, c, "-CROSSSLOT Keys in request don't hash to the same slot\r\n", "MSET", "a", "1", "b", "2")
		wantReply(t, c, "-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC")
		wantReply(t, c, "+OK\r\n", "MULTI")
		wantReply(t, c, "*0\r\n", "EXEC")
	})

	t.Run("watch-conflict-through-another-proxy", func(t *testing.T) {
		a, b := DialRaw(t, p1.Addr), DialRaw(t, p2.Addr)
		wantReply(t, a, "+OK\r\n", "SET", "w", "1")
		wantReply(t, a, "+OK\r\n", "WATCH", "w")
		wantReply(t, b, "+OK\r\n", "SET", "w", "2")
		wantReply(t, a, "+OK\r\n", "MULTI")
		wantReply(t, a, "+QUEUED\r\n", "SET", "w", "3")
		wantReply(t, a, "*-1\r\n", "EXEC")
		wantReply(t, a, "$1\r\n2\r\n", "GET", "w")
		// Between WATCH and MULTI, keys of other nodes are served as
		// usual (not -MOVED from the watching node).
		wantReply(t, a, "+OK\r\n", "WATCH", "w")
		owner := cl.MasterForKey("w")
		for _, m := range masters {
			if m != owner {
				k := keyOn(t, cl, m, "other")
				wantReply(t, a, "+OK\r\n", "SET", k, "x")
				wantReply(t, a, "$1\r\nx\r\n", "GET", k)
			}
		}
		wantReply(t, a, "+OK\r\n", "UNWATCH")
		// Without interference the same transaction commits.
		wantReply(t, a, "+OK\r\n", "WATCH", "w")
		wantReply(t, a, "+OK\r\n", "MULTI")
		wantReply(t, a, "+QUEUED\r\n", "SET", "w", "3")
		wantReply(t, a, "*1\r\n+OK\r\n", "EXEC")
		wantReply(t, b, "$1\r\n3\r\n", "GET", "w")
	})

	t.Run("ask-during-migration-moved-after", func(t *testing.T) {
		c := DialRaw(t, p1.Addr)
		key := "mig"
		src := cl.MasterForKey(key)
		var dst string
		for _, m := range masters {
			if m != src {
				dst = m
				break
			}
		}
		slot := DialRaw(t, src).ReadFrameAfterDo(t, "CLUSTER", "KEYSLOT", key)
		s := strconv.FormatInt(mustInt(t, slot), 10)
		srcID := DialRaw(t, src).ReadFrameAfterDo(t, "CLUSTER", "MYID").Str
		dstID := DialRaw(t, dst).ReadFrameAfterDo(t, "CLUSTER", "MYID").Str
		wantReply(t, c, "+OK\r\n", "SET", key, "moving")
		wantReply(t, c, "+OK\r\n", "SET", "{mig}stays", "here")
		moveBefore := proxyInfoField(t, c, "proxy", "proxy_moved_redirections")
		askBefore := proxyInfoField(t, c, "proxy", "proxy_ask_redirections")

		wantReply(t, DialRaw(t, dst), "+OK\r\n", "CLUSTER", "SETSLOT", s, "IMPORTING", srcID)
		wantReply(t, DialRaw(t, src), "+OK\r\n", "CLUSTER", "SETSLOT", s, "MIGRATING", dstID)
		host, port, _ := net.SplitHostPort(dst)
		wantReply(t, DialRaw(t, src), "+OK\r\n", "MIGRATE", host, port, "", "0", "5000", "KEYS", key)
		// The slot is half moved: the proxy's map still says src, which
		// answers ASK for the key that left.
		wantReply(t, c, "$6\r\nmoving\r\n", "GET", key)
		wantReply(t, c, "$4\r\nhere\r\n", "GET", "{mig}stays")
		if got := proxyInfoField(t, c, "proxy", "proxy_ask_redirections"); got == askBefore {
			t.Errorf("proxy_ask_redirections still %s after a GET of a migrated key", got)
		}
		wantReply(t, DialRaw(t, src), "+OK\r\n", "MIGRATE", host, port, "", "0", "5000", "KEYS", "{mig}stays")
		refreshes := proxyInfoField(t, c, "proxy", "proxy_topology_refreshes")
		for _, m := range masters {
			wantReply(t, DialRaw(t, m), "+OK\r\n", "CLUSTER", "SETSLOT", s, "NODE", dstID)
		}
		// The slot moved: src answers MOVED, which the proxy follows (and
		// then routes the slot to dst).
		wantReply(t, c, "$6\r\nmoving\r\n", "GET", key)
		wantReply(t, c, "$4\r\nhere\r\n", "GET", "{mig}stays")
		wantReply(t, DialRaw(t, p2.Addr), "$6\r\nmoving\r\n", "GET", key)
		if got := proxyInfoField(t, c, "proxy", "proxy_moved_redirections"); got == moveBefore {
			// Only the periodic refresh (every 5 s) may beat the GET to
			// it, and then the map already pointed to dst.
			if proxyInfoField(t, c, "proxy", "proxy_topology_refreshes") == refreshes {
				t.Errorf("the GET after the move found the key without a MOVED nor a refresh")
			}
		}
		if owner := cl.MasterForKey(key); owner != dst {
			t.Errorf("the slot is served by %s, want %s", owner, dst)
		}
	})
}

func mustInt(tb testing.TB, f *Frame) int64 {
	tb.Helper()
	n, ok := f.Int()
	if !ok {
		tb.Fatalf("not an integer: %q", f.Raw)
	}
	return n
}

// TestProxyOnceStress is the ONCE stress (see once_stress_test.go) with
// its workers spread over two proxy instances sharing one upstream, a
// redis-server or a Redis Cluster: the same history checks (one runner at
// a time with growing tokens, leases held to their deadline, one answer
// per window, no stuck waiter) hold across instances.
func TestProxyOnceStress(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"standalone", "cluster"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var up string
			if mode == "cluster" {
				up = clusterUpstream(testredis.StartCluster(t, 3, 0))
			} else {
				up = "redis://" + testredis.Standalone(t).Addr()
			}
			p1, p2 := startProxy(t, up), startProxy(t, up)
			const workers, keys = 24, 3
			var clients []*redis.Client
			for i, addr := range []string{p1.Addr, p2.Addr, p1.Addr, p2.Addr} {
				clients = append(clients, onceClient(t, addr, 2+i/2, func(o *redis.Options) { o.PoolSize = workers + 4 }))
			}
			// More aborts (40%) and fewer keys than in TestOnceStress, so
			// that ABORTs find claim waiters to tell "failed" (KV-12) often
			// enough for checkStress's coverage check in a few seconds.
			all := runOnceStress(clients, workers, keys, 40, 3*time.Second)
			checkStress(t, all)
			ctx := grCtx(t, 5*time.Second)
			for _, c := range clients[:2] {
				waitFor(t, 3*time.Second, 10*time.Millisecond, "no waiting clients after the stress", func() (bool, string) {
					s, err := c.Info(ctx, "once").Result()
					if err != nil {
						return false, err.Error()
					}
					v := infoField(s, "waiting_clients")
					return v == "0", "waiting_clients = " + v
				})
			}
		})
	}
}

// TestProxyClusterFailover: a master of a cluster with replicas dies; once
// a replica took over, the proxy routes its slots to the new master
// without a restart, and every key written before is read back.
func TestProxyClusterFailover(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t, 3, 1)
	p := startProxy(t, clusterUpstream(cl))
	c := DialRaw(t, p.Addr)
	const n = 200
	var pipe []byte
	for i := 0; i < n; i++ {
		pipe = append(pipe, EncodeCommand("SET", "f:"+strconv.Itoa(i), strconv.Itoa(i))...)
	}
	c.Send(pipe)
	for i := 0; i < n; i++ {
		if r := c.ReadReply(); string(r) != "+OK\r\n" {
			t.Fatalf("SET %d: %q", i, r)
		}
	}
	dead := cl.MasterForKey("f:0")
	// WAIT through the proxy: every master's replica has the writes
	// before one master dies.
	wantReply(t, c, ":1\r\n", "WAIT", "1", "5000")
	cl.KillNode(dead)
	if err := cl.WaitFailover(dead, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; i < n; {
		k := "f:" + strconv.Itoa(i)
		r := c.Do("GET", k)
		if want := fmt.Sprintf("$%d\r\n%d\r\n", len(strconv.Itoa(i)), i); string(r) == want {
			i++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s after the failover: %q", k, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if m := proxyInfoField(t, c, "proxy", "proxy_cluster_masters"); strings.Contains(m, dead) {
		t.Errorf("the proxy still routes to the dead master %s: %s", dead, m)
	}
	// WAIT's own write (a key with a 1 s expiry on each master) counts in
	// DBSIZE until it expires; the new master may have it, replicated.
	want := ":" + strconv.Itoa(n) + "\r\n"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r := c.Do("DBSIZE")
		if string(r) == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("DBSIZE = %q, want %q", r, want)
		}
	}
}

// TestProxyClusterHostnames: nodes that announce host names (Redis 7's
// cluster-announce-hostname, as in docker-compose) are reached by name,
// for routing, redirections and fan-outs alike.
func TestProxyClusterHostnames(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t, 3, 0, "--cluster-announce-hostname", "localhost", "--cluster-preferred-endpoint-type", "hostname")
	p := startProxy(t, clusterUpstream(cl))
	c := DialRaw(t, p.Addr)
	if m := proxyInfoField(t, c, "proxy", "proxy_cluster_masters"); strings.Count(m, "localhost:") != 3 {
		t.Fatalf("proxy_cluster_masters = %q, want three localhost:port", m)
	}
	for i := 0; i < 50; i++ {
		k := "h:" + strconv.Itoa(i)
		wantReply(t, c, "+OK\r\n", "SET", k, "v")
		wantReply(t, c, "$1\r\nv\r\n", "GET", k)
	}
	wantReply(t, c, ":50\r\n", "DBSIZE")
	f := c.ReadFrameAfterDo(t, "KEYS", "h:*")
	if len(f.Elems) != 50 {
		t.Errorf("KEYS h:* returned %d keys, want 50", len(f.Elems))
	}
}

// TestProxyComposeExample validates examples/cluster/docker-compose.yml
// with docker-compose (no engine needed): both passwords are required, the
// two oncekv services are proxies whose --upstream names the three nodes,
// start after the cluster is created, and build the repository's image.
func TestProxyComposeExample(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatal("docker-compose not found: install it with `apt-get install -y docker-compose` (./test.sh does)")
	}
	file := repoFile(t, "examples/cluster/docker-compose.yml")
	run := func(env []string, args ...string) (string, string, error) {
		cmd := exec.Command(bin, append([]string{"-f", file}, args...)...)
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "REDIS_PASSWORD=") && !strings.HasPrefix(kv, "ONCEKV_PASSWORD=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, env...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	both := []string{"REDIS_PASSWORD=node-pw", "ONCEKV_PASSWORD=client-pw"}
	if _, stderr, err := run(both, "config", "-q"); err != nil {
		t.Fatalf("docker-compose config -q: %v\n%s", err, stderr)
	}
	for _, env := range [][]string{{"REDIS_PASSWORD=x"}, {"ONCEKV_PASSWORD=y"}} {
		if _, _, err := run(env, "config", "-q"); err == nil {
			t.Errorf("docker-compose config with only %v: accepted, want both passwords required", env)
		}
	}
	yml, stderr, err := run(both, "config")
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, stderr)
	}
	conv := exec.Command("python3", "-c", "import json, sys, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)")
	conv.Stdin = strings.NewReader(yml)
	js, err := conv.Output()
	if err != nil {
		t.Fatalf("converting to JSON needs python3-yaml: %v", err)
	}
	var cf composeFile
	if err := json.Unmarshal(js, &cf); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"redis-1", "redis-2", "redis-3", "cluster-create"} {
		if _, ok := cf.Services[name]; !ok {
			t.Errorf("no service %s", name)
		}
	}
	// No password on a command line (the process list) or in a health
	// check's arguments: they come from the environment.
	noPassword := func(name, what string, args []string) {
		for _, a := range args {
			if strings.Contains(a, "node-pw") || strings.Contains(a, "client-pw") {
				t.Errorf("%s: a password in its %s: %q", name, what, args)
				return
			}
		}
	}
	for _, name := range []string{"redis-1", "redis-2", "redis-3"} {
		s := cf.Services[name]
		if s.Environment["REDISCLI_AUTH"] != "node-pw" {
			t.Errorf("%s: REDISCLI_AUTH %q, want REDIS_PASSWORD (for the health check's redis-cli)", name, s.Environment["REDISCLI_AUTH"])
		}
		noPassword(name, "health check", s.Healthcheck.Test)
		if h := strings.Join(s.Healthcheck.Test, " "); strings.Contains(h, " -a ") || !strings.Contains(h, "redis-cli") {
			t.Errorf("%s: health check %q", name, h)
		}
		if c := strings.Join(s.Command, " "); !strings.Contains(c, "--maxmemory-policy noeviction") {
			t.Errorf("%s: no maxmemory-policy noeviction: %q", name, c)
		}
	}
	for _, name := range []string{"oncekv-1", "oncekv-2"} {
		s, ok := cf.Services[name]
		if !ok {
			t.Errorf("no service %s", name)
			continue
		}
		if up := s.Environment["ONCEKV_UPSTREAM"]; up != "redis-cluster://:node-pw@redis-1:6379,redis-2:6379,redis-3:6379" {
			t.Errorf("%s: ONCEKV_UPSTREAM %q", name, up)
		}
		if pw := s.Environment["ONCEKV_REQUIREPASS"]; pw != "client-pw" {
			t.Errorf("%s: ONCEKV_REQUIREPASS %q, want ONCEKV_PASSWORD", name, pw)
		}
		noPassword(name, "command", s.Command)
		noPassword(name, "health check", s.Healthcheck.Test)
		if s.DependsOn["cluster-create"].Condition != "service_completed_successfully" {
			t.Errorf("%s: depends_on %v, want cluster-create completed", name, s.DependsOn)
		}
		if s.Build.Target != "oncekv" {
			t.Errorf("%s: build target %q", name, s.Build.Target)
		}
	}
	// The address the proxies get is one oncekv accepts.
	o := startProxy(t, "redis-cluster://:node-pw@127.0.0.1:1,127.0.0.1:2")
	if got := DialRaw(t, o.Addr).Do("PING"); string(got) != "+PONG\r\n" {
		t.Errorf("a proxy whose cluster is not up yet still answers PING: %q", got)
	}
}
