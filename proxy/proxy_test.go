package proxy

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncekv/oncekv/commands"
	"github.com/oncekv/oncekv/internal/testredis"
	"github.com/oncekv/oncekv/proxy/onceup"
	"github.com/oncekv/oncekv/resp"
)

// testProxy is a proxy served in this process on a free loopback port.
type testProxy struct {
	*Proxy
	addr string
	srv  *resp.Server
}

// startTestProxy serves a proxy of upstream (an --upstream address) with
// requirepass pass ("" for none); tb.Cleanup closes it.
func startTestProxy(tb testing.TB, upstream, pass string) *testProxy {
	tb.Helper()
	up, err := ParseUpstream(upstream)
	if err != nil {
		tb.Fatal(err)
	}
	local := commands.New(commands.Config{RequirePass: pass}, nil)
	p := New(Config{Upstream: up, Local: local, RequirePass: pass, RefreshInterval: 200 * time.Millisecond})
	srv := resp.NewServer(resp.Config{Addrs: []string{"127.0.0.1:0"}, RequirePass: pass != ""}, p)
	local.Attach(srv)
	if err := p.Start(); err != nil {
		tb.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		srv.Close()
		p.Close()
	})
	return &testProxy{Proxy: p, addr: srv.Addrs()[0].String(), srv: srv}
}

// rawClient is a minimal RESP client returning raw replies.
type rawClient struct {
	tb testing.TB
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(tb testing.TB, addr string) *rawClient {
	tb.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { nc.Close() })
	return &rawClient{tb: tb, nc: nc, br: bufio.NewReader(nc)}
}

func (c *rawClient) send(cmds ...[]string) {
	c.tb.Helper()
	var out []byte
	for _, args := range cmds {
		out = appendCommand(out, bs(args...)...)
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(out); err != nil {
		c.tb.Fatal(err)
	}
}

func (c *rawClient) read() string {
	c.tb.Helper()
	r, err := c.tryRead()
	if err != nil {
		c.tb.Fatalf("read: %v", err)
	}
	return r
}

// tryRead reads one reply, or the error that ended the read (the server
// closed the connection: io.EOF or a reset).
func (c *rawClient) tryRead() (string, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	r, err := readReply(c.br, nil)
	return string(r), err
}

func (c *rawClient) do(args ...string) string {
	c.tb.Helper()
	c.send(args)
	return c.read()
}

// pipeline sends cmds in one write and returns the replies.
func (c *rawClient) pipeline(cmds ...[]string) []string {
	c.tb.Helper()
	c.send(cmds...)
	out := make([]string, len(cmds))
	for i := range cmds {
		out[i] = c.read()
	}
	return out
}

// A pipeline mixing forwarded commands, commands the proxy answers itself
// and database switches gets, in order, exactly the replies a redis-server
// gives to the same pipeline (KV-7: each client's database).
func TestPipelineSameAsRedis(t *testing.T) {
	t.Parallel()
	direct, upstream := testredis.Standalone(t), testredis.Standalone(t)
	p := startTestProxy(t, "redis://"+upstream.Addr(), "")
	script := [][]string{
		{"SET", "a", "1"}, {"SELECT", "1"}, {"SET", "a", "2"}, {"GET", "a"}, {"PING"}, {"ECHO", "x"},
		{"RPUSH", "l", "x", "y"}, {"LRANGE", "l", "0", "-1"}, {"SELECT", "0"}, {"GET", "a"},
		{"DBSIZE"}, {"HSET", "h", "f", "v"}, {"HGETALL", "h"}, {"INCRBYFLOAT", "n", "1.5"},
		{"SELECT", "99"}, {"GET", "a"}, {"NOSUCH", "x"}, {"SET", "a"}, {"MULTI"}, {"SELECT", "1"},
		{"INCR", "a"}, {"EXEC"}, {"GET", "a"}, {"SELECT", "0"}, {"GET", "a"}, {"PING", "done"},
	}
	for _, proto := range []string{"2", "3"} {
		var got [2][]string
		for i, addr := range []string{direct.Addr(), p.addr} {
			c := dialRaw(t, addr)
			c.do("FLUSHALL")
			c.do("HELLO", proto)
			got[i] = c.pipeline(script...)
		}
		for i := range script {
			if got[0][i] != got[1][i] {
				t.Errorf("RESP%s %v: redis %q, proxy %q", proto, script[i], got[0][i], got[1][i])
			}
		}
	}
}

// Many clients, pipelining through one proxy, in RESP2 and RESP3: every
// INCR counts exactly once (KV-1) and every client reads its own writes,
// in its own database.
func TestConcurrentClients(t *testing.T) {
	t.Parallel()
	up := testredis.Standalone(t)
	p := startTestProxy(t, "redis://"+up.Addr(), "")
	const clients, rounds, batch = 12, 40, 10
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rc := redis.NewClient(&redis.Options{Addr: p.addr, Protocol: 2 + i%2, DB: i % 3, PoolSize: 1})
			defer rc.Close()
			ctx := context.Background()
			for r := 0; r < rounds; r++ {
				pipe := rc.Pipeline()
				own := fmt.Sprintf("own:%d", i)
				for b := 0; b < batch; b++ {
					pipe.Incr(ctx, "counter")
				}
				pipe.Set(ctx, own, r, 0)
				get := pipe.Get(ctx, own)
				if _, err := pipe.Exec(ctx); err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
					return
				}
				if get.Val() != strconv.Itoa(r) {
					errs <- fmt.Errorf("client %d round %d read %q", i, r, get.Val())
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Each database got the INCRs of its clients.
	uc := up.Client()
	total := int64(0)
	for db := 0; db < 3; db++ {
		c := redis.NewClient(&redis.Options{Addr: up.Addr(), DB: db})
		n, err := c.Get(context.Background(), "counter").Int64()
		c.Close()
		if err != nil {
			t.Fatalf("db %d: %v", db, err)
		}
		if want := int64(clients / 3 * rounds * batch); n != want {
			t.Errorf("db %d: counter %d, want %d", db, n, want)
		}
		total += n
	}
	_ = uc
	if st := p.stats.dials.Load(); st > clients*3 {
		t.Errorf("%d upstream connections dialed for %d clients: the pool is not reused", st, clients)
	}
}

// A transaction runs on one pinned upstream connection; WATCH sees a
// change made by another client through the same proxy.
func TestWatchThroughTheProxy(t *testing.T) {
	t.Parallel()
	up := testredis.Standalone(t)
	p := startTestProxy(t, "redis://"+up.Addr(), "")
	a, b := dialRaw(t, p.addr), dialRaw(t, p.addr)
	for _, step := range []struct {
		c    *rawClient
		args []string
		want string
	}{
		{a, []string{"SET", "w", "1"}, "+OK\r\n"},
		{a, []string{"WATCH", "w"}, "+OK\r\n"},
		{b, []string{"INCR", "w"}, ":2\r\n"},
		{a, []string{"MULTI"}, "+OK\r\n"},
		{a, []string{"INCR", "w"}, "+QUEUED\r\n"},
		{a, []string{"EXEC"}, "*-1\r\n"},
		{a, []string{"GET", "w"}, "$1\r\n2\r\n"},
		{a, []string{"WATCH", "w"}, "+OK\r\n"},
		{a, []string{"UNWATCH"}, "+OK\r\n"},
		{b, []string{"INCR", "w"}, ":3\r\n"},
		{a, []string{"MULTI"}, "+OK\r\n"},
		{a, []string{"INCR", "w"}, "+QUEUED\r\n"},
		{a, []string{"ONCE.STATUS", "w"}, "-ERR ONCE commands cannot be queued in MULTI through the oncekv proxy (run them outside the transaction)\r\n"},
		{a, []string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{a, []string{"GET", "w"}, "$1\r\n3\r\n"},
		{a, []string{"MULTI"}, "+OK\r\n"},
		{a, []string{"SUBSCRIBE", "ch"}, "-ERR 'subscribe' cannot be queued in MULTI through the oncekv proxy (subscribe outside the transaction)\r\n"},
		{a, []string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
	} {
		if got := step.c.do(step.args...); got != step.want {
			t.Errorf("%v: %q, want %q", step.args, got, step.want)
		}
	}
	if n := p.stats.pinned.Load(); n != 0 {
		t.Errorf("%d connections still pinned after the transactions ended", n)
	}
}

// An upstream that dies gives errors, not hangs; once it is back, the
// proxy works again without a restart.
func TestUpstreamRestart(t *testing.T) {
	t.Parallel()
	up := testredis.Standalone(t)
	p := startTestProxy(t, "redis://"+up.Addr(), "")
	c := dialRaw(t, p.addr)
	if got := c.do("SET", "k", "v"); got != "+OK\r\n" {
		t.Fatalf("SET: %q", got)
	}
	up.Kill()
	got := c.do("GET", "k")
	if !strings.HasPrefix(got, "-ERR upstream ") {
		t.Errorf("GET with the upstream down: %q, want -ERR upstream …", got)
	}
	if got := c.do("PING"); got != "+PONG\r\n" {
		t.Errorf("PING is the proxy's own: %q", got)
	}
	up.Restart()
	if got := c.do("SET", "k", "again"); got != "+OK\r\n" {
		t.Errorf("SET after the restart: %q", got)
	}
	if got := c.do("GET", "k"); got != "$5\r\nagain\r\n" {
		t.Errorf("GET after the restart: %q", got)
	}
	// A restart while the proxy's connections sit idle (no command fails
	// to tell it): a connection idle that long is checked before use, so
	// the next command normally works at once. The check is a peek at the
	// socket and can race with the upstream's restart (seen once in about
	// 20 runs under load): then one command gets "-ERR upstream …" (never
	// retried: it may have run) and the one after it must work.
	time.Sleep(checkIdleAfter + 150*time.Millisecond)
	up.Kill()
	up.Restart()
	got = c.do("SET", "k", "third")
	if strings.HasPrefix(got, "-ERR upstream ") {
		t.Logf("first SET after a quiet restart: %q", got)
		got = c.do("SET", "k", "third")
	}
	if got != "+OK\r\n" {
		t.Errorf("SET after a quiet restart: %q", got)
	}
}

// A blocking command waits without holding up other clients; when its
// client disconnects, the upstream connection is closed, so the upstream
// does not keep a blocked client for nobody.
func TestBlockingCommands(t *testing.T) {
	t.Parallel()
	up := testredis.Standalone(t)
	p := startTestProxy(t, "redis://"+up.Addr(), "")
	waiter, pusher := dialRaw(t, p.addr), dialRaw(t, p.addr)
	waiter.send([]string{"BLPOP", "q", "0"})
	upc := up.Client()
	ctx := context.Background()
	blocked := func() int {
		n := 0
		list, _ := upc.ClientList(ctx).Result()
		for _, line := range strings.Split(list, "\n") {
			if strings.Contains(line, "cmd=blpop") && strings.Contains(line, "flags=b") {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(5 * time.Second)
	for blocked() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the BLPOP never reached the upstream")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := pusher.do("PING"); got != "+PONG\r\n" {
		t.Fatalf("another client while one blocks: %q", got)
	}
	if got := pusher.do("RPUSH", "q", "job"); got != ":1\r\n" {
		t.Fatalf("RPUSH: %q", got)
	}
	if got := waiter.read(); got != "*2\r\n$1\r\nq\r\n$3\r\njob\r\n" {
		t.Errorf("BLPOP: %q", got)
	}
	// A waiter that goes away.
	gone := dialRaw(t, p.addr)
	gone.send([]string{"BLPOP", "q2", "0"})
	for blocked() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the second BLPOP never reached the upstream")
		}
		time.Sleep(10 * time.Millisecond)
	}
	gone.nc.Close()
	deadline = time.Now().Add(5 * time.Second)
	for blocked() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the upstream still has a blocked client after the proxy's client left")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := pusher.do("RPUSH", "q2", "x"); got != ":1\r\n" {
		t.Errorf("RPUSH q2: %q (the abandoned BLPOP must not have taken it)", got)
	}
}

// Clients that leave with replies still owed do not leak upstream
// connections: those are closed, the others pooled.
func TestClientsLeavingMidPipeline(t *testing.T) {
	t.Parallel()
	up := testredis.Standalone(t)
	p := startTestProxy(t, "redis://"+up.Addr(), "")
	for i := 0; i < 20; i++ {
		c := dialRaw(t, p.addr)
		var cmds [][]string
		for j := 0; j < 200; j++ {
			cmds = append(cmds, []string{"SET", "k" + strconv.Itoa(j), strings.Repeat("v", 100)})
		}
		c.send(cmds...)
		c.nc.Close()
	}
	c := dialRaw(t, p.addr)
	if got := c.do("SET", "after", "1"); got != "+OK\r\n" {
		// Once seen in a full CI run (not reproduced alone): the
		// upstream refused the proxy's dial. Say whether it was alive.
		t.Fatalf("SET: %q (upstream alive: %v; its log:\n%s)", got, up.Alive(), up.Log())
	}
	// Every connection the proxy has open is idle in its pool, and the
	// upstream sees no other connection of the proxy's.
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.liveMu.Lock()
		live := len(p.live)
		p.liveMu.Unlock()
		idle := 0
		p.nodesMu.Lock()
		for _, n := range p.nodes {
			n.mu.Lock()
			idle += len(n.idle[0]) + len(n.idle[1])
			n.mu.Unlock()
		}
		p.nodesMu.Unlock()
		list, _ := up.Client().ClientList(context.Background()).Result()
		upstream := strings.Count(list, "name=oncekv-proxy ")
		if live == idle && upstream == live {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d upstream connections open, %d idle, %d seen by the upstream, after the clients left", live, idle, upstream)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The proxy's requirepass is its own: the upstream's password, given in
// the address, is never asked of clients.
func TestAuth(t *testing.T) {
	t.Parallel()
	up := testredis.Standalone(t, "--requirepass", "up-secret")
	p := startTestProxy(t, "redis://:up-secret@"+up.Addr(), "proxy-secret")
	c := dialRaw(t, p.addr)
	for _, step := range [][2]string{
		{"GET k", "-NOAUTH Authentication required.\r\n"},
		{"LPUSH l x", "-NOAUTH Authentication required.\r\n"},
		{"AUTH up-secret", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"AUTH proxy-secret", "+OK\r\n"},
		{"LPUSH l x", ":1\r\n"},
	} {
		if got := c.do(strings.Fields(step[0])...); got != step[1] {
			t.Errorf("%s: %q, want %q", step[0], got, step[1])
		}
	}
	bad := startTestProxy(t, "redis://:wrong@"+up.Addr(), "")
	if got := dialRaw(t, bad.addr).do("GET", "k"); !strings.Contains(got, "upstream handshake refused") {
		t.Errorf("a wrong upstream password: %q", got)
	}
}

// Sentinel: the proxy forwards to the master the sentinels name, and
// follows a failover (SENTINEL FAILOVER: the old master stays up, demoted
// to a replica). So does the ONCE engine's subscription: a caller waiting
// across the failover is woken by the completion on the new master.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a sentinel and waits for a failover")
	}
	master := testredis.Standalone(t, "--repl-diskless-sync-delay", "0")
	replica := testredis.Standalone(t, "--replicaof", "127.0.0.1", portOf(t, master.Addr()), "--repl-diskless-sync-delay", "0")
	sentinel := startSentinel(t, master.Addr())
	p := startTestProxyOnce(t, "redis-sentinel://"+sentinel+"/mymaster")
	c := dialRaw(t, p.addr)
	if got := c.do("SET", "k", "1"); got != "+OK\r\n" {
		t.Fatalf("SET: %q", got)
	}
	// A run claimed before the failover, and a caller waiting for it.
	claim := c.do("ONCE.CLAIM", "job", "LEASE", "60000")
	if !strings.HasPrefix(claim, "*2\r\n$7\r\nclaimed\r\n:") {
		t.Fatalf("ONCE.CLAIM: %q", claim)
	}
	tok := strings.TrimPrefix(strings.Split(claim, "\r\n")[3], ":")
	waiter := dialRaw(t, p.addr)
	waiter.send([]string{"ONCE.CLAIM", "job", "WAIT", "50000"})
	ch := onceup.Channel(onceup.Slot([]byte("job")), 0)
	shardSubs := func(addr string) int64 {
		rc := redis.NewClient(&redis.Options{Addr: addr})
		defer rc.Close()
		v, err := rc.Do(context.Background(), "pubsub", "shardnumsub", ch).Slice()
		if err != nil || len(v) != 2 {
			return -1
		}
		return v[1].(int64)
	}
	for deadline := time.Now().Add(5 * time.Second); shardSubs(master.Addr()) != 1; {
		if time.Now().After(deadline) {
			t.Fatal("the waiter's subscription is not on the master")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if m := p.master.Load(); m == nil || m.addr != master.Addr() {
		t.Fatalf("the proxy forwards to %v, want the master %s", m, master.Addr())
	}
	// Wait until the replica has the write and the sentinel knows it.
	ctx := context.Background()
	deadline := time.Now().Add(15 * time.Second)
	for {
		v, _ := replica.Client().Get(ctx, "k").Result()
		reps, _ := redis.NewSentinelClient(&redis.Options{Addr: sentinel}).Replicas(ctx, "mymaster").Result()
		if v == "1" && len(reps) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica not ready: %q, %d replicas known", v, len(reps))
		}
		time.Sleep(50 * time.Millisecond)
	}
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinel})
	defer sc.Close()
	// The sentinel may not judge the replica fit yet (NOGOODSLAVE): retry.
	for {
		err := sc.Failover(ctx, "mymaster").Err()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SENTINEL FAILOVER: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		// Each try starts from k = 1 on whichever master the proxy uses
		// now, so a write that went to the old master (or an INCR that
		// was not undone) cannot keep the answer away from 2.
		c.do("SET", "k", "1")
		got := c.do("INCR", "k")
		if m := p.master.Load(); got == ":2\r\n" && m.addr == replica.Addr() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the failover: INCR %q, the proxy forwards to %s, want %s", got, p.master.Load().addr, replica.Addr())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The subscription moved to the new master (within a few sweeps; the
	// sentinels themselves kill the demoted master's Pub/Sub clients only
	// when they reconfigure it, some 10 s later), and the completion there
	// reaches the waiter at once (not at its 60 s lease).
	for deadline = time.Now().Add(4 * time.Second); shardSubs(replica.Addr()) != 1; {
		if time.Now().After(deadline) {
			t.Fatalf("the ONCE subscription did not follow the failover: %d on the new master, %d on the old",
				shardSubs(replica.Addr()), shardSubs(master.Addr()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := c.do("ONCE.COMPLETE", "job", tok, "after-failover"); got != "+OK\r\n" {
		t.Fatalf("ONCE.COMPLETE on the new master: %q", got)
	}
	if got := waiter.read(); got != "*2\r\n$4\r\ndone\r\n$14\r\nafter-failover\r\n" {
		t.Fatalf("the waiter got %q", got)
	}
}

// startTestProxyOnce is startTestProxy with a ONCE engine (onceup), wired
// as the app wires it: for Sentinel, its subscriptions follow the master
// the proxy resolves.
func startTestProxyOnce(tb testing.TB, upstream string) *testProxy {
	tb.Helper()
	up, err := ParseUpstream(upstream)
	if err != nil {
		tb.Fatal(err)
	}
	local := commands.New(commands.Config{}, nil)
	p := New(Config{Upstream: up, Local: local, RefreshInterval: 200 * time.Millisecond})
	client := up.Client()
	cfg := onceup.Config{}
	if up.Mode == Sentinel {
		cfg.MasterAddr = p.MasterAddr
	}
	e := onceup.New(client, cfg)
	p.SetOnce(e)
	srv := resp.NewServer(resp.Config{Addrs: []string{"127.0.0.1:0"}}, p)
	local.Attach(srv)
	if err := p.Start(); err != nil {
		tb.Fatal(err)
	}
	if err := e.Start(); err != nil {
		tb.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		srv.Close()
		e.Close()
		p.Close()
		client.Close()
	})
	return &testProxy{Proxy: p, addr: srv.Addrs()[0].String(), srv: srv}
}

func portOf(tb testing.TB, addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		tb.Fatal(err)
	}
	return port
}

// startSentinel runs redis-server --sentinel monitoring master as
// mymaster, with short timeouts; it returns its address.
func startSentinel(tb testing.TB, master string) string {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Skip("redis-server not installed")
	}
	host, port, _ := net.SplitHostPort(master)
	for attempt := 0; attempt < 5; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		sport := l.Addr().(*net.TCPAddr).Port
		l.Close()
		dir := tb.TempDir()
		conf := filepath.Join(dir, "sentinel.conf")
		body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor mymaster %s %s 1\n"+
			"sentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 5000\n", sport, dir, host, port)
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			tb.Fatal(err)
		}
		cmd := exec.Command(bin, conf, "--sentinel")
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		tb.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-done
		})
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sport))
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if nc, err := net.Dial("tcp", addr); err == nil {
				nc.Close()
				return addr
			}
			select {
			case <-done:
				deadline = time.Time{}
			default:
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	tb.Fatal("redis sentinel did not start")
	return ""
}

// HELLO switching the protocol between WATCH and EXEC cannot keep the
// upstream's WATCH (it lives on a connection of the old protocol): the
// EXEC then fails as if a watched key changed, never commits unwatched.
func TestHelloBetweenWatchAndExec(t *testing.T) {
	t.Parallel()
	up := testredis.Standalone(t)
	p := startTestProxy(t, "redis://"+up.Addr(), "")
	c := dialRaw(t, p.addr)
	for _, step := range [][2]string{
		{"SET w 1", "+OK\r\n"},
		{"WATCH w", "+OK\r\n"},
		{"MULTI", "+OK\r\n"},
		{"INCR w", "+QUEUED\r\n"},
		{"EXEC", "*1\r\n:2\r\n"},
		{"WATCH w", "+OK\r\n"},
		{"HELLO 3", ""},
		{"MULTI", "+OK\r\n"},
		{"INCR w", "+QUEUED\r\n"},
		{"EXEC", "_\r\n"},
		{"GET w", "$1\r\n2\r\n"},
		{"WATCH w", "+OK\r\n"},
		{"MULTI", "+OK\r\n"},
		{"INCR w", "+QUEUED\r\n"},
		{"EXEC", "*1\r\n:3\r\n"},
	} {
		got := c.do(strings.Fields(step[0])...)
		if step[1] != "" && got != step[1] {
			t.Errorf("%s: %q, want %q", step[0], got, step[1])
		}
	}
}

// WAIT counts the replicas that have the client's earlier writes, although
// they went through other upstream connections: with the replica stopped
// (SIGSTOP), WAIT 1 times out with 0; running, it answers 1.
func TestWaitCountsTheClientsWrites(t *testing.T) {
	t.Parallel()
	master := testredis.Standalone(t, "--repl-diskless-sync-delay", "0")
	replica := testredis.Standalone(t, "--replicaof", "127.0.0.1", portOf(t, master.Addr()))
	p := startTestProxy(t, "redis://"+master.Addr(), "")
	c := dialRaw(t, p.addr)
	deadline := time.Now().Add(10 * time.Second)
	for c.do("SET", "k", "1") != "+OK\r\n" || c.do("WAIT", "1", "100") != ":1\r\n" {
		if time.Now().After(deadline) {
			t.Fatal("the replica never acknowledged")
		}
		time.Sleep(50 * time.Millisecond)
	}
	pid := processID(t, replica.Addr())
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGCONT)
	if got := c.do("SET", "k", "2"); got != "+OK\r\n" {
		t.Fatalf("SET: %q", got)
	}
	// Another client takes the connection the SET went through (the pool
	// hands out the last one back), so WAIT runs on a fresh one: without
	// the proxy's own write first, its WAIT would count the replica.
	b := dialRaw(t, p.addr)
	b.send([]string{"BLPOP", "q", "0"})
	for !strings.Contains(clientList(t, master.Addr()), "cmd=blpop") {
		if time.Now().After(deadline) {
			t.Fatal("the BLPOP never reached the master")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	if got := c.do("WAIT", "1", "300"); got != ":0\r\n" {
		t.Errorf("WAIT 1 300 with the replica stopped: %q, want :0 (the write is not on it)", got)
	}
	if el := time.Since(start); el < 250*time.Millisecond {
		t.Errorf("WAIT returned after %v, before its timeout", el)
	}
	syscall.Kill(pid, syscall.SIGCONT)
	if got := c.do("WAIT", "1", "5000"); got != ":1\r\n" {
		t.Errorf("WAIT 1 with the replica back: %q", got)
	}
	if got := c.do("RPUSH", "q", "x"); got != ":1\r\n" {
		t.Errorf("RPUSH: %q", got)
	}
	if got := b.read(); got != "*2\r\n$1\r\nq\r\n$1\r\nx\r\n" {
		t.Errorf("BLPOP: %q", got)
	}
	if got := c.do("WAIT", "1"); !strings.HasPrefix(got, "-ERR wrong number of arguments") {
		t.Errorf("WAIT 1: %q", got)
	}
}

// clientList is CLIENT LIST of the server at addr.
func clientList(tb testing.TB, addr string) string {
	tb.Helper()
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	s, err := rc.ClientList(context.Background()).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// processID is the pid a redis-server reports.
func processID(tb testing.TB, addr string) int {
	tb.Helper()
	info, err := redis.NewClient(&redis.Options{Addr: addr}).Info(context.Background(), "server").Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			n, err := strconv.Atoi(v)
			if err == nil {
				return n
			}
		}
	}
	tb.Fatalf("no process_id in INFO of %s", addr)
	return 0
}

// Clients authenticate to the proxy only (its requirepass, user default):
// every command runs upstream as the user of --upstream. So an ACL user
// created upstream (ACL SETUSER is forwarded) cannot AUTH through the
// proxy, and ACL WHOAMI names the proxy's upstream user, where a
// redis-server answers +OK and "bob" (README, proxy mode: users).
func TestACLUsersAreNotTheClients(t *testing.T) {
	t.Parallel()
	up := testredis.Standalone(t)
	p := startTestProxy(t, "redis://"+up.Addr(), "")
	c := dialRaw(t, p.addr)
	for _, step := range []struct{ args, want string }{
		{"ACL SETUSER bob on >pw +@all ~*", "+OK\r\n"},
		{"AUTH bob pw", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"HELLO 2 AUTH bob pw", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"ACL WHOAMI", "$7\r\ndefault\r\n"},
		{"ACL USERS", "*2\r\n$3\r\nbob\r\n$7\r\ndefault\r\n"},
	} {
		if got := c.do(strings.Fields(step.args)...); got != step.want {
			t.Errorf("%s: %q, want %q", step.args, got, step.want)
		}
	}
}

// CLIENT PAUSE, UNPAUSE and UNBLOCK are refused through the proxy, in and
// out of MULTI: a pause would reach only the commands the proxy answers
// itself, or, forwarded, pause every client of the upstream behind the
// proxy's back; the proxy's client IDs are not the upstream's. The
// upstream goes on serving.
func TestClientPauseRefused(t *testing.T) {
	t.Parallel()
	up := testredis.Standalone(t)
	p := startTestProxy(t, "redis://"+up.Addr(), "")
	c := dialRaw(t, p.addr)
	const sendUp = " is not supported through the oncekv proxy; send it to the upstream directly\r\n"
	unblock := "-ERR 'client|unblock' is not supported through the oncekv proxy, whose client IDs are its own; end a blocked client with CLIENT KILL ID\r\n"
	for _, tc := range []struct{ args, want string }{
		{"CLIENT PAUSE 100000 WRITE", "-ERR 'client|pause'" + sendUp},
		{"client pause 100000", "-ERR 'client|pause'" + sendUp},
		{"CLIENT PAUSE", "-ERR 'client|pause'" + sendUp},
		{"CLIENT UNPAUSE", "-ERR 'client|unpause'" + sendUp},
		{"Client Unblock 1", unblock},
		{"CLIENT UNBLOCK 1 ERROR", unblock},
	} {
		if got := c.do(strings.Fields(tc.args)...); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.args, got, tc.want)
		}
		got := c.pipeline([]string{"MULTI"}, strings.Fields(tc.args), []string{"EXEC"})
		want := []string{"+OK\r\n", tc.want, "-EXECABORT Transaction discarded because of previous errors.\r\n"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("MULTI, %s, EXEC: %q, want %q", tc.args, got, want)
		}
		if got := c.do("SET", "k", "v"); got != "+OK\r\n" {
			t.Fatalf("SET after %s: %q", tc.args, got)
		}
	}
	if got := c.do("CLIENT", "ID"); !strings.HasPrefix(got, ":") {
		t.Errorf("CLIENT ID: %q (the other CLIENT subcommands still answer)", got)
	}
}

// DUMP and RESTORE are forwarded: through the proxy they answer exactly
// what the upstream answers directly, for strings and for the types only
// the upstream holds, and a payload DUMPed through the proxy RESTOREs
// through it.
func TestDumpRestoreThroughTheProxy(t *testing.T) {
	t.Parallel()
	direct, upstream := testredis.Standalone(t), testredis.Standalone(t)
	p := startTestProxy(t, "redis://"+upstream.Addr(), "")
	one := "\x00\xc0\x01\n\x00&x\xe7\xb6\xd1\x01\x11\xfc" // Redis 7.0's DUMP of "1"
	script := [][]string{
		{"SET", "s", strings.Repeat("compressible ", 10)}, {"DUMP", "s"}, {"DUMP", "nokey"},
		{"RESTORE", "r", "0", one}, {"GET", "r"}, {"RESTORE", "r", "0", one}, {"RESTORE", "r", "100000", one, "REPLACE"},
		{"RESTORE", "r", "0", "junk", "REPLACE"}, {"RPUSH", "l", "a", "b"}, {"DUMP", "l"}, {"SELECT", "2"},
		{"RESTORE", "r", "0", one}, {"DUMP", "r"}, {"SELECT", "0"}, {"DBSIZE"}, {"RESTORE"}, {"DUMP"},
	}
	for _, proto := range []string{"2", "3"} {
		var got [2][]string
		for i, addr := range []string{direct.Addr(), p.addr} {
			c := dialRaw(t, addr)
			c.do("FLUSHALL")
			c.do("HELLO", proto)
			got[i] = c.pipeline(script...)
		}
		for i := range script {
			if got[0][i] != got[1][i] {
				t.Errorf("RESP%s %q: redis %q, proxy %q", proto, script[i], got[0][i], got[1][i])
			}
		}
	}
	c := dialRaw(t, p.addr)
	for _, k := range []string{"s", "l"} {
		dump := c.do("DUMP", k)
		_, payload, _ := strings.Cut(strings.TrimSuffix(dump, "\r\n"), "\r\n")
		if got := c.do("RESTORE", k+":copy", "0", payload); got != "+OK\r\n" {
			t.Fatalf("RESTORE of DUMP %q through the proxy: %q", dump, got)
		}
	}
	for _, check := range [][]string{{"GET", "s"}, {"LRANGE", "l", "0", "-1"}} {
		want := c.do(check...)
		copyArgs := append([]string{check[0], check[1] + ":copy"}, check[2:]...)
		if got := c.do(copyArgs...); got != want {
			t.Errorf("%s of the copy: %q, want %q", check[0], got, want)
		}
	}
}

// CLIENT HELP through the proxy lists the subcommands it serves, without
// PAUSE, UNPAUSE and UNBLOCK (refused, TestClientPauseRefused), and every
// subcommand it lists works: each is run here, in the order HELP lists
// them.
func TestClientHelpListsWhatTheProxyServes(t *testing.T) {
	t.Parallel()
	up := testredis.Standalone(t)
	p := startTestProxy(t, "redis://"+up.Addr(), "")
	c, other := dialRaw(t, p.addr), dialRaw(t, p.addr)
	otherID := strings.TrimSuffix(strings.TrimPrefix(other.do("CLIENT", "ID"), ":"), "\r\n")
	third := dialRaw(t, p.addr)
	third.do("PING")
	type step struct {
		args []string
		want string // the whole reply, or with a trailing "…" its prefix
	}
	steps := map[string][]step{
		"GETNAME": {{[]string{"CLIENT", "GETNAME"}, "$3\r\nbob\r\n"}},
		"ID":      {{[]string{"CLIENT", "ID"}, ":…"}},
		"INFO":    {{[]string{"CLIENT", "INFO"}, "$…"}},
		"KILL": {
			{[]string{"CLIENT", "KILL", "ID", otherID}, ":1\r\n"},
			{[]string{"CLIENT", "KILL", third.nc.LocalAddr().String()}, "+OK\r\n"},
		},
		"LIST":     {{[]string{"CLIENT", "LIST", "ID", "1", "2"}, "$…"}},
		"REPLY":    {{[]string{"CLIENT", "REPLY", "ON"}, "+OK\r\n"}},
		"SETNAME":  {{[]string{"CLIENT", "SETNAME", "bob"}, "+OK\r\n"}},
		"NO-EVICT": {{[]string{"CLIENT", "NO-EVICT", "ON"}, "+OK\r\n"}},
		"SETINFO":  {{[]string{"CLIENT", "SETINFO", "LIB-NAME", "x"}, "+OK\r\n"}},
		"HELP":     {{[]string{"CLIENT", "HELP"}, "*…"}},
	}
	// SETNAME first, so that GETNAME and INFO have a name to show.
	if got := c.do("CLIENT", "SETNAME", "bob"); got != "+OK\r\n" {
		t.Fatalf("CLIENT SETNAME: %q", got)
	}
	help, err := parseReply([]byte(c.do("CLIENT", "HELP")))
	if err != nil || help.typ != '*' || len(help.elems) < 2 {
		t.Fatalf("CLIENT HELP: %v %+v", err, help)
	}
	var listed []string
	for _, e := range help.elems[1:] {
		if line := e.text(); !strings.HasPrefix(line, " ") {
			name, _, _ := strings.Cut(line, " ")
			listed = append(listed, name)
		}
	}
	want := []string{"GETNAME", "ID", "INFO", "KILL", "KILL", "LIST", "REPLY", "SETNAME", "NO-EVICT", "SETINFO", "HELP"}
	if fmt.Sprint(listed) != fmt.Sprint(want) {
		t.Errorf("CLIENT HELP lists %v, want %v", listed, want)
	}
	for _, name := range slices.Compact(listed) {
		if _, ok := steps[name]; !ok {
			t.Errorf("CLIENT HELP lists %s, which this test does not run", name)
		}
		for _, st := range steps[name] {
			got := c.do(st.args...)
			if pre, ok := strings.CutSuffix(st.want, "…"); ok && strings.HasPrefix(got, pre) || got == st.want {
				continue
			}
			t.Errorf("%s: %q, want %q", strings.Join(st.args, " "), got, st.want)
		}
	}
	if got := c.do("CLIENT", "INFO"); !strings.Contains(got, " name=bob ") || !strings.Contains(got, " lib-name=x ") {
		t.Errorf("CLIENT INFO after SETNAME and SETINFO: %q", got)
	}
	if got := c.do("CLIENT", "LIST"); strings.Contains(got, "id="+otherID+" ") || !strings.Contains(got, " name=bob ") {
		t.Errorf("CLIENT LIST after CLIENT KILL ID %s: %q", otherID, got)
	}
	for _, gone := range []*rawClient{other, third} {
		_ = gone.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := gone.br.ReadByte(); err == nil {
			t.Errorf("a killed client's connection is still open")
		}
	}
	// CLIENT REPLY OFF and SKIP too: the SET runs, its reply is dropped.
	c.send([]string{"CLIENT", "REPLY", "SKIP"}, []string{"SET", "k", "1"}, []string{"CLIENT", "REPLY", "OFF"},
		[]string{"SET", "k", "2"}, []string{"CLIENT", "REPLY", "ON"}, []string{"GET", "k"})
	if got := []string{c.read(), c.read()}; fmt.Sprint(got) != fmt.Sprint([]string{"+OK\r\n", "$1\r\n2\r\n"}) {
		t.Errorf("CLIENT REPLY SKIP, SET, REPLY OFF, SET, REPLY ON, GET: %q, want ON's +OK and GET's 2", got)
	}
}
