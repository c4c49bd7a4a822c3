package integration

// Proxy mode over a Redis Cluster whose slots move (CLUSTER SETSLOT …
// MIGRATING / IMPORTING, MIGRATE, SETSLOT … NODE) while clients use the
// proxy: the upstream answers -ASK, -MOVED and -TRYAGAIN, which a client
// of the proxy (not a cluster client) must never see.

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/oncekv/oncekv/internal/testredis"
)

// TestProxyClusterMigration: plain commands through the proxy on keys of
// a slot that moves answer as one redis-server answers them (byte for
// byte), at every step of the move.
func TestProxyClusterMigration(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t, 3, 0)
	up := clusterUpstream(cl)
	p1, p2 := startProxy(t, up), startProxy(t, up)

	t.Run("every-step-as-redis-server", func(t *testing.T) {
		ref, c := DialRaw(t, StartRedis(t)), DialRaw(t, p1.Addr)
		same := func(cmds ...[]string) {
			t.Helper()
			for _, args := range cmds {
				sameReply(t, ref, c, args...)
			}
		}
		slot := cl.KeySlot("{m}")
		same([]string{"SET", "{m}s", "v"}, []string{"SET", "{m}d", "x"}, []string{"MSET", "{m}a", "1", "{m}b", "2"},
			[]string{"INCR", "{m}n"}, []string{"INCR", "{m}n"})
		m := cl.BeginMigration(slot, cl.OtherMaster(cl.MasterForKey("{m}")))
		// Migrating, nothing moved yet: the source serves what it has; a
		// new key is created on the target (ASK).
		same([]string{"GET", "{m}s"}, []string{"INCR", "{m}n"}, []string{"SET", "{m}new", "1"}, []string{"GET", "{m}new"},
			[]string{"DEL", "{m}d"}, []string{"EXPIRE", "{m}s", "100"}, []string{"TTL", "{m}s"}, []string{"GET", "{m}a"},
			[]string{"INCRBY", "{m}new", "5"})
		// Half moved.
		m.Move("{m}s", "{m}n", "{m}a")
		same([]string{"GET", "{m}s"}, []string{"INCR", "{m}n"}, []string{"INCR", "{m}n"}, []string{"EXPIRE", "{m}n", "1000"},
			[]string{"TTL", "{m}n"}, []string{"GET", "{m}b"}, []string{"DEL", "{m}x"}, []string{"SET", "{m}a", "3"},
			[]string{"GET", "{m}a"}, []string{"DEL", "{m}new"})
		// A transaction on keys that left the source, one on a key that
		// stayed: each runs as a whole where its keys are.
		same([]string{"MULTI"}, []string{"INCR", "{m}n"}, []string{"GET", "{m}s"}, []string{"EXEC"})
		same([]string{"MULTI"}, []string{"INCR", "{m}b"}, []string{"GET", "{m}b"}, []string{"EXEC"})
		// WATCH of a key that left: the transaction runs where it went.
		same([]string{"WATCH", "{m}s"}, []string{"GET", "{m}s"}, []string{"MULTI"}, []string{"SET", "{m}s", "w"},
			[]string{"EXEC"}, []string{"GET", "{m}s"}, []string{"TTL", "{m}s"})
		// A key that leaves between the queueing and EXEC (the source
		// answers EXEC with ASK and discards the transaction).
		same([]string{"MULTI"}, []string{"INCR", "{m}b"}, []string{"GET", "{m}b"})
		m.Move("{m}b")
		same([]string{"EXEC"}, []string{"GET", "{m}b"})
		// Multi-key commands over keys split between the two nodes can
		// only run once the move ends (TRYAGAIN until then): the proxy
		// waits for it, as a pipeline.
		multi := [][]string{{"MGET", "{m}a", "{m}b", "{m}c"}, {"MSET", "{m}a", "5", "{m}b", "6"}, {"MGET", "{m}a", "{m}b"},
			{"INCR", "{m}n"}}
		var pipe []byte
		for _, args := range multi {
			pipe = append(pipe, EncodeCommand(args...)...)
		}
		c.Send(pipe)
		time.Sleep(500 * time.Millisecond)
		m.Finish()
		for _, args := range multi {
			if want, got := ref.Do(args...), c.ReadReply(); string(want) != string(got) {
				t.Errorf("%s: redis-server %q, through the proxy %q", fmtArgs(args), want, got)
			}
		}
		// Moved: MOVED from the source, followed.
		same([]string{"GET", "{m}s"}, []string{"INCR", "{m}n"}, []string{"MGET", "{m}a", "{m}b"},
			[]string{"MULTI"}, []string{"INCR", "{m}n"}, []string{"GET", "{m}s"}, []string{"EXEC"})
	})

	t.Run("watch-after-the-slot-moved", func(t *testing.T) {
		// p2 has not seen the move: its map still names the old owner,
		// which answers WATCH with MOVED.
		ref, c := DialRaw(t, StartRedis(t)), DialRaw(t, p2.Addr)
		for _, args := range [][]string{{"SET", "{w}k", "1"}, {"GET", "{w}k"}} {
			sameReply(t, ref, c, args...)
		}
		cl.MoveSlot(cl.KeySlot("{w}k"), cl.OtherMaster(cl.MasterForKey("{w}k")))
		for _, args := range [][]string{{"WATCH", "{w}k"}, {"MULTI"}, {"INCR", "{w}k"}, {"EXEC"}, {"GET", "{w}k"}} {
			sameReply(t, ref, c, args...)
		}
	})

	t.Run("incr-counted-once-while-the-slot-moves", func(t *testing.T) {
		const workers = 8
		key := "{c}n"
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		seen := map[int64]bool{}
		var bad []string
		for i := 0; i < workers; i++ {
			addr := p1.Addr
			if i%2 == 1 {
				addr = p2.Addr
			}
			c := DialRaw(t, addr)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					f, err := c.TryReadFrameAfter(EncodeCommand("INCR", key))
					mu.Lock()
					if err != nil {
						bad = append(bad, err.Error())
						mu.Unlock()
						return
					}
					n, ok := f.Int()
					switch {
					case !ok:
						bad = append(bad, string(f.Raw))
					case seen[n]:
						bad = append(bad, "INCR answered "+strconv.FormatInt(n, 10)+" twice")
					default:
						seen[n] = true
					}
					mu.Unlock()
				}
			}()
		}
		slot := cl.KeySlot(key)
		for i := 0; i < 4; i++ {
			time.Sleep(100 * time.Millisecond)
			m := cl.BeginMigration(slot, cl.OtherMaster(cl.MasterForKey(key)))
			time.Sleep(100 * time.Millisecond)
			m.Move(key)
			time.Sleep(100 * time.Millisecond)
			m.Finish()
		}
		time.Sleep(100 * time.Millisecond)
		close(stop)
		wg.Wait()
		for i, b := range bad {
			if i < 10 {
				t.Errorf("INCR through the proxy: %s", b)
			}
		}
		total := int64(len(seen))
		for n := int64(1); n <= total; n++ {
			if !seen[n] {
				t.Errorf("no INCR answered %d of %d", n, total)
				break
			}
		}
		v := strconv.FormatInt(total, 10)
		wantReply(t, DialRaw(t, p2.Addr), "$"+strconv.Itoa(len(v))+"\r\n"+v+"\r\n", "GET", key)
		if total < 100 {
			t.Errorf("only %d INCRs in the test", total)
		}
	})

	t.Run("once-across-a-move", func(t *testing.T) {
		// KV-9, KV-10: a run whose slot moves while it runs, through two
		// proxies: its runner's commands wait for the move, callers that
		// claim meanwhile are told it runs, and the waiters on both
		// proxies get its answer from the new owner.
		k := "{o}job"
		runner := DialRaw(t, p1.Addr)
		f := runner.ReadFrameAfterDo(t, "ONCE.CLAIM", k, "LEASE", "20000")
		if len(f.Elems) != 2 || f.Elems[0].Str != "claimed" {
			t.Fatalf("CLAIM = %q", f.Raw)
		}
		token := strconv.FormatInt(mustInt(t, f.Elems[1]), 10)
		const waiters = 4
		replies := make(chan string, 2*waiters)
		for i := 0; i < waiters; i++ {
			addr := []string{p1.Addr, p2.Addr}[i%2]
			args := []string{"ONCE.WAIT", k, "TIMEOUT", "15000"}
			if i >= 2 {
				args = []string{"ONCE.CLAIM", k, "WAIT", "15000"}
			}
			c := DialRaw(t, addr)
			c.Timeout = 20 * time.Second
			c.Send(EncodeCommand(args...))
			go func() {
				r, err := c.TryReadReply()
				if err != nil {
					r = []byte(err.Error())
				}
				replies <- string(r)
			}()
		}
		waitFor(t, 5*time.Second, 20*time.Millisecond, "the waiters", func() (bool, string) {
			n := proxyInfoField(t, DialRaw(t, p1.Addr), "once", "waiting_clients")
			m := proxyInfoField(t, DialRaw(t, p2.Addr), "once", "waiting_clients")
			return n == "2" && m == "2", "waiting_clients " + n + " and " + m
		})
		m := cl.BeginMigration(cl.KeySlot(k), cl.OtherMaster(cl.MasterForKey(k)))
		m.Move(k)
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(300 * time.Millisecond)
			m.Finish()
		}()
		claimer := DialRaw(t, p2.Addr)
		if f := claimer.ReadFrameAfterDo(t, "ONCE.CLAIM", k); len(f.Elems) != 2 || f.Elems[0].Str != "running" {
			t.Errorf("CLAIM while the slot moves = %q, want running", f.Raw)
		}
		wantReply(t, runner, "+OK\r\n", "ONCE.EXTEND", k, token, "LEASE", "20000")
		wantReply(t, runner, "+OK\r\n", "ONCE.COMPLETE", k, token, "answer")
		<-done
		for i := 0; i < waiters; i++ {
			select {
			case r := <-replies:
				if want := "*2\r\n$4\r\ndone\r\n$6\r\nanswer\r\n"; r != want {
					t.Errorf("waiter got %q, want %q", r, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("a waiter was not woken 5 s after the run ended")
			}
		}
		// The first command sent during the move (the CLAIM) met it.
		if n := proxyInfoField(t, claimer, "once", "tryagain_retries"); n == "0" {
			t.Error("INFO once tryagain_retries = 0 on the claimer's proxy: its CLAIM did not meet the move")
		}
	})
}
