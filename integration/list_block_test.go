package integration

import (
	"fmt"
	"strconv"
	"strings"
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
	push := func(c *RawConn, producer, job int) bool {
		if r := c.Do("LPUSH", "jobs", fmt.Sprintf("p%d:%d", producer, job)); r[0] != ':' {
			t.Errorf("LPUSH: %q", r)
			return false
		}
		return true
	}
	pop := func(c *RawConn, consumer int) []string {
		if consumer%2 == 0 {
			if f := c.ReadFrameAfterDo(t, "BRPOP", "jobs", "0.2"); !f.Null {
				return []string{f.Elems[1].Str}
			}
			return nil
		}
		processing := fmt.Sprint("processing:c", consumer)
		f := c.ReadFrameAfterDo(t, "BLMOVE", "jobs", processing, "RIGHT", "LEFT", "0.2")
		if f.Null {
			return nil
		}
		if r := c.Do("LREM", processing, "1", f.Str); string(r) != ":1\r\n" {
			t.Errorf("LREM of %s: %q", f.Str, r)
		}
		return []string{f.Str}
	}
	last := map[[2]string]int{}
	for _, d := range runQueue(t, addr, 3, 4, 300, push, pop) {
		prod, seq, _ := strings.Cut(d.job, ":")
		n, _ := strconv.Atoi(seq)
		k := [2]string{d.consumer, prod}
		if l, ok := last[k]; ok && n <= l {
			t.Errorf("%s got %s after %s:%d: out of its producer's order", d.consumer, d.job, prod, l)
		}
		last[k] = n
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
