package resp

import (
	"math"
	"strconv"
	"strings"
)

// Writer encodes replies in RESP2 or RESP3 into a buffer. RESP3-only types
// (maps, sets, doubles, nulls, verbatim strings, pushes) are written in
// their RESP2 shape when the connection speaks RESP2, as Redis does.
type Writer struct {
	buf   []byte
	Proto int // 2 or 3
	// OnError, when set, sees each error reply written (INFO errorstats).
	OnError func(msg string)
	errs    int64
}

// NewWriter returns a writer for protocol proto.
func NewWriter(proto int) *Writer { return &Writer{Proto: proto} }

// Bytes is what has been written since the last Reset.
func (w *Writer) Bytes() []byte { return w.buf }

// Len is the number of buffered bytes.
func (w *Writer) Len() int { return len(w.buf) }

// Reset empties the buffer, keeping its memory.
func (w *Writer) Reset() { w.buf = w.buf[:0] }

// Truncate drops what was written after n bytes.
func (w *Writer) Truncate(n int) { w.buf = w.buf[:n] }

func (w *Writer) line(prefix byte, s string) {
	w.buf = append(w.buf, prefix)
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
}

func (w *Writer) header(prefix byte, n int64) {
	w.buf = append(w.buf, prefix)
	w.buf = strconv.AppendInt(w.buf, n, 10)
	w.buf = append(w.buf, '\r', '\n')
}

// Simple writes a simple string (+OK). Line breaks become spaces.
func (w *Writer) Simple(s string) { w.line('+', clean(s)) }

// OK writes +OK.
func (w *Writer) OK() { w.buf = append(w.buf, "+OK\r\n"...) }

// Error writes an error reply; msg starts with its code (ERR, WRONGTYPE…).
func (w *Writer) Error(msg string) {
	w.line('-', clean(msg))
	w.errs++
	if w.OnError != nil {
		w.OnError(msg)
	}
}

// Errors is the number of error replies written so far (a command whose
// run raised it failed).
func (w *Writer) Errors() int64 { return w.errs }

// Int writes an integer.
func (w *Writer) Int(n int64) { w.header(':', n) }

// Bulk writes a bulk string.
func (w *Writer) Bulk(b []byte) {
	w.header('$', int64(len(b)))
	w.buf = append(w.buf, b...)
	w.buf = append(w.buf, '\r', '\n')
}

// BulkString writes a bulk string.
func (w *Writer) BulkString(s string) {
	w.header('$', int64(len(s)))
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '\r', '\n')
}

// Null writes a null bulk string ($-1 in RESP2, _ in RESP3).
func (w *Writer) Null() {
	if w.Proto == 3 {
		w.buf = append(w.buf, "_\r\n"...)
		return
	}
	w.buf = append(w.buf, "$-1\r\n"...)
}

// NullArray writes a null array (*-1 in RESP2, _ in RESP3).
func (w *Writer) NullArray() {
	if w.Proto == 3 {
		w.buf = append(w.buf, "_\r\n"...)
		return
	}
	w.buf = append(w.buf, "*-1\r\n"...)
}

// Array writes an array header for n elements.
func (w *Writer) Array(n int) { w.header('*', int64(n)) }

// Map writes a map header for n pairs (a flat array of 2n in RESP2).
func (w *Writer) Map(n int) {
	if w.Proto == 3 {
		w.header('%', int64(n))
		return
	}
	w.header('*', int64(2*n))
}

// Set writes a set header (an array in RESP2).
func (w *Writer) Set(n int) {
	if w.Proto == 3 {
		w.header('~', int64(n))
		return
	}
	w.header('*', int64(n))
}

// Push writes a push header (an array in RESP2).
func (w *Writer) Push(n int) {
	if w.Proto == 3 {
		w.header('>', int64(n))
		return
	}
	w.header('*', int64(n))
}

// Double writes a double (a bulk string in RESP2), formatted as Redis does.
func (w *Writer) Double(f float64) {
	if w.Proto == 3 {
		w.buf = append(w.buf, ',')
		w.buf = append(w.buf, formatDouble3(f)...)
		w.buf = append(w.buf, '\r', '\n')
		return
	}
	w.BulkString(FormatFloat(f))
}

// Bool writes a boolean (an integer 1/0 in RESP2).
func (w *Writer) Bool(b bool) {
	if w.Proto == 3 {
		if b {
			w.buf = append(w.buf, "#t\r\n"...)
		} else {
			w.buf = append(w.buf, "#f\r\n"...)
		}
		return
	}
	if b {
		w.Int(1)
	} else {
		w.Int(0)
	}
}

// Verbatim writes a verbatim text string (a bulk string in RESP2).
func (w *Writer) Verbatim(s string) {
	if w.Proto == 3 {
		w.header('=', int64(len(s)+4))
		w.buf = append(w.buf, "txt:"...)
		w.buf = append(w.buf, s...)
		w.buf = append(w.buf, '\r', '\n')
		return
	}
	w.BulkString(s)
}

// Raw appends already-encoded bytes.
func (w *Writer) Raw(b []byte) { w.buf = append(w.buf, b...) }

// FormatFloat formats f as Redis formats long doubles in replies such as
// INCRBYFLOAT: the shortest decimal that reads back the same, without an
// exponent.
func FormatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if s == "-0" {
		return "0"
	}
	return s
}

func formatDouble3(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

func clean(s string) string {
	// Two byte scans: ContainsAny costs several times more on the short
	// constant texts (OK, PONG, QUEUED) of most simple replies.
	if strings.IndexByte(s, '\r') >= 0 || strings.IndexByte(s, '\n') >= 0 {
		return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
	}
	return s
}
