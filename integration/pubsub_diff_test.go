package integration

import "testing"

// TestDiffPubsub: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE, their UNSUBSCRIBEs,
// PUBLISH, SPUBLISH and PUBSUB against a real redis-server 7.0, byte for
// byte, in RESP2 and RESP3, on several connections: the confirmations,
// the messages a subscriber is pushed, the RESP2 Pub/Sub context (only
// (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PING, QUIT and RESET), MULTI, RESET,
// HELLO, CLIENT PAUSE and CLIENT KILL of a subscriber. Connection 1 (and
// 2) subscribe; connection 0 publishes. A message is read on its
// subscriber's connection with readNext after the PUBLISH that sent it.
func TestDiffPubsub(t *testing.T) {
	t.Parallel()
	RunDiffScripts(t, pubsubScripts())
}

// pubsubScripts are TestDiffPubsub's scripts (TestProxyDiffPubsub runs
// them through the proxy).
func pubsubScripts() []Script {
	return []Script{
		{"subscribe", []Step{
			cmd("SUBSCRIBE", "a", "b").On(1),
			readNext().On(1),
			cmd("PUBLISH", "a", "hello"),
			readNext().On(1),
			cmd("PUBLISH", "b", ""),
			readNext().On(1),
			cmd("PUBLISH", "nobody", "x"),
			cmd("PUBSUB", "NUMSUB", "a", "b", "c"),
			cmd("PUBSUB", "NUMSUB"),
			sorted("PUBSUB", "CHANNELS"),
			cmd("PUBSUB", "CHANNELS", "a*"),
			cmd("PUBSUB", "NUMPAT"),
			cmd("SUBSCRIBE", "a").On(1), // again: the count stays
			// The RESP2 Pub/Sub context; RESP3 allows any command.
			cmd("GET", "x").On(1),
			cmd("CLIENT", "ID").On(1).InResp(2),
			cmd("PING").On(1),
			cmd("PING", "hi").On(1),
			cmd("PING", "a", "b").On(1),
			cmd("ECHO", "x").On(1),
			cmd("NOSUCH").On(1),
			cmd("SUBSCRIBE").On(1),
			cmd("UNSUBSCRIBE", "a", "zzz").On(1),
			readNext().On(1),
			cmd("PUBLISH", "a", "gone"),
			cmd("PUBLISH", "b", "still"),
			readNext().On(1),
			cmd("UNSUBSCRIBE").On(1),
			// Nothing left: a nil channel and a count of 0.
			cmd("UNSUBSCRIBE").On(1),
			cmd("PUNSUBSCRIBE").On(1),
			cmd("SUNSUBSCRIBE").On(1),
			cmd("GET", "x").On(1),
			cmd("PUBSUB", "NUMSUB", "a", "b"),
			cmd("PUBSUB", "CHANNELS"),
		}},
		{"several-subscribers", []Step{
			cmd("SUBSCRIBE", "ch").On(1),
			cmd("SUBSCRIBE", "ch", "other").On(2),
			readNext().On(2),
			cmd("PUBLISH", "ch", "m1"),
			readNext().On(1),
			readNext().On(2),
			cmd("PUBLISH", "ch", "m2"),
			readNext().On(1),
			readNext().On(2),
			cmd("PUBLISH", "other", "m3"),
			readNext().On(2),
			cmd("PUBSUB", "NUMSUB", "ch", "other"),
			// A subscriber publishes (RESP3 only: RESP2 refuses it):
			// its own message comes before its PUBLISH's reply.
			cmd("PUBLISH", "ch", "self").On(1).InResp(3),
			readNext().On(1).InResp(3),
			readNext().On(2).InResp(3),
			cmd("PUBLISH", "ch", "binary\x00\r\nmsg"),
			readNext().On(1),
			readNext().On(2),
		}},
		{"patterns", []Step{
			cmd("PSUBSCRIBE", "a*", "h?llo").On(1),
			readNext().On(1),
			cmd("PUBLISH", "hello", "x"),
			readNext().On(1),
			cmd("PUBLISH", "abc", "y"),
			readNext().On(1),
			cmd("SUBSCRIBE", "abc").On(1), // counts channels and patterns
			cmd("PUBLISH", "abc", "z"),
			readNext().On(1), // the channel's message first
			readNext().On(1), // then the pattern's
			cmd("PUBSUB", "NUMPAT"),
			cmd("PSUBSCRIBE", "[xy]z", "a*").On(2),
			readNext().On(2),
			cmd("PUBSUB", "NUMPAT"), // unique patterns
			cmd("PUBLISH", "yz", "w"),
			readNext().On(2),
			cmd("PUBLISH", "", "empty"), // "*"-like patterns do not match ""
			cmd("PUBSUB", "CHANNELS", "*"),
			cmd("PUBSUB", "NUMSUB", "a*"), // patterns are not channels
			cmd("PUNSUBSCRIBE", "a*").On(1),
			cmd("PUNSUBSCRIBE", "nothere").On(1),
			cmd("PUNSUBSCRIBE").On(1),
			cmd("GET", "x").On(1),
			cmd("UNSUBSCRIBE").On(1),
			cmd("GET", "x").On(1),
			cmd("PUBLISH", "ax", "v"),
			readNext().On(2),
		}},
		{"shard", []Step{
			cmd("SSUBSCRIBE", "s1", "s2").On(1),
			readNext().On(1),
			cmd("SPUBLISH", "s1", "m"),
			readNext().On(1),
			cmd("PUBLISH", "s1", "m"), // another namespace
			cmd("SUBSCRIBE", "c").On(1),
			cmd("PSUBSCRIBE", "s*").On(1),
			cmd("SPUBLISH", "s2", "n"), // patterns see no shard message
			readNext().On(1),
			sorted("PUBSUB", "SHARDCHANNELS"),
			cmd("PUBSUB", "SHARDCHANNELS", "s1*"),
			cmd("PUBSUB", "SHARDNUMSUB", "s1", "s3"),
			cmd("PUBSUB", "CHANNELS"),
			cmd("UNSUBSCRIBE").On(1),
			cmd("PUNSUBSCRIBE").On(1),
			// Shard channels keep the client in the Pub/Sub context.
			cmd("GET", "x").On(1),
			cmd("SUNSUBSCRIBE", "s1").On(1),
			cmd("SUNSUBSCRIBE").On(1),
			cmd("SUNSUBSCRIBE").On(1),
			cmd("GET", "x").On(1),
			cmd("PUBSUB", "SHARDNUMSUB", "s1"),
		}},
		{"args", []Step{
			cmd("SUBSCRIBE"),
			cmd("PSUBSCRIBE"),
			cmd("SSUBSCRIBE"),
			cmd("PUBLISH", "a"),
			cmd("PUBLISH", "a", "b", "c"),
			cmd("SPUBLISH", "a"),
			cmd("PUBSUB"),
			cmd("PUBSUB", "FOO"),
			cmd("PUBSUB", "CHANNELS", "a", "b"),
			cmd("PUBSUB", "SHARDCHANNELS", "a", "b"),
			cmd("PUBSUB", "NUMPAT", "x"),
			cmd("PUBSUB", "HELP"),
			cmd("PUBSUB", "HELP", "x"),
			cmd("pubsub", "numsub", "x"),
			cmd("COMMAND", "INFO", "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "publish"),
			cmd("COMMAND", "INFO", "ssubscribe", "sunsubscribe", "spublish"),
			cmd("COMMAND", "INFO", "pubsub|channels", "pubsub|numsub", "pubsub|numpat", "pubsub|help"),
			cmd("COMMAND", "INFO", "pubsub|shardchannels", "pubsub|shardnumsub"),
			cmd("COMMAND", "DOCS", "subscribe", "psubscribe", "ssubscribe", "spublish"),
		}},
		{"multi", []Step{
			cmd("SUBSCRIBE", "c").On(1),
			cmd("MULTI"),
			cmd("PUBLISH", "c", "x"),
			cmd("PUBLISH", "c", "y"),
			cmd("EXEC"),
			readNext().On(1),
			readNext().On(1),
			// SUBSCRIBE inside MULTI subscribes at EXEC; the PING after
			// it in the same EXEC answers as a subscriber's.
			cmd("MULTI").On(2),
			cmd("SUBSCRIBE", "d").On(2),
			cmd("PING").On(2),
			cmd("EXEC").On(2),
			cmd("PUBLISH", "d", "z"),
			readNext().On(2),
			cmd("MULTI").On(1), // refused in the RESP2 context
			cmd("EXEC").On(1),
			cmd("RESET").On(2),
			cmd("RESET").On(1),
		}},
		{"reset-hello-quit", []Step{
			cmd("SUBSCRIBE", "a").On(1),
			cmd("RESET").On(1),
			cmd("PUBLISH", "a", "x"),
			cmd("GET", "x").On(1),
			cmd("SUBSCRIBE", "a").On(2),
			// RESP2 refuses HELLO in the Pub/Sub context; from RESP3,
			// HELLO 2 switches the subscriber to arrays.
			typeOnly("HELLO", "2").On(2),
			cmd("PUBLISH", "a", "y"),
			readNext().On(2),
			cmd("GET", "x").On(2),
			cmd("HELLO", "3", "AUTH", "default", "wrong").On(2),
			cmd("QUIT").On(2),
			// Through a proxy the subscription is on an upstream
			// connection that the proxy closes after QUIT's reply, and
			// the upstream drops it when it reads the close (README,
			// proxy): the count is asked once that has had time.
			sleep(100),
			cmd("PUBSUB", "NUMSUB", "a"),
		}},
		// CLIENT PAUSE WRITE holds PUBLISH (Redis flags it
		// may_replicate), not the subscription commands; ALL holds them
		// too.
		{"pause", []Step{
			cmd("SUBSCRIBE", "c").On(1),
			cmd("CLIENT", "PAUSE", "100000", "WRITE"),
			held("PUBLISH", "c", "x").On(2),
			cmd("PUBSUB", "NUMSUB", "c"),
			cmd("SUBSCRIBE", "d").On(1),
			cmd("CLIENT", "UNPAUSE"),
			readNext().On(2),
			readNext().On(1),
			// ALL holds CLIENT UNPAUSE too: a deadline ends it. (The
			// connection is opened first: in RESP3 its HELLO would be
			// held.)
			cmd("PING").On(3),
			cmd("CLIENT", "PAUSE", "1000", "ALL"),
			held("SUBSCRIBE", "e").On(3),
			readNext().On(3),
		}},
		// client-output-buffer-limit: the pubsub class is enforced
		// (pubsub_test.go); CONFIG SET and GET are Redis's for every
		// class. The script puts the defaults back.
		{"output-buffer-limit-config", []Step{
			cmd("CONFIG", "GET", "client-output-buffer-limit"),
			cmd("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 512kb 10"),
			cmd("CONFIG", "GET", "client-output-buffer-limit"),
			cmd("CONFIG", "SET", "client-output-buffer-limit", "PUBSUB 2MB 0 0 replica 1gb 1k 5"),
			cmd("CONFIG", "GET", "client-output-buffer-limit"),
			cmd("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb"),
			cmd("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 0 0 master 1 1 1"),
			cmd("CONFIG", "SET", "client-output-buffer-limit", "pubsub -1 0 0"),
			cmd("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 1.5 0"),
			cmd("CONFIG", "SET", "client-output-buffer-limit", "nobody 1 1 1"),
			cmd("CONFIG", "GET", "client-output-buffer-limit"),
			cmd("CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0 slave 256mb 64mb 60 pubsub 32mb 8mb 60"),
			cmd("CONFIG", "GET", "client-output-buffer-limit"),
		}},
		// AUTH: a subscriber connected before the password keeps getting
		// its messages; a new connection must AUTH before it subscribes;
		// RESET leaves the subscriber unauthenticated and unsubscribed.
		// RESP2 only: a new RESP3 connection starts with HELLO 3, which
		// the password refuses.
		{"auth", []Step{
			cmd("SUBSCRIBE", "a").On(1).InResp(2),
			cmd("CONFIG", "SET", "requirepass", "s3cret").InResp(2),
			cmd("PUBLISH", "a", "x").InResp(2),
			readNext().On(1).InResp(2),
			cmd("SUBSCRIBE", "a").On(2).InResp(2),
			cmd("PING").On(2).InResp(2),
			cmd("PUBLISH", "a", "y").On(2).InResp(2),
			cmd("AUTH", "s3cret").On(2).InResp(2),
			cmd("SUBSCRIBE", "a").On(2).InResp(2),
			cmd("RESET").On(1).InResp(2),
			cmd("SUBSCRIBE", "a").On(1).InResp(2),
			cmd("PING").On(1).InResp(2),
			cmd("PUBLISH", "a", "z").InResp(2),
			readNext().On(2).InResp(2),
			cmd("AUTH", "s3cret").On(1).InResp(2),
			cmd("CONFIG", "SET", "requirepass", "").InResp(2),
		}},
		// CLIENT REPLY OFF and SKIP drop replies, not pushes: Redis 7.0
		// sends the (un)subscribe confirmations and the messages, a
		// subscriber's own included, whatever CLIENT REPLY says. (RESP2
		// refuses CLIENT in the Pub/Sub context: it silences first.)
		{"client-reply", []Step{
			held("CLIENT", "REPLY", "OFF").On(1),
			cmd("SUBSCRIBE", "a", "b").On(1),
			readNext().On(1),
			cmd("PUBLISH", "a", "x"),
			readNext().On(1),
			cmd("PUBLISH", "a", "self").On(1).InResp(3),
			cmd("UNSUBSCRIBE", "a").On(1).InResp(3),
			cmd("PSUBSCRIBE", "p*").On(1).InResp(3),
			cmd("CLIENT", "REPLY", "ON").On(1).InResp(3),
			held("CLIENT", "REPLY", "SKIP").On(1).InResp(3),
			cmd("PUBLISH", "b", "self").On(1).InResp(3),
			cmd("PING").On(1).InResp(3),
			held("CLIENT", "REPLY", "SKIP").On(2),
			cmd("SSUBSCRIBE", "s").On(2),
			cmd("SPUBLISH", "s", "y"),
			readNext().On(2),
			cmd("RESET").On(1),
			cmd("RESET").On(2),
		}},
		{"kill", []Step{
			cmd("SUBSCRIBE", "c").On(1),
			cmd("PSUBSCRIBE", "p*").On(2),
			cmd("SET", "k", "v").On(3),
			cmd("CLIENT", "KILL", "TYPE", "pubsub"),
			closed(1),
			closed(2),
			cmd("PUBSUB", "NUMSUB", "c"),
			cmd("PUBSUB", "NUMPAT"),
			cmd("PUBLISH", "c", "nobody"),
			cmd("GET", "k").On(3),
		}},
	}
}
