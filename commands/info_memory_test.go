package commands

import (
	"math"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/oncekv/oncekv/resp"
)

// infoField returns field's value in an INFO reply, or "" without it.
func infoField(tb testing.TB, reply, field string) string {
	tb.Helper()
	for _, line := range strings.Split(reply, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// TestInfoHeapLimit: INFO memory shows the runtime's soft memory limit in
// force, so that an operator sees memory-burst raise and lower it (issue
// 6), and 0 when there is none.
func TestInfoHeapLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	srv := onceServer(t)
	c := &resp.Conn{W: resp.NewWriter(2), Authed: true}
	for _, tt := range []struct {
		limit       int64
		want, human string
	}{
		{200 << 20, strconv.Itoa(200 << 20), "200.00M"},
		{248 << 20, strconv.Itoa(248 << 20), "248.00M"},
		{math.MaxInt64, "0", "0B"},
	} {
		debug.SetMemoryLimit(tt.limit)
		r := send(srv, c, "INFO", "memory")
		if got := infoField(t, r, "oncekv_heap_limit"); got != tt.want {
			t.Errorf("limit %d: oncekv_heap_limit:%s, want %s", tt.limit, got, tt.want)
		}
		if got := infoField(t, r, "oncekv_heap_limit_human"); got != tt.human {
			t.Errorf("limit %d: oncekv_heap_limit_human:%s, want %s", tt.limit, got, tt.human)
		}
	}
}
