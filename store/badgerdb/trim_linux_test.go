package badgerdb

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// tableRSS is how much of dir's table mappings is resident in this
// process, from /proc/self/smaps.
func tableRSS(tb testing.TB, dir string) int64 {
	tb.Helper()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		tb.Fatal(err)
	}
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		tb.Fatal(err)
	}
	var total int64
	in := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if first, _, _ := strings.Cut(line, " "); !strings.HasSuffix(first, ":") {
			// A mapping's first line; its attributes follow.
			_, _, path, ok := parseMapsLine([]byte(line))
			in = ok && filepath.Ext(path) == ".sst" && filepath.Dir(path) == real
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			kb, err := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			total += kb << 10
		}
	}
	return total
}

// tablesRead opens a store in dir whose values are in Badger's tables
// only, with no trim of its own, and reads every value once, so that
// the tables' pages are resident. readAll checks every value again.
func tablesRead(t *testing.T, dir string) (s *DB, readAll func()) {
	t.Helper()
	opts := DefaultOptions(dir)
	opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, 0
	opts.CacheSize = 0 // every read goes to Badger's tables
	opts.BlockCacheSize = 0
	const n = 20000
	// Values that do not compress, so that the tables are as large.
	value := func(i int) string {
		h := sha256.Sum256([]byte(strconv.Itoa(i)))
		return strings.Repeat(hex.EncodeToString(h[:]), 3)
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	for i := 0; i < n; i++ {
		set(t, s, 0, "k"+strconv.Itoa(i), str(value(i), 0))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(opts) // tables mapped, not read yet
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Close() })
	readAll = func() {
		t.Helper()
		for i := 0; i < n; i++ {
			if v, ok := get(t, s, 0, "k"+strconv.Itoa(i)); !ok || v != value(i) {
				t.Fatalf("k%d = %q, %v; want its value", i, v, ok)
			}
		}
	}
	readAll()
	if resident := tableRSS(t, dir); resident < 1<<20 {
		t.Fatalf("only %d bytes of tables resident after reading %d values: the test reads nothing from them", resident, n)
	}
	return s, readAll
}

// The memory target counts resident memory: a trim must take the table
// pages that reads brought in out of it, and lose nothing they hold.
func TestTrimReleasesTablePagesAndKeepsData(t *testing.T) {
	dir := t.TempDir()
	s, readAll := tablesRead(t, dir)
	resident := tableRSS(t, dir)
	trimmed, err := s.trimTables()
	if err != nil {
		t.Fatal(err)
	}
	if trimmed < resident {
		t.Fatalf("trimmed %d bytes of mappings; %d were resident", trimmed, resident)
	}
	if after := tableRSS(t, dir); after > resident/10 {
		t.Fatalf("table pages resident: %d before the trim, %d after", resident, after)
	}
	readAll() // the pages come back from the page cache, intact
}

// While reads of the tables stream in, a trim leaves their pages mapped
// (the reads would map them again at once, a fault each); the first
// interval with few reads hands them back.
func TestTrimWaitsForQuietReads(t *testing.T) {
	dir := t.TempDir()
	s, readAll := tablesRead(t, dir) // no trim of its own: trim runs here only
	const quiet = 100
	s.trimQuiet = quiet
	resident := tableRSS(t, dir)
	check := func(what string, waited int64, trimmed bool) {
		t.Helper()
		s.trim()
		after := tableRSS(t, dir)
		if got := s.trimsWaited.Load(); got != waited {
			t.Fatalf("%s: %d trims waited, want %d", what, got, waited)
		}
		if trimmed && after > resident/10 {
			t.Fatalf("%s: %d bytes of tables resident after the trim (%d before): not trimmed", what, after, resident)
		}
		if !trimmed && after < resident/2 {
			t.Fatalf("%s: %d bytes of tables resident after the trim (%d before): trimmed under reads", what, after, resident)
		}
	}
	check("after reading every value", 1, false)
	readAll()
	check("after reading them again", 2, false)
	check("with no read since", 2, true)
	for i := 0; i < quiet/2; i++ {
		get(t, s, 0, "k"+strconv.Itoa(i))
	}
	check("after a few reads", 2, true)
}

// With TrimInterval set (table-trim-ms), the store trims by itself; with 0,
// never.
func TestTrimRunsEveryInterval(t *testing.T) {
	for _, every := range []time.Duration{0, 20 * time.Millisecond} {
		opts := DefaultOptions(t.TempDir())
		opts.SweepInterval, opts.GCInterval, opts.TrimInterval = 0, 0, every
		s, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		time.Sleep(300 * time.Millisecond)
		n := s.trims.Load()
		s.Close()
		if every == 0 && n != 0 {
			t.Fatalf("%d trims with TrimInterval 0", n)
		}
		if every > 0 && n < 2 {
			t.Fatalf("%d trims in 300 ms with TrimInterval %v", n, every)
		}
	}
}

func TestParseMapsLine(t *testing.T) {
	for _, tc := range []struct {
		line       string
		start, end uintptr
		path       string
		ok         bool
	}{
		{"7f01a000-7f02b000 r--s 00000000 fd:01 1234                       /data/d ir/000042.sst", 0x7f01a000, 0x7f02b000, "/data/d ir/000042.sst", true},
		{"7ffd1000-7ffd2000 rw-p 00000000 00:00 0                          [stack]", 0, 0, "", false},
		{"00400000-00452000 r-xp 00000000 08:02 173521 ", 0, 0, "", false},
		{"zz-7f02b000 r--s 00000000 fd:01 1234 /a.sst", 0, 0, "", false},
	} {
		start, end, path, ok := parseMapsLine([]byte(tc.line))
		if ok != tc.ok || start != tc.start || end != tc.end || path != tc.path {
			t.Errorf("parseMapsLine(%q) = %x, %x, %q, %v; want %x, %x, %q, %v",
				tc.line, start, end, path, ok, tc.start, tc.end, tc.path, tc.ok)
		}
	}
}

// A trim that finds the same table mappings as the last and no read of
// the tables since does nothing (it costs milliseconds with many tables);
// a lookup, a scan (an iterator, counted at its close too) or new tables
// make the next one trim again.
func TestTrimSkipsWhenNothingWasRead(t *testing.T) {
	dir := t.TempDir()
	s, readAll := tablesRead(t, dir)
	trim := func(what string, wantIdle int64) int64 {
		t.Helper()
		n, err := s.trimTables()
		if err != nil {
			t.Fatal(err)
		}
		if got := s.trimsIdle.Load(); got != wantIdle {
			t.Fatalf("%s: %d trims skipped as idle, want %d", what, got, wantIdle)
		}
		return n
	}
	if n := trim("first trim", 0); n == 0 {
		t.Fatal("the first trim trimmed nothing")
	}
	if n := trim("nothing read since", 1); n != 0 {
		t.Fatalf("an idle trim trimmed %d bytes", n)
	}
	readAll()
	if n := trim("after reads", 1); n == 0 || tableRSS(t, dir) > 1<<20 {
		t.Fatalf("after reads: trimmed %d bytes, %d resident", n, tableRSS(t, dir))
	}
	trim("idle again", 2)
	if got := keys(t, s, 0, ""); len(got) == 0 {
		t.Fatal("scan found no key")
	}
	trim("after a scan", 2)
	set(t, s, 0, "new", str("v", 0))
	if err := s.drainForTest(); err != nil {
		t.Fatal(err)
	}
	// The write went to a memtable, whose log pages may count as file
	// pages now: the trim may run; the next has nothing to do.
	if _, err := s.trimTables(); err != nil {
		t.Fatal(err)
	}
	idle := s.trimsIdle.Load()
	trim("idle after a write", idle+1)
	// Badger's own reads of its tables, which the store does not count
	// (a compaction's): the table pages they fault in still go.
	txn := s.bdb.NewTransaction(false)
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true})
	for it.Rewind(); it.Valid(); it.Next() {
		if _, err := it.Item().ValueCopy(nil); err != nil {
			t.Fatal(err)
		}
	}
	it.Close()
	txn.Discard()
	if resident := tableRSS(t, dir); resident < 1<<20 {
		t.Fatalf("Badger's iteration left only %d bytes of tables resident: the test reads nothing from them", resident)
	}
	if n := trim("after Badger's own reads", idle+1); n == 0 || tableRSS(t, dir) > 1<<20 {
		t.Fatalf("after Badger's own reads: trimmed %d bytes, %d resident", n, tableRSS(t, dir))
	}
}
