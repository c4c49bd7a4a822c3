package config

import (
	"fmt"
	"slices"
	"strings"
)

// EnvPrefix starts the environment variables that set directives:
// ONCEKV_<DIRECTIVE>, the directive's name in upper case with dashes as
// underscores (ONCEKV_REQUIREPASS, ONCEKV_APPENDFSYNC, ONCEKV_PROTO_MAX_BULK_LEN).
//
// They apply after the config file and before the command-line flags
// (file < environment < flags). An empty variable counts as unset. The
// value is the directive's one argument as it is (spaces, quotes and all);
// for the directives that take several (bind, save, rename-command) it is
// split into words as a config file line is, honouring quotes.
const EnvPrefix = "ONCEKV_"

// directiveNames are the directives Set knows, in the order the
// environment applies them.
var directiveNames = func() []string {
	names := []string{
		"port", "bind", "dir", "appendfsync", "databases", "requirepass",
		"loglevel", "maxclients", "timeout", "procs", "sched-policy", "memtable-size", "block-cache-size", "value-cache-size", "memory-burst",
		"min-free-disk", "backup-dir", "proto-max-bulk-len",
		"client-query-buffer-limit", "client-output-buffer-limit", "protected-mode", "tls-port",
		"tls-cert-file", "tls-key-file", "tls-ca-cert-file", "tls-auth-clients",
		"rename-command", "once-lease-ms", "table-trim-ms", "table-compression",
		"slowlog-log-slower-than", "slowlog-max-len", "set-max-intset-entries", "metrics-addr",
		"upstream", "once-wait-replicas", "hash-max-listpack-entries", "hash-max-listpack-value",
		"zset-max-listpack-entries", "zset-max-listpack-value",
		"list-max-listpack-size", "list-max-ziplist-size", "list-compress-depth",
		"busy-reply-threshold", "lua-time-limit",
	}
	var more []string
	for name := range ignored {
		more = append(more, name)
	}
	slices.Sort(more)
	return append(names, more...)
}()

// multiWord are the directives whose environment value is split into
// words.
var multiWord = map[string]bool{"bind": true, "save": true, "rename-command": true, "client-output-buffer-limit": true}

// EnvName is the environment variable of a directive: "proto-max-bulk-len"
// → "ONCEKV_PROTO_MAX_BULK_LEN".
func EnvName(directive string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(directive, "-", "_"))
}

// envMap turns os.Environ's "NAME=value" entries into a map; a later
// entry wins, as with getenv.
func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if name, val, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(name, EnvPrefix) {
			m[name] = val
		}
	}
	return m
}

// loadEnv applies the ONCEKV_<DIRECTIVE> variables of environ.
func (c *Config) loadEnv(environ []string) error {
	if len(environ) == 0 {
		return nil
	}
	env := envMap(environ)
	for _, name := range directiveNames {
		v := env[EnvName(name)]
		if v == "" {
			continue
		}
		vals := []string{v}
		if multiWord[name] {
			var err error
			if vals, err = splitLine(v); err != nil {
				return fmt.Errorf("environment %s: %w", EnvName(name), err)
			}
		}
		if err := c.Set(name, vals); err != nil {
			return fmt.Errorf("environment %s: %w", EnvName(name), err)
		}
	}
	return nil
}

// UnknownEnv lists, sorted, the variables of environ that start with
// EnvPrefix but name no directive (a typo, or a variable meant for another
// program): the server ignores them, and main warns about them.
func UnknownEnv(environ []string) []string {
	known := make(map[string]bool, len(directiveNames))
	for _, name := range directiveNames {
		known[EnvName(name)] = true
	}
	var out []string
	for name := range envMap(environ) {
		if !known[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
