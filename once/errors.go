package once

import "errors"

var (
	// ErrStale: the token no longer holds the claim (it completed, was
	// aborted, lapsed or was handed over); nothing was changed.
	ErrStale = errors.New("token no longer holds the claim")
	// ErrMismatch: the request's fingerprint differs from the one stored
	// with the key (an idempotency key reused for another request).
	ErrMismatch = errors.New("fingerprint differs from the one stored with this key")
	// ErrWrongType: the key holds a value that is not a ONCE record.
	ErrWrongType = errors.New("key holds a value that is not a once record")
	// ErrInvalidLease: a lease must be a positive number of milliseconds.
	ErrInvalidLease = errors.New("invalid lease")
	// ErrShutdown wakes waiters when the engine closes.
	ErrShutdown = errors.New("server is shutting down")
	// ErrGone is what a CLAIM … WAIT caller that has left (Watch) gets
	// instead of a claim handed over at a lapse: the claim went to the
	// next waiter. No client reads it.
	ErrGone = errors.New("the waiting client has left")
)
