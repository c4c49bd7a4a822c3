package commands

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store/badgerdb"
)

// benchServer is a command server over a started Badger store in a
// temporary directory, with n keys key:0…key:n-1 already set.
func benchServer(b *testing.B, n int) *Server {
	b.Helper()
	opts := badgerdb.DefaultOptions(b.TempDir())
	st, err := badgerdb.Open(opts)
	if err != nil {
		b.Fatal(err)
	}
	st.Start()
	b.Cleanup(func() { st.Close() })
	s := New(Config{}, st)
	c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
	for i := 0; i < n; i++ {
		s.Serve(c, [][]byte{[]byte("SET"), []byte("key:" + strconv.Itoa(i)), []byte("xxx")})
		s.BeforeReply(c)
		c.W.Reset()
	}
	return s
}

// BenchmarkServe measures a command from the parsed arguments to the
// reply in the connection's buffer: the command table, the store's memory
// layer and, for writes, the wait for the log (redis-benchmark's PING, GET,
// SET and INCR over 100,000 keys, from parallel connections). Each
// connection settles its replies every 16 commands, as the server does
// before it sends a pipeline of 16 (redis-benchmark -P 16).
func BenchmarkServe(b *testing.B) {
	const keys, pipeline = 100000, 16
	for _, name := range []string{"PING", "GET", "SET", "INCR"} {
		b.Run(name, func(b *testing.B) {
			s := benchServer(b, keys)
			var seq atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
				i := int(seq.Add(1)) * 7919
				args := [][]byte{[]byte(name), nil, []byte("xxx")}
				n := 0
				switch name {
				case "PING":
					args = args[:1]
				case "GET", "INCR":
					args = args[:2]
				}
				for pb.Next() {
					i = (i + 104729) % keys
					key := "key:" + strconv.Itoa(i)
					if name == "INCR" {
						key = "counter:" + strconv.Itoa(i)
					}
					if len(args) > 1 {
						args[1] = []byte(key)
					}
					start := c.W.Len()
					s.Serve(c, args)
					if c.W.Len() == start || c.W.Bytes()[start] == '-' {
						b.Fatalf("%s %s: %q", name, key, c.W.Bytes()[start:])
					}
					if n++; n%pipeline == 0 {
						s.BeforeReply(c) // as the wire does before it sends
						if err := c.Settle(context.Background()); err != nil {
							b.Fatal(err)
						}
						c.W.Reset()
					}
				}
				// The wire lets the connection's hold go before it
				// waits for more; a hold kept here would keep out the
				// other connections' writers, and the sweeper, for good.
				s.BeforeReply(c)
			})
		})
	}
}
