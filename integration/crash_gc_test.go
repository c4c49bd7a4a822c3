package integration

// KV-6 and KV-16 under kill -9 during Badger's value-log GC: the GC reads
// a value log file, writes the values still live in it again (into the
// newest value log, through the memtable and its log) and deletes the
// file. A kill at any moment of that must lose no acknowledged write,
// bring back no deleted or flushed key, and leave a directory that opens
// by itself.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// gcValue is the value of key, n bytes long: large enough (with
// --memtable-size 1mb, Badger keeps values from about 92 KB in its value
// log) to live in the value log.
func gcValue(key string, n int) string {
	return strings.Repeat(key+";", n/(len(key)+1)+1)[:n]
}

// gcKey is a key of TestCrashDuringValueLogGC's ledger and what a
// restarted server must show of it.
type gcKey struct {
	key     string
	val     string // "" for a deleted key
	ttl     bool   // set with EX 3600
	once    string // "running" or "done" for a ONCE record
	token   string // of a running record
	keepTTL bool   // a done record kept with KEEP
}

// TestCrashDuringValueLogGC writes, cycle after cycle, values that live
// in Badger's value log (with TTLs or none, and ONCE answers as large),
// beside twice as many in database 1; waits until Badger has them; then
// deletes and rewrites some and flushes database 1, which leaves most of
// those value log files garbage, and kills the server while the GC
// rewrites them: 0-5 ms after it starts on its first or second file
// (it logs each at debug level). The server runs its GC
// every 20 ms over 1 MiB value log files (ONCEKVTEST_VLOG_GC_MS, a hook of
// the test build: store/badgerdb/testhooks_on.go). After each restart,
// which must open by itself (KV-6), every acknowledged write of every
// cycle is there with its value and TTL, deleted keys stay deleted,
// database 1 stays empty, running claims keep their tokens and done
// records their answers and keep (KV-16).
func TestCrashDuringValueLogGC(t *testing.T) {
	t.Parallel()
	const (
		cycles  = 8
		live    = 16 // keys of database 0 per cycle
		garbage = 32 // of database 1, flushed
		onces   = 6
	)
	env := []string{"ONCEKVTEST_VLOG_GC_MS=20"}
	args := []string{"--appendfsync", "always", "--memtable-size", "1mb", "--loglevel", "debug"}
	srv := StartOncekvEnv(t, env, args...)
	rng := rand.New(rand.NewPCG(20, 26))
	size := func() int { return 100_000 + rng.IntN(60_000) }
	var ledger []*gcKey
	rewrites, inside := 0, 0
	for cycle := range cycles {
		c := DialRaw(t, srv.Addr)
		c.Timeout = 30 * time.Second
		var cmds [][]string
		var fresh []*gcKey
		for i := range garbage {
			if i%2 == 0 {
				k := &gcKey{key: fmt.Sprintf("v:%d:%d", cycle, i/2), ttl: i%4 == 0}
				k.val = gcValue(k.key, size())
				set := []string{"SET", k.key, k.val}
				if k.ttl {
					set = append(set, "EX", "3600")
				}
				cmds = append(cmds, []string{"SELECT", "0"}, set)
				fresh = append(fresh, k)
			}
			g := fmt.Sprintf("g:%d:%d", cycle, i)
			cmds = append(cmds, []string{"SELECT", "1"}, []string{"SET", g, gcValue(g, size())})
		}
		cmds = append(cmds, []string{"SELECT", "0"})
		expectAllOK(t, pipeline(t, c, cmds))
		var claims []*gcKey
		for i := range onces {
			claims = append(claims, &gcKey{key: fmt.Sprintf("o:%d:%d", cycle, i), once: "running"})
		}
		cmds = cmds[:0]
		for i, f := range pipeline(t, c, claimCmds(claims)) {
			if len(f.Elems) != 2 || f.Elems[0].Str != "claimed" {
				t.Fatalf("cycle %d: ONCE.CLAIM %s: %q", cycle, claims[i].key, f.Raw)
			}
			k := claims[i]
			k.token = f.Elems[1].Str
			if i%3 == 0 {
				continue // left running
			}
			k.once, k.val, k.keepTTL = "done", gcValue("answer-"+k.key, size()), i%3 == 1
			complete := []string{"ONCE.COMPLETE", k.key, k.token, k.val}
			if k.keepTTL {
				complete = append(complete, "KEEP", "3600000")
			}
			cmds = append(cmds, complete)
		}
		expectAllOK(t, pipeline(t, c, cmds))
		fresh = append(fresh, claims...)
		ledger = append(ledger, fresh...)
		waitApplied(t, c)

		// Delete a quarter of the new string keys and rewrite another,
		// and flush database 1: what Badger's value log held of them
		// becomes garbage for its GC.
		cmds = cmds[:0]
		for i, k := range fresh[:live] {
			switch i % 4 {
			case 1:
				k.val = ""
				cmds = append(cmds, []string{"DEL", k.key})
			case 2:
				k.val, k.ttl = gcValue("new-"+k.key, size()), false
				cmds = append(cmds, []string{"SET", k.key, k.val})
			}
		}
		for i, f := range pipeline(t, c, cmds) {
			if f.Type == '-' {
				t.Fatalf("cycle %d: %s: %q", cycle, fmtArgs(cmds[i]), f.Raw)
			}
		}
		before := strings.Count(srv.Output(), "Rewriting fid")
		if f := doFrame(t, c, "SELECT", "1"); f.Str != "OK" {
			t.Fatalf("SELECT 1: %q", f.Raw)
		}
		if f := doFrame(t, c, "FLUSHDB"); f.Str != "OK" {
			t.Fatalf("cycle %d: FLUSHDB: %q", cycle, f.Raw)
		}
		c.Close()

		// Kill while the GC rewrites: once it starts on its nth file (or
		// has started on fewer and found no more for 300 ms), at a
		// random moment of the next 5 ms.
		nth := 1 + rng.IntN(2)
		began := time.Now()
		var n int
		var first time.Time
		for {
			n = strings.Count(srv.Output(), "Rewriting fid") - before
			if n > 0 && first.IsZero() {
				first = time.Now()
			}
			if n >= nth || (n > 0 && time.Since(first) > 300*time.Millisecond) {
				break
			}
			if n == 0 && time.Since(began) > 10*time.Second {
				t.Fatalf("cycle %d: the value-log GC started on no file within 10 s of the FLUSHDB (is the binary built with -tags oncekv_testhooks?)", cycle)
			}
			time.Sleep(200 * time.Microsecond)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(5 * time.Millisecond))))
		srv.Kill(t)
		// Was the file the GC worked on last still there: was the kill
		// inside its rewrite, or after the file's deletion?
		out := srv.Output()
		fid, _ := strconv.Atoi(strings.Fields(out[strings.LastIndex(out, "Rewriting fid: ")+len("Rewriting fid: "):])[0])
		if _, err := os.Stat(filepath.Join(srv.Dir, fmt.Sprintf("%06d.vlog", fid))); err == nil {
			inside++
		}
		rewrites += strings.Count(out, "Rewriting fid") - before
		srv = srv.Restart(t) // fails the test if the directory does not open by itself
		checkGCLedger(t, srv.Addr, cycle, ledger)
		if t.Failed() {
			return
		}
	}
	t.Logf("%d kills after the GC began %d rewrites of value log files; %d kills while the file last begun was still there; %d keys checked",
		cycles, rewrites, inside, len(ledger))
}

// claimCmds are the ONCE.CLAIMs of keys, with a 10-minute lease.
func claimCmds(keys []*gcKey) [][]string {
	var cmds [][]string
	for _, k := range keys {
		cmds = append(cmds, []string{"ONCE.CLAIM", k.key, "LEASE", "600000"})
	}
	return cmds
}

// waitApplied waits until the server has handed every logged write to
// Badger (INFO persistence: oncekv_pending_writes 0).
func waitApplied(tb testing.TB, c *RawConn) {
	tb.Helper()
	waitFor(tb, 20*time.Second, 20*time.Millisecond, "the writes applied to Badger", func() (bool, string) {
		v := infoField(doFrame(tb, c, "INFO", "persistence").Str, "oncekv_pending_writes")
		return v == "0", "oncekv_pending_writes " + v
	})
}

// checkGCLedger checks the restarted server against the ledger.
func checkGCLedger(tb testing.TB, addr string, cycle int, ledger []*gcKey) {
	tb.Helper()
	c := DialRaw(tb, addr)
	defer c.Close()
	c.Timeout = 30 * time.Second
	var cmds [][]string
	for _, k := range ledger {
		switch k.once {
		case "":
			cmds = append(cmds, []string{"GET", k.key}, []string{"TTL", k.key})
		case "running":
			cmds = append(cmds, []string{"ONCE.STATUS", k.key}, []string{"TTL", k.key})
		case "done":
			cmds = append(cmds, []string{"ONCE.WAIT", k.key, "TIMEOUT", "1"}, []string{"TTL", k.key})
		}
	}
	replies := pipeline(tb, c, cmds)
	bad := 0
	for i, k := range ledger {
		f, ttlF := replies[2*i], replies[2*i+1]
		ttl, _ := frameInt(ttlF)
		var what string
		switch {
		case k.once == "" && k.val == "" && !f.Null:
			what = fmt.Sprintf("deleted, holds %d bytes again", len(f.Str))
		case k.once == "" && k.val != "" && f.Str != k.val:
			what = fmt.Sprintf("holds %d bytes (%.20q), acknowledged %d (%.20q)", len(f.Str), f.Str, len(k.val), k.val)
		case k.once == "" && k.val != "" && k.ttl && (ttl <= 3000 || ttl > 3600):
			what = fmt.Sprintf("TTL %d, set with EX 3600", ttl)
		case k.once == "" && k.val != "" && !k.ttl && ttl != -1:
			what = fmt.Sprintf("TTL %d, set without one", ttl)
		case k.once == "running" && (statusField(f, "state") != "running" || statusField(f, "token") != k.token):
			what = fmt.Sprintf("ONCE.STATUS %q, acknowledged a claim with token %s", f.Raw, k.token)
		case k.once == "running" && (ttl <= 0 || ttl > 600):
			what = fmt.Sprintf("running with TTL %d, claimed with a 600 s lease", ttl)
		case k.once == "done" && (len(f.Elems) != 2 || f.Elems[0].Str != "done" || f.Elems[1].Str != k.val):
			what = fmt.Sprintf("ONCE.WAIT %.60q, acknowledged the answer of %d bytes", f.Raw, len(k.val))
		case k.once == "done" && k.keepTTL && (ttl <= 3000 || ttl > 3600):
			what = fmt.Sprintf("done with TTL %d, kept with KEEP 3600000", ttl)
		case k.once == "done" && !k.keepTTL && ttl != -1:
			what = fmt.Sprintf("done with TTL %d, kept without KEEP", ttl)
		}
		if what != "" {
			if bad++; bad <= 10 {
				tb.Errorf("cycle %d: %s after a kill -9 during value-log GC: %s", cycle, k.key, what)
			}
		}
	}
	if bad > 0 {
		tb.Errorf("cycle %d: %d of %d keys wrong after a kill -9 during value-log GC (KV-6, KV-16)", cycle, bad, len(ledger))
	}
	if f := doFrame(tb, c, "SELECT", "1"); f.Str != "OK" {
		tb.Fatalf("SELECT 1: %q", f.Raw)
	}
	if f := doFrame(tb, c, "DBSIZE"); f.Str != "0" {
		tb.Errorf("cycle %d: database 1 holds %q keys after its acknowledged FLUSHDB and a kill -9 during value-log GC", cycle, f.Raw)
	}
}
