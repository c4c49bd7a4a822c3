// Package testserver starts servers for tests: in process (through the same
// assembly as main) or as the built binary. Servers listen on 127.0.0.1
// only, on a free port.
package testserver

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/oncekv/oncekv/internal/app"
	"github.com/oncekv/oncekv/internal/config"
)

// Start runs a server in this process with the given directives
// (--name value … as on the command line) on a free loopback port, with
// its data in a fresh temporary directory unless --dir is given. Cleanup
// closes it.
func Start(tb testing.TB, args ...string) *app.App {
	tb.Helper()
	a, err := StartErr(tb, args...)
	if err != nil {
		tb.Fatalf("start server: %v", err)
	}
	tb.Cleanup(func() {
		// A server stuck on a lock would hang its test here, after the
		// test has failed, and hide why it failed: give up on it.
		done := make(chan struct{})
		go func() { a.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(closeWait):
			tb.Errorf("the server did not close within %v: a connection or the store is stuck", closeWait)
		}
	})
	return a
}

// closeWait bounds the wait for a server to close at cleanup.
const closeWait = 30 * time.Second

// StartErr is Start without cleanup or fatal errors: the caller closes it.
func StartErr(tb testing.TB, args ...string) (*app.App, error) {
	full := append([]string{"--bind", "127.0.0.1", "--port", "0", "--dir", tb.TempDir(), "--loglevel", "warning"}, args...)
	cfg, err := config.Parse(full)
	if err != nil {
		return nil, err
	}
	a, err := app.New(cfg, nil)
	if err != nil {
		return nil, err
	}
	if err := a.Start(); err != nil {
		return nil, err
	}
	return a, nil
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary builds the oncekv binary once per test process and returns its
// path. It is built with the oncekv_poison tag, as the integration tests'
// is (resp.Reader.Release).
func Binary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		root, err := ModuleRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "oncekv-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "oncekv")
		cmd := exec.Command("go", "build", "-tags", "oncekv_poison", "-o", binPath, ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err, string(out)}
		}
	})
	if buildErr != nil {
		tb.Fatalf("build oncekv: %v", buildErr)
	}
	return binPath
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// ModuleRoot walks up from the working directory to the one holding go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}

// WaitReady polls addr until it accepts connections.
func WaitReady(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
