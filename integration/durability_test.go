package integration

// KV-6 and KV-16 beyond the crash harness: a full disk, a data directory
// that is not ours or is damaged, and backup/restore, all on the built
// binary.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// mountTmpfs mounts a tmpfs of size on a fresh directory, or skips the test
// where mounting is not allowed. The mount goes away after the test (after
// the servers started later are stopped).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root; store/badgerdb's TestDiskWriteFailure covers failing writes")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s); store/badgerdb's TestDiskWriteFailure covers failing writes", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			exec.Command("umount", "-l", dir).Run()
			t.Logf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

func randomBytes(rng *rand.ChaCha8, n int) string {
	b := make([]byte, n)
	rng.Read(b)
	return string(b)
}

// TestDiskFull fills a small real filesystem under appendfsync always:
// writes are then refused with -MISCONF (the write that met the full disk
// closes its connection unanswered, never +OK), INFO names the cause, the
// process stays up (Badger's memory-mapped writes would otherwise crash it
// with SIGBUS), reads keep working; when space returns writes resume by
// themselves, and after kill -9 and a restart every acknowledged write is
// there.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	// The reserve must hold what Badger writes through memory maps after
	// the check (its memtable logs, a flush, compactions): 40 MiB is ten
	// 4 MiB memtables.
	diskFull(t, "128m", 56<<20, "--memtable-size", "4mb", "--min-free-disk", "40mb")
}

// TestDiskFullDefaults fills the disk with the default memtables and
// reserve (16 MiB and sixteen of them, 256 MiB): 40 MiB of room above the
// reserve.
func TestDiskFullDefaults(t *testing.T) {
	t.Parallel()
	diskFull(t, "384m", 88<<20)
}

// diskFull fills a tmpfs of size, ballast bytes of it taken by another
// file, with 128 KiB writes until they are refused, then checks what a
// full disk must do: refuse writes with -MISCONF and never crash, keep
// every acknowledged write readable, resume once the ballast goes, and
// lose nothing across a kill -9. args are the server's own.
func diskFull(t *testing.T, size string, ballastBytes int, args ...string) {
	mnt := mountTmpfs(t, size)
	// Room taken by someone else, freed later: "space returns".
	rng := rand.NewChaCha8([32]byte{7})
	ballast := filepath.Join(mnt, "ballast")
	if err := os.WriteFile(ballast, []byte(randomBytes(rng, ballastBytes)), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := StartOncekv(t, append([]string{"--dir", filepath.Join(mnt, "data"), "--appendfsync", "always",
		"--loglevel", "warning"}, args...)...)

	acked := map[string]string{}
	var c *RawConn
	dial := func() {
		if c != nil {
			c.Close()
		}
		c = DialRaw(t, srv.Addr)
	}
	dial()
	refusedInRow, misconf, closed := 0, "", 0
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; refusedInRow < 10; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("writes still accepted after 30 s (%d acknowledged); df:\n%s", len(acked), df(mnt))
		}
		key, val := fmt.Sprintf("fill:%05d", i), randomBytes(rng, 128<<10)
		f, err := c.TryReadFrameAfter(EncodeCommand("SET", key, val))
		switch {
		case err != nil:
			// The write that met the full disk: closed, never +OK. Or the
			// process died.
			for range 20 {
				if srv.Exited() {
					t.Fatalf("server died filling the disk (a full disk must refuse writes, not crash it):\n%s", crashBanner(srv.Output()))
				}
				time.Sleep(25 * time.Millisecond)
			}
			closed++
			refusedInRow++
			dial()
		case f.Type == '+' && f.Str == "OK":
			acked[key] = val
			refusedInRow = 0
		case f.Type == '-' && strings.HasPrefix(f.Str, "MISCONF"):
			misconf = f.Str
			refusedInRow++
			time.Sleep(50 * time.Millisecond) // Badger may still free space by compacting
		default:
			t.Fatalf("SET %s: unexpected reply %q", key, f.Raw)
		}
	}
	t.Logf("disk full after %d acknowledged 128 KiB writes; %d connections closed unanswered; reply: %s\n%s", len(acked), closed, misconf, df(mnt))
	if misconf == "" {
		t.Fatal("no -MISCONF reply while the disk was full")
	}
	if closed == 0 {
		// The first write to meet the full disk is staged before the
		// failure is known; its ticket fails, so its connection must be
		// closed unanswered.
		t.Error("no write was left unanswered: a write that could not be persisted must never get +OK")
	}
	info := string(c.Do("INFO", "persistence"))
	if infoField(info, "oncekv_writes_refused") != "1" || !strings.Contains(infoField(info, "oncekv_write_error"), "no space left") {
		t.Errorf("INFO persistence does not name the cause:\n%s", info)
	}
	// Every write command is refused, DEL and ONCE too, and PING, as in
	// Redis 7 (a health check sees it); reads keep working.
	for _, cmd := range [][]string{{"DEL", "fill:00000"}, {"INCR", "n"}, {"ONCE.CLAIM", "o", "LEASE", "1000"}, {"PING"},
		{"RESTORE", "fill:00000", "0", rdbPayload("\x00\x01v", 10), "REPLACE"}} {
		if f, err := c.TryReadFrameAfter(EncodeCommand(cmd...)); err != nil || f.Type != '-' || !strings.HasPrefix(f.Str, "MISCONF") {
			t.Errorf("%v while full: %v %v, want -MISCONF", cmd, f, err)
			dial()
		}
	}
	// A transaction of reads runs; a write queued in one is refused and
	// its EXEC discarded, as in Redis 7.
	for _, st := range []struct {
		args []string
		want string // the reply's start
	}{
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"DBSIZE"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*1\r\n:"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"SET", "in-multi", "v"}, "-MISCONF "},
		{[]string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
	} {
		if f, err := c.TryReadFrameAfter(EncodeCommand(st.args...)); err != nil || !strings.HasPrefix(string(f.Raw), st.want) {
			t.Errorf("%v while full: %v %v, want %q…", st.args, f, err, st.want)
			dial()
		}
	}
	checkAcked(t, c, acked, "while full")
	if f, _ := c.TryReadFrameAfter(EncodeCommand("DBSIZE")); f == nil || f.Type != ':' {
		t.Errorf("DBSIZE while full: %v", f)
	}

	// Space returns: writes resume without a restart.
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, 100*time.Millisecond, "writes accepted again after space returned", func() (bool, string) {
		f, err := c.TryReadFrameAfter(EncodeCommand("SET", "after", "space"))
		if err != nil {
			dial()
			return false, err.Error()
		}
		return f.Type == '+', string(f.Raw)
	})
	acked["after"] = "space"
	for i := range 20 {
		key := fmt.Sprintf("more:%02d", i)
		val := randomBytes(rng, 128<<10)
		c.Do("SET", key, val)
		acked[key] = val
	}
	if info := string(c.Do("INFO", "persistence")); infoField(info, "oncekv_writes_refused") != "0" {
		t.Errorf("INFO after recovery:\n%s", info)
	}
	if r := string(c.Do("PING")); r != "+PONG\r\n" {
		t.Errorf("PING after recovery: %q", r)
	}

	// Nothing acknowledged was lost, across a kill -9.
	srv.Kill(t)
	srv = srv.Restart(t)
	c = DialRaw(t, srv.Addr)
	checkAcked(t, c, acked, "after kill -9 and restart")
}

func checkAcked(t *testing.T, c *RawConn, acked map[string]string, when string) {
	t.Helper()
	var cmds [][]string
	var keys []string
	for k := range acked {
		keys = append(keys, k)
		cmds = append(cmds, []string{"GET", k})
	}
	lost := 0
	for i, f := range pipeline(t, c, cmds) {
		if f.Type != '$' || f.Null || f.Str != acked[keys[i]] {
			lost++
			if lost < 5 {
				t.Errorf("%s: GET %s: %d bytes (%c), want the %d acknowledged", when, keys[i], len(f.Str), f.Type, len(acked[keys[i]]))
			}
		}
	}
	if lost > 0 {
		t.Errorf("%s: %d of %d acknowledged writes lost or unreadable", when, lost, len(acked))
	}
}

// crashBanner is the lines of a Go crash report that say what happened.
func crashBanner(out string) string {
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "fatal error") || strings.Contains(l, "signal ") || strings.HasPrefix(l, "panic") ||
			strings.Contains(l, "unexpected fault") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func df(dir string) string {
	out, _ := exec.Command("df", "-h", dir).CombinedOutput()
	return string(out)
}

// runOncekvTool runs the binary to completion (bounded) and returns its
// output and exit code.
func runOncekvTool(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, BuildOncekv(t), args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee) && ctx.Err() == nil:
		return string(out), ee.ExitCode()
	}
	t.Fatalf("oncekv %v: %v\n%s", args, err, out)
	return "", 0
}

// TestOwnerAndCorruptDirRefused: the server refuses to start on a
// directory holding someone else's files or a damaged database, exits
// with a message naming the directory and what it found, and leaves the
// directory as it was; it never starts empty over it.
func TestOwnerAndCorruptDirRefused(t *testing.T) {
	t.Parallel()
	// A real data directory, stopped cleanly, to damage.
	good := t.TempDir()
	srv := StartOncekv(t, "--dir", good)
	c := DialRaw(t, srv.Addr)
	for i := range 2000 {
		c.Do("SET", fmt.Sprintf("k%04d", i), strings.Repeat("v", 2000))
	}
	srv.Stop(t)

	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "family-photos.db"), []byte("precious"), 0o644)
	noManifest := copyTree(t, good)
	os.Remove(filepath.Join(noManifest, "MANIFEST"))
	badManifest := copyTree(t, good)
	os.Truncate(filepath.Join(badManifest, "MANIFEST"), 5)
	for _, tc := range []struct {
		name, dir, want string
	}{
		{"foreign files", foreign, "not an oncekv data directory"},
		{"no MANIFEST", noManifest, "damaged"},
		{"truncated MANIFEST", badManifest, "damaged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := listDir(t, tc.dir)
			port := FreePort(t)
			out, code := runOncekvTool(t, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", tc.dir)
			if code == 0 || !strings.Contains(out, tc.dir) || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, output:\n%s\nwant a failure naming %s and %q", code, out, tc.dir, tc.want)
			}
			t.Logf("refused: %s", strings.TrimSpace(out))
			if after := listDir(t, tc.dir); after != before {
				t.Errorf("refused dir changed:\nbefore %s\n after %s", before, after)
			}
		})
	}
}

func listDir(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		fi, _ := e.Info()
		fmt.Fprintf(&b, "%s:%d ", e.Name(), fi.Size())
	}
	return b.String()
}

// copyTree copies dir's regular files (Badger's sparse logs included:
// cp keeps them sparse).
func copyTree(t *testing.T, dir string) string {
	t.Helper()
	dst := t.TempDir()
	if out, err := exec.Command("cp", "-a", "--sparse=always", dir+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	return dst
}

// keyState is what TYPE, GET, ONCE.STATUS and the key's deadline show of a record.
type keyState struct {
	typ, val, pexpiretime string
	status                map[string]string
}

func readKeyState(t *testing.T, c *RawConn, db int, key string) keyState {
	t.Helper()
	c.Do("SELECT", strconv.Itoa(db))
	var ks keyState
	f, _ := rawDo(c, "TYPE", key)
	ks.typ = f.Str
	f, _ = rawDo(c, "PEXPIRETIME", key)
	ks.pexpiretime = f.Str
	switch ks.typ {
	case "string":
		f, _ = rawDo(c, "GET", key)
		ks.val = f.Str
	case "once":
		f, _ = rawDo(c, "ONCE.STATUS", key)
		ks.status = map[string]string{}
		for i := 0; i+1 < len(f.Elems); i += 2 {
			if n := f.Elems[i].Str; n != "lease-ms" && n != "keep-ms" {
				ks.status[n] = f.Elems[i+1].Str
			}
		}
		if ks.status["state"] == "done" {
			f, _ = rawDo(c, "ONCE.WAIT", key, "TIMEOUT", "1")
			ks.val = string(f.Raw)
		}
	}
	return ks
}

// TestBackupRestore: BACKUP on a running server and `oncekv backup` on a
// stopped one write files that `oncekv restore` turns into a directory
// where every key comes back with its value and deadline, every ONCE
// record (running with its token, lease and fingerprint; done with its
// answer and keep), the per-database counts, and the token counter (new
// tokens above every token handed out before the backup).
func TestBackupRestore(t *testing.T) {
	t.Parallel()
	backups := t.TempDir()
	dataDir := t.TempDir()
	srv := StartOncekv(t, "--dir", dataDir, "--backup-dir", backups)
	c := DialRaw(t, srv.Addr)
	hour := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	type dbKey struct {
		db  int
		key string
	}
	var keys []dbKey
	for _, db := range []int{0, 1, 5} {
		c.Do("SELECT", strconv.Itoa(db))
		for i := range 200 {
			k := fmt.Sprintf("k:%d:%03d", db, i)
			c.Do("SET", k, strings.Repeat(strconv.Itoa(i), i))
			if i%3 == 0 {
				c.Do("PEXPIREAT", k, hour)
			}
			keys = append(keys, dbKey{db, k})
		}
	}
	c.Do("SELECT", "0")
	c.Do("SET", "bin\x00\xff", "\r\n\x00")
	c.Do("SET", "big", strings.Repeat("B", 3<<20))
	c.Do("INCRBY", "counter", "41")
	var maxToken int64
	claim := func(args ...string) int64 {
		f, _ := rawDo(c, append([]string{"ONCE.CLAIM"}, args...)...)
		if len(f.Elems) != 2 || f.Elems[0].Str != "claimed" {
			t.Fatalf("claim %v: %q", args, f.Raw)
		}
		n, _ := strconv.ParseInt(f.Elems[1].Str, 10, 64)
		maxToken = max(maxToken, n)
		return n
	}
	claim("once:running", "LEASE", "600000", "FINGERPRINT", "fp-1")
	for i, keep := range []string{"3600000", ""} {
		key := fmt.Sprintf("once:done:%d", i)
		tok := claim(key, "LEASE", "600000", "FINGERPRINT", "fp-2")
		args := []string{"ONCE.COMPLETE", key, strconv.FormatInt(tok, 10), "answer " + key}
		if keep != "" {
			args = append(args, "KEEP", keep)
		}
		if f, _ := rawDo(c, args...); f.Type != '+' {
			t.Fatalf("%v: %q", args, f.Raw)
		}
	}
	c.Do("SELECT", "1")
	claim("once:db1", "LEASE", "600000")
	for i := range 30 { // more tokens, released
		k := fmt.Sprintf("t%d", i)
		tok := claim(k)
		c.Do("ONCE.ABORT", k, strconv.FormatInt(tok, 10))
	}
	keys = append(keys, dbKey{0, "bin\x00\xff"}, dbKey{0, "big"}, dbKey{0, "counter"}, dbKey{0, "once:running"},
		dbKey{0, "once:done:0"}, dbKey{0, "once:done:1"}, dbKey{1, "once:db1"})

	want := map[dbKey]keyState{}
	for _, k := range keys {
		want[k] = readKeyState(t, c, k.db, k.key)
	}
	wantSpace := parseKeyspace(t, string(c.Do("INFO", "keyspace")))

	// Online backup; only a plain name inside backup-dir is accepted.
	if f := doFrame(t, c, "BACKUP", "online.okv"); f.Type != '+' {
		t.Fatalf("BACKUP: %q", f.Raw)
	}
	for _, bad := range []string{"../escape.okv", "/tmp/x.okv", ".hidden"} {
		if f := doFrame(t, c, "BACKUP", bad); f.Type != '-' {
			t.Errorf("BACKUP %q: %q, want an error", bad, f.Raw)
		}
	}
	// The offline tool refuses a running server's directory, and says why.
	if out, code := runOncekvTool(t, "backup", "--dir", dataDir, filepath.Join(backups, "x.okv")); code == 0 || !strings.Contains(out, "BACKUP") {
		t.Errorf("offline backup of a running server: exit %d:\n%s", code, out)
	}
	// Written after the online backup: not in it.
	c.Do("SELECT", "0")
	c.Do("SET", "later", "x")
	srv.Stop(t)
	if out, code := runOncekvTool(t, "backup", "--dir", dataDir, filepath.Join(backups, "offline.okv")); code != 0 {
		t.Fatalf("offline backup: exit %d:\n%s", code, out)
	}

	check := func(file string, withLater bool) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "restored")
		out, code := runOncekvTool(t, "restore", "--dir", dir, filepath.Join(backups, file))
		if code != 0 {
			t.Fatalf("restore %s: exit %d:\n%s", file, code, out)
		}
		t.Logf("%s", strings.TrimSpace(out))
		r := StartOncekv(t, "--dir", dir)
		rc := DialRaw(t, r.Addr)
		for _, k := range keys {
			if got := readKeyState(t, rc, k.db, k.key); fmt.Sprint(got) != fmt.Sprint(want[k]) {
				t.Errorf("%s: db %d %q:\n got %.200v\nwant %.200v", file, k.db, k.key, got, want[k])
			}
		}
		rc.Do("SELECT", "0")
		later := readKeyState(t, rc, 0, "later")
		if withLater != (later.val == "x") {
			t.Errorf("%s: key written after the backup: %+v", file, later)
		}
		gotSpace := parseKeyspace(t, string(rc.Do("INFO", "keyspace")))
		if withLater {
			s := gotSpace[0]
			s.keys--
			gotSpace[0] = s
		}
		if fmt.Sprint(gotSpace) != fmt.Sprint(wantSpace) {
			t.Errorf("%s: INFO keyspace %v, want %v", file, gotSpace, wantSpace)
		}
		// The token counter: a new claim gets a token above all before.
		f, _ := rawDo(rc, "ONCE.CLAIM", "fresh")
		if tok, _ := strconv.ParseInt(f.Elems[1].Str, 10, 64); len(f.Elems) != 2 || tok <= maxToken {
			t.Errorf("%s: first claim after restore %q, want a token above %d", file, f.Raw, maxToken)
		}
		// Restored without --backup-dir: BACKUP is off.
		if f := doFrame(t, rc, "BACKUP", "x.okv"); f.Type != '-' || !strings.Contains(f.Str, "backup-dir") {
			t.Errorf("BACKUP without backup-dir: %q", f.Raw)
		}
		r.Stop(t)
		// Restore never writes over data.
		if out, code := runOncekvTool(t, "restore", "--dir", dir, filepath.Join(backups, file)); code == 0 || !strings.Contains(out, "not empty") {
			t.Errorf("restore over a data dir: exit %d:\n%s", code, out)
		}
	}
	check("online.okv", false)
	check("offline.okv", true)

	// A damaged backup is refused and leaves nothing behind.
	b, _ := os.ReadFile(filepath.Join(backups, "online.okv"))
	os.WriteFile(filepath.Join(backups, "cut.okv"), b[:len(b)/2], 0o644)
	dir := filepath.Join(t.TempDir(), "cut")
	if out, code := runOncekvTool(t, "restore", "--dir", dir, filepath.Join(backups, "cut.okv")); code == 0 || !strings.Contains(out, "truncated") {
		t.Errorf("restore of a truncated backup: exit %d:\n%s", code, out)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("failed restore left %s: %v", dir, err)
	}
}

// doFrame sends a command on c and reads its reply, failing tb on a
// transport error.
func doFrame(tb testing.TB, c *RawConn, args ...string) *Frame {
	tb.Helper()
	f, err := rawDo(c, args...)
	if err != nil {
		tb.Fatalf("%s: %v", fmtArgs(args), err)
	}
	return f
}
