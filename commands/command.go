package commands

import (
	"slices"
	"sort"
	"strings"

	"github.com/oncekv/oncekv/resp"
)

// commandCommands is the COMMAND family (COUNT, INFO, DOCS, LIST, GETKEYS),
// which describes the command table to clients in Redis 7.0's formats.
func commandCommands() []*Command {
	sub := func(name string, arity int, run Handler) *Command {
		return &Command{Name: "command|" + name, Arity: arity, Flags: Loading | Stale,
			Categories: []string{"slow", "connection"}, Run: run}
	}
	return []*Command{{
		Name: "command", Arity: -1, Flags: Loading | Stale,
		Categories: []string{"slow", "connection"}, Run: commandAllCmd,
		Subcommands: []*Command{
			sub("count", 2, commandCountCmd),
			sub("docs", -2, commandDocsCmd),
			sub("getkeys", -4, commandGetKeysCmd(false)),
			sub("getkeysandflags", -4, commandGetKeysCmd(true)),
			sub("help", 2, commandHelpCmd),
			sub("info", -2, commandInfoCmd),
			sub("list", -2, commandListCmd),
		},
	}}
}

// attachDocs fills each command's Doc from the docs table.
func (t *Table) attachDocs() {
	var attach func(c *Command)
	attach = func(c *Command) {
		if c.Doc.Summary == "" {
			if d, ok := docs[strings.ToLower(c.Name)]; ok {
				c.Doc = d
			}
		}
		for _, s := range c.Subcommands {
			attach(s)
		}
	}
	for _, c := range t.cmds {
		attach(c)
	}
}

// sorted returns the table's commands by name.
func (t *Table) sorted() []*Command {
	all := t.All()
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all
}

// byFullName finds a command or subcommand by its full name
// ("get", "client|kill"), in any case.
func (t *Table) byFullName(name []byte) *Command {
	container, sub, isSub := strings.Cut(strings.ToLower(string(name)), "|")
	c := t.Lookup([]byte(container))
	if c == nil || !isSub {
		return c
	}
	if strings.Contains(sub, "|") {
		return nil
	}
	return c.sub([]byte(sub))
}

// forArgs finds the command that a full command line runs, as GETKEYS
// does: the subcommand of a container when one is given, nil when unknown.
func (t *Table) forArgs(args [][]byte) *Command {
	c := t.Lookup(args[0])
	if c == nil || len(c.Subcommands) == 0 || len(args) == 1 {
		return c
	}
	return c.sub(args[1])
}

// COMMAND: every command's info.
func commandAllCmd(x *Ctx) {
	all := x.S.table.sorted()
	x.W.Array(len(all))
	for _, c := range all {
		writeCommandInfo(x.W, c)
	}
}

func commandCountCmd(x *Ctx) { x.W.Int(int64(x.S.table.Len())) }

func commandInfoCmd(x *Ctx) {
	if len(x.Args) == 2 {
		commandAllCmd(x)
		return
	}
	names := x.Args[2:]
	x.W.Array(len(names))
	for _, n := range names {
		if c := x.S.table.byFullName(n); c != nil {
			writeCommandInfo(x.W, c)
		} else {
			x.W.Null()
		}
	}
}

func commandDocsCmd(x *Ctx) {
	var found []*Command
	if len(x.Args) == 2 {
		found = x.S.table.sorted()
	} else {
		for _, n := range x.Args[2:] {
			if c := x.S.table.byFullName(n); c != nil {
				found = append(found, c)
			}
		}
	}
	x.W.Map(len(found))
	for _, c := range found {
		x.W.BulkString(c.Name)
		writeCommandDoc(x.W, c)
	}
}

// COMMAND LIST [FILTERBY MODULE name|ACLCAT category|PATTERN pattern]
func commandListCmd(x *Ctx) {
	keep := func(*Command) bool { return true }
	switch {
	case len(x.Args) == 2:
	case len(x.Args) == 5 && eq(x.Args[2], "filterby"):
		value := x.Args[4]
		switch {
		case eq(x.Args[3], "module"):
			keep = func(*Command) bool { return false } // no modules here
		case eq(x.Args[3], "aclcat"):
			keep = func(c *Command) bool {
				for _, cat := range c.Categories {
					if strings.EqualFold(cat, string(value)) {
						return true
					}
				}
				return false
			}
		case eq(x.Args[3], "pattern"):
			pattern := []byte(strings.ToLower(string(value)))
			keep = func(c *Command) bool { return globMatch(pattern, []byte(c.Name)) }
		default:
			x.Fail(ErrSyntax)
			return
		}
	default:
		x.Fail(ErrSyntax)
		return
	}
	var names []string
	for _, c := range x.S.table.sorted() {
		if keep(c) {
			names = append(names, c.Name)
		}
		for _, s := range c.Subcommands {
			if keep(s) {
				names = append(names, s.Name)
			}
		}
	}
	x.W.Array(len(names))
	for _, n := range names {
		x.W.BulkString(n)
	}
}

// COMMAND GETKEYS / GETKEYSANDFLAGS command [arg ...]
func commandGetKeysCmd(withFlags bool) Handler {
	return func(x *Ctx) {
		args := x.Args[2:]
		c := x.S.table.forArgs(args)
		switch {
		case c == nil:
			x.W.Error("ERR Invalid command specified")
			return
		case c.FirstKey <= 0 && c.NumKeys == 0:
			x.W.Error("ERR The command has no key arguments")
			return
		case !arityOK(c.Arity, len(args)):
			x.W.Error("ERR Invalid number of arguments specified for command")
			return
		}
		pos := keyPositions(c, len(args))
		if c.NumKeys > 0 {
			pos = numKeyPositions(c, args)
		}
		if len(pos) == 0 {
			if c.Flags&NoMandatoryKeys != 0 {
				x.W.Array(0)
			} else {
				x.W.Error("ERR Invalid arguments specified for command")
			}
			return
		}
		specs := keySpecs(c)
		x.W.Array(len(pos))
		for _, p := range pos {
			if !withFlags {
				x.W.Bulk(args[p])
				continue
			}
			x.W.Array(2)
			x.W.Bulk(args[p])
			writeSimpleSet(x.W, resolvedKeyFlags(c, args, specs[specOf(c, p)].flags))
		}
	}
}

// resolvedKeyFlags are the flags GETKEYSANDFLAGS reports for a key of
// the command line args whose spec has flags: a spec with variable_flags
// (SET's) is resolved for this line, as Redis's setGetKeys does.
func resolvedKeyFlags(c *Command, args [][]byte, flags []string) []string {
	if c.Name != "set" {
		return flags
	}
	for _, a := range args[min(3, len(args)):] {
		if eq(a, "get") {
			return []string{"RW", "access", "update"}
		}
	}
	return []string{"OW", "update"}
}

func commandHelpCmd(x *Ctx) {
	lines := []string{
		"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"(no subcommand)",
		"    Return details about all Redis commands.",
		"COUNT",
		"    Return the total number of commands in this Redis server.",
		"LIST",
		"    Return a list of all commands in this Redis server.",
		"INFO [<command-name> ...]",
		"    Return details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"DOCS [<command-name> ...]",
		"    Return documentation details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"GETKEYS <full-command>",
		"    Return the keys from a full Redis command.",
		"GETKEYSANDFLAGS <full-command>",
		"    Return the keys and the access flags from a full Redis command.",
		"HELP",
		"    Prints this help.",
	}
	x.W.Array(len(lines))
	for _, l := range lines {
		x.W.Simple(l)
	}
}

// keyPositions lists the indexes of the key arguments in a command line
// of argc arguments (counting the name).
func keyPositions(c *Command, argc int) []int {
	var pos []int
	first, last, step := keyRange(c, argc)
	for i := first; i <= last; i += step {
		pos = append(pos, i)
	}
	return pos
}

// numKeyPositions lists the indexes of the keys of a command line of a
// command that counts its keys (c.NumKeys): its fixed key, if any, then
// the keys counted. A count that is not 1 to the arguments left (read as
// C's atoi, as Redis's getkeys procs read it) means none at all.
func numKeyPositions(c *Command, args [][]byte) []int {
	if c.NumKeys <= 0 || c.NumKeys >= len(args) {
		return nil
	}
	n := atoi(args[c.NumKeys])
	if n < 1 || n > int64(len(args)-c.NumKeys-1) {
		return nil
	}
	var pos []int
	if c.FirstKey > 0 {
		pos = append(pos, c.FirstKey)
	}
	for i := 0; i < int(n); i++ {
		pos = append(pos, c.NumKeys+1+i)
	}
	return pos
}

// atoi reads a number as C's atoi does: leading space, a sign, the digits
// up to the first other byte; 0 when there are none.
func atoi(b []byte) int64 {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	var n int64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9' && n < 1<<40; i++ {
		n = n*10 + int64(b[i]-'0')
	}
	if neg {
		return -n
	}
	return n
}

// keyRange locates the key arguments in a command line of argc arguments:
// every step-th from first to last (none when first > last).
func keyRange(c *Command, argc int) (first, last, step int) {
	if c.FirstKey <= 0 {
		return 1, 0, 1
	}
	last = c.LastKey
	if last < 0 {
		last += argc
	}
	return c.FirstKey, min(last, argc-1), keyStep(c)
}

func keyStep(c *Command) int {
	if c.Step <= 0 {
		return 1
	}
	return c.Step
}

// keySpec is a Redis 7 key specification in its two simplest forms: one
// key at a fixed index, or a range of keys from an index to an offset
// from the end.
type keySpec struct {
	notes string // Redis's notes on the spec, if any
	// keynum: the keys are counted by the argument at index, and follow
	// it (ZUNION's numkeys), instead of a range.
	keynum  bool
	flags   []string
	index   int
	lastKey int // 0: the key at index only; negative: from the end
	keyStep int
}

// keySpecs derives the key specifications of c from FirstKey, LastKey and
// Step: one range spec when the keys run to the end of the arguments, else
// one spec per key position (as Redis has for RENAME: source, then
// destination). Arguments documented as keys refer to these by index.
func keySpecs(c *Command) []keySpec {
	if c.NumKeys > 0 {
		var specs []keySpec
		if c.FirstKey > 0 {
			specs = append(specs, keySpec{flags: keySpecFlagsOf(c, 0), index: c.FirstKey, keyStep: 1})
		}
		specs = append(specs, keySpec{keynum: true, flags: keySpecFlagsOf(c, len(specs)), index: c.NumKeys, keyStep: 1})
		specs[0].notes = keySpecNotes[c.Name]
		return specs
	}
	if c.FirstKey <= 0 {
		return nil
	}
	if c.LastKey < 0 && len(keySpecFlags[c.Name]) == 2 {
		// A destination, then the sources (SINTERSTORE).
		return []keySpec{
			{flags: keySpecFlagsOf(c, 0), index: c.FirstKey, keyStep: 1},
			{flags: keySpecFlagsOf(c, 1), index: c.FirstKey + 1, lastKey: c.LastKey, keyStep: keyStep(c)},
		}
	}
	if c.LastKey < 0 {
		return []keySpec{{notes: keySpecNotes[c.Name], flags: keySpecFlagsOf(c, 0), index: c.FirstKey, lastKey: c.LastKey, keyStep: keyStep(c)}}
	}
	if oneRangeSpec[c.Name] {
		return []keySpec{{flags: keySpecFlagsOf(c, 0), index: c.FirstKey, lastKey: c.LastKey - c.FirstKey, keyStep: keyStep(c)}}
	}
	var specs []keySpec
	for i, p := 0, c.FirstKey; p <= c.LastKey || i == 0; i, p = i+1, p+keyStep(c) {
		specs = append(specs, keySpec{flags: keySpecFlagsOf(c, i), index: p, keyStep: 1})
	}
	specs[0].notes = keySpecNotes[c.Name]
	return specs
}

// oneRangeSpec are the commands of fixed keys that Redis 7.0 describes
// with one range spec (from the first key, lastkey counting on from it)
// rather than one spec per key.
var oneRangeSpec = map[string]bool{"lcs": true}

// keySpecNotes are the notes Redis 7.0 gives a command's first key spec.
var keySpecNotes = map[string]string{
	"set":     "RW and ACCESS due to the optional `GET` argument",
	"getex":   "RW and UPDATE because it changes the TTL",
	"eval":    "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
	"eval_ro": "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS",
}

// specOf is the index of the key spec that covers argument p.
func specOf(c *Command, p int) int {
	if c.NumKeys > 0 {
		if c.FirstKey > 0 && p == c.FirstKey {
			return 0
		}
		return len(keySpecs(c)) - 1
	}
	if c.LastKey < 0 && len(keySpecFlags[c.Name]) == 2 {
		return min(p-c.FirstKey, 1)
	}
	if c.LastKey < 0 || oneRangeSpec[c.Name] {
		return 0
	}
	return (p - c.FirstKey) / keyStep(c)
}

// keySpecFlags are the flags of key specs where the defaults (RW ACCESS
// UPDATE for write commands, RO ACCESS for read-only ones, RO for the
// others) say less than Redis does; one list per spec.
var keySpecFlags = map[string][][]string{
	"set":    {{"RW", "access", "update", "variable_flags"}},
	"setnx":  {{"OW", "insert"}},
	"setex":  {{"OW", "update"}},
	"psetex": {{"OW", "update"}},
	"getdel": {{"RW", "access", "delete"}},
	"mset":   {{"OW", "update"}},
	"msetnx": {{"OW", "insert"}},
	"append": {{"RW", "insert"}},
	"strlen": {{"RO"}},
	// Sets.
	"sadd":        {{"RW", "insert"}},
	"srem":        {{"RW", "delete"}},
	"sismember":   {{"RO"}},
	"scard":       {{"RO"}},
	"spop":        {{"RW", "access", "delete"}},
	"smove":       {{"RW", "access", "delete"}, {"RW", "insert"}},
	"sinterstore": {{"RW", "update"}, {"RO", "access"}},
	"sunionstore": {{"OW", "update"}, {"RO", "access"}},
	"sdiffstore":  {{"OW", "update"}, {"RO", "access"}},
	// The shard channels are not keys, but are hashed to slots as keys.
	"ssubscribe":    {{"not_key"}},
	"sunsubscribe":  {{"not_key"}},
	"spublish":      {{"not_key"}},
	"setrange":      {{"RW", "update"}},
	"del":           {{"RM", "delete"}},
	"unlink":        {{"RM", "delete"}},
	"exists":        {{"RO"}},
	"expire":        {{"RW", "update"}},
	"pexpire":       {{"RW", "update"}},
	"expireat":      {{"RW", "update"}},
	"pexpireat":     {{"RW", "update"}},
	"persist":       {{"RW", "update"}},
	"type":          {{"RO"}},
	"touch":         {{"RO"}},
	"rename":        {{"RW", "access", "delete"}, {"OW", "update"}},
	"renamenx":      {{"RW", "access", "delete"}, {"OW", "insert"}},
	"restore":       {{"OW", "update"}},
	"once.claim":    {{"RW", "access", "insert"}},
	"once.complete": {{"RW", "update"}},
	"once.abort":    {{"RW", "delete"}},
	"once.extend":   {{"RW", "update"}},
	"eval":          {{"RW", "access", "update"}},
	"evalsha":       {{"RW", "access", "update"}},

	// The keyspace commands COPY, MOVE and OBJECT.
	"copy": {{"RO", "access"}, {"OW", "update"}},

	// Hashes.
	"hset":            {{"RW", "update"}},
	"hmset":           {{"RW", "update"}},
	"hsetnx":          {{"RW", "insert"}},
	"hdel":            {{"RW", "delete"}},
	"hlen":            {{"RO"}},
	"hexists":         {{"RO"}},
	"hstrlen":         {{"RO"}},
	"move":            {{"RW", "access", "update"}},
	"object|encoding": {{"RO"}},
	"object|refcount": {{"RO"}},
	"object|idletime": {{"RO"}},
	"object|freq":     {{"RO"}},
	"memory|usage":    {{"RO"}},

	// Sorted sets.
	"zadd":             {{"RW", "update"}},
	"zrem":             {{"RW", "delete"}},
	"zcard":            {{"RO"}},
	"zrangestore":      {{"OW", "update"}, {"RO", "access"}},
	"zremrangebyrank":  {{"RW", "delete"}},
	"zremrangebyscore": {{"RW", "delete"}},
	"zremrangebylex":   {{"RW", "delete"}},
	"zpopmin":          {{"RW", "access", "delete"}},
	"zpopmax":          {{"RW", "access", "delete"}},
	"zmpop":            {{"RW", "access", "delete"}},
	"bzpopmin":         {{"RW", "access", "delete"}},
	"bzpopmax":         {{"RW", "access", "delete"}},
	"bzmpop":           {{"RW", "access", "delete"}},
	"zunionstore":      {{"OW", "update"}, {"RO", "access"}},
	"zinterstore":      {{"OW", "update"}, {"RO", "access"}},
	"zdiffstore":       {{"OW", "update"}, {"RO", "access"}},

	// Lists.
	"lpush":      {{"RW", "insert"}},
	"rpush":      {{"RW", "insert"}},
	"lpushx":     {{"RW", "insert"}},
	"rpushx":     {{"RW", "insert"}},
	"lpop":       {{"RW", "access", "delete"}},
	"rpop":       {{"RW", "access", "delete"}},
	"llen":       {{"RO"}},
	"lset":       {{"RW", "update"}},
	"linsert":    {{"RW", "insert"}},
	"lrem":       {{"RW", "delete"}},
	"ltrim":      {{"RW", "delete"}},
	"lmove":      {{"RW", "access", "delete"}, {"RW", "insert"}},
	"rpoplpush":  {{"RW", "access", "delete"}, {"RW", "insert"}},
	"lmpop":      {{"RW", "access", "delete"}},
	"blpop":      {{"RW", "access", "delete"}},
	"brpop":      {{"RW", "access", "delete"}},
	"blmove":     {{"RW", "access", "delete"}, {"RW", "insert"}},
	"brpoplpush": {{"RW", "access", "delete"}, {"RW", "insert"}},
	"blmpop":     {{"RW", "access", "delete"}},
}

func keySpecFlagsOf(c *Command, i int) []string {
	if f, ok := keySpecFlags[c.Name]; ok && i < len(f) {
		return f[i]
	}
	switch {
	case c.Flags&Write != 0:
		return []string{"RW", "access", "update"}
	case c.Flags&ReadOnly != 0:
		return []string{"RO", "access"}
	}
	return []string{"RO"}
}

// commandTips are the hints about the reply that Redis 7 gives for these
// commands in COMMAND INFO.
var commandTips = map[string][]string{
	"mget":                {"request_policy:multi_shard"},
	"hgetall":             {"nondeterministic_output_order"},
	"hkeys":               {"nondeterministic_output_order"},
	"hvals":               {"nondeterministic_output_order"},
	"hrandfield":          {"nondeterministic_output"},
	"hscan":               {"nondeterministic_output"},
	"mset":                {"request_policy:multi_shard", "response_policy:all_succeeded"},
	"msetnx":              {"request_policy:multi_shard", "response_policy:agg_min"},
	"del":                 {"request_policy:multi_shard", "response_policy:agg_sum"},
	"unlink":              {"request_policy:multi_shard", "response_policy:agg_sum"},
	"exists":              {"request_policy:multi_shard", "response_policy:agg_sum"},
	"touch":               {"request_policy:multi_shard", "response_policy:agg_sum"},
	"ttl":                 {"nondeterministic_output"},
	"wait":                {"request_policy:all_shards", "response_policy:agg_min"},
	"pttl":                {"nondeterministic_output"},
	"keys":                {"request_policy:all_shards", "nondeterministic_output_order"},
	"scan":                {"nondeterministic_output", "request_policy:special"},
	"randomkey":           {"request_policy:all_shards", "nondeterministic_output"},
	"dump":                {"nondeterministic_output"},
	"ping":                {"request_policy:all_shards", "response_policy:all_succeeded"},
	"info":                {"nondeterministic_output", "request_policy:all_shards", "response_policy:special"},
	"dbsize":              {"request_policy:all_shards", "response_policy:agg_sum"},
	"flushdb":             {"request_policy:all_shards", "response_policy:all_succeeded"},
	"flushall":            {"request_policy:all_shards", "response_policy:all_succeeded"},
	"time":                {"nondeterministic_output"},
	"lastsave":            {"nondeterministic_output"},
	"config|set":          {"request_policy:all_nodes", "response_policy:all_succeeded"},
	"slowlog|get":         {"request_policy:all_nodes", "nondeterministic_output"},
	"slowlog|len":         {"request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"},
	"slowlog|reset":       {"request_policy:all_nodes", "response_policy:all_succeeded"},
	"client|info":         {"nondeterministic_output"},
	"client|list":         {"nondeterministic_output"},
	"command":             {"nondeterministic_output_order"},
	"command|docs":        {"nondeterministic_output_order"},
	"command|info":        {"nondeterministic_output_order"},
	"command|list":        {"nondeterministic_output_order"},
	"once.claim":          {"nondeterministic_output"},
	"once.wait":           {"nondeterministic_output"},
	"once.status":         {"nondeterministic_output"},
	"latency|latest":      {"nondeterministic_output", "request_policy:all_nodes", "response_policy:special"},
	"latency|history":     {"nondeterministic_output", "request_policy:all_nodes", "response_policy:special"},
	"latency|doctor":      {"nondeterministic_output", "request_policy:all_nodes", "response_policy:special"},
	"latency|graph":       {"nondeterministic_output", "request_policy:all_nodes", "response_policy:special"},
	"latency|histogram":   {"nondeterministic_output", "request_policy:all_nodes", "response_policy:special"},
	"latency|reset":       {"request_policy:all_nodes", "response_policy:all_succeeded"},
	"memory|purge":        {"request_policy:all_shards", "response_policy:all_succeeded"},
	"memory|stats":        {"nondeterministic_output", "request_policy:all_shards", "response_policy:special"},
	"memory|doctor":       {"nondeterministic_output", "request_policy:all_shards", "response_policy:special"},
	"memory|malloc-stats": {"nondeterministic_output", "request_policy:all_shards", "response_policy:special"},
	"smembers":            {"nondeterministic_output_order"},
	"sinter":              {"nondeterministic_output_order"},
	"sunion":              {"nondeterministic_output_order"},
	"sdiff":               {"nondeterministic_output_order"},
	"spop":                {"nondeterministic_output"},
	"srandmember":         {"nondeterministic_output"},
	"sscan":               {"nondeterministic_output"},

	"object|encoding": {"nondeterministic_output"},
	"object|refcount": {"nondeterministic_output"},
	"object|idletime": {"nondeterministic_output"},
	"object|freq":     {"nondeterministic_output"},

	"zrandmember": {"nondeterministic_output"},
	"zscan":       {"nondeterministic_output"},
}

// writeCommandInfo writes c's COMMAND INFO entry: name, arity, flags,
// first key, last key, step, ACL categories, tips, key specs, subcommands.
func writeCommandInfo(w *resp.Writer, c *Command) {
	w.Array(10)
	w.BulkString(c.Name)
	w.Int(int64(c.Arity))
	flags := c.Flags.Names()
	if c.NumKeys > 0 {
		flags = append(flags, "movablekeys")
	}
	writeSimpleSet(w, flags)
	if c.FirstKey > 0 {
		w.Int(int64(c.FirstKey))
		w.Int(int64(c.LastKey))
		w.Int(int64(keyStep(c)))
	} else {
		w.Int(0)
		w.Int(0)
		w.Int(0)
	}
	cats := slices.Clone(c.Categories)
	slices.SortStableFunc(cats, func(a, b string) int {
		return aclCategoryRank(a) - aclCategoryRank(b)
	})
	w.Set(len(cats))
	for _, cat := range cats {
		w.Simple("@" + cat)
	}
	tips := commandTips[c.Name]
	w.Set(len(tips))
	for _, t := range tips {
		w.BulkString(t)
	}
	specs := keySpecs(c)
	w.Set(len(specs))
	for _, s := range specs {
		writeKeySpec(w, s)
	}
	if len(c.Subcommands) == 0 {
		w.Set(0) // as Redis 7.0 writes it
		return
	}
	w.Array(len(c.Subcommands))
	for _, s := range c.Subcommands {
		writeCommandInfo(w, s)
	}
}

// aclCategories are Redis 7's ACL categories in the order COMMAND INFO
// lists a command's (its ACLCommandCategories table).
var aclCategories = []string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
	"blocking", "dangerous", "connection", "transaction", "scripting",
}

// aclCategoryRank is cat's place in aclCategories (unknown ones last).
func aclCategoryRank(cat string) int {
	if i := slices.Index(aclCategories, cat); i >= 0 {
		return i
	}
	return len(aclCategories)
}

func writeKeySpec(w *resp.Writer, s keySpec) {
	if s.notes != "" {
		w.Map(4)
		w.BulkString("notes")
		w.BulkString(s.notes)
	} else {
		w.Map(3)
	}
	w.BulkString("flags")
	writeSimpleSet(w, s.flags)
	w.BulkString("begin_search")
	w.Map(2)
	w.BulkString("type")
	w.BulkString("index")
	w.BulkString("spec")
	w.Map(1)
	w.BulkString("index")
	w.Int(int64(s.index))
	w.BulkString("find_keys")
	w.Map(2)
	w.BulkString("type")
	if s.keynum {
		w.BulkString("keynum")
		w.BulkString("spec")
		w.Map(3)
		w.BulkString("keynumidx")
		w.Int(0)
		w.BulkString("firstkey")
		w.Int(1)
		w.BulkString("keystep")
		w.Int(1)
		return
	}
	w.BulkString("range")
	w.BulkString("spec")
	w.Map(3)
	w.BulkString("lastkey")
	w.Int(int64(s.lastKey))
	w.BulkString("keystep")
	w.Int(int64(s.keyStep))
	w.BulkString("limit")
	w.Int(0)
}

func writeSimpleSet(w *resp.Writer, items []string) {
	w.Set(len(items))
	for _, s := range items {
		w.Simple(s)
	}
}

// writeCommandDoc writes c's COMMAND DOCS map, its fields in Redis 7.0's
// order. Summary and group are always there: redis-cli reads them for
// every command it lists.
func writeCommandDoc(w *resp.Writer, c *Command) {
	d := c.Doc
	group := d.Group
	if group == "" {
		group = "generic"
	}
	n := 2
	for _, b := range []bool{d.Since != "", d.Complexity != "", len(d.DocFlags) > 0,
		d.DeprecatedSince != "", d.ReplacedBy != "", len(d.History) > 0,
		len(d.Args) > 0, len(c.Subcommands) > 0} {
		if b {
			n++
		}
	}
	w.Map(n)
	w.BulkString("summary")
	w.BulkString(d.Summary)
	if d.Since != "" {
		w.BulkString("since")
		w.BulkString(d.Since)
	}
	w.BulkString("group")
	w.BulkString(group)
	if d.Complexity != "" {
		w.BulkString("complexity")
		w.BulkString(d.Complexity)
	}
	if len(d.DocFlags) > 0 {
		w.BulkString("doc_flags")
		writeSimpleSet(w, d.DocFlags)
	}
	if d.DeprecatedSince != "" {
		w.BulkString("deprecated_since")
		w.BulkString(d.DeprecatedSince)
	}
	if d.ReplacedBy != "" {
		w.BulkString("replaced_by")
		w.BulkString(d.ReplacedBy)
	}
	if len(d.History) > 0 {
		w.BulkString("history")
		w.Set(len(d.History)) // a set in Redis 7.0, in its order
		for _, h := range d.History {
			w.Array(2)
			w.BulkString(h.Version)
			w.BulkString(h.Change)
		}
	}
	if len(d.Args) > 0 {
		w.BulkString("arguments")
		writeDocArgs(w, d.Args)
	}
	if len(c.Subcommands) > 0 {
		w.BulkString("subcommands")
		w.Map(len(c.Subcommands))
		for _, s := range c.Subcommands {
			w.BulkString(s.Name)
			writeCommandDoc(w, s)
		}
	}
}

func writeDocArgs(w *resp.Writer, args []Arg) {
	w.Array(len(args))
	for _, a := range args {
		writeDocArg(w, a)
	}
}

func writeDocArg(w *resp.Writer, a Arg) {
	var flags []string
	if a.Optional {
		flags = append(flags, "optional")
	}
	if a.Multiple {
		flags = append(flags, "multiple")
	}
	if a.MultipleToken {
		flags = append(flags, "multiple_token")
	}
	isKey := a.Type == ArgKey
	nested := a.Type == ArgOneOf || a.Type == ArgBlock
	n := 2
	for _, b := range []bool{isKey, a.Token != "", a.Summary != "", a.Since != "",
		a.DeprecatedSince != "", len(flags) > 0, nested} {
		if b {
			n++
		}
	}
	w.Map(n)
	w.BulkString("name")
	w.BulkString(a.Name)
	w.BulkString("type")
	w.BulkString(string(a.Type))
	if isKey {
		w.BulkString("key_spec_index")
		w.Int(int64(a.KeySpec))
	}
	if a.Token != "" {
		w.BulkString("token")
		w.BulkString(a.Token)
	}
	for _, f := range [...][2]string{{"summary", a.Summary}, {"since", a.Since}, {"deprecated_since", a.DeprecatedSince}} {
		if f[1] != "" {
			w.BulkString(f[0])
			w.BulkString(f[1])
		}
	}
	if len(flags) > 0 {
		w.BulkString("flags")
		writeSimpleSet(w, flags)
	}
	if nested {
		w.BulkString("arguments")
		writeDocArgs(w, a.Args)
	}
}
