package integration

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// pubsubMessage is the channel and payload of a message push (message,
// pmessage or smessage, RESP2 array or RESP3 push), ok false for any other
// frame.
func pubsubMessage(f *Frame) (channel, payload string, ok bool) {
	if (f.Type != '*' && f.Type != '>') || len(f.Elems) < 3 {
		return "", "", false
	}
	switch f.Elems[0].Str {
	case "message", "smessage":
		return f.Elems[1].Str, f.Elems[2].Str, len(f.Elems) == 3
	case "pmessage":
		return f.Elems[2].Str, f.Elems[3].Str, len(f.Elems) == 4
	}
	return "", "", false
}

// subscribeRaw opens a connection in protocol proto and runs a
// subscription command on it, reading its confirmation.
func subscribeRaw(tb testing.TB, addr string, proto int, args ...string) *RawConn {
	tb.Helper()
	c := DialRaw(tb, addr)
	if proto == 3 {
		if f, err := c.TryReadFrameAfter(EncodeCommand("HELLO", "3")); err != nil || f.Type != '%' {
			tb.Fatalf("HELLO 3: %v %v", f, err)
		}
	}
	f, err := c.TryReadFrameAfter(EncodeCommand(args...))
	if err != nil || len(f.Elems) != 3 || !strings.HasSuffix(f.Elems[0].Str, "subscribe") {
		tb.Fatalf("%v: %v %v", args, f, err)
	}
	return c
}

// Many publishers and subscribers at once: every subscriber gets every
// message exactly once, and each publisher's messages in the order it
// published them; every PUBLISH counts every subscriber. The server runs
// in this process, under the race detector with -race.
func TestPubsubManyPublishersAndSubscribers(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	subs := []struct {
		proto int
		args  []string
	}{
		{2, []string{"SUBSCRIBE", "ch"}},
		{3, []string{"SUBSCRIBE", "ch"}},
		{2, []string{"PSUBSCRIBE", "c?"}},
		{3, []string{"PSUBSCRIBE", "c?"}},
		{2, []string{"SUBSCRIBE", "other", "ch"}},
		{3, []string{"PSUBSCRIBE", "c*"}},
	}
	const publishers, each, batch = 4, 400, 50
	conns := make([]*RawConn, len(subs))
	for i, s := range subs {
		conns[i] = subscribeRaw(t, addr, s.proto, s.args...)
		if s.args[0] == "SUBSCRIBE" && len(s.args) == 3 {
			if f, err := conns[i].TryReadFrame(); err != nil || f.Elems[2].Str != "2" {
				t.Fatalf("second confirmation: %v %v", f, err)
			}
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(subs)+publishers)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Timeout = 20 * time.Second
			next := make([]int, publishers)
			for n := 0; n < publishers*each; n++ {
				f, err := c.TryReadFrame()
				if err != nil {
					errs <- fmt.Errorf("subscriber %d after %d messages: %w", i, n, err)
					return
				}
				ch, payload, ok := pubsubMessage(f)
				p, seq, ok2 := parsePubPayload(payload)
				if !ok || !ok2 || ch != "ch" {
					errs <- fmt.Errorf("subscriber %d: unexpected %q", i, f.Raw)
					return
				}
				if seq != next[p] {
					errs <- fmt.Errorf("subscriber %d: publisher %d's message %d came when %d was next", i, p, seq, next[p])
					return
				}
				next[p]++
			}
		}()
	}
	for p := 0; p < publishers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dialRaw(addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			c.Timeout = 20 * time.Second
			for start := 0; start < each; start += batch {
				var out []byte
				for seq := start; seq < start+batch; seq++ {
					out = append(out, EncodeCommand("PUBLISH", "ch", fmt.Sprintf("%d:%d", p, seq))...)
				}
				if err := c.TrySend(out); err != nil {
					errs <- err
					return
				}
				for range batch {
					f, err := c.TryReadFrame()
					if err != nil || f.Str != strconv.Itoa(len(subs)) {
						errs <- fmt.Errorf("publisher %d: PUBLISH answered %v %v, want %d receivers", p, f, err, len(subs))
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	admin := DialRaw(t, addr)
	if got := string(admin.Do("PUBSUB", "NUMSUB", "ch", "other")); got != "*4\r\n$2\r\nch\r\n:3\r\n$5\r\nother\r\n:1\r\n" {
		t.Errorf("PUBSUB NUMSUB after: %q", got)
	}
}

// parsePubPayload reads "publisher:seq".
func parsePubPayload(s string) (p, seq int, ok bool) {
	a, b, found := strings.Cut(s, ":")
	p, err1 := strconv.Atoi(a)
	seq, err2 := strconv.Atoi(b)
	return p, seq, found && err1 == nil && err2 == nil
}

// A subscriber that never reads is closed once its pending messages pass
// client-output-buffer-limit pubsub (32mb hard by default, or as set at
// startup or by CONFIG SET), as Redis closes it; meanwhile PUBLISH never
// waits for it, another subscriber of the same channel gets every message,
// and other clients are served.
func TestPubsubSlowSubscriberIsClosed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		args  []string // the server's directives
		set   string   // CONFIG SET client-output-buffer-limit, if any
		limit int      // the hard limit in force
	}{
		{"default", nil, "", 32 << 20},
		{"at startup", []string{"--client-output-buffer-limit", "pubsub 1mb 0 0"}, "", 1 << 20},
		{"CONFIG SET", nil, "pubsub 2mb 0 0", 2 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) { slowSubscriber(t, onceServer(t, tc.args...), tc.set, tc.limit) })
	}
}

func slowSubscriber(t *testing.T, addr, set string, limit int) {
	other := DialRaw(t, addr)
	if set != "" {
		if got := string(other.Do("CONFIG", "SET", "client-output-buffer-limit", set)); got != "+OK\r\n" {
			t.Fatalf("CONFIG SET: %q", got)
		}
	}
	slow := subscribeRaw(t, addr, 2, "SUBSCRIBE", "news")
	fast := subscribeRaw(t, addr, 3, "SUBSCRIBE", "news")
	pub := DialRaw(t, addr)
	const size, most = 64 << 10, 2000 // at most 125 MiB published
	msg := strings.Repeat("m", size)
	got := make(chan int, 1)
	go func() {
		fast.Timeout = 20 * time.Second
		n := 0
		for {
			f, err := fast.TryReadFrame()
			if err != nil {
				got <- n
				return
			}
			if _, p, ok := pubsubMessage(f); ok && len(p) == size {
				n++
			} else if len(f.Elems) == 3 && f.Elems[0].Str == "unsubscribe" {
				got <- n
				return
			}
		}
	}()
	published, dropped := 0, false
	for published < most && !dropped {
		start := time.Now()
		f, err := pub.TryReadFrameAfter(EncodeCommand("PUBLISH", "news", msg))
		if err != nil {
			t.Fatalf("PUBLISH %d: %v", published, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("PUBLISH %d took %v: it waited for the slow subscriber", published, d)
		}
		published++
		switch f.Str {
		case "2":
		case "1":
			dropped = true // the slow one is gone
		default:
			t.Fatalf("PUBLISH %d answered %q", published, f.Raw)
		}
		if published%100 == 0 {
			if f, err := other.TryReadFrameAfter(EncodeCommand("PING")); err != nil || f.Str != "PONG" {
				t.Fatalf("another client's PING after %d messages: %v %v", published, f, err)
			}
		}
	}
	if !dropped {
		t.Fatalf("a subscriber that never read was still subscribed after %d messages of %d bytes", published, size)
	}
	if published*size < limit {
		t.Errorf("the slow subscriber was closed after %d bytes, under the %d-byte hard limit", published*size, limit)
	}
	t.Logf("closed after %d messages (%d MiB)", published, published*size>>20)
	if got := string(other.Do("PUBSUB", "NUMSUB", "news")); got != "*2\r\n$4\r\nnews\r\n:1\r\n" {
		t.Errorf("PUBSUB NUMSUB news: %q, want the fast subscriber only", got)
	}
	// The slow client reads what reached its socket, then the end.
	_ = slow.Conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.Copy(io.Discard, slow.Conn); err != nil && !isReset(err) {
		t.Errorf("the slow subscriber's connection did not end: %v", err)
	}
	// The fast one got every message, before its UNSUBSCRIBE's reply.
	if err := fast.TrySend(EncodeCommand("UNSUBSCRIBE")); err != nil {
		t.Fatal(err)
	}
	if n := <-got; n != published {
		t.Errorf("the other subscriber got %d messages of %d", n, published)
	}
}

// CLIENT LIST shows a subscriber's P flag and its sub, psub and ssub
// counts, TYPE pubsub lists the subscribers only and TYPE normal the
// others; INFO stats counts the channels, patterns and shard channels
// with a subscriber, as Redis 7.0 names them. (Redis's lines differ in
// fields this server does not track, so they are checked here rather
// than compared.)
func TestPubsubClientListAndInfo(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	admin := DialRaw(t, addr)
	for _, tc := range []struct {
		name   string
		cmds   [][]string // run on a new connection, in order
		fields string     // expected in its CLIENT LIST line
		typ    string     // its type
		info   string     // INFO stats lines, with no one else subscribed
	}{
		{"channels", [][]string{{"SUBSCRIBE", "a", "b"}}, "flags=P db=0 sub=2 psub=0 ssub=0 multi=-1", "pubsub",
			"pubsub_channels:2\r\npubsub_patterns:0\r\npubsubshard_channels:0\r\n"},
		{"patterns", [][]string{{"PSUBSCRIBE", "a*"}}, "flags=P db=0 sub=0 psub=1 ssub=0", "pubsub",
			"pubsub_channels:0\r\npubsub_patterns:1\r\npubsubshard_channels:0\r\n"},
		{"shard", [][]string{{"SSUBSCRIBE", "s"}, {"SUBSCRIBE", "a"}}, "flags=P db=0 sub=1 psub=0 ssub=1", "pubsub",
			"pubsub_channels:1\r\npubsub_patterns:0\r\npubsubshard_channels:1\r\n"},
		{"unsubscribed", [][]string{{"SUBSCRIBE", "a"}, {"UNSUBSCRIBE"}}, "flags=N db=0 sub=0 psub=0 ssub=0", "normal",
			"pubsub_channels:0\r\npubsub_patterns:0\r\npubsubshard_channels:0\r\n"},
		{"reset", [][]string{{"PSUBSCRIBE", "a*"}, {"RESET"}}, "flags=N db=0 sub=0 psub=0 ssub=0", "normal",
			"pubsub_channels:0\r\npubsub_patterns:0\r\npubsubshard_channels:0\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DialRaw(t, addr)
			id := strings.TrimSuffix(strings.TrimPrefix(string(c.Do("CLIENT", "ID")), ":"), "\r\n")
			for _, args := range tc.cmds {
				c.Do(args...)
				// Read the confirmations after the first.
				for n := 2; n < len(args) && strings.HasSuffix(strings.ToLower(args[0]), "subscribe"); n++ {
					if _, err := c.TryReadFrame(); err != nil {
						t.Fatal(err)
					}
				}
			}
			list := admin.ReadFrameAfterDo(t, "CLIENT", "LIST", "ID", id).Str
			if !strings.Contains(list, " "+tc.fields+" ") {
				t.Errorf("CLIENT LIST: %q, want %q", list, tc.fields)
			}
			for _, typ := range []string{"pubsub", "normal"} {
				listed := strings.Contains(admin.ReadFrameAfterDo(t, "CLIENT", "LIST", "TYPE", typ).Str, "id="+id+" ")
				if listed != (typ == tc.typ) {
					t.Errorf("CLIENT LIST TYPE %s lists it: %v; its type is %s", typ, listed, tc.typ)
				}
			}
			stats := admin.ReadFrameAfterDo(t, "INFO", "stats").Str
			if !strings.Contains(stats, tc.info) {
				t.Errorf("INFO stats lacks %q:\n%s", tc.info, stats)
			}
			c.Close()
			// Its subscriptions go with it.
			deadline := time.Now().Add(5 * time.Second)
			for !strings.Contains(admin.ReadFrameAfterDo(t, "INFO", "stats").Str,
				"pubsub_channels:0\r\npubsub_patterns:0\r\npubsubshard_channels:0\r\n") {
				if time.Now().After(deadline) {
					t.Fatal("the closed subscriber's subscriptions are still counted")
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// A RESP3 subscriber blocked in a command (ONCE.WAIT here, BLPOP in
// Redis) is sent the messages published meanwhile at once, before the
// blocked command's reply, as Redis sends them (KV-10's waiter still gets
// its answer the moment the run completes).
func TestPubsubMessagesReachABlockedSubscriber(t *testing.T) {
	t.Parallel()
	addr := onceServer(t)
	for _, tc := range []struct {
		name     string
		messages int
	}{
		{"one message", 1},
		{"several", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "blocked:" + strings.ReplaceAll(tc.name, " ", "-")
			runner := DialRaw(t, addr)
			claim := runner.ReadFrameAfterDo(t, "ONCE.CLAIM", key, "LEASE", "30000")
			if len(claim.Elems) != 2 || claim.Elems[0].Str != "claimed" {
				t.Fatalf("ONCE.CLAIM: %q", claim.Raw)
			}
			sub := subscribeRaw(t, addr, 3, "SUBSCRIBE", key)
			sub.Timeout = 2 * time.Second
			if err := sub.TrySend(EncodeCommand("ONCE.WAIT", key, "TIMEOUT", "20000")); err != nil {
				t.Fatal(err)
			}
			// Blocked once the server counts it so.
			deadline := time.Now().Add(5 * time.Second)
			for !strings.Contains(runner.ReadFrameAfterDo(t, "INFO", "clients").Str, "blocked_clients:1\r\n") {
				if time.Now().After(deadline) {
					t.Fatal("ONCE.WAIT did not block")
				}
				time.Sleep(5 * time.Millisecond)
			}
			pub := DialRaw(t, addr)
			for i := range tc.messages {
				if got := string(pub.Do("PUBLISH", key, "m"+strconv.Itoa(i))); got != ":1\r\n" {
					t.Fatalf("PUBLISH: %q", got)
				}
				f, err := sub.TryReadFrame()
				if err != nil {
					t.Fatalf("message %d while blocked: %v", i, err)
				}
				if ch, p, ok := pubsubMessage(f); !ok || f.Type != '>' || ch != key || p != "m"+strconv.Itoa(i) {
					t.Fatalf("message %d while blocked: %q", i, f.Raw)
				}
			}
			if got := string(runner.Do("ONCE.COMPLETE", key, claim.Elems[1].Str, "answer")); got != "+OK\r\n" {
				t.Fatalf("ONCE.COMPLETE: %q", got)
			}
			if f, err := sub.TryReadFrame(); err != nil || len(f.Elems) != 2 || f.Elems[0].Str != "done" || f.Elems[1].Str != "answer" {
				t.Fatalf("ONCE.WAIT's answer: %v %v", f, err)
			}
			// Still subscribed, and served as before.
			if got := string(pub.Do("PUBLISH", key, "after")); got != ":1\r\n" {
				t.Fatalf("PUBLISH after: %q", got)
			}
			if f, err := sub.TryReadFrame(); err != nil {
				t.Fatal(err)
			} else if _, p, ok := pubsubMessage(f); !ok || p != "after" {
				t.Fatalf("message after the wait: %q", f.Raw)
			}
		})
	}
}
