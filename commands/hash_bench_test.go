package commands

import (
	"strconv"
	"testing"

	"github.com/oncekv/oncekv/resp"
)

// BenchmarkHSet measures HSET of one field (overwriting one of them, so
// the size stays) into a hash of 10, 1,000 and 100,000 fields: every
// write decodes the hash and writes it back whole (README, hashes), so
// its cost grows with the hash.
func BenchmarkHSet(b *testing.B) {
	for _, size := range []int{10, 1000, 100000} {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
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
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				f := []byte("field:" + strconv.Itoa(i%size))
				s.Serve(c, [][]byte{[]byte("HSET"), []byte("h"), f, []byte("new")})
				s.BeforeReply(c)
				if c.W.Bytes()[0] != ':' {
					b.Fatalf("HSET: %q", c.W.Bytes())
				}
				c.W.Reset()
			}
		})
	}
}
