package commands

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store/badgerdb"
)

// zsetBench is a bench server holding sorted set "z" of n members
// member:000000… scored 0…n-1, and its answer to one command (failing on
// an error).
func zsetBench(b *testing.B, n int) func(args ...string) {
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
	for i := 0; i < n; i += 1000 {
		fill := []string{"ZADD", "z"}
		for j := i; j < min(i+1000, n); j++ {
			fill = append(fill, strconv.Itoa(j), fmt.Sprintf("member:%06d", j))
		}
		run(fill...)
	}
	settle(b, s)
	return run
}

// settle waits (up to a minute) until the store has applied every write
// to Badger, so that a benchmark does not share the machine with the
// applying of its setup.
func settle(b *testing.B, s *Server) {
	db, ok := s.store.(*badgerdb.DB)
	if !ok {
		return
	}
	for end := time.Now().Add(time.Minute); db.Stats().Pending > 0 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
}

// zsetSizes are the sizes of the sorted set benchmarks: a listpack, and
// skiplists (store objects) of 1,000 and 100,000 members.
var zsetSizes = []int{10, 1000, 100000}

// BenchmarkZadd measures a ZADD that changes one member's score: in a
// listpack the whole set is encoded again, in an object it writes four
// elements whatever the set's size (README, "Sorted sets").
func BenchmarkZadd(b *testing.B) {
	for _, n := range zsetSizes {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			run := zsetBench(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				run("ZADD", "z", strconv.Itoa(n+i), fmt.Sprintf("member:%06d", i%n))
			}
		})
	}
}

// BenchmarkZsetReads measures the reads a leaderboard makes of a set of
// n members: the top ten (ZREVRANGE 0 9), one member's score, a member's
// rank from the nearer end (the middle: the slowest), and a score range
// of ten members.
func BenchmarkZsetReads(b *testing.B) {
	for _, n := range zsetSizes {
		run := zsetBench(b, n)
		mid := fmt.Sprintf("member:%06d", n/2)
		for _, c := range []struct {
			name string
			args []string
		}{
			{"ZREVRANGE10", []string{"ZREVRANGE", "z", "0", "9", "WITHSCORES"}},
			{"ZSCORE", []string{"ZSCORE", "z", mid}},
			{"ZRANKmid", []string{"ZRANK", "z", mid}},
			{"ZRANGEBYSCORE10", []string{"ZRANGEBYSCORE", "z", strconv.Itoa(n / 3), "+inf", "LIMIT", "0", "10"}},
		} {
			b.Run(c.name+"/"+strconv.Itoa(n), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					run(c.args...)
				}
			})
		}
	}
}

// BenchmarkZpopmin measures ZPOPMIN and a ZADD that puts the member
// back, on a set of n members.
func BenchmarkZpopmin(b *testing.B) {
	for _, n := range zsetSizes {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			run := zsetBench(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				run("ZPOPMIN", "z")
				run("ZADD", "z", strconv.Itoa(n+i), fmt.Sprintf("member:%06d", i%n))
			}
		})
	}
}
