package commands

import (
	"slices"
	"strconv"
	"strings"
)

func serverCommands() []*Command {
	srv := func(c ...string) []string { return append([]string{"admin"}, c...) }
	cfgSub := func(name string, arity int, run Handler) *Command {
		return &Command{Name: "config|" + name, Arity: arity, Flags: Admin | NoScript | Loading | Stale,
			Categories: srv("slow", "dangerous"), Run: run}
	}
	return []*Command{
		{Name: "info", Arity: -1, Flags: Loading | Stale, Categories: []string{"slow", "dangerous"}, Run: infoCmd},
		{Name: "dbsize", Arity: 1, Flags: ReadOnly | Fast, Categories: []string{"keyspace", "read", "fast"}, Run: dbsizeCmd},
		{Name: "flushdb", Arity: -1, Flags: Write, Categories: []string{"keyspace", "write", "slow", "dangerous"}, Run: flushCmd(false)},
		{Name: "flushall", Arity: -1, Flags: Write, Categories: []string{"keyspace", "write", "slow", "dangerous"}, Run: flushCmd(true)},
		{Name: "time", Arity: 1, Flags: Loading | Stale | Fast, Categories: []string{"fast"}, Run: timeCmd},
		{Name: "lastsave", Arity: 1, Flags: Loading | Stale | Fast, Categories: []string{"admin", "fast", "dangerous"}, Run: lastsaveCmd},
		{Name: "save", Arity: 1, Flags: Admin | NoScript | NoAsyncLoading | NoMulti, Categories: srv("slow", "dangerous"), Run: saveCmd},
		{Name: "bgsave", Arity: -1, Flags: Admin | NoScript | NoAsyncLoading, Categories: srv("slow", "dangerous"), Run: saveCmd},
		{Name: "shutdown", Arity: -1, Flags: Admin | NoScript | Loading | Stale | NoMulti | AllowBusy, Categories: srv("slow", "dangerous"), Run: shutdownCmd},
		{Name: "config", Arity: -2, Categories: []string{"slow"}, Subcommands: []*Command{
			cfgSub("get", -3, configGet),
			cfgSub("set", -4, configSet),
			cfgSub("resetstat", 2, configResetstat),
			cfgSub("rewrite", 2, configRewrite),
			{Name: "config|help", Arity: 2, Flags: Loading | Stale, Categories: []string{"slow"}, Run: configHelp},
		}},
	}
}

func dbsizeCmd(x *Ctx) { x.W.Int(int64(x.Tx.Len(x.DB))) }

func flushCmd(all bool) Handler {
	return func(x *Ctx) {
		if len(x.Args) > 2 || (len(x.Args) == 2 && !eq(x.Args[1], "async") && !eq(x.Args[1], "sync")) {
			x.Fail(ErrSyntax)
			return
		}
		dbs := []int{x.DB}
		if all {
			dbs = dbs[:0]
			for i := 0; i < x.S.store.Databases(); i++ {
				dbs = append(dbs, i)
			}
		}
		// One Flush for them all: a crash during FLUSHALL leaves every
		// database flushed or none (KV-6).
		full := dbs[:0]
		for _, db := range dbs {
			if x.Tx.Len(db) > 0 {
				full = append(full, db)
			}
		}
		if len(full) > 0 {
			if err := x.Tx.Flush(full...); err != nil {
				x.Fail(err)
				return
			}
		}
		x.W.OK()
	}
}

func timeCmd(x *Ctx) {
	now := x.S.cfg.Clock()
	x.W.Array(2)
	x.W.BulkString(strconv.FormatInt(now.Unix(), 10))
	x.W.BulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10))
}

func lastsaveCmd(x *Ctx) { x.W.Int(x.S.started.Unix()) }

func saveCmd(x *Ctx) {
	if len(x.Args) > 2 || (len(x.Args) == 2 && !eq(x.Args[1], "schedule")) {
		x.Fail(ErrSyntax)
		return
	}
	if x.Cmd.Name == "bgsave" {
		if x.InExec {
			// Redis starts no child inside EXEC: it schedules one.
			x.W.Simple("Background saving scheduled")
			return
		}
		x.W.Simple("Background saving started")
		return
	}
	x.W.OK()
}

func shutdownCmd(x *Ctx) {
	for _, a := range x.Args[1:] {
		if !eq(a, "nosave") && !eq(a, "save") && !eq(a, "now") && !eq(a, "force") && !eq(a, "abort") {
			x.Fail(ErrSyntax)
			return
		}
		if eq(a, "abort") {
			x.W.Error("ERR No shutdown in progress.")
			return
		}
	}
	if x.S.cfg.Shutdown == nil {
		x.Fail(ErrShutdown)
		return
	}
	x.S.log.Info("SHUTDOWN requested by a client")
	// A running script (even one that wrote) stops, so that the store
	// it holds can close.
	_ = x.S.scripts.kill(ErrScriptShutdown)
	x.S.cfg.Shutdown()
	// Redis closes the connection without a reply when it shuts down.
	x.CloseAfterReply()
}

func (s *Server) directives() map[string]string {
	if s.cfg.Directives == nil {
		return map[string]string{}
	}
	return s.cfg.Directives()
}

func configGet(x *Ctx) {
	all := x.S.directives()
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	slices.Sort(names)
	// An exact name is answered as the client spelled it; a pattern with
	// the canonical names it matches (as Redis 7 does).
	var out [][2]string
	seen := map[string]bool{}
	for _, p := range x.Args[2:] {
		lp := strings.ToLower(string(p))
		if !strings.ContainsAny(lp, "*?[\\") {
			if v, ok := all[lp]; ok && !seen[lp] {
				seen[lp] = true
				out = append(out, [2]string{string(p), v})
			}
			continue
		}
		for _, name := range names {
			if !seen[name] && globMatch([]byte(lp), []byte(name)) {
				seen[name] = true
				out = append(out, [2]string{name, all[name]})
			}
		}
	}
	x.W.Map(len(out))
	for _, kv := range out {
		x.W.BulkString(kv[0])
		x.W.BulkString(kv[1])
	}
}

func configResetstat(x *Ctx) {
	x.S.resetStats()
	x.W.OK()
}

func configRewrite(x *Ctx) {
	if x.S.cfg.RewriteConfig == nil {
		x.Fail(ErrNoConfigFile)
		return
	}
	if err := x.S.cfg.RewriteConfig(); err != nil {
		x.W.Error("ERR " + err.Error())
		return
	}
	x.W.OK()
}

func configHelp(x *Ctx) {
	lines := []string{
		"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>", "    Set the configuration <directive> to <value>.",
		"RESETSTAT", "    Reset statistics reported by the INFO command.",
		"REWRITE", "    Rewrite the configuration file.",
		"HELP", "    Prints this help.",
	}
	x.W.Array(len(lines))
	for _, l := range lines {
		x.W.Simple(l)
	}
}
