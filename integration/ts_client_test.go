package integration

// The TypeScript client (clients/ts) against the real server: this test
// installs its npm dependencies when they are missing or older than
// package-lock.json (`npm ci`), builds it (`npm run build`, tsc), and runs
// its tests (`npm test`, node's test runner) with ONCEKV_ADDR and
// ONCEKV_PASSWORD pointing at a fresh server started with --requirepass.
// Node.js 20+ and npm must be on PATH: without them the test fails with an
// install hint; it never skips.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tsNodeHint says how to get Node.js and npm.
const tsNodeHint = "install Node.js 20 or later with npm (Debian: apt-get install nodejs npm; or from nodejs.org), then run again"

func TestTSClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node not found on PATH: the TypeScript client cannot be tested; %s", tsNodeHint)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("npm not found on PATH: the TypeScript client cannot be tested; %s", tsNodeHint)
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatalf("node --version: %v; %s", err, tsNodeHint)
	}
	version := strings.TrimSpace(string(out))
	if m := regexp.MustCompile(`^v(\d+)\.`).FindStringSubmatch(version); m == nil {
		t.Fatalf("node --version printed %q; %s", version, tsNodeHint)
	} else if major, _ := strconv.Atoi(m[1]); major < 20 {
		t.Fatalf("node %s is too old for clients/ts (needs 20+); %s", version, tsNodeHint)
	}

	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "clients", "ts")
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		t.Fatalf("clients/ts: %v", err)
	}

	const password = "ts-client-secret"
	srv := StartOncekv(t, "--requirepass", password)

	env := append(os.Environ(),
		"npm_config_update_notifier=false",
		"npm_config_fund=false",
		"npm_config_audit=false",
	)
	if why := tsNeedInstall(dir); why != "" {
		t.Logf("npm ci (%s)", why)
		tsRunNpm(t, dir, 5*time.Minute, env, npm, "ci")
	}
	tsRunNpm(t, dir, 2*time.Minute, env, npm, "run", "build")
	testEnv := append(env, "ONCEKV_ADDR="+srv.Addr, "ONCEKV_PASSWORD="+password)
	res := tsRunNpm(t, dir, 3*time.Minute, testEnv, npm, "test")
	// Show what ran: node's TAP lines for each test and the totals.
	var summary []string
	for _, line := range strings.Split(res, "\n") {
		if strings.HasPrefix(line, "ok ") || strings.HasPrefix(line, "not ok ") ||
			strings.HasPrefix(line, "# tests ") || strings.HasPrefix(line, "# pass ") ||
			strings.HasPrefix(line, "# fail ") || strings.HasPrefix(line, "# duration_ms ") {
			summary = append(summary, line)
		}
	}
	t.Logf("clients/ts with %s:\n%s", version, strings.Join(summary, "\n"))
	if !regexp.MustCompile(`(?m)^# pass [1-9]`).MatchString(res) || !strings.Contains(res, "\n# fail 0") {
		t.Fatalf("npm test did not report passing tests:\n%s", tsTail(res, 200))
	}
}

// tsNeedInstall says why clients/ts needs `npm ci`, or "" when its
// node_modules is there and not older than package-lock.json.
func tsNeedInstall(dir string) string {
	marker, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	if err != nil {
		return "node_modules missing"
	}
	for _, f := range []string{"package-lock.json", "package.json"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err == nil && st.ModTime().After(marker.ModTime()) {
			return f + " is newer than node_modules"
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "tsc")); err != nil {
		return "tsc missing from node_modules"
	}
	return ""
}

// tsRunNpm runs an npm command in dir and returns its combined output; it
// fails the test with the output when the command fails or overruns.
func tsRunNpm(t *testing.T, dir string, timeout time.Duration, env []string, npm string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	t0 := time.Now()
	err := cmd.Run()
	what := "npm " + strings.Join(args, " ")
	if ctx.Err() != nil {
		t.Fatalf("%s in %s did not finish within %v:\n%s", what, dir, timeout, tsTail(buf.String(), 200))
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("exit status %d", ee.ExitCode())
		}
		t.Fatalf("%s in %s: %v\n%s", what, dir, err, tsTail(buf.String(), 200))
	}
	t.Logf("%s: %v", what, time.Since(t0).Round(time.Millisecond))
	return buf.String()
}

// tsTail is the last n lines of s.
func tsTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… (%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
