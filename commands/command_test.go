package commands

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oncekv/oncekv/resp"
	"github.com/oncekv/oncekv/store"
)

// cmdTestStore is a store that the COMMAND family never touches: it runs
// outside any transaction.
type cmdTestStore struct{}

var errCmdTestStore = errors.New("no store in this test")

func (cmdTestStore) View(func(store.Tx) error) (store.Ticket, error) { return nil, errCmdTestStore }
func (cmdTestStore) Update(func(store.Tx) error) (store.Ticket, error) {
	return nil, errCmdTestStore
}
func (cmdTestStore) Databases() int { return 16 }
func (cmdTestStore) Close() error   { return nil }

func newCmdTestServer(t *testing.T) *Server {
	t.Helper()
	return New(Config{}, cmdTestStore{})
}

// cmdTestValue is a decoded reply: kind is the RESP type byte ('+', '-',
// ':', '$', '*', '%', '~', '_'), str the text of a scalar, elems the
// elements of an aggregate (a map's keys and values alternate).
type cmdTestValue struct {
	kind  byte
	str   string
	null  bool
	elems []cmdTestValue
}

func (v cmdTestValue) String() string {
	if v.elems == nil && v.kind != '*' && v.kind != '%' && v.kind != '~' {
		if v.null {
			return "nil"
		}
		return string(v.kind) + v.str
	}
	parts := make([]string, len(v.elems))
	for i, e := range v.elems {
		parts[i] = e.String()
	}
	return string(v.kind) + "[" + strings.Join(parts, " ") + "]"
}

// field returns the value of key in a map (or a RESP2 flat array).
func (v cmdTestValue) field(key string) (cmdTestValue, bool) {
	for i := 0; i+1 < len(v.elems); i += 2 {
		if v.elems[i].str == key {
			return v.elems[i+1], true
		}
	}
	return cmdTestValue{}, false
}

func (v cmdTestValue) strs() []string {
	out := make([]string, len(v.elems))
	for i, e := range v.elems {
		out[i] = e.str
	}
	return out
}

func cmdTestParse(t *testing.T, b []byte) cmdTestValue {
	t.Helper()
	r := bufio.NewReader(bytes.NewReader(b))
	v, err := cmdTestRead(r)
	if err != nil {
		if len(b) > 300 {
			b = append(b[:300:300], "…"...)
		}
		t.Fatalf("parse %q: %v", b, err)
	}
	if r.Buffered() != 0 {
		rest, _ := r.Peek(r.Buffered())
		t.Fatalf("trailing bytes after one reply: %q", rest)
	}
	return v
}

func cmdTestRead(r *bufio.Reader) (cmdTestValue, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return cmdTestValue{}, err
	}
	if !strings.HasSuffix(line, "\r\n") || len(line) < 3 {
		return cmdTestValue{}, fmt.Errorf("bad line %q", line)
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+', '-', ':':
		return cmdTestValue{kind: kind, str: body}, nil
	case '_':
		return cmdTestValue{kind: kind, null: true}, nil
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return cmdTestValue{}, err
		}
		if n < 0 {
			return cmdTestValue{kind: kind, null: true}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return cmdTestValue{}, err
		}
		if string(buf[n:]) != "\r\n" {
			return cmdTestValue{}, fmt.Errorf("bulk string without CRLF")
		}
		return cmdTestValue{kind: kind, str: string(buf[:n])}, nil
	case '*', '~', '%':
		n, err := strconv.Atoi(body)
		if err != nil {
			return cmdTestValue{}, err
		}
		if n < 0 {
			return cmdTestValue{kind: kind, null: true}, nil
		}
		if kind == '%' {
			n *= 2
		}
		v := cmdTestValue{kind: kind, elems: []cmdTestValue{}}
		for i := 0; i < n; i++ {
			e, err := cmdTestRead(r)
			if err != nil {
				return cmdTestValue{}, err
			}
			v.elems = append(v.elems, e)
		}
		return v, nil
	}
	return cmdTestValue{}, fmt.Errorf("unknown type %q", kind)
}

// cmdTestRun runs one command line on a fresh connection speaking proto.
func cmdTestRun(t *testing.T, s *Server, proto int, args ...string) cmdTestValue {
	t.Helper()
	c := &resp.Conn{W: resp.NewWriter(proto), Authed: true}
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("%v panicked: %v", args, r)
			}
		}()
		s.Serve(c, argv)
		s.BeforeReply(c)
	}()
	return cmdTestParse(t, c.W.Bytes())
}

// allCommands lists every registered command and subcommand.
func allCommands(s *Server) []*Command {
	var out []*Command
	for _, c := range s.table.sorted() {
		out = append(out, c)
		out = append(out, c.Subcommands...)
	}
	return out
}

// TestEveryCommandHasDocs fails when a command is registered without an
// entry in docs.go, or with an entry that COMMAND DOCS cannot describe.
func TestEveryCommandHasDocs(t *testing.T) {
	s := newCmdTestServer(t)
	for _, c := range allCommands(s) {
		d, ok := docs[c.Name]
		if !ok {
			t.Errorf("%s: no entry in docs (commands/docs.go)", c.Name)
			continue
		}
		if c.Doc.Summary == "" {
			t.Errorf("%s: attachDocs left Doc empty", c.Name)
		}
		keys := cmdTestCheckDoc(t, c.Name, d, len(keySpecs(c)))
		// Shard channels have key specs (flagged not_key, for cluster
		// slots) but are documented as strings, as in Redis 7.0.
		notKey := c.FirstKey > 0 && slices.Contains(keySpecFlagsOf(c, 0), "not_key")
		// EVAL's keys follow numkeys (movablekeys): no fixed FirstKey.
		hasKeys := c.FirstKey > 0 && !notKey || c.Flags&MovableKeys != 0
		if (keys > 0) != hasKeys {
			t.Errorf("%s: %d documented key arguments, but FirstKey is %d", c.Name, keys, c.FirstKey)
		}
	}
	// Entries of commands not registered (yet) must be well formed too; a
	// command with keys is assumed to have one key spec.
	for name, d := range docs {
		if s.table.byFullName([]byte(name)) == nil {
			cmdTestCheckDoc(t, name, d, 1)
		}
	}
}

// cmdTestCheckDoc checks one docs entry and returns how many key
// arguments it documents.
func cmdTestCheckDoc(t *testing.T, name string, d Doc, nspecs int) (keys int) {
	t.Helper()
	if d.Summary == "" || d.Since == "" || d.Group == "" || d.Complexity == "" {
		t.Errorf("%s: docs entry lacks summary, since, group or complexity: %+v", name, d)
	}
	var check func(path string, a Arg)
	check = func(path string, a Arg) {
		path += "/" + a.Name
		if a.Name == "" {
			t.Errorf("%s%s: argument without name", name, path)
		}
		switch a.Type {
		case ArgString, ArgInteger, ArgDouble, ArgPattern, ArgUnixTime:
		case ArgKey:
			keys++
			if a.KeySpec < 0 || a.KeySpec >= nspecs {
				t.Errorf("%s%s: key_spec_index %d, but the command has %d key specs",
					name, path, a.KeySpec, nspecs)
			}
		case ArgPureToken:
			if a.Token == "" {
				t.Errorf("%s%s: pure token without token", name, path)
			}
		case ArgOneOf, ArgBlock:
			if len(a.Args) == 0 {
				t.Errorf("%s%s: %s without arguments", name, path, a.Type)
			}
		default:
			t.Errorf("%s%s: unknown type %q", name, path, a.Type)
		}
		if len(a.Args) > 0 && a.Type != ArgOneOf && a.Type != ArgBlock {
			t.Errorf("%s%s: nested arguments under a %s", name, path, a.Type)
		}
		for _, b := range a.Args {
			check(path, b)
		}
	}
	for _, a := range d.Args {
		check("", a)
	}
	return keys
}

func TestCommandCount(t *testing.T) {
	s := newCmdTestServer(t)
	got := cmdTestRun(t, s, 2, "COMMAND", "COUNT")
	if got.kind != ':' || got.str != strconv.Itoa(s.table.Len()) {
		t.Fatalf("COMMAND COUNT = %v, want :%d", got, s.table.Len())
	}
}

func TestCommandInfoShape(t *testing.T) {
	s := newCmdTestServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("RESP", proto), func(t *testing.T) {
			got := cmdTestRun(t, s, proto, "command", "info", "GET", "nosuch", "client|setname", "command")
			if got.kind != '*' || len(got.elems) != 4 {
				t.Fatalf("COMMAND INFO: %v", got)
			}
			e := got.elems[0]
			if len(e.elems) != 10 {
				t.Fatalf("entry of get has %d fields: %v", len(e.elems), e)
			}
			set := byte('*')
			if proto == 3 {
				set = '~'
			}
			checks := []struct {
				what string
				ok   bool
			}{
				{"name", e.elems[0].kind == '$' && e.elems[0].str == "get"},
				{"arity", e.elems[1].String() == ":2"},
				{"flags", e.elems[2].String() == string(set)+"[+readonly +fast]"},
				{"keys", e.elems[3].str == "1" && e.elems[4].str == "1" && e.elems[5].str == "1"},
				{"categories", e.elems[6].kind == set && strings.Join(e.elems[6].strs(), " ") == "@read @string @fast"},
				{"tips", e.elems[7].kind == set && len(e.elems[7].elems) == 0},
				{"key specs", e.elems[8].kind == set && len(e.elems[8].elems) == 1},
				{"subcommands", len(e.elems[9].elems) == 0},
			}
			for _, c := range checks {
				if !c.ok {
					t.Errorf("get: bad %s: %v", c.what, e)
				}
			}
			spec := e.elems[8].elems[0]
			flags, _ := spec.field("flags")
			begin, _ := spec.field("begin_search")
			find, _ := spec.field("find_keys")
			bspec, _ := begin.field("spec")
			fspec, _ := find.field("spec")
			if flags.String() != string(set)+"[+RO +access]" {
				t.Errorf("key spec flags: %v", flags)
			}
			if bt, _ := begin.field("type"); bt.str != "index" {
				t.Errorf("begin_search: %v", begin)
			}
			if idx, _ := bspec.field("index"); idx.String() != ":1" {
				t.Errorf("begin_search spec: %v", bspec)
			}
			if ft, _ := find.field("type"); ft.str != "range" {
				t.Errorf("find_keys: %v", find)
			}
			for k, want := range map[string]string{"lastkey": ":0", "keystep": ":1", "limit": ":0"} {
				if v, _ := fspec.field(k); v.String() != want {
					t.Errorf("find_keys spec %s = %v, want %s", k, v, want)
				}
			}
			if !got.elems[1].null {
				t.Errorf("unknown command: %v, want nil", got.elems[1])
			}
			if n := got.elems[2].elems[0]; n.str != "client|setname" {
				t.Errorf("subcommand by full name: %v", got.elems[2])
			}
			cmd := got.elems[3]
			if cmd.elems[0].str != "command" || cmd.elems[1].String() != ":-1" {
				t.Errorf("command entry: %v", cmd)
			}
			subs := map[string]string{}
			for _, sub := range cmd.elems[9].elems {
				subs[sub.elems[0].str] = sub.elems[1].str
			}
			for name, arity := range map[string]string{
				"command|count": "2", "command|info": "-2", "command|docs": "-2",
				"command|list": "-2", "command|getkeys": "-4", "command|help": "2",
			} {
				if subs[name] != arity {
					t.Errorf("subcommand %s: arity %q, want %s (all: %v)", name, subs[name], arity, subs)
				}
			}
		})
	}
}

func TestCommandInfoKeySpecs(t *testing.T) {
	s := newCmdTestServer(t)
	tests := []struct {
		name string
		want []keySpec
	}{
		{"ping", nil},
		{"mset", []keySpec{{flags: []string{"OW", "update"}, index: 1, lastKey: -1, keyStep: 2}}},
		{"del", []keySpec{{flags: []string{"RM", "delete"}, index: 1, lastKey: -1, keyStep: 1}}},
		{"rename", []keySpec{
			{flags: []string{"RW", "access", "delete"}, index: 1, keyStep: 1},
			{flags: []string{"OW", "update"}, index: 2, keyStep: 1},
		}},
		{"incr", []keySpec{{flags: []string{"RW", "access", "update"}, index: 1, keyStep: 1}}},
		{"copy", []keySpec{
			{flags: []string{"RO", "access"}, index: 1, keyStep: 1},
			{flags: []string{"OW", "update"}, index: 2, keyStep: 1},
		}},
		{"move", []keySpec{{flags: []string{"RW", "access", "update"}, index: 1, keyStep: 1}}},
		{"swapdb", nil},
		{"object|encoding", []keySpec{{flags: []string{"RO"}, index: 2, keyStep: 1}}},
	}
	for _, tt := range tests {
		c := s.table.byFullName([]byte(tt.name))
		if c == nil {
			t.Errorf("%s not registered", tt.name)
			continue
		}
		if got := keySpecs(c); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("keySpecs(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCommandAll(t *testing.T) {
	s := newCmdTestServer(t)
	for _, args := range [][]string{{"COMMAND"}, {"COMMAND", "INFO"}} {
		got := cmdTestRun(t, s, 3, args...)
		if got.kind != '*' || len(got.elems) != s.table.Len() {
			t.Fatalf("%v: %d entries, want %d", args, len(got.elems), s.table.Len())
		}
		for _, e := range got.elems {
			if len(e.elems) != 10 || e.elems[0].kind != '$' {
				t.Errorf("%v: malformed entry %v", args, e)
			}
		}
	}
}

func TestCommandDocs(t *testing.T) {
	s := newCmdTestServer(t)
	for _, proto := range []int{2, 3} {
		got := cmdTestRun(t, s, proto, "COMMAND", "DOCS", "set", "nosuch", "CLIENT|KILL")
		wantKind := byte('%')
		if proto == 2 {
			wantKind = '*'
		}
		if got.kind != wantKind || len(got.elems) != 4 {
			t.Fatalf("RESP%d: COMMAND DOCS set nosuch client|kill = %v", proto, got)
		}
		set, ok := got.field("set")
		if !ok {
			t.Fatalf("no set in %v", got)
		}
		for k, want := range map[string]string{"summary": docs["set"].Summary, "since": "1.0.0", "group": "string", "complexity": "O(1)"} {
			if v, _ := set.field(k); v.kind != '$' || v.str != want {
				t.Errorf("RESP%d: set %s = %v, want $%s", proto, k, v, want)
			}
		}
		args, _ := set.field("arguments")
		var names []string
		for _, a := range args.elems {
			n, _ := a.field("name")
			names = append(names, n.str)
		}
		if strings.Join(names, " ") != "key value condition get expiration" {
			t.Errorf("RESP%d: set arguments %v", proto, names)
		}
		key := args.elems[0]
		if ksi, _ := key.field("key_spec_index"); ksi.String() != ":0" {
			t.Errorf("key argument: %v", key)
		}
		cond := args.elems[2]
		if typ, _ := cond.field("type"); typ.str != "oneof" {
			t.Errorf("condition: %v", cond)
		}
		if fl, _ := cond.field("flags"); len(fl.elems) != 1 || fl.elems[0].String() != "+optional" {
			t.Errorf("condition flags: %v", fl)
		}
		if _, ok := got.field("client|kill"); !ok {
			t.Errorf("no client|kill in %v", got)
		}
	}

	// Every command, with its subcommands nested.
	got := cmdTestRun(t, s, 3, "COMMAND", "DOCS")
	if len(got.elems) != 2*s.table.Len() {
		t.Fatalf("COMMAND DOCS: %d entries, want %d", len(got.elems)/2, s.table.Len())
	}
	client, _ := got.field("client")
	subs, ok := client.field("subcommands")
	if !ok {
		t.Fatalf("client has no subcommands: %v", client)
	}
	if _, ok := subs.field("client|setname"); !ok {
		t.Errorf("client subcommands: %v", subs)
	}
	getset, _ := got.field("getset")
	if fl, _ := getset.field("doc_flags"); fl.String() != "~[+deprecated]" {
		t.Errorf("getset doc_flags: %v", fl)
	}
}

// cmdTestUsage renders a command's arguments from its COMMAND DOCS map the
// way redis-cli builds its hints.
func cmdTestUsage(doc cmdTestValue) string {
	args, _ := doc.field("arguments")
	return cmdTestJoinArgs(args.elems, " ")
}

func cmdTestJoinArgs(args []cmdTestValue, sep string) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = cmdTestArgUsage(a)
	}
	return strings.Join(parts, sep)
}

func cmdTestArgUsage(a cmdTestValue) string {
	name, _ := a.field("name")
	typ, _ := a.field("type")
	token, hasToken := a.field("token")
	flags, _ := a.field("flags")
	nested, _ := a.field("arguments")
	has := func(f string) bool {
		for _, e := range flags.elems {
			if e.str == f {
				return true
			}
		}
		return false
	}
	var value string
	switch typ.str {
	case "oneof":
		value = cmdTestJoinArgs(nested.elems, "|")
	case "block":
		value = cmdTestJoinArgs(nested.elems, " ")
	case "pure-token":
	default:
		value = name.str
	}
	tok := ""
	if hasToken {
		tok = token.str
		if typ.str != "pure-token" {
			tok += " "
		}
	}
	out := tok + value
	if has("multiple") {
		rep := value
		if has("multiple_token") {
			rep = tok + value
		}
		out += " [" + rep + " ...]"
	}
	if has("optional") {
		out = "[" + out + "]"
	}
	return out
}

func TestCommandDocsUsage(t *testing.T) {
	s := newCmdTestServer(t)
	want := map[string]string{
		"set":            "key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]",
		"get":            "key",
		"mset":           "key value [key value ...]",
		"del":            "key [key ...]",
		"expire":         "key seconds [NX|XX|GT|LT]",
		"scan":           "cursor [MATCH pattern] [COUNT count] [TYPE type]",
		"hello":          "[protover [AUTH username password] [SETNAME clientname]]",
		"getex":          "key [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|PERSIST]",
		"ping":           "[message]",
		"info":           "[section [section ...]]",
		"rename":         "key newkey",
		"flushdb":        "[ASYNC|SYNC]",
		"client|list":    "[TYPE NORMAL|MASTER|REPLICA|PUBSUB] [ID client-id [client-id ...]]",
		"client|pause":   "timeout [WRITE|ALL]",
		"client|unblock": "client-id [TIMEOUT|ERROR]",
		"client|unpause": "",
		"command|list":   "[FILTERBY MODULE module-name|ACLCAT category|PATTERN pattern]",
		"once.claim":     "key [LEASE ms] [WAIT ms] [FINGERPRINT fp]",
		"once.complete":  "key token answer [KEEP ms]",
		"once.abort":     "key token [message]",
		"once.extend":    "key token LEASE ms",
		"once.wait":      "key [TIMEOUT ms]",
		"once.status":    "key",

		"copy":            "source destination [DB destination-db] [REPLACE]",
		"move":            "key db",
		"swapdb":          "index1 index2",
		"object|refcount": "key",
	}
	for name, usage := range want {
		var doc cmdTestValue
		if s.table.byFullName([]byte(name)) != nil {
			got := cmdTestRun(t, s, 2, "COMMAND", "DOCS", name)
			var ok bool
			if doc, ok = got.field(name); !ok {
				t.Errorf("%s: no docs in %v", name, got)
				continue
			}
		} else {
			// Not registered (yet): render its docs entry directly.
			w := resp.NewWriter(2)
			writeCommandDoc(w, &Command{Name: name, Doc: docs[name]})
			doc = cmdTestParse(t, w.Bytes())
		}
		if u := cmdTestUsage(doc); u != usage {
			t.Errorf("%s usage:\n got %s\nwant %s", name, u, usage)
		}
	}
}

func TestCommandGetKeys(t *testing.T) {
	s := newCmdTestServer(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"set", "a", "b"}, "*[$a]"},
		{[]string{"SET", "a", "b", "EX", "10"}, "*[$a]"},
		{[]string{"mset", "a", "1", "b", "2"}, "*[$a $b]"},
		{[]string{"mget", "a", "b", "c"}, "*[$a $b $c]"},
		{[]string{"rename", "a", "b"}, "*[$a $b]"},
		{[]string{"copy", "a", "b", "DB", "1", "REPLACE"}, "*[$a $b]"},
		{[]string{"move", "a", "1"}, "*[$a]"},
		{[]string{"object", "encoding", "a"}, "*[$a]"},
		{[]string{"swapdb", "0", "1"}, "-ERR The command has no key arguments"},
		{[]string{"get", "a", "b"}, "-ERR Invalid number of arguments specified for command"},
		{[]string{"nosuch", "a"}, "-ERR Invalid command specified"},
		{[]string{"ping", "x"}, "-ERR The command has no key arguments"},
		{[]string{"config", "get", "x"}, "-ERR The command has no key arguments"},
		{[]string{"config", "nosuch", "x"}, "-ERR Invalid command specified"},
	}
	for _, tt := range tests {
		got := cmdTestRun(t, s, 2, append([]string{"COMMAND", "GETKEYS"}, tt.args...)...)
		if got.String() != tt.want {
			t.Errorf("COMMAND GETKEYS %v = %v, want %s", tt.args, got, tt.want)
		}
	}
	if got := cmdTestRun(t, s, 2, "COMMAND", "GETKEYS", "get"); got.kind != '-' {
		t.Errorf("COMMAND GETKEYS get = %v, want an arity error", got)
	}
	got := cmdTestRun(t, s, 3, "COMMAND", "GETKEYSANDFLAGS", "rename", "a", "b")
	if want := "*[*[$a ~[+RW +access +delete]] *[$b ~[+OW +update]]]"; got.String() != want {
		t.Errorf("GETKEYSANDFLAGS rename a b = %v, want %s", got, want)
	}
}

func TestCommandList(t *testing.T) {
	s := newCmdTestServer(t)
	tests := []struct {
		args    []string
		has     []string
		hasNot  []string
		wantErr string
	}{
		{args: nil, has: []string{"get", "client", "client|setname", "command|list"}},
		{args: []string{"FILTERBY", "PATTERN", "CLIENT*"}, has: []string{"client", "client|kill"}, hasNot: []string{"get"}},
		{args: []string{"filterby", "aclcat", "STRING"}, has: []string{"get", "incr"}, hasNot: []string{"del", "ping"}},
		{args: []string{"filterby", "aclcat", "nosuch"}},
		{args: []string{"filterby", "module", "x"}},
		{args: []string{"filterby", "foo", "x"}, wantErr: "-ERR syntax error"},
		{args: []string{"filterby"}, wantErr: "-ERR syntax error"},
		{args: []string{"foo"}, wantErr: "-ERR syntax error"},
	}
	for _, tt := range tests {
		got := cmdTestRun(t, s, 2, append([]string{"COMMAND", "LIST"}, tt.args...)...)
		if tt.wantErr != "" {
			if got.String() != tt.wantErr {
				t.Errorf("COMMAND LIST %v = %v, want %s", tt.args, got, tt.wantErr)
			}
			continue
		}
		if got.kind != '*' {
			t.Errorf("COMMAND LIST %v = %v", tt.args, got)
			continue
		}
		names := map[string]bool{}
		for _, n := range got.strs() {
			names[n] = true
		}
		for _, n := range tt.has {
			if !names[n] {
				t.Errorf("COMMAND LIST %v lacks %s", tt.args, n)
			}
		}
		for _, n := range tt.hasNot {
			if names[n] {
				t.Errorf("COMMAND LIST %v has %s", tt.args, n)
			}
		}
		if len(tt.has) == 0 && len(got.elems) != 0 {
			t.Errorf("COMMAND LIST %v = %v, want empty", tt.args, got)
		}
	}
	all := cmdTestRun(t, s, 2, "COMMAND", "LIST")
	if len(all.elems) != len(allCommands(s)) {
		t.Errorf("COMMAND LIST: %d names, want %d", len(all.elems), len(allCommands(s)))
	}
}

func TestCommandHelpAndErrors(t *testing.T) {
	s := newCmdTestServer(t)
	got := cmdTestRun(t, s, 2, "COMMAND", "HELP")
	if got.kind != '*' || len(got.elems) < 4 || !strings.HasPrefix(got.elems[0].str, "COMMAND <subcommand>") ||
		got.elems[len(got.elems)-2].String() != "+HELP" {
		t.Errorf("COMMAND HELP = %v", got)
	}
	for args, want := range map[string]string{
		"COMMAND COUNT x": "-ERR wrong number of arguments for 'command|count' command",
		"COMMAND HELP x":  "-ERR wrong number of arguments for 'command|help' command",
	} {
		if got := cmdTestRun(t, s, 2, strings.Fields(args)...); got.String() != want {
			t.Errorf("%s = %v, want %s", args, got, want)
		}
	}
}

// The CLIENT container's own ACL categories are Redis 7.0's: @slow only
// (client.json names none; the subcommands are @connection). COMMAND LIST
// FILTERBY ACLCAT connection lists client|… but not client.
func TestClientContainerCategories(t *testing.T) {
	s := newCmdTestServer(t)
	got := cmdTestRun(t, s, 2, "command", "info", "client")
	if len(got.elems) != 1 || len(got.elems[0].elems) != 10 {
		t.Fatalf("COMMAND INFO client: %v", got)
	}
	if cats := strings.Join(got.elems[0].elems[6].strs(), " "); cats != "@slow" {
		t.Errorf("client's categories: %q, want @slow (Redis 7.0)", cats)
	}
	for _, n := range cmdTestRun(t, s, 2, "command", "list", "filterby", "aclcat", "connection").strs() {
		if n == "client" {
			t.Errorf("COMMAND LIST FILTERBY ACLCAT connection lists client; Redis 7.0 does not")
		}
	}
}

// CLIENT HELP lists a subset of Redis's subcommands, but the lines it has
// are Redis 7.0's: KILL names the filters it takes since 1fa5f62 (TYPE,
// LADDR, USER, SKIPME), HELP "Prints this help." as every other HELP, and
// PAUSE, UNPAUSE, REPLY, UNBLOCK and NO-EVICT are worded and ordered as
// there.
func TestClientHelpKillLinesAreRedis(t *testing.T) {
	s := newCmdTestServer(t)
	got := strings.Join(cmdTestRun(t, s, 2, "client", "help").strs(), "\n")
	for _, want := range []string{
		"KILL <option> <value> [<option> <value> [...]]\n    Kill connections. Options are:\n" +
			"    * ADDR (<ip:port>|<unixsocket>:0)\n      Kill connections made from the specified address\n" +
			"    * LADDR (<ip:port>|<unixsocket>:0)\n      Kill connections made to specified local address\n" +
			"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)\n      Kill connections by type.\n" +
			"    * USER <username>\n      Kill connections authenticated by <username>.\n" +
			"    * SKIPME (YES|NO)\n      Skip killing current connection (default: yes).\n",
		"HELP\n    Prints this help.",
		"UNPAUSE\n    Stop the current client pause, resuming traffic.\n" +
			"PAUSE <timeout> [WRITE|ALL]\n    Suspend all, or just write, clients for <timeout> milliseconds.\n" +
			"REPLY (ON|OFF|SKIP)\n    Control the replies sent to the current connection.\n" +
			"SETNAME <name>\n    Assign the name <name> to the current connection.\n" +
			"UNBLOCK <clientid> [TIMEOUT|ERROR]\n    Unblock the specified blocked client.\n",
		"NO-EVICT (ON|OFF)\n    Protect current client connection from eviction.\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("CLIENT HELP lacks Redis 7.0's\n%s\ngot:\n%s", want, got)
		}
	}
}
