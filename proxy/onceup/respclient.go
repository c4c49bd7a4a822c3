package onceup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The subscription connections speak RESP2 themselves: a small reader of
// replies and pushes, and a writer of commands.

// respError is an error reply.
type respError string

var errProtocol = errors.New("onceup: protocol error on the subscription connection")

// maxBulk bounds a bulk string read (Redis's proto-max-bulk-len default).
const maxBulk = 512 << 20

type replyReader struct{ r *bufio.Reader }

func (rr *replyReader) line() ([]byte, error) {
	b, err := rr.r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errProtocol
		}
		return nil, err
	}
	if len(b) < 3 || b[len(b)-2] != '\r' {
		return nil, errProtocol
	}
	return b[:len(b)-2], nil
}

// read returns one reply: string (simple), respError, int64, []byte (bulk,
// nil for a null) or []any (array or push, nil for a null).
func (rr *replyReader) read() (any, error) {
	b, err := rr.line()
	if err != nil {
		return nil, err
	}
	switch b[0] {
	case '+':
		return string(b[1:]), nil
	case '-':
		return respError(b[1:]), nil
	case ':':
		n, err := strconv.ParseInt(string(b[1:]), 10, 64)
		if err != nil {
			return nil, errProtocol
		}
		return n, nil
	case '$':
		n, err := strconv.Atoi(string(b[1:]))
		if err != nil || n > maxBulk {
			return nil, errProtocol
		}
		if n < 0 {
			return []byte(nil), nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rr.r, buf); err != nil {
			return nil, err
		}
		return buf[:n], nil
	case '*', '>':
		n, err := strconv.Atoi(string(b[1:]))
		if err != nil || n > 1<<20 {
			return nil, errProtocol
		}
		if n < 0 {
			return []any(nil), nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = rr.read(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, errProtocol
}

func writeCommand(w *bufio.Writer, args ...string) {
	w.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		w.WriteString("$" + strconv.Itoa(len(a)) + "\r\n")
		w.WriteString(a)
		w.WriteString("\r\n")
	}
}

// dialNode opens a connection to the node opt describes, as go-redis would
// (its Dialer, which does TLS, or a plain one), and authenticates with the
// options' credentials (Username/Password, CredentialsProvider or
// CredentialsProviderContext; a StreamingCredentialsProvider is not
// supported for the subscription connection).
func dialNode(ctx context.Context, opt *redis.Options) (net.Conn, error) {
	dial := opt.Dialer
	if dial == nil {
		dial = redis.NewDialer(opt)
	}
	network := opt.Network
	if network == "" {
		network = "tcp"
	}
	nc, err := dial(ctx, network, opt.Addr)
	if err != nil {
		return nil, err
	}
	user, pass := opt.Username, opt.Password
	switch {
	case opt.CredentialsProviderContext != nil:
		if user, pass, err = opt.CredentialsProviderContext(ctx); err != nil {
			nc.Close()
			return nil, err
		}
	case opt.CredentialsProvider != nil:
		user, pass = opt.CredentialsProvider()
	}
	if pass == "" {
		return nc, nil
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	bw := bufio.NewWriter(nc)
	if user != "" {
		writeCommand(bw, "auth", user, pass)
	} else {
		writeCommand(bw, "auth", pass)
	}
	if err := bw.Flush(); err != nil {
		nc.Close()
		return nil, err
	}
	// Read the reply byte by byte-exact, so no later bytes are buffered
	// away from the connection's own reader.
	rr := &replyReader{r: bufio.NewReaderSize(&oneByte{nc}, 16)}
	v, err := rr.read()
	if err == nil {
		if e, ok := v.(respError); ok {
			err = fmt.Errorf("AUTH: %s", string(e))
		}
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	_ = nc.SetDeadline(time.Time{})
	return nc, nil
}

// oneByte reads one byte at a time.
type oneByte struct{ r io.Reader }

func (o *oneByte) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}
