package commands

import (
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"testing"

	"github.com/oncekv/oncekv/store"
	"github.com/oncekv/oncekv/store/badgerdb"
)

// TestListObjectModel runs random list commands on one key, against a
// slice that models the list, through lengths on both sides of the
// inline limits: after each command the list holds the model's elements,
// its form is inline while it never outgrew the limits, and an object
// owns exactly LLEN elements, at consecutive positions (no element is
// left behind by a pop, a trim, LREM or LINSERT).
func TestListObjectModel(t *testing.T) {
	s, do := zsetServer(t, -1) // sorted sets as by default: unused here
	bulks := func(elems []string) string {
		out := "*" + strconv.Itoa(len(elems)) + "\r\n"
		for _, e := range elems {
			out += "$" + strconv.Itoa(len(e)) + "\r\n" + e + "\r\n"
		}
		return out
	}
	rng := rand.New(rand.NewSource(1))
	var model []string
	grown := false // the list outgrew the inline limits since it was created
	n, objSteps, maxLen, emptied := 0, 0, 0, 0
	val := func() string {
		n++
		if rng.Intn(8) == 0 {
			return "dup"
		}
		return fmt.Sprint("v", n)
	}
	idx := func() int { // an index, negative or out of range at times
		return rng.Intn(len(model)+4) - (len(model)+4)/2
	}
	norm := func(i int) int {
		if i < 0 {
			i += len(model)
		}
		return i
	}
	for step := range 2000 {
		// Phases: grow fast, churn, shrink.
		phase := step / 200 % 3
		var args []string
		switch op := rng.Intn(12); {
		case op < 4 && phase != 2 || op == 0:
			k := 1 + rng.Intn(1+20*(1-phase%2))
			left := rng.Intn(2) == 0
			args = []string{"RPUSH", "l"}
			if left {
				args[0] = "LPUSH"
			}
			for range k {
				v := val()
				args = append(args, v)
				if left {
					model = append([]string{v}, model...)
				} else {
					model = append(model, v)
				}
			}
		case op < 7:
			k := 1 + rng.Intn(1+40*(phase/2))
			if rng.Intn(2) == 0 {
				args = []string{"LPOP", "l", strconv.Itoa(k)}
				model = model[min(k, len(model)):]
			} else {
				args = []string{"RPOP", "l", strconv.Itoa(k)}
				model = model[:len(model)-min(k, len(model))]
			}
		case op == 7 && len(model) > 0:
			i := idx()
			v := val()
			args = []string{"LSET", "l", strconv.Itoa(i), v}
			if j := norm(i); j >= 0 && j < len(model) {
				model[j] = v
			}
		case op == 8 && len(model) > 0:
			start, end := rng.Intn(4), -1-rng.Intn(4)
			args = []string{"LTRIM", "l", strconv.Itoa(start), strconv.Itoa(end)}
			from, to := listRange(int64(start), int64(end), int64(len(model)))
			model = model[from:to]
		case op == 9 && len(model) > 0:
			pivot := model[rng.Intn(len(model))]
			v := val()
			where := "BEFORE"
			at := slices.Index(model, pivot)
			if rng.Intn(2) == 0 {
				where = "AFTER"
				at++
			}
			args = []string{"LINSERT", "l", where, pivot, v}
			model = slices.Insert(model, at, v)
		case op == 10:
			count := rng.Intn(5) - 2
			args = []string{"LREM", "l", strconv.Itoa(count), "dup"}
			removed := 0
			limit := count
			if limit < 0 {
				limit = -limit
			}
			var keep []string
			if count >= 0 {
				for _, e := range model {
					if e == "dup" && (count == 0 || removed < limit) {
						removed++
						continue
					}
					keep = append(keep, e)
				}
			} else {
				for i := len(model) - 1; i >= 0; i-- {
					if model[i] == "dup" && removed < limit {
						removed++
						continue
					}
					keep = append([]string{model[i]}, keep...)
				}
			}
			model = keep
		default:
			other := []string{"LMOVE", "l", "l", "LEFT", "RIGHT"}
			args = other
			if len(model) > 0 {
				model = append(model[1:], model[0])
			}
		}
		if got := do(args...); len(got) > 0 && got[0] == '-' {
			t.Fatalf("step %d: %q: %q", step, args, got)
		}
		if len(model) == 0 {
			grown = false
		}
		if got, want := do("LRANGE", "l", "0", "-1"), bulks(model); got != want {
			t.Fatalf("step %d: after %q: LRANGE %.300q, want %.300q", step, args, got, want)
		}
		if len(model) > listObjMaxElems {
			grown = true
		}
		checkListForm(t, s.store.(*badgerdb.DB), step, len(model), grown)
		if grown {
			objSteps++
		}
		if len(model) == 0 {
			emptied++
		}
		maxLen = max(maxLen, len(model))
	}
	t.Logf("%d steps on an object, %d on an empty list, longest %d", objSteps, emptied, maxLen)
	if objSteps < 500 || objSteps > 1800 || emptied < 5 {
		t.Fatalf("the steps do not cover both forms and emptying")
	}
}

// checkListForm checks the form of key l: missing when n is 0; inline
// unless grown; an object owning exactly n elements at consecutive
// positions otherwise.
func checkListForm(t *testing.T, st store.Store, step, n int, grown bool) {
	t.Helper()
	_, err := st.View(func(tx store.Tx) error {
		r, err := openList(tx, 0, []byte("l"))
		if err != nil {
			return err
		}
		switch {
		case n == 0:
			if r.found {
				t.Fatalf("step %d: the emptied list is still a key", step)
			}
			return nil
		case r.isObj() != grown:
			t.Fatalf("step %d: object %v, want %v (%d elements)", step, r.isObj(), grown, n)
		case !r.isObj():
			return nil
		}
		count := 0
		next := listPosSub(nil, r.head)
		err = tx.ScanElems(r.v.Obj, nil, func(sub, _ []byte) (bool, error) {
			if string(sub) != string(next) {
				t.Fatalf("step %d: element %x where %x was due (%d of %d)", step, sub, next, count, r.n)
			}
			count++
			next = listPosSub(nil, r.head+int64(count))
			return true, nil
		})
		if count != n || r.n != int64(n) {
			t.Fatalf("step %d: %d elements stored, length %d, want %d", step, count, r.n, n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
