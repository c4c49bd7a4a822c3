package app

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncekv/oncekv/internal/config"
	"github.com/oncekv/oncekv/internal/testredis"
)

// startProxyApp assembles and starts a proxy-mode server; dir is a data
// directory that must stay untouched.
func startProxyApp(t *testing.T, args ...string) (*App, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "never-created")
	cfg, err := config.Parse(append([]string{"--bind", "127.0.0.1", "--port", "0", "--dir", dir, "--loglevel", "warning"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, dir
}

// exchange sends each line and checks the first line of its reply.
func exchange(t *testing.T, addr string, steps [][2]string) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(nc)
	for _, st := range steps {
		if _, err := nc.Write([]byte(st[0] + "\r\n")); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil || line != st[1]+"\r\n" {
			t.Errorf("%q: got %q %v, want %q", st[0], line, err, st[1])
		}
		if strings.HasPrefix(line, "$") && len(line) > 3 && line[1] != '-' {
			r.ReadString('\n') // the bulk string's body
		}
	}
}

// Proxy mode opens no store, touches no data directory, forwards, and
// shows its mode in INFO and its directives (password masked) in CONFIG GET.
func TestProxyModeAssembly(t *testing.T) {
	up := testredis.Standalone(t, "--requirepass", "up-pw")
	a, dir := startProxyApp(t, "--upstream", "redis://:up-pw@"+up.Addr(), "--once-wait-replicas", "0")
	if a.Store != nil || a.Engine != nil || a.Proxy == nil {
		t.Fatalf("proxy mode: Store %v, Engine %v, Proxy %v", a.Store, a.Engine, a.Proxy)
	}
	exchange(t, a.Addr().String(), [][2]string{
		{"SET k v", "+OK"},
		{"GET k", "$1"},
		{"RPUSH l a b", ":2"},
		{"ONCE.STATUS nokey", "*-1"},
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the data directory %s exists in proxy mode (%v)", dir, err)
	}
	if got := a.Config().Directives()["upstream"]; got != "redis://:***@"+up.Addr() {
		t.Errorf("CONFIG GET upstream = %q: the password must be masked", got)
	}
}

// CONFIG SET requirepass reaches the proxy too: a new connection must
// authenticate, for forwarded commands as for the local ones.
func TestProxyModeConfigSetRequirepass(t *testing.T) {
	up := testredis.Standalone(t)
	a, _ := startProxyApp(t, "--upstream", "redis://"+up.Addr())
	exchange(t, a.Addr().String(), [][2]string{{"CONFIG SET requirepass pw", "+OK"}})
	exchange(t, a.Addr().String(), [][2]string{
		{"LPUSH l x", "-NOAUTH Authentication required."},
		{"GET k", "-NOAUTH Authentication required."},
		{"AUTH pw", "+OK"},
		{"LPUSH l x", ":1"},
		{"CONFIG SET upstream redis://other:1", "-ERR CONFIG SET failed (possibly related to argument 'upstream') - can't set immutable config"},
	})
}

// rename-command applies to forwarded commands too.
func TestProxyModeRenameCommand(t *testing.T) {
	up := testredis.Standalone(t)
	a, _ := startProxyApp(t, "--upstream", "redis://"+up.Addr(),
		"--rename-command", "FLUSHALL", "", "--rename-command", "LPUSH", "my-lpush", "--rename-command", "ping", "pong-please")
	exchange(t, a.Addr().String(), [][2]string{
		{"FLUSHALL", "-ERR unknown command 'FLUSHALL', with args beginning with: "},
		{"LPUSH l x", "-ERR unknown command 'LPUSH', with args beginning with: 'l' 'x' "},
		{"MY-LPUSH l x", ":1"},
		{"PING", "-ERR unknown command 'PING', with args beginning with: "},
		{"PONG-PLEASE", "+PONG"},
	})
	cfg, _ := config.Parse([]string{"--upstream", "redis://" + up.Addr(), "--rename-command", "GET", "SET"})
	if _, err := New(cfg, nil); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("rename-command GET SET in proxy mode: %v, want a startup error", err)
	}
}

// Close does not hang on an upstream that stopped answering: after the
// grace period it closes the upstream connections under the commands.
func TestProxyModeCloseWithHungUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				// Answer the handshake (CLIENT SETNAME, COMMAND), then
				// never again.
				r := bufio.NewReader(nc)
				n := 0
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "$") {
						continue
					}
					if strings.HasPrefix(line, "*") {
						n++
						if n <= 1 {
							nc.Write([]byte("+OK\r\n"))
						}
					}
				}
			}()
		}
	}()
	old := closeGrace
	closeGrace = 200 * time.Millisecond
	defer func() { closeGrace = old }()
	cfg, err := config.Parse([]string{"--bind", "127.0.0.1", "--port", "0", "--upstream", "redis://" + ln.Addr().String(), "--loglevel", "nothing"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("tcp", a.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Write([]byte("GET k\r\n"))
	time.Sleep(100 * time.Millisecond) // the GET waits upstream
	done := make(chan error, 1)
	go func() { done <- a.Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on an upstream that does not answer")
	}
}

// onceClient is a go-redis client of a proxy-mode app in database db.
func onceClient(t *testing.T, a *App, db int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: a.Addr().String(), DB: db, Protocol: 2, DisableIdentity: true,
		MaxRetries: -1, ReadTimeout: 30 * time.Second, PoolSize: 2})
	t.Cleanup(func() { c.Close() })
	return c
}

// onceReply runs a ONCE command answering [state, detail].
func onceReply(t *testing.T, c *redis.Client, args ...any) (string, any) {
	t.Helper()
	r, err := onceDo(c, args...)
	if err != nil {
		t.Fatal(err)
	}
	return r[0].(string), r[1]
}

// onceDo runs a ONCE command answering [state, detail] (from any
// goroutine).
func onceDo(c *redis.Client, args ...any) ([2]any, error) {
	v, err := c.Do(context.Background(), args...).Slice()
	if err != nil || len(v) != 2 {
		return [2]any{}, fmt.Errorf("%v: %v %v", args, v, err)
	}
	return [2]any{v[0], v[1]}, nil
}

// waitingClients reads INFO once's waiting_clients through c.
func waitingClients(t *testing.T, c *redis.Client) int {
	t.Helper()
	s, err := c.Info(context.Background(), "once").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(s, "\r\n") {
		if v, ok := strings.CutPrefix(line, "waiting_clients:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	t.Fatalf("no waiting_clients in %q", s)
	return 0
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// KV-7 through the proxy: ONCE commands run in the client's database.
// A run claimed and completed after SELECT 1 leaves its record in db 1
// only; a waiter in db 1 is woken by it; the same key in db 0 is another,
// independent record.
func TestProxyModeOnceSelect(t *testing.T) {
	up := testredis.Standalone(t)
	a, _ := startProxyApp(t, "--upstream", "redis://"+up.Addr())
	ctx := context.Background()
	c0, c1 := onceClient(t, a, 0), onceClient(t, a, 1)
	st, tok := onceReply(t, c1, "ONCE.CLAIM", "k", "LEASE", 20000)
	if st != "claimed" {
		t.Fatalf("CLAIM in db 1 = %v %v", st, tok)
	}
	res := make(chan [2]any, 1)
	w1 := onceClient(t, a, 1)
	go func() {
		r, err := onceDo(w1, "ONCE.CLAIM", "k", "WAIT", 15000)
		if err != nil {
			r = [2]any{err.Error(), nil}
		}
		res <- r
	}()
	eventually(t, "the waiter in db 1", func() bool { return waitingClients(t, c0) == 1 })
	if n := c0.Exists(ctx, "k").Val(); n != 0 {
		t.Fatalf("after SELECT 0: EXISTS k = %d, want 0 (the claim was made in db 1)", n)
	}
	if n := c1.Exists(ctx, "k").Val(); n != 1 {
		t.Fatalf("after SELECT 1: EXISTS k = %d, want 1", n)
	}
	if err := c1.Do(ctx, "ONCE.COMPLETE", "k", tok, "answer").Err(); err != nil {
		t.Fatalf("COMPLETE in db 1: %v", err)
	}
	select {
	case r := <-res:
		if r[0] != "done" || r[1] != "answer" {
			t.Fatalf("waiter in db 1 got %v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter in db 1 was not woken")
	}
	if n := c0.Exists(ctx, "k").Val(); n != 0 {
		t.Fatalf("after SELECT 0: EXISTS k = %d, want 0", n)
	}
	if n := c1.Exists(ctx, "k").Val(); n != 1 {
		t.Fatalf("after SELECT 1: EXISTS k = %d, want 1", n)
	}
	// In the upstream: the record is in db 1, nothing in db 0.
	raw1 := redis.NewClient(&redis.Options{Addr: up.Addr(), DB: 1})
	defer raw1.Close()
	if v := raw1.HGet(ctx, "k", "a").Val(); v != "answer" {
		t.Fatalf("upstream db 1: the record's answer %q", v)
	}
	if n := up.Client().Exists(ctx, "k").Val(); n != 0 {
		t.Fatalf("upstream db 0 has k")
	}
	// db 0's k is its own: free, claimed, completed, not db 1's answer.
	if st, d := onceReply(t, c0, "ONCE.WAIT", "k"); st != "free" {
		t.Fatalf("WAIT in db 0 = %v %v", st, d)
	}
	st, tok0 := onceReply(t, c0, "ONCE.CLAIM", "k")
	if st != "claimed" {
		t.Fatalf("CLAIM in db 0 = %v %v", st, tok0)
	}
	if err := c0.Do(ctx, "ONCE.COMPLETE", "k", tok0, "zero").Err(); err != nil {
		t.Fatal(err)
	}
	if st, d := onceReply(t, c1, "ONCE.CLAIM", "k"); st != "done" || d != "answer" {
		t.Fatalf("db 1 after db 0's run: %v %v", st, d)
	}
	if st, d := onceReply(t, c0, "ONCE.CLAIM", "k"); st != "done" || d != "zero" {
		t.Fatalf("db 0: %v %v", st, d)
	}
}

// A running record removed by a command forwarded through one proxy
// (DEL, UNLINK, FLUSHDB, FLUSHALL, a DEL inside MULTI/EXEC, also after a
// SELECT queued in the transaction, a DEL between WATCH and EXEC) is a
// lapse at once for a waiter on another proxy: it takes the key over
// well before the 20 s lease ends.
func TestProxyModeRemovedRecordLapses(t *testing.T) {
	up := testredis.Standalone(t)
	a1, _ := startProxyApp(t, "--upstream", "redis://"+up.Addr())
	a2, _ := startProxyApp(t, "--upstream", "redis://"+up.Addr())
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		db     int
		remove func(c *redis.Client, k string) error
	}{
		{"del", 0, func(c *redis.Client, k string) error { return c.Del(ctx, k).Err() }},
		{"unlink", 0, func(c *redis.Client, k string) error { return c.Unlink(ctx, "other", k).Err() }},
		{"flushdb", 2, func(c *redis.Client, k string) error { return c.FlushDB(ctx).Err() }},
		{"flushall", 3, func(c *redis.Client, k string) error { return c.FlushAll(ctx).Err() }},
		{"exec-del", 0, func(c *redis.Client, k string) error {
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, "x", "1", 0)
				p.Del(ctx, k)
				return nil
			})
			return err
		}},
		{"exec-select-del", 4, func(c *redis.Client, k string) error {
			// From db 0: MULTI, DEL k, SELECT 4, DEL k, EXEC.
			c0 := redis.NewClient(&redis.Options{Addr: a1.Addr().String(), Protocol: 2, DisableIdentity: true, PoolSize: 1})
			defer c0.Close()
			conn := c0.Conn()
			defer conn.Close()
			_, err := conn.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Del(ctx, k) // in db 0: removes nothing
				p.Select(ctx, 4)
				p.Del(ctx, k)
				return nil
			})
			return err
		}},
		{"watch-del", 0, func(c *redis.Client, k string) error {
			return c.Watch(ctx, func(tx *redis.Tx) error { return tx.Del(ctx, k).Err() }, "w")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := "lapse:" + tc.name
			c1, c2 := onceClient(t, a1, tc.db), onceClient(t, a2, tc.db)
			st, dead := onceReply(t, c1, "ONCE.CLAIM", k, "LEASE", 20000)
			if st != "claimed" {
				t.Fatalf("CLAIM = %v", st)
			}
			res := make(chan [2]any, 1)
			go func() {
				r, err := onceDo(c2, "ONCE.CLAIM", k, "WAIT", 15000)
				if err != nil {
					r = [2]any{err.Error(), nil}
				}
				res <- r
			}()
			eventually(t, "the waiter on the second proxy", func() bool { return waitingClients(t, c2) == 1 })
			time.Sleep(200 * time.Millisecond) // its subscription is up
			start := time.Now()
			if err := tc.remove(c1, k); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-res:
				if tok, _ := r[1].(int64); r[0] != "claimed" || tok <= dead.(int64) {
					t.Fatalf("waiter after %s got %v", tc.name, r)
				}
				if el := time.Since(start); el > 3*time.Second {
					t.Fatalf("handed over %v after %s: at the lease deadline, not at once", el, tc.name)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("the waiter was not told of the %s (lease 20 s)", tc.name)
			}
		})
	}
}
