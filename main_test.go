package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/oncekv/oncekv/commands"
)

// TestHelpAndVersion: --help and --version (and their short forms) print
// and exit 0, as redis-server's do, rather than being read as a directive
// ("unknown directive help") or a config file path (-h).
func TestHelpAndVersion(t *testing.T) {
	for _, tc := range []struct {
		arg, want string
	}{
		{"--help", "Usage: oncekv"},
		{"-h", "Usage: oncekv"},
		{"help", "Usage: oncekv"},
		{"--version", "oncekv v=" + commands.OncekvVersion + " redis=" + commands.Version + "\n"},
		{"-v", "oncekv v=" + commands.OncekvVersion},
	} {
		var out bytes.Buffer
		if err := run([]string{tc.arg}, &out); err != nil {
			t.Fatalf("%s: %v", tc.arg, err)
		}
		if !strings.HasPrefix(out.String(), tc.want) {
			t.Fatalf("%s printed %q, want %q…", tc.arg, out.String(), tc.want)
		}
	}
}
