package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// SetError is a refusal of CONFIG SET, worded as Redis 7 words it (the
// reply's text after "ERR ").
type SetError struct{ msg string }

func (e *SetError) Error() string { return e.msg }

// ApplyFailed is CONFIG SET's refusal when the system refused to apply
// directive arg's new value (err says why).
func ApplyFailed(arg string, err error) error { return setFailed(arg, err.Error()) }

func setFailed(arg, why string) *SetError {
	return &SetError{fmt.Sprintf("CONFIG SET failed (possibly related to argument '%s') - %s", arg, why)}
}

// runtimeKind is what CONFIG SET does with a directive.
type runtimeKind int

const (
	kindUnknown   runtimeKind = iota // "Unknown option …", as Redis answers for names it does not know
	kindMutable                      // changed at once
	kindImmutable                    // "can't set immutable config"
	kindProtected                    // "can't set protected config" (paths, as Redis's dir)
	kindIgnored                      // accepted and ignored, as at startup
)

var runtimeKinds = map[string]runtimeKind{
	"requirepass":                kindMutable,
	"timeout":                    kindMutable,
	"maxclients":                 kindMutable,
	"procs":                      kindMutable,
	"sched-policy":               kindMutable,
	"loglevel":                   kindMutable,
	"protected-mode":             kindMutable,
	"proto-max-bulk-len":         kindMutable,
	"client-query-buffer-limit":  kindMutable,
	"client-output-buffer-limit": kindMutable,
	"min-free-disk":              kindMutable,
	"slowlog-log-slower-than":    kindMutable,
	"slowlog-max-len":            kindMutable,
	"hash-max-listpack-entries":  kindMutable,
	"hash-max-ziplist-entries":   kindMutable,
	"hash-max-listpack-value":    kindMutable,
	"hash-max-ziplist-value":     kindMutable,
	"set-max-intset-entries":     kindMutable,
	"zset-max-listpack-entries":  kindMutable,
	"zset-max-listpack-value":    kindMutable,
	"list-max-listpack-size":     kindMutable,
	"list-max-ziplist-size":      kindMutable, // list-max-listpack-size's alias
	"list-compress-depth":        kindMutable,
	"busy-reply-threshold":       kindMutable,
	"lua-time-limit":             kindMutable,

	// Fixed once the server runs: the listeners, the store's layout and
	// durability mode (switching appendfsync would have to re-ticket the
	// writes in flight; Redis allows it, this server does not).
	"port":              kindImmutable,
	"bind":              kindImmutable,
	"databases":         kindImmutable,
	"appendfsync":       kindImmutable,
	"tls-port":          kindImmutable,
	"tls-cert-file":     kindImmutable,
	"tls-key-file":      kindImmutable,
	"tls-ca-cert-file":  kindImmutable,
	"tls-auth-clients":  kindImmutable,
	"memtable-size":     kindImmutable,
	"block-cache-size":  kindImmutable,
	"value-cache-size":  kindImmutable,
	"memory-burst":      kindImmutable,
	"once-lease-ms":     kindImmutable,
	"table-trim-ms":     kindImmutable,
	"table-compression": kindImmutable,
	"metrics-addr":      kindImmutable,
	// Proxy mode is chosen at startup.
	"upstream":           kindImmutable,
	"once-wait-replicas": kindImmutable,
	// Shown by CONFIG GET with fixed values: there is no eviction.
	"maxmemory":        kindImmutable,
	"maxmemory-policy": kindImmutable,
	// Immutable in Redis too.
	"supervised":       kindImmutable,
	"logfile":          kindImmutable,
	"always-show-logo": kindImmutable,
	"set-proc-title":   kindImmutable,
	"appendfilename":   kindImmutable,
	"appenddirname":    kindImmutable,

	// Where the server writes: a client must not choose it.
	"dir":        kindProtected,
	"dbfilename": kindProtected,
	"backup-dir": kindProtected,

	"save":       kindIgnored,
	"appendonly": kindIgnored,
	"hz":         kindIgnored,
}

// Settable lists, sorted, the directives CONFIG SET changes.
func Settable() []string {
	var out []string
	for name, k := range runtimeKinds {
		if k == kindMutable {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// WithSet returns c with CONFIG SET's (directive, value) pairs applied,
// all of them or, with an error, none. It checks as Redis 7 does: first
// the names in order (the first unknown, unchangeable or repeated one is
// the error), then the values in order. Names are case-insensitive.
func (c Config) WithSet(pairs [][2]string) (Config, error) {
	seen := make(map[string]bool, len(pairs))
	for _, p := range pairs {
		name := Canonical(p[0])
		switch runtimeKinds[name] {
		case kindUnknown:
			// Quoted as C's %s quotes it: up to a NUL.
			quoted, _, _ := strings.Cut(p[0], "\x00")
			return c, &SetError{fmt.Sprintf("Unknown option or number of arguments for CONFIG SET - '%s'", quoted)}
		case kindImmutable:
			return c, setFailed(p[0], "can't set immutable config")
		case kindProtected:
			return c, setFailed(p[0], "can't set protected config")
		}
		if seen[name] {
			return c, setFailed(p[0], "duplicate parameter")
		}
		seen[name] = true
	}
	next := c
	for _, p := range pairs {
		name := Canonical(p[0])
		if why := next.setRuntime(name, p[1]); why != "" {
			return c, setFailed(name, why)
		}
	}
	return next, nil
}

// setRuntime applies one CONFIG SET value; it returns why it is refused,
// in Redis's words, or "".
func (c *Config) setRuntime(name, v string) string {
	switch name {
	case "requirepass":
		c.RequirePass = v
	case "timeout":
		n, why := redisInt(v, 0, math.MaxInt32)
		if why != "" {
			return why
		}
		c.Timeout = int(n)
	case "maxclients":
		n, why := redisInt(v, 1, math.MaxUint32)
		if why != "" {
			return why
		}
		c.MaxClients = int(n)
	case "procs":
		n, why := redisInt(v, 0, MaxProcs)
		if why != "" {
			return why
		}
		c.Procs = int(n)
	case "sched-policy":
		l := strings.ToLower(v)
		if l != "normal" && l != "batch" {
			return "argument(s) must be one of the following: normal, batch"
		}
		c.SchedPolicy = l
	case "loglevel":
		l := strings.ToLower(v)
		switch l {
		case "debug", "verbose", "notice", "warning", "nothing":
		default:
			return "argument(s) must be one of the following: debug, verbose, notice, warning, nothing"
		}
		c.LogLevel = l
	case "protected-mode":
		b, why := redisBool(v)
		if why != "" {
			return why
		}
		c.ProtectedMode = b
	case "proto-max-bulk-len", "client-query-buffer-limit":
		n, why := redisMemory(v, 1<<20)
		if why != "" {
			return why
		}
		if name == "proto-max-bulk-len" {
			c.ProtoMaxBulkLen = n
		} else {
			c.ClientQueryBufferLimit = n
		}
	case "client-output-buffer-limit":
		return c.setBufferLimits(strings.Fields(v))
	case "min-free-disk":
		if v == "-1" {
			c.MinFreeDisk = -1
			break
		}
		n, why := redisMemory(v, 0)
		if why == "argument must be a memory value" {
			why = "argument must be a memory value or -1"
		}
		if why != "" {
			return why
		}
		c.MinFreeDisk = n
	case "slowlog-log-slower-than":
		n, why := redisInt(v, -1, math.MaxInt64)
		if why != "" {
			return why
		}
		c.SlowlogLogSlowerThan = n
	case "zset-max-listpack-entries":
		n, why := redisInt(v, 0, math.MaxInt64)
		if why != "" {
			return why
		}
		c.ZsetMaxListpackEntries = n
	case "zset-max-listpack-value":
		n, why := redisMemory(v, 0)
		if why != "" {
			return why
		}
		c.ZsetMaxListpackValue = n
	case "slowlog-max-len":
		n, why := redisInt(v, 0, math.MaxInt64)
		if why != "" {
			return why
		}
		c.SlowlogMaxLen = n
	case "hash-max-listpack-entries", "hash-max-ziplist-entries":
		n, why := redisInt(v, 0, math.MaxInt64)
		if why != "" {
			return why
		}
		c.HashMaxListpackEntries = n
	case "hash-max-listpack-value", "hash-max-ziplist-value":
		// A memory value in Redis 7.0 (1kb is 1024).
		n, why := redisMemory(v, 0)
		if why != "" {
			return why
		}
		c.HashMaxListpackValue = n
	case "set-max-intset-entries":
		n, why := redisInt(v, 0, math.MaxInt64)
		if why != "" {
			return why
		}
		c.SetMaxIntsetEntries = n
	case "list-max-listpack-size", "list-max-ziplist-size":
		n, why := redisInt(v, math.MinInt32, math.MaxInt32)
		if why != "" {
			return why
		}
		c.ListMaxListpackSize = n
	case "list-compress-depth":
		n, why := redisInt(v, 0, math.MaxInt32)
		if why != "" {
			return why
		}
		c.ListCompressDepth = n
	case "busy-reply-threshold", "lua-time-limit":
		n, why := redisInt(v, 0, math.MaxInt64)
		if why != "" {
			return why
		}
		c.BusyReplyThreshold = n
	case "appendonly":
		_, why := redisBool(v)
		return why
	case "hz":
		_, why := redisInt(v, 0, math.MaxInt32)
		return why
	case "save":
		f := strings.Fields(v)
		if len(f)%2 != 0 {
			return "Invalid save parameters"
		}
		for _, w := range f {
			if n, err := strconv.ParseInt(w, 10, 64); err != nil || n < 0 {
				return "Invalid save parameters"
			}
		}
	}
	return ""
}

// redisInt reads an integer as Redis's string2ll does (no sign but '-',
// no leading zeros, no spaces) and checks it is in [lo, hi].
func redisInt(v string, lo, hi int64) (int64, string) {
	ok := v == "0"
	if !ok && v != "" {
		digits := strings.TrimPrefix(v, "-")
		ok = digits != "" && digits[0] >= '1' && digits[0] <= '9' && strings.Trim(digits, "0123456789") == ""
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if !ok || err != nil {
		return 0, "argument couldn't be parsed into an integer"
	}
	if n < lo || n > hi {
		return 0, fmt.Sprintf("argument must be between %d and %d inclusive", lo, hi)
	}
	return n, ""
}

func redisBool(v string) (bool, string) {
	switch strings.ToLower(v) {
	case "yes":
		return true, ""
	case "no":
		return false, ""
	}
	return false, "argument must be 'yes' or 'no'"
}

// redisMemory reads a size as Redis's memtoull does — digits (none is 0)
// then an optional unit b, k, kb, m, mb, g or gb in any case — and checks
// it is in [lo, 2^63-1].
func redisMemory(v string, lo int64) (int64, string) {
	const notMemory = "argument must be a memory value"
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	digits, unit := v[:i], strings.ToLower(v[i:])
	mul := map[string]uint64{"": 1, "b": 1, "k": 1000, "kb": 1 << 10, "m": 1000 * 1000, "mb": 1 << 20,
		"g": 1000 * 1000 * 1000, "gb": 1 << 30}[unit]
	if mul == 0 || len(digits) >= 128 {
		return 0, notMemory
	}
	var n uint64
	for _, d := range []byte(digits) {
		if n > (math.MaxUint64-uint64(d-'0'))/10 {
			n = math.MaxUint64 // strtoull saturates
			break
		}
		n = n*10 + uint64(d-'0')
	}
	if n > math.MaxUint64/mul {
		n = math.MaxUint64
	} else {
		n *= mul
	}
	if n < uint64(lo) || n > math.MaxInt64 {
		return 0, fmt.Sprintf("argument must be between %d and %d inclusive", lo, int64(math.MaxInt64))
	}
	return int64(n), ""
}
