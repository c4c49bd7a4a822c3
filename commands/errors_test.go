package commands

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/oncekv/oncekv/store"
)

// TestMisconfQuotesAShortCause: a refused write's reply names the cause,
// but not kilobytes of it (Badger's errors can quote a whole refused
// value in hex), and stays valid UTF-8 where it is cut.
func TestMisconfQuotesAShortCause(t *testing.T) {
	for _, tc := range []struct {
		name, cause string
		whole       bool
	}{
		{"short", "write vlog: no space left on device", true},
		{"long", "Value with size 68157449 exceeded 67108864 limit. Value: " + strings.Repeat("00 01 02 03 ", 1000), false},
		{"cut inside a rune", strings.Repeat("é", 150), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := misconf(fmt.Errorf("%w: %s", store.ErrWrite, tc.cause))
			if !strings.HasPrefix(got, "MISCONF Errors writing to the data directory (") || !utf8.ValidString(got) {
				t.Fatalf("reply %q", got)
			}
			if strings.Contains(got, tc.cause) != tc.whole || len(got) > 400 {
				t.Fatalf("reply of %d bytes for a cause of %d: %q", len(got), len(tc.cause), got)
			}
		})
	}
}
