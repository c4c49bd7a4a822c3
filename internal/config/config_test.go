package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "oncekv.conf")
	if err := os.WriteFile(file, []byte("# a comment\nport 7000\nbind 127.0.0.1 ::1\nrequirepass \"s3 cret\"\nappendonly yes\nsave 60 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want func(*Config)
		err  string
	}{
		{name: "defaults", want: func(*Config) {}},
		{name: "flags", args: []string{"--port", "7001", "--dir", "/d", "--appendfsync", "always", "--databases", "4", "--loglevel", "warning"},
			want: func(c *Config) {
				c.Port, c.Dir, c.AppendFsync, c.Databases, c.LogLevel = 7001, "/d", "always", 4, "warning"
			}},
		{name: "file then overrides", args: []string{file, "--port", "7002"},
			want: func(c *Config) {
				c.Port, c.Bind, c.RequirePass, c.ConfigFile = 7002, []string{"127.0.0.1", "::1"}, "s3 cret", file
			}},
		{name: "ignored redis directives", args: []string{"--appendonly", "yes", "--save", ""}, want: func(*Config) {}},
		{name: "sizes and lease", args: []string{"--memtable-size", "32mb", "--once-lease-ms", "500"},
			want: func(c *Config) { c.MemTableSize, c.OnceLease = 32<<20, 500*time.Millisecond }},
		{name: "small memtable", args: []string{"--memtable-size", "1mb"}, want: func(c *Config) { c.MemTableSize = 1 << 20 }},
		{name: "memtable too small", args: []string{"--memtable-size", "512kb"}, err: "memtable-size must be at least 1mb (1048576)"},
		{name: "caches", args: []string{"--block-cache-size", "8mb", "--value-cache-size", "0"},
			want: func(c *Config) { c.BlockCacheSize, c.ValueCacheSize = 8<<20, 0 }},
		{name: "memory burst", args: []string{"--memory-burst", "0"}, want: func(c *Config) { c.MemoryBurst = 0 }},
		{name: "bad memory burst", args: []string{"--memory-burst", "-1"}, err: `invalid memory size "-1"`},
		{name: "procs", args: []string{"--procs", "2"}, want: func(c *Config) { c.Procs = 2 }},
		{name: "bad procs", args: []string{"--procs", "-1"}, err: "procs must be 0 (the runtime's choice) to 1024, not -1"},
		{name: "sched-policy", args: []string{"--sched-policy", "Normal"}, want: func(c *Config) { c.SchedPolicy = "normal" }},
		{name: "bad sched-policy", args: []string{"--sched-policy", "fifo"}, err: `sched-policy must be normal or batch, not "fifo"`},
		{name: "table trim", args: []string{"--table-trim-ms", "0"}, want: func(c *Config) { c.TableTrim = 0 }},
		{name: "bad table trim", args: []string{"--table-trim-ms", "-5"}, err: "table-trim-ms must be 0 (off) or positive"},
		{name: "table compression", args: []string{"--table-compression", "ZSTD"}, want: func(c *Config) { c.TableCompression = "zstd" }},
		{name: "bad table compression", args: []string{"--table-compression", "lz4"}, err: `table-compression must be none, snappy or zstd, not "lz4"`},
		{name: "unknown", args: []string{"--nosuch", "1"}, err: `unknown directive "nosuch"`},
		{name: "bad fsync", args: []string{"--appendfsync", "sometimes"}, err: `appendfsync must be always, everysec or no, not "sometimes"`},
		{name: "bad port", args: []string{"--port", "x"}, err: `directive "port": "x" is not an integer`},
		{name: "port range", args: []string{"--port", "70000"}, err: "port 70000 out of range 0..65535"},
		{name: "stray word", args: []string{"--port", "1", "2"}, err: `directive "port" takes one argument`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.args)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Default()
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestUnknownIsSentinel(t *testing.T) {
	_, err := Parse([]string{"--nosuch", "1"})
	if !errors.Is(err, ErrUnknown) {
		t.Fatalf("err = %v, want ErrUnknown", err)
	}
}

func TestAddrs(t *testing.T) {
	c := Default()
	c.Bind = []string{"127.0.0.1", "::1", "*", "-::*"}
	c.Port = 6380
	want := []string{"127.0.0.1:6380", "[::1]:6380", "0.0.0.0:6380", "[::]:6380"}
	if got := c.Addrs(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Addrs = %v, want %v", got, want)
	}
}

// TestSplitLine: a config line is split into words as redis-server splits
// it (sdssplitargs), so that the quoted values CONFIG REWRITE writes read
// back as they were.
func TestSplitLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
		err  bool
	}{
		{line: "port 7000", want: []string{"port", "7000"}},
		{line: "  bind\t127.0.0.1   ::1  ", want: []string{"bind", "127.0.0.1", "::1"}},
		{line: `requirepass "s3 cret"`, want: []string{"requirepass", "s3 cret"}},
		{line: `requirepass ""`, want: []string{"requirepass", ""}},
		{line: `rename-command FLUSHALL ''`, want: []string{"rename-command", "FLUSHALL", ""}},
		{line: `requirepass "a\"b\\c"`, want: []string{"requirepass", `a"b\c`}},
		{line: `requirepass "tab\there\nnl\r\a\b"`, want: []string{"requirepass", "tab\there\nnl\r\a\b"}},
		{line: `requirepass "\x41\x7a\xff\xg1"`, want: []string{"requirepass", "Az\xff" + "xg1"}},
		{line: `requirepass 'it\'s "x"'`, want: []string{"requirepass", `it's "x"`}},
		{line: `requirepass 'a\b'`, want: []string{"requirepass", `a\b`}},
		{line: `dir C:\data`, want: []string{"dir", `C:\data`}},
		{line: `dir a"b c"d`, err: true}, // a closing quote must end the word
		{line: `dir ab"c d"`, want: []string{"dir", "abc d"}},
		{line: `requirepass "open`, err: true},
		{line: `requirepass 'open`, err: true},
		{line: `requirepass "ends in \`, err: true},
		{line: "port 7000\r", want: []string{"port", "7000"}},
		{line: "", want: nil},
	} {
		t.Run(tc.line, func(t *testing.T) {
			got, err := splitLine(tc.line)
			if tc.err {
				if err == nil {
					t.Fatalf("splitLine(%q) = %q, want an error", tc.line, got)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("splitLine(%q) = %q, %v; want %q", tc.line, got, err, tc.want)
			}
		})
	}
}

// TestLoadFileLines: lines are trimmed (CRLF files too) and a line that
// starts with # is a comment whatever follows, as redis-server reads them.
func TestLoadFileLines(t *testing.T) {
	file := filepath.Join(t.TempDir(), "oncekv.conf")
	text := "# it's a comment \"with odd quotes\r\n   # indented\r\nport 7000\r\n\trequirepass \"a\\\"b\"  \r\n\r\n"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Parse([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 7000 || c.RequirePass != `a"b` {
		t.Fatalf("port %d, requirepass %q; want 7000, %q", c.Port, c.RequirePass, `a"b`)
	}
}
