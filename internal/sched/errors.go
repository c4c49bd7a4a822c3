package sched

import "errors"

// ErrPolicy is a policy name this package does not know.
var ErrPolicy = errors.New("unknown scheduling policy")

// ErrUnsupported is Batch asked of a system that has no such policy.
var ErrUnsupported = errors.New("this system has no batch scheduling policy")

// ErrUnsettled is Apply finding threads to change on every one of its
// passes: threads started faster than it could set them.
var ErrUnsettled = errors.New("threads still changing")
