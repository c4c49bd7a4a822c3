package resp

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// orderedWaiter is a waiter of a sequence that completes in order, like a
// store's tickets: waiting for n implies every lower number is done.
type orderedWaiter struct {
	n      int
	err    error
	waited *[]int
}

func (w orderedWaiter) Wait(context.Context) error {
	*w.waited = append(*w.waited, w.n)
	return w.err
}

func (w orderedWaiter) Covers(prev any) bool {
	p, ok := prev.(orderedWaiter)
	return ok && p.n <= w.n
}

// plainWaiter covers nothing.
type plainWaiter struct {
	n      int
	waited *[]int
}

func (w plainWaiter) Wait(context.Context) error {
	*w.waited = append(*w.waited, w.n)
	return nil
}

// TestAwaitSettlesCoveredWaitersOnce checks that a pipeline's replies wait
// for each thing they need, in order, and that a waiter that covers the
// one awaited before it replaces it, so that a pipeline of writes waits
// once (KV-6: no reply is sent before what it acknowledges is durable).
func TestAwaitSettlesCoveredWaitersOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		awaits func(waited *[]int) []Waiter
		want   []int
	}{
		{"covered in order", func(w *[]int) []Waiter {
			return []Waiter{orderedWaiter{n: 1, waited: w}, orderedWaiter{n: 2, waited: w}, orderedWaiter{n: 2, waited: w}, orderedWaiter{n: 5, waited: w}}
		}, []int{5}},
		{"a lower number is not covered", func(w *[]int) []Waiter {
			return []Waiter{orderedWaiter{n: 5, waited: w}, orderedWaiter{n: 4, waited: w}}
		}, []int{5, 4}},
		{"a waiter without Covers stays", func(w *[]int) []Waiter {
			return []Waiter{orderedWaiter{n: 1, waited: w}, plainWaiter{n: 100, waited: w}, orderedWaiter{n: 2, waited: w}, orderedWaiter{n: 3, waited: w}}
		}, []int{1, 100, 3}},
		{"nil is nothing to wait for", func(w *[]int) []Waiter {
			return []Waiter{nil, plainWaiter{n: 7, waited: w}, nil}
		}, []int{7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var waited []int
			c := &Conn{}
			for _, w := range tc.awaits(&waited) {
				c.Await(w)
			}
			if err := c.Settle(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(waited, tc.want) {
				t.Fatalf("waited for %v, want %v", waited, tc.want)
			}
			waited = nil
			if err := c.Settle(context.Background()); err != nil || len(waited) != 0 {
				t.Fatalf("second Settle: %v, waited for %v; want nothing", err, waited)
			}
		})
	}
}

// TestSettleFailureForgetsTheRest checks that a failed wait is reported and
// leaves nothing awaited: the replies that waited are not sent, and the
// next pipeline does not wait for the previous one's writes.
func TestSettleFailureForgetsTheRest(t *testing.T) {
	var waited []int
	failed := errors.New("not durable")
	c := &Conn{}
	c.Await(plainWaiter{n: 1, waited: &waited})
	c.Await(orderedWaiter{n: 2, err: failed, waited: &waited})
	c.Await(plainWaiter{n: 3, waited: &waited})
	if err := c.Settle(context.Background()); !errors.Is(err, failed) {
		t.Fatalf("Settle = %v, want %v", err, failed)
	}
	if !slices.Equal(waited, []int{1, 2}) {
		t.Fatalf("waited for %v, want [1 2]", waited)
	}
	waited = nil
	if err := c.Settle(context.Background()); err != nil || len(waited) != 0 {
		t.Fatalf("Settle after a failure: %v, waited for %v; want nothing", err, waited)
	}
}
