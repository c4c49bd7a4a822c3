package badgerdb

import (
	"context"
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
	t, err := s.Update(func(tx store.Tx) error { return tx.(store.DBSwapper).SwapDBs(a, b) })
	if err != nil {
		tb.Fatalf("swap %d %d: %v", a, b, err)
	}
	if t != nil {
		if err := t.Wait(context.Background()); err != nil {
			tb.Fatalf("swap %d %d: wait: %v", a, b, err)
		}
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

// markerFormat reads the format the marker of dir names.
func markerFormat(tb testing.TB, dir string) int {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, MarkerFile))
	if err != nil {
		tb.Fatal(err)
	}
	v, err := parseMarker(b)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// TestFormatRaisedAtTheFirstSwap: a directory stays at format 2, which
// the builds of before SWAPDB open, until its first SWAPDB; that raises
// the marker to 3 durably before the swap's table is staged, so that a
// crash leaves format 3 with the table or without it (both open), and
// never the table under format 2, which a format-2 build would ignore
// (KV-7, KV-6). A restart keeps format 3.
func TestFormatRaisedAtTheFirstSwap(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, FsyncAlways, nil)
	set(t, s, 0, "k0", str("zero", 0))
	set(t, s, 1, "k1", str("one", 0))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v := markerFormat(t, dir); v != 2 {
		t.Fatalf("after open, writes and close: format %d, want 2", v)
	}
	s = open(t, dir, FsyncAlways, nil)
	if v := markerFormat(t, dir); v != 2 {
		t.Fatalf("after a restart with no SWAPDB: format %d, want 2", v)
	}
	// Images of the directory as a crash would leave it: right after the
	// raise, before the table is staged, and right after the swap.
	var raised string
	defer func(f func()) { formatRaised = f }(formatRaised)
	formatRaised = func() { raised = copyDir(t, dir) }
	swap(t, s, 0, 1)
	if raised == "" {
		t.Fatal("the SWAPDB raised no format")
	}
	if v := markerFormat(t, dir); v != 3 {
		t.Fatalf("after a SWAPDB: format %d, want 3", v)
	}
	swapped := copyDir(t, dir)
	raised2 := ""
	formatRaised = func() { raised2 = "again" }
	swap(t, s, 1, 2)
	if raised2 != "" {
		t.Error("a second SWAPDB raised the format again")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir, FsyncAlways, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v := markerFormat(t, dir); v != 3 {
		t.Fatalf("after a restart of a swapped store: format %d, want 3", v)
	}
	for _, tc := range []struct {
		name string
		dir  string
		// keys of databases 0 and 1
		db0, db1 []string
	}{
		{"a crash right after the raise, before the swap was staged", raised, []string{"k0"}, []string{"k1"}},
		{"a crash right after the swap", swapped, []string{"k1"}, []string{"k0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if v := markerFormat(t, tc.dir); v != 3 {
				t.Fatalf("format %d, want 3", v)
			}
			s := open(t, tc.dir, FsyncAlways, nil)
			if got := keys(t, s, 0, ""); !slices.Equal(got, tc.db0) {
				t.Errorf("db 0 keys %v, want %v", got, tc.db0)
			}
			if got := keys(t, s, 1, ""); !slices.Equal(got, tc.db1) {
				t.Errorf("db 1 keys %v, want %v", got, tc.db1)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if v := markerFormat(t, tc.dir); v != 3 {
				t.Errorf("after a restart: format %d, want 3", v)
			}
		})
	}
}

// TestRestoreWritesTheFormatOfTheBackup: a restore marks the directory
// with format 3 when the backup holds SWAPDB's table, so that a format-2
// build refuses it, and with format 2 otherwise (KV-7).
func TestRestoreWritesTheFormatOfTheBackup(t *testing.T) {
	for _, tc := range []struct {
		name    string
		swapped bool
		want    int
	}{
		{"a store SWAPDB never swapped", false, 2},
		{"a swapped store", true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, t.TempDir(), FsyncAlways, nil)
			set(t, s, 0, "k0", str("zero", 0))
			if tc.swapped {
				swap(t, s, 0, 1)
			}
			file := filepath.Join(t.TempDir(), "backup")
			if _, err := s.BackupFile(file); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "restored")
			if _, err := RestoreFile(DefaultOptions(dir), file); err != nil {
				t.Fatal(err)
			}
			if v := markerFormat(t, dir); v != tc.want {
				t.Errorf("restored marker: format %d, want %d", v, tc.want)
			}
			r := open(t, dir, FsyncAlways, nil)
			db := 0
			if tc.swapped {
				db = 1
			}
			if got := keys(t, r, db, ""); !slices.Equal(got, []string{"k0"}) {
				t.Errorf("restored db %d keys %v, want [k0]", db, got)
			}
		})
	}
}

// TestBackupOfASwappedStore: a backup of a store whose databases SWAPDB
// swapped holds the table, and says so in its header (version 2), so that
// a build that knows only version 1, and would ignore the table, refuses
// it; a backup of a store never swapped, or swapped back, is version 1,
// as before. This build restores both, each database's keys under the
// number the client named (KV-7).
func TestBackupOfASwappedStore(t *testing.T) {
	for _, tc := range []struct {
		name   string
		swaps  [][2]int
		header string
		want   map[int][]string
	}{
		{"never swapped", nil, backupHeader, map[int][]string{0: {"a0"}, 1: {"a1"}}},
		{"swapped", [][2]int{{0, 1}}, backupHeaderSwapped, map[int][]string{0: {"a1"}, 1: {"a0"}}},
		{"swapped back", [][2]int{{0, 1}, {1, 0}}, backupHeader, map[int][]string{0: {"a0"}, 1: {"a1"}}},
		{"swapped with a third", [][2]int{{0, 1}, {1, 2}}, backupHeaderSwapped, map[int][]string{0: {"a1"}, 2: {"a0"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, t.TempDir(), FsyncEverysec, nil)
			set(t, s, 0, "a0", str("zero", 0))
			set(t, s, 1, "a1", str("one", 0))
			for _, sw := range tc.swaps {
				swap(t, s, sw[0], sw[1])
			}
			var buf strings.Builder
			if _, err := s.Backup(&buf); err != nil {
				t.Fatal(err)
			}
			if got := buf.String()[:len(tc.header)]; got != tc.header {
				t.Errorf("backup header %q, want %q", got, tc.header)
			}
			dir := filepath.Join(t.TempDir(), "restored")
			if _, err := Restore(DefaultOptions(dir), strings.NewReader(buf.String())); err != nil {
				t.Fatal(err)
			}
			r := open(t, dir, FsyncEverysec, nil)
			for db := range 3 {
				if got := keys(t, r, db, ""); !slices.Equal(got, tc.want[db]) {
					t.Errorf("restored db %d keys = %v, want %v", db, got, tc.want[db])
				}
			}
		})
	}
}
