package proxy

// Replies from the upstream are copied to clients byte for byte: go-redis'
// Do() turns a status reply (+OK) and a bulk string ($2 OK) into the same
// Go string, and RESP3 doubles, maps and verbatim strings into Go values,
// so forwarding through it could not reproduce Redis's exact bytes. This
// file reads one complete reply as raw bytes (readReply), writes commands
// (appendCommand), and parses a reply when the proxy itself needs to look
// inside one (parseReply): a MOVED error, a SCAN page, CLUSTER SLOTS.
//
// The grammar is RESP2 and RESP3 as Redis 7 sends it: simple strings,
// errors, integers, bulk strings, arrays, and RESP3's null, double,
// boolean, big number, blob error, verbatim string, map, set, push and
// attribute (an attribute and the reply it precedes count as one reply).

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/oncekv/oncekv/resp"
)

// maxBulk bounds a bulk length the upstream announces (Redis's
// proto-max-bulk-len can be raised, but not past what one reply buffer
// can hold here).
const maxBulk = 4 << 30

// readReply reads one complete reply from br and appends its bytes, as
// sent, to dst.
func readReply(br *bufio.Reader, dst []byte) ([]byte, error) {
	need := 1
	for need > 0 {
		start := len(dst)
		var err error
		dst, err = readLine(br, dst)
		if err != nil {
			return dst, err
		}
		need--
		line := dst[start : len(dst)-2]
		switch line[0] {
		case '+', '-', ':', '_', ',', '#', '(':
		case '$', '!', '=':
			n, ok := resp.ParseInt(line[1:])
			if !ok || n < -1 || n > maxBulk {
				return dst, fmt.Errorf("%w: bad bulk length %q", ErrUpstreamProtocol, line)
			}
			if n < 0 {
				continue
			}
			total := len(dst) + int(n) + 2
			if cap(dst) < total {
				nb := make([]byte, len(dst), total+total/4)
				copy(nb, dst)
				dst = nb
			}
			if _, err := io.ReadFull(br, dst[len(dst):total]); err != nil {
				return dst, err
			}
			dst = dst[:total]
		case '*', '~', '>', '%', '|':
			n, ok := resp.ParseInt(line[1:])
			if !ok || n < -1 {
				return dst, fmt.Errorf("%w: bad aggregate length %q", ErrUpstreamProtocol, line)
			}
			switch line[0] {
			case '%':
				n *= 2
			case '|':
				n = 2*n + 1 // the attribute's pairs, then the reply itself
			}
			if n > 0 {
				need += int(n)
			}
		default:
			return dst, fmt.Errorf("%w: unexpected reply type %q", ErrUpstreamProtocol, line[0])
		}
	}
	return dst, nil
}

// readLine appends one "\r\n"-terminated line to dst.
func readLine(br *bufio.Reader, dst []byte) ([]byte, error) {
	start := len(dst)
	for {
		chunk, err := br.ReadSlice('\n')
		dst = append(dst, chunk...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if errors.Is(err, io.EOF) && len(dst) > start {
				err = io.ErrUnexpectedEOF
			}
			return dst, err
		}
	}
	if n := len(dst) - start; n < 3 || dst[len(dst)-2] != '\r' {
		return dst, fmt.Errorf("%w: malformed line %q", ErrUpstreamProtocol, dst[start:])
	}
	return dst, nil
}

// appendCommand encodes args as a RESP array of bulk strings.
func appendCommand(b []byte, args ...[]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// writeCommand writes args to w as a RESP array of bulk strings.
func writeCommand(w *bufio.Writer, args [][]byte) error {
	var hdr [24]byte
	h := append(hdr[:0], '*')
	h = strconv.AppendInt(h, int64(len(args)), 10)
	h = append(h, '\r', '\n')
	w.Write(h)
	for _, a := range args {
		h = append(hdr[:0], '$')
		h = strconv.AppendInt(h, int64(len(a)), 10)
		h = append(h, '\r', '\n')
		w.Write(h)
		w.Write(a)
		_, err := w.WriteString("\r\n")
		if err != nil {
			return err
		}
	}
	return nil
}

// value is a parsed reply.
type value struct {
	typ   byte   // the reply's type byte ('+', '$', '*', '%'…); an attribute is skipped
	raw   []byte // the reply's bytes, as sent
	str   []byte // the payload of a string, error, double, big number or verbatim string
	num   int64  // an integer, or an aggregate's length
	null  bool   // $-1, *-1 or _
	elems []value
}

// isError reports whether v is an error reply ('-' or '!').
func (v value) isError() bool { return v.typ == '-' || v.typ == '!' }

// text is v's payload as a string.
func (v value) text() string { return string(v.str) }

// parseReply parses the one complete reply at the start of b.
func parseReply(b []byte) (value, error) {
	v, n, err := parseAt(b, 0)
	if err != nil {
		return v, err
	}
	if n != len(b) {
		return v, fmt.Errorf("%w: %d bytes after the reply", ErrUpstreamProtocol, len(b)-n)
	}
	return v, nil
}

func parseAt(b []byte, at int) (value, int, error) {
	nl := bytes.IndexByte(b[at:], '\n')
	if nl < 2 || b[at+nl-1] != '\r' {
		return value{}, 0, fmt.Errorf("%w: malformed line", ErrUpstreamProtocol)
	}
	line := b[at : at+nl-1]
	next := at + nl + 1
	v := value{typ: line[0]}
	switch v.typ {
	case '+', '-', ',', '(':
		v.str = line[1:]
	case ':':
		n, ok := resp.ParseInt(line[1:])
		if !ok {
			return v, 0, fmt.Errorf("%w: bad integer %q", ErrUpstreamProtocol, line)
		}
		v.num = n
	case '_':
		v.null = true
	case '#':
		if len(line) == 2 && line[1] == 't' {
			v.num = 1
		}
	case '$', '!', '=':
		n, ok := resp.ParseInt(line[1:])
		if !ok || n < -1 {
			return v, 0, fmt.Errorf("%w: bad bulk length %q", ErrUpstreamProtocol, line)
		}
		if n < 0 {
			v.null = true
			break
		}
		if next+int(n)+2 > len(b) {
			return v, 0, fmt.Errorf("%w: short bulk string", ErrUpstreamProtocol)
		}
		v.str = b[next : next+int(n)]
		if v.typ == '=' && len(v.str) >= 4 {
			v.str = v.str[4:] // "txt:"
		}
		next += int(n) + 2
	case '*', '~', '>', '%', '|':
		n, ok := resp.ParseInt(line[1:])
		if !ok || n < -1 {
			return v, 0, fmt.Errorf("%w: bad aggregate length %q", ErrUpstreamProtocol, line)
		}
		if n < 0 {
			v.null = true
			break
		}
		v.num = n
		count := n
		if v.typ == '%' || v.typ == '|' {
			count *= 2
		}
		v.elems = make([]value, 0, count)
		for i := int64(0); i < count; i++ {
			e, end, err := parseAt(b, next)
			if err != nil {
				return v, 0, err
			}
			v.elems = append(v.elems, e)
			next = end
		}
		if v.typ == '|' {
			// An attribute: the reply it annotates follows.
			r, end, err := parseAt(b, next)
			if err != nil {
				return v, 0, err
			}
			r.raw = b[at:end]
			return r, end, nil
		}
	default:
		return v, 0, fmt.Errorf("%w: unexpected reply type %q", ErrUpstreamProtocol, v.typ)
	}
	v.raw = b[at:next]
	return v, next, nil
}
