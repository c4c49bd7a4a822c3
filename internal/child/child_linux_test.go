package child

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// startOnDyingThread starts sleep from a goroutine locked to its thread,
// which ends as the goroutine returns, with start.
func startOnDyingThread(t *testing.T, start func(*exec.Cmd) error) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	errc := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with us
		errc <- start(cmd)
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd
}

// A child started by Start lives on when the thread of the goroutine that
// called Start ends; one started with Pdeathsig from that thread itself
// is killed then (the hazard Start avoids).
func TestChildOutlivesTheCallersThread(t *testing.T) {
	var p *Proc
	startOnDyingThread(t, func(cmd *exec.Cmd) (err error) {
		p, err = Start(cmd)
		return err
	})
	plain := startOnDyingThread(t, func(cmd *exec.Cmd) error {
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		return cmd.Start()
	})
	plainDone := make(chan error, 1)
	go func() { plainDone <- plain.Wait() }()
	select {
	case <-plainDone:
	case <-time.After(10 * time.Second):
		t.Fatal("a child started with Pdeathsig from an ending thread lived on: the hazard this package avoids is not there")
	}
	if p.Exited() {
		t.Fatalf("the child started by Start was killed with its caller's thread: %v", p.Err())
	}
	p.Cmd.Process.Kill()
	if err := p.Wait(); err == nil {
		t.Fatal("Wait reported a clean exit of a killed child")
	}
}
