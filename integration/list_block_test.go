package integration

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestDiffListUnblockAndLeave compares with a real redis-server 7.0 what
// several connections see around blocked list commands: CLIENT UNBLOCK
// (TIMEOUT: the timeout's reply; ERROR: -UNBLOCKED) in RESP2 and RESP3, a
// client that leaves while blocked giving its place in the line to the
// next, and INFO's blocked_clients.
func TestDiffListUnblockAndLeave(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	cases := []struct {
		name  string
		proto string
		block []string
		mode  []string
	}{
		{"blpop timeout", "2", []string{"BLPOP", "q", "0"}, nil},
		{"blpop error", "2", []string{"BLPOP", "q", "0"}, []string{"ERROR"}},
		{"blmove timeout", "2", []string{"BLMOVE", "q", "d", "LEFT", "LEFT", "0"}, []string{"TIMEOUT"}},
		{"brpoplpush timeout resp3", "3", []string{"BRPOPLPUSH", "q", "d", "0"}, nil},
		{"blmpop error resp3", "3", []string{"BLMPOP", "0", "1", "q", "LEFT"}, []string{"ERROR"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got [2]string
			for i, addr := range []string{p.Redis, p.Other} {
				ctl, c := DialRaw(t, addr), DialRaw(t, addr)
				rawFrame(t, ctl, "DEL", "q", "d")
				rawFrame(t, c, "HELLO", tc.proto)
				id := clientID(t, c)
				c.Send(EncodeCommand(tc.block...))
				awaitBlocked(t, ctl, 1)
				un := rawFrame(t, ctl, append([]string{"CLIENT", "UNBLOCK", id}, tc.mode...)...)
				got[i] = string(un.Raw) + string(c.ReadFrame().Raw)
				awaitBlocked(t, ctl, 0)
				// Unblocked, the client is served no more: a push stays.
				got[i] += string(rawFrame(t, ctl, "RPUSH", "q", "x").Raw) + string(rawFrame(t, ctl, "LLEN", "q").Raw)
				c.Close()
				ctl.Close()
			}
			if got[0] != got[1] {
				t.Errorf("redis: %q\n%s: %q", got[0], p.OtherName, got[1])
			}
		})
	}
	t.Run("leaver frees its place", func(t *testing.T) {
		var got [2]string
		for i, addr := range []string{p.Redis, p.Other} {
			ctl, first, second := DialRaw(t, addr), DialRaw(t, addr), DialRaw(t, addr)
			rawFrame(t, ctl, "DEL", "lq")
			first.Send(EncodeCommand("BLPOP", "lq", "0"))
			awaitBlocked(t, ctl, 1)
			second.Send(EncodeCommand("BRPOP", "lq", "0"))
			awaitBlocked(t, ctl, 2)
			first.Close()
			awaitBlocked(t, ctl, 1)
			got[i] = string(rawFrame(t, ctl, "RPUSH", "lq", "a", "b").Raw) + string(second.ReadFrame().Raw) +
				string(rawFrame(t, ctl, "LRANGE", "lq", "0", "-1").Raw)
			second.Close()
			ctl.Close()
		}
		if got[0] != got[1] {
			t.Errorf("redis: %q\n%s: %q", got[0], p.OtherName, got[1])
		}
	})
}

// TestListQueue runs a job queue on oncekv: producers LPUSH numbered jobs
// on connections of their own while consumers take them with BRPOP and
// BLMOVE (into a processing list they then LREM from). Every job is
// delivered exactly once, none is lost, and each consumer sees each
// producer's jobs in the order they were pushed (FIFO per producer).
func TestListQueue(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	const producers, consumers, jobs = 3, 4, 300
	var wg sync.WaitGroup
	for pi := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := DialRaw(t, addr)
			defer c.Close()
			for j := range jobs {
				if r := c.Do("LPUSH", "jobs", fmt.Sprintf("p%d:%d", pi, j)); r[0] != ':' {
					t.Errorf("LPUSH: %q", r)
					return
				}
			}
		}()
	}
	type got struct{ consumer, job string }
	out := make(chan got, producers*jobs)
	var cwg sync.WaitGroup
	for ci := range consumers {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			c := DialRaw(t, addr)
			defer c.Close()
			name := fmt.Sprint("c", ci)
			idle := 0
			for idle < 3 {
				var job string
				if ci%2 == 0 {
					f := c.ReadFrameAfterDo(t, "BRPOP", "jobs", "0.2")
					if f.Null {
						idle++
						continue
					}
					job = f.Elems[1].Str
				} else {
					f := c.ReadFrameAfterDo(t, "BLMOVE", "jobs", "processing:"+name, "RIGHT", "LEFT", "0.2")
					if f.Null {
						idle++
						continue
					}
					job = f.Str
					if r := c.Do("LREM", "processing:"+name, "1", job); string(r) != ":1\r\n" {
						t.Errorf("LREM of %s: %q", job, r)
					}
				}
				idle = 0
				out <- got{name, job}
			}
		}()
	}
	wg.Wait()
	cwg.Wait()
	close(out)
	seen := map[string]string{}
	last := map[[2]string]int{}
	for g := range out {
		if prev, dup := seen[g.job]; dup {
			t.Errorf("job %s delivered twice (to %s and %s)", g.job, prev, g.consumer)
		}
		seen[g.job] = g.consumer
		prod, seq, _ := strings.Cut(g.job, ":")
		n, _ := strconv.Atoi(seq)
		k := [2]string{g.consumer, prod}
		if l, ok := last[k]; ok && n <= l {
			t.Errorf("%s got %s after %s:%d: out of its producer's order", g.consumer, g.job, prod, l)
		}
		last[k] = n
	}
	if len(seen) != producers*jobs {
		t.Errorf("%d jobs delivered, want %d", len(seen), producers*jobs)
	}
	c := DialRaw(t, addr)
	if r := string(c.Do("EXISTS", "jobs", "processing:c1", "processing:c3")); r != ":0\r\n" {
		t.Errorf("EXISTS of the emptied lists: %q", r)
	}
}

// TestProxyListScripts runs the list scripts through the proxy, which
// forwards the list commands to its upstream redis-server: blocked ones
// (BRPOP, BLMOVE…) each on an upstream connection of their own, while the
// pooled ones serve the other clients; compared with a redis-server.
func TestProxyListScripts(t *testing.T) {
	t.Parallel()
	p := newProxyPair(t)
	p.RunScripts(t, []Script{{"proxy-brpop", []Step{
		held("BRPOP", "q", "0").On(1), held("BLMOVE", "src", "dst", "LEFT", "RIGHT", "0").On(2),
		cmd("SET", "k", "v"), cmd("GET", "k"), cmd("LPUSH", "other", "a"), cmd("LRANGE", "other", "0", "-1"),
		cmd("RPUSH", "q", "job1", "job2"), readNext().On(1), cmd("LRANGE", "q", "0", "-1"),
		cmd("RPUSH", "src", "m"), readNext().On(2), cmd("LRANGE", "dst", "0", "-1"),
		cmd("BRPOP", "q", "q2", "0.05").On(1), cmd("LMPOP", "2", "nosuch", "q", "RIGHT", "COUNT", "5"),
	}}})
}
