package commands

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/oncekv/oncekv/store"
)

// The introspection commands of Redis 7.0 that tools send: LATENCY (the
// latency monitor, off as latency-monitor-threshold 0 leaves it, with
// HISTOGRAM from the per-command latency counters), MEMORY (USAGE an
// estimate, STATS with this server's figures), LOLWUT (its version line)
// and BGREWRITEAOF (the store keeps its own log compact: nothing to
// start). DEBUG is left out: its subcommands change or crash the server
// (DEBUG SLEEP, RELOAD, SEGFAULT), and tools do not need it.
func introspectCommands() []*Command {
	adm := func(name string, arity int, run Handler) *Command {
		return &Command{Name: "latency|" + name, Arity: arity, Flags: Admin | NoScript | Loading | Stale,
			Categories: []string{"admin", "slow", "dangerous"}, Run: run}
	}
	mem := func(name string, run Handler) *Command {
		return &Command{Name: "memory|" + name, Arity: 2, Categories: []string{"slow"}, Run: run}
	}
	return []*Command{
		{Name: "latency", Arity: -2, Categories: []string{"slow"}, Subcommands: []*Command{
			adm("latest", 2, func(x *Ctx) { x.W.Array(0) }),
			adm("history", 3, func(x *Ctx) { x.W.Array(0) }),
			adm("reset", -2, func(x *Ctx) { x.W.Int(0) }),
			adm("doctor", 2, func(x *Ctx) { x.W.Verbatim(latencyDisabled) }),
			adm("graph", 3, latencyGraph),
			adm("histogram", -2, latencyHistogram),
			{Name: "latency|help", Arity: 2, Flags: Loading | Stale, Categories: []string{"slow"}, Run: latencyHelp},
		}},
		{Name: "memory", Arity: -2, Categories: []string{"slow"}, Subcommands: []*Command{
			{Name: "memory|usage", Arity: -3, Flags: ReadOnly, FirstKey: 2, LastKey: 2,
				Categories: []string{"read", "slow"}, Run: memoryUsage},
			mem("stats", memoryStats),
			mem("doctor", memoryDoctor),
			mem("malloc-stats", memoryMallocStats),
			mem("purge", func(x *Ctx) { debug.FreeOSMemory(); x.W.OK() }),
			{Name: "memory|help", Arity: 2, Flags: Loading | Stale, Categories: []string{"slow"}, Run: memoryHelp},
		}},
		{Name: "lolwut", Arity: -1, Flags: ReadOnly | Fast, Categories: []string{"read", "fast"}, Run: lolwutCmd},
		{Name: "bgrewriteaof", Arity: 1, Flags: Admin | NoScript | NoAsyncLoading,
			Categories: []string{"admin", "slow", "dangerous"}, Run: bgrewriteaofCmd},
	}
}

// latencyDisabled is Redis 7.0's LATENCY DOCTOR while the latency
// monitor is off.
const latencyDisabled = "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. " +
	"You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. " +
	"If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n"

func latencyGraph(x *Ctx) {
	x.W.Error("ERR No samples available for event '" + string(x.Args[2]) + "'")
}

// LATENCY HISTOGRAM [command ...]: for each command called since the
// start or CONFIG RESETSTAT (those named, a container standing for its
// subcommands), its calls and the cumulative count of calls per bucket
// of at most 2^k µs, the buckets where the count grows, as Redis 7.0
// reports its own.
func latencyHistogram(x *Ctx) {
	stats := x.S.CommandStats()
	keep := func(string) bool { return true }
	if len(x.Args) > 2 {
		names := map[string]bool{}
		for _, a := range x.Args[2:] {
			if c := x.S.table.byFullName(a); c != nil {
				names[c.Name] = true
			}
		}
		keep = func(name string) bool {
			container, _, _ := strings.Cut(name, "|")
			return names[name] || names[container]
		}
	}
	var out []CommandStat
	for _, cs := range stats {
		if cs.Calls > 0 && keep(cs.Name) {
			out = append(out, cs)
		}
	}
	x.W.Map(len(out))
	for _, cs := range out {
		x.W.BulkString(cs.Name)
		x.W.Map(2)
		x.W.BulkString("calls")
		x.W.Int(cs.Calls)
		x.W.BulkString("histogram_usec")
		var keys, counts []int64
		var cum int64
		for k, n := range cs.Buckets {
			if n == 0 {
				continue
			}
			cum += n
			keys = append(keys, int64(1)<<k)
			counts = append(counts, cum)
		}
		x.W.Map(len(keys))
		for i := range keys {
			x.W.Int(keys[i])
			x.W.Int(counts[i])
		}
	}
}

func latencyHelp(x *Ctx) {
	writeHelp(x, "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"DOCTOR",
		"    Return a human readable latency analysis report.",
		"GRAPH <event>",
		"    Return an ASCII latency graph for the <event> class.",
		"HISTORY <event>",
		"    Return time-latency samples for the <event> class.",
		"LATEST",
		"    Return the latest latency samples for all events.",
		"RESET [<event> ...]",
		"    Reset latency data of one or more <event> classes.",
		"    (default: reset all data for all event classes)",
		"HISTOGRAM [COMMAND ...]",
		"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
		"    If no commands are specified then all histograms are replied.",
		"HELP",
		"    Prints this help.")
}

func memoryHelp(x *Ctx) {
	writeHelp(x, "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"DOCTOR",
		"    Return memory problems reports.",
		"MALLOC-STATS",
		"    Return internal statistics report from the memory allocator.",
		"PURGE",
		"    Attempt to purge dirty pages for reclamation by the allocator.",
		"STATS",
		"    Return information about the memory usage of the server.",
		"USAGE <key> [SAMPLES <count>]",
		"    Return memory in bytes used by <key> and its value. Nested values are",
		"    sampled up to <count> times (default: 5, 0 means sample all).",
		"HELP",
		"    Prints this help.")
}

// writeHelp writes a HELP reply: one simple string a line.
func writeHelp(x *Ctx, lines ...string) {
	x.W.Array(len(lines))
	for _, l := range lines {
		x.W.Simple(l)
	}
}

// keyOverhead is what MEMORY USAGE adds to a key's and its value's bytes:
// an estimate of what the store spends on an entry besides them (its
// header, the index's share), not a measurement.
const keyOverhead = 48

// MEMORY USAGE key [SAMPLES count]: an estimate of the key's size, its
// name and value bytes plus keyOverhead; SAMPLES is checked as Redis
// checks it and changes nothing (strings have no nested values).
func memoryUsage(x *Ctx) {
	for j := 3; j < len(x.Args); j++ {
		if !eq(x.Args[j], "samples") || j+1 >= len(x.Args) {
			x.Fail(ErrSyntax)
			return
		}
		n, ok := parseInt(x.Args[j+1])
		if !ok {
			x.Fail(ErrNotInteger)
			return
		}
		if n < 0 {
			x.Fail(ErrSyntax)
			return
		}
		j++
	}
	v, ok, err := x.Tx.Get(x.DB, x.Args[2])
	switch {
	case err != nil:
		x.Fail(err)
	case !ok:
		x.W.Null()
	default:
		size := int64(len(x.Args[2]) + len(v.Data) + keyOverhead)
		if v.Obj != 0 {
			// An object's elements, each as large as its name and value
			// and an entry's overhead: all of them, not samples.
			err = x.Tx.ScanElems(v.Obj, nil, func(sub, val []byte) (bool, error) {
				size += int64(len(sub) + len(val) + elemOverhead)
				return true, nil
			})
			if err != nil {
				x.Fail(err)
				return
			}
		}
		x.W.Int(size)
	}
}

// elemOverhead is what MEMORY USAGE counts for one element of an object
// beside its bytes: a dict entry and its two sds headers in Redis.
const elemOverhead = 24 + 2*3

// memFigures are the heap figures MEMORY STATS and DOCTOR report, as
// INFO memory reports them.
type memFigures struct {
	used, peak, startup, allocated, active, resident, rss int64
}

func (s *Server) memFigures() memFigures {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s.notePeak(m.HeapAlloc)
	return memFigures{used: int64(m.HeapAlloc), peak: int64(s.obs.peak.Load()), startup: int64(s.obs.startupMem),
		allocated: int64(m.HeapAlloc), active: int64(m.HeapInuse), resident: int64(m.HeapSys - m.HeapReleased), rss: rssBytes()}
}

// MEMORY STATS: Redis 7.0's fields, in its order, with this server's
// figures (the Go heap's, as INFO memory's).
func memoryStats(x *Ctx) {
	f := x.S.memFigures()
	var keysPerDB []int
	// In EXEC, in EXEC's transaction, whose lock is taken already.
	b := infoBuilder{tx: x.execTx, shared: x.execShared}
	b.in(x.S, false, func(tx store.Tx) {
		for db := 0; db < x.S.store.Databases(); db++ {
			keysPerDB = append(keysPerDB, tx.Len(db))
		}
	})
	var keys int64
	dbs := 0
	for _, n := range keysPerDB {
		keys += int64(n)
		if n > 0 {
			dbs++
		}
	}
	ratio := func(a, b int64) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	overhead := f.startup + keys*keyOverhead
	dataset := max(f.used-overhead, 0)
	perKey := int64(0)
	if keys > 0 {
		perKey = (f.used - f.startup) / keys
	}
	w := x.W
	w.Map(27 + dbs)
	kv := func(k string, v int64) { w.BulkString(k); w.Int(v) }
	kd := func(k string, v float64) { w.BulkString(k); w.Double(v) }
	kv("peak.allocated", f.peak)
	kv("total.allocated", f.used)
	kv("startup.allocated", f.startup)
	kv("replication.backlog", 0)
	kv("clients.slaves", 0)
	kv("clients.normal", 0)
	kv("cluster.links", 0)
	kv("aof.buffer", 0)
	kv("lua.caches", 0)
	kv("functions.caches", 0)
	for db, n := range keysPerDB {
		if n == 0 {
			continue
		}
		w.BulkString(fmt.Sprintf("db.%d", db))
		w.Map(3)
		kv("overhead.hashtable.main", int64(n)*keyOverhead)
		kv("overhead.hashtable.expires", 0)
		kv("overhead.hashtable.slot-to-keys", 0)
	}
	kv("overhead.total", overhead)
	kv("keys.count", keys)
	kv("keys.bytes-per-key", perKey)
	kv("dataset.bytes", dataset)
	kd("dataset.percentage", 100*ratio(dataset, f.used-f.startup))
	kd("peak.percentage", 100*ratio(f.used, f.peak))
	kv("allocator.allocated", f.allocated)
	kv("allocator.active", f.active)
	kv("allocator.resident", f.resident)
	kd("allocator-fragmentation.ratio", ratio(f.active, f.allocated))
	kv("allocator-fragmentation.bytes", f.active-f.allocated)
	kd("allocator-rss.ratio", ratio(f.resident, f.active))
	kv("allocator-rss.bytes", f.resident-f.active)
	kd("rss-overhead.ratio", ratio(f.rss, f.resident))
	kv("rss-overhead.bytes", f.rss-f.resident)
	kd("fragmentation", ratio(f.rss, f.used))
	kv("fragmentation.bytes", f.rss-f.used)
}

// MEMORY DOCTOR: Redis 7.0's texts for a small instance and for one with
// no issue; the issues it looks for (fragmentation, big peaks, client
// buffers of replicas and Pub/Sub) are an allocator's and a replicating
// server's, which this is not.
func memoryDoctor(x *Ctx) {
	if x.S.memFigures().used < 5<<20 {
		x.W.Verbatim("Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. " +
			"Please, leave for your mission on Earth and fill it with some data. " +
			"The new Sam and I will be back to our programming as soon as I finished rebooting.\n")
		return
	}
	x.W.Verbatim("Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n")
}

// MEMORY MALLOC-STATS: the Go runtime's heap figures, where Redis prints
// jemalloc's report.
func memoryMallocStats(x *Ctx) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	x.W.Verbatim(fmt.Sprintf("___ Begin Go runtime heap statistics ___\nVersion: %q\n"+
		"HeapAlloc: %d\nHeapInuse: %d\nHeapIdle: %d\nHeapReleased: %d\nHeapSys: %d\nHeapObjects: %d\n"+
		"StackInuse: %d\nSys: %d\nNumGC: %d\n--- End Go runtime heap statistics ---\n",
		runtime.Version(), m.HeapAlloc, m.HeapInuse, m.HeapIdle, m.HeapReleased, m.HeapSys, m.HeapObjects,
		m.StackInuse, m.Sys, m.NumGC))
}

// LOLWUT [VERSION version]: Redis 7.0's answer for its own version, the
// version line; the generative art of versions 5 and 6 is random, and
// left out: every version answers the line.
func lolwutCmd(x *Ctx) {
	if len(x.Args) >= 3 && eq(x.Args[1], "version") {
		if _, ok := parseInt(x.Args[2]); !ok {
			x.Fail(ErrNotInteger)
			return
		}
	}
	x.W.Verbatim("Redis ver. " + Version + "\n")
}

// BGREWRITEAOF: the store compacts its own log as it goes, so there is no
// rewrite to start; it answers as Redis 7.0 does when it starts one (or,
// inside EXEC, schedules one), as BGSAVE does here.
func bgrewriteaofCmd(x *Ctx) {
	if x.InExec {
		x.W.Simple("Background append only file rewriting scheduled")
		return
	}
	x.W.Simple("Background append only file rewriting started")
}
