package proxy

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncekv/oncekv/commands"
	"github.com/oncekv/oncekv/resp"
)

// fakeToucher records the notices; it blocks while gate is held.
type fakeToucher struct {
	entered atomic.Int32
	gate    sync.RWMutex
	mu      sync.Mutex
	touched map[int][]string
	flushed []int
	calls   int
}

func (f *fakeToucher) Command(c *resp.Conn, w *resp.Writer, db int, args [][]byte) { w.OK() }

func (f *fakeToucher) Touched(ctx context.Context, db int, keys ...[]byte) error {
	f.entered.Add(1)
	f.gate.RLock()
	defer f.gate.RUnlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	for _, k := range keys {
		f.touched[db] = append(f.touched[db], string(k))
	}
	return nil
}

func (f *fakeToucher) Flushed(ctx context.Context, db int) error {
	f.gate.RLock()
	defer f.gate.RUnlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushed = append(f.flushed, db)
	return nil
}

// The removals a forwarded reply reports are queued for the ONCE handler:
// DEL/UNLINK that removed keys (not those that removed none), FLUSHDB
// (its database) and FLUSHALL (every database); other commands are not.
// The queue is bounded: when the handler is slow, notices are dropped and
// counted, never waited for; the worker batches keys of one database.
func TestNotices(t *testing.T) {
	f := &fakeToucher{touched: map[int][]string{}}
	p := New(Config{Upstream: Upstream{Mode: Standalone, Addrs: []string{"127.0.0.1:1"}},
		Local: commands.New(commands.Config{}, nil), Once: f})
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, tc := range []struct {
		db    int
		args  []string
		reply string
	}{
		{0, []string{"DEL", "a", "b"}, ":2\r\n"},
		{0, []string{"del", "none"}, ":0\r\n"},
		{1, []string{"UNLINK", "c"}, ":1\r\n"},
		{0, []string{"GET", "a"}, "$1\r\nx\r\n"},
		{0, []string{"SET", "d", "v"}, "+OK\r\n"},
		{0, []string{"DEL", "e"}, "-ERR nope\r\n"},
		{2, []string{"FLUSHDB"}, "+OK\r\n"},
		{2, []string{"flushall", "ASYNC"}, "+OK\r\n"},
		{3, []string{"FLUSHDB"}, "-ERR no\r\n"},
	} {
		p.noteWrite(tc.db, bs(tc.args...), []byte(tc.reply))
	}
	eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.touched[0]) == 2 && len(f.touched[1]) == 1 && len(f.flushed) == 2
	})
	f.mu.Lock()
	if got := f.touched; len(got) != 2 || got[0][0] != "a" || got[0][1] != "b" || got[1][0] != "c" {
		t.Errorf("touched %v", got)
	}
	if got := f.flushed; got[0] != 2 || got[1] != -1 {
		t.Errorf("flushed %v, want [2 -1]", got)
	}
	f.mu.Unlock()

	// A slow handler: the queue fills, the rest is dropped, nothing blocks.
	f.gate.Lock()
	entered := f.entered.Load()
	p.noteWrite(5, bs("DEL", "first"), []byte(":1\r\n"))
	eventually(t, func() bool { return f.entered.Load() > entered }) // the worker holds "first"
	start := time.Now()
	const extra = 100
	for i := 0; i < noticeQueue+extra; i++ {
		p.noteWrite(5, bs("DEL", "k"), []byte(":1\r\n"))
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("queueing blocked for %v", el)
	}
	if d := p.stats.noticesDropped.Load(); d != extra {
		t.Errorf("%d notices dropped, want %d", d, extra)
	}
	f.mu.Lock()
	calls := f.calls
	f.mu.Unlock()
	f.gate.Unlock()
	eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.touched[5]) == 1+noticeQueue
	})
	f.mu.Lock()
	if batches := f.calls - calls; batches > 1+noticeQueue/noticeBatch+1 {
		t.Errorf("%d calls for %d notices of one database: not batched", batches, noticeQueue)
	}
	f.mu.Unlock()
}

func eventually(tb testing.TB, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatal("condition not met within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
