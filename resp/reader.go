package resp

// The request reader. redcon's reader has none of Redis's limits (it buffers
// whatever length a client announces, grows its buffer by doubling, copies
// each command once more and re-scans a partial command from its start on
// every read) and its rules differ from Redis's in many small ways (inline
// quoting, `*0`, what follows a length line). Wrapping it could only reject
// more, not parse like Redis, so the server reads requests with this parser
// instead; redcon is not used any more. It follows Redis 7.0's
// processInlineBuffer and processMultibulkBuffer: the same grammar, the same
// limits and the same error texts, and it never allocates more than what
// the client has actually sent.

import (
	"bytes"
	"errors"
	"io"
	"math"
	"sync/atomic"
)

// Limits bound what one client may send. Zero fields take Redis's
// defaults.
type Limits struct {
	// MaxBulkLen is Redis's proto-max-bulk-len: the longest argument. A
	// longer one is answered "-ERR Protocol error: invalid bulk length"
	// and the connection is closed. Default 512 MiB.
	MaxBulkLen int64
	// QueryBufferLimit is Redis's client-query-buffer-limit: the most
	// memory a client's unfinished request (with the commands it queued
	// in MULTI, and while it is blocked what it sent after the blocked
	// command: see serveDetached) may hold. A client over it is closed
	// without a reply, as Redis does. Default 1 GiB.
	QueryBufferLimit int64
}

// Default limits, as in Redis 7.0.
const (
	DefaultMaxBulkLen       = 512 << 20
	DefaultQueryBufferLimit = 1 << 30
)

func (l Limits) withDefaults() Limits {
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = DefaultMaxBulkLen
	}
	if l.QueryBufferLimit <= 0 {
		l.QueryBufferLimit = DefaultQueryBufferLimit
	}
	return l
}

// Redis's fixed limits (server.h).
const (
	// inlineMaxSize is PROTO_INLINE_MAX_SIZE: the longest inline request
	// and the longest length line that may wait for its end.
	inlineMaxSize = 64 << 10
	// lineMax is how far from its start the end of a line must come for
	// Redis to take the line whole. Redis judges a line at its reads:
	// over inlineMaxSize without an end is too big, with one it is taken.
	// Sent at once, a request line is read 16 KiB, then up to about
	// 64 KiB more (redis-server 7.0 with jemalloc: the line's first 81910
	// bytes), and judged then. Reads here come in other sizes (16, 16, 32,
	// then 64 KiB), so the end is looked for in that much, wherever the
	// reads split the line: a line whose end comes later is too big even
	// when it was read with it.
	lineMax = inlineMaxSize + ioBufLen
	// ioBufLen is PROTO_IOBUF_LEN: how much is read at a time.
	ioBufLen = 16 << 10
	// bigArg is PROTO_MBULK_BIG_ARG: an argument at least that long is
	// read straight into its own buffer.
	bigArg = 32 << 10
	// maxMultibulk is the largest argument count: Redis 7.0 accepts up to
	// INT_MAX (6.x had 1024*1024); memory is bounded by the query buffer
	// limit instead, argOverhead counting each argument.
	maxMultibulk = math.MaxInt32
	// Before authentication a request may have at most 10 arguments of at
	// most 16 KiB each (Redis 6.2.6+, CVE-2021-32675).
	unauthMaxArgs = 10
	unauthMaxBulk = 16384
	// argOverhead is what an argument costs besides its bytes (its slice
	// header and allocation), counted towards the query buffer limit so
	// that a request of a billion empty arguments is bounded too.
	argOverhead = 32
)

// ProtocolError is a malformed request. Redis answers it with
// "-ERR Protocol error: <Msg>" and closes the connection.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "Protocol error: " + e.Msg }

// ErrQueryBufferLimit ends a client whose request went over
// client-query-buffer-limit; Redis closes it without a reply.
var ErrQueryBufferLimit = errors.New("client reached the query buffer limit (client-query-buffer-limit)")

func protoErr(msg string) error { return &ProtocolError{Msg: msg} }

// Reader parses one client's requests. It keeps the state of a request in
// progress, so a request split across reads is parsed once, not re-scanned.
// Parse and Fill must be called from one goroutine at a time; SetAuthed
// and SetHeld from any.
type Reader struct {
	rd io.Reader
	// limits change (SetLimits) from any goroutine.
	limits atomic.Pointer[Limits]
	buf    []byte // buf[pos:end] was read and is not parsed yet
	pos    int
	end    int
	// scanned is how far past pos a search for the end of a line found
	// nothing, so that a line that comes byte by byte is scanned once.
	scanned int

	authed atomic.Bool  // the client has authenticated
	held   atomic.Int64 // memory the client holds elsewhere (MULTI queue)

	// The multibulk request in progress (left > 0).
	left    int      // arguments still to read
	argv    [][]byte // arguments read so far
	bulklen int64    // length of the argument being read; -1 before its line
	big     []byte   // a big argument's bytes so far
	tail    int      // bytes still to skip after a big argument (its "\r\n")
	mem     int64    // memory argv holds
	err     error    // sticky protocol error

	// chunk is what is left of the buffer that small arguments are cut
	// from (carve); reqChunk is that whole buffer, when the request in
	// progress made it.
	chunk    []byte
	reqChunk []byte

	// The last request Parse returned (its list, and the buffer its small
	// arguments were cut from), until the next starts; and what Release
	// handed back of the one before, for the next request to reuse.
	lastArgv   [][]byte
	lastChunk  []byte
	spareArgv  [][]byte
	spareChunk []byte
}

// NewReader returns a reader of requests from rd. The client starts
// unauthenticated unless SetAuthed(true) is called.
func NewReader(rd io.Reader, l Limits) *Reader {
	r := &Reader{rd: rd, bulklen: -1}
	r.SetLimits(l)
	return r
}

// SetLimits changes the reader's limits (zero fields: Redis's defaults);
// they apply from the next argument parsed. Safe from any goroutine.
func (r *Reader) SetLimits(l Limits) {
	l = l.withDefaults()
	r.limits.Store(&l)
}

// Limits are the reader's limits in force.
func (r *Reader) Limits() Limits { return *r.limits.Load() }

// SetAuthed tells the reader whether the client has authenticated: before
// that, requests are limited to 10 arguments of 16 KiB.
func (r *Reader) SetAuthed(ok bool) { r.authed.Store(ok) }

// SetHeld tells the reader how much memory the client holds elsewhere (the
// commands it queued in MULTI); it counts towards the query buffer limit.
func (r *Reader) SetHeld(n int64) { r.held.Store(n) }

// Buffered is the number of bytes read and not parsed yet.
func (r *Reader) Buffered() int { return r.end - r.pos }

// Parse returns the next complete request in what was read, or nil, nil
// when more input is needed (call Fill). Empty requests (a blank line,
// `*0`) are skipped, as Redis does. After an error, Parse returns it again.
func (r *Reader) Parse() ([][]byte, error) {
	// The request returned before can be released no more.
	r.lastArgv, r.lastChunk = nil, nil
	for r.err == nil {
		if r.left == 0 {
			if r.pos == r.end {
				r.reset()
				return nil, nil
			}
			var args [][]byte
			var more bool
			if r.buf[r.pos] == '*' {
				more = r.multibulkHeader()
			} else {
				args, more = r.inline()
			}
			if args != nil {
				return args, nil
			}
			if !more {
				return nil, r.err
			}
			continue
		}
		done, more := r.arguments()
		if done {
			args := r.argv
			r.argv, r.mem = nil, 0
			r.lastArgv, r.lastChunk, r.reqChunk = args, r.reqChunk, nil
			return args, nil
		}
		if !more {
			return nil, r.err
		}
	}
	return nil, r.err
}

// reset rewinds an empty buffer and gives back a large one, and what is
// left of the buffer arguments are cut from: an idle connection keeps
// none.
func (r *Reader) reset() {
	r.pos, r.end, r.scanned = 0, 0, 0
	r.chunk = nil
	if cap(r.buf) > 4*ioBufLen {
		r.buf = nil
	}
	if cap(r.spareArgv) > idleSpareArgsMax {
		r.spareArgv = nil
	}
	if cap(r.spareChunk) > idleSpareChunkMax {
		r.spareChunk = nil
	}
}

// advance consumes n bytes.
func (r *Reader) advance(n int) {
	r.pos += n
	r.scanned = 0
}

// find looks for c from pos as C's strchr does on Redis's query buffer: a
// NUL byte ends the search. It returns c's index relative to pos, or -1
// when c does not come before a NUL or the end of what was read.
func (r *Reader) find(c byte) int {
	b := r.buf[r.pos:r.end]
	for i := r.scanned; i < len(b); i++ {
		switch b[i] {
		case c:
			return i
		case 0:
			r.scanned = i // it stays not found
			return -1
		}
	}
	r.scanned = len(b)
	return -1
}

// inline parses an inline request (a line of words). It returns the
// arguments, or whether to go on parsing (false: more input is needed, or
// r.err is set).
func (r *Reader) inline() ([][]byte, bool) {
	b := r.buf[r.pos:r.end]
	nl := r.find('\n')
	if nl < 0 || nl >= lineMax {
		if len(b) > inlineMaxSize {
			r.err = protoErr("too big inline request")
		}
		return nil, false
	}
	line := b[:nl]
	if nl > 0 && line[nl-1] == '\r' {
		line = line[:nl-1]
	}
	args, ok := SplitArgs(line)
	if !ok {
		r.err = protoErr("unbalanced quotes in request")
		return nil, false
	}
	r.advance(nl + 1)
	if len(args) == 0 {
		return nil, true
	}
	return args, true
}

// lengthLine finds the length line at r.pos ("*3\r\n", "$5\r\n"): the
// index of its '\r' relative to r.pos, or -1 when it is not complete yet
// (like Redis, any byte after the '\r' is taken for the '\n'). tooBig is
// the error when no '\r' comes within inlineMaxSize bytes, or within
// lineMax bytes once more was read (see lineMax).
func (r *Reader) lengthLine(tooBig string) int {
	b := r.buf[r.pos:r.end]
	cr := r.find('\r')
	if cr < 0 || cr >= lineMax {
		if len(b) > inlineMaxSize {
			r.err = protoErr(tooBig)
		}
		return -1
	}
	if cr+1 >= len(b) {
		return -1 // the '\n' has not come yet
	}
	return cr
}

// multibulkHeader parses "*<count>\r\n". It reports whether to go on.
func (r *Reader) multibulkHeader() bool {
	cr := r.lengthLine("too big mbulk count string")
	if cr < 0 {
		return false
	}
	n, ok := ParseInt(r.buf[r.pos+1 : r.pos+cr])
	switch {
	case !ok || n > maxMultibulk:
		r.err = protoErr("invalid multibulk length")
		return false
	case n > unauthMaxArgs && !r.authed.Load():
		r.err = protoErr("unauthenticated multibulk length")
		return false
	}
	r.advance(cr + 2)
	if n <= 0 {
		return true // an empty request
	}
	r.left = int(n)
	// The request's small arguments are cut from a buffer of its own.
	r.chunk, r.reqChunk = nil, nil
	if want := int(min(n, 1024)); cap(r.spareArgv) >= want {
		r.argv, r.spareArgv = r.spareArgv[:0], nil
	} else {
		r.argv = make([][]byte, 0, want)
	}
	r.bulklen = -1
	r.mem = 0
	return true
}

// Spares that Release keeps for the next request at most, and that an
// idle connection keeps at most.
const (
	spareArgsMax      = 64
	spareChunkMax     = chunkMax
	idleSpareArgsMax  = 8
	idleSpareChunkMax = 512
)

// Release tells the reader that the caller is done with args, the request
// Parse returned last: neither the list nor any argument in it is used any
// more, so the next request may reuse their memory. It must come before
// the next Parse, and does nothing for any other args (a request queued
// earlier, a list the caller built). A caller that keeps an argument (a
// queued MULTI command, a blocked command's key) must not release it.
//
// In builds with the race detector or the oncekv_poison tag, Release
// overwrites the buffer that the request's small arguments were cut from
// (poisonReleased), so that a handler that keeps one after all shows it in
// every test that reads it back. Only that buffer: the caller may have put
// a slice of its own in the list (the proxy, a renamed command's name).
func (r *Reader) Release(args [][]byte) {
	if len(args) == 0 || len(r.lastArgv) != len(args) || &r.lastArgv[0] != &args[0] {
		return
	}
	// A spare list holds no argument: a big one (a buffer of its own, up
	// to proto-max-bulk-len) is not kept alive by it.
	clear(args)
	c := r.lastChunk
	if poisonReleased {
		for i := range c {
			c[i] = poisonByte
		}
	}
	if cap(args) <= spareArgsMax {
		r.spareArgv = args[:0]
	}
	if c != nil && cap(c) <= spareChunkMax {
		r.spareChunk = c
	}
	r.lastArgv, r.lastChunk = nil, nil
}

// poisonByte is what Release writes over released arguments when
// poisonReleased.
const poisonByte = 0xdb

// arguments reads the arguments of the multibulk request in progress. It
// reports whether the request is complete, and otherwise whether to go on.
func (r *Reader) arguments() (done, more bool) {
	for r.left > 0 {
		if r.bulklen < 0 {
			if r.pos == r.end {
				return false, false
			}
			cr := r.lengthLine("too big bulk count string")
			if cr < 0 {
				return false, false
			}
			if c := r.buf[r.pos]; c != '$' {
				// As %c: the byte itself (the writer turns a '\r' into a space).
				r.err = protoErr("expected '$', got '" + string([]byte{c}) + "'")
				return false, false
			}
			n, ok := ParseInt(r.buf[r.pos+1 : r.pos+cr])
			switch {
			case !ok || n < 0 || n > r.limits.Load().MaxBulkLen:
				r.err = protoErr("invalid bulk length")
				return false, false
			case n > unauthMaxBulk && !r.authed.Load():
				r.err = protoErr("unauthenticated bulk length")
				return false, false
			}
			r.advance(cr + 2)
			r.bulklen = n
			r.mem += argOverhead
			if n >= bigArg {
				r.big = make([]byte, 0, min(n, 2*bigArg))
				r.tail = 2
			}
		}
		if r.big != nil {
			// A big argument: take what is buffered; Fill reads the rest
			// straight into it.
			if want := int(r.bulklen) - len(r.big); want > 0 {
				k := min(want, r.end-r.pos)
				r.big = appendCapped(r.big, r.buf[r.pos:r.pos+k], r.bulklen)
				r.advance(k)
			}
			if len(r.big) == int(r.bulklen) && r.tail > 0 {
				k := min(r.tail, r.end-r.pos)
				r.tail -= k
				r.advance(k)
			}
			if len(r.big) < int(r.bulklen) || r.tail > 0 {
				return false, false
			}
			r.mem += int64(len(r.big))
			r.argv = append(r.argv, r.big)
			r.big = nil
		} else {
			// Like Redis, the two bytes after the argument are skipped
			// whatever they are.
			need := int(r.bulklen) + 2
			if r.end-r.pos < need {
				return false, false
			}
			arg := r.carve(int(r.bulklen))
			copy(arg, r.buf[r.pos:])
			r.advance(need)
			r.mem += r.bulklen
			r.argv = append(r.argv, arg)
		}
		r.bulklen = -1
		r.left--
	}
	return true, true
}

// The small arguments of a request are cut from one buffer (carve): a
// request costs two allocations (its argument list and that buffer)
// rather than one per argument, and none when the caller released the
// request before it (Release), whose list and buffer it reuses. Larger
// arguments get their own. A buffer holds one request's arguments only,
// so an argument that outlives its request (in MULTI's queue, or a
// blocked command's) keeps no other request's memory alive, and a
// released buffer holds no argument of a request still in use.
const (
	chunkMax   = 4 << 10 // the largest buffer cut into arguments
	chunkedMax = 1 << 10 // the largest argument cut from one
	minChunk   = 64      // the smallest buffer made
)

// carve returns an n-byte buffer for the argument at r.pos, whose capacity
// ends where it does, so that an append to it reallocates rather than
// writing over its neighbour.
func (r *Reader) carve(n int) []byte {
	if n == 0 {
		return []byte{}
	}
	if n > chunkedMax {
		return make([]byte, n)
	}
	if n > len(r.chunk) {
		size := min(r.smallAhead(n), chunkMax)
		if cap(r.spareChunk) >= size {
			r.chunk, r.spareChunk = r.spareChunk[:size], nil
		} else {
			// At least a small request's worth, so that the buffer can
			// serve the next requests too once released.
			r.chunk = make([]byte, size, max(size, minChunk))
		}
		r.reqChunk = r.chunk[:cap(r.chunk)]
	}
	b := r.chunk[:n:n]
	r.chunk = r.chunk[n:]
	return b
}

// smallAhead is the size of the small arguments of the request in
// progress from the one at r.pos (n bytes, buffered whole) on, as far as
// the buffer holds their length lines: what the buffer carve makes for
// them needs. A malformed line just ends the count; the parser reports it
// when it gets there.
func (r *Reader) smallAhead(n int) int {
	total := n
	p := r.pos + n + 2
	for left := r.left - 1; left > 0 && total < chunkMax; left-- {
		if p >= r.end || r.buf[p] != '$' {
			break
		}
		cr := bytes.IndexByte(r.buf[p:r.end], '\r')
		if cr < 0 {
			break
		}
		l, ok := ParseInt(r.buf[p+1 : p+cr])
		if !ok || l < 0 || l > int64(r.end) {
			break
		}
		if l <= chunkedMax {
			total += int(l)
		}
		p += cr + 2 + int(l) + 2
	}
	return total
}

// appendCapped appends p to b, growing b by doubling but never past max.
func appendCapped(b, p []byte, max int64) []byte {
	if len(p) > cap(b)-len(b) {
		n := int64(cap(b)) * 2
		if need := int64(len(b) + len(p)); n < need {
			n = need
		}
		if n > max {
			n = max
		}
		nb := make([]byte, len(b), n)
		copy(nb, b)
		b = nb
	}
	return append(b, p...)
}

// holding is the memory the client's unfinished request holds, with what
// it holds elsewhere.
func (r *Reader) holding() int64 {
	return r.mem + int64(cap(r.big)) + int64(r.end-r.pos) + r.held.Load()
}

// Fill reads more input: at most one read from the underlying reader. It
// returns the read's error (io.EOF, a deadline…) only when nothing was
// read, and ErrQueryBufferLimit when the request in progress holds more
// than client-query-buffer-limit.
func (r *Reader) Fill() error {
	if r.err != nil {
		return r.err
	}
	if r.holding() > r.limits.Load().QueryBufferLimit {
		return ErrQueryBufferLimit
	}
	var n int
	var err error
	if r.big != nil && r.pos == r.end && len(r.big) < int(r.bulklen) {
		// Read a big argument straight into its own buffer, growing it
		// as the bytes come, never ahead of them.
		if len(r.big) == cap(r.big) {
			nb := make([]byte, len(r.big), min(2*int64(cap(r.big)), r.bulklen))
			copy(nb, r.big)
			r.big = nb
		}
		n, err = r.rd.Read(r.big[len(r.big):cap(r.big)])
		r.big = r.big[:len(r.big)+n]
	} else {
		if r.pos == r.end {
			r.pos, r.end = 0, 0
		}
		if cap(r.buf)-r.end < ioBufLen {
			if r.pos > 0 && r.pos >= r.end/2 {
				// Slide the unparsed bytes to the front.
				r.end = copy(r.buf[:cap(r.buf)], r.buf[r.pos:r.end])
				r.pos = 0
			}
			if cap(r.buf)-r.end < ioBufLen {
				nb := make([]byte, max(r.end-r.pos+ioBufLen, 2*(r.end-r.pos)))
				r.end = copy(nb, r.buf[r.pos:r.end])
				r.pos = 0
				r.buf = nb
			}
		}
		r.buf = r.buf[:cap(r.buf)]
		n, err = r.rd.Read(r.buf[r.end:])
		r.end += n
	}
	if n > 0 {
		if r.holding() > r.limits.Load().QueryBufferLimit {
			return ErrQueryBufferLimit
		}
		return nil
	}
	if err == nil {
		return nil
	}
	return err
}

// ParseInt parses an integer as Redis's string2ll does: an optional '-',
// then digits without leading zeros (a lone "0" is fine), within int64.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) >= 21 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	if b[0] == '-' {
		neg = true
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// SplitArgs splits an inline request into words as Redis's sdssplitargs
// does: words are separated by spaces; "double quotes" take \n \r \t \b \a
// \xHH and \<any> escapes, 'single quotes' only \'; a closing quote must
// be followed by a space or the end. It reports false for unbalanced
// quotes. line must not contain NUL (Redis's C string stops there).
func SplitArgs(line []byte) ([][]byte, bool) {
	var out [][]byte
	p := 0
	at := func(i int) byte { // the C string's byte at i: 0 past the end
		if i < len(line) {
			return line[i]
		}
		return 0
	}
	for {
		for p < len(line) && isCSpace(line[p]) {
			p++
		}
		if p >= len(line) {
			if out == nil {
				out = [][]byte{}
			}
			return out, true
		}
		var cur []byte
		inq, insq, done := false, false, false
		for !done {
			c := at(p)
			switch {
			case inq:
				switch {
				case c == '\\' && at(p+1) == 'x' && isHex(at(p+2)) && isHex(at(p+3)):
					cur = append(cur, hexVal(at(p+2))*16+hexVal(at(p+3)))
					p += 3
				case c == '\\' && at(p+1) != 0:
					p++
					switch e := at(p); e {
					case 'n':
						cur = append(cur, '\n')
					case 'r':
						cur = append(cur, '\r')
					case 't':
						cur = append(cur, '\t')
					case 'b':
						cur = append(cur, '\b')
					case 'a':
						cur = append(cur, '\a')
					default:
						cur = append(cur, e)
					}
				case c == '"':
					if n := at(p + 1); n != 0 && !isCSpace(n) {
						return nil, false
					}
					done = true
				case c == 0:
					return nil, false
				default:
					cur = append(cur, c)
				}
			case insq:
				switch {
				case c == '\\' && at(p+1) == '\'':
					p++
					cur = append(cur, '\'')
				case c == '\'':
					if n := at(p + 1); n != 0 && !isCSpace(n) {
						return nil, false
					}
					done = true
				case c == 0:
					return nil, false
				default:
					cur = append(cur, c)
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					cur = append(cur, c)
				}
			}
			if p < len(line) {
				p++
			}
		}
		if cur == nil {
			cur = []byte{}
		}
		out = append(out, cur)
	}
}

// isCSpace is C's isspace in the C locale.
func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hexVal(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// aheadKeys calls fn with the first two arguments (a command's name and,
// for most commands, its key; nil for a request of one argument) of each
// complete multibulk request that was read and not parsed yet, until max
// of them had a key or it walked 2*max requests, and returns how many had
// a key. It parses nothing: Parse still does, and decides what is valid.
// It stops at anything it does not expect (an inline request, a request
// in progress, one not complete yet), so what it finds is advice, for a
// caller that wants to start fetching what the next requests will need
// (a pipeline's keys from memory) before it runs them. The names and keys
// are views of the read buffer, with no room to append over what follows:
// Parse copies arguments out and never writes the buffer, so they keep
// their bytes until the next Fill.
func (r *Reader) aheadKeys(max int, fn func(name, key []byte)) int {
	if r.left != 0 {
		return 0
	}
	b := r.buf[r.pos:r.end]
	found := 0
	for walked := 0; found < max && walked < 2*max && len(b) > 0 && b[0] == '*'; walked++ {
		argc, rest, ok := lengthOf(b)
		if !ok || argc <= 0 || argc > 64 {
			break
		}
		b = rest
		var name, key []byte
		for i := int64(0); i < argc; i++ {
			if len(b) == 0 || b[0] != '$' {
				return found
			}
			l, rest, ok := lengthOf(b)
			if !ok || l < 0 || l > int64(len(rest))-2 {
				return found
			}
			switch i {
			case 0:
				name = rest[:l:l]
			case 1:
				key = rest[:l:l]
			}
			b = rest[l+2:]
		}
		if key != nil {
			found++
		}
		fn(name, key)
	}
	return found
}

// lengthOf reads the "<c><digits>\r\n" line at the start of b: the number,
// and what follows the line. Only plain decimal digits, at most 18 of
// them, are taken: anything else is for Parse to judge.
func lengthOf(b []byte) (n int64, rest []byte, ok bool) {
	i := 1
	for ; i < len(b) && i <= 18; i++ {
		c := b[i]
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int64(c-'0')
	}
	if i == 1 || i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n' {
		return 0, nil, false
	}
	return n, b[i+2:], true
}
