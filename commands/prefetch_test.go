package commands

import (
	"fmt"
	"sync"
	"testing"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/store/badgerdb"
)

// prefetchRecorder is the store, recording what it is asked to prefetch.
type prefetchRecorder struct {
	*badgerdb.DB
	mu    sync.Mutex
	calls []string
}

func (p *prefetchRecorder) Prefetch(db int, keys [][]byte) uintptr {
	p.mu.Lock()
	p.calls = append(p.calls, fmt.Sprintf("%d%q", db, keys))
	p.mu.Unlock()
	return p.DB.Prefetch(db, keys)
}

// A pipeline led by a command with the Prefetch flag has the keys of its
// commands with the flag fetched ahead, in the connection's database, once
// per read, up to a SELECT or a MULTI; one led by another command (SELECT,
// DEL, MULTI), and a lone command, not at all, except MGET, which
// prefetches its own keys in runs. The replies are as without it (issue 6).
func TestPipelinePrefetchesTheKeysItReads(t *testing.T) {
	st := &prefetchRecorder{DB: openTestStore(t)}
	s := New(Config{Logger: zap.NewNop()}, st)
	conn, r := serveOne(t, s)
	for _, c := range []struct {
		send  string
		lines int
		calls []string
	}{
		{multibulk("SET", "a", "1") + multibulk("SET", "b", "x") + multibulk("SET", "c", "3"), 3, []string{`0["a" "b" "c"]`}},
		{multibulk("GET", "a"), 2, nil},
		{multibulk("GET", "a") + multibulk("SET", "d", "4") + multibulk("INCR", "c") + multibulk("PING") + multibulk("get", "b"),
			2 + 1 + 1 + 1 + 2, []string{`0["a" "d" "c" "b"]`}},
		{multibulk("SELECT", "3") + multibulk("GET", "a") + multibulk("GET", "b"), 3, nil}, // db 3 is empty: $-1 each
		{multibulk("GET", "a") + multibulk("GET", "b"), 2, []string{`3["a" "b"]`}},
		{multibulk("DEL", "x") + multibulk("GET", "a") + multibulk("GET", "b"), 3, nil}, // led by DEL
		// MGET prefetches its own keys, mgetRun at a time.
		{multibulk("MGET", "a", "b", "c"), 4, []string{`3["a" "b" "c"]`}},
		{multibulk("MGET", "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "k10", "k11", "k12", "k13", "k14", "k15", "k16", "k17"), 19,
			[]string{`3["k0" "k1" "k2" "k3" "k4" "k5" "k6" "k7" "k8" "k9" "k10" "k11" "k12" "k13" "k14" "k15"]`, `3["k16" "k17"]`}},
		{multibulk("MGET", "a"), 2, nil},
		// The keys after a SELECT or a MULTI are not prefetched.
		{multibulk("GET", "a") + multibulk("GET", "c") + multibulk("SELECT", "0") + multibulk("GET", "b"),
			1 + 1 + 1 + 2, []string{`3["a" "c"]`}},
		{multibulk("MULTI") + multibulk("GET", "a") + multibulk("GET", "b") + multibulk("EXEC"), 6, nil},
		{multibulk("GET", "a") + multibulk("GET", "b") + multibulk("MULTI") + multibulk("GET", "c") + multibulk("EXEC"),
			2 + 2 + 1 + 1 + 3, []string{`0["a" "b"]`}},
	} {
		st.mu.Lock()
		st.calls = nil
		st.mu.Unlock()
		if _, err := conn.Write([]byte(c.send)); err != nil {
			t.Fatal(err)
		}
		var got []string
		for range c.lines {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("%q: after %q: %v", c.send, got, err)
			}
			got = append(got, line)
		}
		st.mu.Lock()
		calls := st.calls
		st.mu.Unlock()
		if fmt.Sprint(calls) != fmt.Sprint(c.calls) {
			t.Errorf("%q (replies %q): prefetched %q, want %q", c.send, got, calls, c.calls)
		}
	}
}
