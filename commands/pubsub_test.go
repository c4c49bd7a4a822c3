package commands

import (
	"testing"

	"github.com/oncekv/oncekv/resp"
)

// TestPubsubEndsAfterItsMessages: a command that ends a subscription
// answers after the messages the subscription was pushed up to then,
// never before them, as in Redis, where a message is published between
// two commands: a pooled connection that RESET, or a client that read
// its UNSUBSCRIBE's confirmation, reads no message of the subscription
// after that. Here the message reaches the subscriber's outbox (as
// another connection's PUBLISH pushes it, while the command runs) just
// before the command: it must come before the command's reply.
func TestPubsubEndsAfterItsMessages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		proto int
		end   []string
		want  string
	}{
		{"RESET", 2, []string{"RESET"},
			"*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n+RESET\r\n"},
		{"RESET from RESP3", 3, []string{"RESET"},
			">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n+RESET\r\n"},
		{"UNSUBSCRIBE", 2, []string{"UNSUBSCRIBE", "c"},
			"*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n*3\r\n$11\r\nunsubscribe\r\n$1\r\nc\r\n:0\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := onceServer(t)
			pub := &resp.Conn{W: resp.NewWriter(2), Authed: true}
			sub := &resp.Conn{W: resp.NewWriter(2), Authed: true}
			if tc.proto == 3 {
				send(srv, sub, "HELLO", "3")
			}
			send(srv, sub, "SUBSCRIBE", "c")
			if r := send(srv, pub, "PUBLISH", "c", "m"); r != ":1\r\n" {
				t.Fatalf("PUBLISH: %q", r)
			}
			if r := send(srv, sub, tc.end...); r != tc.want {
				t.Errorf("%v after a message: %q, want %q", tc.end, r, tc.want)
			}
		})
	}
}
