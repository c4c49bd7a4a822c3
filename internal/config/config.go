// Package config reads the server's configuration the way redis-server
// does: an optional redis.conf-style file as the first argument, then
// `--directive value…` overrides, using Redis's directive names. Between
// the two, ONCEKV_<DIRECTIVE> environment variables apply (env.go); CONFIG
// SET changes some directives while the server runs (runtime.go).
package config

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is the server's configuration.
type Config struct {
	Port        int
	Bind        []string
	Dir         string
	AppendFsync string
	Databases   int
	RequirePass string
	LogLevel    string
	MaxClients  int
	// Timeout closes idle clients after that many seconds; 0 never.
	Timeout int
	// Procs is how many Go processors (GOMAXPROCS) run the server's code
	// (procs); 0 leaves the runtime's choice (package app, ApplyProcs).
	Procs int
	// SchedPolicy is the kernel's scheduling policy of the server's
	// threads (sched-policy): "batch" or "normal" (package sched).
	SchedPolicy string
	// MemTableSize and BlockCacheSize size the storage engine's memory;
	// ValueCacheSize bounds the values kept in memory after they are
	// written to it (0: none).
	MemTableSize   int64
	BlockCacheSize int64
	ValueCacheSize int64
	// MemoryBurst is how far the Go heap's soft limit rises above the
	// one these caches size while the server is busy (memory-burst;
	// package memlimit); 0 keeps it at that limit, or at half again the
	// live heap when that is higher.
	MemoryBurst int64
	// OnceLease is the lease of a ONCE.CLAIM that names none.
	OnceLease time.Duration
	// TableTrim is how often the pages of Badger's tables that reads
	// mapped in are handed back to the page cache (table-trim-ms), in
	// intervals without a stream of reads of the tables; 0 never: they
	// then stay in the server's RSS.
	TableTrim time.Duration
	// TableCompression is how Badger compresses the tables it writes
	// (table-compression): none, snappy or zstd.
	TableCompression string

	// ProtoMaxBulkLen is the longest argument a client may send, and the
	// longest string a command may build (Redis's proto-max-bulk-len).
	ProtoMaxBulkLen int64
	// ClientQueryBufferLimit bounds the memory of a client's unfinished
	// request and MULTI queue (Redis's client-query-buffer-limit).
	ClientQueryBufferLimit int64
	// ClientOutputBufferLimit is Redis's client-output-buffer-limit, by
	// class (ClassNormal, ClassReplica, ClassPubsub); only the pubsub
	// class is enforced (outputlimit.go).
	ClientOutputBufferLimit [nclasses]BufferLimit
	// ProtectedMode refuses clients from outside the loopback interface
	// while no password is set (Redis's protected-mode).
	ProtectedMode bool
	// TLSPort, when not 0, listens with TLS on the bind addresses; the
	// files are PEM. TLSAuthClients is "yes" (a client certificate
	// signed by the CA is required), "optional" (checked if given) or
	// "no".
	TLSPort        int
	TLSCertFile    string
	TLSKeyFile     string
	TLSCACertFile  string
	TLSAuthClients string
	// Renames are the rename-command directives in order: a command
	// answers under To only; an empty To disables it.
	Renames []Rename
	// MinFreeDisk is the free space the data directory's disk keeps:
	// below it writes are refused (MISCONF). 0 picks a default from
	// MemTableSize; -1 turns the check off.
	MinFreeDisk int64
	// BackupDir is where the BACKUP command writes; empty disables it.
	BackupDir string
	// SlowlogLogSlowerThan puts in the slow log the commands that ran
	// that many microseconds or more (0: every command; -1: none), and
	// SlowlogMaxLen bounds its length (Redis's slowlog-* directives).
	SlowlogLogSlowerThan int64
	SlowlogMaxLen        int64
	// HashMaxListpackEntries and HashMaxListpackValue are Redis's
	// hash-max-listpack-entries and -value (aliases hash-max-ziplist-*):
	// a hash with more fields, or a field or value longer, is
	// hashtable-encoded for good (OBJECT ENCODING; commands/hash.go).
	HashMaxListpackEntries int64
	HashMaxListpackValue   int64
	// SetMaxIntsetEntries is the most members a set of integers keeps
	// as an intset (Redis's set-max-intset-entries; OBJECT ENCODING).
	SetMaxIntsetEntries int64
	// ZsetMaxListpackEntries and ZsetMaxListpackValue are the most
	// members, and the longest member, of a sorted set that OBJECT
	// ENCODING calls listpack (Redis 7.0's zset-max-listpack-*, alias
	// zset-max-ziplist-*); past them it is a skiplist for good.
	ZsetMaxListpackEntries int64
	ZsetMaxListpackValue   int64
	// ListMaxListpackSize and ListCompressDepth are Redis's
	// list-max-listpack-size (alias list-max-ziplist-size) and
	// list-compress-depth: accepted, shown and rewritten as Redis does,
	// with no effect on how lists are stored here (README, "Lists").
	ListMaxListpackSize int64
	ListCompressDepth   int64
	// BusyReplyThreshold is how many milliseconds a script runs before
	// other clients are answered -BUSY (Redis's busy-reply-threshold,
	// alias lua-time-limit).
	BusyReplyThreshold int64
	// MetricsAddr, when set (host:port), serves Prometheus metrics at
	// http://MetricsAddr/metrics; empty (the default) serves none.
	MetricsAddr string
	// ConfigFile is the absolute path of the config file read, if any.
	ConfigFile string

	// Upstream, when set, runs the server as a stateless proxy in front
	// of a Redis server, cluster or sentinel-watched master (package
	// proxy): redis://host:port, redis-cluster://h1:p1,h2:p2…,
	// redis-sentinel://s1:p1,…/master. No store is opened then, and dir
	// is not used.
	Upstream string
	// OnceWaitReplicas is, in proxy mode, how many replicas a ONCE write
	// waits for (Redis's WAIT, up to its timeout) before its caller and
	// the waiters it wakes are answered; 0 does not wait.
	OnceWaitReplicas int
}

// Rename is one rename-command directive.
type Rename struct{ From, To string }

// Default is the configuration of `oncekv` run with no arguments.
func Default() Config {
	return Config{
		Port:             6379,
		Bind:             []string{"127.0.0.1"},
		Dir:              "./data",
		AppendFsync:      "everysec",
		Databases:        16,
		LogLevel:         "notice",
		MaxClients:       10000,
		SchedPolicy:      "normal",
		MemTableSize:     16 << 20,
		BlockCacheSize:   32 << 20,
		ValueCacheSize:   48 << 20,
		MemoryBurst:      72 << 20,
		OnceLease:        30 * time.Second,
		TableTrim:        time.Second,
		TableCompression: "none",

		ProtoMaxBulkLen:         512 << 20,
		HashMaxListpackEntries:  512,
		HashMaxListpackValue:    64,
		ClientQueryBufferLimit:  1 << 30,
		ClientOutputBufferLimit: defaultBufferLimits,
		ProtectedMode:           true,
		TLSAuthClients:          "yes",

		SlowlogLogSlowerThan: 10000,
		SlowlogMaxLen:        128,
		SetMaxIntsetEntries:  512,

		ZsetMaxListpackEntries: 128,
		ZsetMaxListpackValue:   64,
		ListMaxListpackSize:    -2,
		BusyReplyThreshold:     5000,
	}
}

// aliases are the old names Redis 7.0 still takes for a directive.
var aliases = map[string]string{
	"hash-max-ziplist-entries": "hash-max-listpack-entries",
	"hash-max-ziplist-value":   "hash-max-listpack-value",
	"zset-max-ziplist-entries": "zset-max-listpack-entries",
	"zset-max-ziplist-value":   "zset-max-listpack-value",
	"list-max-ziplist-size":    "list-max-listpack-size",
}

// Canonical is the directive name (lower case) that name, or its alias,
// stands for.
func Canonical(name string) string {
	name = strings.ToLower(name)
	if c, ok := aliases[name]; ok {
		return c
	}
	return name
}

// ErrUnknown is wrapped by errors about directives this server does not
// know.
var ErrUnknown = errors.New("unknown directive")

// ignored are Redis directives accepted for compatibility that change
// nothing here (persistence is always on; there is no RDB).
var ignored = map[string]bool{
	"appendonly": true, "save": true,
	"dbfilename": true, "appendfilename": true, "appenddirname": true, "supervised": true, "logfile": true,
	"always-show-logo": true, "set-proc-title": true, "hz": true,
}

// Parse reads args: an optional config file path first, then
// --directive value pairs, later ones winning. It ignores the
// environment; Load reads it too.
func Parse(args []string) (Config, error) { return Load(args, nil) }

// Load reads the configuration as the server does: the defaults, then the
// config file (an optional first argument), then the ONCEKV_<DIRECTIVE>
// variables of environ (os.Environ's form, "NAME=value"), then the
// --directive value pairs of args, each later source winning.
func Load(args, environ []string) (Config, error) {
	c := Default()
	if len(args) > 0 && !strings.HasPrefix(args[0], "--") {
		if err := c.loadFile(args[0]); err != nil {
			return c, err
		}
		if c.ConfigFile, _ = filepath.Abs(args[0]); c.ConfigFile == "" {
			c.ConfigFile = args[0]
		}
		args = args[1:]
	}
	if err := c.loadEnv(environ); err != nil {
		return c, err
	}
	var name string
	var vals []string
	flush := func() error {
		if name == "" {
			return nil
		}
		err := c.Set(name, vals)
		name, vals = "", nil
		return err
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--") && len(a) > 2 {
			if err := flush(); err != nil {
				return c, err
			}
			name = strings.ToLower(a[2:])
			continue
		}
		if name == "" {
			return c, fmt.Errorf("argument %q: expected --directive", a)
		}
		vals = append(vals, a)
	}
	if err := flush(); err != nil {
		return c, err
	}
	return c, c.Validate()
}

func (c *Config) loadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read config file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		// As redis-server: a line is trimmed, and one that then starts
		// with # is a comment, whatever follows.
		line := strings.Trim(sc.Text(), " \t\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		fields, err := splitLine(line)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if len(fields) == 0 {
			continue
		}
		if err := c.Set(strings.ToLower(fields[0]), fields[1:]); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}

// splitLine splits a config line into words as Redis's sdssplitargs
// does, so that what CONFIG REWRITE writes (rewrite.go) reads back the
// same: a word may be "double quoted", where \n \r \t \b \a, \xhh
// and a backslash before any other character are escapes, or 'single
// quoted', where only \' is; a closing quote must end the word.
func splitLine(s string) ([]string, error) {
	var out []string
	i := 0
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) {
			return out, nil
		}
		var cur []byte
		inq, insq := false, false
	word:
		for ; ; i++ {
			if i == len(s) {
				if inq || insq {
					return nil, errors.New("unbalanced quotes")
				}
				break
			}
			ch := s[i]
			switch {
			case inq:
				switch {
				case ch == '\\' && i+3 < len(s) && s[i+1] == 'x' && isHex(s[i+2]) && isHex(s[i+3]):
					cur = append(cur, unhex(s[i+2])<<4|unhex(s[i+3]))
					i += 3
				case ch == '\\' && i+1 < len(s):
					i++
					cur = append(cur, unescape(s[i]))
				case ch == '"':
					if i+1 < len(s) && !isSpace(s[i+1]) {
						return nil, errors.New("unbalanced quotes")
					}
					i++
					break word
				default:
					cur = append(cur, ch)
				}
			case insq:
				switch {
				case ch == '\\' && i+1 < len(s) && s[i+1] == '\'':
					i++
					cur = append(cur, '\'')
				case ch == '\'':
					if i+1 < len(s) && !isSpace(s[i+1]) {
						return nil, errors.New("unbalanced quotes")
					}
					i++
					break word
				default:
					cur = append(cur, ch)
				}
			case ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t':
				break word
			case ch == '"':
				inq = true
			case ch == '\'':
				insq = true
			default:
				cur = append(cur, ch)
			}
		}
		out = append(out, string(cur))
	}
}

func isSpace(ch byte) bool {
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f'
}

func isHex(ch byte) bool {
	return ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'f' || ch >= 'A' && ch <= 'F'
}

func unhex(ch byte) byte {
	switch {
	case ch >= 'a':
		return ch - 'a' + 10
	case ch >= 'A':
		return ch - 'A' + 10
	}
	return ch - '0'
}

func unescape(ch byte) byte {
	switch ch {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return ch
}

// Set applies one directive.
func (c *Config) Set(name string, vals []string) error {
	name = Canonical(name)
	one := func() (string, error) {
		if len(vals) != 1 {
			return "", fmt.Errorf("directive %q takes one argument", name)
		}
		return vals[0], nil
	}
	num := func() (int, error) {
		v, err := one()
		if err != nil {
			return 0, err
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("directive %q: %q is not an integer", name, v)
		}
		return n, nil
	}
	nonNegative := func() (int64, error) {
		n, err := num()
		if err == nil && n < 0 {
			err = fmt.Errorf("directive %q must not be negative", name)
		}
		return int64(n), err
	}
	size := func() (int64, error) {
		v, err := one()
		if err != nil {
			return 0, err
		}
		return ParseMemory(v)
	}
	yesNo := func() (bool, error) {
		v, err := one()
		if err != nil {
			return false, err
		}
		switch strings.ToLower(v) {
		case "yes":
			return true, nil
		case "no":
			return false, nil
		}
		return false, fmt.Errorf("directive %q: argument must be 'yes' or 'no', not %q", name, v)
	}
	var err error
	switch name {
	case "port":
		c.Port, err = num()
	case "bind":
		if len(vals) == 0 {
			return fmt.Errorf("directive %q needs an address", name)
		}
		c.Bind = vals
	case "dir":
		c.Dir, err = one()
	case "appendfsync":
		c.AppendFsync, err = one()
	case "databases":
		c.Databases, err = num()
	case "requirepass":
		c.RequirePass, err = one()
	case "loglevel":
		var v string
		v, err = one()
		c.LogLevel = strings.ToLower(v)
	case "maxclients":
		c.MaxClients, err = num()
	case "timeout":
		c.Timeout, err = num()
	case "procs":
		c.Procs, err = num()
	case "sched-policy":
		var v string
		v, err = one()
		c.SchedPolicy = strings.ToLower(v)
	case "memtable-size":
		c.MemTableSize, err = size()
	case "block-cache-size":
		c.BlockCacheSize, err = size()
	case "value-cache-size":
		c.ValueCacheSize, err = size()
	case "memory-burst":
		c.MemoryBurst, err = size()
	case "min-free-disk":
		if len(vals) == 1 && vals[0] == "-1" {
			c.MinFreeDisk = -1
			break
		}
		c.MinFreeDisk, err = size()
	case "backup-dir":
		c.BackupDir, err = one()
	case "proto-max-bulk-len":
		c.ProtoMaxBulkLen, err = size()
	case "client-query-buffer-limit":
		c.ClientQueryBufferLimit, err = size()
	case "client-output-buffer-limit":
		// One word each or one quoted value: Redis splits the line.
		if why := c.setBufferLimits(strings.Fields(strings.Join(vals, " "))); why != "" {
			err = fmt.Errorf("directive %q: %s", name, why)
		}
	case "protected-mode":
		c.ProtectedMode, err = yesNo()
	case "tls-port":
		c.TLSPort, err = num()
	case "tls-cert-file":
		c.TLSCertFile, err = one()
	case "tls-key-file":
		c.TLSKeyFile, err = one()
	case "tls-ca-cert-file":
		c.TLSCACertFile, err = one()
	case "tls-auth-clients":
		var v string
		v, err = one()
		c.TLSAuthClients = strings.ToLower(v)
	case "rename-command":
		// As in redis.conf: rename-command NAME NEW, where an empty NEW
		// ("") disables the command.
		if len(vals) != 2 {
			return fmt.Errorf("directive %q takes a command name and a new name (\"\" disables it)", name)
		}
		c.Renames = append(c.Renames, Rename{From: vals[0], To: vals[1]})
	case "once-lease-ms":
		var ms int
		ms, err = num()
		c.OnceLease = time.Duration(ms) * time.Millisecond
	case "table-trim-ms":
		var ms int
		ms, err = num()
		c.TableTrim = time.Duration(ms) * time.Millisecond
	case "table-compression":
		var v string
		v, err = one()
		c.TableCompression = strings.ToLower(v)
	case "slowlog-log-slower-than", "slowlog-max-len":
		var n int
		n, err = num()
		if name == "slowlog-max-len" {
			c.SlowlogMaxLen = int64(n)
		} else {
			c.SlowlogLogSlowerThan = int64(n)
		}
	case "hash-max-listpack-entries", "hash-max-ziplist-entries":
		c.HashMaxListpackEntries, err = nonNegative()
	case "hash-max-listpack-value", "hash-max-ziplist-value":
		c.HashMaxListpackValue, err = size()
	case "set-max-intset-entries":
		var n int
		n, err = num()
		c.SetMaxIntsetEntries = int64(n)
	case "zset-max-listpack-entries":
		var n int
		n, err = num()
		c.ZsetMaxListpackEntries = int64(n)
	case "zset-max-listpack-value":
		c.ZsetMaxListpackValue, err = size()
	case "list-max-listpack-size", "list-max-ziplist-size", "list-compress-depth":
		var n int
		n, err = num()
		if name == "list-compress-depth" {
			c.ListCompressDepth = int64(n)
		} else {
			c.ListMaxListpackSize = int64(n)
		}
	case "busy-reply-threshold", "lua-time-limit":
		var n int
		n, err = num()
		c.BusyReplyThreshold = int64(n)
	case "metrics-addr":
		c.MetricsAddr, err = one()
	case "upstream":
		c.Upstream, err = one()
	case "once-wait-replicas":
		c.OnceWaitReplicas, err = num()
	default:
		if ignored[name] {
			return nil
		}
		return fmt.Errorf("%w %q", ErrUnknown, name)
	}
	return err
}

// ParseMemory reads a size such as 100, 8mb or 1gb, as redis.conf does.
func ParseMemory(s string) (int64, error) {
	l := strings.ToLower(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1000}, {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000}, {"b", 1}} {
		if strings.HasSuffix(l, u.suffix) {
			mult = u.m
			l = strings.TrimSuffix(l, u.suffix)
			break
		}
	}
	n, err := strconv.ParseInt(l, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid memory size %q", s)
	}
	return n * mult, nil
}

// MinMemTableSize is the smallest memtable-size. Badger writes at most 15%
// of a memtable in one batch, which must hold any one entry kept in its
// tables: a key of up to 65,000 bytes with a value under the threshold the
// store derives from the memtable size (store/badgerdb). At 1 MiB that
// threshold is 92 KB; below, it shrinks towards nothing.
const MinMemTableSize = 1 << 20

// MaxProcs bounds the procs directive.
const MaxProcs = 1024

// Validate checks ranges and enumerations.
func (c Config) Validate() error {
	switch {
	case c.Port < 0 || c.Port > 65535:
		return fmt.Errorf("port %d out of range 0..65535", c.Port)
	case c.AppendFsync != "always" && c.AppendFsync != "everysec" && c.AppendFsync != "no":
		return fmt.Errorf("appendfsync must be always, everysec or no, not %q", c.AppendFsync)
	case c.Databases < 1 || c.Databases > 65536:
		return fmt.Errorf("databases must be 1..65536, not %d", c.Databases)
	case c.MaxClients < 1:
		return fmt.Errorf("maxclients must be at least 1")
	case c.Timeout < 0:
		return fmt.Errorf("timeout must not be negative")
	case c.Procs < 0 || c.Procs > MaxProcs:
		return fmt.Errorf("procs must be 0 (the runtime's choice) to %d, not %d", MaxProcs, c.Procs)
	case c.SchedPolicy != "normal" && c.SchedPolicy != "batch":
		return fmt.Errorf("sched-policy must be normal or batch, not %q", c.SchedPolicy)
	case c.OnceLease <= 0:
		return fmt.Errorf("once-lease-ms must be positive")
	case c.TableTrim < 0:
		return fmt.Errorf("table-trim-ms must be 0 (off) or positive")
	case c.TableCompression != "none" && c.TableCompression != "snappy" && c.TableCompression != "zstd":
		return fmt.Errorf("table-compression must be none, snappy or zstd, not %q", c.TableCompression)
	case c.Dir == "":
		return fmt.Errorf("dir must not be empty")
	case c.MemTableSize < MinMemTableSize:
		return fmt.Errorf("memtable-size must be at least 1mb (1048576)")
	case c.ProtoMaxBulkLen < 1<<20:
		return fmt.Errorf("proto-max-bulk-len must be at least 1mb (1048576)")
	case c.ClientQueryBufferLimit < 1<<20:
		return fmt.Errorf("client-query-buffer-limit must be at least 1mb (1048576)")
	case c.TLSPort < 0 || c.TLSPort > 65535:
		return fmt.Errorf("tls-port %d out of range 0..65535", c.TLSPort)
	}
	switch c.TLSAuthClients {
	case "yes", "no", "optional":
	default:
		return fmt.Errorf("tls-auth-clients must be yes, no or optional, not %q", c.TLSAuthClients)
	}
	if c.TLSPort != 0 {
		switch {
		case c.TLSCertFile == "" || c.TLSKeyFile == "":
			return fmt.Errorf("tls-port needs tls-cert-file and tls-key-file")
		case c.TLSCACertFile == "" && c.TLSAuthClients != "no":
			return fmt.Errorf("tls-ca-cert-file must be set when tls-auth-clients is %s", c.TLSAuthClients)
		}
	}
	switch {
	case c.SlowlogLogSlowerThan < -1:
		return fmt.Errorf("slowlog-log-slower-than must be -1 (off) or more, not %d", c.SlowlogLogSlowerThan)
	case c.SlowlogMaxLen < 0:
		return fmt.Errorf("slowlog-max-len must not be negative")
	case c.SetMaxIntsetEntries < 0:
		return fmt.Errorf("set-max-intset-entries must not be negative")
	case c.ZsetMaxListpackEntries < 0:
		return fmt.Errorf("zset-max-listpack-entries must not be negative")
	case c.ZsetMaxListpackValue < 0:
		return fmt.Errorf("zset-max-listpack-value must not be negative")
	case c.ListMaxListpackSize < math.MinInt32 || c.ListMaxListpackSize > math.MaxInt32:
		return fmt.Errorf("list-max-listpack-size must be between -2147483648 and 2147483647")
	case c.ListCompressDepth < 0 || c.ListCompressDepth > math.MaxInt32:
		return fmt.Errorf("list-compress-depth must be between 0 and 2147483647")
	case c.BusyReplyThreshold < 0:
		return fmt.Errorf("busy-reply-threshold must not be negative")
	case c.OnceWaitReplicas < 0:
		return fmt.Errorf("once-wait-replicas must not be negative")
	}
	if c.Upstream != "" {
		scheme, _, ok := strings.Cut(c.Upstream, "://")
		switch strings.ToLower(scheme) {
		case "redis", "redis-cluster", "redis-sentinel":
		default:
			ok = false
		}
		if !ok {
			return fmt.Errorf("upstream must be redis://host:port, redis-cluster://host:port,… or redis-sentinel://host:port,…/master, not %q", MaskPassword(c.Upstream))
		}
	}
	switch c.LogLevel {
	case "debug", "verbose", "notice", "warning", "nothing":
	default:
		return fmt.Errorf("loglevel must be debug, verbose, notice, warning or nothing, not %q", c.LogLevel)
	}
	return nil
}

// Addrs are the listen addresses.
func (c Config) Addrs() []string {
	out := make([]string, len(c.Bind))
	for i, b := range c.Bind {
		b = strings.TrimPrefix(b, "-")
		switch b {
		case "*":
			b = "0.0.0.0"
		case "::*":
			b = "::"
		}
		out[i] = netJoin(b, c.Port)
	}
	return out
}

func netJoin(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// TLSAddrs are the TLS listen addresses (none without tls-port).
func (c Config) TLSAddrs() []string {
	if c.TLSPort == 0 {
		return nil
	}
	t := c
	t.Port = c.TLSPort
	return t.Addrs()
}

// IdleTimeout is Timeout as a duration.
func (c Config) IdleTimeout() time.Duration { return time.Duration(c.Timeout) * time.Second }

// Directives are the values CONFIG GET shows.
func (c Config) Directives() map[string]string {
	return map[string]string{
		"port":                       strconv.Itoa(c.Port),
		"bind":                       strings.Join(c.Bind, " "),
		"dir":                        c.Dir,
		"appendfsync":                c.AppendFsync,
		"appendonly":                 "yes",
		"databases":                  strconv.Itoa(c.Databases),
		"requirepass":                c.RequirePass,
		"loglevel":                   c.LogLevel,
		"maxclients":                 strconv.Itoa(c.MaxClients),
		"procs":                      strconv.Itoa(c.Procs),
		"sched-policy":               c.SchedPolicy,
		"timeout":                    strconv.Itoa(c.Timeout),
		"save":                       "",
		"memtable-size":              strconv.FormatInt(c.MemTableSize, 10),
		"block-cache-size":           strconv.FormatInt(c.BlockCacheSize, 10),
		"value-cache-size":           strconv.FormatInt(c.ValueCacheSize, 10),
		"memory-burst":               strconv.FormatInt(c.MemoryBurst, 10),
		"once-lease-ms":              strconv.FormatInt(c.OnceLease.Milliseconds(), 10),
		"table-trim-ms":              strconv.FormatInt(c.TableTrim.Milliseconds(), 10),
		"table-compression":          c.TableCompression,
		"min-free-disk":              strconv.FormatInt(c.MinFreeDisk, 10),
		"backup-dir":                 c.BackupDir,
		"proto-max-bulk-len":         strconv.FormatInt(c.ProtoMaxBulkLen, 10),
		"client-query-buffer-limit":  strconv.FormatInt(c.ClientQueryBufferLimit, 10),
		"client-output-buffer-limit": c.bufferLimitsValue(),
		"protected-mode":             yesno(c.ProtectedMode),
		"tls-port":                   strconv.Itoa(c.TLSPort),
		"tls-cert-file":              c.TLSCertFile,
		"tls-key-file":               c.TLSKeyFile,
		"tls-ca-cert-file":           c.TLSCACertFile,
		"tls-auth-clients":           c.TLSAuthClients,
		// Fixed values that clients and exporters ask for.
		"maxmemory":        "0",
		"maxmemory-policy": "noeviction",
		"hz":               "10",
		// Redis's defaults: accepted (and ignored) as directives, and
		// read by tools that locate a server's files.
		"dbfilename":     "dump.rdb",
		"appendfilename": "appendonly.aof",
		"appenddirname":  "appendonlydir",

		"slowlog-log-slower-than": strconv.FormatInt(c.SlowlogLogSlowerThan, 10),
		"slowlog-max-len":         strconv.FormatInt(c.SlowlogMaxLen, 10),
		"set-max-intset-entries":  strconv.FormatInt(c.SetMaxIntsetEntries, 10),
		"list-max-listpack-size":  strconv.FormatInt(c.ListMaxListpackSize, 10),
		"list-max-ziplist-size":   strconv.FormatInt(c.ListMaxListpackSize, 10),
		"list-compress-depth":     strconv.FormatInt(c.ListCompressDepth, 10),
		"busy-reply-threshold":    strconv.FormatInt(c.BusyReplyThreshold, 10),
		"lua-time-limit":          strconv.FormatInt(c.BusyReplyThreshold, 10),
		"metrics-addr":            c.MetricsAddr,
		// Redis 7.0 lists a directive and its alias both.
		"hash-max-listpack-entries": strconv.FormatInt(c.HashMaxListpackEntries, 10),
		"hash-max-ziplist-entries":  strconv.FormatInt(c.HashMaxListpackEntries, 10),
		"hash-max-listpack-value":   strconv.FormatInt(c.HashMaxListpackValue, 10),
		"hash-max-ziplist-value":    strconv.FormatInt(c.HashMaxListpackValue, 10),
		// Redis 7.0 shows the old ziplist names too.
		"zset-max-listpack-entries": strconv.FormatInt(c.ZsetMaxListpackEntries, 10),
		"zset-max-ziplist-entries":  strconv.FormatInt(c.ZsetMaxListpackEntries, 10),
		"zset-max-listpack-value":   strconv.FormatInt(c.ZsetMaxListpackValue, 10),
		"zset-max-ziplist-value":    strconv.FormatInt(c.ZsetMaxListpackValue, 10),
		"upstream":                  MaskPassword(c.Upstream),
		"once-wait-replicas":        strconv.Itoa(c.OnceWaitReplicas),
	}
}

// MaskPassword hides the password of an address such as
// redis://user:secret@host:6379 (redis://user:***@host:6379), for CONFIG
// GET and the log.
func MaskPassword(addr string) string {
	scheme, rest, ok := strings.Cut(addr, "://")
	if !ok {
		return addr
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return addr
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		user = "" // "redis://secret@host": the whole userinfo is a password
	}
	return scheme + "://" + user + ":***" + rest[at:]
}

func yesno(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
