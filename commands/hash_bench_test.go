package commands

import (
	"strconv"
	"testing"

	"github.com/oncekv/oncekv/resp"
)

// hashSizes are the sizes the hash benchmarks measure: a listpack-encoded
// hash (one value), and two hashtable-encoded ones (store objects).
var hashSizes = []int{10, 1000, 100000}

// benchHash returns a server holding hash h of size fields field:i →
// value:i, and a connection to it.
func benchHash(b *testing.B, size int) (*Server, *resp.Conn) {
	b.Helper()
	s := benchServer(b, 0)
	c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
	args := [][]byte{[]byte("HSET"), []byte("h")}
	for i := range size {
		args = append(args, []byte("field:"+strconv.Itoa(i)), []byte("value:"+strconv.Itoa(i)))
		if len(args) >= 2+2*1000 || i == size-1 {
			s.Serve(c, args)
			s.BeforeReply(c)
			c.W.Reset()
			args = args[:2]
		}
	}
	if got := send(s, c, "HLEN", "h"); got != ":"+strconv.Itoa(size)+"\r\n" {
		b.Fatalf("HLEN h = %q", got)
	}
	return s, c
}

// benchHashCmd measures, at each size, the command args(i) makes for the
// i-th run, checking that its reply starts with want.
func benchHashCmd(b *testing.B, want byte, args func(i, size int) [][]byte) {
	for _, size := range hashSizes {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			s, c := benchHash(b, size)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				s.Serve(c, args(i, size))
				s.BeforeReply(c)
				if c.W.Bytes()[0] != want {
					b.Fatalf("%q: %q", args(i, size)[0], c.W.Bytes())
				}
				c.W.Reset()
			}
		})
	}
}

// BenchmarkHSet measures HSET of one field (overwriting one of them, so
// the size stays) into a hash of 10, 1,000 and 100,000 fields: the small
// hash is rewritten whole, the large ones write one element (README,
// hashes), so the cost does not grow with the hash.
func BenchmarkHSet(b *testing.B) {
	benchHashCmd(b, ':', func(i, size int) [][]byte {
		return [][]byte{[]byte("HSET"), []byte("h"), []byte("field:" + strconv.Itoa(i%size)), []byte("new")}
	})
}

// BenchmarkHGet measures HGET of one field of such hashes.
func BenchmarkHGet(b *testing.B) {
	benchHashCmd(b, '$', func(i, size int) [][]byte {
		return [][]byte{[]byte("HGET"), []byte("h"), []byte("field:" + strconv.Itoa(i%size))}
	})
}

// BenchmarkHGetAll measures HGETALL of such hashes: O(n) on both forms.
func BenchmarkHGetAll(b *testing.B) {
	benchHashCmd(b, '*', func(int, int) [][]byte {
		return [][]byte{[]byte("HGETALL"), []byte("h")}
	})
}
