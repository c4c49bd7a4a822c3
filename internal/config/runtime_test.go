package config

import (
	"reflect"
	"testing"
)

func TestWithSet(t *testing.T) {
	const (
		unknown = "Unknown option or number of arguments for CONFIG SET - "
		failed  = "CONFIG SET failed (possibly related to argument "
	)
	for _, tc := range []struct {
		name  string
		pairs [][2]string
		want  func(*Config)
		err   string
	}{
		{name: "one", pairs: [][2]string{{"timeout", "7"}}, want: func(c *Config) { c.Timeout = 7 }},
		{name: "several, any case", pairs: [][2]string{{"TIMEOUT", "7"}, {"maxclients", "50"}, {"LogLevel", "WARNING"},
			{"protected-mode", "NO"}, {"proto-max-bulk-len", "02MB"}, {"client-query-buffer-limit", "2gb"},
			{"min-free-disk", "1g"}, {"requirepass", "a b"}},
			want: func(c *Config) {
				c.Timeout, c.MaxClients, c.LogLevel, c.ProtectedMode = 7, 50, "warning", false
				c.ProtoMaxBulkLen, c.ClientQueryBufferLimit, c.MinFreeDisk, c.RequirePass = 2<<20, 2<<30, 1000*1000*1000, "a b"
			}},
		{name: "min-free-disk off", pairs: [][2]string{{"min-free-disk", "-1"}}, want: func(c *Config) { c.MinFreeDisk = -1 }},
		{name: "procs", pairs: [][2]string{{"procs", "3"}}, want: func(c *Config) { c.Procs = 3 }},
		{name: "procs range", pairs: [][2]string{{"procs", "1025"}}, err: failed + "'procs') - argument must be between 0 and 1024 inclusive"},
		{name: "procs not a number", pairs: [][2]string{{"procs", "two"}}, err: failed + "'procs') - argument couldn't be parsed into an integer"},
		{name: "sched-policy", pairs: [][2]string{{"sched-policy", "NORMAL"}}, want: func(c *Config) { c.SchedPolicy = "normal" }},
		{name: "sched-policy unknown", pairs: [][2]string{{"sched-policy", "fifo"}},
			err: failed + "'sched-policy') - argument(s) must be one of the following: normal, batch"},
		{name: "ignored", pairs: [][2]string{{"save", ""}, {"appendonly", "yes"}, {"hz", "50"}}, want: func(*Config) {}},
		{name: "save pairs", pairs: [][2]string{{"save", "3600 1 300 100"}}, want: func(*Config) {}},
		{name: "client-output-buffer-limit", pairs: [][2]string{{"client-output-buffer-limit", "PUBSUB 1mb 512kb 10 replica 0 0 0"}},
			want: func(c *Config) {
				c.ClientOutputBufferLimit[ClassPubsub] = BufferLimit{Hard: 1 << 20, Soft: 512 << 10, SoftSeconds: 10}
				c.ClientOutputBufferLimit[ClassReplica] = BufferLimit{}
			}},
		{name: "client-output-buffer-limit none", pairs: [][2]string{{"client-output-buffer-limit", ""}}, want: func(*Config) {}},
		{name: "client-output-buffer-limit words", pairs: [][2]string{{"client-output-buffer-limit", "pubsub 1mb 0"}},
			err: failed + "'client-output-buffer-limit') - Wrong number of arguments in buffer limit configuration."},
		{name: "client-output-buffer-limit class", pairs: [][2]string{{"client-output-buffer-limit", "pubsub 1mb 0 0 master 1 1 1"}},
			err: failed + "'client-output-buffer-limit') - Invalid client class specified in buffer limit configuration."},
		{name: "client-output-buffer-limit value", pairs: [][2]string{{"client-output-buffer-limit", "pubsub 1mb -1 0"}},
			err: failed + "'client-output-buffer-limit') - Error in hard, soft or soft_seconds setting in buffer limit configuration."},

		{name: "unknown", pairs: [][2]string{{"NoSuch", "1"}}, err: unknown + "'NoSuch'"},
		{name: "unknown, quoted up to a NUL as C's %s", pairs: [][2]string{{"no\x00such", "1"}}, err: unknown + "'no'"},
		{name: "unknown after a good one", pairs: [][2]string{{"timeout", "5"}, {"nosuch", "1"}}, err: unknown + "'nosuch'"},
		{name: "rename-command is not a config", pairs: [][2]string{{"rename-command", "x"}}, err: unknown + "'rename-command'"},
		{name: "immutable", pairs: [][2]string{{"databases", "3"}}, err: failed + "'databases') - can't set immutable config"},
		{name: "appendfsync is immutable here", pairs: [][2]string{{"appendfsync", "always"}}, err: failed + "'appendfsync') - can't set immutable config"},
		{name: "port", pairs: [][2]string{{"Port", "1"}}, err: failed + "'Port') - can't set immutable config"},
		{name: "protected", pairs: [][2]string{{"DIR", "/tmp"}}, err: failed + "'DIR') - can't set protected config"},
		{name: "backup-dir", pairs: [][2]string{{"backup-dir", "/tmp"}}, err: failed + "'backup-dir') - can't set protected config"},
		{name: "duplicate", pairs: [][2]string{{"maxclients", "50"}, {"MAXCLIENTS", "60"}}, err: failed + "'MAXCLIENTS') - duplicate parameter"},
		{name: "first name error wins", pairs: [][2]string{{"databases", "3"}, {"nosuch", "1"}}, err: failed + "'databases') - can't set immutable config"},
		{name: "names before values", pairs: [][2]string{{"timeout", "abc"}, {"databases", "3"}}, err: failed + "'databases') - can't set immutable config"},
		{name: "first value error wins", pairs: [][2]string{{"timeout", "10"}, {"loglevel", "bad"}, {"maxclients", "0"}},
			err: failed + "'loglevel') - argument(s) must be one of the following: debug, verbose, notice, warning, nothing"},
		{name: "canonical name in value errors", pairs: [][2]string{{"TIMEOUT", "abc"}}, err: failed + "'timeout') - argument couldn't be parsed into an integer"},
		{name: "int spaces", pairs: [][2]string{{"timeout", " 5"}}, err: failed + "'timeout') - argument couldn't be parsed into an integer"},
		{name: "int plus", pairs: [][2]string{{"timeout", "+5"}}, err: failed + "'timeout') - argument couldn't be parsed into an integer"},
		{name: "int leading zero", pairs: [][2]string{{"timeout", "05"}}, err: failed + "'timeout') - argument couldn't be parsed into an integer"},
		{name: "int huge", pairs: [][2]string{{"timeout", "99999999999999999999999"}}, err: failed + "'timeout') - argument couldn't be parsed into an integer"},
		{name: "int range", pairs: [][2]string{{"timeout", "-1"}}, err: failed + "'timeout') - argument must be between 0 and 2147483647 inclusive"},
		{name: "maxclients range", pairs: [][2]string{{"maxclients", "0"}}, err: failed + "'maxclients') - argument must be between 1 and 4294967295 inclusive"},
		{name: "bool", pairs: [][2]string{{"protected-mode", "maybe"}}, err: failed + "'protected-mode') - argument must be 'yes' or 'no'"},
		{name: "memory", pairs: [][2]string{{"proto-max-bulk-len", "1.5mb"}}, err: failed + "'proto-max-bulk-len') - argument must be a memory value"},
		{name: "memory sign", pairs: [][2]string{{"proto-max-bulk-len", "-1"}}, err: failed + "'proto-max-bulk-len') - argument must be a memory value"},
		{name: "memory unit", pairs: [][2]string{{"proto-max-bulk-len", "2MiB"}}, err: failed + "'proto-max-bulk-len') - argument must be a memory value"},
		{name: "memory small", pairs: [][2]string{{"client-query-buffer-limit", "1000"}}, err: failed + "'client-query-buffer-limit') - argument must be between 1048576 and 9223372036854775807 inclusive"},
		{name: "memory empty", pairs: [][2]string{{"proto-max-bulk-len", ""}}, err: failed + "'proto-max-bulk-len') - argument must be between 1048576 and 9223372036854775807 inclusive"},
		{name: "memory huge", pairs: [][2]string{{"proto-max-bulk-len", "99999999999999999999999"}}, err: failed + "'proto-max-bulk-len') - argument must be between 1048576 and 9223372036854775807 inclusive"},
		{name: "min-free-disk", pairs: [][2]string{{"min-free-disk", "-2"}}, err: failed + "'min-free-disk') - argument must be a memory value or -1"},
		{name: "save", pairs: [][2]string{{"save", "abc"}}, err: failed + "'save') - Invalid save parameters"},
		{name: "appendonly", pairs: [][2]string{{"appendonly", "maybe"}}, err: failed + "'appendonly') - argument must be 'yes' or 'no'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			got, err := c.WithSet(tc.pairs)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v\nwant  %s", err, tc.err)
				}
				if _, ok := err.(*SetError); !ok {
					t.Errorf("err is a %T, want *SetError", err)
				}
				// All or nothing: the config is unchanged.
				if !reflect.DeepEqual(got, Default()) {
					t.Errorf("a refused CONFIG SET changed the config: %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := Default()
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
			if !reflect.DeepEqual(c, Default()) {
				t.Fatalf("WithSet changed its receiver")
			}
		})
	}
}

func TestSettable(t *testing.T) {
	want := []string{"busy-reply-threshold", "client-output-buffer-limit", "client-query-buffer-limit",
		"hash-max-listpack-entries", "hash-max-listpack-value", "hash-max-ziplist-entries", "hash-max-ziplist-value",
		"list-compress-depth", "list-max-listpack-size", "list-max-ziplist-size", "loglevel", "lua-time-limit", "maxclients", "min-free-disk",
		"procs", "protected-mode", "proto-max-bulk-len", "requirepass", "sched-policy", "set-max-intset-entries", "slowlog-log-slower-than", "slowlog-max-len", "timeout",
		"zset-max-listpack-entries", "zset-max-listpack-value"}
	if got := Settable(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Settable = %v, want %v", got, want)
	}
	// Every directive CONFIG GET shows has a CONFIG SET answer other than
	// "unknown".
	for name := range Default().Directives() {
		if runtimeKinds[Canonical(name)] == kindUnknown {
			t.Errorf("CONFIG SET %s would answer \"Unknown option\"", name)
		}
	}
}
