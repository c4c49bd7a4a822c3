package sched

import (
	"errors"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// setNormal puts every thread back to the normal policy after a test.
func setNormal(t testing.TB) {
	t.Cleanup(func() {
		if _, err := Apply(Normal); err != nil {
			t.Errorf("restoring the normal policy: %v", err)
		}
	})
}

// onNewThreads runs f on n goroutines, each locked to its own thread at
// the same time, so that the runtime must start threads it did not have,
// and returns what f returned on each.
func onNewThreads[T any](n int, f func() T) []T {
	out := make([]T, n)
	var locked, done sync.WaitGroup
	release := make(chan struct{})
	locked.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			out[i] = f()
			locked.Done()
			<-release // hold the thread until all n have one
		}()
	}
	locked.Wait()
	close(release)
	done.Wait()
	return out
}

func allThreads(t testing.TB, want Policy) {
	t.Helper()
	got, err := Threads()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 2 {
		t.Fatalf("%d threads listed; a Go process has more", len(got))
	}
	for tid, p := range got {
		// Other policies are left alone (TestApplyLeavesOtherPolicies's
		// idle thread may linger a while after its goroutine ends).
		if p != want && (p == Normal || p == Batch) {
			t.Errorf("thread %d has policy %s, want %s", tid, p, want)
		}
	}
}

// Apply changes every thread, and threads started after it inherit the
// policy; Normal takes it back.
func TestApplyEveryThread(t *testing.T) {
	setNormal(t)
	// Threads that exist before the call.
	onNewThreads(8, func() struct{} { return struct{}{} })
	n, err := Apply(Batch)
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Fatalf("Apply(Batch) changed %d threads", n)
	}
	allThreads(t, Batch)
	// More threads than the process had: each must start with Batch.
	for i, p := range onNewThreads(runtime.NumCPU()+16, func() Policy {
		p, err := Current()
		if err != nil {
			return Policy(err.Error())
		}
		return p
	}) {
		if p != Batch {
			t.Errorf("goroutine %d's thread, started after Apply: policy %s", i, p)
		}
	}
	if n, err := Apply(Batch); err != nil || n != 0 {
		t.Errorf("Apply(Batch) again changed %d threads, %v; want 0", n, err)
	}
	if _, err := Apply(Normal); err != nil {
		t.Fatal(err)
	}
	allThreads(t, Normal)
}

// A thread given an idle (or real-time) policy on purpose keeps it.
func TestApplyLeavesOtherPolicies(t *testing.T) {
	setNormal(t)
	tid := make(chan int)
	check := make(chan struct{})
	got := make(chan Policy)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread ends with this goroutine, and
		// its idle policy with it.
		attr, err := unix.SchedGetAttr(0, 0)
		if err == nil {
			attr.Policy = unix.SCHED_IDLE
			attr.Flags = 0
			err = unix.SchedSetAttr(0, attr, 0)
		}
		if err != nil {
			tid <- -1
			return
		}
		tid <- unix.Gettid()
		<-check
		p, _ := Current()
		got <- p
	}()
	id := <-tid
	if id < 0 {
		t.Fatal("could not give a thread the idle policy")
	}
	if _, err := Apply(Batch); err != nil {
		t.Fatal(err)
	}
	close(check)
	if p := <-got; p != Policy("5") {
		t.Errorf("the idle thread %d has policy %s after Apply(Batch), want 5 (SCHED_IDLE)", id, p)
	}
}

// A thread's nice value and reset-on-fork flag stay through Apply.
func TestApplyKeepsNice(t *testing.T) {
	setNormal(t)
	type seen struct {
		nice  int32
		flags uint64
		err   error
	}
	before := make(chan seen)
	check := make(chan struct{})
	after := make(chan seen)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread, reniced, ends with this goroutine.
		read := func() seen {
			attr, err := unix.SchedGetAttr(0, 0)
			if err != nil {
				return seen{err: err}
			}
			return seen{nice: attr.Nice, flags: attr.Flags}
		}
		err := unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 7)
		if err == nil {
			var attr *unix.SchedAttr
			if attr, err = unix.SchedGetAttr(0, 0); err == nil {
				attr.Flags = unix.SCHED_FLAG_RESET_ON_FORK
				attr.Runtime, attr.Deadline, attr.Period = 0, 0, 0
				err = unix.SchedSetAttr(0, attr, 0)
			}
		}
		if err != nil {
			before <- seen{err: err}
			return
		}
		before <- read()
		<-check
		after <- read()
	}()
	if b := <-before; b.err != nil {
		t.Fatalf("could not renice a thread: %v", b.err)
	} else if b.nice != 7 {
		t.Fatalf("reniced to 7, the thread reads nice %d", b.nice)
	}
	if _, err := Apply(Batch); err != nil {
		t.Fatal(err)
	}
	close(check)
	a := <-after
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.nice != 7 || a.flags&unix.SCHED_FLAG_RESET_ON_FORK == 0 {
		t.Errorf("after Apply(Batch): nice %d, flags %#x; want nice 7 and reset-on-fork kept", a.nice, a.flags)
	}
}

func TestApplyUnknown(t *testing.T) {
	if _, err := Apply("fifo"); !errors.Is(err, ErrPolicy) {
		t.Fatalf("Apply(fifo) = %v, want ErrPolicy", err)
	}
}
