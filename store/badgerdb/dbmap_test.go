package badgerdb

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncekv/oncekv/store"
)

func swap(tb testing.TB, s *DB, a, b int) {
	tb.Helper()
	if _, err := s.Update(func(tx store.Tx) error { return tx.(store.DBSwapper).SwapDBs(a, b) }); err != nil {
		tb.Fatalf("swap %d %d: %v", a, b, err)
	}
}

// TestSwapDBs: SwapDBs swaps what two databases hold, their counts, their
// deadlines (the sweeper deletes an expired key in the database it went
// to), and what FLUSHDB of one of them removes; it survives a restart and
// a second swap; indexes out of range are ErrBadDB and a == b changes
// nothing (KV-7, KV-4, KV-6).
func TestSwapDBs(t *testing.T) {
	var clock atomic.Int64
	clock.Store(1_000_000)
	dir := t.TempDir()
	s := open(t, dir, FsyncEverysec, &clock)
	set(t, s, 0, "a0", str("zero", 0))
	set(t, s, 0, "t0", str("short", 1_000_100))
	set(t, s, 1, "a1", str("one", 2_000_000))
	set(t, s, 2, "a2", str("two", 0))
	swap(t, s, 0, 1)
	swap(t, s, 3, 3)
	for _, tc := range []struct {
		db        int
		keys      []string
		len, exps int
	}{
		{0, []string{"a1"}, 1, 1},
		{1, []string{"a0", "t0"}, 2, 1},
		{2, []string{"a2"}, 1, 0},
		{3, nil, 0, 0},
	} {
		if got := keys(t, s, tc.db, ""); !slices.Equal(got, tc.keys) {
			t.Errorf("db %d keys = %v, want %v", tc.db, got, tc.keys)
		}
		_, _ = s.View(func(tx store.Tx) error {
			if tx.Len(tc.db) != tc.len || tx.Expiring(tc.db) != tc.exps {
				t.Errorf("db %d Len %d Expiring %d, want %d %d", tc.db, tx.Len(tc.db), tx.Expiring(tc.db), tc.len, tc.exps)
			}
			return nil
		})
	}
	if v, ok := get(t, s, 0, "a1"); !ok || v != "one" {
		t.Errorf("db 0 a1 = %q %v", v, ok)
	}
	// Writes after the swap go to the database named.
	set(t, s, 0, "new0", str("n", 0))
	if got := keys(t, s, 0, ""); !slices.Equal(got, []string{"a1", "new0"}) {
		t.Errorf("db 0 after a write: %v", got)
	}
	// The sweeper finds t0 where it went.
	clock.Store(1_000_100)
	deleted := 0
	for range 10 {
		deleted += s.Sweep(time.Second)
	}
	if deleted != 1 || lenOf(t, s, 1) != 1 {
		t.Errorf("sweep after the swap deleted %d, db 1 Len %d; want 1, 1", deleted, lenOf(t, s, 1))
	}
	for _, db := range [][2]int{{0, 16}, {-1, 0}} {
		_, err := s.Update(func(tx store.Tx) error { return tx.(store.DBSwapper).SwapDBs(db[0], db[1]) })
		if err != store.ErrBadDB {
			t.Errorf("SwapDBs(%d, %d) = %v, want ErrBadDB", db[0], db[1], err)
		}
	}
	if _, err := s.View(func(tx store.Tx) error { return tx.(store.DBSwapper).SwapDBs(0, 1) }); err != store.ErrReadOnly {
		t.Errorf("SwapDBs in a View = %v, want ErrReadOnly", err)
	}
	// FLUSHDB of logical 1 flushes what it holds now, and nothing else.
	if _, err := s.Update(func(tx store.Tx) error { return tx.Flush(1) }); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, s, 1, ""); len(got) != 0 || lenOf(t, s, 1) != 0 {
		t.Errorf("db 1 after FLUSHDB: %v, Len %d", got, lenOf(t, s, 1))
	}
	set(t, s, 1, "b1", str("v", 0))
	swap(t, s, 1, 2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A build that knows only format 2 would ignore the table: it must
	// refuse the directory.
	if b, err := os.ReadFile(filepath.Join(dir, MarkerFile)); err != nil {
		t.Fatal(err)
	} else if v, err := parseMarker(b); err != nil || v <= 2 {
		t.Errorf("marker of a swapped store: format %d, %v; want above 2", v, err)
	}
	s = open(t, dir, FsyncEverysec, &clock)
	for db, want := range map[int][]string{0: {"a1", "new0"}, 1: {"a2"}, 2: {"b1"}} {
		if got := keys(t, s, db, ""); !slices.Equal(got, want) {
			t.Errorf("after a restart, db %d keys = %v, want %v", db, got, want)
		}
		if n := lenOf(t, s, db); n != len(want) {
			t.Errorf("after a restart, db %d Len %d, want %d", db, n, len(want))
		}
	}
	// Swapped back to the identity, across another restart.
	swap(t, s, 1, 2)
	swap(t, s, 0, 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, FsyncEverysec, &clock)
	if s.dbMap.Load() != nil {
		t.Errorf("the identity table is kept as a table")
	}
	if got := keys(t, s, 1, ""); !slices.Equal(got, []string{"a1", "new0"}) {
		t.Errorf("after swapping back, db 1 keys = %v", got)
	}
}

// TestSwapDBsFewerDatabases: a store that swapped database 0 with 10
// refuses to open with 8 databases (the keys would be out of reach), and
// opens with 12.
func TestSwapDBsFewerDatabases(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, FsyncEverysec, nil)
	set(t, s, 0, "k", str("v", 0))
	swap(t, s, 0, 10)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	opts := DefaultOptions(dir)
	opts.Databases = 8
	if s2, err := Open(opts); err == nil || !strings.Contains(err.Error(), "start with at least 16 databases") {
		if s2 != nil {
			s2.Close()
		}
		t.Fatalf("Open with 8 databases after SWAPDB 0 10: %v", err)
	}
	opts.Databases = 12
	s2 := openOpts(t, opts)
	if v, ok := get(t, s2, 10, "k"); !ok || v != "v" {
		t.Errorf("db 10 k = %q %v with 12 databases", v, ok)
	}
}
