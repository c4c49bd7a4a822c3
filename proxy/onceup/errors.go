package onceup

import "errors"

// Sentinel errors. Their text is the RESP error reply, code first, worded
// exactly as commands/once.go words the embedded engine's.
var (
	// ErrStale: the token no longer holds the claim; nothing was changed.
	ErrStale = errors.New("STALE token no longer holds the claim (it completed, was aborted, lapsed or was handed over)")
	// ErrMismatch: the CLAIM's fingerprint differs from the key's (KV-15).
	ErrMismatch = errors.New("MISMATCH fingerprint differs from the one stored with this key")
	// ErrWrongType: the key holds a value that is not a ONCE record.
	ErrWrongType = errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")
	// ErrInvalidLease: a lease must be a positive number of milliseconds.
	ErrInvalidLease = errors.New("ERR invalid lease")
	// ErrShutdown answers the waiters when the engine closes.
	ErrShutdown = errors.New("ERR server is shutting down")

	// Argument errors, as Redis 7 and commands/once.go word them.
	errSyntax      = errors.New("ERR syntax error")
	errNotInteger  = errors.New("ERR value is not an integer or out of range")
	errTimeout     = errors.New("ERR timeout is not an integer or out of range")
	errNegTimeout  = errors.New("ERR timeout is negative")
	errInvalidKeep = errors.New("ERR invalid keep")

	// errReply: a script answered something this engine does not know
	// (another version of the scripts, or a corrupted record).
	errReply = errors.New("ERR unexpected reply from the upstream")
	// errGone: the waiter's caller had left when a takeover would have
	// been run for it; it is passed by (never sent: its client is gone).
	errGone = errors.New("ERR the client has left")
)
