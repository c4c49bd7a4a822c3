package resp

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// pipeline is n copies of a SET request of a 16-byte key and a value of
// size bytes.
func pipeline(n, size int) []byte {
	var b bytes.Buffer
	for i := range n {
		k := []byte("key:000000000000")
		copy(k[len(k)-4:], []byte{byte('0' + i/1000%10), byte('0' + i/100%10), byte('0' + i/10%10), byte('0' + i%10)})
		b.WriteString("*3\r\n$3\r\nSET\r\n$16\r\n")
		b.Write(k)
		b.WriteString("\r\n$" + strconv.Itoa(size) + "\r\n" + strings.Repeat("v", size) + "\r\n")
	}
	return b.Bytes()
}

// filled returns a reader that has read in, whole.
func filled(tb testing.TB, in string) *Reader {
	tb.Helper()
	r := NewReader(&chunkReader{data: []byte(in)}, Limits{})
	if err := r.Fill(); err != nil {
		tb.Fatal(err)
	}
	return r
}

// A released request's memory serves the next: a pipeline of requests,
// each released, costs no allocation once the first is parsed (issue 6:
// the argument list and its buffer were two allocations per command). An
// idle connection keeps only a small request's worth (reset), so a
// pipeline of larger ones costs one allocation.
func TestReleasedRequestsAllocateNothing(t *testing.T) {
	const n, runs = 48, 20
	for _, tc := range []struct{ size, allocs int }{{3, 0}, {256, 0}, {1000, 1}} {
		in := pipeline(n, tc.size)
		r := NewReader(&chunkReader{}, Limits{})
		r.SetAuthed(true)
		r.buf = make([]byte, len(in))
		var got int
		allocs := testing.AllocsPerRun(runs, func() {
			r.pos, r.end = 0, copy(r.buf, in)
			for {
				args, err := r.Parse()
				if err != nil || args == nil {
					break
				}
				got++
				r.Release(args)
			}
		})
		if got != n*(runs+1) {
			t.Fatalf("value %d: parsed %d requests, want %d", tc.size, got, n*(runs+1))
		}
		if allocs > float64(tc.allocs) {
			t.Errorf("value %d: %.1f allocations per pipeline of %d released requests, want %d", tc.size, allocs, n, tc.allocs)
		}
	}
}

// What is not released stays as it was parsed, whatever comes after it;
// Release of anything but the last request does nothing.
func TestUnreleasedRequestsKeepTheirMemory(t *testing.T) {
	in := "*2\r\n$4\r\nKEEP\r\n$5\r\nfirst\r\n" +
		"*2\r\n$3\r\nGET\r\n$6\r\nsecond\r\n" +
		"*2\r\n$3\r\nGET\r\n$5\r\nthird\r\n" +
		"*2\r\n$3\r\nGET\r\n$6\r\nfourth\r\n"
	r := filled(t, in)
	kept, _ := r.Parse()
	second, _ := r.Parse()
	r.Release(kept) // not the last request: ignored
	r.Release(second)
	third, _ := r.Parse()
	r.Release(third)
	r.Release(third) // twice: ignored
	if _, err := r.Parse(); err != nil {
		t.Fatal(err)
	}
	if got := show([][][]byte{kept}); got != `["KEEP" "first"]` {
		t.Fatalf("a request never released reads %s after three more", got)
	}
}

// A released argument does not read as it did once the next request is
// parsed: in builds with the race detector or the oncekv_poison tag,
// Release overwrites it at once (so that a command that keeps one shows in
// any test that reads it back); in the others the next request reuses its
// memory.
func TestReleasedArgumentsAreOverwritten(t *testing.T) {
	in := "*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n*2\r\n$3\r\nSET\r\n$3\r\nabc\r\n"
	r := filled(t, in)
	args, _ := r.Parse()
	name, key := args[0], args[1]
	r.Release(args)
	if poisonReleased {
		if want := bytes.Repeat([]byte{poisonByte}, 3); !bytes.Equal(key, want) {
			t.Fatalf("released argument reads %q, want %q", key, want)
		}
		if args[0] != nil {
			t.Fatalf("released list still holds %q", args[0])
		}
	}
	next, _ := r.Parse()
	if got := show([][][]byte{next}); got != `["SET" "abc"]` {
		t.Fatalf("next request %s", got)
	}
	if string(name) == "GET" || string(key) == "key" {
		t.Fatalf("released arguments still read %q %q after the next request", name, key)
	}
}

// Release writes nothing but the reader's own memory: a caller may have
// put a slice of its own in the list (the proxy puts a renamed command's
// name, shared by every connection), and a spare list keeps no argument
// alive, a big one (its own buffer) least of all.
func TestReleaseTouchesOnlyTheReadersMemory(t *testing.T) {
	big := strings.Repeat("v", bigArg+10)
	in := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + strconv.Itoa(len(big)) + "\r\n" + big + "\r\n"
	r := NewReader(&chunkReader{data: []byte(in)}, Limits{})
	r.SetAuthed(true)
	args, err := parseAll(r)
	if err == nil || len(args) != 1 {
		t.Fatalf("parsed %d requests, err %v", len(args), err)
	}
	set := args[0]
	own := []byte("shared")
	set[0] = own
	r.Release(set)
	if string(own) != "shared" {
		t.Fatalf("the caller's own slice reads %q after Release", own)
	}
	for i, a := range r.spareArgv[:cap(r.spareArgv)] {
		if a != nil {
			t.Fatalf("the spare list still holds argument %d (%d bytes)", i, len(a))
		}
	}
}

// Only the request Parse returned last can be released, and only until
// the next Parse: not one kept since, even when the requests after it
// were inline (they have no list to reuse).
func TestOnlyTheLastRequestIsReleased(t *testing.T) {
	in := "*2\r\n$4\r\nKEEP\r\n$5\r\nfirst\r\nPING\r\n*2\r\n$3\r\nGET\r\n$5\r\nthird\r\n"
	r := filled(t, in)
	kept, _ := r.Parse()
	if inline, _ := r.Parse(); show([][][]byte{inline}) != `["PING"]` {
		t.Fatalf("inline request %s", show([][][]byte{inline}))
	}
	r.Release(kept)
	third, _ := r.Parse()
	if got := show([][][]byte{kept, third}); got != `["KEEP" "first"]["GET" "third"]` {
		t.Fatalf("after releasing a request older than the last: %s", got)
	}
}
