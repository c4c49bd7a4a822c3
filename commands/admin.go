package commands

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/oncekv/oncekv/store"
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
		{Name: "save", Arity: 1, Flags: Admin | NoScript | NoMulti, Categories: srv("slow", "dangerous"), Run: saveCmd},
		{Name: "bgsave", Arity: -1, Flags: Admin | NoScript, Categories: srv("slow", "dangerous"), Run: saveCmd},
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
		for _, db := range dbs {
			if x.Tx.Len(db) == 0 {
				continue
			}
			if err := x.Tx.Flush(db); err != nil {
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

func configSet(x *Ctx) {
	if len(x.Args)%2 != 0 {
		x.W.Error("ERR wrong number of arguments for 'config|set' command")
		return
	}
	x.W.Error(fmt.Sprintf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", x.Args[2]))
}

func configResetstat(x *Ctx) {
	st := &x.S.stats
	st.commands.Store(0)
	st.keyspaceHits.Store(0)
	st.keyspaceMiss.Store(0)
	st.expiredKeys.Store(0)
	if x.S.cfg.ExpiredKeys != nil {
		st.expiredKeys.Store(-x.S.cfg.ExpiredKeys())
	}
	st.rejectedCalls.Store(0)
	x.W.OK()
}

func configRewrite(x *Ctx) {
	x.W.Error("ERR The server is running without a config file")
}

func configHelp(x *Ctx) {
	lines := []string{
		"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>", "    Set the configuration <directive> to <value>.",
		"RESETSTAT", "    Reset statistics reported by the INFO command.",
		"HELP", "    Print this help.",
	}
	x.W.Array(len(lines))
	for _, l := range lines {
		x.W.Simple(l)
	}
}

// infoSections are INFO's sections in order, each a function writing
// "field:value" lines.
var infoSections = []struct {
	name string
	fn   func(s *Server, x *Ctx, b *strings.Builder)
}{
	{"server", infoServer},
	{"clients", infoClients},
	{"memory", infoMemory},
	{"persistence", infoPersistence},
	{"stats", infoStats},
	{"replication", infoReplication},
	{"cpu", infoCPU},
	{"keyspace", infoKeyspace},
}

func infoCmd(x *Ctx) {
	want := map[string]bool{}
	for _, a := range x.Args[1:] {
		want[strings.ToLower(string(a))] = true
	}
	everything := len(want) == 0 || want["all"] || want["everything"] || want["default"]
	var b strings.Builder
	for _, sec := range infoSections {
		if !everything && !want[sec.name] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + strings.ToUpper(sec.name[:1]) + sec.name[1:] + "\r\n")
		sec.fn(x.S, x, &b)
	}
	for _, sec := range x.S.infos {
		if !everything && !want[sec.Name] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + strings.ToUpper(sec.Name[:1]) + sec.Name[1:] + "\r\n")
		for _, kv := range sec.Lines() {
			line(&b, kv[0], kv[1])
		}
	}
	x.W.Verbatim(b.String())
}

func line(b *strings.Builder, k string, v any) {
	fmt.Fprintf(b, "%s:%v\r\n", k, v)
}

func infoServer(s *Server, x *Ctx, b *strings.Builder) {
	up := s.cfg.Clock().Sub(s.started)
	line(b, "redis_version", Version)
	line(b, "redis_git_sha1", "00000000")
	line(b, "redis_git_dirty", 0)
	line(b, "redis_mode", "standalone")
	line(b, "oncekv_version", "0.1.0")
	line(b, "os", runtime.GOOS+" "+runtime.GOARCH)
	line(b, "arch_bits", 64)
	line(b, "go_version", runtime.Version())
	line(b, "process_id", os.Getpid())
	line(b, "tcp_port", s.directives()["port"])
	line(b, "server_time_usec", s.cfg.Clock().UnixMicro())
	line(b, "uptime_in_seconds", int64(up.Seconds()))
	line(b, "uptime_in_days", int64(up.Hours()/24))
	line(b, "hz", 10)
	line(b, "configured_hz", 10)
	exe, _ := os.Executable()
	line(b, "executable", exe)
	line(b, "config_file", "")
}

func infoClients(s *Server, x *Ctx, b *strings.Builder) {
	n := 1
	if s.wire != nil {
		n = s.wire.NumClients()
	}
	line(b, "connected_clients", n)
	line(b, "cluster_connections", 0)
	line(b, "maxclients", s.directives()["maxclients"])
	line(b, "blocked_clients", 0)
	line(b, "tracking_clients", 0)
}

func infoMemory(s *Server, x *Ctx, b *strings.Builder) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	rss := rssBytes()
	line(b, "used_memory", m.HeapAlloc)
	line(b, "used_memory_human", human(int64(m.HeapAlloc)))
	line(b, "used_memory_rss", rss)
	line(b, "used_memory_rss_human", human(rss))
	line(b, "used_memory_peak", m.HeapSys)
	line(b, "total_system_memory", 0)
	line(b, "maxmemory", 0)
	line(b, "maxmemory_policy", "noeviction")
	line(b, "mem_allocator", "go")
}

func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

func infoPersistence(s *Server, x *Ctx, b *strings.Builder) {
	line(b, "loading", 0)
	line(b, "async_loading", 0)
	line(b, "rdb_changes_since_last_save", 0)
	line(b, "rdb_bgsave_in_progress", 0)
	line(b, "rdb_last_save_time", s.started.Unix())
	line(b, "rdb_last_bgsave_status", "ok")
	line(b, "aof_enabled", 1)
	line(b, "aof_rewrite_in_progress", 0)
	line(b, "aof_last_write_status", "ok")
	if s.cfg.Persistence != nil {
		p := s.cfg.Persistence()
		keys := make([]string, 0, len(p))
		for k := range p {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			line(b, k, p[k])
		}
	}
}

func infoStats(s *Server, x *Ctx, b *strings.Builder) {
	conns, rejected, cmds := int64(0), int64(0), s.stats.commands.Load()
	if s.wire != nil {
		conns, rejected = s.wire.Accepted.Load(), s.wire.Rejected.Load()
	}
	line(b, "total_connections_received", conns)
	line(b, "total_commands_processed", cmds)
	line(b, "instantaneous_ops_per_sec", 0)
	line(b, "rejected_connections", rejected)
	expired := s.stats.expiredKeys.Load()
	if s.cfg.ExpiredKeys != nil {
		expired += s.cfg.ExpiredKeys()
	}
	line(b, "expired_keys", expired)
	line(b, "evicted_keys", 0)
	line(b, "keyspace_hits", s.stats.keyspaceHits.Load())
	line(b, "keyspace_misses", s.stats.keyspaceMiss.Load())
	line(b, "pubsub_channels", 0)
	line(b, "pubsub_patterns", 0)
	line(b, "total_error_replies", s.stats.rejectedCalls.Load())
}

func infoReplication(s *Server, x *Ctx, b *strings.Builder) {
	line(b, "role", "master")
	line(b, "connected_slaves", 0)
	line(b, "master_failover_state", "no-failover")
	line(b, "master_repl_offset", 0)
}

func infoCPU(s *Server, x *Ctx, b *strings.Builder) {
	line(b, "used_cpu_sys", "0.000000")
	line(b, "used_cpu_user", "0.000000")
}

func infoKeyspace(s *Server, x *Ctx, b *strings.Builder) {
	_, _ = s.store.View(func(tx store.Tx) error {
		for db := 0; db < s.store.Databases(); db++ {
			if n := tx.Len(db); n > 0 {
				fmt.Fprintf(b, "db%d:keys=%d,expires=%d,avg_ttl=0\r\n", db, n, tx.Expiring(db))
			}
		}
		return nil
	})
}
