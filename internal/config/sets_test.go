package config

import (
	"strings"
	"testing"
)

// TestSetMaxIntsetEntries: the directive's default is Redis's 512; it is
// read from flags, the file and the environment, shown by CONFIG GET,
// and settable at run time within Redis's range (CONFIG REWRITE:
// TestRewriteRoundTrip).
func TestSetMaxIntsetEntries(t *testing.T) {
	if d := Default(); d.SetMaxIntsetEntries != 512 || d.Directives()["set-max-intset-entries"] != "512" {
		t.Fatalf("default: %d, CONFIG GET %q", d.SetMaxIntsetEntries, d.Directives()["set-max-intset-entries"])
	}
	for _, tc := range []struct {
		name    string
		args    []string
		environ []string
		want    int64
	}{
		{"flag", []string{"--set-max-intset-entries", "4"}, nil, 4},
		{"zero", []string{"--set-max-intset-entries", "0"}, nil, 0},
		{"environment", nil, []string{"ONCEKV_SET_MAX_INTSET_ENTRIES=7"}, 7},
		{"flag over environment", []string{"--set-max-intset-entries", "9"}, []string{"ONCEKV_SET_MAX_INTSET_ENTRIES=7"}, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(tc.args, tc.environ)
			if err != nil || c.SetMaxIntsetEntries != tc.want {
				t.Fatalf("Load: %d, %v; want %d", c.SetMaxIntsetEntries, err, tc.want)
			}
		})
	}
	for _, args := range [][]string{{"--set-max-intset-entries", "-1"}, {"--set-max-intset-entries", "x"}} {
		if _, err := Parse(args); err == nil {
			t.Errorf("Parse(%q) accepted", args)
		}
	}
	next, err := Default().WithSet([][2]string{{"set-max-intset-entries", "100"}})
	if err != nil || next.SetMaxIntsetEntries != 100 {
		t.Fatalf("CONFIG SET: %d, %v", next.SetMaxIntsetEntries, err)
	}
	if _, err := Default().WithSet([][2]string{{"set-max-intset-entries", "-1"}}); err == nil ||
		!strings.HasSuffix(err.Error(), "argument must be between 0 and 9223372036854775807 inclusive") {
		t.Errorf("CONFIG SET set-max-intset-entries -1: %v", err)
	}
}
