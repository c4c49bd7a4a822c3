package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The hash directives read from a file, the environment and flags under
// their names and Redis 7.0's ziplist aliases, and CONFIG REWRITE writes
// an alias's line back under the directive's name, in place.
func TestHashDirectives(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "oncekv.conf")
	if err := os.WriteFile(file, []byte("hash-max-ziplist-entries 10\nhash-max-ziplist-value 1kb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		args, env      []string
		entries, value int64
	}{
		{"defaults", nil, nil, 512, 64},
		{"file aliases", []string{file}, nil, 10, 1024},
		{"env", []string{file}, []string{"ONCEKV_HASH_MAX_LISTPACK_ENTRIES=7"}, 7, 1024},
		{"flags", []string{file, "--hash-max-listpack-value", "3", "--hash-max-ziplist-entries", "2"}, nil, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(tc.args, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.HashMaxListpackEntries != tc.entries || c.HashMaxListpackValue != tc.value {
				t.Fatalf("entries %d value %d, want %d %d", c.HashMaxListpackEntries, c.HashMaxListpackValue, tc.entries, tc.value)
			}
			d := c.Directives()
			for _, pair := range [][2]string{{"hash-max-listpack-entries", "hash-max-ziplist-entries"}, {"hash-max-listpack-value", "hash-max-ziplist-value"}} {
				if d[pair[0]] != d[pair[1]] {
					t.Errorf("CONFIG GET %s = %q, its alias %q", pair[0], d[pair[0]], d[pair[1]])
				}
			}
		})
	}
	if _, err := Load([]string{"--hash-max-listpack-entries", "-1"}, nil); err == nil {
		t.Errorf("a negative hash-max-listpack-entries was taken")
	}
	c := Default()
	c.HashMaxListpackEntries, c.HashMaxListpackValue = 20, 64
	got := string(c.Rewrite([]byte("port 6379\nhash-max-ziplist-entries 10\nhash-max-ziplist-value 99\n")))
	want := "port 6379\nhash-max-listpack-entries 20\nhash-max-listpack-value 64\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("Rewrite = %q, want it to start %q", got, want)
	}
}
