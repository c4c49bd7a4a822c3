package commands

// InfoOmitted are the fields of Redis 7.0's `INFO everything` (run as a
// plain server: no replicas, no AOF, no modules) that this server does
// not show, by section, each with why. A test compares INFO with a real
// redis-server's and fails on any other difference of field names.
var InfoOmitted = map[string]map[string]string{
	"server": {
		"atomicvar_api": "how Redis's C code does atomics; go_version tells the toolchain",
		"gcc_version":   "the C compiler that built Redis; go_version tells the toolchain",
		"lru_clock":     "no LRU clock: there is no eviction",
	},
	"clients": {
		"client_recent_max_input_buffer":  "not tracked: each connection's buffers belong to its goroutine",
		"client_recent_max_output_buffer": "not tracked: each connection's buffers belong to its goroutine",
	},
	"memory": {
		"used_memory_overhead":       "the Go heap is not split into dataset and overhead (the data lives in the storage engine)",
		"used_memory_dataset":        "the Go heap is not split into dataset and overhead (the data lives in the storage engine)",
		"used_memory_dataset_perc":   "the Go heap is not split into dataset and overhead (the data lives in the storage engine)",
		"used_memory_vm_functions":   "no functions",
		"used_memory_vm_total":       "no functions: used_memory_vm_eval is the Lua total",
		"used_memory_vm_total_human": "no functions: used_memory_lua_human is the Lua total",
		"used_memory_functions":      "no functions",
		"used_memory_scripts":        "no scripts nor functions",
		"used_memory_scripts_human":  "no scripts nor functions",
		"mem_clients_normal":         "not tracked: each connection's buffers belong to its goroutine",
		"mem_aof_buffer":             "no AOF buffer: writes go to the storage engine's log",
	},
	"stats": {
		"expired_stale_perc":             "the expiry sweeper keeps no estimate of expired keys left",
		"expired_time_cap_reached_count": "the expiry sweeper has no time cap",
		"expire_cycle_cpu_milliseconds":  "the expiry sweeper's CPU time is not measured",
		"reply_buffer_shrinks":           "reply buffers are not resized the way Redis's are",
		"reply_buffer_expands":           "reply buffers are not resized the way Redis's are",
	},
	"replication": {
		"repl_backlog_size": "no replication backlog",
	},
	"cpu": {
		"used_cpu_sys_main_thread":  "no main thread: commands run on goroutines",
		"used_cpu_user_main_thread": "no main thread: commands run on goroutines",
	},
}

// InfoOmittedSections are Redis 7.0's INFO sections this server does not
// have.
var InfoOmittedSections = map[string]string{
	"latencystats": "no percentiles: the metrics endpoint has per-command latency histograms",
}

// InfoExtra are the fields only this server shows, by section; the ONCE
// engine's section, "once", is only this server's too.
var InfoExtra = map[string][]string{
	"server": {"go_version", "oncekv_version", "oncekv_procs", "oncekv_sched_policy"},
	"memory": {"oncekv_heap_limit", "oncekv_heap_limit_human"},
	"persistence": {"oncekv_appendfsync", "oncekv_pending_writes", "oncekv_unsynced_writes",
		"oncekv_lsm_size_bytes", "oncekv_vlog_size_bytes", "oncekv_writes_refused", "oncekv_write_error",
		"oncekv_key_filter_bytes", "oncekv_lookups", "oncekv_lookups_skipped",
		"oncekv_log_writes", "oncekv_log_fsyncs", "oncekv_log_writes_led"},
}
