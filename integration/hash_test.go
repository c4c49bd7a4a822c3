package integration

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
)

// TestHashIncrConcurrent is KV-1's promise for hashes: connections that
// HINCRBY the same fields of one hash at once lose no increment, and each
// reply is a distinct value of the field's count.
func TestHashIncrConcurrent(t *testing.T) {
	t.Parallel()
	o := StartOncekv(t)
	const conns, per, fields = 6, 200, 3
	cs := dialRawN(t, o.Addr, conns)
	var sink errSink
	got := make([][]int64, fields) // the replies, by field
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range per {
				f := (w + j) % fields
				r, err := rawDo(c, "HINCRBY", "counters", "f"+strconv.Itoa(f), "1")
				if err != nil {
					sink.add("conn %d: HINCRBY: %v", w, err)
					return
				}
				n, err := frameInt(r)
				if err != nil {
					sink.add("conn %d: %v", w, err)
					return
				}
				mu.Lock()
				got[f] = append(got[f], n)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sink.report(t)
	c := DialRaw(t, o.Addr)
	total := 0
	for f := range fields {
		checkConsecutive(t, fmt.Sprintf("HINCRBY replies of f%d", f), got[f], len(got[f]))
		r := c.ReadFrameAfterDo(t, "HGET", "counters", "f"+strconv.Itoa(f))
		if n, err := frameInt(r); err != nil || n != int64(len(got[f])) {
			t.Errorf("HGET counters f%d = %q, want %d", f, r.Raw, len(got[f]))
		}
		total += len(got[f])
	}
	if total != conns*per {
		t.Errorf("%d increments answered, want %d", total, conns*per)
	}
}

// TestHashRestart: hashes survive a graceful restart and kill -9 under
// appendfsync always (KV-6), fields in their order, with their encoding
// and TTL, and a ONCE command on a hash key answers WRONGTYPE before and
// after.
func TestHashRestart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		down func(*Oncekv, testing.TB)
	}{
		{"graceful", (*Oncekv).Stop},
		{"kill9-always", (*Oncekv).Kill},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := StartOncekv(t, "--appendfsync", "always")
			c := DialRaw(t, o.Addr)
			args := []string{"HSET", "big"}
			for i := range 600 {
				args = append(args, "f"+strconv.Itoa(i), "v"+strconv.Itoa(i))
			}
			steps := [][]string{
				{"HSET", "small", "b", "2", "a", "1", binary, binary},
				{"HDEL", "small", "b"},
				{"HSET", "small", "b", "3"},
				args,
				{"HSET", "ttl", "x", "y"},
				{"EXPIRE", "ttl", "1000"},
			}
			for _, s := range steps {
				if r := c.Do(s...); r[0] == '-' {
					t.Fatalf("%q: %s", s, r)
				}
			}
			check := func(phase string) {
				c := DialRaw(t, o.Addr)
				for _, q := range []struct {
					args []string
					want string
				}{
					{[]string{"HGETALL", "small"}, "*6\r\n$1\r\na\r\n$1\r\n1\r\n$4\r\n" + binary + "\r\n$4\r\n" + binary + "\r\n$1\r\nb\r\n$1\r\n3\r\n"},
					{[]string{"OBJECT", "ENCODING", "small"}, "$8\r\nlistpack\r\n"},
					{[]string{"HLEN", "big"}, ":600\r\n"},
					{[]string{"HGET", "big", "f599"}, "$4\r\nv599\r\n"},
					{[]string{"OBJECT", "ENCODING", "big"}, "$9\r\nhashtable\r\n"},
					{[]string{"TYPE", "ttl"}, "+hash\r\n"},
					{[]string{"ONCE.CLAIM", "small"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
					{[]string{"ONCE.STATUS", "small"}, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
				} {
					if r := c.Do(q.args...); string(r) != q.want {
						t.Errorf("%s: %q = %q, want %q", phase, q.args, r, q.want)
					}
				}
				r := c.ReadFrameAfterDo(t, "TTL", "ttl")
				if n, err := frameInt(r); err != nil || n < 990 || n > 1000 {
					t.Errorf("%s: TTL ttl = %q, want about 1000", phase, r.Raw)
				}
			}
			check("before the restart")
			tc.down(o, t)
			o = o.Restart(t)
			check("after the restart")
		})
	}
}

// TestHashOnceWrongType: the ONCE engine's own type check refuses a hash
// key, and hash commands refuse a ONCE record.
func TestHashOnceWrongType(t *testing.T) {
	t.Parallel()
	o := StartOncekv(t)
	c := DialRaw(t, o.Addr)
	const wrong = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
	c.Do("HSET", "h", "a", "1")
	c.Do("ONCE.CLAIM", "rec", "LEASE", "60000")
	for _, args := range [][]string{
		{"ONCE.CLAIM", "h"}, {"ONCE.WAIT", "h", "TIMEOUT", "10"}, {"ONCE.STATUS", "h"},
		{"ONCE.COMPLETE", "h", "1", "x"}, {"ONCE.ABORT", "h", "1"}, {"ONCE.EXTEND", "h", "1", "LEASE", "10"},
		{"HGET", "rec", "a"}, {"HSET", "rec", "a", "1"}, {"HGETALL", "rec"}, {"HDEL", "rec", "a"},
		{"HINCRBY", "rec", "a", "1"}, {"HSCAN", "rec", "0"}, {"HRANDFIELD", "rec"}, {"HLEN", "rec"},
	} {
		if r := c.Do(args...); string(r) != wrong {
			t.Errorf("%q = %q, want WRONGTYPE", args, r)
		}
	}
	if r := c.Do("TYPE", "rec"); string(r) != "+once\r\n" {
		t.Errorf("TYPE rec = %q after the hash commands", r)
	}
}
