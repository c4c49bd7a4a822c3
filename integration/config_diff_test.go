package integration

import (
	"strings"
	"testing"
)

// CONFIG SET compared with redis-server 7.0, where the replies are
// deterministic: the refusals' exact words and their order of precedence,
// CONFIG GET after a change, all-or-nothing, and requirepass's effect on
// connections open and new.
//
// Not compared, because this server differs on purpose (see README):
// appendfsync, port, bind, tls-* and the Badger sizes are immutable here
// (Redis changes them at run time); min-free-disk and once-lease-ms are
// this server's own (Redis: unknown option); loglevel also accepts
// "nothing" (Redis 7.2's list), so its refusal lists it.
//
// Every script puts back what it changed: the pair is shared by all
// scripts, in RESP2 and RESP3.
func TestDiffConfigSet(t *testing.T) {
	t.Parallel()
	RunDiffScripts(t, configSetScripts())
}

func configSetScripts() []Script {
	half := strings.Repeat("h", 600<<10)
	return []Script{
		// busy-reply-threshold and its alias lua-time-limit (scripting).
		{"config-busy-reply-threshold", []Step{
			cmd("CONFIG", "GET", "lua-time-limit"),
			cmd("CONFIG", "GET", "busy-reply-threshold"),
			cmd("CONFIG", "SET", "lua-time-limit", "-1"),
			cmd("CONFIG", "SET", "busy-reply-threshold", "abc"),
			cmd("CONFIG", "SET", "lua-time-limit", "250"),
			cmd("CONFIG", "GET", "busy-reply-threshold"),
			cmd("CONFIG", "SET", "busy-reply-threshold", "5000"),
			cmd("CONFIG", "GET", "lua-time-limit"),
		}},
		{"config-set-refusals", []Step{
			cmd("CONFIG", "SET"),
			cmd("CONFIG", "SET", "timeout"),
			cmd("CONFIG", "SET", "timeout", "1", "maxclients"),
			cmd("CONFIG", "SET", "nosuch", "1"),
			cmd("CONFIG", "SET", "no\x00such", "1"),
			cmd("CONFIG", "SET", "NoSuch", "1", "timeout", "5"),
			cmd("CONFIG", "SET", "timeout", "5", "nosuch", "1"),
			cmd("CONFIG", "SET", "databases", "3"),
			cmd("CONFIG", "SET", "DATABASES", "3"),
			cmd("CONFIG", "SET", "dir", "/tmp"),
			cmd("CONFIG", "SET", "DIR", "/tmp"),
			cmd("CONFIG", "SET", "dbfilename", "x.rdb"),
			cmd("CONFIG", "SET", "supervised", "no"),
			cmd("CONFIG", "SET", "logfile", "x"),
			cmd("CONFIG", "SET", "always-show-logo", "yes"),
			cmd("CONFIG", "SET", "set-proc-title", "no"),
			cmd("CONFIG", "SET", "appendfilename", "x"),
			cmd("CONFIG", "SET", "appenddirname", "x"),
			cmd("CONFIG", "SET", "timeout", "1", "timeout", "2"),
			cmd("CONFIG", "SET", "TimeOut", "5", "timeout", "6"),
			cmd("CONFIG", "SET", "maxclients", "50", "MAXCLIENTS", "60"),
			cmd("CONFIG", "SET", "databases", "3", "nosuch", "1"),
			cmd("CONFIG", "SET", "timeout", "abc", "databases", "3"),
			cmd("CONFIG", "SET", "databases", "3", "timeout", "abc"),
			cmd("CONFIG", "SET", "timeout", "10", "protected-mode", "maybe", "maxclients", "0"),
			cmd("CONFIG", "SET", "rename-command", "x"),
			cmd("CONFIG", "SET", "rename-command", "x", "y"),
			cmd("CONFIG", "SET", "min-free-disk"),
			// The pair runs without a config file (config_rewrite_diff_test.go
			// has one).
			cmd("CONFIG", "REWRITE"),
			cmd("CONFIG", "REWRITE", "x"),
			cmd("CONFIG", "GET", "timeout"),
			cmd("CONFIG", "GET", "maxclients"),
			cmd("CONFIG", "GET", "dbfilename"),
			cmd("CONFIG", "GET", "appendfilename"),
			cmd("CONFIG", "GET", "appenddirname"),
		}},
		{"config-set-values", []Step{
			cmd("CONFIG", "SET", "timeout", "abc"),
			cmd("CONFIG", "SET", "TIMEOUT", "abc"),
			cmd("CONFIG", "SET", "timeout", "-1"),
			cmd("CONFIG", "SET", "timeout", "1.5"),
			cmd("CONFIG", "SET", "timeout", " 5"),
			cmd("CONFIG", "SET", "timeout", "+5"),
			cmd("CONFIG", "SET", "timeout", "05"),
			cmd("CONFIG", "SET", "timeout", "0x10"),
			cmd("CONFIG", "SET", "timeout", ""),
			cmd("CONFIG", "SET", "timeout", "99999999999"),
			cmd("CONFIG", "SET", "timeout", "99999999999999999999999"),
			cmd("CONFIG", "SET", "maxclients", "0"),
			cmd("CONFIG", "SET", "maxclients", "-1"),
			cmd("CONFIG", "SET", "maxclients", "abc"),
			cmd("CONFIG", "SET", "maxclients", "4294967296"),
			cmd("CONFIG", "SET", "protected-mode", "maybe"),
			cmd("CONFIG", "SET", "protected-mode", ""),
			cmd("CONFIG", "SET", "proto-max-bulk-len", "100"),
			cmd("CONFIG", "SET", "proto-max-bulk-len", "abc"),
			cmd("CONFIG", "SET", "proto-max-bulk-len", "-1"),
			cmd("CONFIG", "SET", "proto-max-bulk-len", "1.5mb"),
			cmd("CONFIG", "SET", "proto-max-bulk-len", " 2mb"),
			cmd("CONFIG", "SET", "proto-max-bulk-len", "+2mb"),
			cmd("CONFIG", "SET", "proto-max-bulk-len", "2MiB"),
			cmd("CONFIG", "SET", "proto-max-bulk-len", ""),
			cmd("CONFIG", "SET", "proto-max-bulk-len", "0"),
			cmd("CONFIG", "SET", "proto-max-bulk-len", "1kb"),
			cmd("CONFIG", "SET", "proto-max-bulk-len", "9223372036854775808"),
			cmd("CONFIG", "SET", "proto-max-bulk-len", "99999999999999999999999"),
			cmd("CONFIG", "SET", "client-query-buffer-limit", "1000"),
			cmd("CONFIG", "SET", "client-query-buffer-limit", "1mb1"),
			cmd("CONFIG", "SET", "appendonly", "maybe"),
			cmd("CONFIG", "SET", "save", "abc"),
			cmd("CONFIG", "SET", "hz", "abc"),
			cmd("CONFIG", "GET", "proto-max-bulk-len"),
		}},
		{"config-set-get", []Step{
			cmd("CONFIG", "SET", "timeout", "3600"),
			cmd("CONFIG", "GET", "timeout"),
			cmd("CONFIG", "SET", "Timeout", "7200", "MAXCLIENTS", "50"),
			cmd("CONFIG", "GET", "timeout"),
			cmd("CONFIG", "GET", "maxclients"),
			cmd("CONFIG", "SET", "protected-mode", "NO"),
			cmd("CONFIG", "GET", "protected-mode"),
			cmd("CONFIG", "SET", "protected-mode", "YES"),
			cmd("CONFIG", "GET", "protected-mode"),
			cmd("CONFIG", "SET", "loglevel", "WARNING"),
			cmd("CONFIG", "GET", "loglevel"),
			cmd("CONFIG", "SET", "loglevel", "notice"),
			cmd("CONFIG", "SET", "proto-max-bulk-len", "2mb"),
			cmd("CONFIG", "GET", "proto-max-bulk-len"),
			cmd("CONFIG", "SET", "proto-max-bulk-len", "02MB"),
			cmd("CONFIG", "GET", "proto-max-bulk-len"),
			cmd("CONFIG", "SET", "proto-max-bulk-len", "1048576B"),
			cmd("CONFIG", "GET", "proto-max-bulk-len"),
			cmd("CONFIG", "SET", "proto-max-bulk-len", "1g"),
			cmd("CONFIG", "GET", "proto-max-bulk-len"),
			cmd("CONFIG", "SET", "client-query-buffer-limit", "2GB", "proto-max-bulk-len", "512mb"),
			cmd("CONFIG", "GET", "client-query-buffer-limit"),
			cmd("CONFIG", "GET", "proto-max-bulk-len"),
			cmd("CONFIG", "SET", "client-query-buffer-limit", "1gb"),
			cmd("CONFIG", "GET", "client-query-buffer-limit"),
			cmd("CONFIG", "SET", "save", ""),
			cmd("CONFIG", "SET", "hz", "10"),
			// All or nothing: the refused pair leaves timeout alone.
			cmd("CONFIG", "SET", "timeout", "10", "maxclients", "0"),
			cmd("CONFIG", "GET", "timeout"),
			cmd("CONFIG", "SET", "timeout", "0", "maxclients", "10000"),
			cmd("CONFIG", "GET", "timeout"),
			cmd("CONFIG", "GET", "maxclients"),
		}},
		{"config-set-proto-max-bulk-len-builds", []Step{
			cmd("CONFIG", "SET", "proto-max-bulk-len", "1mb"),
			cmd("SET", "k", half),
			cmd("APPEND", "k", half),
			cmd("STRLEN", "k"),
			cmd("SETRANGE", "k", "1048576", "x"),
			cmd("SETRANGE", "k", "1048575", "x"),
			cmd("STRLEN", "k"),
			cmd("CONFIG", "SET", "proto-max-bulk-len", "512mb"),
			cmd("APPEND", "k", half),
			cmd("STRLEN", "k"),
		}},
		// requirepass: connections that were in stay in; new ones must
		// AUTH; with the password gone, everyone is in. RESP2 only: a new
		// RESP3 connection starts with HELLO 3, which the password refuses.
		{"config-set-requirepass", []Step{
			cmd("CONFIG", "SET", "requirepass", "s3cret").InResp(2),
			cmd("PING").InResp(2),
			cmd("CONFIG", "GET", "requirepass").InResp(2),
			cmd("PING").On(1).InResp(2),
			cmd("GET", "k").On(1).InResp(2),
			cmd("AUTH", "nope").On(1).InResp(2),
			cmd("AUTH", "s3cret").On(1).InResp(2),
			cmd("PING").On(1).InResp(2),
			cmd("PING").On(2).InResp(2),
			cmd("HELLO", "3").On(2).InResp(2),
			cmd("CONFIG", "SET", "requirepass", "").InResp(2),
			cmd("CONFIG", "GET", "requirepass").InResp(2),
			cmd("PING").On(2).InResp(2), // never authenticated, now in
			cmd("PING").On(3).InResp(2),
			cmd("AUTH", "x").On(3).InResp(2),
			cmd("CONFIG", "SET", "requirepass", "other").InResp(2),
			cmd("PING").On(2).InResp(2), // never authenticated: out again
			cmd("PING").On(3).InResp(2), // connected while there was none: in
			cmd("PING").On(1).InResp(2),
			cmd("CONFIG", "SET", "requirepass", "").InResp(2),
		}},
	}
}
