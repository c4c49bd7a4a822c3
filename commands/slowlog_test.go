package commands

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oncekv/oncekv/resp"
)

func TestSlowlogArgs(t *testing.T) {
	args := func(ss ...string) [][]byte {
		out := make([][]byte, len(ss))
		for i, s := range ss {
			out[i] = []byte(s)
		}
		return out
	}
	many := func(n int) []string {
		out := []string{"mget"}
		for i := 1; i < n; i++ {
			out = append(out, fmt.Sprint("k", i))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"get", []string{"GET", "k"}, []string{"GET", "k"}},
		{"get", []string{"GET", strings.Repeat("x", 128)}, []string{"GET", strings.Repeat("x", 128)}},
		{"get", []string{"GET", strings.Repeat("x", 130)}, []string{"GET", strings.Repeat("x", 128) + "... (2 more bytes)"}},
		{"mget", many(32), many(32)},
		{"mget", many(33), append(many(32)[:31], "... (2 more arguments)")},
		{"mget", many(100), append(many(32)[:31], "... (69 more arguments)")},
		{"auth", []string{"AUTH", "pw"}, []string{"AUTH", "(redacted)"}},
		{"auth", []string{"AUTH", "u", "pw"}, []string{"AUTH", "(redacted)", "(redacted)"}},
		{"auth", []string{"AUTH", "u", "pw", "x"}, []string{"AUTH", "u", "pw", "x"}},
		{"hello", []string{"HELLO", "3", "SETNAME", "n", "auth", "u", "p"}, []string{"HELLO", "3", "SETNAME", "n", "auth", "(redacted)", "(redacted)"}},
		{"hello", []string{"HELLO", "3", "AUTH", "u"}, []string{"HELLO", "3", "AUTH", "u"}},
		{"hello", []string{"HELLO", "3", "bogus", "AUTH", "u", "p"}, []string{"HELLO", "3", "bogus", "AUTH", "u", "p"}},
		{"config|set", []string{"CONFIG", "SET", "RequirePass", "p", "maxclients", "10"}, []string{"CONFIG", "SET", "RequirePass", "(redacted)", "maxclients", "10"}},
		{"config|set", []string{"CONFIG", "SET", "requirepass", "p", "maxclients"}, []string{"CONFIG", "SET", "requirepass", "p", "maxclients"}},
	} {
		if got := slowlogArgs(tc.name, args(tc.in...)); !slices.Equal(got, tc.want) {
			t.Errorf("slowlogArgs(%s, %q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

func TestLatencyBuckets(t *testing.T) {
	bounds := LatencyBounds()
	if len(bounds) != LatencyBuckets || bounds[0] != 1e-6 {
		t.Fatalf("bounds = %v", bounds)
	}
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{
		{0, 0}, {500 * time.Nanosecond, 0}, {time.Microsecond, 0}, {1001 * time.Nanosecond, 1},
		{2 * time.Microsecond, 1}, {3 * time.Microsecond, 2}, {4 * time.Microsecond, 2},
		{5 * time.Microsecond, 3}, {time.Millisecond, 10}, {1025 * time.Microsecond, 11},
		{time.Hour, LatencyBuckets},
	} {
		got := bucketOf(tc.d)
		if got != tc.want {
			t.Errorf("bucketOf(%v) = %d, want %d", tc.d, got, tc.want)
		}
		// Each duration lies within its bucket's bounds.
		if got < LatencyBuckets && tc.d.Seconds() > bounds[got]+1e-12 {
			t.Errorf("%v is above its bucket's bound %v", tc.d, bounds[got])
		}
		if got > 0 && tc.d.Seconds() <= bounds[got-1] {
			t.Errorf("%v fits the bucket below, %v", tc.d, bounds[got-1])
		}
	}
}

// The slow log keeps the newest slowlog-max-len entries, newest first.
func TestSlowlogRing(t *testing.T) {
	var l slowlog
	s := newCmdTestServer(t)
	x := &Ctx{S: s, Cmd: s.table.Lookup([]byte("get"))}
	x.Conn = &resp.Conn{W: resp.NewWriter(2), Addr: "127.0.0.1:1"}
	for i := 0; i < 10; i++ {
		x.Args = [][]byte{[]byte("GET"), []byte(fmt.Sprint(i))}
		l.add(x, time.Now(), time.Millisecond, 3)
	}
	got := l.newest(100)
	if len(got) != 3 || got[0].id != 9 || got[2].id != 7 || got[0].args[1] != "9" || l.len() != 3 {
		t.Fatalf("newest = %+v", got)
	}
	l.reset()
	if l.len() != 0 || len(l.newest(10)) != 0 {
		t.Fatalf("reset left %d", l.len())
	}
	x.Args = [][]byte{[]byte("GET"), []byte("a")}
	l.add(x, time.Now(), time.Millisecond, 3)
	if e := l.newest(1); e[0].id != 10 {
		t.Fatalf("ids go on after RESET: %+v", e)
	}
}
