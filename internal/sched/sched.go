// Package sched sets the kernel's scheduling policy of every thread of
// this process: Linux's SCHED_OTHER ("normal") or SCHED_BATCH ("batch").
// The server's default, normal, is the kernel's; the server applies it
// only when CONFIG SET asks to leave batch.
//
// What batch buys: a thread with the batch policy does not preempt the
// thread running on a CPU when it wakes; it waits for that thread to
// block, or for the scheduler's tick. Every other rule is the normal
// policy's: the same nice value and the same share of the CPUs. A Go
// server runs its goroutines on several threads, and a request arriving
// on an idle connection wakes one of them; with the normal policy it
// takes the CPU from whatever runs there, most often one of the server's
// own clients when they share the machine (a docker-compose application,
// redis-benchmark). Measured on 2 cores with redis-benchmark -c 50 GET:
// the client was preempted about 42,000 times over 400,000 requests with
// the normal policy and about 1,000 with batch (redis-server: 600), and
// it ran on 76–83% of its core instead of 92–93%, for 20–28% more GETs
// a second in two alternations (docs/performance-notes.md).
//
// What it costs, and why it is not the default: when every CPU is busy
// with work that does not block, a woken server thread waits for the
// tick instead of taking its CPU at once. With two busy loops on the two
// cores, one client's GETs had a p99 of about 4 ms (the tick) in four of
// six runs with batch, and of 0.02–0.34 ms in six of seven with normal.
// A drop-in for Redis keeps Redis's latency there; batch is for a
// machine whose CPUs are shared with its clients rather than with
// busy work.
package sched

import "fmt"

// Policy is a scheduling policy this package can set.
type Policy string

// The policies.
const (
	Normal Policy = "normal"
	Batch  Policy = "batch"
)

// Parse reads a policy's name.
func Parse(s string) (Policy, error) {
	switch p := Policy(s); p {
	case Normal, Batch:
		return p, nil
	}
	return "", fmt.Errorf("%w: %q (want normal or batch)", ErrPolicy, s)
}
