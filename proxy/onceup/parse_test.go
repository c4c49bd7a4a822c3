package onceup

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestParseEvent(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		want event
	}{
		{"d 17 3 1 2 keyfpanswer", true, event{kind: 'd', token: 17, key: []byte("key"), hasFP: true, fp: []byte("fp"), payload: []byte("answer")}},
		{"f 5 1 0 0 kmsg with spaces", true, event{kind: 'f', token: 5, key: []byte("k"), payload: []byte("msg with spaces")}},
		{"l 0 4 0 0 a b ", true, event{kind: 'l', key: []byte("a b "), payload: []byte{}}},
		{"d 1 9 0 0 short", false, event{}},
		{"d x 1 0 0 k", false, event{}},
		{"dd 1 1 0 0 k", false, event{}},
		{"d 1 1 0", false, event{}},
		{"", false, event{}},
	} {
		got, ok := parseEvent([]byte(tc.in))
		if ok != tc.ok {
			t.Errorf("parseEvent(%q) ok %v, want %v", tc.in, ok, tc.ok)
			continue
		}
		if ok && fmt.Sprintf("%c %d %s %v %s %s", got.kind, got.token, got.key, got.hasFP, got.fp, got.payload) !=
			fmt.Sprintf("%c %d %s %v %s %s", tc.want.kind, tc.want.token, tc.want.key, tc.want.hasFP, tc.want.fp, tc.want.payload) {
			t.Errorf("parseEvent(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestParseClaim(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		want   claimArgs
		waitMs int64
		err    error
	}{
		{nil, claimArgs{}, 0, nil},
		{[]string{"LEASE", "500", "wait", "0", "FingerPrint", "x"}, claimArgs{lease: 500, wait: true, fp: []byte("x"), hasFP: true}, 0, nil},
		{[]string{"WAIT", "250"}, claimArgs{wait: true}, 250, nil},
		{[]string{"FINGERPRINT", ""}, claimArgs{fp: []byte{}, hasFP: true}, 0, nil},
		{[]string{"LEASE"}, claimArgs{}, 0, errSyntax},
		{[]string{"LEASE", "0"}, claimArgs{}, 0, ErrInvalidLease},
		{[]string{"LEASE", "1.5"}, claimArgs{}, 0, errNotInteger},
		{[]string{"WAIT", "-1"}, claimArgs{}, 0, errNegTimeout},
		{[]string{"WAIT", "soon"}, claimArgs{}, 0, errTimeout},
		{[]string{"KEEP", "1"}, claimArgs{}, 0, errSyntax},
	} {
		var args [][]byte
		for _, a := range tc.args {
			args = append(args, []byte(a))
		}
		got, waitMs, err := parseClaim(args)
		if !errors.Is(err, tc.err) {
			t.Errorf("%v: error %v, want %v", tc.args, err, tc.err)
			continue
		}
		if err == nil && (got.lease != tc.want.lease || got.wait != tc.want.wait || got.hasFP != tc.want.hasFP ||
			string(got.fp) != string(tc.want.fp) || waitMs != tc.waitMs) {
			t.Errorf("%v = %+v wait %d, want %+v wait %d", tc.args, got, waitMs, tc.want, tc.waitMs)
		}
	}
}

func TestErrorText(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{ErrStale, "STALE token no longer holds the claim (it completed, was aborted, lapsed or was handed over)"},
		{fmt.Errorf("wrapped: %w", ErrMismatch), "MISMATCH fingerprint differs from the one stored with this key"},
		{context.DeadlineExceeded, "ERR upstream: timed out"},
		{context.Canceled, "ERR server is shutting down"},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), "ERR upstream: dial tcp 127.0.0.1:1: connect: connection refused"},
		{redis.ErrClosed, "ERR upstream: redis: client is closed"},
	} {
		if got := ErrorText(tc.err); got != tc.want {
			t.Errorf("ErrorText(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestCommandsTable: every spec is found in any case, and its arity is
// enforced with Redis's message (checked end to end in the suite).
func TestCommandsTable(t *testing.T) {
	for _, s := range Commands {
		if !IsCommand([]byte(s.Name)) || lookup([]byte(upper(s.Name))) == nil {
			t.Errorf("%s not found", s.Name)
		}
		if s.FirstKey != 1 || s.LastKey != 1 || s.Step != 1 {
			t.Errorf("%s: key spec %d %d %d", s.Name, s.FirstKey, s.LastKey, s.Step)
		}
	}
	if IsCommand([]byte("get")) {
		t.Error("GET is not a ONCE command")
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}
