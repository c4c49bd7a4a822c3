package integration

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Frame is one parsed RESP2/RESP3 reply, kept together with its raw bytes.
type Frame struct {
	// Type is the frame's first byte: + - : $ * _ , # ! = ( % ~ > |.
	Type byte
	// Str is the line after the type byte for the line types (+ - : , # ( _)
	// and the payload of the length-prefixed types ($ ! =, and streamed $?).
	Str string
	// Null marks $-1 and *-1 (RESP2 nulls) and _ (RESP3 null).
	Null bool
	// Elems are the elements of * ~ > and the keys and values, alternating,
	// of % and |.
	Elems []*Frame
	// Attr is the attribute (|) that preceded this frame, if any.
	Attr *Frame
	// Streamed marks streamed strings ($?) and aggregates (*? etc.).
	Streamed bool
	// Raw is the frame's whole encoding, its attribute included.
	Raw []byte
}

// IsAggregate reports whether f has elements.
func (f *Frame) IsAggregate() bool {
	switch f.Type {
	case '*', '~', '>', '%', '|':
		return !f.Null
	}
	return false
}

// Int returns the value of an integer (:) frame.
func (f *Frame) Int() (int64, bool) {
	if f.Type != ':' {
		return 0, false
	}
	n, err := strconv.ParseInt(f.Str, 10, 64)
	return n, err == nil
}

// Shape describes the frame's type structure, without values: types,
// nullness and element counts, recursively. Two replies with equal shapes
// differ only in their values.
func (f *Frame) Shape() string {
	var b strings.Builder
	f.shape(&b)
	return b.String()
}

func (f *Frame) shape(b *strings.Builder) {
	if f.Attr != nil {
		b.WriteString("|")
		f.Attr.shapeElems(b)
	}
	b.WriteByte(f.Type)
	if f.Null {
		b.WriteString("null")
		return
	}
	if f.IsAggregate() {
		f.shapeElems(b)
	}
}

func (f *Frame) shapeElems(b *strings.Builder) {
	fmt.Fprintf(b, "%d[", len(f.Elems))
	for i, e := range f.Elems {
		if i > 0 {
			b.WriteByte(' ')
		}
		e.shape(b)
	}
	b.WriteByte(']')
}

// maxDepth bounds nesting, so a broken server cannot blow the stack.
const maxDepth = 64

// maxBulk bounds one bulk payload read by the test client (the tests send
// values of a few MiB at most).
const maxBulk = 64 << 20

// ParseFrame parses exactly one frame (with its attribute, if any) from raw.
func ParseFrame(raw []byte) (*Frame, error) {
	r := bufio.NewReader(bytes.NewReader(raw))
	f, err := readFrame(r)
	if err != nil {
		return nil, err
	}
	if r.Buffered() > 0 {
		return nil, fmt.Errorf("resp: %d bytes after the frame", r.Buffered())
	}
	return f, nil
}

// readFrame reads one complete frame from r, an attribute prefix and nested
// aggregates included.
func readFrame(r *bufio.Reader) (*Frame, error) {
	var raw []byte
	f, err := readFrameInto(r, &raw, 0)
	if err != nil {
		return nil, err
	}
	f.Raw = raw
	return f, nil
}

// errEnd is what readFrameInto returns for the end marker (.) of a streamed
// aggregate, which is not a frame by itself.
var errEnd = errors.New("resp: end of streamed aggregate")

func readFrameInto(r *bufio.Reader, raw *[]byte, depth int) (*Frame, error) {
	if depth > maxDepth {
		return nil, errors.New("resp: nesting too deep")
	}
	start := len(*raw)
	line, err := readLine(r, raw)
	if err != nil {
		return nil, err
	}
	if len(line) == 0 {
		return nil, errors.New("resp: empty line where a frame was expected")
	}
	f := &Frame{Type: line[0]}
	rest := string(line[1:])
	switch f.Type {
	case '+', '-', ',', '(':
		f.Str = rest
	case ':':
		if _, err := strconv.ParseInt(rest, 10, 64); err != nil {
			return nil, fmt.Errorf("resp: bad integer %q", rest)
		}
		f.Str = rest
	case '#':
		if rest != "t" && rest != "f" {
			return nil, fmt.Errorf("resp: bad boolean %q", rest)
		}
		f.Str = rest
	case '_':
		if rest != "" {
			return nil, fmt.Errorf("resp: bad null %q", rest)
		}
		f.Null = true
	case '.':
		if rest != "" {
			return nil, fmt.Errorf("resp: bad end marker %q", rest)
		}
		return nil, errEnd
	case '$', '!', '=':
		if rest == "?" && f.Type == '$' {
			f.Streamed = true
			s, err := readStreamedString(r, raw)
			if err != nil {
				return nil, err
			}
			f.Str = s
			break
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < -1 {
			return nil, fmt.Errorf("resp: bad length %q", line)
		}
		if n == -1 {
			if f.Type != '$' {
				return nil, fmt.Errorf("resp: null %c", f.Type)
			}
			f.Null = true
			break
		}
		if n > maxBulk {
			return nil, fmt.Errorf("resp: bulk of %d bytes", n)
		}
		payload, err := readPayload(r, raw, n)
		if err != nil {
			return nil, err
		}
		if f.Type == '=' && (n < 4 || payload[3] != ':') {
			return nil, fmt.Errorf("resp: verbatim string without a format: %q", payload)
		}
		f.Str = string(payload)
	case '*', '~', '>', '%', '|':
		per := 1
		if f.Type == '%' || f.Type == '|' {
			per = 2
		}
		if rest == "?" {
			f.Streamed = true
			for {
				e, err := readFrameInto(r, raw, depth+1)
				if err == errEnd {
					break
				}
				if err != nil {
					return nil, err
				}
				f.Elems = append(f.Elems, e)
			}
			if len(f.Elems)%per != 0 {
				return nil, fmt.Errorf("resp: streamed %c with %d elements", f.Type, len(f.Elems))
			}
			break
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < -1 {
			return nil, fmt.Errorf("resp: bad count %q", line)
		}
		if n == -1 {
			if f.Type != '*' {
				return nil, fmt.Errorf("resp: null %c", f.Type)
			}
			f.Null = true
			break
		}
		if n > 1<<24 {
			return nil, fmt.Errorf("resp: aggregate of %d elements", n)
		}
		for i := 0; i < n*per; i++ {
			e, err := readFrameInto(r, raw, depth+1)
			if err == errEnd {
				return nil, errors.New("resp: end marker inside a counted aggregate")
			}
			if err != nil {
				return nil, err
			}
			f.Elems = append(f.Elems, e)
		}
	default:
		return nil, fmt.Errorf("resp: unknown type byte %q in line %q", f.Type, line)
	}
	if f.Type == '|' {
		// An attribute comes before the frame it describes: read that too.
		next, err := readFrameInto(r, raw, depth+1)
		if err != nil {
			if err == errEnd {
				err = errors.New("resp: end marker after an attribute")
			}
			return nil, err
		}
		if next.Attr != nil {
			return nil, errors.New("resp: two attributes in a row")
		}
		attr := f
		attr.Raw = append([]byte(nil), (*raw)[start:len(*raw)-len(next.Raw)]...)
		next.Attr = attr
		next.Raw = (*raw)[start:len(*raw):len(*raw)]
		return next, nil
	}
	f.Raw = (*raw)[start:len(*raw):len(*raw)]
	return f, nil
}

// readLine reads a CRLF-terminated line, appends it with its CRLF to raw and
// returns it without.
func readLine(r *bufio.Reader, raw *[]byte) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			if len(line) > 1<<20 {
				return nil, errors.New("resp: line longer than 1 MiB")
			}
			continue
		}
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		break
	}
	*raw = append(*raw, line...)
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("resp: line not terminated by CRLF: %q", line)
	}
	return line[:len(line)-2], nil
}

// readPayload reads n bytes and a CRLF.
func readPayload(r *bufio.Reader, raw *[]byte, n int) ([]byte, error) {
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	*raw = append(*raw, buf...)
	if buf[n] != '\r' || buf[n+1] != '\n' {
		return nil, fmt.Errorf("resp: payload of %d bytes not followed by CRLF: %q", n, buf[n:])
	}
	return buf[:n], nil
}

// readStreamedString reads the chunks (;len CRLF data CRLF) of a $? string
// up to the empty chunk.
func readStreamedString(r *bufio.Reader, raw *[]byte) (string, error) {
	var s []byte
	for {
		line, err := readLine(r, raw)
		if err != nil {
			return "", err
		}
		if len(line) < 2 || line[0] != ';' {
			return "", fmt.Errorf("resp: bad streamed string chunk %q", line)
		}
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil || n < 0 || n > maxBulk {
			return "", fmt.Errorf("resp: bad streamed string chunk %q", line)
		}
		if n == 0 {
			return string(s), nil
		}
		p, err := readPayload(r, raw, n)
		if err != nil {
			return "", err
		}
		s = append(s, p...)
	}
}

// EncodeCommand encodes args as a RESP array of bulk strings, the way
// clients send commands.
func EncodeCommand(args ...string) []byte {
	var b []byte
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
