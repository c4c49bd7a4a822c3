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
// that changes nothing, and finds every listed thread still there, ends
// it.
const maxPasses = 8

// Apply gives every thread of this process policy p, keeping each
// thread's nice value and its reset-on-fork flag. Threads started later
// inherit it from the thread that starts them (the kernel copies a
// thread's policy to the threads it creates), so one call covers the
// process's life. Threads with a policy other than normal or batch (idle,
// real-time: given on purpose) are left alone. A thread the system
// refuses does not stop the others; the errors are joined. It returns
// how many threads it changed.
func Apply(p Policy) (int, error) {
	want, err := linuxPolicy(p)
	if err != nil {
		return 0, err
	}
	changed := 0
	for range maxPasses {
		n, again, err := pass(want)
		changed += n
		if err != nil || !again {
			return changed, err
		}
	}
	return changed, fmt.Errorf("%w after %d passes", ErrUnsettled, maxPasses)
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

// pass sets want on every listed thread that has the other normal-class
// policy, and counts them. again reports that another pass is needed: it
// changed a thread, which may have started others meanwhile, or a listed
// thread was gone, which may have done so before it went.
func pass(want uint32) (n int, again bool, err error) {
	tids, err := threads()
	if err != nil {
		return 0, false, err
	}
	var errs []error
	for _, tid := range tids {
		attr, err := unix.SchedGetAttr(tid, 0)
		if errors.Is(err, unix.ESRCH) {
			again = true
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("sched_getattr %d: %w", tid, err))
			continue
		}
		if attr.Policy == want || (attr.Policy != unix.SCHED_NORMAL && attr.Policy != unix.SCHED_BATCH) {
			continue
		}
		attr.Policy = want
		// What was read holds the nice value, which stays, and the
		// reset-on-fork flag, which stays too. Since Linux 6.12 it also
		// holds the thread's time slice in Runtime: written back, that
		// would fix the slice for good, so it goes, as do the fields of
		// other policies.
		attr.Flags &= unix.SCHED_FLAG_RESET_ON_FORK
		attr.Runtime, attr.Deadline, attr.Period = 0, 0, 0
		if err := unix.SchedSetAttr(tid, attr, 0); err != nil {
			if errors.Is(err, unix.ESRCH) {
				again = true
				continue
			}
			errs = append(errs, fmt.Errorf("sched_setattr %d: %w", tid, err))
			continue
		}
		n++
	}
	return n, again || n > 0, errors.Join(errs...)
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
