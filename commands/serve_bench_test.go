package commands

import (
	"bytes"
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oncekv/oncekv/once"
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
	eng := once.New(st, once.Config{DefaultLease: time.Minute})
	if err := eng.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(eng.Close)
	s.EnableOnce(eng)
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

// BenchmarkOnceCycle measures a claim+complete cycle on a fresh key, as
// bench/oncebench sends it (ONCE.CLAIM k LEASE 30000, then ONCE.COMPLETE k
// tok answer KEEP 60000), from parallel connections, each command settled
// before the next as a client waiting for its reply does: the command
// table, the ONCE engine, the store's memory layer and the wait for the
// log. Its allocations are what the collector pays for per cycle.
func BenchmarkOnceCycle(b *testing.B) {
	s := benchServer(b, 0)
	var seq atomic.Int64
	answer := bytes.Repeat([]byte("a"), 32)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
		claim := [][]byte{[]byte("ONCE.CLAIM"), nil, []byte("LEASE"), []byte("30000")}
		complete := [][]byte{[]byte("ONCE.COMPLETE"), nil, nil, answer, []byte("KEEP"), []byte("60000")}
		run := func(args [][]byte) []byte {
			s.Serve(c, args)
			s.BeforeReply(c)
			if err := c.Settle(context.Background()); err != nil {
				b.Fatal(err)
			}
			out := c.W.Bytes()
			c.W.Reset()
			return out
		}
		for pb.Next() {
			key := []byte("cycle:" + strconv.FormatInt(seq.Add(1), 10))
			claim[1] = key
			r := run(claim)
			// *2\r\n$7\r\nclaimed\r\n:<tok>\r\n
			i := bytes.LastIndexByte(r[:len(r)-2], ':')
			if !bytes.HasPrefix(r, []byte("*2\r\n$7\r\nclaimed")) || i < 0 {
				b.Fatalf("ONCE.CLAIM %s: %q", key, r)
			}
			complete[1], complete[2] = key, append([]byte(nil), r[i+1:len(r)-2]...)
			if r := run(complete); string(r) != "+OK\r\n" {
				b.Fatalf("ONCE.COMPLETE %s: %q", key, r)
			}
		}
		s.BeforeReply(c)
	})
}
