package proxy

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oncekv/oncekv/internal/testredis"
	"github.com/oncekv/oncekv/resp"
)

// numsub is PUBSUB NUMSUB ch as the upstream counts it, asked directly.
func numsub(direct *rawClient, ch string) string {
	r := direct.do("PUBSUB", "NUMSUB", ch)
	return r[strings.LastIndexByte(r[:len(r)-2], '\n')+1:]
}

// A subscriber's upstream connection is its own while it is subscribed:
// unsubscribed from everything (RESP2 or RESP3), RESET, or gone, it no
// longer holds a subscription upstream and is no longer pinned; an
// upstream that closes it closes the client, as Redis 7 does (the contract is silent on Pub/Sub).
func TestSubscribeConnectionEnds(t *testing.T) {
	t.Parallel()
	up := testredis.Standalone(t)
	p := startTestProxy(t, "redis://"+up.Addr(), "")
	direct := dialRaw(t, up.Addr())
	for _, tc := range []struct {
		name string
		// end ends the subscription of c, subscribed to channel ch.
		end func(tb testing.TB, c *rawClient, ch string)
		// clientClosed: the proxy closes the client's connection.
		clientClosed bool
	}{
		{name: "unsubscribe-resp2", end: func(tb testing.TB, c *rawClient, ch string) {
			if got, want := c.do("UNSUBSCRIBE"), "*3\r\n$11\r\nunsubscribe\r\n$"+strconv.Itoa(len(ch))+"\r\n"+ch+"\r\n:0\r\n"; got != want {
				tb.Errorf("UNSUBSCRIBE: %q, want %q", got, want)
			}
			if got := c.do("SET", ch, "v"); got != "+OK\r\n" {
				tb.Errorf("SET after unsubscribing: %q", got)
			}
		}},
		{name: "unsubscribe-resp3", end: func(tb testing.TB, c *rawClient, ch string) {
			c.send([]string{"UNSUBSCRIBE", ch}, []string{"SELECT", "2"}, []string{"GET", ch})
			for _, want := range []string{">3\r\n$11\r\nunsubscribe\r\n$" + strconv.Itoa(len(ch)) + "\r\n" + ch + "\r\n:0\r\n", "+OK\r\n", "_\r\n"} {
				if got := c.read(); got != want {
					tb.Errorf("got %q, want %q", got, want)
				}
			}
		}},
		{name: "reset", end: func(tb testing.TB, c *rawClient, ch string) {
			if got := c.do("RESET"); got != "+RESET\r\n" {
				tb.Errorf("RESET: %q", got)
			}
		}},
		{name: "client-leaves", end: func(tb testing.TB, c *rawClient, ch string) { c.nc.Close() }},
		{name: "upstream-kills", clientClosed: true, end: func(tb testing.TB, c *rawClient, ch string) {
			if got := direct.do("CLIENT", "KILL", "TYPE", "pubsub"); got == ":0\r\n" {
				tb.Errorf("CLIENT KILL TYPE pubsub upstream: %q", got)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, p.addr)
			sub := "*3\r\n$9\r\nsubscribe"
			if strings.HasSuffix(tc.name, "resp3") {
				c.do("HELLO", "3")
				sub = ">3\r\n$9\r\nsubscribe"
			}
			ch := "ch-" + tc.name
			if got := c.do("SUBSCRIBE", ch); !strings.HasPrefix(got, sub) {
				t.Fatalf("SUBSCRIBE: %q", got)
			}
			if got := numsub(direct, ch); got != ":1\r\n" {
				t.Fatalf("NUMSUB upstream after SUBSCRIBE: %q", got)
			}
			tc.end(t, c, ch)
			eventually(t, func() bool { return numsub(direct, ch) == ":0\r\n" })
			eventually(t, func() bool {
				return p.stats.pinned.Load() == 0
			})
			if tc.clientClosed {
				if r, err := c.tryRead(); err == nil {
					t.Fatalf("the client's connection is open after its upstream connection closed: read %q", r)
				}
			}
		})
	}
}

// Messages reach a subscriber as they are published, with nothing sent
// by the subscriber meanwhile, as Redis 7 does (the contract is silent on Pub/Sub).
func TestSubscriberGetsMessagesAtOnce(t *testing.T) {
	t.Parallel()
	up := testredis.Standalone(t)
	p := startTestProxy(t, "redis://"+up.Addr(), "")
	for _, proto := range []string{"2", "3"} {
		t.Run("resp"+proto, func(t *testing.T) {
			sub, pub := dialRaw(t, p.addr), dialRaw(t, p.addr)
			sub.do("HELLO", proto)
			sub.do("SUBSCRIBE", "news"+proto)
			head := map[string]string{"2": "*3", "3": ">3"}[proto]
			for i, msg := range []string{"one", "two", ""} {
				if got := pub.do("PUBLISH", "news"+proto, msg); got != ":1\r\n" {
					t.Fatalf("PUBLISH %d: %q", i, got)
				}
				want := head + "\r\n$7\r\nmessage\r\n$5\r\nnews" + proto + "\r\n$" + strconv.Itoa(len(msg)) + "\r\n" + msg + "\r\n"
				if got := sub.read(); got != want {
					t.Fatalf("message %d: %q, want %q", i, got, want)
				}
			}
		})
	}
}

// A subscriber that does not read is closed at client-output-buffer-limit
// pubsub, and neither the publisher nor the upstream connection waits
// for it, as Redis 7 does (the contract is silent on Pub/Sub).
func TestSlowSubscriberIsClosed(t *testing.T) {
	t.Parallel()
	up := testredis.Standalone(t)
	p := startTestProxy(t, "redis://"+up.Addr(), "")
	p.srv.SetPubsubLimit(resp.OutputLimit{Hard: 256 << 10})
	slow, pub, direct := dialRaw(t, p.addr), dialRaw(t, p.addr), dialRaw(t, up.Addr())
	if got := slow.do("SUBSCRIBE", "firehose"); got != "*3\r\n$9\r\nsubscribe\r\n$8\r\nfirehose\r\n:1\r\n" {
		t.Fatalf("SUBSCRIBE: %q", got)
	}
	if got := numsub(direct, "firehose"); got != ":1\r\n" {
		t.Fatalf("NUMSUB upstream after SUBSCRIBE: %q", got)
	}
	msg := strings.Repeat("x", 64<<10)
	// Far more than the limit and the sockets' buffers together: without
	// the limit the publisher would be held once they fill.
	for i := 0; i < 400; i++ {
		if got := pub.do("PUBLISH", "firehose", msg); got != ":1\r\n" && got != ":0\r\n" {
			t.Fatalf("PUBLISH %d: %q", i, got)
		}
	}
	eventually(t, func() bool { return numsub(direct, "firehose") == ":0\r\n" })
	eventually(t, func() bool { return p.stats.pinned.Load() == 0 })
	_ = slow.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, err := readReply(slow.br, nil); err != nil {
			break // closed, after what had been sent
		}
	}
	if got := pub.do("PING"); got != "+PONG\r\n" {
		t.Errorf("PING after: %q", got)
	}
}

// In a cluster, SUBSCRIBE and PSUBSCRIBE take the messages published
// through any node, SSUBSCRIBE those of its slot's owner, and an
// SSUBSCRIBE across slots is refused as Redis Cluster refuses it; a
// client's subscriptions stay on the node of its first one: the
// replies are those of a client connected to the owner directly, as Redis 7 does (the contract is silent on Pub/Sub).
func TestSubscribeThroughClusterProxy(t *testing.T) {
	t.Parallel()
	cl := testredis.StartCluster(t, 2, 0)
	p := startTestProxy(t, "redis-cluster://"+cl.Addrs()[0], "")
	owner := cl.MasterForKey("{s}a")
	elsewhere := ""
	for i := 0; elsewhere == ""; i++ {
		if ch := "other" + strconv.Itoa(i); cl.MasterForKey(ch) != owner {
			elsewhere = ch
		}
	}
	for _, proto := range []string{"2", "3"} {
		t.Run("resp"+proto, func(t *testing.T) {
			via, direct := dialRaw(t, p.addr), dialRaw(t, owner)
			pub := dialRaw(t, p.addr)
			for _, c := range []*rawClient{via, direct} {
				c.do("HELLO", proto)
			}
			for _, step := range []struct {
				args    []string
				publish []string // sent through the proxy before the replies are read
				replies int
			}{
				{args: []string{"SSUBSCRIBE", "{s}a", "{t}b"}, replies: 1},
				{args: []string{"SSUBSCRIBE", "{s}a", "{s}b"}, replies: 2},
				{args: []string{"SUBSCRIBE", "plain"}, replies: 1},
				{args: []string{"PSUBSCRIBE", "pat*"}, replies: 1},
				// The subscriptions' node answers for a shard channel of
				// another node's slot (README: one node per connection).
				{args: []string{"SSUBSCRIBE", elsewhere}, replies: 1},
				{publish: []string{"PUBLISH", "plain", "m1"}, replies: 1},
				{publish: []string{"PUBLISH", "pattern", "m2"}, replies: 1},
				{publish: []string{"SPUBLISH", "{s}b", "m3"}, replies: 1},
				{args: []string{"PING"}, replies: 1},
				{args: []string{"SUNSUBSCRIBE"}, replies: 2},
				{args: []string{"UNSUBSCRIBE"}, replies: 1},
				{args: []string{"PUNSUBSCRIBE"}, replies: 1},
				// Unsubscribed: the connection goes back to the pool, also
				// when the proxy answers the command itself.
				{args: []string{"SSUBSCRIBE", "{s}a", "{t}b"}, replies: 1},
				{args: []string{"PING"}, replies: 1},
				{args: []string{"GET", "{s}x"}, replies: 1},
			} {
				if step.args != nil {
					via.send(step.args)
					direct.send(step.args)
				}
				if step.publish != nil {
					// The count is the receiving node's (Redis Cluster
					// sends the message on to the others).
					if got := pub.do(step.publish...); got[0] != ':' {
						t.Fatalf("%v: %q", step.publish, got)
					}
				}
				for i := 0; i < step.replies; i++ {
					want := direct.read()
					got, err := via.tryRead()
					if err != nil {
						t.Fatalf("%v %v reply %d: proxy: %v, node %q", step.args, step.publish, i, err, want)
					}
					if got != want {
						t.Errorf("%v %v reply %d: proxy %q, node %q", step.args, step.publish, i, got, want)
					}
				}
			}
			eventually(t, func() bool { return p.stats.pinned.Load() == 0 })
		})
	}
}

// A RESP3 subscriber runs any command, in its database, in order with its
// messages; CLIENT REPLY OFF drops the replies of those sent to its
// subscribed connection, not the messages: as Redis 7 answers it directly.
func TestRESP3SubscriberCommands(t *testing.T) {
	t.Parallel()
	up := testredis.Standalone(t)
	p := startTestProxy(t, "redis://"+up.Addr(), "")
	msg := ">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n"
	steps := []struct {
		args []string
		want []string
	}{
		{[]string{"SUBSCRIBE", "c"}, []string{">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n"}},
		{[]string{"SET", "k", "db0"}, []string{"+OK\r\n"}},
		{[]string{"SELECT", "1"}, []string{"+OK\r\n"}},
		{[]string{"GET", "k"}, []string{"_\r\n"}},
		{[]string{"SET", "k", "db1"}, []string{"+OK\r\n"}},
		// A message of its own comes before its PUBLISH's reply.
		{[]string{"PUBLISH", "c", "m"}, []string{msg, ":1\r\n"}},
		{[]string{"SELECT", "0"}, []string{"+OK\r\n"}},
		{[]string{"GET", "k"}, []string{"$3\r\ndb0\r\n"}},
		{[]string{"CLIENT", "REPLY", "OFF"}, nil},
		{[]string{"PUBLISH", "c", "m"}, []string{msg}},
		{[]string{"CLIENT", "REPLY", "ON"}, []string{"+OK\r\n"}},
		{[]string{"ECHO", "after"}, []string{"$5\r\nafter\r\n"}},
	}
	// The same replies from the upstream directly and through the proxy.
	for _, side := range []struct{ name, addr string }{{"redis", up.Addr()}, {"proxy", p.addr}} {
		t.Run(side.name, func(t *testing.T) {
			c, other := dialRaw(t, side.addr), dialRaw(t, side.addr)
			other.do("FLUSHALL")
			c.do("HELLO", "3")
			for i, step := range steps {
				c.send(step.args)
				for _, want := range step.want {
					if got := c.read(); got != want {
						t.Fatalf("step %d %v: %q, want %q", i, step.args, got, want)
					}
				}
			}
			other.do("SELECT", "1")
			if got := other.do("GET", "k"); got != "$3\r\ndb1\r\n" {
				t.Errorf("GET k in db 1: %q", got)
			}
		})
	}
}

// CLIENT REPLY OFF, set before a RESP2 client subscribes, drops the
// replies of its PING and of the commands the Pub/Sub context refuses,
// not the confirmations and messages: as Redis 7 answers it directly.
func TestRESP2SilentSubscriber(t *testing.T) {
	t.Parallel()
	up := testredis.Standalone(t)
	p := startTestProxy(t, "redis://"+up.Addr(), "")
	for _, side := range []struct{ name, addr string }{{"redis", up.Addr()}, {"proxy", p.addr}} {
		t.Run(side.name, func(t *testing.T) {
			c, other := dialRaw(t, side.addr), dialRaw(t, side.addr)
			c.send([]string{"CLIENT", "REPLY", "OFF"}, []string{"SUBSCRIBE", "c"}, []string{"PING"}, []string{"GET", "x"},
				[]string{"SUBSCRIBE"}, []string{"PSUBSCRIBE", "d"})
			for _, want := range []string{"*3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n", "*3\r\n$10\r\npsubscribe\r\n$1\r\nd\r\n:2\r\n"} {
				if got := c.read(); got != want {
					t.Fatalf("%q, want %q", got, want)
				}
			}
			other.do("PUBLISH", "c", "m")
			if got, want := c.read(), "*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n"; got != want {
				t.Fatalf("%q, want %q", got, want)
			}
		})
	}
}
