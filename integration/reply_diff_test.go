package integration

// CLIENT REPLY ON|OFF|SKIP, compared with redis-server 7.0 byte for byte:
// everything a connection is sent (or not sent) after the replies are
// turned off or skipped, in pipelines that mix replies the server writes
// at once with those it writes later (the proxy's forwarded commands).

import (
	"strings"
	"testing"

	"github.com/oncekv/oncekv/internal/testredis"
)

// TestClientReplyInMulti pins a deliberate difference: CLIENT REPLY is
// refused inside MULTI, and the transaction with it (as Valkey 9 does),
// where redis-server 7.0 queues it and then sends an EXEC array with fewer
// elements than it announces.
func TestClientReplyInMulti(t *testing.T) {
	t.Parallel()
	for _, srv := range []struct {
		name string
		addr func(testing.TB) string
	}{
		{"embedded", func(tb testing.TB) string { return StartOncekv(tb).Addr }},
		{"proxy", func(tb testing.TB) string { return startProxy(tb, "redis://"+testredis.Standalone(tb).Addr()).Addr }},
	} {
		t.Run(srv.name, func(t *testing.T) {
			c := DialRaw(t, srv.addr(t))
			for _, step := range []struct{ args, want string }{
				{"SET k 1", "+OK\r\n"},
				{"MULTI", "+OK\r\n"},
				{"INCR k", "+QUEUED\r\n"},
				{"CLIENT REPLY OFF", "-ERR Command not allowed inside a transaction\r\n"},
				{"EXEC", "-EXECABORT Transaction discarded because of previous errors.\r\n"},
				{"MULTI", "+OK\r\n"},
				{"CLIENT REPLY ON", "-ERR Command not allowed inside a transaction\r\n"},
				{"DISCARD", "+OK\r\n"},
				{"GET k", "$1\r\n1\r\n"},
			} {
				wantReply(t, c, step.want, strings.Fields(step.args)...)
			}
		})
	}
}
