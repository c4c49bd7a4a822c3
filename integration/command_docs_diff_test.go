package integration

import (
	"bytes"
	"slices"
	"sort"
	"strings"
	"testing"
)

// docsRedisLacks are the commands oncekv documents that Redis 7.0 does
// not have, besides the ONCE commands: BACKUP (oncekv's), and CLIENT
// SETINFO and NO-TOUCH (README: Redis 7.2's). Their docs are oncekv's
// own, compared with nothing. Sorted.
var docsRedisLacks = []string{"backup", "client|no-touch", "client|setinfo"}

// TestDiffCommandDocs compares COMMAND DOCS of every command (and
// subcommand) oncekv implements that Redis 7.0 has, byte for byte, in
// RESP2 and RESP3: docs in Redis 7.0's words, history and per-argument
// fields included (the contract: where it is silent, do as Redis 7). A
// container's subcommands are compared one by one, for those both have:
// Redis lists more of them, in an order of its hash table.
func TestDiffCommandDocs(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	common, containers := docsCommonNames(t, p)
	var steps []Step
	var leaves []string
	for _, name := range common {
		if containers[name] {
			steps = append(steps, Step{Args: []string{"COMMAND", "DOCS", name}, Alike: docsReplyAlike})
			continue
		}
		steps = append(steps, cmd("COMMAND", "DOCS", name))
		leaves = append(leaves, name)
	}
	steps = append(steps,
		cmd(append([]string{"COMMAND", "DOCS"}, leaves...)...),
		cmd("COMMAND", "DOCS", "GeT", "Client|Kill", "nosuch", "client|nosuch", "get|x"),
		// All of them: Redis's order is its hash table's, and it has more.
		Step{Args: []string{"COMMAND", "DOCS"}, Alike: docsReplyAlike},
	)
	p.RunScripts(t, []Script{{"command-docs", steps}})
}

// docsCommonNames returns the full names ("get", "client|kill") that
// oncekv's COMMAND DOCS lists and Redis 7.0's has too, sorted, and which
// of them are containers. It fails unless the names Redis lacks are
// exactly the ONCE commands and docsRedisLacks (none against a second
// redis-server).
func docsCommonNames(tb testing.TB, p *DiffPair) (common []string, containers map[string]bool) {
	tb.Helper()
	o := DialRaw(tb, p.Other)
	defer o.Close()
	r := DialRaw(tb, p.Redis)
	defer r.Close()
	all := docsDo(tb, o, "COMMAND", "DOCS")
	containers = map[string]bool{}
	var names []string
	docsPairs(all, func(name string, doc *Frame) {
		names = append(names, name)
		if subs := docsField(doc, "subcommands"); subs != nil {
			containers[name] = true
			docsPairs(subs, func(sub string, _ *Frame) { names = append(names, sub) })
		}
	})
	var lacks []string
	for _, name := range names {
		f := docsDo(tb, r, "COMMAND", "DOCS", name)
		if len(f.Elems) == 0 {
			lacks = append(lacks, name)
			continue
		}
		common = append(common, name)
	}
	sort.Strings(common)
	sort.Strings(lacks)
	lacks = slices.DeleteFunc(lacks, func(n string) bool { return strings.HasPrefix(n, "once.") })
	want := docsRedisLacks
	if p.O == nil { // ONCEKV_DIFF_AGAINST=redis: two redis-servers
		want = nil
	}
	if !slices.Equal(lacks, want) {
		tb.Fatalf("commands Redis lacks, besides ONCE.*: %q, want %q", lacks, want)
	}
	if len(common) < 100 {
		tb.Fatalf("only %d commands in common: %q", len(common), common)
	}
	return common, containers
}

// docsDo sends a command and reads its reply, failing tb on error.
func docsDo(tb testing.TB, c *RawConn, args ...string) *Frame {
	tb.Helper()
	f, err := rawDo(c, args...)
	if err != nil {
		tb.Fatalf("%s: %v", fmtArgs(args), err)
	}
	return f
}

// docsPairs calls fn for each name and value of a map reply (or of its
// RESP2 form, a flat array).
func docsPairs(f *Frame, fn func(name string, v *Frame)) {
	for i := 0; i+1 < len(f.Elems); i += 2 {
		fn(f.Elems[i].Str, f.Elems[i+1])
	}
}

// docsField is the value of field name in a doc map, or nil.
func docsField(doc *Frame, name string) *Frame {
	var v *Frame
	docsPairs(doc, func(k string, f *Frame) {
		if k == name {
			v = f
		}
	})
	return v
}

// docsReplyAlike accepts a COMMAND DOCS reply of oncekv (b) that lists, of
// the commands Redis (a) has, some or all, each documented byte for byte
// as Redis does; a container's subcommands alike, each one compared. Of
// the commands Redis lacks, only ONCE.* and docsRedisLacks may be listed.
func docsReplyAlike(a, b *Frame) bool {
	if a.Type != b.Type {
		return false
	}
	ra := map[string]*Frame{}
	docsPairs(a, func(name string, doc *Frame) { ra[name] = doc })
	ok := len(b.Elems)%2 == 0
	docsPairs(b, func(name string, doc *Frame) {
		want := ra[name]
		switch {
		case want == nil:
			ok = ok && (strings.HasPrefix(name, "once.") || slices.Contains(docsRedisLacks, name))
		case bytes.Equal(want.Raw, doc.Raw):
		default:
			ok = ok && docsDocAlike(want, doc)
		}
	})
	return ok
}

// docsDocAlike compares two docs of one command field by field, in order,
// byte for byte but for subcommands, which docsReplyAlike compares.
func docsDocAlike(a, b *Frame) bool {
	if a.Type != b.Type || len(a.Elems) != len(b.Elems) {
		return false
	}
	for i := 0; i+1 < len(a.Elems); i += 2 {
		ka, va, kb, vb := a.Elems[i], a.Elems[i+1], b.Elems[i], b.Elems[i+1]
		if !bytes.Equal(ka.Raw, kb.Raw) {
			return false
		}
		if ka.Str == "subcommands" {
			if !docsReplyAlike(va, vb) {
				return false
			}
		} else if !bytes.Equal(va.Raw, vb.Raw) {
			return false
		}
	}
	return true
}
