package commands

import "testing"

// TestGlobMatch follows Redis's stringmatchlen, including its corner cases
// (the differential suite checks the same against a real server).
func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "anything", true},
		{"*", "", false}, // KEYS/SCAN special-case "*" before matching
		{"", "", true},
		{"**", "", false},
		{"h*", "h", true},
		{"h?llo", "hello", true},
		{"h?llo", "hllo", false},
		{"h*llo", "heeeello", true},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hbllo", true},
		{"h[b-a]llo", "hbllo", true},
		{"a\\*b", "a*b", true},
		{"a\\*b", "axb", false},
		{"a[\\]]b", "a]b", true},
		{"key:*", "key:10", true},
		{"a*b*", "ab", true},
		{"[abc", "b", true},
		{"\x00*", "\x00\xff", true},
	} {
		if got := globMatch([]byte(tc.pattern), []byte(tc.s)); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

func TestParseInt(t *testing.T) {
	for in, want := range map[string]bool{
		"0": true, "-1": true, "9223372036854775807": true, "-9223372036854775808": true,
		"9223372036854775808": false, "-0": false, "007": false, "+1": false, " 1": false, "1 ": false, "": false, "-": false,
	} {
		if _, ok := parseInt([]byte(in)); ok != want {
			t.Errorf("parseInt(%q) ok = %v, want %v", in, ok, want)
		}
	}
}
