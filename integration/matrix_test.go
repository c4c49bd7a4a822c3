package integration

// The client matrix: Redis clients of several languages and versions run a
// realistic script against the built server, started with --requirepass.
// Each connects with the password and a db number of its own, pipelines,
// runs MULTI/EXEC (with WATCH), iterates with SCAN, and drives the ONCE
// commands through the client's generic command call: claim → complete →
// replay, waiters woken by a complete (and an abort) on another connection,
// and ONCE.STATUS in the shape of the connection's protocol.
//
//	go-redis v9           RESP3 (its default) and RESP2, in this process
//	ioredis 5, 6          clients/matrix/node, `node --test`, one file each
//	node-redis 4, 6       (package.json pins them with npm aliases)
//	redis-py              clients/matrix/python, Debian's python3-redis
//	redis-cli             typed interactively in a tmux terminal: hints,
//	                      help, commands, a blocked ONCE.CLAIM woken
//
// The node and python suites read the server from ONCEKV_HOST, ONCEKV_PORT,
// ONCEKV_PASSWORD and ONCEKV_DB. The first run installs the node packages
// (npm ci into clients/matrix/node). A missing tool fails the test with how
// to install it: nothing is skipped.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncekv/oncekv/internal/child"
)

// matrixPass is the server's --requirepass.
const matrixPass = "matrix-s3cret"

// matrixSuiteTimeout bounds each client's suite.
const matrixSuiteTimeout = 90 * time.Second

func TestMatrix(t *testing.T) {
	t.Parallel()
	srv := StartOncekv(t, "--requirepass", matrixPass)
	// Every leg shares the server, each in databases of its own: db is the
	// first, a leg that runs its script in several modes uses the next ones.
	legs := []struct {
		name string
		db   int
		run  func(t *testing.T, srv *Oncekv, db int)
	}{
		{"go-redis/resp3", 1, func(t *testing.T, srv *Oncekv, db int) { matrixGoRedis(t, srv.Addr, db, 3) }},
		{"go-redis/resp2", 2, func(t *testing.T, srv *Oncekv, db int) { matrixGoRedis(t, srv.Addr, db, 2) }},
		{"node/ioredis5", 3, matrixNode("ioredis5.test.mjs")},
		{"node/ioredis6", 4, matrixNode("ioredis6.test.mjs")}, // dbs 4, 5, 6
		{"node/node-redis4", 7, matrixNode("redis4.test.mjs")},
		{"node/node-redis6", 8, matrixNode("redis6.test.mjs")}, // dbs 8, 9
		{"python/redis-py", 10, matrixPython},
		{"redis-cli/interactive", 11, matrixRedisCli},
	}
	for _, l := range legs {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			l.run(t, srv, l.db)
		})
	}
}

// ---- node and python: suites run as subprocesses ----

// matrixNode returns a leg that runs one node test file.
func matrixNode(file string) func(t *testing.T, srv *Oncekv, db int) {
	return func(t *testing.T, srv *Oncekv, db int) {
		dir := nodeModules(t)
		// --test-timeout bounds each test, so that a hang names the test.
		runSuite(t, srv, db, dir, "node", "--test", "--test-reporter=spec", "--test-timeout=30000", file)
	}
}

func matrixPython(t *testing.T, srv *Oncekv, db int) {
	const python = "/usr/bin/python3"
	out, err := exec.Command(python, "-c", "import redis; print(redis.__version__)").CombinedOutput()
	if err != nil {
		t.Fatalf("%s cannot import redis (%v: %s): install Debian's redis-py with `apt-get install -y python3-redis` (./test.sh does)",
			python, err, bytes.TrimSpace(out))
	}
	t.Logf("redis-py %s", bytes.TrimSpace(out))
	root := matrixRoot(t)
	runSuite(t, srv, db, root, python, filepath.Join(root, "clients", "matrix", "python", "test_redis_py.py"))
}

// runSuite runs a client's suite in dir with the server in its environment,
// failing with its output when it fails; with -v it logs the summary.
func runSuite(t *testing.T, srv *Oncekv, db int, dir string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), matrixSuiteTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"ONCEKV_HOST=127.0.0.1",
		"ONCEKV_PORT="+strconv.Itoa(srv.Port),
		"ONCEKV_PASSWORD="+matrixPass,
		"ONCEKV_DB="+strconv.Itoa(db),
		"NO_COLOR=1",
	)
	cmd.WaitDelay = 5 * time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	c, err := child.Start(cmd)
	if err == nil {
		err = c.Wait()
	}
	out := buf.Bytes()
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %s: no exit within %v; output:\n%s", name, strings.Join(args, " "), matrixSuiteTimeout, tailString(string(out), 16000))
	case err != nil:
		t.Fatalf("%s %s: %v; output:\n%s", name, strings.Join(args, " "), err, tailString(string(out), 16000))
	}
	// The summary: node's top-level suites and counts, unittest's count.
	var summary []string
	for _, line := range strings.Split(string(out), "\n") {
		for _, p := range []string{"✔ ", "ℹ tests ", "ℹ pass ", "ℹ fail ", "Ran "} {
			if strings.HasPrefix(line, p) {
				summary = append(summary, line)
			}
		}
	}
	t.Logf("passed in %v: %s", time.Since(start).Round(time.Millisecond), strings.Join(summary, "; "))
}

func tailString(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func matrixRoot(t *testing.T) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("module root: %v", err)
	}
	return root
}

// nodeInstall runs npm ci once per test process, when needed.
var nodeInstall struct {
	once sync.Once
	dir  string
	err  error
}

// nodeModules checks that node (20.11 or later: --test-timeout) and npm are
// installed, runs `npm ci` in clients/matrix/node if node_modules is missing
// or older than package-lock.json, and returns that directory.
func nodeModules(t *testing.T) string {
	t.Helper()
	root := matrixRoot(t)
	nodeInstall.once.Do(func() {
		nodeInstall.err = installNodeModules(root)
		nodeInstall.dir = filepath.Join(root, "clients", "matrix", "node")
	})
	if nodeInstall.err != nil {
		t.Fatal(nodeInstall.err)
	}
	return nodeInstall.dir
}

func installNodeModules(root string) error {
	const hint = "install Node.js 20.11 or later with npm (from nodejs.org or NodeSource: Debian 12's nodejs package is 18, too old for ioredis 6)"
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		return fmt.Errorf("node not found (%v): %s", err, hint)
	}
	var major, minor int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "v%d.%d", &major, &minor); err != nil || major < 20 || major == 20 && minor < 11 {
		return fmt.Errorf("node %s is too old: %s", bytes.TrimSpace(out), hint)
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return fmt.Errorf("npm not found: %s", hint)
	}
	dir := filepath.Join(root, "clients", "matrix", "node")
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return fmt.Errorf("client matrix: %v", err)
	}
	// npm writes node_modules/.package-lock.json at each install.
	if inst, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil && !inst.ModTime().Before(lock.ModTime()) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci in %s: %v\n%s", dir, err, tailString(string(out), 8000))
	}
	return nil
}

// ---- go-redis: the script in this process ----

// matrixGoRedis runs the script with go-redis v9, configured as an
// application would: Addr, Password, DB and Protocol.
func matrixGoRedis(t *testing.T, addr string, db, proto int) {
	ctx := grCtx(t, 60*time.Second)
	open := func(opts ...func(*redis.Options)) *redis.Client {
		return grClient(t, addr, append([]func(*redis.Options){withPassword(matrixPass), withDB(db), withProto(proto)}, opts...)...)
	}
	c := open()
	if err := c.FlushDB(ctx).Err(); err != nil {
		t.Fatalf("FLUSHDB: %v", err)
	}
	k := func(s string) string { return fmt.Sprintf("go-redis:resp%d:%s", proto, s) }

	t.Run("connect", func(t *testing.T) {
		info, err := c.Do(ctx, "CLIENT", "INFO").Text()
		if err != nil {
			t.Fatalf("CLIENT INFO: %v", err)
		}
		fields := strings.Fields(info)
		for _, want := range []string{fmt.Sprintf("db=%d", db), fmt.Sprintf("resp=%d", proto), "user=default", "lib-ver=" + redis.Version()} {
			if !contains(fields, want) {
				t.Errorf("CLIENT INFO %q: no %s", info, want)
			}
		}
		if !strings.Contains(info, " lib-name=go-redis") {
			t.Errorf("CLIENT INFO %q: no lib-name=go-redis…", info)
		}
		if err := c.Set(ctx, k("db"), "mine", 0).Err(); err != nil {
			t.Fatalf("SET: %v", err)
		}
		if v, err := open(withDB(0)).Get(ctx, k("db")).Result(); !errors.Is(err, redis.Nil) {
			t.Errorf("GET in db 0 of a key set in db %d = %q, %v; want redis.Nil", db, v, err)
		}
		err = open(withPassword("wrong"), withMaxRetries(-1)).Ping(ctx).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
			t.Errorf("PING with a wrong password = %v; want WRONGPASS…", err)
		}
	})

	t.Run("pipeline", func(t *testing.T) {
		const n = 100
		cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range n {
				p.Set(ctx, k(fmt.Sprintf("p:%d", i)), fmt.Sprintf("v%d", i), 0)
				p.Incr(ctx, k("p:counter"))
				p.Get(ctx, k(fmt.Sprintf("p:%d", i)))
			}
			return nil
		})
		if err != nil || len(cmds) != 3*n {
			t.Fatalf("pipeline: %d results, %v", len(cmds), err)
		}
		for i := range n {
			if v := cmds[3*i+1].(*redis.IntCmd).Val(); v != int64(i+1) {
				t.Errorf("pipelined INCR #%d = %d, want %d", i, v, i+1)
			}
			if v := cmds[3*i+2].(*redis.StringCmd).Val(); v != fmt.Sprintf("v%d", i) {
				t.Errorf("pipelined GET #%d = %q, want v%d", i, v, i)
			}
		}
	})

	t.Run("multi-watch", func(t *testing.T) {
		var incr *redis.IntCmd
		if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, k("tx"), "10", 0)
			incr = p.IncrBy(ctx, k("tx"), 5)
			return nil
		}); err != nil || incr.Val() != 15 {
			t.Fatalf("MULTI SET INCRBY EXEC: INCRBY = %d, %v; want 15", incr.Val(), err)
		}
		// Optimistic locking: the first EXEC aborts, another connection
		// changed the watched key; the retry goes through.
		other := open()
		balance := k("balance")
		if err := c.Set(ctx, balance, "100", 0).Err(); err != nil {
			t.Fatal(err)
		}
		attempts := 0
		debit := func(tx *redis.Tx) error {
			attempts++
			n, err := tx.Get(ctx, balance).Int()
			if err != nil {
				return err
			}
			if attempts == 1 {
				if err := other.Set(ctx, balance, "50", 0).Err(); err != nil {
					return err
				}
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, balance, n-30, 0)
				return nil
			})
			return err
		}
		for {
			err := c.Watch(ctx, debit, balance)
			if errors.Is(err, redis.TxFailedErr) && attempts == 1 {
				continue
			}
			if err != nil {
				t.Fatalf("WATCH/MULTI/EXEC attempt %d: %v", attempts, err)
			}
			break
		}
		if v, _ := c.Get(ctx, balance).Result(); attempts != 2 || v != "20" {
			t.Errorf("after a conflicting write: %d attempts, balance %q; want 2 attempts, 20", attempts, v)
		}
	})

	t.Run("scan", func(t *testing.T) {
		const n = 600
		want := make([]string, n)
		for i := range n {
			want[i] = k(fmt.Sprintf("scan:%04d", i))
		}
		if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range n {
				j := (i * 7919) % n
				p.Set(ctx, want[j], j, 0)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, count := range []int64{0, 7, 100, 5000} {
			var got []string
			it := c.Scan(ctx, 0, k("scan:*"), count).Iterator()
			for it.Next(ctx) {
				got = append(got, it.Val())
			}
			if err := it.Err(); err != nil {
				t.Fatalf("SCAN COUNT %d: %v", count, err)
			}
			checkScanned(t, fmt.Sprintf("ScanIterator COUNT %d", count), got, want, true)
		}
	})

	t.Run("once", func(t *testing.T) {
		// The ONCE helpers of once_test.go: no retries, no socket read
		// timeout (a blocked wait is bounded by its context).
		oc := func() *redis.Client {
			return onceClient(t, addr, proto, withPassword(matrixPass), withDB(db))
		}
		runner, other := oc(), oc()
		key := k("once:charge")
		token := onceClaim(t, ctx, runner, key, "LEASE", 10000, "FINGERPRINT", "sha256:9f86")
		st := onceStatus(t, ctx, other, key)
		if st["state"] != "running" || statusInt(st, "token") != token || st["fingerprint"] != "sha256:9f86" {
			t.Errorf("ONCE.STATUS of a running key = %v", st)
		}
		if r := onceMust(t, ctx, other, "ONCE.CLAIM", key); r.State != "running" || r.Ms <= 0 || r.Ms > 10000 {
			t.Errorf("ONCE.CLAIM while running = %v, want [running ms-left]", r)
		}
		onceErr(t, ctx, runner, "STALE", "ONCE.COMPLETE", key, token+1, "x")
		onceOK(t, ctx, runner, "ONCE.COMPLETE", key, token, `{"receipt":"ch_123"}`, "KEEP", 60000)
		onceWant(t, "replay", onceMust(t, ctx, other, "ONCE.CLAIM", key, "WAIT", 5000, "FINGERPRINT", "sha256:9f86"),
			"done", `{"receipt":"ch_123"}`)
		if st := onceStatus(t, ctx, other, key); st["state"] != "done" || statusInt(st, "keep-ms") <= 0 {
			t.Errorf("ONCE.STATUS of a done key = %v", st)
		}

		// Waiters on connections of their own, woken by a complete on the
		// runner's connection.
		memo := k("once:memo")
		token = onceClaim(t, ctx, runner, memo, "LEASE", 10000)
		claimWait := asyncOnce(ctx, oc(), "ONCE.CLAIM", memo, "WAIT", 10000)
		wait := asyncOnce(ctx, oc(), "ONCE.WAIT", memo, "TIMEOUT", 10000)
		onceAwaitWaiters(t, ctx, other, memo, 2)
		onceQuiet(t, claimWait, 0, "CLAIM … WAIT before the complete")
		onceOK(t, ctx, runner, "ONCE.COMPLETE", memo, token, "forty-two", "KEEP", 60000)
		onceWant(t, "CLAIM … WAIT", onceRecv(t, claimWait, 3*time.Second, "CLAIM … WAIT").r, "done", "forty-two")
		onceWant(t, "ONCE.WAIT", onceRecv(t, wait, 3*time.Second, "ONCE.WAIT").r, "done", "forty-two")

		// In a pipeline and in MULTI.
		tx := k("once:tx")
		var claimed, replay *redis.Cmd
		if _, err := runner.Pipelined(ctx, func(p redis.Pipeliner) error {
			claimed = p.Do(ctx, "ONCE.CLAIM", tx)
			return nil
		}); err != nil {
			t.Fatalf("pipelined ONCE.CLAIM: %v", err)
		}
		r, err := parseOnce(claimed.Val())
		if err != nil || r.State != "claimed" {
			t.Fatalf("pipelined ONCE.CLAIM = %v, %v", r, err)
		}
		if _, err := runner.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "ONCE.COMPLETE", tx, r.Token, "in-tx")
			replay = p.Do(ctx, "ONCE.CLAIM", tx)
			return nil
		}); err != nil {
			t.Fatalf("MULTI ONCE.COMPLETE ONCE.CLAIM EXEC: %v", err)
		}
		if r, err := parseOnce(replay.Val()); err != nil || r.State != "done" || r.Detail != "in-tx" {
			t.Errorf("ONCE.CLAIM in MULTI after COMPLETE = %v, %v; want [done in-tx]", r, err)
		}
	})
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// ---- redis-cli, typed in a terminal ----

// matrixRedisCli types into an interactive redis-cli (password, db) in a
// tmux terminal and reads the screen: the hint while typing, help, replies
// in RESP2 and, after HELLO 3, RESP3, MULTI, a ONCE.CLAIM that blocks until
// another connection completes the key, and a clean exit.
func matrixRedisCli(t *testing.T, srv *Oncekv, db int) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redis-cli not found: install it with `apt-get install -y redis-tools` (./test.sh does)")
	}
	term := startTerm(t, 160, 50, "redis-cli", "-h", "127.0.0.1", "-p", strconv.Itoa(srv.Port),
		"-a", matrixPass, "--no-auth-warning", "-n", strconv.Itoa(db))
	prompt := fmt.Sprintf("127.0.0.1:%d[%d]>", srv.Port, db)
	if p := term.prompt(); p != prompt {
		t.Fatalf("prompt %q, want %q (the db number in it)", p, prompt)
	}
	term.do("flushdb", "OK")

	// A hint appears as soon as the command is typed, and follows the
	// arguments (redis-cli 7.0 drops the required ones as they are typed).
	term.typeText("set ")
	term.waitLast(prompt+" set key value [NX|XX]", "the hint of SET")
	term.typeText("greeting hello")
	term.waitLast(prompt+" set greeting hello [NX|XX]", "the hint of SET after two arguments")
	term.enter()
	term.waitScreen("OK\n"+prompt, "SET's reply")

	term.do("get greeting", `"hello"`)
	term.do("incr greeting", "(error) ERR value is not an integer or out of range")
	term.do("help set", "  SET key value [NX|XX]", "  summary: ", "  group: string")
	term.do("help once.claim", "  ONCE.CLAIM key [LEASE ms] [WAIT ms] [FINGERPRINT fp]", "  group: once")
	term.do("multi", "OK")
	term.do("incr visits", "QUEUED")
	term.do("incr visits", "QUEUED")
	term.do("exec", "1) (integer) 1\n2) (integer) 2")
	term.do("scan 0 match gr* count 100", "2) 1) \"greeting\"")

	// ONCE, typed: the hint, then claim → complete → replay.
	term.clear()
	term.typeText("ONCE.CLAIM ")
	term.waitLast(prompt+" ONCE.CLAIM key [LEASE ms] [WAIT ms] [FINGERPRINT fp]", "the hint of ONCE.CLAIM")
	term.typeText("charge:1")
	term.waitLast(prompt+" ONCE.CLAIM charge:1 [LEASE ms] [WAIT ms] [FINGERPRINT fp]", "the hint of ONCE.CLAIM after the key")
	term.typeText(" LEASE 30000")
	term.enter()
	screen := term.waitScreen("1) \"claimed\"\n2) (integer) ", "ONCE.CLAIM's reply")
	token := term.lastInt(screen, "2) (integer) ")
	term.do("ONCE.STATUS charge:1", " 1) \"state\"\n 2) \"running\"\n 3) \"token\"\n 4) (integer) "+strconv.FormatInt(token, 10),
		"11) \"fingerprint\"\n12) (nil)")
	term.do(fmt.Sprintf("ONCE.COMPLETE charge:1 %d receipt-42", token), "OK")
	term.do("ONCE.CLAIM charge:1", "1) \"done\"\n2) \"receipt-42\"")
	term.do("type charge:1", "once")

	// A claim typed in the terminal blocks until another connection
	// completes the key.
	ctx := grCtx(t, 30*time.Second)
	runner := onceClient(t, srv.Addr, 3, withPassword(matrixPass), withDB(db))
	memo := onceClaim(t, ctx, runner, "memo", "LEASE", 30000)
	term.clear()
	term.typeLine("ONCE.CLAIM memo WAIT 20000")
	term.enter()
	onceAwaitWaiters(t, ctx, runner, "memo", 1)
	if s := term.screen(); strings.Contains(s, "1) ") {
		t.Fatalf("the blocked ONCE.CLAIM answered before the complete:\n%s", s)
	}
	onceOK(t, ctx, runner, "ONCE.COMPLETE", "memo", memo, "forty-two")
	term.waitScreen("1) \"done\"\n2) \"forty-two\"\n"+prompt, "the woken ONCE.CLAIM")

	// RESP3 after HELLO 3: ONCE.STATUS is a map.
	term.do("hello 3", `"proto" => (integer) 3`)
	term.do("ONCE.STATUS memo", `1# "state" => "done"`, `6# "fingerprint" => (nil)`)
	term.do("ONCE.STATUS missing", "(nil)")
	term.do("select 0", "OK")
	if p, want := term.prompt(), fmt.Sprintf("127.0.0.1:%d>", srv.Port); p != want {
		t.Errorf("prompt after SELECT 0: %q, want %q", p, want)
	}

	term.typeLine("quit")
	term.enter()
	if code := term.exitCode(); code != 0 {
		t.Errorf("redis-cli exited with status %d, want 0; screen:\n%s", code, term.screen())
	}
}

// termTimeout bounds each wait for the screen to change.
const termTimeout = 10 * time.Second

// term is a terminal: a program run in a detached session of a tmux server
// of its own (its socket in a temporary directory).
//
// redis-cli (linenoise) discards what was typed ahead each time it starts
// reading a line, so nothing is typed before the prompt shows.
type term struct {
	t      *testing.T
	sock   string
	status string // the file the program's exit status is written to
}

// startTerm runs argv in a cols×rows tmux terminal; cleanup ends that tmux
// server.
func startTerm(t *testing.T, cols, rows int, argv ...string) *term {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux not found: install it with `apt-get install -y tmux` (./test.sh does)")
	}
	// A short path: a unix socket's path is limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "oncekv-tmux-")
	if err != nil {
		t.Fatal(err)
	}
	tm := &term{t: t, sock: filepath.Join(dir, "s"), status: filepath.Join(dir, "status")}
	t.Cleanup(func() {
		_, _ = tm.tmux("kill-server")
		os.RemoveAll(dir)
	})
	args := []string{"-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows),
		// redis-cli's history goes to the temporary directory.
		"-e", "REDISCLI_HISTFILE=" + filepath.Join(dir, "history"),
		"-e", "STATUS_FILE=" + tm.status,
		// The shell records the exit status (128+n for a signal n).
		"sh", "-c", `"$@"; echo $? > "$STATUS_FILE"`, "sh"}
	args = append(args, argv...)
	if out, err := tm.tmux(args...); err != nil {
		t.Fatalf("tmux new-session %v: %v\n%s", argv, err, out)
	}
	return tm
}

func (tm *term) tmux(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "tmux", append([]string{"-S", tm.sock}, args...)...)
	env := []string{"TERM=xterm-256color"}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "TMUX=") && !strings.HasPrefix(e, "TERM=") {
			env = append(env, e)
		}
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (tm *term) mustTmux(args ...string) string {
	tm.t.Helper()
	out, err := tm.tmux(args...)
	if err != nil {
		tm.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return out
}

// typeText types s, literally, without Enter.
func (tm *term) typeText(s string) { tm.t.Helper(); tm.mustTmux("send-keys", "-t", "t", "-l", s) }

func (tm *term) enter() { tm.t.Helper(); tm.mustTmux("send-keys", "-t", "t", "Enter") }

// screen is the visible screen, wrapped lines joined, without trailing
// blanks.
func (tm *term) screen() string {
	tm.t.Helper()
	s := tm.mustTmux("capture-pane", "-p", "-J", "-t", "t")
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

func lastLine(s string) string { return s[strings.LastIndexByte(s, '\n')+1:] }

// prompt waits until the last line is a prompt, nothing typed after it,
// and returns it.
func (tm *term) prompt() string {
	tm.t.Helper()
	return lastLine(tm.wait("the prompt", func(s string) bool { return strings.HasSuffix(s, ">") }, "a prompt"))
}

// typeLine waits for the prompt, types line and waits for its echo; it
// returns the prompt.
func (tm *term) typeLine(line string) string {
	tm.t.Helper()
	p := tm.prompt()
	tm.typeText(line)
	tm.waitLast(p+" "+line, "the echo of "+line)
	return p
}

// waitScreen waits until the screen contains want and returns it.
func (tm *term) waitScreen(want, what string) string {
	tm.t.Helper()
	return tm.wait(what, func(s string) bool { return strings.Contains(s, want) }, want)
}

// waitLast waits until the screen's last line starts with want.
func (tm *term) waitLast(want, what string) {
	tm.t.Helper()
	tm.wait(what, func(s string) bool { return strings.HasPrefix(lastLine(s), want) }, "a last line starting with "+want)
}

func (tm *term) wait(what string, ok func(string) bool, want string) string {
	tm.t.Helper()
	deadline := time.Now().Add(termTimeout)
	for {
		s := tm.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("%s: the screen does not show %q within %v; it shows:\n%s", what, want, termTimeout, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// clear clears the screen with redis-cli's own clear command.
func (tm *term) clear() {
	tm.t.Helper()
	p := tm.typeLine("clear")
	tm.enter()
	tm.wait("clear", func(s string) bool { return s == p }, p+" alone")
}

// do clears the screen, types line and Enter, and waits until the reply
// holds every one of want and a new prompt follows it.
func (tm *term) do(line string, want ...string) {
	tm.t.Helper()
	tm.clear()
	p := tm.typeLine(line)
	tm.enter()
	tm.wait(line, func(s string) bool {
		reply, ok := strings.CutPrefix(s, p+" "+line+"\n")
		if !ok || !strings.HasSuffix(reply, ">") {
			return false
		}
		for _, w := range want {
			if !strings.Contains(reply, w) {
				return false
			}
		}
		return true
	}, strings.Join(want, " … "))
}

// lastInt is the integer after the last prefix on screen.
func (tm *term) lastInt(screen, prefix string) int64 {
	tm.t.Helper()
	i := strings.LastIndex(screen, prefix)
	if i < 0 {
		tm.t.Fatalf("no %q on the screen:\n%s", prefix, screen)
	}
	rest := screen[i+len(prefix):]
	if j := strings.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		tm.t.Fatalf("%q on the screen: %v", prefix+rest, err)
	}
	return n
}

// exitCode waits for the program to exit and returns its status.
func (tm *term) exitCode() int {
	tm.t.Helper()
	deadline := time.Now().Add(termTimeout)
	for {
		b, err := os.ReadFile(tm.status)
		if err == nil && bytes.HasSuffix(b, []byte("\n")) {
			n, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				tm.t.Fatalf("exit status %q: %v", b, err)
			}
			return n
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("no exit within %v; screen:\n%s", termTimeout, tm.screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
