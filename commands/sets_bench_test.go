package commands

import (
	"context"
	"strconv"
	"testing"

	"github.com/oncekv/oncekv/resp"
)

// BenchmarkSAdd measures a write to a set of 10, 1,000 and 100,000
// members (README, "Sets"): every write decodes and rewrites the whole
// value, so its cost grows with the set. Iterations alternate SADD and
// SREM of one member, each a write that changes the set (so each is a
// whole rewrite); each is settled before the next, as a client waiting
// for its reply.
func BenchmarkSAdd(b *testing.B) {
	for _, size := range []int{10, 1000, 100000} {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			s := benchServer(b, 0)
			c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
			run := func(want string, args ...[]byte) {
				s.Serve(c, args)
				s.BeforeReply(c)
				if err := c.Settle(context.Background()); err != nil {
					b.Fatal(err)
				}
				if r := c.W.Bytes(); string(r) != want {
					b.Fatalf("%q: %q, want %q", args[0], r, want)
				}
				c.W.Reset()
			}
			key := []byte("set")
			args := [][]byte{[]byte("SADD"), key}
			for i := 0; i < size; i++ {
				args = append(args, []byte("member:"+strconv.Itoa(i)))
				if len(args) == 1002 || i == size-1 {
					run(":"+strconv.Itoa(len(args)-2)+"\r\n", args...)
					args = args[:2]
				}
			}
			sadd, srem := []byte("SADD"), []byte("SREM")
			member := []byte("new member")
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				op := sadd
				if i%2 == 1 {
					op = srem
				}
				run(":1\r\n", op, key, member)
			}
		})
	}
}
