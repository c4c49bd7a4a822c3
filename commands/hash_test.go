package commands

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/oncekv/oncekv/internal/hashcodec"
	"github.com/oncekv/oncekv/resp"
)

// HSCAN of a hashtable-encoded hash never misses a field present from the
// first call to the last, whatever is added and deleted between calls, and
// ends (cursor 0).
func TestHScanNeverMisses(t *testing.T) {
	for _, count := range []int64{1, 7, 100} {
		t.Run(strconv.FormatInt(count, 10), func(t *testing.T) {
			h := hashcodec.Hash{Table: true}
			for i := range 300 {
				h.Set([]byte(fmt.Sprint("f", i)), []byte("v"))
			}
			stays := map[string]bool{}
			for i := range 300 {
				if i%3 != 0 {
					stays[fmt.Sprint("f", i)] = true // never deleted
				}
			}
			seen := map[string]bool{}
			cursor, added := uint64(0), 0
			for calls := 0; ; calls++ {
				if calls > 1000 {
					t.Fatal("the scan does not end")
				}
				page, next := scanSlots(h.Pairs, cursor, count)
				if int64(len(page)) < min(count, 1) {
					t.Fatalf("an empty page before the end")
				}
				for _, p := range page {
					seen[string(p.Field)] = true
				}
				if next == 0 {
					break
				}
				cursor = next
				// Between calls: delete a field that may go, add two.
				h.Delete([]byte(fmt.Sprint("f", 3*calls)))
				h.Set([]byte(fmt.Sprint("new", added)), []byte("v"))
				h.Set([]byte(fmt.Sprint("new", added+1)), []byte("v"))
				added += 2
			}
			for f := range stays {
				if !seen[f] {
					t.Errorf("field %s, present throughout, was not returned", f)
				}
			}
		})
	}
}

// bulks reads the bulk strings of a flat RESP2 array reply.
func bulks(tb testing.TB, reply string) []string {
	tb.Helper()
	lines := strings.Split(strings.TrimSuffix(reply, "\r\n"), "\r\n")
	if len(lines) == 0 || lines[0][0] != '*' {
		tb.Fatalf("not an array: %q", reply)
	}
	var out []string
	for i := 1; i+1 < len(lines); i += 2 {
		out = append(out, lines[i+1])
	}
	return out
}

// HRANDFIELD's random answers, by their properties: a positive count
// below the size gives that many distinct fields of the hash; a negative
// count that many fields of the hash, repeats allowed; WITHVALUES each
// field with its value; and over many calls every field comes up.
func TestHRandFieldProperties(t *testing.T) {
	srv := onceServer(t)
	c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
	const size = 20
	args := []string{"HSET", "h"}
	for i := range size {
		args = append(args, fmt.Sprint("f", i), fmt.Sprint("v", i))
	}
	send(srv, c, args...)
	inHash := func(f string) bool {
		n, err := strconv.Atoi(strings.TrimPrefix(f, "f"))
		return err == nil && strings.HasPrefix(f, "f") && n >= 0 && n < size
	}
	everyField := map[string]bool{}
	for range 200 {
		for _, tc := range []struct {
			count      int
			withValues bool
		}{{5, false}, {19, true}, {-30, false}, {-7, true}, {1, false}} {
			cmd := []string{"HRANDFIELD", "h", strconv.Itoa(tc.count)}
			if tc.withValues {
				cmd = append(cmd, "WITHVALUES")
			}
			got := bulks(t, send(srv, c, cmd...))
			n := max(tc.count, -tc.count)
			fields := got
			if tc.withValues {
				fields = nil
				for i := 0; i+1 < len(got); i += 2 {
					if got[i+1] != "v"+strings.TrimPrefix(got[i], "f") {
						t.Fatalf("%q: field %s with value %s", cmd, got[i], got[i+1])
					}
					fields = append(fields, got[i])
				}
			}
			if len(fields) != n {
				t.Fatalf("%q: %d fields, want %d", cmd, len(fields), n)
			}
			distinct := map[string]bool{}
			for _, f := range fields {
				if !inHash(f) {
					t.Fatalf("%q: %q is not a field of the hash", cmd, f)
				}
				distinct[f] = true
				everyField[f] = true
			}
			if tc.count > 0 && len(distinct) != n {
				t.Fatalf("%q: repeated fields %q", cmd, fields)
			}
		}
		if f := strings.Split(send(srv, c, "HRANDFIELD", "h"), "\r\n"); len(f) != 3 || !inHash(f[1]) {
			t.Fatalf("HRANDFIELD h = %q", f)
		}
	}
	if len(everyField) != size {
		t.Errorf("over 1,000 calls, %d of the %d fields came up", len(everyField), size)
	}
}

// A field longer than an element's name may be (a store key) is named by
// its SHA-256 and kept in the element's value: such fields work as any
// other. A field and value too long for one store value together are
// refused whole, before any field is written: a hashtable-encoded hash
// keeps its count equal to its fields, and a listpack one is left as it
// was.
func TestHashLongFields(t *testing.T) {
	srv := onceServer(t)
	c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
	args := []string{"HSET", "big"}
	for i := range 600 {
		args = append(args, fmt.Sprint("f", i), "v")
	}
	send(srv, c, args...)
	send(srv, c, "HSET", "small", "a", "1")
	for _, n := range []int{longField, longField + 1, 70000} {
		f := strings.Repeat("x", n-1) + "y"
		g := strings.Repeat("x", n-1) + "z" // same length, another field
		for _, key := range []string{"big", "small", "fresh"} {
			for _, q := range []struct {
				args []string
				want string
			}{
				{[]string{"HSET", key, f, "fv", g, "gv"}, ":2\r\n"},
				{[]string{"HGET", key, f}, "$2\r\nfv\r\n"},
				{[]string{"HGET", key, g}, "$2\r\ngv\r\n"},
				{[]string{"HSTRLEN", key, g}, ":2\r\n"},
				{[]string{"HSETNX", key, f, "no"}, ":0\r\n"},
				{[]string{"HINCRBY", key, g + "n", "5"}, ":5\r\n"},
				{[]string{"HDEL", key, f, g + "n"}, ":2\r\n"},
				{[]string{"HEXISTS", key, f}, ":0\r\n"},
				{[]string{"HEXISTS", key, g}, ":1\r\n"},
			} {
				if got := send(srv, c, q.args...); got != q.want {
					t.Errorf("%d-byte field: %s %s …: %q, want %q", n, q.args[0], key, got, q.want)
				}
			}
			// The field comes back whole from whole-hash reads and scans.
			for _, read := range [][]string{{"HKEYS", key}, {"HSCAN", key, "0", "COUNT", "1000"}} {
				if got := send(srv, c, read...); !strings.Contains(got, "$"+fmt.Sprint(n)+"\r\n"+g+"\r\n") {
					t.Errorf("%d-byte field: %s %s does not hold it", n, read[0], key)
				}
			}
			send(srv, c, "HDEL", key, g)
		}
	}
	huge := strings.Repeat("h", maxFieldValue)
	want := "-" + ErrFieldValueTooLong.Error() + "\r\n"
	for _, tc := range [][]string{
		{"HSET", "big", "new", "v", huge, "v"},
		{"HMSET", "small", "new", "v", "f", huge},
	} {
		if got := send(srv, c, tc...); got != want {
			t.Errorf("%s %s …: %q, want %q", tc[0], tc[1], got, want)
		}
	}
	if got := send(srv, c, "HLEN", "big"); got != ":600\r\n" {
		t.Errorf("HLEN big = %q, want 600", got)
	}
	if got := len(bulks(t, send(srv, c, "HKEYS", "big"))); got != 600 {
		t.Errorf("HKEYS big has %d fields, want 600", got)
	}
	if got := send(srv, c, "HGETALL", "small"); got != "*2\r\n$1\r\na\r\n$1\r\n1\r\n" {
		t.Errorf("HGETALL small = %q", got)
	}
}
