package commands

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"math"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/oncekv/oncekv/internal/sched"
	"github.com/oncekv/oncekv/store"
)

// INFO, as Redis 7.0 lays it out: the same sections in the same order,
// with the fields that mean something here filled with real values. A
// field of Redis's is shown as 0 only where Redis, run as this server is
// (no replication, no scripts, no eviction, no fork), shows 0 too; the
// fields this server has no value for are left out (INFO.md lists them,
// with the fields only this server shows).
//
// INFO with no argument, or "default", shows the default sections;
// "all" adds commandstats; "everything" is "all" (this server has no
// modules); other arguments name sections, in any case.

// OncekvVersion is this server's own version (INFO server oncekv_version).
const OncekvVersion = "0.1.0"

type infoSection struct {
	name string // lower case
	// dflt: shown by INFO with no argument (Redis's default sections).
	dflt bool
	fn   func(s *Server, b *infoBuilder)
}

var infoSections = []infoSection{
	{"server", true, infoServer},
	{"clients", true, infoClients},
	{"memory", true, infoMemory},
	{"persistence", true, infoPersistence},
	{"stats", true, infoStats},
	{"replication", true, infoReplication},
	{"cpu", true, infoCPU},
	{"modules", true, func(*Server, *infoBuilder) {}}, // no modules: an empty section, as Redis shows
	{"commandstats", false, infoCommandStats},
	{"errorstats", true, infoErrorStats},
	{"cluster", true, infoCluster},
	{"keyspace", true, infoKeyspace},
}

// infoBuilder writes "field:value" lines. tx is EXEC's transaction when
// INFO is queued in MULTI (exclusive unless shared), nil otherwise.
type infoBuilder struct {
	strings.Builder
	tx store.Tx
	// shared is set when tx is a shared transaction.
	shared bool
}

// in runs fn in a transaction: b's, or a new one (exclusive if write).
func (b *infoBuilder) in(s *Server, write bool, fn func(tx store.Tx)) {
	if b.tx != nil {
		if write && b.shared {
			// EXEC's transaction is a shared one (the store refuses
			// writes): the section is left empty, as outside EXEC,
			// where the store refuses its exclusive one.
			return
		}
		fn(b.tx)
		return
	}
	run := s.store.View
	if write {
		run = s.store.Update
	}
	_, _ = run(func(tx store.Tx) error {
		fn(tx)
		return nil
	})
}

func (b *infoBuilder) str(k, v string) {
	b.WriteString(k)
	b.WriteByte(':')
	b.WriteString(v)
	b.WriteString("\r\n")
}

func (b *infoBuilder) int(k string, n int64) { b.str(k, strconv.FormatInt(n, 10)) }

// float writes f with prec decimals, as Redis's %.<prec>f.
func (b *infoBuilder) float(k string, f float64, prec int) {
	b.str(k, strconv.FormatFloat(f, 'f', prec, 64))
}

func infoCmd(x *Ctx) {
	want := map[string]bool{}
	all, everything := false, false
	for _, a := range x.Args[1:] {
		switch name := strings.ToLower(string(a)); name {
		case "all":
			all = true
		case "everything":
			everything = true
		case "default":
			for _, sec := range infoSections {
				if sec.dflt {
					want[sec.name] = true
				}
			}
			for _, sec := range x.S.infos {
				want[strings.ToLower(sec.Name)] = true
			}
		default:
			want[name] = true
		}
	}
	if len(x.Args) == 1 {
		for _, sec := range infoSections {
			want[sec.name] = sec.dflt
		}
		for _, sec := range x.S.infos {
			want[strings.ToLower(sec.Name)] = true
		}
	}
	show := func(name string) bool { return all || everything || want[name] }
	b := infoBuilder{tx: x.execTx, shared: x.execShared}
	header := func(name string) {
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + infoTitle(name) + "\r\n")
	}
	for _, sec := range infoSections {
		if show(sec.name) {
			header(sec.name)
			sec.fn(x.S, &b)
		}
	}
	for _, sec := range x.S.infos {
		if show(strings.ToLower(sec.Name)) {
			header(sec.Name)
			var lines [][2]string
			if sec.LinesIn != nil {
				b.in(x.S, true, func(tx store.Tx) { lines = sec.LinesIn(tx) })
			} else {
				lines = sec.Lines()
			}
			for _, kv := range lines {
				b.str(kv[0], kv[1])
			}
		}
	}
	x.W.Verbatim(b.String())
}

// infoTitle is a section's header as Redis writes it.
func infoTitle(name string) string {
	switch name {
	case "cpu":
		return "CPU"
	}
	return strings.ToUpper(name[:1]) + name[1:]
}

func infoServer(s *Server, b *infoBuilder) {
	now := s.cfg.Clock()
	up := now.Sub(s.started)
	bi := buildInfo()
	b.str("redis_version", Version)
	b.str("redis_git_sha1", bi.sha1)
	b.str("redis_git_dirty", bi.dirty)
	b.str("redis_build_id", bi.id)
	b.str("redis_mode", "standalone")
	b.str("os", osName())
	b.int("arch_bits", strconv.IntSize)
	if monotonicClock != "" {
		b.str("monotonic_clock", monotonicClock)
	}
	if multiplexingAPI != "" {
		b.str("multiplexing_api", multiplexingAPI)
	}
	b.str("go_version", runtime.Version())
	b.int("process_id", int64(os.Getpid()))
	b.str("process_supervised", "no")
	b.str("run_id", s.obs.runID)
	b.str("tcp_port", s.tcpPort())
	b.int("server_time_usec", now.UnixMicro())
	b.int("uptime_in_seconds", int64(up.Seconds()))
	b.int("uptime_in_days", int64(up.Hours()/24))
	b.int("hz", 10)
	b.int("configured_hz", 10)
	exe, _ := os.Executable()
	b.str("executable", exe)
	b.str("config_file", s.cfg.ConfigFile)
	b.int("io_threads_active", 0)
	b.str("oncekv_version", OncekvVersion)
	b.int("oncekv_procs", int64(runtime.GOMAXPROCS(0)))
	policy, _ := sched.Current()
	b.str("oncekv_sched_policy", string(policy))
}

// tcpPort is the port actually listened on (with --port 0, the one the
// system chose).
func (s *Server) tcpPort() string {
	if s.wire != nil {
		if addrs := s.wire.Addrs(); len(addrs) > 0 {
			if _, port, err := net.SplitHostPort(addrs[0].String()); err == nil {
				return port
			}
		}
	}
	return s.directives()["port"]
}

type build struct{ sha1, dirty, id string }

var buildInfo = sync.OnceValue(func() build {
	out := build{sha1: "00000000", dirty: "0"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return out
	}
	for _, st := range bi.Settings {
		switch st.Key {
		case "vcs.revision":
			if len(st.Value) >= 8 {
				out.sha1 = st.Value[:8]
			}
		case "vcs.modified":
			if st.Value == "true" {
				out.dirty = "1"
			}
		}
	}
	// Like Redis's build id, a digest of what the binary was built from.
	h := fnv.New64a()
	h.Write([]byte(bi.String()))
	out.id = fmt.Sprintf("%016x", h.Sum64())
	return out
})

// newRunID is a random 40-hex-digit identifier, as Redis's run_id and
// master_replid.
func newRunID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func infoClients(s *Server, b *infoBuilder) {
	st := s.Snapshot()
	b.int("connected_clients", int64(st.ConnectedClients))
	b.int("cluster_connections", 0)
	b.str("maxclients", s.directives()["maxclients"])
	b.int("blocked_clients", st.BlockedClients)
	b.int("tracking_clients", 0)
	b.int("clients_in_timeout_table", s.obs.blockedTimeout.Load())
}

func infoMemory(s *Server, b *infoBuilder) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	used := int64(m.HeapAlloc)
	s.notePeak(m.HeapAlloc)
	peak := int64(s.obs.peak.Load())
	rss := rssBytes()
	// Go's heap in jemalloc's terms: allocated is the live objects,
	// active the spans in use, resident what the heap holds from the
	// system and has not returned.
	allocated, active, resident := used, int64(m.HeapInuse), int64(m.HeapSys-m.HeapReleased)
	total := totalSystemMemory()
	ratio := func(a, b int64) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	b.int("used_memory", used)
	b.str("used_memory_human", human(used))
	b.int("used_memory_rss", rss)
	b.str("used_memory_rss_human", human(rss))
	b.int("used_memory_peak", peak)
	b.str("used_memory_peak_human", human(peak))
	b.str("used_memory_peak_perc", strconv.FormatFloat(100*ratio(used, peak), 'f', 2, 64)+"%")
	b.int("used_memory_startup", int64(s.obs.startupMem))
	b.int("allocator_allocated", allocated)
	b.int("allocator_active", active)
	b.int("allocator_resident", resident)
	b.int("total_system_memory", total)
	b.str("total_system_memory_human", human(total))
	// Scripts: each run has a Lua state of its own, closed at its end;
	// between runs Lua holds the compiled scripts (estimated).
	scripts, bodies := s.scripts.counts()
	luaMem := luaBaseMemory + luaBytesPerBodyByte*bodies
	b.int("used_memory_lua", luaMem)
	b.int("used_memory_vm_eval", luaMem)
	b.str("used_memory_lua_human", human(luaMem))
	b.int("used_memory_scripts_eval", bodies)
	b.int("number_of_cached_scripts", int64(scripts))
	b.int("number_of_functions", 0)
	b.int("number_of_libraries", 0)
	b.int("maxmemory", 0)
	b.str("maxmemory_human", "0B")
	b.str("maxmemory_policy", "noeviction")
	b.float("allocator_frag_ratio", ratio(active, allocated), 2)
	b.int("allocator_frag_bytes", active-allocated)
	b.float("allocator_rss_ratio", ratio(resident, active), 2)
	b.int("allocator_rss_bytes", resident-active)
	b.float("rss_overhead_ratio", ratio(rss, resident), 2)
	b.int("rss_overhead_bytes", rss-resident)
	b.float("mem_fragmentation_ratio", ratio(rss, used), 2)
	b.int("mem_fragmentation_bytes", rss-used)
	b.int("mem_not_counted_for_evict", 0)
	b.int("mem_replication_backlog", 0)
	b.int("mem_total_replication_buffers", 0)
	b.int("mem_clients_slaves", 0)
	b.int("mem_cluster_links", 0)
	b.str("mem_allocator", "go-"+strings.TrimPrefix(runtime.Version(), "go"))
	b.int("active_defrag_running", 0)
	b.int("lazyfree_pending_objects", 0)
	b.int("lazyfreed_objects", 0)
	// The Go runtime's soft memory limit in force (0: none), which
	// memory-burst raises while the server is busy.
	limit := debug.SetMemoryLimit(-1)
	if limit == math.MaxInt64 {
		limit = 0
	}
	b.int("oncekv_heap_limit", limit)
	b.str("oncekv_heap_limit_human", human(limit))
}

// human writes a byte count as Redis's bytesToHuman does.
func human(n int64) string {
	f := float64(n)
	switch {
	case n < 1024:
		return strconv.FormatInt(n, 10) + "B"
	case n < 1<<20:
		return fmt.Sprintf("%.2fK", f/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.2fM", f/(1<<20))
	case n < 1<<40:
		return fmt.Sprintf("%.2fG", f/(1<<30))
	case n < 1<<50:
		return fmt.Sprintf("%.2fT", f/(1<<40))
	}
	return fmt.Sprintf("%.2fP", f/(1<<50))
}

func infoPersistence(s *Server, b *infoBuilder) {
	var p map[string]string
	if s.cfg.Persistence != nil {
		p = s.cfg.Persistence()
	}
	writeStatus := "ok"
	if p["oncekv_writes_refused"] == "1" {
		writeStatus = "err"
	}
	unsynced := p["oncekv_unsynced_writes"]
	if unsynced == "" {
		unsynced = "0"
	}
	b.int("loading", 0)
	b.int("async_loading", 0)
	b.int("current_cow_peak", 0)
	b.int("current_cow_size", 0)
	b.int("current_cow_size_age", 0)
	b.str("current_fork_perc", "0.00")
	b.int("current_save_keys_processed", 0)
	b.int("current_save_keys_total", 0)
	// Every write is saved as it happens; what is not saved yet is what
	// waits for the next fsync.
	b.str("rdb_changes_since_last_save", unsynced)
	b.int("rdb_bgsave_in_progress", 0)
	b.int("rdb_last_save_time", s.started.Unix())
	b.str("rdb_last_bgsave_status", "ok")
	b.int("rdb_last_bgsave_time_sec", -1)
	b.int("rdb_current_bgsave_time_sec", -1)
	b.int("rdb_saves", 0)
	b.int("rdb_last_cow_size", 0)
	b.int("rdb_last_load_keys_expired", 0)
	b.int("rdb_last_load_keys_loaded", 0)
	b.int("aof_enabled", 1)
	b.int("aof_rewrite_in_progress", 0)
	b.int("aof_rewrite_scheduled", 0)
	b.int("aof_last_rewrite_time_sec", -1)
	b.int("aof_current_rewrite_time_sec", -1)
	b.str("aof_last_bgrewrite_status", "ok")
	b.int("aof_rewrites", 0)
	b.int("aof_rewrites_consecutive_failures", 0)
	b.str("aof_last_write_status", writeStatus)
	b.int("aof_last_cow_size", 0)
	b.int("module_fork_in_progress", 0)
	b.int("module_fork_last_cow_size", 0)
	for _, k := range sortedKeys(p) {
		b.str(k, p[k])
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func infoStats(s *Server, b *infoBuilder) {
	st := s.Snapshot()
	w := s.wireCounters()
	ops, inK, outK := s.instantaneous()
	b.int("total_connections_received", st.ConnectionsReceived)
	b.int("total_commands_processed", st.CommandsProcessed)
	b.int("instantaneous_ops_per_sec", int64(ops))
	b.int("total_net_input_bytes", st.NetInputBytes)
	b.int("total_net_output_bytes", st.NetOutputBytes)
	b.int("total_net_repl_input_bytes", 0)
	b.int("total_net_repl_output_bytes", 0)
	b.float("instantaneous_input_kbps", inK, 2)
	b.float("instantaneous_output_kbps", outK, 2)
	b.str("instantaneous_input_repl_kbps", "0.00")
	b.str("instantaneous_output_repl_kbps", "0.00")
	b.int("rejected_connections", st.RejectedConnections)
	b.int("sync_full", 0)
	b.int("sync_partial_ok", 0)
	b.int("sync_partial_err", 0)
	b.int("expired_keys", st.ExpiredKeys)
	b.int("evicted_keys", 0)
	b.int("evicted_clients", 0)
	b.int("total_eviction_exceeded_time", 0)
	b.int("current_eviction_exceeded_time", 0)
	b.int("keyspace_hits", st.KeyspaceHits)
	b.int("keyspace_misses", st.KeyspaceMisses)
	b.int("pubsub_channels", int64(s.pubsub.active(subChannel)))
	b.int("pubsub_patterns", int64(s.pubsub.active(subPattern)))
	b.int("pubsubshard_channels", int64(s.pubsub.active(subShard)))
	b.int("latest_fork_usec", 0)
	b.int("total_forks", 0)
	b.int("migrate_cached_sockets", 0)
	b.int("slave_expires_tracked_keys", 0)
	b.int("active_defrag_hits", 0)
	b.int("active_defrag_misses", 0)
	b.int("active_defrag_key_hits", 0)
	b.int("active_defrag_key_misses", 0)
	b.int("total_active_defrag_time", 0)
	b.int("current_active_defrag_time", 0)
	b.int("tracking_total_keys", 0)
	b.int("tracking_total_items", 0)
	b.int("tracking_total_prefixes", 0)
	b.int("unexpected_error_replies", 0)
	b.int("total_error_replies", st.ErrorReplies)
	b.int("dump_payload_sanitizations", 0)
	b.int("total_reads_processed", w.reads)
	b.int("total_writes_processed", w.writes)
	b.int("io_threaded_reads_processed", 0)
	b.int("io_threaded_writes_processed", 0)
}

func infoReplication(s *Server, b *infoBuilder) {
	b.str("role", "master")
	b.int("connected_slaves", 0)
	b.str("master_failover_state", "no-failover")
	b.str("master_replid", s.obs.replID)
	b.str("master_replid2", strings.Repeat("0", 40))
	b.int("master_repl_offset", 0)
	b.int("second_repl_offset", -1)
	b.int("repl_backlog_active", 0)
	b.int("repl_backlog_first_byte_offset", 0)
	b.int("repl_backlog_histlen", 0)
}

func infoCPU(s *Server, b *infoBuilder) {
	sys, user, sysChildren, userChildren := cpuTimes()
	b.float("used_cpu_sys", sys, 6)
	b.float("used_cpu_user", user, 6)
	b.float("used_cpu_sys_children", sysChildren, 6)
	b.float("used_cpu_user_children", userChildren, 6)
}

func infoCommandStats(s *Server, b *infoBuilder) {
	for _, c := range s.CommandStats() {
		usec := c.Duration.Microseconds()
		perCall := 0.0
		if c.Calls > 0 {
			perCall = float64(usec) / float64(c.Calls)
		}
		b.str("cmdstat_"+c.Name, fmt.Sprintf("calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d",
			c.Calls, usec, perCall, c.Rejected, c.Failed))
	}
}

func infoErrorStats(s *Server, b *infoBuilder) {
	for _, e := range s.ErrorStats() {
		b.str("errorstat_"+e.Code, "count="+strconv.FormatInt(e.Count, 10))
	}
}

func infoCluster(s *Server, b *infoBuilder) { b.int("cluster_enabled", 0) }

// DBStat is one database's size.
type DBStat struct {
	DB            int
	Keys, Expires int64
}

// Keyspace returns the size of every database that holds keys.
func (s *Server) Keyspace() []DBStat {
	var out []DBStat
	_, _ = s.store.View(func(tx store.Tx) error {
		out = s.keyspaceIn(tx)
		return nil
	})
	return out
}

// keyspaceIn is Keyspace in tx.
func (s *Server) keyspaceIn(tx store.Tx) []DBStat {
	var out []DBStat
	for db := 0; db < s.store.Databases(); db++ {
		if n := tx.Len(db); n > 0 {
			out = append(out, DBStat{db, int64(n), int64(tx.Expiring(db))})
		}
	}
	return out
}

func infoKeyspace(s *Server, b *infoBuilder) {
	// avg_ttl is Redis's estimate, sampled by its expire cycle (0 until
	// it has one); this server keeps none, and shows 0.
	var dbs []DBStat
	b.in(s, false, func(tx store.Tx) { dbs = s.keyspaceIn(tx) })
	for _, d := range dbs {
		fmt.Fprintf(b, "db%d:keys=%d,expires=%d,avg_ttl=0\r\n", d.DB, d.Keys, d.Expires)
	}
}
