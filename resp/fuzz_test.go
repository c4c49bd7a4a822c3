package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
)

// FuzzReader feeds arbitrary client bytes to the request reader and
// checks that it never panics, that how the bytes are split into reads
// changes nothing (the same requests, then the same error), nor does
// releasing some of the requests (Release) to the next, that it never
// holds much more memory than it was sent, and that the requests it
// returns read back the same once encoded canonically.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"*1\r\n$4\r\nPING\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
		"PING\r\nECHO \"a\\x41\\n\" 'b\\'c'\r\n",
		"*0\r\n*-1\r\n\r\n*1\r\n$4\r\nPINGxx",
		"*1\rX$4\r\nPING\r\n",
		"*1\r\n$600000000\r\n",
		"*2147483648\r\n",
		"*1\r\n:4\r\n",
		"ECHO \"a\"b\r\n",
		"ECHO a\x00b\r\n",
		"*3\r\n$1\r\na\r\n$-1\r\n",
		"*2\r\n$3\r\nGET\r\n$40000\r\nabc",
	} {
		f.Add([]byte(s), uint8(0), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, split uint8, authed bool) {
		// run reads data in reads of the given sizes. With release, it
		// releases every request for which release(i) is true, as a
		// command with the Borrows flag does, and returns a copy of each
		// request as it was parsed; the requests it kept must still read
		// the same at the end.
		run := func(sizes []int, release func(int) bool) ([][][]byte, error, int64) {
			r := NewReader(&chunkReader{data: data, sizes: sizes}, Limits{})
			r.SetAuthed(authed)
			var peak int64
			var cmds, kept, keptWas [][][]byte
			check := func() {
				for i, k := range kept {
					if show([][][]byte{k}) != show([][][]byte{keptWas[i]}) {
						t.Fatalf("a request not released reads %.300s, was parsed as %.300s", show([][][]byte{k}), show([][][]byte{keptWas[i]}))
					}
				}
			}
			for {
				args, err := r.Parse()
				if h := r.holding(); h > peak {
					peak = h
				}
				if err != nil {
					check()
					return cmds, err, peak
				}
				if args != nil {
					if release == nil {
						cmds = append(cmds, args)
						continue
					}
					was := make([][]byte, len(args))
					for i, a := range args {
						was[i] = bytes.Clone(a)
					}
					if release(len(cmds)) {
						r.Release(args)
					} else {
						kept, keptWas = append(kept, args), append(keptWas, was)
					}
					cmds = append(cmds, was)
					continue
				}
				if err := r.Fill(); err != nil {
					check()
					return cmds, err, peak
				}
			}
		}
		whole, werr, peak := run(nil, nil)
		if werr == nil {
			t.Fatal("no error at the end of the input")
		}
		// What it holds is what it was sent, give or take one read buffer
		// and one argument's first allocation.
		if limit := int64(2*len(data)) + 2*ioBufLen + 2*bigArg + 1024*argOverhead; peak > limit {
			t.Fatalf("held %d bytes for %d bytes of input", peak, len(data))
		}
		if len(data) > inlineMaxSize/2 {
			return // a long line read in small pieces may be too long (as in Redis)
		}
		sizes := []int{1}
		if split > 1 {
			sizes = []int{int(split), 1, int(split) / 2}
		}
		pieces, perr := func() ([][][]byte, error) { c, e, _ := run(sizes, nil); return c, e }()
		if show(whole) != show(pieces) || errText(werr) != errText(perr) {
			t.Fatalf("read whole: %.300s, %v\nin pieces %v: %.300s, %v", show(whole), werr, sizes, show(pieces), perr)
		}
		// Releasing some requests (which, by split's bits) changes none.
		released, rerr := func() ([][][]byte, error) {
			c, e, _ := run(sizes, func(i int) bool { return split>>(i%8)&1 == 0 })
			return c, e
		}()
		if show(whole) != show(released) || errText(werr) != errText(rerr) {
			t.Fatalf("read whole: %.300s, %v\nreleasing some: %.300s, %v", show(whole), werr, show(released), rerr)
		}
		// The requests, encoded canonically, read back the same.
		var enc bytes.Buffer
		for _, c := range whole {
			w := NewWriter(2)
			w.Array(len(c))
			for _, a := range c {
				w.Bulk(a)
			}
			enc.Write(w.Bytes())
		}
		r := NewReader(&chunkReader{data: enc.Bytes()}, Limits{})
		r.SetAuthed(true)
		again, err := parseAll(r)
		if !errors.Is(err, io.EOF) || show(again) != show(whole) {
			t.Fatalf("re-encoded: %.300s, %v; want %.300s", show(again), err, show(whole))
		}
	})
}

// FuzzSplitArgs checks the inline splitter against its own output: words
// quoted back the way Redis's sdscatrepr does split to the same words.
func FuzzSplitArgs(f *testing.F) {
	for _, s := range []string{"SET k v", `ECHO "a b" 'c d'`, `"\x41\n"`, `a"b"`, `"a"b`, "'a\\'b'", "\t x \v y"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, 0) >= 0 || bytes.IndexByte(line, '\n') >= 0 {
			return // never given to it: the reader stops a line there
		}
		words, ok := SplitArgs(line)
		if !ok {
			return
		}
		var b []byte
		for i, w := range words {
			if i > 0 {
				b = append(b, ' ')
			}
			b = appendRepr(b, w)
		}
		again, ok := SplitArgs(b)
		if !ok || show([][][]byte{again}) != show([][][]byte{words}) {
			t.Fatalf("%q split to %q; quoted %q split to %q (%v)", line, words, b, again, ok)
		}
	})
}

// appendRepr quotes w so that SplitArgs reads it back.
func appendRepr(b, w []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, c := range w {
		switch {
		case c == '\\' || c == '"':
			b = append(b, '\\', c)
		case c < ' ' || c > '~':
			b = append(b, '\\', 'x', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// FuzzAheadKeys checks the reader's look ahead at a pipeline's names and
// keys (aheadKeys) against what Parse then returns, from every point
// between requests and for any split of the bytes into reads: it never
// panics, it counts the requests with a key, and what it finds is, in
// order, the first two arguments of the next requests Parse returns (up
// to an error, where Parse may refuse what the look ahead passed over).
func FuzzAheadKeys(f *testing.F) {
	for _, s := range []string{
		"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*3\r\n$3\r\nSET\r\n$2\r\nk2\r\n$1\r\nv\r\n*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n",
		"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nj\r\n",
		"*0\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
		"*2\r\n$3\r\nGET\r\n$9223372036854775807\r\nk\r\n",
		"*2\r\n$3\r\nGET\r\n$-1\r\n*2\r\n$3\r\nGET\r\n$1\r\nk",
		"*2\r\n$3\r\nGET\r\n$2\r\nk\r\n",
		"*2\r\n$3\r\nGET\r\n$0\r\n\r\n*1\r\n$0\r\n\r\n*1\r\n$5\r\nMULTI\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
	} {
		f.Add([]byte(s), uint8(0), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, split uint8, authed bool) {
		var sizes []int
		if split > 0 {
			sizes = []int{int(split)}
		}
		r := NewReader(&chunkReader{data: data, sizes: sizes}, Limits{})
		r.SetAuthed(authed)
		var ahead []string // keys found ahead, not yet matched
		for {
			var found []string
			keyed := 0
			n := r.aheadKeys(8, func(name, k []byte) {
				if k != nil {
					keyed++
				}
				found = append(found, show1(name, k))
			})
			if n != keyed || n > 8 || len(found) > 16 {
				t.Fatalf("aheadKeys reported %d keys, passed %d of %d requests (at most 8 keys, 16 requests)", n, keyed, len(found))
			}
			// What a look ahead from here finds must agree with what
			// an earlier one found and Parse has not reached yet.
			for i := 0; i < min(len(found), len(ahead)); i++ {
				if found[i] != ahead[i] {
					t.Fatalf("look aheads disagree: %q then %q", ahead, found)
				}
			}
			if len(found) > len(ahead) {
				ahead = found
			}
			args, err := r.Parse()
			if err != nil {
				return
			}
			if args == nil {
				if len(ahead) > 0 {
					t.Fatalf("keys %q found ahead of requests Parse does not have", ahead)
				}
				if err := r.Fill(); err != nil {
					return
				}
				continue
			}
			if len(ahead) == 0 {
				continue
			}
			var key []byte
			if len(args) > 1 {
				key = args[1]
			}
			if show1(args[0], key) != ahead[0] {
				t.Fatalf("found %q ahead, Parse returned %q", ahead[0], args)
			}
			ahead = ahead[1:]
		}
	})
}

// show1 shows a request's name and key as FuzzAheadKeys compares them.
func show1(name, key []byte) string {
	if key == nil {
		return fmt.Sprintf("%q without a key", name)
	}
	return fmt.Sprintf("%q %q", name, key)
}
