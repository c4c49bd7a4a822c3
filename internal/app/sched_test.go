//go:build linux

package app

import (
	"errors"
	"testing"

	"go.uber.org/zap"

	"github.com/oncekv/oncekv/internal/config"
	"github.com/oncekv/oncekv/internal/sched"
)

// everyThread fails t unless every thread of the process has policy want.
func everyThread(t *testing.T, want sched.Policy) {
	t.Helper()
	got, err := sched.Threads()
	if err != nil {
		t.Fatal(err)
	}
	for tid, p := range got {
		if p != want {
			t.Errorf("thread %d: policy %s, want %s", tid, p, want)
		}
	}
}

// The default configuration leaves every thread with the kernel's normal
// policy, batch gives it to every thread, and CONFIG SET sched-policy
// changes them all at once; INFO server shows the policy in force.
func TestSchedPolicy(t *testing.T) {
	t.Cleanup(func() { ApplySchedPolicy(config.Default(), zap.NewNop()) })
	batch := config.Default()
	batch.SchedPolicy = "batch"
	ApplySchedPolicy(batch, zap.NewNop())
	everyThread(t, sched.Batch)
	ApplySchedPolicy(config.Default(), zap.NewNop())
	everyThread(t, sched.Normal)

	a := startRT(t, zap.NewNop())
	c := dialRT(t, a)
	if got := infoField(t, c, "oncekv_sched_policy"); got != "normal" {
		t.Errorf("INFO oncekv_sched_policy = %q, want normal", got)
	}
	c.expect("+OK", "CONFIG", "SET", "sched-policy", "BATCH")
	everyThread(t, sched.Batch)
	if got := c.configGet("sched-policy"); got != "batch" {
		t.Errorf("CONFIG GET sched-policy = %q, want batch", got)
	}
	if got := infoField(t, c, "oncekv_sched_policy"); got != "batch" {
		t.Errorf("INFO oncekv_sched_policy = %q, want batch", got)
	}
	c.expect("-ERR CONFIG SET failed (possibly related to argument 'sched-policy') - argument(s) must be one of the following: normal, batch",
		"CONFIG", "SET", "sched-policy", "fifo")
	everyThread(t, sched.Batch)
	c.expect("+OK", "CONFIG", "SET", "sched-policy", "normal")
	everyThread(t, sched.Normal)

	// Threads given batch from outside (chrt, or a parent's policy)
	// while the configuration says normal: CONFIG SET sched-policy
	// normal, the same value, still gives them the default back.
	if _, err := sched.Apply(sched.Batch); err != nil {
		t.Fatal(err)
	}
	c.expect("+OK", "CONFIG", "SET", "Sched-Policy", "normal")
	everyThread(t, sched.Normal)
}

// A policy the system refuses fails CONFIG SET as Redis words a failed
// apply, and changes nothing: not the threads, not the pairs beside it.
func TestSchedPolicyRefused(t *testing.T) {
	t.Cleanup(func() { ApplySchedPolicy(config.Default(), zap.NewNop()) })
	refuse := errors.New("sched_setattr 1234: operation not permitted")
	applySched = func(p sched.Policy) (int, error) {
		if p == sched.Batch {
			_, _ = sched.Apply(p) // part of the threads changed, then the refusal
			return 0, refuse
		}
		return sched.Apply(p)
	}
	t.Cleanup(func() { applySched = sched.Apply })

	a := startRT(t, zap.NewNop())
	c := dialRT(t, a)
	before := c.configGet("timeout")
	if before == "7" {
		t.Fatal("timeout is 7 already: the refusal below would show nothing")
	}
	c.expect("-ERR CONFIG SET failed (possibly related to argument 'sched-policy') - "+refuse.Error(),
		"CONFIG", "SET", "timeout", "7", "sched-policy", "batch")
	everyThread(t, sched.Normal)
	if got := c.configGet("sched-policy"); got != "normal" {
		t.Errorf("CONFIG GET sched-policy = %q after a refusal, want normal", got)
	}
	if got := c.configGet("timeout"); got != before {
		t.Errorf("CONFIG GET timeout = %q after the refused CONFIG SET, want %q", got, before)
	}
}
