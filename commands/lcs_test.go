package commands

import (
	"testing"
)

// TestParseLCS checks LCS's options as Redis 7.0 parses them.
func TestParseLCS(t *testing.T) {
	tests := []struct {
		args []string
		want lcsOpts
		err  error
	}{
		{nil, lcsOpts{}, nil},
		{[]string{"len"}, lcsOpts{getLen: true}, nil},
		{[]string{"IDX", "WithMatchLen"}, lcsOpts{getIdx: true, withMatchLen: true}, nil},
		{[]string{"MINMATCHLEN", "3", "idx"}, lcsOpts{getIdx: true, minMatchLen: 3}, nil},
		{[]string{"MINMATCHLEN", "-3"}, lcsOpts{}, nil},
		{[]string{"MINMATCHLEN"}, lcsOpts{}, ErrSyntax},
		{[]string{"MINMATCHLEN", "x"}, lcsOpts{}, ErrNotInteger},
		{[]string{"LEN", "IDX"}, lcsOpts{}, ErrLCSLenAndIdx},
		// A bad option is found before LEN and IDX are judged together.
		{[]string{"LEN", "IDX", "bogus"}, lcsOpts{}, ErrSyntax},
	}
	for _, tt := range tests {
		args := make([][]byte, len(tt.args))
		for i, a := range tt.args {
			args[i] = []byte(a)
		}
		got, err := parseLCS(args)
		if err != tt.err || err == nil && got != tt.want {
			t.Errorf("parseLCS(%q) = %+v, %v; want %+v, %v", tt.args, got, err, tt.want, tt.err)
		}
	}
}

// TestLCSOfAOnceRecord checks that LCS refuses a key that holds a ONCE
// record, as Redis refuses one of another type (KV-1: a ONCE record is
// no string).
func TestLCSOfAOnceRecord(t *testing.T) {
	srv := onceServerOver(t, openTestStore(t))
	c := newConn()
	for _, st := range []struct {
		args []string
		want string
	}{
		{[]string{"SET", "s", "abc"}, "+OK\r\n"},
		{[]string{"ONCE.CLAIM", "o"}, "*2\r\n$7\r\nclaimed\r\n:1\r\n"},
		{[]string{"LCS", "s", "o"}, "-" + ErrLCSNotString.Error() + "\r\n"},
		{[]string{"LCS", "o", "s", "bogus"}, "-" + ErrLCSNotString.Error() + "\r\n"},
		{[]string{"LCS", "s", "s", "LEN"}, ":3\r\n"},
	} {
		expect(t, srv, c, st.want, st.args...)
	}
}
