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

// replyExchanges use strings and transactions only, which the embedded
// server and a proxy both serve. Not compared: QUIT while the replies are
// off, after which redis-server 7.0 keeps the connection open and reads
// nothing more of it (oncekv closes it, as QUIT asks).
func replyExchanges() []exchange {
	return []exchange{
		{name: "off-then-on", chunks: []string{"CLIENT REPLY OFF\r\nSET k 1\r\nGET k\r\n", "NOSUCH\r\nCLIENT REPLY bogus\r\nSET k\r\n", "CLIENT REPLY ON\r\nGET k\r\n"}},
		{name: "skip-one", chunks: []string{"SET k 0\r\n", "CLIENT REPLY SKIP\r\nGET k\r\nSET k 2\r\nGET k\r\n"}},
		{name: "skip-skip", chunks: []string{"CLIENT REPLY SKIP\r\nCLIENT REPLY SKIP\r\nGET k\r\nGET k\r\nPING\r\n"}},
		{name: "skip-then-on", chunks: []string{"CLIENT REPLY SKIP\r\nCLIENT REPLY ON\r\nPING\r\n"}},
		{name: "skip-while-off", chunks: []string{"CLIENT REPLY OFF\r\nCLIENT REPLY SKIP\r\nPING\r\n", "CLIENT REPLY ON\r\nPING\r\nPING x\r\n"}},
		{name: "skip-mid-pipeline", chunks: []string{"SET k 0\r\nGET k\r\nCLIENT REPLY SKIP\r\nSET k 1\r\nPING\r\nGET k\r\nECHO e\r\n"}},
		{name: "off-mid-pipeline", chunks: []string{"SET k 0\r\nGET k\r\nCLIENT REPLY OFF\r\nSET k 5\r\nSELECT 1\r\nGET k\r\nPING\r\nCLIENT REPLY ON\r\nGET k\r\nSELECT 0\r\nGET k\r\n"}},
		{name: "skip-a-select", chunks: []string{"SET k 0\r\nCLIENT REPLY SKIP\r\nSELECT 1\r\nGET k\r\nSELECT 0\r\nGET k\r\n"}},
		{name: "skip-a-transaction", chunks: []string{"CLIENT REPLY SKIP\r\nMULTI\r\nSET k 1\r\nEXEC\r\nGET k\r\n"}},
		{name: "off-through-a-transaction", chunks: []string{"SET k 1\r\nCLIENT REPLY OFF\r\nWATCH k\r\nMULTI\r\nINCR k\r\nEXEC\r\n", "CLIENT REPLY ON\r\nGET k\r\n"}},
		{name: "off-in-resp3", chunks: []string{"CLIENT REPLY OFF\r\nHELLO 3\r\nGET nokey\r\nCLIENT REPLY ON\r\nGET nokey\r\nRESET\r\nGET nokey\r\n"}},
		{name: "reset-turns-replies-on", chunks: []string{"CLIENT REPLY OFF\r\nSET k 1\r\nRESET\r\nGET k\r\n"}},
		{name: "skip-then-reset", chunks: []string{"CLIENT REPLY SKIP\r\nRESET\r\nPING\r\n", "CLIENT REPLY SKIP\r\nRESET\r\nCLIENT REPLY SKIP\r\nPING\r\nPING x\r\n"}},
		{name: "arity", chunks: []string{"CLIENT REPLY\r\nCLIENT REPLY ON ON\r\nPING\r\n"}},
	}
}

// TestDiffClientReply compares CLIENT REPLY with redis-server's.
func TestDiffClientReply(t *testing.T) {
	t.Parallel()
	redisAddr, otherAddr := startPair(t)
	for _, ex := range replyExchanges() {
		t.Run(ex.name, func(t *testing.T) { compareExchange(t, redisAddr, otherAddr, ex) })
	}
}

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
