package integration

import (
	"strconv"
	"strings"
	"testing"
)

// TestLongKeys (KV-5): a key longer than the storage engine takes is
// refused with an error when it is written, by every kind of write, before
// the write runs (MSET writes none of its keys; in MULTI, EXEC is aborted),
// and nothing is lost: the writes before and after it are served, and still
// there after a restart. (Before the limit, one SET of such a key stopped
// every later write, and the server could not start again on its data.)
// The longest key accepted is written with a deadline and the largest
// value the smallest memtables keep in their tables.
func TestLongKeys(t *testing.T) {
	o := StartOncekv(t, "--memtable-size", "1mb")
	c := DialRaw(t, o.Addr)
	const max = 64989
	longest, tooLong := strings.Repeat("k", max), strings.Repeat("k", max+1)
	value := strings.Repeat("v", 92000)
	const refused = "-ERR key is too long (at most 64989 bytes)\r\n"
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"SET", "before", "1"}, "+OK\r\n"},
		{[]string{"SET", longest, value, "EX", "3600"}, "+OK\r\n"},
		{[]string{"SET", tooLong, "x"}, refused},
		{[]string{"MSET", "a", "1", tooLong, "x"}, refused},
		{[]string{"INCR", tooLong}, refused},
		{[]string{"APPEND", tooLong, "x"}, refused},
		{[]string{"RENAME", "before", tooLong}, refused},
		{[]string{"ONCE.CLAIM", tooLong}, refused},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"SET", "queued", "1"}, "+QUEUED\r\n"},
		{[]string{"SET", tooLong, "x"}, refused},
		{[]string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{[]string{"GET", tooLong}, "$-1\r\n"},
		{[]string{"EXISTS", "a", "queued"}, ":0\r\n"},
		{[]string{"SET", "after", "2"}, "+OK\r\n"},
	}
	for _, s := range steps {
		if got := string(c.Do(s.args...)); got != s.want {
			t.Fatalf("%s (key of %d bytes): %.80q, want %q", s.args[0], len(s.args[1]), got, s.want)
		}
	}
	o = o.Restart(t)
	c = DialRaw(t, o.Addr)
	for k, want := range map[string]string{"before": "1", "after": "2", longest: value} {
		if got := string(c.Do("GET", k)); got != "$"+strconv.Itoa(len(want))+"\r\n"+want+"\r\n" {
			t.Errorf("GET key of %d bytes after restart: %.80q", len(k), got)
		}
	}
	if got := string(c.Do("DBSIZE")); got != ":3\r\n" {
		t.Errorf("DBSIZE after restart: %q, want :3", got)
	}
}
