package integration

// INFO as monitoring tools read it. redis_exporter splits INFO into lines,
// takes "# Name" as the start of a section and every other line with a
// ':' as field:value (the value may hold more ':'), parses the values it
// knows as numbers (ok/err and a few words as 1/0), the commandstats lines
// as comma-separated k=v lists and the keyspace lines as keys=,expires=
// (avg_ttl= optional); ioredis' ready check reads loading:0 from INFO.
// These tests read our INFO by those rules, and compare it with a real
// redis-server's: the same sections, the same field names but for the
// ones commands.InfoOmitted and commands.InfoExtra document, values of
// the same kind, and the same counters after the same commands.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oncekv/oncekv/commands"
)

// infoSection is one section of a parsed INFO reply.
type infoSection struct {
	name   string // as in the header: "Server", "CPU"
	fields map[string]string
	order  []string
}

// parseInfoExporter parses INFO text as redis_exporter does.
func parseInfoExporter(info string) []*infoSection {
	var out []*infoSection
	var cur *infoSection
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "# ") {
			cur = &infoSection{name: line[2:], fields: map[string]string{}}
			out = append(out, cur)
			continue
		}
		if len(line) < 2 || !strings.Contains(line, ":") || cur == nil {
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		cur.fields[k] = v
		cur.order = append(cur.order, k)
	}
	return out
}

// infoSectionsByName maps the lower-case section names to the sections.
func infoSectionsByName(secs []*infoSection) map[string]*infoSection {
	m := map[string]*infoSection{}
	for _, s := range secs {
		m[strings.ToLower(s.name)] = s
	}
	return m
}

// infoText sends INFO args on c and returns the text of the reply.
func infoText(t *testing.T, c *RawConn, args ...string) string {
	t.Helper()
	f, err := c.TryReadFrameAfter(EncodeCommand(append([]string{"INFO"}, args...)...))
	if err != nil {
		t.Fatalf("INFO %v: %v", args, err)
	}
	if f.Type != '$' && f.Type != '=' {
		t.Fatalf("INFO %v: reply %q is not a string", args, f.Raw)
	}
	s := f.Str
	if f.Type == '=' {
		s = strings.TrimPrefix(s, "txt:")
	}
	return s
}

// exporterNumber is how redis_exporter reads a value as a number: ok,
// true, up… as 1, err, false, down… as 0, a trailing % dropped, else a
// float.
func exporterNumber(v string) (float64, bool) {
	switch v {
	case "ok", "true", "up", "connected", "enabled", "yes":
		return 1, true
	case "err", "fail", "false", "down", "disconnected", "disabled", "no":
		return 0, true
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
	return f, err == nil
}

// kvList parses "k=v,k=v" as exporter does for commandstats, errorstats
// and keyspace lines.
func kvList(v string) (map[string]float64, bool) {
	out := map[string]float64{}
	for _, part := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			return nil, false
		}
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return nil, false
		}
		out[k] = f
	}
	return out, true
}

// infoWorkload is sent to a server before its INFO is read: keyspace hits
// and misses, failed and rejected calls, errors of two codes, MULTI
// blocks, a key with a deadline, two databases.
var infoWorkload = [][]string{
	{"SET", "a", "1"},
	{"GET", "a"},                      // hit
	{"GET", "missing"},                // miss
	{"MGET", "a", "missing"},          // hit, miss
	{"SET", "e", "1", "EX", "100000"}, //
	{"INCR", "e"},                     //
	{"SET", "s", "abc"},               //
	{"INCR", "s"},                     // failed: ERR not an integer
	{"NOSUCHCOMMAND"},                 // ERR unknown command
	{"GET"},                           // rejected: ERR wrong number of arguments
	{"MULTI"},                         //
	{"INCR", "a"},                     // queued, run by EXEC
	{"EXEC"},                          //
	{"MULTI"},                         //
	{"GET"},                           // rejected (ERR), dirties the transaction
	{"EXEC"},                          // failed: EXECABORT
	{"EXISTS", "a", "missing"},        // hit, miss
	{"TTL", "e"},                      // hit
	{"GETDEL", "missing"},             // miss
	{"SET", "a", "2", "GET"},          // hit
	{"CONFIG", "GET", "maxclients"},   //
	{"SELECT", "1"},                   //
	{"SET", "b", "1"},                 //
	{"SELECT", "0"},                   //
}

func runInfoWorkload(t *testing.T, c *RawConn) {
	t.Helper()
	for _, cmd := range infoWorkload {
		if _, err := c.TryReadFrameAfter(EncodeCommand(cmd...)); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
}

// TestInfoExporterParse reads INFO ALL as redis_exporter does and checks
// that the fields it turns into metrics are there, of the right kind, and
// tell what the workload did.
func TestInfoExporterParse(t *testing.T) {
	t.Parallel()
	o := StartOncekv(t)
	c := DialRaw(t, o.Addr)
	if r := c.Do("CONFIG", "RESETSTAT"); string(r) != "+OK\r\n" {
		t.Fatalf("CONFIG RESETSTAT: %q", r)
	}
	runInfoWorkload(t, c)
	secs := infoSectionsByName(parseInfoExporter(infoText(t, c, "ALL")))

	want := map[string][]string{
		"server": {"redis_version", "redis_mode", "os", "arch_bits", "process_id", "tcp_port",
			"uptime_in_seconds", "uptime_in_days", "hz", "configured_hz", "run_id", "redis_build_id",
			"executable", "config_file", "server_time_usec"},
		"clients": {"connected_clients", "blocked_clients", "maxclients", "tracking_clients",
			"cluster_connections", "clients_in_timeout_table"},
		"memory": {"used_memory", "used_memory_rss", "used_memory_peak", "used_memory_startup",
			"maxmemory", "maxmemory_policy", "mem_fragmentation_ratio", "mem_fragmentation_bytes",
			"allocator_allocated", "allocator_active", "allocator_resident", "allocator_frag_ratio",
			"allocator_rss_ratio", "total_system_memory", "mem_clients_slaves",
			"mem_not_counted_for_evict", "lazyfree_pending_objects", "active_defrag_running"},
		"persistence": {"loading", "async_loading", "rdb_changes_since_last_save", "rdb_bgsave_in_progress",
			"rdb_last_save_time", "rdb_last_bgsave_status", "rdb_last_bgsave_time_sec",
			"rdb_current_bgsave_time_sec", "rdb_last_cow_size", "aof_enabled", "aof_rewrite_in_progress",
			"aof_rewrite_scheduled", "aof_last_rewrite_time_sec", "aof_current_rewrite_time_sec",
			"aof_last_cow_size", "aof_last_bgrewrite_status", "aof_last_write_status",
			"module_fork_in_progress", "module_fork_last_cow_size"},
		"stats": {"total_connections_received", "total_commands_processed", "instantaneous_ops_per_sec",
			"total_net_input_bytes", "total_net_output_bytes", "instantaneous_input_kbps",
			"instantaneous_output_kbps", "rejected_connections", "sync_full", "sync_partial_ok",
			"sync_partial_err", "expired_keys", "evicted_keys", "keyspace_hits", "keyspace_misses",
			"pubsub_channels", "pubsub_patterns", "latest_fork_usec", "migrate_cached_sockets",
			"slave_expires_tracked_keys", "active_defrag_hits", "active_defrag_misses",
			"active_defrag_key_hits", "active_defrag_key_misses", "total_error_replies",
			"total_reads_processed", "total_writes_processed"},
		"replication": {"role", "connected_slaves", "master_replid", "master_repl_offset", "second_repl_offset",
			"repl_backlog_active", "repl_backlog_first_byte_offset", "repl_backlog_histlen"},
		"cpu":     {"used_cpu_sys", "used_cpu_user", "used_cpu_sys_children", "used_cpu_user_children"},
		"cluster": {"cluster_enabled"},
	}
	// Fields that are words, not numbers.
	words := map[string]bool{"redis_version": true, "redis_mode": true, "os": true, "run_id": true,
		"redis_build_id": true, "executable": true, "config_file": true, "maxmemory_policy": true,
		"role": true, "master_replid": true}
	for sec, fields := range want {
		s := secs[sec]
		if s == nil {
			t.Errorf("INFO ALL has no section %q", sec)
			continue
		}
		for _, f := range fields {
			v, ok := s.fields[f]
			switch {
			case !ok:
				t.Errorf("INFO %s: no field %s", sec, f)
			case words[f]:
			default:
				if _, ok := exporterNumber(v); !ok {
					t.Errorf("INFO %s: %s:%s is not a number redis_exporter can read", sec, f, v)
				}
			}
		}
	}
	num := func(sec, field string) float64 {
		t.Helper()
		s := secs[sec]
		if s == nil {
			return -1
		}
		f, _ := exporterNumber(s.fields[field])
		return f
	}
	if got := secs["server"].fields["tcp_port"]; got != strconv.Itoa(o.Port) {
		t.Errorf("tcp_port = %s, want %d", got, o.Port)
	}
	if got := secs["server"].fields["redis_mode"]; got != "standalone" {
		t.Errorf("redis_mode = %q", got)
	}
	if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(secs["server"].fields["run_id"]) {
		t.Errorf("run_id = %q, want 40 hex digits", secs["server"].fields["run_id"])
	}
	if got, want := int(num("server", "process_id")), o.Cmd.Process.Pid; got != want {
		t.Errorf("process_id = %d, want %d", got, want)
	}
	if num("persistence", "loading") != 0 {
		t.Errorf("loading = %q, want 0", secs["persistence"].fields["loading"])
	}
	for _, f := range []string{"rdb_last_bgsave_status", "aof_last_write_status", "aof_last_bgrewrite_status"} {
		if v := secs["persistence"].fields[f]; v != "ok" {
			t.Errorf("%s = %q, want ok", f, v)
		}
	}
	if secs["replication"].fields["role"] != "master" {
		t.Errorf("role = %q", secs["replication"].fields["role"])
	}
	for _, f := range []string{"used_memory", "used_memory_rss", "used_memory_peak", "total_net_input_bytes",
		"total_net_output_bytes"} {
		sec := "memory"
		if strings.HasPrefix(f, "total_") {
			sec = "stats"
		}
		if num(sec, f) <= 0 {
			t.Errorf("%s = %q, want > 0", f, secs[sec].fields[f])
		}
	}
	if num("cpu", "used_cpu_sys")+num("cpu", "used_cpu_user") <= 0 {
		t.Errorf("used_cpu_sys + used_cpu_user = 0: getrusage not read?")
	}
	if num("memory", "used_memory_peak") < num("memory", "used_memory") {
		t.Errorf("used_memory_peak %v < used_memory %v", num("memory", "used_memory_peak"), num("memory", "used_memory"))
	}
	// The workload's counters (see infoWorkload).
	for f, want := range map[string]float64{"keyspace_hits": 5, "keyspace_misses": 4, "total_error_replies": 5,
		"connected_clients": 1, "blocked_clients": 0} {
		sec := "stats"
		if strings.HasSuffix(f, "clients") {
			sec = "clients"
		}
		if got := num(sec, f); got != want {
			t.Errorf("%s = %v, want %v", f, got, want)
		}
	}

	// Commandstats, as parseMetricsCommandStats reads them.
	cs := secs["commandstats"]
	if cs == nil {
		t.Fatalf("INFO ALL has no Commandstats section")
	}
	for name, want := range map[string][3]float64{ // calls, rejected, failed
		"cmdstat_get":        {2, 2, 0},
		"cmdstat_incr":       {3, 0, 1},
		"cmdstat_set":        {5, 0, 0},
		"cmdstat_exec":       {2, 0, 1},
		"cmdstat_config|get": {1, 0, 0},
	} {
		v, ok := cs.fields[name]
		if !ok {
			t.Errorf("no %s in Commandstats: %v", name, cs.order)
			continue
		}
		parts := strings.Split(v, ",")
		kv, ok := kvList(v)
		if !ok || len(parts) < 5 || !strings.HasPrefix(parts[0], "calls=") || !strings.HasPrefix(parts[1], "usec=") ||
			!strings.HasPrefix(parts[3], "rejected_calls=") || !strings.HasPrefix(parts[4], "failed_calls=") {
			t.Errorf("%s:%s is not calls=,usec=,usec_per_call=,rejected_calls=,failed_calls=", name, v)
			continue
		}
		if got := [3]float64{kv["calls"], kv["rejected_calls"], kv["failed_calls"]}; got != want {
			t.Errorf("%s: calls, rejected, failed = %v, want %v", name, got, want)
		}
	}
	// Errorstats.
	es := secs["errorstats"]
	for name, want := range map[string]float64{"errorstat_ERR": 4, "errorstat_EXECABORT": 1} {
		kv, ok := kvList(es.fields[name])
		if !ok || kv["count"] != want {
			t.Errorf("%s:%s, want count=%v", name, es.fields[name], want)
		}
	}
	// Keyspace, as parseDBKeyspaceString reads it.
	ks := secs["keyspace"]
	for db, want := range map[string][2]float64{"db0": {3, 1}, "db1": {1, 0}} {
		kv, ok := kvList(ks.fields[db])
		_, hasTTL := kv["avg_ttl"]
		if !ok || kv["keys"] != want[0] || kv["expires"] != want[1] || !hasTTL {
			t.Errorf("%s:%s, want keys=%v,expires=%v,avg_ttl=…", db, ks.fields[db], want[0], want[1])
		}
	}

	// ioredis' ready check: plain INFO, loading:0.
	plain := infoText(t, c)
	if !strings.Contains(plain, "\r\nloading:0\r\n") {
		t.Errorf("INFO has no loading:0 line:\n%s", plain)
	}
}

// TestInfoFieldsMatchRedis compares the field names of INFO everything,
// section by section, with a real redis-server's after the same commands:
// they differ only by the fields commands.InfoOmitted and InfoExtra list.
// A value that is a number in Redis's INFO is one in ours.
func TestInfoFieldsMatchRedis(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	var parsed [2]map[string]*infoSection
	for i, addr := range []string{p.Redis, p.Other} {
		c := DialRaw(t, addr)
		c.Do("CONFIG", "RESETSTAT")
		runInfoWorkload(t, c)
		parsed[i] = infoSectionsByName(parseInfoExporter(infoText(t, c, "everything")))
	}
	// Against a second redis-server (ONCEKV_DIFF_AGAINST=redis), the
	// names must be exactly the same.
	redis, ours := parsed[0], parsed[1]
	for name := range redis {
		if ours[name] == nil && (p.OtherName != "oncekv" || commands.InfoOmittedSections[name] == "") {
			t.Errorf("section %q: in Redis's INFO everything, not in ours (nor in commands.InfoOmittedSections)", name)
		}
	}
	for name := range ours {
		if redis[name] == nil && (p.OtherName != "oncekv" || name != "once") {
			t.Errorf("section %q: in our INFO everything, not in Redis's", name)
		}
	}
	for name, rs := range redis {
		os := ours[name]
		if os == nil {
			continue
		}
		omitted, extra := map[string]string{}, map[string]bool{}
		if p.OtherName == "oncekv" {
			omitted = commands.InfoOmitted[name]
			for _, f := range commands.InfoExtra[name] {
				extra[f] = true
			}
		}
		for _, f := range rs.order {
			ov, ok := os.fields[f]
			switch {
			case !ok && omitted[f] == "":
				t.Errorf("%s: Redis shows %s:%s, we do not (and commands.InfoOmitted does not say why)", name, f, rs.fields[f])
			case ok && omitted[f] != "":
				t.Errorf("%s: we show %s, which commands.InfoOmitted says we do not", name, f)
			case ok:
				_, rnum := exporterNumber(rs.fields[f])
				_, onum := exporterNumber(ov)
				if rnum && !onum {
					t.Errorf("%s: %s is a number in Redis (%q), not in ours (%q)", name, f, rs.fields[f], ov)
				}
			}
		}
		for _, f := range os.order {
			if _, ok := rs.fields[f]; !ok && !extra[f] {
				t.Errorf("%s: we show %s:%s, Redis does not (and commands.InfoExtra does not list it)", name, f, os.fields[f])
			}
		}
		for f := range omitted {
			if _, ok := rs.fields[f]; !ok {
				t.Errorf("%s: commands.InfoOmitted lists %s, which Redis does not show either", name, f)
			}
		}
	}
}

// TestInfoSectionsMatchRedis compares which sections INFO shows, and in
// which order, for each kind of argument.
func TestInfoSectionsMatchRedis(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	cr, co := DialRaw(t, p.Redis), DialRaw(t, p.Other)
	headers := func(c *RawConn, args ...string) []string {
		var out []string
		for _, s := range parseInfoExporter(infoText(t, c, args...)) {
			n := strings.ToLower(s.name)
			if p.OtherName == "oncekv" && (n == "once" || commands.InfoOmittedSections[n] != "") {
				continue
			}
			out = append(out, s.name)
		}
		return out
	}
	for _, args := range [][]string{
		nil, {"default"}, {"all"}, {"everything"}, {"ALL"}, {"Everything"},
		{"server"}, {"SERVER"}, {"cpu"}, {"Clients", "memory"}, {"keyspace", "server"},
		{"commandstats"}, {"errorstats"}, {"default", "commandstats"}, {"modules"}, {"cluster"},
		{"nosuch"}, {"server", "nosuch"}, {"latencystats"},
	} {
		want, got := headers(cr, args...), headers(co, args...)
		if !slices.Equal(want, got) {
			t.Errorf("INFO %v: sections %v, Redis %v", args, got, want)
		}
	}
	if p.OtherName == "oncekv" {
		for _, args := range [][]string{nil, {"default"}, {"all"}, {"everything"}, {"once"}, {"ONCE"}} {
			if !strings.Contains(infoText(t, co, args...), "# Once\r\n") {
				t.Errorf("INFO %v has no # Once section", args)
			}
		}
		if strings.Contains(infoText(t, co, "server"), "# Once") {
			t.Errorf("INFO server shows the Once section")
		}
	}
}

// TestInfoStatsMatchRedis compares the counters of INFO stats,
// commandstats (but the times) and errorstats with Redis's after the same
// commands.
func TestInfoStatsMatchRedis(t *testing.T) {
	t.Parallel()
	p := NewDiffPair(t)
	workload := append(slices.Clone(infoWorkload), [][]string{
		{"STRLEN", "a"}, {"GETRANGE", "a", "0", "1"}, {"TYPE", "a"}, {"TYPE", "missing"},
		{"GETEX", "missing"}, {"GETSET", "g", "1"}, {"APPEND", "a", "x"}, {"SETRANGE", "a", "0", "y"},
		{"SET", "a", "1", "NX", "XX"}, {"MULTI"}, {"GET"}, {"EXEC"}, {"DISCARD"}, {"EXEC"},
		{"CONFIG", "NOSUCH"}, {"CONFIG"}, {"PING"}, {"ECHO", "x"}, {"SELECT", "99"}, {"DEL", "a", "b", "g"},
		{"WATCH", "w"}, {"UNWATCH"}, {"EXPIRE", "missing", "10"}, {"PERSIST", "e"}, {"DBSIZE"},
	}...)
	stat := regexp.MustCompile(`^(total_commands_processed|keyspace_hits|keyspace_misses|total_error_replies|expired_keys|evicted_keys|rejected_connections|unexpected_error_replies):`)
	var got [2]string
	for i, addr := range []string{p.Redis, p.Other} {
		c := DialRaw(t, addr)
		c.Do("CONFIG", "RESETSTAT")
		for _, cmd := range workload {
			if _, err := c.TryReadFrameAfter(EncodeCommand(cmd...)); err != nil {
				t.Fatalf("%v: %v", cmd, err)
			}
		}
		var b strings.Builder
		for _, line := range strings.Split(infoText(t, c, "stats"), "\r\n") {
			if stat.MatchString(line) {
				b.WriteString(line + "\n")
			}
		}
		// Redis lists commands in its hash table's order: sort them.
		usec := regexp.MustCompile(`usec=\d+,usec_per_call=[\d.]+,`)
		lines := strings.Split(usec.ReplaceAllString(infoText(t, c, "commandstats"), ""), "\r\n")
		lines = append(lines, strings.Split(infoText(t, c, "errorstats"), "\r\n")...)
		slices.Sort(lines)
		b.WriteString(strings.Join(lines, "\n"))
		got[i] = b.String()
	}
	if got[0] != got[1] {
		t.Errorf("after the same commands, the counters differ:\nredis:\n%s\n%s:\n%s", got[0], p.OtherName, got[1])
	}
}

// TestInfoBlockedClients: a client waiting in ONCE.WAIT or ONCE.CLAIM …
// WAIT is a blocked client (with a timeout, one in the timeout table)
// until it is woken, as a client in BLPOP is in Redis.
func TestInfoBlockedClients(t *testing.T) {
	t.Parallel()
	o := StartOncekv(t)
	c := DialRaw(t, o.Addr)
	field := func(sec, f string) string {
		t.Helper()
		return infoSectionsByName(parseInfoExporter(infoText(t, c, sec)))[sec].fields[f]
	}
	waitFor := func(f, want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			got := field("clients", f)
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s = %s, want %s", f, got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	claim := rawFrame(t, c, "ONCE.CLAIM", "job", "LEASE", "60000")
	if len(claim.Elems) != 2 || claim.Elems[0].Str != "claimed" {
		t.Fatalf("ONCE.CLAIM: %q", claim.Raw)
	}
	token := claim.Elems[1].Str
	w1, w2 := DialRaw(t, o.Addr), DialRaw(t, o.Addr)
	w1.Send(EncodeCommand("ONCE.WAIT", "job"))
	waitFor("blocked_clients", "1")
	if got := field("clients", "clients_in_timeout_table"); got != "0" {
		t.Errorf("clients_in_timeout_table = %s with one wait without timeout, want 0", got)
	}
	w2.Send(EncodeCommand("ONCE.WAIT", "job", "TIMEOUT", "60000"))
	waitFor("blocked_clients", "2")
	waitFor("clients_in_timeout_table", "1")
	if r := c.Do("ONCE.COMPLETE", "job", token, "done"); string(r) != "+OK\r\n" {
		t.Fatalf("ONCE.COMPLETE: %q", r)
	}
	for _, w := range []*RawConn{w1, w2} {
		if f := w.ReadFrame(); len(f.Elems) != 2 || f.Elems[0].Str != "done" {
			t.Errorf("woken waiter got %q", f.Raw)
		}
	}
	waitFor("blocked_clients", "0")
	waitFor("clients_in_timeout_table", "0")
	if got := field("clients", "connected_clients"); got != "3" {
		t.Errorf("connected_clients = %s, want 3", got)
	}
}

// TestInfoConfigFile: config_file is the absolute path of the file the
// server was started with.
func TestInfoConfigFile(t *testing.T) {
	t.Parallel()
	bin := BuildOncekv(t)
	dir := t.TempDir()
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		port := FreePort(t)
		file := filepath.Join(dir, fmt.Sprintf("oncekv-%d.conf", attempt))
		conf := fmt.Sprintf("bind 127.0.0.1\nport %d\ndir %s\n", port, filepath.Join(dir, "data"))
		if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := startProc(exec.Command(bin, file))
		if err != nil {
			t.Fatal(err)
		}
		addr := addrOf(port)
		if last = waitReady(p, addr, startTimeout); last != nil {
			p.kill()
			continue
		}
		t.Cleanup(func() {
			if !p.stop(syscall.SIGTERM, stopTimeout) {
				p.kill()
			}
		})
		c := DialRaw(t, addr)
		got := infoSectionsByName(parseInfoExporter(infoText(t, c, "server")))["server"].fields["config_file"]
		if got != file {
			t.Errorf("config_file = %q, want %q", got, file)
		}
		return
	}
	t.Fatalf("oncekv with a config file did not start: %v", last)
}

// procs chooses the Go processors the server runs on; 0, the default,
// leaves the runtime's choice, which honours the GOMAXPROCS environment
// variable (README, Configuration: procs). INFO server shows the number
// in force. Not parallel: it sets GOMAXPROCS for the processes it
// starts.
func TestProcsDirective(t *testing.T) {
	t.Setenv("GOMAXPROCS", "3")
	for _, tc := range []struct {
		extra []string
		want  int
	}{
		{want: 3},
		{extra: []string{"--procs", "1"}, want: 1},
	} {
		o := StartOncekv(t, tc.extra...)
		c := DialRaw(t, o.Addr)
		got := infoSectionsByName(parseInfoExporter(infoText(t, c, "server")))["server"].fields["oncekv_procs"]
		if got != strconv.Itoa(tc.want) {
			t.Errorf("GOMAXPROCS=3 %v: oncekv_procs = %q, want %d", tc.extra, got, tc.want)
		}
	}
}
