package badgerdb

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/oncekv/oncekv/store"
)

// walked is what a WalkKind caller was shown.
type walked struct {
	mu       sync.Mutex
	keys     []string // "db/key/expireAt/data", sorted when done
	done     chan bool
	complete bool
}

func newWalked() *walked { return &walked{done: make(chan bool, 1)} }

func (w *walked) fn(db int, key []byte, v store.Value) {
	w.mu.Lock()
	defer w.mu.Unlock()
	data := string(v.Data)
	if len(data) > 16 {
		data = fmt.Sprintf("%s…(%d bytes)", data[:16], len(data))
	}
	w.keys = append(w.keys, fmt.Sprintf("%d/%s/%d/%s", db, key, v.ExpireAt, data))
}

func (w *walked) finish(complete bool) { w.done <- complete }

// result waits for done and returns what the walk showed.
func (w *walked) result(tb testing.TB) ([]string, bool) {
	tb.Helper()
	complete := <-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	slices.Sort(w.keys)
	return w.keys, complete
}

// WalkKind shows a caller the values of its kind that the keyspace held
// when the store opened, in every database, short ones (in Badger's
// tables) and long ones (in its value log) alike: the ONCE engine finds
// the running records of before a restart there (INFO's running_keys,
// KV-16). Called before Start, the count's walk serves it; called after,
// it walks by itself.
func TestWalkKind(t *testing.T) {
	long := bytes.Repeat([]byte("L"), 2<<20) // over the value threshold
	values := []struct {
		db   int
		key  string
		kind store.Kind
		data []byte
		at   int64
	}{
		{0, "once:a", store.KindOnce, []byte("r-running"), 1 << 50},
		{0, "str:a", store.KindString, []byte("plain"), 0},
		{0, "once:b", store.KindOnce, []byte("d-done"), 0},
		{3, "once:c", store.KindOnce, []byte("r-db3"), 1 << 51},
		{3, "str:long", store.KindString, long, 0},
		{5, "once:long", store.KindOnce, long, 0},
	}
	var want []string
	for _, v := range values {
		if v.kind == store.KindOnce {
			data := string(v.data)
			if len(data) > 16 {
				data = fmt.Sprintf("%s…(%d bytes)", data[:16], len(data))
			}
			want = append(want, fmt.Sprintf("%d/%s/%d/%s", v.db, v.key, v.at, data))
		}
	}
	slices.Sort(want)

	for _, tc := range []struct {
		name        string
		beforeStart bool
	}{
		{"before Start", true},
		{"after Start", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir, FsyncEverysec, nil)
			for _, v := range values {
				set(t, s, v.db, v.key, store.Value{Kind: v.kind, Data: v.data, ExpireAt: v.at})
			}
			if err := s.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			s, err := Open(DefaultOptions(dir))
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			w := newWalked()
			if tc.beforeStart {
				s.WalkKind(store.KindOnce, w.fn, w.finish)
				s.Start()
			} else {
				s.Start()
				s.awaitCount() // the count's walk is over: WalkKind walks by itself
				s.WalkKind(store.KindOnce, w.fn, w.finish)
			}
			got, complete := w.result(t)
			if !complete || !slices.Equal(got, want) {
				t.Fatalf("WalkKind(once): complete=%v, shown\n  %s\nwant\n  %s", complete, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}
