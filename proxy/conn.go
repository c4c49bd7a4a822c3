package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/oncekv/oncekv/internal/rawio"
)

// Timeouts of upstream connections.
const (
	// dialTimeout bounds connecting and the handshake (HELLO / AUTH).
	dialTimeout = 5 * time.Second
	// maxIdle is how many idle connections each node keeps per protocol.
	maxIdle = 256
	// checkIdleAfter: a connection idle that long is checked (a peek at
	// the socket, one system call) before it is used, so that a server
	// that restarted meanwhile costs a new connection, not a failed
	// command. Under load connections are reused sooner and not checked.
	checkIdleAfter = 100 * time.Millisecond
)

// upConn is one connection to an upstream node. It belongs to one client
// session at a time (checked out from its node's pool), so it needs no
// lock; its protocol is fixed at dial time and its database follows the
// SELECTs sent on it.
type upConn struct {
	nc    net.Conn
	br    *bufio.Reader
	bw    *bufio.Writer
	node  *node
	proto int
	db    int
	// err, once set, marks the connection broken: it is closed instead
	// of going back to the pool.
	err error
	// owed is the number of replies written for and not read yet.
	owed int
	// gen is the node's generation when the connection was dialed;
	// idleSince when it was last pooled.
	gen       uint64
	idleSince time.Time
}

// send writes one command (buffered; flush sends it).
func (c *upConn) send(args [][]byte) {
	if c.err != nil {
		return
	}
	if err := writeCommand(c.bw, args); err != nil {
		c.fail(err)
		return
	}
	c.owed++
}

// flush sends what send buffered.
func (c *upConn) flush() error {
	if c.err != nil {
		return c.err
	}
	if c.bw.Buffered() > 0 {
		if err := c.bw.Flush(); err != nil {
			c.fail(err)
		}
	}
	return c.err
}

// read reads one reply, appending its bytes to dst.
func (c *upConn) read(dst []byte) ([]byte, error) {
	if c.err != nil {
		return dst, c.err
	}
	if err := c.flush(); err != nil {
		return dst, err
	}
	mark := len(dst)
	dst, err := readReply(c.br, dst)
	if err != nil {
		c.fail(err)
		return dst[:mark], c.err
	}
	c.owed--
	return dst, nil
}

// do sends one command and reads its reply.
func (c *upConn) do(dst []byte, args ...[]byte) ([]byte, error) {
	c.send(args)
	return c.read(dst)
}

func (c *upConn) fail(err error) {
	if c.err == nil {
		c.err = fmt.Errorf("upstream %s: %w", c.node.addr, err)
		c.nc.Close()
	}
}

// selectArgs is SELECT db.
func selectArgs(db int) [][]byte {
	return [][]byte{[]byte("SELECT"), strconv.AppendInt(nil, int64(db), 10)}
}

// node is one upstream server and its pools of idle connections, one per
// protocol.
type node struct {
	addr string
	p    *Proxy

	mu   sync.Mutex
	idle [2][]*upConn // by protocol: [0] RESP2, [1] RESP3
	// gen grows when the node's connections are found broken (closeIdle):
	// those dialed before, in use then, are closed when given back.
	gen uint64
}

func protoIndex(proto int) int {
	if proto == 3 {
		return 1
	}
	return 0
}

// get returns an idle connection of protocol proto, or dials one.
func (n *node) get(proto int) (*upConn, error) {
	i := protoIndex(proto)
	for {
		n.mu.Lock()
		k := len(n.idle[i])
		if k == 0 {
			n.mu.Unlock()
			return n.p.dial(n, proto)
		}
		c := n.idle[i][k-1]
		n.idle[i] = n.idle[i][:k-1]
		n.mu.Unlock()
		if time.Since(c.idleSince) < checkIdleAfter || alive(c.nc) {
			return c, nil
		}
		n.p.drop(c)
	}
}

// put gives back a connection: idle if it is healthy, owes no reply and
// is of the node's current generation, closed otherwise.
func (n *node) put(c *upConn) {
	if c.err != nil || c.owed != 0 || n.p.closed.Load() {
		n.p.drop(c)
		return
	}
	i := protoIndex(c.proto)
	n.mu.Lock()
	if len(n.idle[i]) < maxIdle && c.gen == n.gen {
		c.idleSince = time.Now()
		n.idle[i] = append(n.idle[i], c)
		n.mu.Unlock()
		return
	}
	n.mu.Unlock()
	n.p.drop(c)
}

// closeIdle closes the idle connections, and those in use when they come
// back (a new generation).
func (n *node) closeIdle() {
	n.mu.Lock()
	idle := n.idle
	n.idle = [2][]*upConn{}
	n.gen++
	n.mu.Unlock()
	for _, l := range idle {
		for _, c := range l {
			n.p.drop(c)
		}
	}
}

// dial connects to n and shakes hands in protocol proto: HELLO 3 (with
// AUTH) for RESP3, AUTH for RESP2 when the upstream has a password, and
// CLIENT SETNAME so that the upstream's CLIENT LIST tells the proxy's
// connections apart.
func (p *Proxy) dial(n *node, proto int) (*upConn, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	nc, err := net.DialTimeout("tcp", n.addr, dialTimeout)
	if err != nil {
		p.stats.dialErrors.Add(1)
		return nil, fmt.Errorf("upstream %s: %w", n.addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetKeepAlive(true)
		_ = tc.SetKeepAlivePeriod(30 * time.Second)
	}
	n.mu.Lock()
	gen := n.gen
	n.mu.Unlock()
	// Read and written with raw system calls, as clients' sockets are
	// (package rawio says why).
	var rw io.ReadWriter = nc
	if sc, ok := nc.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			sk := &rawio.Socket{}
			sk.Init(raw)
			rw = sk
		}
	}
	c := &upConn{nc: nc, br: bufio.NewReaderSize(rw, 32<<10), bw: bufio.NewWriterSize(rw, 32<<10), node: n, proto: 2, gen: gen}
	_ = nc.SetDeadline(time.Now().Add(dialTimeout))
	user, pass := p.up.Username, p.up.Password
	if user == "" {
		user = "default"
	}
	n2 := 1
	switch {
	case proto == 3 && pass != "":
		c.send(bs("HELLO", "3", "AUTH", user, pass))
	case proto == 3:
		c.send(bs("HELLO", "3"))
	case pass != "" && p.up.Username != "":
		c.send(bs("AUTH", user, pass))
	case pass != "":
		c.send(bs("AUTH", pass))
	default:
		n2 = 0
	}
	c.send(bs("CLIENT", "SETNAME", "oncekv-proxy"))
	var buf []byte
	for i := 0; i < n2+1; i++ {
		buf, err = c.read(buf[:0])
		if err != nil {
			nc.Close()
			p.stats.dialErrors.Add(1)
			return nil, err
		}
		if len(buf) > 0 && (buf[0] == '-' || buf[0] == '!') && i < n2 {
			nc.Close()
			p.stats.dialErrors.Add(1)
			return nil, fmt.Errorf("%w by %s: %s", ErrHandshake, n.addr, trimCRLF(buf[1:]))
		}
	}
	_ = nc.SetDeadline(time.Time{})
	c.proto = proto
	p.liveMu.Lock()
	if p.closed.Load() {
		p.liveMu.Unlock()
		nc.Close()
		return nil, ErrClosed
	}
	p.live[c] = struct{}{}
	p.liveMu.Unlock()
	p.stats.dials.Add(1)
	return c, nil
}

// drop closes a connection for good.
func (p *Proxy) drop(c *upConn) {
	c.nc.Close()
	p.liveMu.Lock()
	delete(p.live, c)
	p.liveMu.Unlock()
}

// node returns the node at addr, creating it on first use.
func (p *Proxy) node(addr string) *node {
	p.nodesMu.Lock()
	defer p.nodesMu.Unlock()
	if n := p.nodes[addr]; n != nil {
		return n
	}
	n := &node{addr: addr, p: p}
	p.nodes[addr] = n
	return n
}

// oneShot runs one command of the proxy's own (CLUSTER SLOTS, COMMAND,
// INFO keyspace…) on a pooled RESP2 connection of n, within dialTimeout,
// and returns the reply's bytes. The command must not depend on the
// connection's database.
func (p *Proxy) oneShot(n *node, args ...[]byte) ([]byte, error) {
	c, err := n.get(2)
	if err != nil {
		return nil, err
	}
	_ = c.nc.SetDeadline(time.Now().Add(dialTimeout))
	out, err := c.do(nil, args...)
	_ = c.nc.SetDeadline(time.Time{})
	n.put(c)
	return out, err
}

func bs(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

func isOK(b []byte) bool { return string(b) == "+OK\r\n" }

func trimCRLF(b []byte) string {
	if len(b) >= 2 && b[len(b)-2] == '\r' {
		b = b[:len(b)-2]
	}
	return string(b)
}

// errText is the text of an upstream error reply ("MOVED 3999 host:port"),
// or "" when b is not an error.
func errText(b []byte) string {
	if len(b) == 0 || (b[0] != '-' && b[0] != '!') {
		return ""
	}
	if b[0] == '!' {
		v, err := parseReply(b)
		if err != nil {
			return ""
		}
		return v.text()
	}
	return trimCRLF(b[1:])
}
