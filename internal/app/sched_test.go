package app

import (
	"runtime"
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
	if runtime.GOOS != "linux" {
		t.Skip("scheduling policies are Linux's")
	}
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
	c.expect("-ERR CONFIG SET failed (possibly related to argument 'sched-policy') - argument(s) must be one of the following: batch, normal",
		"CONFIG", "SET", "sched-policy", "fifo")
	everyThread(t, sched.Batch)
	c.expect("+OK", "CONFIG", "SET", "sched-policy", "normal")
	everyThread(t, sched.Normal)
}
