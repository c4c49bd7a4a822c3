package main

// Starting the two servers as child processes on free 127.0.0.1 ports,
// each with its data in its own directory.

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a server started by the benchmark.
type proc struct {
	name string
	addr string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // Wait's result, once done is closed
}

// freePort returns a port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startProc runs bin with args (which must contain the port from port,
// filled in by mkArgs) and waits until it answers PING. It retries with
// another port if the server exits at once (the port was taken between
// freePort and the listen).
func startProc(name, bin, dir string, mkArgs func(port int) []string) (*proc, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var last error
	for attempt := range 3 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		logPath := filepath.Join(dir, fmt.Sprintf("%s-%d.log", name, attempt))
		logf, err := os.Create(logPath)
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(bin, mkArgs(port)...)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = childAttr()
		if err := cmd.Start(); err != nil {
			logf.Close()
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		logf.Close()
		p := &proc{name: name, addr: "127.0.0.1:" + strconv.Itoa(port), log: logPath, cmd: cmd, done: make(chan struct{})}
		go func() { p.err = cmd.Wait(); close(p.done) }()
		if err := p.waitReady(15 * time.Second); err != nil {
			p.stop()
			last = fmt.Errorf("%s did not start: %w\n%s", name, err, p.logTail())
			continue
		}
		return p, nil
	}
	return nil, last
}

func (p *proc) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-p.done:
			return fmt.Errorf("exited: %v", p.err)
		default:
		}
		if c, err := dial(p.addr); err == nil {
			r, err := c.do("PING")
			c.close()
			if err == nil && r.kind == '+' && r.str == "PONG" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("no PONG before the timeout")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM and, if the server is still there after 10 s,
// SIGKILL.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) logTail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// startRedis starts redis-server bin with its data in dir: no RDB
// snapshots, AOF on with the given fsync policy.
func startRedis(bin, dir, fsync string) (*proc, error) {
	return startProc("redis-server", bin, dir, func(port int) []string {
		return []string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "yes", "--appendfsync", fsync,
			"--daemonize", "no", "--loglevel", "warning",
		}
	})
}

// startOncekv starts the oncekv binary bin with its data in dir/data.
func startOncekv(bin, dir, fsync string) (*proc, error) {
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	return startProc("oncekv", bin, dir, func(port int) []string {
		return []string{
			"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", data,
			"--appendfsync", fsync, "--loglevel", "warning",
		}
	})
}

// buildOncekv builds the oncekv module at repo into dir and returns the
// binary's path.
func buildOncekv(repo, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "oncekv")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build in %s: %w\n%s", repo, err, out)
	}
	return bin, nil
}

// findRepo walks up from the working directory to the go.mod of
// github.com/oncekv/oncekv.
func findRepo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			bytes.Contains(b, []byte("module github.com/oncekv/oncekv\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the github.com/oncekv/oncekv module: give -repo, -oncekv-bin or -oncekv")
		}
		dir = parent
	}
}

// infoField returns a field of INFO server, or "?".
func infoField(addr, field string) string {
	c, err := dial(addr)
	if err != nil {
		return "?"
	}
	defer c.close()
	r, err := c.do("INFO", "server")
	if err != nil || r.kind != '$' {
		return "?"
	}
	for _, l := range strings.Split(r.str, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			return v
		}
	}
	return "?"
}
