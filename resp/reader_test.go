package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// chunkReader returns data in reads of the given sizes (cycling), then
// io.EOF.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(r.data)
	if len(r.sizes) > 0 {
		n = max(1, r.sizes[r.i%len(r.sizes)])
		r.i++
	}
	n = min(n, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// parseAll reads every request of r until an error (io.EOF at the end of
// the input).
func parseAll(r *Reader) ([][][]byte, error) {
	var cmds [][][]byte
	for {
		args, err := r.Parse()
		if err != nil {
			return cmds, err
		}
		if args != nil {
			cmds = append(cmds, args)
			continue
		}
		if err := r.Fill(); err != nil {
			return cmds, err
		}
	}
}

func show(cmds [][][]byte) string {
	var b strings.Builder
	for _, c := range cmds {
		b.WriteByte('[')
		for i, a := range c {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.Quote(string(a)))
		}
		b.WriteByte(']')
	}
	return b.String()
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// The expectations were taken from redis-server 7.0.15 (the integration
// suite compares the server with it byte for byte).
func TestReaderLikeRedis(t *testing.T) {
	big := func(c byte, n int) string { return strings.Repeat(string(c), n) }
	cases := []struct {
		in     string
		unauth bool
		whole  bool   // only when read in one piece (Redis too times out a long line read in small pieces)
		want   string // the requests, shown
		err    string // the error after them
	}{
		{in: "*1\r\n$4\r\nPING\r\n", want: `["PING"]`, err: "EOF"},
		{in: "PING\r\n", want: `["PING"]`, err: "EOF"},
		{in: "*1\r\n$600000000\r\n", err: "Protocol error: invalid bulk length"},
		{in: "*2000000\r\n", err: "EOF"},
		{in: "*2147483647\r\n", err: "EOF"},
		{in: "*2147483648\r\n", err: "Protocol error: invalid multibulk length"},
		{in: "*abc\r\n", err: "Protocol error: invalid multibulk length"},
		{in: "*\r\n", err: "Protocol error: invalid multibulk length"},
		{in: "$-5\r\n", want: `["$-5"]`, err: "EOF"},
		{in: "*1\r\n$-5\r\n", err: "Protocol error: invalid bulk length"},
		{in: "*0\r\nPING\r\n", want: `["PING"]`, err: "EOF"},
		{in: "*-1\r\nPING\r\n", want: `["PING"]`, err: "EOF"},
		{in: "*1\r\n$4\r\nPINGxxPING\r\n", want: `["PING"]["PING"]`, err: "EOF"},
		{in: "*1\rX$4\r\nPING\r\n", want: `["PING"]`, err: "EOF"},
		{in: "*01\r\n$4\r\nPING\r\n", err: "Protocol error: invalid multibulk length"},
		{in: "*+1\r\n$4\r\nPING\r\n", err: "Protocol error: invalid multibulk length"},
		{in: "*1\r\n$04\r\nPING\r\n", err: "Protocol error: invalid bulk length"},
		{in: "*1\r\n$-0\r\nPING\r\n", err: "Protocol error: invalid bulk length"},
		{in: "*1\r\n:4\r\nPING\r\n", err: "Protocol error: expected '$', got ':'"},
		{in: "*1\r\n\r\n", err: "Protocol error: expected '$', got '\r'"},
		{in: "*1\r\n\x00\r\nPING\r\n", err: "EOF"},
		{in: "PING \"a\r\n", err: "Protocol error: unbalanced quotes in request"},
		{in: "ECHO foo\"bar\"\r\n", want: `["ECHO" "foobar"]`, err: "EOF"},
		{in: "ECHO \"a\"b\r\n", err: "Protocol error: unbalanced quotes in request"},
		{in: "ECHO \"\\x41\\n\"\r\n", want: `["ECHO" "A\n"]`, err: "EOF"},
		{in: "ECHO 'a\\'b'\r\n", want: `["ECHO" "a'b"]`, err: "EOF"},
		{in: "ECHO \"\\xZZ\" \"\\q\" '' \"\"\r\n", want: `["ECHO" "xZZ" "q" "" ""]`, err: "EOF"},
		{in: "ECHO \vx a\vb\r\n", want: `["ECHO" "x" "a\vb"]`, err: "EOF"},
		{in: "ECHO \"\\\r\n", err: "Protocol error: unbalanced quotes in request"},
		{in: "\r\n\r\n  \t \r\nPING\r\n", want: `["PING"]`, err: "EOF"},
		{in: "ECHO a\x00b\r\nPING\r\n", err: "EOF"},
		{in: "PING\nPING\n", want: `["PING"]["PING"]`, err: "EOF"},
		{in: "PING\r\nGARBAGE\r\n*1\r\n$x\r\nPING\r\n", want: `["PING"]["GARBAGE"]`, err: "Protocol error: invalid bulk length"},
		{in: big('A', 70000), err: "Protocol error: too big inline request"},
		{in: big('A', 60000) + "\r\n", want: `["` + big('A', 60000) + `"]`, err: "EOF"},
		{in: big('A', 70000) + "\r\n", whole: true, want: `["` + big('A', 70000) + `"]`, err: "EOF"},
		{in: big('A', 90000) + "\r\n", err: "Protocol error: too big inline request"},
		{in: "PING\r\n" + big('A', 200000) + "\n", want: `["PING"]`, err: "Protocol error: too big inline request"},
		{in: "*" + big('1', 70000), err: "Protocol error: too big mbulk count string"},
		{in: "*" + big('1', 70000) + "\r\n", whole: true, err: "Protocol error: invalid multibulk length"},
		{in: "*" + big('1', 100000) + "\r\n", err: "Protocol error: too big mbulk count string"},
		{in: "*1\r\n$" + big('1', 200000) + "\r\n", err: "Protocol error: too big bulk count string"},
		{in: "*1\r\n$" + big('1', 70000), err: "Protocol error: too big bulk count string"},
		{in: "*1\r\n$40000\r\n" + big('v', 40000) + "\r\n", want: `["` + big('v', 40000) + `"]`, err: "EOF"},
		{in: "*2\r\n$40000\r\n" + big('v', 40000) + "xy$1\r\nz\r\n", want: `["` + big('v', 40000) + `" "z"]`, err: "EOF"},
		{in: "*11\r\n", unauth: true, err: "Protocol error: unauthenticated multibulk length"},
		{in: "*10\r\n", unauth: true, err: "EOF"},
		{in: "*1\r\n$16385\r\n", unauth: true, err: "Protocol error: unauthenticated bulk length"},
		{in: "*1\r\n$16384\r\n", unauth: true, err: "EOF"},
		{in: "*11\r\n", err: "EOF"},
	}
	for _, tc := range cases {
		for _, sizes := range [][]int{nil, {1}, {3, 7, 1}} {
			if tc.whole && sizes != nil {
				continue
			}
			name := fmt.Sprintf("%.40q/%v", tc.in, sizes)
			r := NewReader(&chunkReader{data: []byte(tc.in), sizes: sizes}, Limits{})
			r.SetAuthed(!tc.unauth)
			cmds, err := parseAll(r)
			if got := show(cmds); got != tc.want {
				t.Errorf("%s: requests %.200s, want %.200s", name, got, tc.want)
			}
			if errText(err) != tc.err {
				t.Errorf("%s: error %q, want %q", name, errText(err), tc.err)
			}
		}
	}
}

// A line is taken when its end comes within lineMax bytes of its start
// and it was read whole; the same line one byte longer is too big, however
// much of it was read at once (Redis: the end must come in the read that
// takes the line past 64 KiB).
func TestReaderLineEndsWithinLineMax(t *testing.T) {
	cases := []struct {
		name   string
		line   func(n int) string // a request whose line's '\n' (inline) or '\r' is n bytes from its start
		tooBig string
		short  string // the error when the line ends in time
	}{
		{"inline", func(n int) string { return strings.Repeat("A", n-1) + "\r\n" },
			"Protocol error: too big inline request", "EOF"},
		{"inline-lf", func(n int) string { return strings.Repeat("A", n) + "\n" },
			"Protocol error: too big inline request", "EOF"},
		{"mbulk-count", func(n int) string { return "*" + strings.Repeat("1", n-1) + "\r\n" },
			"Protocol error: too big mbulk count string", "Protocol error: invalid multibulk length"},
		{"bulk-count", func(n int) string { return "*1\r\n$" + strings.Repeat("1", n-1) + "\r\n" },
			"Protocol error: too big bulk count string", "Protocol error: invalid bulk length"},
	}
	for _, tc := range cases {
		for _, n := range []int{lineMax - 1, lineMax, 2*lineMax + 7} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, n), func(t *testing.T) {
				r := NewReader(&chunkReader{data: []byte(tc.line(n))}, Limits{})
				r.SetAuthed(true)
				_, err := parseAll(r)
				want := tc.tooBig
				if n < lineMax {
					want = tc.short
				}
				if errText(err) != want {
					t.Errorf("error %q, want %q", errText(err), want)
				}
			})
		}
	}
}

// A length is announced, not allocated: memory grows with the bytes that
// actually come.
func TestReaderDoesNotTrustLengths(t *testing.T) {
	in := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$500000000\r\n" + strings.Repeat("x", 100)
	r := NewReader(&chunkReader{data: []byte(in)}, Limits{})
	r.SetAuthed(true)
	if _, err := parseAll(r); err != io.EOF {
		t.Fatalf("err %v", err)
	}
	if h := r.holding(); h > 1<<20 {
		t.Fatalf("holds %d bytes after 100 bytes of a 500 MB argument", h)
	}
}

func TestReaderQueryBufferLimit(t *testing.T) {
	const limit = 1 << 20
	// One argument over the limit.
	in := "*1\r\n$2000000\r\n" + strings.Repeat("x", 2000000) + "\r\n"
	r := NewReader(&chunkReader{data: []byte(in), sizes: []int{4096}}, Limits{QueryBufferLimit: limit})
	r.SetAuthed(true)
	if _, err := parseAll(r); !errors.Is(err, ErrQueryBufferLimit) {
		t.Fatalf("2 MB argument: err %v, want the query buffer limit", err)
	}
	// Many small arguments over it, each costing its overhead too.
	var b bytes.Buffer
	b.WriteString("*200000\r\n")
	for range 200000 {
		b.WriteString("$0\r\n\r\n")
	}
	r = NewReader(&chunkReader{data: b.Bytes(), sizes: []int{4096}}, Limits{QueryBufferLimit: limit})
	r.SetAuthed(true)
	if _, err := parseAll(r); !errors.Is(err, ErrQueryBufferLimit) {
		t.Fatalf("200000 empty arguments: err %v, want the query buffer limit", err)
	}
	// What the client holds in MULTI counts.
	r = NewReader(&chunkReader{data: []byte("PING\r\n")}, Limits{QueryBufferLimit: limit})
	r.SetHeld(limit + 1)
	if _, err := parseAll(r); !errors.Is(err, ErrQueryBufferLimit) {
		t.Fatalf("held over the limit: err %v", err)
	}
	// Requests under it go through, however many.
	b.Reset()
	for range 10000 {
		b.WriteString("*2\r\n$3\r\nGET\r\n$300\r\n" + strings.Repeat("k", 300) + "\r\n")
	}
	r = NewReader(&chunkReader{data: b.Bytes()}, Limits{QueryBufferLimit: limit})
	r.SetAuthed(true)
	cmds, err := parseAll(r)
	if err != io.EOF || len(cmds) != 10000 {
		t.Fatalf("%d requests, err %v", len(cmds), err)
	}
}

func TestReaderMaxBulkLen(t *testing.T) {
	r := NewReader(&chunkReader{data: []byte("*1\r\n$2000\r\n")}, Limits{MaxBulkLen: 1000})
	r.SetAuthed(true)
	if _, err := parseAll(r); errText(err) != "Protocol error: invalid bulk length" {
		t.Fatalf("err %v", err)
	}
}

func TestString2ll(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1": 1, "-1": -1, "9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63} {
		if got, ok := ParseInt([]byte(in)); !ok || got != want {
			t.Errorf("%q: %d %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "-", "00", "01", "-0", "+1", " 1", "1 ", "9223372036854775808", "-9223372036854775809", "1a", "123456789012345678901"} {
		if _, ok := ParseInt([]byte(in)); ok {
			t.Errorf("%q accepted", in)
		}
	}
}

// TestArgumentsAreTheirOwn: the arguments of a pipeline are carved from
// shared chunks, yet each is its own: appending to one, or to a request's
// argument list, changes no other, and neither does the next read.
func TestArgumentsAreTheirOwn(t *testing.T) {
	var in strings.Builder
	for i := range 20 {
		fmt.Fprintf(&in, "*3\r\n$3\r\nSET\r\n$2\r\nk%d\r\n$2\r\nv%d\r\n", i%10, i%10)
	}
	r := NewReader(&chunkReader{data: []byte(in.String()), sizes: []int{7, 300, 1}}, Limits{})
	cmds, err := parseAll(r)
	if !errors.Is(err, io.EOF) || len(cmds) != 20 {
		t.Fatalf("%d requests, %v", len(cmds), err)
	}
	for _, c := range cmds {
		c[1] = append(c[1], "xyz"...)
		_ = append(c, []byte("extra"))
	}
	for i, c := range cmds {
		want := fmt.Sprintf(`["SET" "k%dxyz" "v%d"]`, i%10, i%10)
		if got := show([][][]byte{c}); got != want {
			t.Fatalf("request %d = %s, want %s", i, got, want)
		}
	}
}

// TestRequestsParseInTwoAllocations: a request's small arguments share
// one buffer, so a request costs its argument list and that buffer (a
// large argument its own too), not one allocation per argument; and no
// more bytes than its arguments need.
func TestRequestsParseInTwoAllocations(t *testing.T) {
	req := func(args ...string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		return b.String()
	}
	key := "key:000000000001"
	cases := []struct {
		name   string
		req    string
		n      int // requests in the input
		allocs float64
		bytes  int // what the arguments and lists need, per request
	}{
		{"SET 3 B, 16 pipelined", strings.Repeat(req("SET", key, "xxx"), 16), 16, 2, 22 + 3*24},
		{"SET 100 B", req("SET", key, strings.Repeat("x", 100)), 1, 2, 119 + 3*24},
		{"SET 1 KiB", req("SET", key, strings.Repeat("x", 1024)), 1, 2, 1043 + 3*24},
		{"SET 20 KiB", req("SET", key, strings.Repeat("x", 20<<10)), 1, 3, 20<<10 + 19 + 3*24},
		{"MSET 10 pairs", req("MSET", key, "a", key, "b", key, "c", key, "d", key, "e", key, "f", key, "g", key, "h", key, "i", key, "j"), 1, 2, 4 + 170 + 21*24},
	}
	for _, c := range cases {
		data := []byte(c.req)
		src := &chunkReader{}
		r := NewReader(src, Limits{})
		r.SetAuthed(true)
		parse := func() {
			src.data = data
			for n := 0; n < c.n; {
				args, err := r.Parse()
				if err != nil {
					t.Fatal(err)
				}
				if args != nil {
					n++
					continue
				}
				if err := r.Fill(); err != nil {
					t.Fatal(err)
				}
			}
		}
		parse() // the read buffer grows once
		allocs := testing.AllocsPerRun(100, parse) / float64(c.n)
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		const runs = 100
		for range runs {
			parse()
		}
		runtime.ReadMemStats(&m1)
		bytes := float64(m1.TotalAlloc-m0.TotalAlloc) / runs / float64(c.n)
		t.Logf("%s: %.1f allocations, %.0f bytes per request", c.name, allocs, bytes)
		// Size classes round each allocation up by an eighth at most.
		if allocs > c.allocs || bytes > float64(c.bytes)*1.25+32 {
			t.Errorf("%s: %.1f allocations and %.0f bytes per request, want at most %.0f and about %d",
				c.name, allocs, bytes, c.allocs, c.bytes)
		}
	}
}

// TestKeptRequestKeepsNoOther: a request whose arguments outlive it (in
// MULTI's queue, or a blocked command's) keeps no other request's memory
// alive, which the query buffer limit would not count.
func TestKeptRequestKeepsNoOther(t *testing.T) {
	var in strings.Builder
	for i := range 10 {
		// Keys of 16 bytes: buffers smaller than that come from the
		// tiny allocator, whose blocks are shared (and freed together).
		fmt.Fprintf(&in, "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$2048\r\n%s\r\n", i, strings.Repeat("v", 2048))
	}
	in.WriteString("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$1\r\ny\r\n")
	r := NewReader(&chunkReader{data: []byte(in.String()), sizes: []int{16 << 10}}, Limits{})
	cmds, err := parseAll(r)
	if !errors.Is(err, io.EOF) || len(cmds) != 11 {
		t.Fatalf("%d requests, %v", len(cmds), err)
	}
	var freed atomic.Int32
	var which [20]atomic.Bool
	for i, c := range cmds[:10] {
		// The first argument starts its request's buffer; the value has
		// its own.
		runtime.SetFinalizer(&c[0][0], func(*byte) { freed.Add(1); which[2*i].Store(true) })
		runtime.SetFinalizer(&c[2][0], func(*byte) { freed.Add(1); which[2*i+1].Store(true) })
	}
	kept := cmds[10]
	cmds = nil
	for i := 0; i < 100 && freed.Load() < 20; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if n := freed.Load(); n != 20 {
		for i := range which {
			if !which[i].Load() {
				t.Logf("not freed: request %d's %s", i/2, []string{"arguments", "value"}[i%2])
			}
		}
		t.Fatalf("%d of the other requests' 20 buffers freed while one request is kept", n)
	}
	if show([][][]byte{kept}) != `["SET" "x" "y"]` {
		t.Fatalf("kept request = %s", show([][][]byte{kept}))
	}
	runtime.KeepAlive(r)
}

// BenchmarkParse parses a pipeline of 16 requests per iteration, each
// released as a command that borrows its arguments does: multibulk SETs
// and GETs, and inline PINGs. The reader reads the whole pipeline at once.
func BenchmarkParse(b *testing.B) {
	var in strings.Builder
	for i := range 16 {
		switch i % 4 {
		case 0, 1:
			fmt.Fprintf(&in, "*3\r\n$3\r\nSET\r\n$16\r\nkey:%012d\r\n$3\r\nxxx\r\n", i)
		case 2:
			fmt.Fprintf(&in, "*2\r\n$3\r\nGET\r\n$16\r\nkey:%012d\r\n", i)
		default:
			in.WriteString("PING\r\n")
		}
	}
	data := []byte(in.String())
	src := &chunkReader{}
	r := NewReader(src, Limits{})
	r.SetAuthed(true)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		src.data = data
		for n := 0; n < 16; {
			args, err := r.Parse()
			if err != nil {
				b.Fatal(err)
			}
			if args == nil {
				if err := r.Fill(); err != nil {
					b.Fatal(err)
				}
				continue
			}
			r.Release(args)
			n++
		}
	}
}
