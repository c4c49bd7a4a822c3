package integration

import (
	"testing"

	"github.com/oncekv/oncekv/internal/testredis"
)

// Client-side caching (CLIENT TRACKING, CACHING, GETREDIR, TRACKINGINFO)
// is not supported, embedded or as a proxy (README, client-side caching):
// each answers Redis's unknown-subcommand error, which a client library
// reports as it is. rueidis and valkey-go send HELLO 3 and CLIENT
// TRACKING ON OPTIN, pipelined, on every new connection unless
// DisableCache is set: the HELLO is answered, TRACKING gets the error
// (NewClient fails with it), and the connection goes on working.
func TestClientTrackingIsNotSupported(t *testing.T) {
	t.Parallel()
	up := testredis.Standalone(t)
	servers := map[string]string{
		"embedded": StartOncekv(t).Addr,
		"proxy":    startProxy(t, "redis://"+up.Addr()).Addr,
	}
	unknown := func(sub string) string { return "-ERR unknown subcommand '" + sub + "'. Try CLIENT HELP.\r\n" }
	for name, addr := range servers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := DialRaw(t, addr)
			// The handshake of rueidis's pipe, as one write.
			c.Send(append(EncodeCommand("HELLO", "3"), EncodeCommand("CLIENT", "TRACKING", "ON", "OPTIN")...))
			if f, err := c.TryReadFrame(); err != nil || f.Type != '%' {
				t.Fatalf("HELLO 3: %+v, %v", f, err)
			}
			if got := string(c.ReadReply()); got != unknown("TRACKING") {
				t.Errorf("CLIENT TRACKING ON OPTIN after HELLO 3: %q, want %q", got, unknown("TRACKING"))
			}
			for _, tc := range []struct {
				args []string
				want string
			}{
				{[]string{"CLIENT", "TRACKING", "ON"}, unknown("TRACKING")},
				{[]string{"client", "tracking", "on", "bcast", "prefix", "a"}, unknown("tracking")},
				{[]string{"CLIENT", "TRACKING", "OFF"}, unknown("TRACKING")},
				{[]string{"CLIENT", "CACHING", "YES"}, unknown("CACHING")},
				{[]string{"CLIENT", "GETREDIR"}, unknown("GETREDIR")},
				{[]string{"CLIENT", "TRACKINGINFO"}, unknown("TRACKINGINFO")},
				{[]string{"SET", "k", "v"}, "+OK\r\n"},
				{[]string{"GET", "k"}, "$1\r\nv\r\n"},
			} {
				if got := string(c.Do(tc.args...)); got != tc.want {
					t.Errorf("%s: %q, want %q", fmtArgs(tc.args), got, tc.want)
				}
			}
		})
	}
}
