package integration

import (
	"strconv"
	"strings"
	"testing"
)

// TestLongKeys (KV-5): a key longer than the storage engine takes is
// refused with an error by every write that would store it, before the
// write runs (MSET writes none of its keys; in MULTI, EXEC is aborted),
// and nothing is lost: the writes before and after it are served, and
// still there after a restart. (Before the limit, one SET of such a key
// stopped every later write, and the server could not start again on its
// data.) Reads, and writes that only remove a key, answer as for a missing
// key. The longest keys accepted are written with the smallest memtables:
// one with a deadline, and one with a value that the threshold of 1 MiB
// memtables sends to the value log (kept in the tables, it would not fit
// in a write batch with such a key).
func TestLongKeys(t *testing.T) {
	o := StartOncekv(t, "--memtable-size", "1mb")
	c := DialRaw(t, o.Addr)
	const max = 64989
	longest, tooLong := strings.Repeat("k", max), strings.Repeat("k", max+1)
	other := strings.Repeat("o", max)
	value, large := strings.Repeat("v", 92000), strings.Repeat("l", 100000)
	const refused = "-ERR key is too long (at most 64989 bytes)\r\n"
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"SET", "before", "1"}, "+OK\r\n"},
		{[]string{"SET", longest, value, "EX", "3600"}, "+OK\r\n"},
		{[]string{"SET", other, large}, "+OK\r\n"},
		{[]string{"SET", tooLong, "x"}, refused},
		{[]string{"MSET", "a", "1", tooLong, "x"}, refused},
		{[]string{"INCR", tooLong}, refused},
		{[]string{"APPEND", tooLong, "x"}, refused},
		{[]string{"EXPIRE", tooLong, "10"}, refused},
		{[]string{"RENAME", "before", tooLong}, refused},
		{[]string{"ONCE.CLAIM", tooLong}, refused},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"SET", "queued", "1"}, "+QUEUED\r\n"},
		{[]string{"SET", tooLong, "x"}, refused},
		{[]string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{[]string{"GET", tooLong}, "$-1\r\n"},
		{[]string{"DEL", tooLong}, ":0\r\n"},
		{[]string{"GETDEL", tooLong}, "$-1\r\n"},
		{[]string{"RENAME", tooLong, "x"}, "-ERR no such key\r\n"},
		{[]string{"EXISTS", "a", "queued", "x"}, ":0\r\n"},
		{[]string{"SET", "after", "2"}, "+OK\r\n"},
	}
	for i, s := range steps {
		if got := string(c.Do(s.args...)); got != s.want {
			t.Fatalf("step %d, %s: %.80q, want %q", i, s.args[0], got, s.want)
		}
	}
	o = o.Restart(t)
	c = DialRaw(t, o.Addr)
	for k, want := range map[string]string{"before": "1", "after": "2", longest: value, other: large} {
		if got := string(c.Do("GET", k)); got != "$"+strconv.Itoa(len(want))+"\r\n"+want+"\r\n" {
			t.Errorf("GET key of %d bytes after restart: %.80q", len(k), got)
		}
	}
	if got := string(c.Do("DBSIZE")); got != ":4\r\n" {
		t.Errorf("DBSIZE after restart: %q, want :4", got)
	}
}
