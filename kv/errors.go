package kv

import (
	"errors"
	"fmt"
)

var (
	// ErrRunFailed is wrapped by the error a caller gets when the run it
	// waited for (someone else's, in this process or another) failed: the
	// runner aborted with a message, which the error carries (see
	// *FailedError). The key is free again, so a retry runs anew (KV-12).
	ErrRunFailed = errors.New("kv: run failed")

	// ErrLeaseLost is wrapped by the error of a run whose claim was lost
	// while it ran: its lease lapsed (or the key was deleted) and the
	// server no longer accepted its answer (-STALE). When the function had
	// succeeded, Run returns its value together with this error: the value
	// was computed but is not the key's kept answer, and another caller may
	// run (or have run) the function again.
	ErrLeaseLost = errors.New("kv: lease lost")

	// ErrReentrant is returned at once by a Run of a key inside its own run
	// (through the context given to the function): it would wait for
	// itself forever (KV-11).
	ErrReentrant = errors.New("kv: run of a key inside its own run")

	// ErrMismatch is wrapped by the error of a Run whose fingerprint differs
	// from the one stored with the key's running claim or kept answer: the
	// key was reused for a different request (KV-15).
	ErrMismatch = errors.New("kv: fingerprint mismatch")
)

// FailedError is the error of a Run that waited for a run that failed. It
// wraps ErrRunFailed; Message is the failed runner's error message (what
// it passed to ONCE.ABORT).
type FailedError struct {
	// Key is the key as given to Run (without the name prefix).
	Key string
	// Message is the message the run was aborted with.
	Message string
}

func (e *FailedError) Error() string {
	return fmt.Sprintf("kv: run of %q failed: %s", e.Key, e.Message)
}

// Unwrap makes errors.Is(err, ErrRunFailed) true.
func (e *FailedError) Unwrap() error { return ErrRunFailed }

// leaseLost wraps err (the reason the run ended, or nil) with ErrLeaseLost.
func leaseLost(key string, err error) error {
	if err == nil {
		return fmt.Errorf("%w: the claim on %q was lost before the answer was stored", ErrLeaseLost, key)
	}
	if errors.Is(err, ErrLeaseLost) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrLeaseLost, err)
}
