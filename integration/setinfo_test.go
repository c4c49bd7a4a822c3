package integration

import (
	"strings"
	"testing"
)

// TestClientSetinfo covers CLIENT SETINFO, which Redis added in 7.2 (go-redis
// sends it on connect): the reference redis-server here is 7.0, so this is
// not a differential test. The replies are Redis 7.2's.
func TestClientSetinfo(t *testing.T) {
	o := StartOncekv(t)
	c := DialRaw(t, o.Addr)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "SETINFO", "lib-name", "go-redis"}, "+OK\r\n"},
		{[]string{"CLIENT", "SETINFO", "LIB-VER", "9.0.0"}, "+OK\r\n"},
		{[]string{"CLIENT", "SETINFO", "lib-name", "a b"}, "-ERR lib-name cannot contain spaces, newlines or special characters.\r\n"},
		{[]string{"CLIENT", "SETINFO", "foo", "x"}, "-ERR Unrecognized option 'foo'\r\n"},
		{[]string{"CLIENT", "SETINFO", "fo\x00o", "x"}, "-ERR Unrecognized option 'fo'\r\n"}, // C's %s
		{[]string{"CLIENT", "SETINFO", "lib-name"}, "-ERR wrong number of arguments for 'client|setinfo' command\r\n"},
	} {
		if got := string(c.Do(tc.args...)); got != tc.want {
			t.Errorf("%v = %q, want %q", tc.args, got, tc.want)
		}
	}
	info := string(c.Do("CLIENT", "INFO"))
	if !strings.Contains(info, "lib-name=go-redis") || !strings.Contains(info, "lib-ver=9.0.0") {
		t.Errorf("CLIENT INFO does not show the library: %q", info)
	}
}
