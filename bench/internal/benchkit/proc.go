package benchkit

// Starting the two servers as child processes on free 127.0.0.1 ports,
// each with its data in its own directory.

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/oncekv/oncekv/internal/child"
)

// Proc is a server started by the benchmark.
type Proc struct {
	Name    string
	Addr    string // 127.0.0.1:port
	Port    int
	Bin     string
	Args    []string
	Dir     string // its working directory, which holds its log
	Log     string
	Started time.Time // just before the process was started

	cmd   *exec.Cmd
	child *child.Proc
}

// PID returns the process id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// CommandLine returns the command that started p, quoted for a shell.
func (p *Proc) CommandLine() string { return ShellQuote(append([]string{p.Bin}, p.Args...)) }

// ShellQuote joins args into one line a POSIX shell reads back as args.
func ShellQuote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@%+") == "" {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

// FreePort returns a port that was free on 127.0.0.1 a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Spawn starts bin with args in dir, its output going to dir/<name>.log
// (appended to), and returns at once: the caller waits for it to answer.
func Spawn(name, bin, dir string, port int, args []string) (*Proc, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	p, err := StartCmd(name, cmd)
	if err != nil {
		return nil, err
	}
	p.Addr, p.Port, p.Dir, p.Log = "127.0.0.1:"+strconv.Itoa(port), port, dir, logPath
	return p, nil
}

// live holds the processes started and not yet ended, for StopAll.
var live sync.Map // *Proc → struct{}

// StartCmd starts cmd, made to die with this process, and returns it as
// a Proc (without an address) that StopAll stops.
func StartCmd(name string, cmd *exec.Cmd) (*Proc, error) {
	p := &Proc{Name: name, Bin: cmd.Path, Args: cmd.Args[1:], cmd: cmd}
	p.Started = time.Now()
	c, err := child.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p.child = c
	live.Store(p, struct{}{})
	go func() {
		<-c.Done()
		live.Delete(p)
	}()
	return p, nil
}

// Ended says how the process ended (Wait's error: "signal: killed",
// "exit status 1"; "exit status 0" for a clean exit), or "running".
func (p *Proc) Ended() string {
	if !p.Exited() {
		return "running"
	}
	if p.child.Err() == nil {
		return "exit status 0"
	}
	return p.child.Err().Error()
}

// Wait waits for the process to end and returns how it ended.
func (p *Proc) Wait() error {
	<-p.child.Done()
	return p.child.Err()
}

// StopAll stops every process started here that is still running (each
// with Stop's SIGTERM, then SIGKILL after grace), for a program that is
// interrupted.
func StopAll(grace time.Duration) {
	var wg sync.WaitGroup
	live.Range(func(k, _ any) bool {
		wg.Go(func() { k.(*Proc).StopWithin(grace) })
		return true
	})
	wg.Wait()
}

// Start runs bin with the args mkArgs makes for a free port and waits
// until it answers PING. It retries with another port if the server
// exits at once (the port was taken between FreePort and the listen).
func Start(name, bin, dir string, mkArgs func(port int) []string) (*Proc, error) {
	var last error
	for range 3 {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		p, err := Spawn(name, bin, dir, port, mkArgs(port))
		if err != nil {
			return nil, err
		}
		if err := p.WaitReady(60 * time.Second); err != nil {
			p.Stop()
			last = fmt.Errorf("%s did not start: %w\n%s", name, err, p.LogTail())
			continue
		}
		return p, nil
	}
	return nil, last
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.child.Done():
		return true
	default:
		return false
	}
}

// WaitReady waits until p answers PING with PONG.
func (p *Proc) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if p.Exited() {
			return fmt.Errorf("%w: exited: %v", ErrNotReady, p.child.Err())
		}
		if c, err := DialTimeout(p.Addr, time.Second); err == nil {
			r, err := c.Do("PING")
			c.Close()
			if err == nil && r.Kind == '+' && r.Str == "PONG" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: no PONG in %s", ErrNotReady, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop sends SIGTERM and, if the server is still there after grace,
// SIGKILL; it returns once the process has ended.
func (p *Proc) Stop() { p.StopWithin(30 * time.Second) }

// StopWithin is Stop with the given grace.
func (p *Proc) StopWithin(grace time.Duration) {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // if paused
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.child.Done():
	case <-time.After(grace):
		p.Kill()
	}
}

// Pause stops the process (SIGSTOP) until Resume: a server that is not
// being measured then takes no CPU from the one that is.
func (p *Proc) Pause() error {
	if p.Exited() {
		return p.exitedError()
	}
	return p.cmd.Process.Signal(syscall.SIGSTOP)
}

// Resume continues a paused process (SIGCONT).
func (p *Proc) Resume() error {
	if p.Exited() {
		return p.exitedError()
	}
	return p.cmd.Process.Signal(syscall.SIGCONT)
}

// exitedError says that p exited, how, and the end of its log.
func (p *Proc) exitedError() error {
	return fmt.Errorf("%s exited (%s)\n%s", p.Name, p.Ended(), p.LogTail())
}

// Kill sends SIGKILL and waits for the process to end.
func (p *Proc) Kill() {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.child.Done()
}

// LogTail returns the last 2000 bytes of p's log.
func (p *Proc) LogTail() string {
	b, _ := os.ReadFile(p.Log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// RedisArgs are the arguments of a redis-server with its data in dir: no
// RDB snapshots, AOF on with the given fsync policy, then extra.
func RedisArgs(port int, dir, fsync string, extra ...string) []string {
	return append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "yes", "--appendfsync", fsync,
		"--daemonize", "no", "--loglevel", "warning",
	}, extra...)
}

// OncekvArgs are the arguments of an oncekv with its data in dir and the
// given fsync policy, then extra.
func OncekvArgs(port int, dir, fsync string, extra ...string) []string {
	return append([]string{
		"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir,
		"--appendfsync", fsync, "--loglevel", "warning",
	}, extra...)
}

// StartRedis starts redis-server bin with its data in dir (RedisArgs).
func StartRedis(bin, dir, fsync string, extra ...string) (*Proc, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return Start("redis-server", bin, dir, func(port int) []string { return RedisArgs(port, dir, fsync, extra...) })
}

// StartOncekv starts the oncekv binary bin with its data in dir/data
// (OncekvArgs) and its log in dir.
func StartOncekv(bin, dir, fsync string, extra ...string) (*Proc, error) {
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	return Start("oncekv", bin, dir, func(port int) []string { return OncekvArgs(port, data, fsync, extra...) })
}

// BuildOncekv builds the oncekv module at repo into dir and returns the
// binary's path.
func BuildOncekv(repo, dir string) (string, error) {
	return Build(repo, ".", filepath.Join(dir, "oncekv"))
}

// Build runs go build -o out pkg in the module at repo.
func Build(repo, pkg, out string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = repo
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s in %s: %w\n%s", pkg, repo, err, b)
	}
	return out, nil
}

// FindRepo walks up from the working directory to the go.mod of
// github.com/oncekv/oncekv.
func FindRepo() (string, error) {
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
			return "", ErrNoRepo
		}
		dir = parent
	}
}
