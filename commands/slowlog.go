package commands

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// The slow log, as Redis's: each command whose run took at least
// slowlog-log-slower-than microseconds (0: every command; -1: none) is
// kept, newest first, up to slowlog-max-len entries. The time measured is
// the command's run (Server.run), not the wait for durability nor a
// blocking command's wait, as Redis measures call() and not the time a
// client is blocked.

// Slow log defaults and limits, as Redis's.
const (
	DefaultSlowlogSlowerThan = 10000 // µs
	DefaultSlowlogMaxLen     = 128
	slowlogMaxArgc           = 32  // SLOWLOG_ENTRY_MAX_ARGC
	slowlogMaxString         = 128 // SLOWLOG_ENTRY_MAX_STRING
)

type slowEntry struct {
	id     int64
	at     int64 // Unix seconds
	micros int64
	args   []string
	addr   string
	name   string
}

type slowlog struct {
	mu      sync.Mutex
	nextID  int64
	entries []slowEntry // oldest first
}

// add logs the command of x, which began at start and took d, keeping at
// most maxLen entries.
func (l *slowlog) add(x *Ctx, start time.Time, d time.Duration, maxLen int) {
	e := slowEntry{
		at:     start.Add(d).Unix(),
		micros: d.Microseconds(),
		args:   slowlogArgs(x.Cmd.Name, x.Args),
		addr:   x.Addr,
		name:   x.Info().Name,
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	if len(l.entries) > maxLen {
		// The oldest go; append reallocates now and then, which drops
		// them from memory.
		l.entries = l.entries[len(l.entries)-maxLen:]
	}
}

func (l *slowlog) reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}

func (l *slowlog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// newest returns up to n entries, newest first.
func (l *slowlog) newest(n int) []slowEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	n = min(n, len(l.entries))
	out := make([]slowEntry, n)
	for i := range out {
		out[i] = l.entries[len(l.entries)-1-i]
	}
	return out
}

// slowlogArgs copies what the slow log keeps of a command's arguments:
// at most 32, the last of them then telling how many more there were,
// each cut to 128 bytes with a note of how many more it had; secrets
// (passwords) are replaced with "(redacted)", as Redis does.
func slowlogArgs(name string, args [][]byte) []string {
	redact := redacted(name, args)
	n := min(len(args), slowlogMaxArgc)
	out := make([]string, n)
	for j := range out {
		switch {
		case n != len(args) && j == n-1:
			out[j] = fmt.Sprintf("... (%d more arguments)", len(args)-n+1)
		case redact[j]:
			out[j] = "(redacted)"
		case len(args[j]) > slowlogMaxString:
			out[j] = fmt.Sprintf("%s... (%d more bytes)", args[j][:slowlogMaxString], len(args[j])-slowlogMaxString)
		default:
			out[j] = string(args[j])
		}
	}
	return out
}

// sensitiveDirectives are the directives whose CONFIG SET value the slow
// log hides (Redis's SENSITIVE_CONFIG).
var sensitiveDirectives = map[string]bool{
	"requirepass": true, "masterauth": true, "masteruser": true,
	"tls-key-file-pass": true, "tls-client-key-file-pass": true,
}

// redacted tells which arguments of a command are secrets, as Redis's
// commands redact them: AUTH's (when it has at most two), HELLO's AUTH
// username and password, and CONFIG SET's values of sensitive directives
// (all of them, even when another name is unknown).
func redacted(name string, args [][]byte) map[int]bool {
	var out map[int]bool
	mark := func(i int) {
		if out == nil {
			out = map[int]bool{}
		}
		out[i] = true
	}
	switch name {
	case "auth":
		if len(args) <= 3 {
			for i := 1; i < len(args); i++ {
				mark(i)
			}
		}
	case "hello":
		for j := 2; j < len(args); j++ {
			more := len(args) - 1 - j
			switch {
			case eq(args[j], "auth") && more >= 2:
				mark(j + 1)
				mark(j + 2)
				j += 2
			case eq(args[j], "setname") && more >= 1:
				j++
			default:
				return out
			}
		}
	case "config|set":
		if len(args)%2 != 0 {
			return nil // a syntax error, answered before Redis looks at the names
		}
		for j := 2; j+1 < len(args); j += 2 {
			if sensitiveDirectives[strings.ToLower(string(args[j]))] {
				mark(j + 1)
			}
		}
	}
	return out
}

// SetSlowlog sets slowlog-log-slower-than (µs; negative: off) and
// slowlog-max-len. A shorter max-len drops the oldest entries at the next
// one logged, as in Redis.
func (s *Server) SetSlowlog(slowerThan, maxLen int64) {
	s.obs.slowerThan.Store(slowerThan)
	s.obs.slowMaxLen.Store(maxLen)
}

func slowlogCommands() *Command {
	sub := func(name string, arity int, flags Flags, cats []string, run Handler) *Command {
		return &Command{Name: "slowlog|" + name, Arity: arity, Flags: flags | Loading | Stale, Categories: cats, Run: run}
	}
	admin := []string{"admin", "slow", "dangerous"}
	return &Command{Name: "slowlog", Arity: -2, Categories: []string{"slow"}, Subcommands: []*Command{
		sub("get", -2, Admin, admin, slowlogGet),
		sub("len", 2, Admin, admin, func(x *Ctx) { x.W.Int(int64(x.S.obs.slowlog.len())) }),
		sub("reset", 2, Admin, admin, func(x *Ctx) { x.S.obs.slowlog.reset(); x.W.OK() }),
		sub("help", 2, 0, []string{"slow"}, slowlogHelp),
	}}
}

func slowlogGet(x *Ctx) {
	if len(x.Args) > 3 {
		subcommandSyntax(x)
		return
	}
	count := 10
	if len(x.Args) == 3 {
		n, ok := parseInt(x.Args[2])
		if !ok || n < -1 {
			x.W.Error("ERR count should be greater than or equal to -1")
			return
		}
		count = int(min(n, int64(^uint(0)>>1)))
		if n == -1 {
			count = x.S.obs.slowlog.len()
		}
	}
	entries := x.S.obs.slowlog.newest(count)
	w := x.W
	w.Array(len(entries))
	for _, e := range entries {
		w.Array(6)
		w.Int(e.id)
		w.Int(e.at)
		w.Int(e.micros)
		w.Array(len(e.args))
		for _, a := range e.args {
			w.BulkString(a)
		}
		w.BulkString(e.addr)
		w.BulkString(e.name)
	}
}

func slowlogHelp(x *Ctx) {
	lines := []string{
		"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GET [<count>]",
		"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
		"    Entries are made of:",
		"    id, timestamp, time in microseconds, arguments array, client IP and port,",
		"    client name",
		"LEN",
		"    Return the length of the slowlog.",
		"RESET",
		"    Reset the slowlog.",
		"HELP",
		"    Prints this help.",
	}
	x.W.Array(len(lines))
	for _, l := range lines {
		x.W.Simple(l)
	}
}

// initObservability sets the defaults of New.
func (s *Server) initObservability(fakeClock bool) {
	s.obs.slowerThan.Store(DefaultSlowlogSlowerThan)
	s.obs.slowMaxLen.Store(DefaultSlowlogMaxLen)
	s.obs.epoch, s.obs.fakeClock = time.Now(), fakeClock
	s.obs.runID, s.obs.replID = newRunID(), newRunID()
	s.obs.startupMem = heapObjects()
	s.table.Register(slowlogCommands())
}
