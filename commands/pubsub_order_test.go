package commands

import (
	"fmt"
	"strings"
	"testing"

	"github.com/oncekv/oncekv/resp"
)

// TestPublishPatternsInByteOrder: a message on a channel that several
// patterns match comes once per pattern, the patterns in byte order
// (README, "Pub/Sub"), the same order every time (Redis 7.0 sends them in
// its hash table's order, which depends on its random hash seed).
func TestPublishPatternsInByteOrder(t *testing.T) {
	for _, tt := range []struct {
		name     string
		patterns []string
		channel  string
		want     []string // the patterns that match, in byte order
	}{
		{"all-match", []string{"*", "a*", "?b", "ab", "[a]b", "*b", "a?"}, "ab",
			[]string{"*", "*b", "?b", "[a]b", "a*", "a?", "ab"}},
		{"some-match", []string{"z*", "?", "\\\\", "[\\\\]", "*"}, "\\",
			[]string{"*", "?", "[\\\\]", "\\\\"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := onceServer(t)
			c := &resp.Conn{W: resp.NewWriter(3), Authed: true}
			send(srv, c, "HELLO", "3")
			send(srv, c, append([]string{"PSUBSCRIBE"}, tt.patterns...)...)
			var want strings.Builder
			for _, p := range tt.want {
				fmt.Fprintf(&want, ">4\r\n$8\r\npmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$1\r\nm\r\n",
					len(p), p, len(tt.channel), tt.channel)
			}
			fmt.Fprintf(&want, ":%d\r\n", len(tt.want))
			for i := range 20 {
				if got := send(srv, c, "PUBLISH", tt.channel, "m"); got != want.String() {
					t.Fatalf("PUBLISH %d: %q, want %q", i, got, want.String())
				}
			}
		})
	}
}
