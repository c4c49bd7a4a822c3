package commands

import (
	"strconv"
	"testing"
)

// TestLatencyHistogram checks LATENCY HISTOGRAM's reply, Redis 7.0's
// shape with this server's counters: per command called, its calls and
// cumulative counts at growing power-of-two bounds in µs, the last equal
// to the calls; a container named stands for its subcommands, unknown
// names are left out.
func TestLatencyHistogram(t *testing.T) {
	s := newCmdTestServer(t)
	for range 3 {
		cmdTestRun(t, s, 3, "PING")
	}
	cmdTestRun(t, s, 3, "CONFIG", "GET", "x")
	tests := []struct {
		args  []string
		names []string
		calls []int64
	}{
		{[]string{"ping"}, []string{"ping"}, []int64{3}},
		{[]string{"PING", "nosuch", "config"}, []string{"config|get", "ping"}, []int64{1, 3}},
		{[]string{"config|get"}, []string{"config|get"}, []int64{1}},
		{[]string{"nosuch"}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.args[0], func(t *testing.T) {
			got := cmdTestRun(t, s, 3, append([]string{"LATENCY", "HISTOGRAM"}, tt.args...)...)
			if got.kind != '%' || len(got.elems) != 2*len(tt.names) {
				t.Fatalf("LATENCY HISTOGRAM %q = %+v, want a map of %v", tt.args, got, tt.names)
			}
			for i, name := range tt.names {
				if got.elems[2*i].str != name {
					t.Fatalf("command %d = %q, want %q", i, got.elems[2*i].str, name)
				}
				h := got.elems[2*i+1]
				if len(h.elems) != 4 || h.elems[0].str != "calls" || h.elems[1].str != strconv.FormatInt(tt.calls[i], 10) ||
					h.elems[2].str != "histogram_usec" || h.elems[3].kind != '%' || len(h.elems[3].elems) == 0 {
					t.Fatalf("%s: %+v, want calls %d and a histogram", name, h, tt.calls[i])
				}
				var lastBound, lastCount int64
				b := h.elems[3].elems
				for j := 0; j < len(b); j += 2 {
					bound, _ := strconv.ParseInt(b[j].str, 10, 64)
					count, _ := strconv.ParseInt(b[j+1].str, 10, 64)
					if bound <= lastBound || bound&(bound-1) != 0 || count <= lastCount {
						t.Fatalf("%s: bucket %d is %d:%d after %d:%d", name, j/2, bound, count, lastBound, lastCount)
					}
					lastBound, lastCount = bound, count
				}
				if lastCount != tt.calls[i] {
					t.Fatalf("%s: the last cumulative count is %d, want %d", name, lastCount, tt.calls[i])
				}
			}
		})
	}
}
