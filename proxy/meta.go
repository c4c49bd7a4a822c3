package proxy

import (
	"fmt"
	"strings"
)

// The upstream's own command table (COMMAND), read once it answers. The
// proxy needs it for the commands oncekv's table does not have (lists,
// hashes, streams…): where their keys are, to route them in a cluster,
// and whether a name is a command at all, to answer an unauthenticated
// client as Redis does.

// cmdEntry is what COMMAND says of one command or subcommand.
type cmdEntry struct {
	name               string
	arity              int
	first, last, step  int
	movable, container bool
}

// commandMeta is the upstream's table by lower-case name; subcommands
// are "container|sub".
type commandMeta struct {
	cmds map[string]cmdEntry
}

// lookup finds the entry for a command line: the subcommand's when the
// command is a container. A nil table knows nothing.
func (m *commandMeta) lookup(args [][]byte) (cmdEntry, bool) {
	if m == nil {
		return cmdEntry{}, false
	}
	name := strings.ToLower(string(args[0]))
	e, ok := m.cmds[name]
	if ok && e.container && len(args) > 1 {
		if sub, ok := m.cmds[name+"|"+strings.ToLower(string(args[1]))]; ok {
			return sub, true
		}
	}
	return e, ok
}

// loadMeta reads COMMAND from the upstream.
func (p *Proxy) loadMeta() (*commandMeta, error) {
	var n *node
	if p.cl != nil {
		var bad string
		if n, bad = p.cl.anyMaster(); bad != "" {
			return nil, fmt.Errorf("%w: %s", ErrNoMaster, bad)
		}
	} else if n = p.master.Load(); n == nil {
		return nil, ErrNoMaster
	}
	r, err := p.oneShot(n, []byte("COMMAND"))
	if err != nil {
		return nil, err
	}
	v, err := parseReply(r)
	if err != nil {
		return nil, err
	}
	if v.typ != '*' {
		return nil, fmt.Errorf("%w: COMMAND answered %q", ErrUpstreamProtocol, trimCRLF(r))
	}
	m := &commandMeta{cmds: make(map[string]cmdEntry, len(v.elems)*2)}
	for _, e := range v.elems {
		m.add(e)
	}
	return m, nil
}

// add records one COMMAND entry: [name, arity, flags, first, last, step,
// categories, tips, key specs, subcommands] (Redis 7; 6.x has the first
// seven).
func (m *commandMeta) add(e value) {
	if e.typ != '*' || len(e.elems) < 6 {
		return
	}
	ce := cmdEntry{
		name:  strings.ToLower(e.elems[0].text()),
		arity: int(e.elems[1].num),
		first: int(e.elems[3].num), last: int(e.elems[4].num), step: int(e.elems[5].num),
	}
	for _, f := range e.elems[2].elems {
		if f.text() == "movablekeys" {
			ce.movable = true
		}
	}
	if len(e.elems) >= 10 && len(e.elems[9].elems) > 0 {
		ce.container = true
		for _, sub := range e.elems[9].elems {
			m.add(sub)
		}
	}
	m.cmds[ce.name] = ce
}
