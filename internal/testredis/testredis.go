// Package testredis starts real redis-server processes for tests: a
// standalone server, or a Redis Cluster with replicas, each node on a free
// 127.0.0.1 port with its files in a t.TempDir(). Every process is killed by
// tb.Cleanup, and by the kernel if the test process dies first (Linux
// Pdeathsig), so no run leaves servers behind.
//
// API:
//
//	s := testredis.Standalone(tb, "--appendonly", "yes") // extra redis-server args
//	s.Addr()      // "127.0.0.1:port"
//	s.Client()    // a *redis.Client for s, closed by tb.Cleanup
//	s.Kill()      // SIGKILL, waits for the exit
//	s.Pause(), s.Resume() // SIGSTOP / SIGCONT: a frozen server (replication falls behind)
//	s.Restart()   // starts it again on the same port and dir, with the same args
//	s.Alive()     // whether the process runs
//	s.Log()       // what the process printed, all runs
//
//	c := testredis.StartCluster(tb, 3, 1) // 3 masters, 1 replica each, optional extra args
//	c.Addrs()           // every node, masters first (as started)
//	c.Masters()         // current masters among the live nodes (after a failover: the promoted ones)
//	c.Replicas()        // current replicas among the live nodes
//	c.ReplicasOf(addr)  // the live replicas of master addr
//	c.Node(addr)        // the *Server at addr (Kill, Restart, Client, …)
//	c.MasterForKey(k)   // the current master serving key k
//	c.KillNode(addr)    // SIGKILL one node
//	c.WaitFailover(addr, d) // after killing master addr: waits until another node took its slots
//	c.WaitHealthy(d)    // cluster_state:ok and all 16384 slots ok on every live node
//	c.Client()          // a *redis.ClusterClient over all nodes (slot map reloaded every second), closed by tb.Cleanup
//	c.KeySlot(k), c.OtherMaster(addr) // k's hash slot; a master other than addr
//	m := c.BeginMigration(slot, to) // SETSLOT … IMPORTING on to, … MIGRATING on the slot's master
//	m.Move(keys...), m.MoveAll()    // MIGRATE some or all of the slot's keys
//	m.Finish()          // MIGRATE the rest, SETSLOT … NODE on to, the source, the other masters
//	c.MoveSlot(slot, to) // BeginMigration, then Finish
//
// Cluster nodes run with cluster-node-timeout 1000 ms and
// cluster-replica-validity-factor 0, so killing a master is noticed in about
// a second and its replica takes over within about two to three seconds.
// The cluster is built directly (CLUSTER ADDSLOTSRANGE, MEET, REPLICATE), as
// redis-cli --cluster create does, but deterministically: node i < masters
// is a master, and replica j of master m is node masters + m*replicas + j.
//
// If redis-server is not installed, tests calling Standalone or StartCluster
// are skipped with a message saying how to install it (./test.sh installs
// it, so in CI they run).
package testredis

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncekv/oncekv/internal/child"
)

const (
	startTimeout = 15 * time.Second
	stopTimeout  = 10 * time.Second
)

// binary returns redis-server's path, skipping tb when it is not installed.
func binary(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Skip("redis-server not installed: apt-get install -y redis-server redis-tools (./test.sh does)")
	}
	return bin
}

// Server is one redis-server process.
type Server struct {
	tb   testing.TB
	bin  string
	dir  string
	port int
	args []string // extra arguments, after the fixed ones
	conf string   // the config file, the first argument, if any

	mu   sync.Mutex
	p    *proc
	logs []*SyncBuffer // one per run
}

// Standalone starts a redis-server on a free 127.0.0.1 port in a
// tb.TempDir(), with `--save "" --appendonly no` (args come later, so they
// may override that) and args. tb.Cleanup kills it.
func Standalone(tb testing.TB, args ...string) *Server {
	tb.Helper()
	return start(tb, binary(tb), tb.TempDir(), false, args)
}

// StandaloneConf is Standalone started with the config file conf, as
// `redis-server conf --port N …` (the fixed arguments and args apply on
// top of the file, and are part of what CONFIG REWRITE writes to it).
func StandaloneConf(tb testing.TB, conf string, args ...string) *Server {
	tb.Helper()
	return startServer(tb, &Server{tb: tb, bin: binary(tb), dir: tb.TempDir(), args: args, conf: conf}, false)
}

// start starts a server, retrying on another port when the chosen one was
// taken by someone else in between. bus reserves port+10000 too (the
// cluster bus).
func start(tb testing.TB, bin, dir string, bus bool, args []string) *Server {
	tb.Helper()
	return startServer(tb, &Server{tb: tb, bin: bin, dir: dir, args: args}, bus)
}

func startServer(tb testing.TB, s *Server, bus bool) *Server {
	tb.Helper()
	var last error
	for attempt := 0; attempt < 8; attempt++ {
		s.port = freePort(tb, bus)
		if last = s.run(); last == nil {
			tb.Cleanup(s.Kill)
			return s
		}
		if !strings.Contains(last.Error(), "in use") {
			break
		}
	}
	tb.Fatalf("redis-server did not start: %v", last)
	return nil
}

// run starts the process on s.port and waits until it answers PING.
func (s *Server) run() error {
	argv := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--save", "", "--appendonly", "no"}
	argv = append(argv, s.args...)
	if s.conf != "" {
		argv = append([]string{s.conf}, argv...)
	}
	cmd := exec.Command(s.bin, argv...)
	out := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	c, err := child.Start(cmd)
	if err != nil {
		return err
	}
	p := &proc{cmd: cmd, c: c, done: c.Done()}
	s.mu.Lock()
	s.p = p
	s.logs = append(s.logs, out)
	s.mu.Unlock()
	deadline := time.Now().Add(startTimeout)
	for {
		if p.exited() {
			return fmt.Errorf("exited (%v) before answering PING:\n%s", p.c.Err(), tail(out.String(), 4000))
		}
		err := PingAs(s.Addr(), cmd.Process.Pid)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			p.kill()
			return fmt.Errorf("no answer to PING within %v: %v\n%s", startTimeout, err, tail(out.String(), 4000))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Addr is "127.0.0.1:port".
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Dir is the server's working directory (its data and nodes.conf).
func (s *Server) Dir() string { return s.dir }

// Kill sends SIGKILL and waits for the process to exit. Killing a stopped
// server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	p := s.p
	s.mu.Unlock()
	if p != nil {
		_ = p.cmd.Process.Signal(syscall.SIGCONT) // a paused process dies too
		p.kill()
	}
}

// Pause stops the process (SIGSTOP) without killing it: it answers
// nothing, and reads nothing, until Resume.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	p := s.p
	s.mu.Unlock()
	if p != nil && !p.exited() {
		_ = p.cmd.Process.Signal(sig)
	}
}

// Alive reports whether the process runs.
func (s *Server) Alive() bool {
	s.mu.Lock()
	p := s.p
	s.mu.Unlock()
	return p != nil && !p.exited()
}

// Restart kills the server if it runs and starts it again on the same port
// and directory with the same arguments (with --appendonly yes in args, the
// data comes back; a cluster node rejoins with its nodes.conf).
func (s *Server) Restart() {
	s.tb.Helper()
	s.Kill()
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if err = s.run(); err == nil {
			return
		}
		if !strings.Contains(err.Error(), "in use") {
			break
		}
		time.Sleep(100 * time.Millisecond) // the old socket may linger briefly
	}
	s.tb.Fatalf("restarting redis-server on %s: %v", s.Addr(), err)
}

// Log returns what the process printed, over all its runs.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for i, l := range s.logs {
		if i > 0 {
			b.WriteString("--- restart ---\n")
		}
		b.WriteString(l.String())
	}
	return b.String()
}

// Client returns a new *redis.Client for the server, closed by tb.Cleanup.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	s.tb.Cleanup(func() { _ = c.Close() })
	return c
}

// do runs one command on the server with a short-lived connection (which
// sees the server as it is now, without go-redis's pools or retries).
func (s *Server) do(args ...any) (any, error) {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second, PoolSize: 1, Protocol: 2, DisableIdentity: true})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return c.Do(ctx, args...).Result()
}

func (s *Server) doString(args ...any) (string, error) {
	v, err := s.do(args...)
	if err != nil {
		return "", err
	}
	str, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%v: reply %T, not a string", args, v)
	}
	return str, nil
}

// proc is a started process whose Wait runs in the background.
type proc struct {
	cmd  *exec.Cmd
	c    *child.Proc
	done <-chan struct{} // c.Done()
}

func (p *proc) exited() bool { return p.c.Exited() }

func (p *proc) kill() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
	}
}

// freePort returns a port on 127.0.0.1 that was free a moment ago; with bus,
// port+10000 was free too. Another process may still take it; start retries.
func freePort(tb testing.TB, bus bool) int {
	tb.Helper()
	for i := 0; i < 100; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !bus {
			l.Close()
			return port
		}
		if port+10000 > 65535 {
			l.Close()
			continue
		}
		l2, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		l.Close()
		if err != nil {
			continue
		}
		l2.Close()
		return port
	}
	tb.Fatalf("no free port pair (port, port+10000) on 127.0.0.1")
	return 0
}

// ping sends PING over a fresh connection; any reply but -LOADING counts as
// ready.
func ping(addr string) error { return PingAs(addr, 0) }

// PingAs sends PING to addr over a fresh connection, then, unless pid is 0,
// INFO server. It reports an error unless the server is ready (any reply
// to PING but -LOADING) and, as far as INFO tells, is process pid.
//
// A free port that a test picked may be taken by another test's server
// before the process started for it binds it. That server answered PING
// while the process was still starting, to fail on "address already in
// use" a moment later, and the test then talked to the other server (a
// cluster node answering -MOVED, in one CI run). INFO's process_id tells
// them apart; where INFO cannot tell (-NOAUTH, INFO renamed), the sockets
// the process holds do, on Linux (listens); elsewhere the reply to PING
// is taken as it is.
func PingAs(addr string, pid int) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if strings.HasPrefix(line, "-LOADING") {
		return errors.New(strings.TrimSpace(line))
	}
	if pid == 0 {
		return nil
	}
	if _, err := c.Write([]byte("*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")); err != nil {
		return err
	}
	head, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if !strings.HasPrefix(head, "$") || err != nil || n < 0 {
		// An error reply (-NOAUTH, INFO renamed): INFO cannot tell. On
		// Linux, /proc can: the process must hold the listening socket.
		_, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		if yes, known := listens(pid, port); known && !yes {
			return fmt.Errorf("%s is not served by process %d (it holds no socket listening there)", addr, pid)
		}
		return nil
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok && v != strconv.Itoa(pid) {
			return fmt.Errorf("%s is served by process %s, not by %d", addr, v, pid)
		}
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// SyncBuffer is a bytes.Buffer safe for a process's writes (as its
// Stdout/Stderr) and a test's reads; the integration harness uses it for
// the oncekv processes it runs.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// nodeDir makes a subdirectory of a temp dir for one cluster node.
func nodeDir(tb testing.TB, root string, i int) string {
	tb.Helper()
	d := filepath.Join(root, "node"+strconv.Itoa(i))
	if err := os.Mkdir(d, 0o755); err != nil {
		tb.Fatalf("cluster node dir: %v", err)
	}
	return d
}
