// Command ceiling is a deliberately minimal RESP server, the upper bound of
// what a Go server can do on this machine on redis-benchmark's SET, GET and
// INCR: an in-memory map and an append-only log written with one write(2)
// per batch of requests, like Redis's AOF; no storage engine, no other
// commands. -mode goroutine serves each connection on its own goroutine
// under one global mutex; -mode epoll (Linux) serves all of them from one
// event loop.
//
// -appendfsync everysec fsyncs the log every second. -appendfsync always
// sends no reply before every byte written until then is synced (so no
// reply, a GET's included, shows a write that is not durable), with group
// commit: in goroutine mode, a connection with replies to send either runs
// the next fdatasync for everything written so far or waits for the one
// running; in epoll mode, the loop syncs once per pass, after its one
// write(2) and before any reply, as Redis's event loop does.
//
// -sched-policy batch gives its threads Linux's SCHED_BATCH policy, as
// oncekv's sched-policy directive does, so that a thread woken by a
// request does not preempt the client on its CPU (internal/sched);
// normal, the default as oncekv's, leaves them as the process started.
//
// -io raw, the default, reads and writes the sockets and the log with
// system calls the Go scheduler is not told of, as oncekv does (package
// internal/rawio says why); -io net with net.Conn and os.File, as a Go
// server usually does.
//
// It is used by bench/ceiling.sh and is not part of the product.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/oncekv/oncekv/internal/rawio"
	"github.com/oncekv/oncekv/internal/sched"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	mode := flag.String("mode", "goroutine", "goroutine or epoll (Linux)")
	aofPath := flag.String("aof", "", "append-only log (default: a temporary file, removed on exit)")
	policy := flag.String("appendfsync", "everysec", "everysec or always")
	schedPolicy := flag.String("sched-policy", "normal", "the threads' scheduling policy: normal or batch (Linux)")
	ioMode := flag.String("io", "raw", "how sockets and the log are read and written: raw (system calls the scheduler is not told of, as oncekv makes them: internal/rawio) or net (net.Conn and os.File)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("ceiling: ")
	if p, err := sched.Parse(*schedPolicy); err != nil {
		fatal(err)
	} else if p != sched.Normal {
		if _, err := sched.Apply(p); err != nil {
			fatal(err)
		}
	}

	var f *os.File
	var err error
	if *aofPath != "" {
		f, err = os.OpenFile(*aofPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	} else if f, err = os.CreateTemp("", "ceiling-*.aof"); err == nil {
		tempAOF = f.Name()
	}
	if err != nil {
		log.Fatal(err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() { <-sig; os.Remove(tempAOF); os.Exit(0) }()
	if *ioMode != "raw" && *ioMode != "net" {
		fatal(fmt.Errorf("unknown -io %q", *ioMode))
	}
	if *policy != "everysec" && *policy != "always" {
		fatal(fmt.Errorf("unknown -appendfsync %q", *policy))
	}
	s := newServer(f, *policy == "always", func() error { return fdatasync(f) })
	s.raw = *ioMode == "raw"
	if !s.always {
		go func() {
			for range time.Tick(time.Second) {
				if err := s.sync(); err != nil {
					fatal(err)
				}
			}
		}()
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fatal(err)
	}
	fmt.Println("listening on", ln.Addr(), "mode", *mode, "io", *ioMode, "appendfsync", *policy)
	switch *mode {
	case "goroutine":
		err = s.serveGoroutines(ln)
	case "epoll":
		err = s.serveEpoll(ln.(*net.TCPListener))
	default:
		err = fmt.Errorf("unknown -mode %q", *mode)
	}
	fatal(err)
}

var tempAOF string // the -aof file to remove on exit, if it is a temporary one

func fatal(err error) {
	log.Print(err)
	if tempAOF != "" {
		os.Remove(tempAOF)
	}
	os.Exit(1)
}

// server is the whole database. mu guards data and log: the epoll loop is
// the only user in that mode, but takes it too.
type server struct {
	mu   sync.Mutex
	data map[string][]byte
	log  []byte // requests to append to aof
	aof  *os.File
	// raw is -io raw: sockets and the log are read and written with raw
	// system calls (package rawio says why oncekv does).
	raw     bool
	written int64        // bytes written to aof; under mu
	always  bool         // appendfsync always
	sync    func() error // syncs aof

	// Group commit (appendfsync always): durable is how many of aof's
	// bytes are synced, syncing whether a connection is running the next
	// fdatasync. In goroutine mode both are under smu, and synced is
	// signalled when durable moves; the epoll loop, the only user of
	// durable in its mode, keeps it under mu.
	smu     sync.Mutex
	synced  *sync.Cond
	durable int64
	syncing bool
}

// newServer is a server with an empty map that logs to aof and syncs it
// with syncLog: before each batch's replies if always, else every second (the
// caller's ticker).
func newServer(aof *os.File, always bool, syncLog func() error) *server {
	s := &server{data: make(map[string][]byte), aof: aof, always: always, sync: syncLog}
	s.synced = sync.NewCond(&s.smu)
	return s
}

// conn is one client's buffers.
type conn struct {
	in   []byte   // bytes read and not yet run
	out  []byte   // replies not yet written
	args [][]byte // the request being run; points into in
}

func newConn() *conn { return &conn{in: make([]byte, 0, 16<<10)} }

// room makes sure there are at least 4 KiB free at the end of c.in.
func (c *conn) room() []byte {
	c.in = slices.Grow(c.in, 4<<10)
	return c.in[len(c.in):cap(c.in)]
}

// process runs every complete request in c.in, appending the replies to
// c.out and the writes to s.log, and keeps the incomplete rest in c.in.
// The caller holds s.mu.
func (s *server) process(c *conn) error {
	i := 0
	for {
		var n int
		var err error
		c.args, n, err = parse(c.in[i:], c.args[:0])
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		c.out = s.exec(c.args, c.in[i:i+n], c.out)
		i += n
	}
	c.in = c.in[:copy(c.in, c.in[i:])]
	return nil
}

// flushLog writes s.log to the file with one write(2). The caller holds s.mu.
func (s *server) flushLog() {
	if len(s.log) == 0 {
		return
	}
	var err error
	if s.raw {
		_, err = rawio.WriteFile(s.aof, s.log)
	} else {
		_, err = s.aof.Write(s.log)
	}
	if err != nil {
		fatal(err)
	}
	s.written += int64(len(s.log))
	s.log = s.log[:0]
}

// waitDurable returns once the log's first upto bytes are synced. The
// first connection to find no fdatasync running runs one for every byte
// written by then, its own and those of the connections that wrote while
// the last one ran; the others wait for it. The caller does not hold s.mu.
func (s *server) waitDurable(upto int64) {
	s.smu.Lock()
	defer s.smu.Unlock()
	for s.durable < upto {
		if s.syncing {
			s.synced.Wait()
			continue
		}
		s.syncing = true
		s.smu.Unlock()
		s.mu.Lock()
		target := s.written
		s.mu.Unlock()
		err := s.sync()
		s.smu.Lock()
		if err != nil {
			fatal(err)
		}
		s.durable, s.syncing = target, false
		s.synced.Broadcast()
	}
}

// exec runs one request whose bytes are raw and appends its reply to out.
func (s *server) exec(args [][]byte, raw, out []byte) []byte {
	var name [8]byte
	n := copy(name[:], args[0])
	if len(args[0]) > len(name) {
		n = 0
	}
	for i := range n {
		if 'a' <= name[i] && name[i] <= 'z' {
			name[i] -= 'a' - 'A'
		}
	}
	cmd := string(name[:n])
	if (cmd == "GET" || cmd == "INCR") && len(args) != 2 || cmd == "SET" && len(args) < 3 {
		return append(out, "-ERR wrong number of arguments\r\n"...)
	}
	switch cmd {
	case "GET":
		v, ok := s.data[string(args[1])]
		if !ok {
			return append(out, "$-1\r\n"...)
		}
		out = append(out, '$')
		out = strconv.AppendInt(out, int64(len(v)), 10)
		out = append(out, "\r\n"...)
		out = append(out, v...)
		return append(out, "\r\n"...)
	case "SET": // options such as EX or NX are ignored
		s.data[string(args[1])] = bytes.Clone(args[2])
		s.log = append(s.log, raw...)
		return append(out, "+OK\r\n"...)
	case "INCR":
		var v int64
		if old, ok := s.data[string(args[1])]; ok {
			var err error
			v, err = strconv.ParseInt(string(old), 10, 64)
			if err != nil || v == math.MaxInt64 {
				return append(out, "-ERR value is not an integer or out of range\r\n"...)
			}
		}
		v++
		s.data[string(args[1])] = strconv.AppendInt(nil, v, 10)
		s.log = append(s.log, raw...)
		out = append(out, ':')
		out = strconv.AppendInt(out, v, 10)
		return append(out, "\r\n"...)
	case "PING":
		return append(out, "+PONG\r\n"...)
	case "CONFIG": // redis-benchmark asks for save and appendonly
		return append(out, "*0\r\n"...)
	}
	return append(out, "+OK\r\n"...)
}

var errProtocol = errors.New("protocol error")

// parse reads one multibulk request (*N\r\n then N times $len\r\nbytes\r\n)
// at the start of b into args, whose storage it reuses. It returns the
// number of bytes the request takes, 0 if b holds only part of it.
func parse(b []byte, args [][]byte) ([][]byte, int, error) {
	if len(b) == 0 {
		return args, 0, nil
	}
	if b[0] != '*' {
		return args, 0, errProtocol
	}
	count, i, err := parseLen(b, 1)
	if i == 0 || err != nil {
		return args, 0, err
	}
	if count == 0 || count > 1024 {
		return args, 0, errProtocol
	}
	for range count {
		if i == len(b) {
			return args, 0, nil
		}
		if b[i] != '$' {
			return args, 0, errProtocol
		}
		size, j, err := parseLen(b, i+1)
		if j == 0 || err != nil {
			return args, 0, err
		}
		if j+size+2 > len(b) {
			return args, 0, nil
		}
		if b[j+size] != '\r' || b[j+size+1] != '\n' {
			return args, 0, errProtocol
		}
		args = append(args, b[j:j+size])
		i = j + size + 2
	}
	return args, i, nil
}

// parseLen reads a decimal length ended by \r\n at b[i:], up to 64 MiB. It
// returns the length and the index after the \n, or 0 if b ends first.
func parseLen(b []byte, i int) (int, int, error) {
	n, start := 0, i
	for ; i < len(b) && b[i] != '\r'; i++ {
		if b[i] < '0' || b[i] > '9' || n > 64<<20 {
			return 0, 0, errProtocol
		}
		n = n*10 + int(b[i]-'0')
	}
	switch {
	case i+1 >= len(b):
		return 0, 0, nil
	case i == start || b[i+1] != '\n' || n > 64<<20:
		return 0, 0, errProtocol
	}
	return n, i + 2, nil
}

// serveGoroutines serves each connection on its own goroutine.
func (s *server) serveGoroutines(ln net.Listener) error {
	for {
		nc, err := ln.Accept()
		if err != nil {
			return err
		}
		go s.serveConn(nc)
	}
}

func (s *server) serveConn(nc net.Conn) {
	defer nc.Close()
	var rw io.ReadWriter = nc
	if sc, ok := nc.(syscall.Conn); ok && s.raw {
		raw, err := sc.SyscallConn()
		if err != nil {
			return
		}
		sk := &rawio.Socket{}
		sk.Init(raw)
		rw = sk
	}
	c := newConn()
	for {
		n, rerr := rw.Read(c.room())
		c.in = c.in[:len(c.in)+n]
		s.mu.Lock()
		perr := s.process(c)
		s.flushLog() // the log is written before the replies go out
		upto := s.written
		s.mu.Unlock()
		if s.always {
			s.waitDurable(upto) // and synced, under appendfsync always
		}
		if len(c.out) > 0 {
			if _, err := rw.Write(c.out); err != nil {
				return
			}
			c.out = c.out[:0]
		}
		if rerr != nil || perr != nil {
			return
		}
	}
}
