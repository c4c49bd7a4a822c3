package commands

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/oncekv/oncekv/resp"
)

// BenchmarkZadd measures a ZADD that changes one member's score in sorted
// sets of 10, 1,000 and 100,000 members: every write encodes and stores
// the whole set again (README, "Sorted sets"), so its cost grows with the
// set, not with what it changes.
func BenchmarkZadd(b *testing.B) {
	for _, n := range []int{10, 1000, 100000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			s := benchServer(b, 0)
			c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
			run := func(args ...string) {
				bs := make([][]byte, len(args))
				for i, a := range args {
					bs[i] = []byte(a)
				}
				s.Serve(c, bs)
				s.BeforeReply(c)
				if out := c.W.Bytes(); len(out) == 0 || out[0] == '-' {
					b.Fatalf("%s: %q", args[0], out)
				}
				c.W.Reset()
			}
			fill := []string{"ZADD", "z"}
			for i := 0; i < n; i++ {
				fill = append(fill, strconv.Itoa(i), fmt.Sprintf("member:%06d", i))
			}
			run(fill...)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				run("ZADD", "z", strconv.Itoa(n+i), fmt.Sprintf("member:%06d", i%n))
			}
		})
	}
}
