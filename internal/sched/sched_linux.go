package sched

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// maxPasses bounds Apply's passes over the threads. A thread the runtime
// starts while a pass runs inherits the policy of the thread that started
// it, which that pass may not have set yet; the next pass sets it. A pass
// that changes nothing ends it.
const maxPasses = 8

// Apply gives every thread of this process policy p, keeping each
// thread's nice value. Threads started later inherit it from the thread
// that starts them (the kernel copies a thread's policy to the threads it
// creates), so one call covers the process's life. It returns how many
// threads it changed.
func Apply(p Policy) (int, error) {
	want, err := linuxPolicy(p)
	if err != nil {
		return 0, err
	}
	changed := 0
	for range maxPasses {
		n, err := pass(want)
		changed += n
		if err != nil || n == 0 {
			return changed, err
		}
	}
	return changed, nil
}

// Current reports the policy of the calling thread: Normal, Batch, or
// the kernel's number of another one.
func Current() (Policy, error) {
	attr, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return "", fmt.Errorf("sched_getattr: %w", err)
	}
	return name(attr.Policy), nil
}

// Threads reports the policy of every thread of this process, by thread
// id.
func Threads() (map[int]Policy, error) {
	tids, err := threads()
	if err != nil {
		return nil, err
	}
	out := make(map[int]Policy, len(tids))
	for _, tid := range tids {
		attr, err := unix.SchedGetAttr(tid, 0)
		if errors.Is(err, unix.ESRCH) {
			continue // gone since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("sched_getattr %d: %w", tid, err)
		}
		out[tid] = name(attr.Policy)
	}
	return out, nil
}

func name(policy uint32) Policy {
	switch policy {
	case unix.SCHED_NORMAL:
		return Normal
	case unix.SCHED_BATCH:
		return Batch
	}
	return Policy(strconv.FormatUint(uint64(policy), 10))
}

func linuxPolicy(p Policy) (uint32, error) {
	switch p {
	case Normal:
		return unix.SCHED_NORMAL, nil
	case Batch:
		return unix.SCHED_BATCH, nil
	}
	return 0, fmt.Errorf("%w: %q", ErrPolicy, p)
}

// pass sets want on every listed thread that has another normal-class
// policy, and counts them. A thread with a real-time or idle policy was
// given it on purpose (chrt, a container's settings) and is left alone.
func pass(want uint32) (int, error) {
	tids, err := threads()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, tid := range tids {
		attr, err := unix.SchedGetAttr(tid, 0)
		if errors.Is(err, unix.ESRCH) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("sched_getattr %d: %w", tid, err)
		}
		if attr.Policy == want || (attr.Policy != unix.SCHED_NORMAL && attr.Policy != unix.SCHED_BATCH) {
			continue
		}
		attr.Policy = want
		// The attributes read include the nice value, which stays; no
		// flag asks for more than the policy and nice.
		attr.Flags = 0
		if err := unix.SchedSetAttr(tid, attr, 0); err != nil {
			if errors.Is(err, unix.ESRCH) {
				continue
			}
			return n, fmt.Errorf("sched_setattr %d: %w", tid, err)
		}
		n++
	}
	return n, nil
}

// threads lists this process's thread ids.
func threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
