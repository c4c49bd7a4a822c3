// Package child starts processes that die with this one: on Linux the
// kernel kills them (Pdeathsig) if this process dies first, so that an
// interrupted test run or benchmark leaves no servers behind.
//
// Pdeathsig fires when the OS thread that started the child ends, not the
// process (golang/go#27505): in a Go program that is whichever thread the
// starting goroutine ran on, which the runtime ends when a goroutine
// locked to it returns. A child started from such a thread is killed
// (SIGKILL, with nothing in its log) at a random moment. So Start starts
// the child from a goroutine locked to its thread, which waits there until
// the child has ended: no other goroutine runs on that thread meanwhile.
package child

import (
	"os/exec"
	"runtime"
)

// Proc is a child started by Start.
type Proc struct {
	Cmd  *exec.Cmd
	done chan struct{}
	err  error // Wait's result, once done is closed
}

// Start starts cmd (see the package doc) and waits for it in the
// background.
func Start(cmd *exec.Cmd) (*Proc, error) {
	p := &Proc{Cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine, once the
		// child has ended.
		runtime.LockOSThread()
		setDeathSignal(cmd)
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// Done is closed once the child has ended.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the child has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is how the child ended (exec.Cmd.Wait's error), once Done is
// closed; nil before.
func (p *Proc) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// Wait waits for the child to end and returns how it ended.
func (p *Proc) Wait() error {
	<-p.done
	return p.err
}
