package config

import (
	"strings"
	"testing"
)

// The slow log and metrics directives: defaults, flags, CONFIG GET, and
// CONFIG SET's ranges (Redis's: slower-than from -1, max-len from 0).
func TestSlowlogAndMetricsDirectives(t *testing.T) {
	d := Default()
	if d.SlowlogLogSlowerThan != 10000 || d.SlowlogMaxLen != 128 || d.MetricsAddr != "" {
		t.Fatalf("defaults: %d %d %q", d.SlowlogLogSlowerThan, d.SlowlogMaxLen, d.MetricsAddr)
	}
	c, err := Parse([]string{"--slowlog-log-slower-than", "-1", "--slowlog-max-len", "0", "--metrics-addr", "127.0.0.1:9121"})
	if err != nil {
		t.Fatal(err)
	}
	if c.SlowlogLogSlowerThan != -1 || c.SlowlogMaxLen != 0 || c.MetricsAddr != "127.0.0.1:9121" {
		t.Fatalf("parsed: %d %d %q", c.SlowlogLogSlowerThan, c.SlowlogMaxLen, c.MetricsAddr)
	}
	dirs := c.Directives()
	for k, want := range map[string]string{"slowlog-log-slower-than": "-1", "slowlog-max-len": "0", "metrics-addr": "127.0.0.1:9121"} {
		if dirs[k] != want {
			t.Errorf("CONFIG GET %s = %q, want %q", k, dirs[k], want)
		}
	}
	for _, args := range [][]string{
		{"--slowlog-log-slower-than", "-2"},
		{"--slowlog-max-len", "-1"},
		{"--slowlog-max-len", "x"},
	} {
		if _, err := Parse(args); err == nil {
			t.Errorf("Parse(%q) accepted", args)
		}
	}
	next, err := c.WithSet([][2]string{{"slowlog-log-slower-than", "0"}, {"SLOWLOG-MAX-LEN", "5"}})
	if err != nil || next.SlowlogLogSlowerThan != 0 || next.SlowlogMaxLen != 5 {
		t.Fatalf("CONFIG SET: %+v %v", next, err)
	}
	for _, tc := range []struct{ name, value, why string }{
		{"slowlog-log-slower-than", "-2", "argument must be between -1 and 9223372036854775807 inclusive"},
		{"slowlog-max-len", "-1", "argument must be between 0 and 9223372036854775807 inclusive"},
		{"slowlog-max-len", "1.5", "argument couldn't be parsed into an integer"},
		{"metrics-addr", "127.0.0.1:1", "can't set immutable config"},
	} {
		_, err := c.WithSet([][2]string{{tc.name, tc.value}})
		if err == nil || !strings.HasSuffix(err.Error(), tc.why) {
			t.Errorf("CONFIG SET %s %s: %v, want …%s", tc.name, tc.value, err, tc.why)
		}
	}
}
