package main

// A minimal RESP2 client: one connection, one command at a time (or a
// command written now and its reply read later, for blocking waits). The
// benchmark uses it for both servers so that client cost is the same on
// both sides and small next to the servers'.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// opTimeout bounds every request/reply made with do.
const opTimeout = 10 * time.Second

// reply is one RESP value.
type reply struct {
	kind byte // '+' status, '-' error, ':' integer, '$' bulk, '*' array, '_' null
	str  string
	n    int64
	arr  []reply
}

func (r reply) String() string {
	switch r.kind {
	case '+', '$':
		return strconv.Quote(r.str)
	case '-':
		return "(error) " + r.str
	case ':':
		return strconv.FormatInt(r.n, 10)
	case '_':
		return "(nil)"
	case '*':
		parts := make([]string, len(r.arr))
		for i, e := range r.arr {
			parts[i] = e.String()
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprintf("(kind %q)", r.kind)
}

// isErr reports whether r is an error reply.
func (r reply) isErr() bool { return r.kind == '-' }

// pair reports whether r is a two-element array whose first element is the
// string state, and returns the second element.
func (r reply) pair(state string) (reply, bool) {
	if r.kind != '*' || len(r.arr) != 2 || r.arr[0].str != state {
		return reply{}, false
	}
	return r.arr[1], true
}

// field returns the value after name in a flat field/value array.
func (r reply) field(name string) (reply, bool) {
	for i := 0; i+1 < len(r.arr); i += 2 {
		if r.arr[i].str == name {
			return r.arr[i+1], true
		}
	}
	return reply{}, false
}

type conn struct {
	nc  net.Conn
	r   *bufio.Reader
	buf []byte
}

func dial(addr string) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, r: bufio.NewReaderSize(nc, 4096)}, nil
}

func (c *conn) close() error { return c.nc.Close() }

// send writes one command without reading its reply.
func (c *conn) send(args ...string) error {
	b := append(c.buf[:0], '*')
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
	_, err := c.nc.Write(b)
	return err
}

// do sends one command and reads its reply within opTimeout. An error
// reply is returned as a reply, not as err.
func (c *conn) do(args ...string) (reply, error) {
	if err := c.nc.SetDeadline(time.Now().Add(opTimeout)); err != nil {
		return reply{}, err
	}
	if err := c.send(args...); err != nil {
		return reply{}, err
	}
	return c.read()
}

var errProtocol = errors.New("resp: protocol error")

func (c *conn) line() ([]byte, error) {
	l, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(l) < 3 || l[len(l)-2] != '\r' {
		return nil, errProtocol
	}
	return l[:len(l)-2], nil
}

// read reads one reply.
func (c *conn) read() (reply, error) {
	l, err := c.line()
	if err != nil {
		return reply{}, err
	}
	kind, rest := l[0], l[1:]
	switch kind {
	case '+', '-':
		return reply{kind: kind, str: string(rest)}, nil
	case ':':
		n, err := strconv.ParseInt(string(rest), 10, 64)
		if err != nil {
			return reply{}, errProtocol
		}
		return reply{kind: ':', n: n}, nil
	case '$':
		n, err := strconv.Atoi(string(rest))
		if err != nil {
			return reply{}, errProtocol
		}
		if n < 0 {
			return reply{kind: '_'}, nil
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(c.r, b); err != nil {
			return reply{}, err
		}
		return reply{kind: '$', str: string(b[:n])}, nil
	case '*':
		n, err := strconv.Atoi(string(rest))
		if err != nil {
			return reply{}, errProtocol
		}
		if n < 0 {
			return reply{kind: '_'}, nil
		}
		arr := make([]reply, n)
		for i := range arr {
			if arr[i], err = c.read(); err != nil {
				return reply{}, err
			}
		}
		return reply{kind: '*', arr: arr}, nil
	}
	return reply{}, fmt.Errorf("%w: reply type %q", errProtocol, kind)
}
