package integration

// KV-6 under kill -9 during the very first start on an empty directory:
// the server marks the directory (oncekv.meta, through a temporary file),
// then Badger writes its first MANIFEST, KEYREGISTRY, memtable and value
// logs, then the store its write-ahead log and oncekv.running. A kill at
// any moment of that must leave a directory that the next start opens by
// itself.

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCrashFirstStart kills the first start of a server on an empty
// directory at random moments within the time such a start takes to
// answer PING (measured first), and restarts it on the directory it left:
// it must open without repair (KV-6) and keep what it is told after.
// store/badgerdb's TestOwnerAndCorruptDirs holds the states a kill leaves
// deterministically; this finds the ones nobody thought of.
func TestCrashFirstStart(t *testing.T) {
	t.Parallel()
	const cycles = 16
	bin := BuildOncekv(t)
	// How long a first start takes here.
	began := time.Now()
	first := StartOncekv(t, "--appendfsync", "always", "--loglevel", "warning")
	took := time.Since(began)
	first.Stop(t)

	rng := rand.New(rand.NewPCG(16, 6))
	seen := map[string]int{} // the directory's files at the kill
	for cycle := range cycles {
		dir := t.TempDir()
		port := FreePort(t)
		args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
			"--appendfsync", "always", "--loglevel", "warning"}
		p, err := startProc(exec.Command(bin, args...))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(took + took/4))))
		if p.exited() {
			t.Fatalf("cycle %d: the first start exited by itself:\n%s", cycle, p.tail(3000))
		}
		p.kill()
		seen[dirListing(t, dir)]++

		// Fails the test if the directory does not open by itself.
		srv := StartOncekv(t, "--dir", dir, "--appendfsync", "always", "--loglevel", "warning")
		c := DialRaw(t, srv.Addr)
		if f := doFrame(t, c, "SET", "k", "v"+strconv.Itoa(cycle)); f.Str != "OK" {
			t.Fatalf("cycle %d: SET after the restart: %q", cycle, f.Raw)
		}
		c.Close()
		srv.Kill(t)
		srv = srv.Restart(t)
		c = DialRaw(t, srv.Addr)
		if f := doFrame(t, c, "GET", "k"); f.Str != "v"+strconv.Itoa(cycle) {
			t.Errorf("cycle %d: GET k = %q after a second kill -9, want the acknowledged %q", cycle, f.Raw, "v"+strconv.Itoa(cycle))
		}
		c.Close()
		srv.Kill(t)
	}
	listings := slices.Sorted(func(yield func(string) bool) {
		for l := range seen {
			if !yield(l) {
				return
			}
		}
	})
	t.Logf("a first start takes %v; %d kills left %d different directories:", took.Round(time.Millisecond), cycles, len(listings))
	for _, l := range listings {
		t.Logf("  %dx [%s]", seen[l], l)
	}
}

// dirListing names the entries of dir (the directory's file sizes, where
// empty, marked "=0").
func dirListing(tb testing.TB, dir string) string {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		n := e.Name()
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
			n += "=0"
		}
		names = append(names, n)
	}
	return strings.Join(names, " ")
}
