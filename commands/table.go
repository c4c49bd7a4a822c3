package commands

import (
	"fmt"
	"strings"
)

// Flags describe a command, as Redis's COMMAND INFO lists them.
type Flags uint32

// Command flags. Write commands run inside an exclusive store transaction,
// ReadOnly ones inside a shared one, the others outside any.
const (
	Write Flags = 1 << iota
	ReadOnly
	Admin
	Fast
	NoAuth   // allowed before AUTH
	NoMulti  // refused inside MULTI (SAVE, SHUTDOWN)
	Loading  // allowed while loading
	Stale    // allowed on a stale replica
	NoScript // not allowed from scripts
	Blocking
	DenyOOM
	SkipMonitor
	SkipSlowlog
	AllowBusy
	NoMandatoryKeys
	NoAsyncLoading // refused while loading asynchronously (SAVE, BGSAVE)
	Pubsub
	// MovableKeys: the keys are found by an argument (EVAL's numkeys),
	// not at fixed places.
	MovableKeys
	// Borrows is not one of Redis's flags (COMMAND does not list it): the
	// handler keeps none of its arguments once it returns, unless it
	// blocked. Serve then gives their memory back to the connection's
	// reader for the next request (resp.Conn.Release), which saves the
	// hot commands the two allocations of a parsed request. A handler
	// that keeps an argument (in a map, a waiter, another goroutine)
	// copies it, or its command must not have the flag; the server
	// binary that the integration tests run overwrites released
	// arguments, so that a kept one shows.
	Borrows
	// AtOnce is not one of Redis's flags either: MULTI does not queue the
	// command but runs it at once (MULTI, EXEC, DISCARD, WATCH, QUIT,
	// RESET), as Redis's processCommand does by name.
	AtOnce
	// Prefetch is not one of Redis's flags: the command looks up its
	// first key, its second argument, in the store's memory (the string
	// commands). When a read brings a pipeline led by such a command,
	// the keys of those with the flag are fetched into the processor's
	// cache once the pipeline's first command has the store's lock
	// (store.Prefetcher; Server.Ahead), their cache misses together
	// rather than one after another.
	Prefetch
)

var flagNames = []struct {
	f    Flags
	name string
}{
	{Write, "write"}, {ReadOnly, "readonly"}, {DenyOOM, "denyoom"}, {Admin, "admin"},
	{Pubsub, "pubsub"}, {NoScript, "noscript"}, {Blocking, "blocking"},
	{Loading, "loading"}, {Stale, "stale"}, {SkipMonitor, "skip_monitor"},
	{SkipSlowlog, "skip_slowlog"}, {Fast, "fast"}, {NoAuth, "no_auth"},
	{NoMandatoryKeys, "no_mandatory_keys"}, {NoAsyncLoading, "no_async_loading"},
	{NoMulti, "no_multi"}, {MovableKeys, "movablekeys"}, {AllowBusy, "allow_busy"},
}

// Names lists the flags' names in Redis's order.
func (f Flags) Names() []string {
	var out []string
	for _, fn := range flagNames {
		if f&fn.f != 0 {
			out = append(out, fn.name)
		}
	}
	return out
}

// Handler runs a command whose arguments passed the arity check.
type Handler func(x *Ctx)

// Command is one entry of a command table.
type Command struct {
	// Name is lower case; for a subcommand, "container|sub".
	Name string
	// Arity is Redis's: n means exactly n arguments counting the name, -n
	// at least n.
	Arity int
	Flags Flags
	// FirstKey, LastKey and Step locate the keys among the arguments
	// (LastKey -1 means the last argument).
	FirstKey, LastKey, Step int
	// Categories are the ACL categories, without '@'.
	Categories []string
	Run        Handler
	// Subcommands of a container command (CLIENT, CONFIG, COMMAND).
	Subcommands []*Command
	// Doc feeds COMMAND DOCS.
	Doc Doc

	// stats are the command's counters (stats.go), set by Register.
	stats *cmdStats
}

// Doc is what COMMAND DOCS tells about a command.
type Doc struct {
	Summary    string
	Since      string
	Group      string
	Complexity string
	// DocFlags are COMMAND DOCS's doc_flags ("deprecated", "syscmd").
	DocFlags        []string
	DeprecatedSince string
	ReplacedBy      string
	History         []DocHistory
	Args            []Arg
}

// DocHistory is one entry of a command's history: the version and what
// it changed.
type DocHistory struct {
	Version, Change string
}

// ArgType is the type of a documented argument.
type ArgType string

// Argument types, as COMMAND DOCS names them.
const (
	ArgString    ArgType = "string"
	ArgInteger   ArgType = "integer"
	ArgDouble    ArgType = "double"
	ArgKey       ArgType = "key"
	ArgPattern   ArgType = "pattern"
	ArgUnixTime  ArgType = "unix-time"
	ArgPureToken ArgType = "pure-token"
	ArgOneOf     ArgType = "oneof"
	ArgBlock     ArgType = "block"
)

// Arg documents one argument.
type Arg struct {
	Name     string
	Type     ArgType
	Token    string
	Optional bool
	Multiple bool
	// MultipleToken repeats the token before each value.
	MultipleToken bool
	KeySpec       int // index of the key spec, for ArgKey
	// Summary, Since and DeprecatedSince are the argument's own, when
	// Redis documents them.
	Summary         string
	Since           string
	DeprecatedSince string
	Args            []Arg
}

// Table is a set of commands by lower-case name.
type Table struct {
	cmds map[string]*Command
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{cmds: make(map[string]*Command)} }

// Register adds commands; a duplicate name is a programming error.
func (t *Table) Register(cmds ...*Command) {
	for _, c := range cmds {
		name := strings.ToLower(c.Name)
		if _, dup := t.cmds[name]; dup {
			panic(fmt.Sprintf("commands: %q registered twice", name))
		}
		if c.Step == 0 && c.FirstKey != 0 {
			c.Step = 1
		}
		c.stats = new(cmdStats)
		for _, sub := range c.Subcommands {
			sub.stats = new(cmdStats)
		}
		t.cmds[name] = c
	}
}

// Rename makes the command name answer under newName only, as Redis's
// rename-command does; an empty newName disables it. The command keeps
// its own name in replies (errors, COMMAND INFO), as in Redis.
func (t *Table) Rename(name, newName string) error {
	old := strings.ToLower(name)
	c, ok := t.cmds[old]
	if !ok {
		return fmt.Errorf("no such command %q", name)
	}
	if newName == "" {
		delete(t.cmds, old)
		return nil
	}
	n := strings.ToLower(newName)
	if _, taken := t.cmds[n]; taken && n != old {
		return fmt.Errorf("target command name %q already exists", newName)
	}
	delete(t.cmds, old)
	t.cmds[n] = c
	return nil
}

// Lookup finds a command by name, in any case. The name is folded first,
// then looked up once: clients send either case (redis-cli and
// redis-benchmark upper, go-redis lower), and an exact lookup that misses
// costs a second hash.
func (t *Table) Lookup(name []byte) *Command {
	var buf [32]byte
	lower := buf[:0]
	if len(name) > len(buf) {
		// A long name (rename-command to a random string) is folded in
		// a buffer of its own.
		lower = make([]byte, 0, len(name))
	}
	for _, b := range name {
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		lower = append(lower, b)
	}
	return t.cmds[string(lower)]
}

// All returns every command.
func (t *Table) All() []*Command {
	out := make([]*Command, 0, len(t.cmds))
	for _, c := range t.cmds {
		out = append(out, c)
	}
	return out
}

// Len is the number of commands.
func (t *Table) Len() int { return len(t.cmds) }

// RefusedInMulti reports whether cmd is refused while a transaction is
// queued, which it aborts: the NoMulti commands (SAVE, SHUTDOWN…), and
// CLIENT REPLY, whose dropped replies would leave EXEC's array with fewer
// elements than it announces (Redis 7.0 sends that broken reply; Valkey
// 9 refuses the command, as here).
func RefusedInMulti(cmd *Command) bool {
	return cmd.Flags&NoMulti != 0 || cmd.Name == "client|reply"
}

// sub finds a subcommand of c by name.
func (c *Command) sub(name []byte) *Command {
	for _, s := range c.Subcommands {
		_, short, _ := strings.Cut(s.Name, "|")
		if strings.EqualFold(short, string(name)) {
			return s
		}
	}
	return nil
}

// arityOK checks n arguments (counting the name) against arity.
func arityOK(arity, n int) bool {
	if arity >= 0 {
		return n == arity
	}
	return n >= -arity
}
