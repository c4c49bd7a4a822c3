//go:build !linux

package sched

// Apply is Linux's only: elsewhere Normal is what every thread has, and
// Batch is ErrUnsupported.
func Apply(p Policy) (int, error) {
	if _, err := Parse(string(p)); err != nil {
		return 0, err
	}
	if p == Batch {
		return 0, ErrUnsupported
	}
	return 0, nil
}

// Current is Normal: the only policy this package knows here.
func Current() (Policy, error) { return Normal, nil }
