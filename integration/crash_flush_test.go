package integration

// KV-6 and KV-7 under kill -9 during FLUSHDB and FLUSHALL: a flush drops
// keys in Badger (DropPrefix), outside the write-ahead log, so a crash in
// the middle of it must still leave a directory that opens by itself, with
// the flushed databases either as they were or empty (never a part of
// them, nor older values of their keys), and the other databases
// untouched.

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestCrashDuringFlushDB loads a database with keys in Badger's tables
// (1 MiB memtables, so flushes and compactions run), rewrites a quarter of
// them just before FLUSHDB (their new values still in the memtable), sends
// FLUSHDB and kills the server at a random moment of it (within the time
// such a FLUSHDB took, measured first). The restart must open the
// directory without repair (KV-6), and database 0 must hold all its keys
// with their last values or none; database 1 keeps its keys (KV-7).
//
// The kill lands at random, so one run need not meet a given window:
// before the fixes it found, about one run in three failed to restart
// (an empty .mem file; unrecorded compaction tables). The store's
// TestOwnerAndCorruptDirs holds the deterministic cases.
func TestCrashDuringFlushDB(t *testing.T) {
	t.Parallel()
	const (
		cycles = 7
		keys   = 20000
		kept   = 200
	)
	srv := StartOncekv(t, "--appendfsync", "always", "--memtable-size", "1mb", "--loglevel", "warning")
	rng := rand.New(rand.NewPCG(6, 7))
	// load fills database 1 with keys FLUSHDB of database 0 must leave
	// alone, and database 0 with keys, a quarter of them rewritten just
	// before it returns; it returns both, as they should be, and a
	// connection on database 0.
	load := func(cycle int) (c *RawConn, want, keep map[string]string) {
		want, keep = map[string]string{}, map[string]string{}
		var cmds [][]string
		cmds = append(cmds, []string{"SELECT", "1"})
		for i := range kept {
			k := fmt.Sprintf("keep:%d:%d", cycle, i)
			keep[k] = k + strings.Repeat("k", 100)
			cmds = append(cmds, []string{"SET", k, keep[k]})
		}
		cmds = append(cmds, []string{"SELECT", "0"})
		for i := range keys {
			k := fmt.Sprintf("f:%d:%06d", cycle, i)
			want[k] = "old:" + k + strings.Repeat("o", 200)
			cmds = append(cmds, []string{"SET", k, want[k]})
		}
		c = DialRaw(t, srv.Addr)
		c.Timeout = 30 * time.Second
		expectAllOK(t, pipeline(t, c, cmds))
		// Let the applier hand the load to Badger, whose memtables
		// flush into tables and whose compactions start.
		time.Sleep(200 * time.Millisecond)
		cmds = cmds[:0]
		for i := 0; i < keys; i += 4 {
			k := fmt.Sprintf("f:%d:%06d", cycle, i)
			want[k] = "new:" + k
			cmds = append(cmds, []string{"SET", k, want[k]})
		}
		expectAllOK(t, pipeline(t, c, cmds))
		// Long enough for the applier to hand the rewrites to Badger
		// too, so that the FLUSHDB is mostly Badger's DropPrefix.
		time.Sleep(300 * time.Millisecond)
		return c, want, keep
	}
	flushed := 0
	// How long such a FLUSHDB takes here: the kills fall within it.
	c, _, _ := load(-1)
	began := time.Now()
	if f := doFrame(t, c, "FLUSHDB"); f.Str != "OK" {
		t.Fatalf("FLUSHDB: %q", f.Raw)
	}
	took := time.Since(began)
	c.Close()
	for cycle := range cycles {
		c, want, keep := load(cycle)
		c.Send(EncodeCommand("FLUSHDB"))
		time.Sleep(time.Duration(rng.Int64N(int64(took + took/4))))
		srv.Kill(t)
		c.Close()
		srv = srv.Restart(t) // fails the test if the directory does not open by itself

		c = DialRaw(t, srv.Addr)
		c.Timeout = 30 * time.Second
		got := scanValues(t, c, 0, fmt.Sprintf("f:%d:*", cycle))
		switch {
		case len(got) == 0:
			flushed++
		case len(got) != len(want):
			t.Errorf("cycle %d: database 0 holds %d of its %d keys after a kill -9 during FLUSHDB: flushed in part", cycle, len(got), len(want))
		}
		if len(got) > 0 {
			bad := 0
			for k, v := range want {
				if g, ok := got[k]; ok && g != v {
					if bad++; bad <= 3 {
						t.Errorf("cycle %d: %s = %.20q after the crash, last written %.20q", cycle, k, g, v)
					}
				}
			}
			if bad > 0 {
				t.Errorf("cycle %d: %d keys hold an older value after a kill -9 during FLUSHDB", cycle, bad)
			}
		}
		got = scanValues(t, c, 1, fmt.Sprintf("keep:%d:*", cycle))
		for k, v := range keep {
			if got[k] != v {
				t.Errorf("cycle %d: db 1 %s = %q after FLUSHDB of db 0 and a crash, want %q", cycle, k, got[k], v)
				break
			}
		}
		// Start the next cycle with database 0 empty.
		if f := doFrame(t, c, "SELECT", "0"); f.Str != "OK" {
			t.Fatalf("SELECT 0: %q", f.Raw)
		}
		if f := doFrame(t, c, "FLUSHDB"); f.Str != "OK" {
			t.Fatalf("FLUSHDB: %q", f.Raw)
		}
		c.Close()
		if t.Failed() {
			return
		}
	}
	t.Logf("FLUSHDB took %v; %d cycles: FLUSHDB took effect before the kill in %d, not in %d", took, cycles, flushed, cycles-flushed)
}

// expectAllOK fails tb unless every reply is +OK.
func expectAllOK(tb testing.TB, replies []*Frame) {
	tb.Helper()
	for i, f := range replies {
		if f.Type != '+' || f.Str != "OK" {
			tb.Fatalf("reply %d: %q", i, f.Raw)
		}
	}
}

// scanValues returns the keys of database db that match pattern, with
// their values.
func scanValues(tb testing.TB, c *RawConn, db int, pattern string) map[string]string {
	tb.Helper()
	if f := doFrame(tb, c, "SELECT", fmt.Sprint(db)); f.Str != "OK" {
		tb.Fatalf("SELECT %d: %q", db, f.Raw)
	}
	f := doFrame(tb, c, "KEYS", pattern)
	var cmds [][]string
	for _, e := range f.Elems {
		cmds = append(cmds, []string{"GET", e.Str})
	}
	out := map[string]string{}
	for i, r := range pipeline(tb, c, cmds) {
		out[f.Elems[i].Str] = r.Str
	}
	return out
}

// TestCrashDuringFlushAll: FLUSHALL is one command, so a kill -9 at any
// moment of it leaves every database as it was or every one empty, never
// some flushed and others not (KV-6, KV-7).
func TestCrashDuringFlushAll(t *testing.T) {
	t.Parallel()
	const (
		cycles = 8
		dbs    = 3
		keys   = 6000
	)
	srv := StartOncekv(t, "--appendfsync", "always", "--memtable-size", "1mb", "--loglevel", "warning")
	rng := rand.New(rand.NewPCG(8, 9))
	load := func(cycle int) *RawConn {
		var cmds [][]string
		for db := range dbs {
			cmds = append(cmds, []string{"SELECT", fmt.Sprint(db)})
			for i := range keys {
				k := fmt.Sprintf("a:%d:%06d", cycle, i)
				cmds = append(cmds, []string{"SET", k, k + strings.Repeat("a", 200)})
			}
		}
		c := DialRaw(t, srv.Addr)
		c.Timeout = 30 * time.Second
		expectAllOK(t, pipeline(t, c, cmds))
		time.Sleep(300 * time.Millisecond)
		return c
	}
	c := load(-1)
	began := time.Now()
	if f := doFrame(t, c, "FLUSHALL"); f.Str != "OK" {
		t.Fatalf("FLUSHALL: %q", f.Raw)
	}
	took := time.Since(began)
	c.Close()
	flushed := 0
	for cycle := range cycles {
		c := load(cycle)
		c.Send(EncodeCommand("FLUSHALL"))
		time.Sleep(time.Duration(rng.Int64N(int64(took + took/4))))
		srv.Kill(t)
		c.Close()
		srv = srv.Restart(t) // fails the test if the directory does not open by itself

		c = DialRaw(t, srv.Addr)
		c.Timeout = 30 * time.Second
		var counts []int
		for db := range dbs {
			got := scanValues(t, c, db, fmt.Sprintf("a:%d:*", cycle))
			counts = append(counts, len(got))
			for k, v := range got {
				if v != k+strings.Repeat("a", 200) {
					t.Errorf("cycle %d: db %d %s = %.20q after the crash", cycle, db, k, v)
					break
				}
			}
		}
		for _, n := range counts {
			if n != counts[0] || (n != 0 && n != keys) {
				t.Errorf("cycle %d: after a kill -9 during FLUSHALL, databases 0..%d hold %v of their %d keys: flushed in part", cycle, dbs-1, counts, keys)
				break
			}
		}
		if counts[0] == 0 {
			flushed++
		}
		if f := doFrame(t, c, "FLUSHALL"); f.Str != "OK" {
			t.Fatalf("FLUSHALL: %q", f.Raw)
		}
		c.Close()
		if t.Failed() {
			return
		}
	}
	t.Logf("FLUSHALL took %v; %d cycles: it took effect before the kill in %d, not in %d", took, cycles, flushed, cycles-flushed)
}
