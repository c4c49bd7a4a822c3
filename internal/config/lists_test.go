package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The list directives are read from a file, flags and the environment
// (later ones winning, the alias list-max-ziplist-size too), shown by
// Directives, and rewritten under their own names.
func TestListDirectives(t *testing.T) {
	file := filepath.Join(t.TempDir(), "oncekv.conf")
	if err := os.WriteFile(file, []byte("list-max-ziplist-size 64\nlist-compress-depth 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		args, env    []string
		size, depth  string
		rewriteLines []string
		wantErr      bool
	}{
		{name: "defaults", size: "-2", depth: "0"},
		{name: "file", args: []string{file}, size: "64", depth: "1",
			rewriteLines: []string{"list-max-listpack-size 64", "list-compress-depth 1"}},
		{name: "flags over the file", args: []string{file, "--list-max-listpack-size", "-5", "--list-compress-depth", "3"},
			size: "-5", depth: "3", rewriteLines: []string{"list-max-listpack-size -5", "list-compress-depth 3"}},
		{name: "environment", env: []string{"ONCEKV_LIST_MAX_ZIPLIST_SIZE=16"}, size: "16", depth: "0",
			rewriteLines: []string{"list-max-listpack-size 16"}},
		{name: "out of range", args: []string{"--list-compress-depth", "-1"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(tt.args, tt.env)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Load(%q) took it", tt.args)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d := c.Directives()
			if d["list-max-listpack-size"] != tt.size || d["list-max-ziplist-size"] != tt.size || d["list-compress-depth"] != tt.depth {
				t.Errorf("Directives: size %q, alias %q, depth %q; want %q, %q", d["list-max-listpack-size"],
					d["list-max-ziplist-size"], d["list-compress-depth"], tt.size, tt.depth)
			}
			out := string(c.Rewrite(nil))
			for _, l := range tt.rewriteLines {
				if !strings.Contains(out, "\n"+l+"\n") && !strings.HasPrefix(out, l+"\n") {
					t.Errorf("Rewrite lacks %q:\n%s", l, out)
				}
			}
			next, err := c.WithSet([][2]string{{"list-max-ziplist-size", "7"}})
			if err != nil || next.Directives()["list-max-listpack-size"] != "7" {
				t.Errorf("CONFIG SET list-max-ziplist-size 7: %v, %q", err, next.Directives()["list-max-listpack-size"])
			}
		})
	}
}
