package commands

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/oncekv/oncekv/resp"
)

// BenchmarkListEnds measures LPUSH and RPOP, through Serve, on a list of
// n elements of 100 bytes that each command leaves as long as it found
// it (an LPUSH is followed, untimed, by an RPOP, and the other way
// round). A list of 10 is inline (rewritten whole by each write); lists
// of 1,000 and 100,000 are store objects, written one element at a time
// (listobj.go; README, "Lists").
func BenchmarkListEnds(b *testing.B) {
	elem := bytes.Repeat([]byte("j"), 100)
	for _, n := range []int{10, 1000, 100000} {
		for _, op := range []string{"LPUSH", "RPOP"} {
			b.Run(op+"/"+strconv.Itoa(n), func(b *testing.B) {
				s := benchServer(b, 0)
				c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
				do := func(args ...[]byte) {
					s.Serve(c, args)
					s.BeforeReply(c)
					if c.W.Len() == 0 || c.W.Bytes()[0] == '-' {
						b.Fatalf("%s: %q", args[0], c.W.Bytes())
					}
					c.W.Reset()
				}
				key := []byte("q")
				fill := [][]byte{[]byte("RPUSH"), key}
				for range n {
					fill = append(fill, elem)
				}
				do(fill...)
				push := [][]byte{[]byte("LPUSH"), key, elem}
				pop := [][]byte{[]byte("RPOP"), key}
				timed, undo := push, pop
				if op == "RPOP" {
					timed, undo = pop, push
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					do(timed...)
					b.StopTimer()
					do(undo...)
					b.StartTimer()
				}
			})
		}
	}
}
