package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// Replies of every RESP2 and RESP3 type are read whole, byte for byte,
// however the bytes arrive.
func TestReadReplyWhole(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"simple", "+OK\r\n"},
		{"error", "-ERR bad\r\n"},
		{"integer", ":-12\r\n"},
		{"bulk", "$5\r\nhe\r\nl\r\n"},
		{"empty bulk", "$0\r\n\r\n"},
		{"null bulk", "$-1\r\n"},
		{"null array", "*-1\r\n"},
		{"empty array", "*0\r\n"},
		{"nested", "*3\r\n:1\r\n*2\r\n$1\r\na\r\n+b\r\n$-1\r\n"},
		{"resp3 null", "_\r\n"},
		{"double", ",3.14\r\n"},
		{"bool", "#t\r\n"},
		{"bignum", "(12345678901234567890\r\n"},
		{"blob error", "!11\r\nSYNTAX oops\r\n"},
		{"verbatim", "=8\r\ntxt:abcd\r\n"},
		{"map", "%2\r\n$1\r\na\r\n:1\r\n+b\r\n%1\r\n:2\r\n_\r\n"},
		{"set", "~2\r\n:1\r\n:2\r\n"},
		{"push", ">2\r\n$7\r\nmessage\r\n$1\r\nx\r\n"},
		{"attribute", "|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n"},
		{"binary bulk", "$4\r\n\x00\r\n\xff\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Followed by another reply, which must stay unread.
			for _, r := range []io.Reader{strings.NewReader(tc.in + "+NEXT\r\n"), iotest.OneByteReader(strings.NewReader(tc.in + "+NEXT\r\n"))} {
				br := bufio.NewReaderSize(r, 16)
				got, err := readReply(br, []byte("prefix"))
				if err != nil {
					t.Fatalf("readReply(%q): %v", tc.in, err)
				}
				if string(got) != "prefix"+tc.in {
					t.Fatalf("readReply = %q, want %q", got, tc.in)
				}
				next, err := readReply(br, nil)
				if err != nil || string(next) != "+NEXT\r\n" {
					t.Fatalf("the next reply: %q %v", next, err)
				}
			}
			v, err := parseReply([]byte(tc.in))
			if err != nil {
				t.Fatalf("parseReply(%q): %v", tc.in, err)
			}
			if string(v.raw) != tc.in {
				t.Errorf("parseReply raw %q, want %q", v.raw, tc.in)
			}
		})
	}
}

func TestReadReplyErrors(t *testing.T) {
	for _, in := range []string{"", "+OK", "$5\r\nab", "*2\r\n:1\r\n", "?x\r\n", "$x\r\n", "*-2\r\n", "+OK\n"} {
		_, err := readReply(bufio.NewReader(strings.NewReader(in)), nil)
		if err == nil {
			t.Errorf("readReply(%q) succeeded", in)
		}
	}
	_, err := readReply(bufio.NewReader(strings.NewReader("?x\r\n")), nil)
	if !errors.Is(err, ErrUpstreamProtocol) {
		t.Errorf("a bad type byte: %v, want ErrUpstreamProtocol", err)
	}
}

// A line longer than the reader's buffer is read whole.
func TestReadReplyLongLine(t *testing.T) {
	long := "+" + strings.Repeat("x", 10000) + "\r\n"
	got, err := readReply(bufio.NewReaderSize(strings.NewReader(long), 16), nil)
	if err != nil || string(got) != long {
		t.Fatalf("long line: %d bytes, %v", len(got), err)
	}
}

func TestParseReplyValues(t *testing.T) {
	v, err := parseReply([]byte("*4\r\n$3\r\nabc\r\n:7\r\n$-1\r\n=9\r\ntxt:hello\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v.typ != '*' || v.num != 4 || len(v.elems) != 4 {
		t.Fatalf("array: %+v", v)
	}
	if v.elems[0].text() != "abc" || v.elems[1].num != 7 || !v.elems[2].null || v.elems[3].text() != "hello" {
		t.Errorf("elements: %q %d %v %q", v.elems[0].text(), v.elems[1].num, v.elems[2].null, v.elems[3].text())
	}
	if string(v.elems[0].raw) != "$3\r\nabc\r\n" {
		t.Errorf("element raw %q", v.elems[0].raw)
	}
	if _, err := parseReply([]byte("+OK\r\n+MORE\r\n")); err == nil {
		t.Errorf("two replies parsed as one")
	}
	if e := errText([]byte("!7\r\nERR bad\r\n")); e != "ERR bad" {
		t.Errorf("blob error text %q", e)
	}
	if e := errText([]byte("-MOVED 1 h:1\r\n")); e != "MOVED 1 h:1" {
		t.Errorf("error text %q", e)
	}
	if e := errText([]byte("+OK\r\n")); e != "" {
		t.Errorf("not an error: %q", e)
	}
}

func TestWriteCommand(t *testing.T) {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	if err := writeCommand(w, [][]byte{[]byte("SET"), []byte("k"), {}}); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	want := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"
	if b.String() != want {
		t.Errorf("writeCommand = %q, want %q", b.String(), want)
	}
	if got := string(appendCommand(nil, []byte("GET"), []byte("x"))); got != "*2\r\n$3\r\nGET\r\n$1\r\nx\r\n" {
		t.Errorf("appendCommand = %q", got)
	}
}
