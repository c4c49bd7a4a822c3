package onceup

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncekv/oncekv/internal/testredis"
	"github.com/oncekv/oncekv/resp"
)

// handler serves the ONCE commands through an Engine, in the database the
// connection selected, plus the few commands a go-redis client sends on
// its own.
type handler struct{ e *Engine }

func (h handler) Serve(c *resp.Conn, args [][]byte) {
	switch strings.ToLower(string(args[0])) {
	case "hello":
		if len(args) > 1 && string(args[1]) == "3" {
			c.SetProto(3)
		}
		c.W.Map(1)
		c.W.BulkString("proto")
		c.W.Int(int64(c.W.Proto))
	case "ping":
		c.W.Simple("PONG")
	case "select":
		db, err := strconv.Atoi(string(args[1]))
		if err != nil {
			c.W.Error("ERR invalid DB index")
			return
		}
		c.Select(db)
		c.W.OK()
	default:
		h.e.Command(c, c.W, c.DB, args)
	}
}

// upstream is where the engines under test keep their records.
type upstream struct {
	name    string
	client  func(tb testing.TB) redis.UniversalClient // a new client, closed at cleanup
	cluster *testredis.Cluster
	server  *testredis.Server
}

func standaloneUpstream(tb testing.TB) *upstream {
	s := testredis.Standalone(tb)
	return &upstream{name: "standalone", server: s, client: func(tb testing.TB) redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: s.Addr(), Protocol: 2, MaxRetries: -1})
		tb.Cleanup(func() { c.Close() })
		return c
	}}
}

func clusterUpstream(tb testing.TB, masters, replicas int) *upstream {
	cl := testredis.StartCluster(tb, masters, replicas)
	return &upstream{name: "cluster", cluster: cl, client: func(tb testing.TB) redis.UniversalClient {
		// The default slot map reload interval (60 s): the engine must
		// cope with a stale map by itself.
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), Protocol: 2, MaxRetries: -1})
		tb.Cleanup(func() { c.Close() })
		return c
	}}
}

// proxy is one engine (one simulated oncekv instance) with its own
// upstream client, served on a resp.Server.
type proxy struct {
	e    *Engine
	addr string
}

func startProxy(tb testing.TB, up *upstream, cfg Config) *proxy {
	tb.Helper()
	e := New(up.client(tb), cfg)
	if err := e.Start(); err != nil {
		tb.Fatal(err)
	}
	s := resp.NewServer(resp.Config{Addrs: []string{"127.0.0.1:0"}}, handler{e})
	if err := s.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		s.Close()
		e.Close()
	})
	return &proxy{e: e, addr: s.Addrs()[0].String()}
}

func startProxies(tb testing.TB, up *upstream, n int, cfg Config) []*proxy {
	ps := make([]*proxy, n)
	for i := range ps {
		ps[i] = startProxy(tb, up, cfg)
	}
	return ps
}

// dial returns a client of a proxy (RESP2 unless proto says 3).
func dial(tb testing.TB, p *proxy, proto ...int) *redis.Client {
	pr := 2
	if len(proto) > 0 {
		pr = proto[0]
	}
	return dialDB(tb, p, 0, pr)
}

// dialDB returns a client of a proxy that selects database db.
func dialDB(tb testing.TB, p *proxy, db, proto int) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: p.addr, Protocol: proto, DB: db, DisableIdentity: true,
		ReadTimeout: 30 * time.Second, MaxRetries: -1, PoolSize: 4})
	tb.Cleanup(func() { c.Close() })
	return c
}

// reply is a parsed [state, detail] reply.
type reply struct {
	state  string
	detail string // answer, message
	n      int64  // token or ms left
	err    error
}

func (r reply) String() string {
	if r.err != nil {
		return "error " + r.err.Error()
	}
	return r.state + " " + r.detail + " " + itoa(r.n)
}

func do(ctx context.Context, c *redis.Client, args ...any) reply {
	v, err := c.Do(ctx, args...).Result()
	if err != nil {
		return reply{err: err}
	}
	a, ok := v.([]any)
	if !ok || len(a) != 2 {
		return reply{err: errors.New("unexpected reply shape")}
	}
	r := reply{state: a[0].(string)}
	switch d := a[1].(type) {
	case int64:
		r.n = d
	case string:
		r.detail = d
	}
	return r
}

// eventually polls cond until it holds, failing after d.
func eventually(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
