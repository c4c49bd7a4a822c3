package sched

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Policy
		err  error
	}{
		{in: "batch", want: Batch},
		{in: "normal", want: Normal},
		{in: "idle", err: ErrPolicy},
		{in: "", err: ErrPolicy},
		{in: "BATCH", err: ErrPolicy}, // the config lowercases; Parse does not
	} {
		got, err := Parse(tc.in)
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("Parse(%q) = %q, %v; want %q, %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}
