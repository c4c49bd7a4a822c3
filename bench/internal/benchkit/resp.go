package benchkit

// A minimal RESP2 client: one connection, commands sent one at a time
// (Do), or written now and read later (Send, Queue+Flush, Read) for
// blocking waits and pipelines. One goroutine may write while another
// reads; two goroutines may not write (or read) at once.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// OpTimeout bounds every request/reply made with Do.
const OpTimeout = 10 * time.Second

// Reply is one RESP value.
type Reply struct {
	Kind byte // '+' status, '-' error, ':' integer, '$' bulk, '*' array, '_' null
	Str  string
	N    int64
	Arr  []Reply
}

func (r Reply) String() string {
	switch r.Kind {
	case '+', '$':
		return strconv.Quote(r.Str)
	case '-':
		return "(error) " + r.Str
	case ':':
		return strconv.FormatInt(r.N, 10)
	case '_':
		return "(nil)"
	case '*':
		parts := make([]string, len(r.Arr))
		for i, e := range r.Arr {
			parts[i] = e.String()
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprintf("(kind %q)", r.Kind)
}

// IsErr reports whether r is an error reply.
func (r Reply) IsErr() bool { return r.Kind == '-' }

// Pair reports whether r is a two-element array whose first element is
// the string state, and returns the second element.
func (r Reply) Pair(state string) (Reply, bool) {
	if r.Kind != '*' || len(r.Arr) != 2 || r.Arr[0].Str != state {
		return Reply{}, false
	}
	return r.Arr[1], true
}

// Field returns the value after name in a flat field/value array.
func (r Reply) Field(name string) (Reply, bool) {
	for i := 0; i+1 < len(r.Arr); i += 2 {
		if r.Arr[i].Str == name {
			return r.Arr[i+1], true
		}
	}
	return Reply{}, false
}

// Conn is one client connection.
type Conn struct {
	nc  net.Conn
	r   *bufio.Reader
	buf []byte
}

// Dial connects to addr within 5 s.
func Dial(addr string) (*Conn, error) { return DialTimeout(addr, 5*time.Second) }

// DialTimeout connects to addr within d.
func DialTimeout(addr string, d time.Duration) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		return nil, err
	}
	return &Conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10)}, nil
}

// DialN opens n connections to addr.
func DialN(addr string, n int) ([]*Conn, error) {
	cs := make([]*Conn, 0, n)
	for range n {
		c, err := Dial(addr)
		if err != nil {
			CloseAll(cs)
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// CloseAll closes every connection of cs.
func CloseAll(cs []*Conn) {
	for _, c := range cs {
		_ = c.Close()
	}
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// LocalAddr returns the connection's own address.
func (c *Conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// SetDeadline sets the deadline of the connection's reads and writes; a
// deadline in the past makes a blocked Read fail at once.
func (c *Conn) SetDeadline(t time.Time) error { return c.nc.SetDeadline(t) }

// SyscallConn returns the connection's raw file descriptor access, for
// readers that wait on many connections with one epoll (they read from
// the descriptor directly: nothing may be buffered in the Conn then).
func (c *Conn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("%T has no file descriptor", c.nc)
	}
	return sc.SyscallConn()
}

// BufferedIn returns the number of bytes read from the connection and not
// yet consumed by Read.
func (c *Conn) BufferedIn() int { return c.r.Buffered() }

// ReadRaw reads exactly n bytes of replies, unparsed.
func (c *Conn) ReadRaw(n int) ([]byte, error) {
	b := make([]byte, n)
	_, err := io.ReadFull(c.r, b)
	return b, err
}

// Queue appends one command to the write buffer without sending it.
func (c *Conn) Queue(args ...string) {
	b := append(c.buf, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	c.buf = b
}

// Buffered returns the number of bytes queued and not yet flushed.
func (c *Conn) Buffered() int { return len(c.buf) }

// Flush writes the queued commands.
func (c *Conn) Flush() error {
	_, err := c.nc.Write(c.buf)
	c.buf = c.buf[:0]
	return err
}

// Write writes b, RESP commands made by the caller, after any queued.
func (c *Conn) Write(b []byte) error {
	if len(c.buf) > 0 {
		if err := c.Flush(); err != nil {
			return err
		}
	}
	_, err := c.nc.Write(b)
	return err
}

// Send writes one command without reading its reply.
func (c *Conn) Send(args ...string) error {
	c.Queue(args...)
	return c.Flush()
}

// Do sends one command and reads its reply within OpTimeout. An error
// reply is returned as a Reply, not as err.
func (c *Conn) Do(args ...string) (Reply, error) {
	if err := c.nc.SetDeadline(time.Now().Add(OpTimeout)); err != nil {
		return Reply{}, err
	}
	if err := c.Send(args...); err != nil {
		return Reply{}, err
	}
	return c.Read()
}

func (c *Conn) line() ([]byte, error) {
	l, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(l) < 3 || l[len(l)-2] != '\r' {
		return nil, ErrProtocol
	}
	return l[:len(l)-2], nil
}

// Read reads one reply.
func (c *Conn) Read() (Reply, error) {
	l, err := c.line()
	if err != nil {
		return Reply{}, err
	}
	kind, rest := l[0], l[1:]
	switch kind {
	case '+', '-':
		return Reply{Kind: kind, Str: string(rest)}, nil
	case ':':
		n, err := strconv.ParseInt(string(rest), 10, 64)
		if err != nil {
			return Reply{}, ErrProtocol
		}
		return Reply{Kind: ':', N: n}, nil
	case '$':
		n, err := strconv.Atoi(string(rest))
		if err != nil {
			return Reply{}, ErrProtocol
		}
		if n < 0 {
			return Reply{Kind: '_'}, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, b); err != nil {
			return Reply{}, err
		}
		return Reply{Kind: '$', Str: string(b[:n])}, nil
	case '*':
		n, err := strconv.Atoi(string(rest))
		if err != nil {
			return Reply{}, ErrProtocol
		}
		if n < 0 {
			return Reply{Kind: '_'}, nil
		}
		arr := make([]Reply, n)
		for i := range arr {
			if arr[i], err = c.Read(); err != nil {
				return Reply{}, err
			}
		}
		return Reply{Kind: '*', Arr: arr}, nil
	}
	return Reply{}, fmt.Errorf("%w: reply type %q", ErrProtocol, kind)
}

// InfoField returns a field of INFO section on addr, or "?".
func InfoField(addr, section, field string) string {
	c, err := Dial(addr)
	if err != nil {
		return "?"
	}
	defer c.Close()
	r, err := c.Do("INFO", section)
	if err != nil || r.Kind != '$' {
		return "?"
	}
	for l := range strings.SplitSeq(r.Str, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), field+":"); ok {
			return v
		}
	}
	return "?"
}
