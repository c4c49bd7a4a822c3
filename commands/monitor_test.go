package commands

import (
	"testing"
	"time"
)

// TestMonitorLine checks the line format of Redis 7.0's
// replicationFeedMonitors: the time with six digits of microseconds, the
// database and address, each argument quoted as sdscatrepr quotes it.
func TestMonitorLine(t *testing.T) {
	at := time.Unix(1700000000, 5000)
	tests := []struct {
		name   string
		db     int
		addr   string
		args   []string
		redact map[int]bool
		want   string
	}{
		{"plain", 0, "127.0.0.1:5000", []string{"GET", "k"}, nil,
			`+1700000000.000005 [0 127.0.0.1:5000] "GET" "k"` + "\r\n"},
		{"escapes", 3, "lua", []string{"SET", "a\"b\\c", "\n\r\t\a\b", "\x00\x1f\x7f\xff é"}, nil,
			`+1700000000.000005 [3 lua] "SET" "a\"b\\c" "\n\r\t\a\b" "\x00\x1f\x7f\xff \xc3\xa9"` + "\r\n"},
		{"empty argument", 0, "unix:/tmp/s", []string{"ECHO", ""}, nil,
			`+1700000000.000005 [0 unix:/tmp/s] "ECHO" ""` + "\r\n"},
		{"redacted", 0, "a:1", []string{"AUTH", "u", "p"}, map[int]bool{1: true, 2: true},
			`+1700000000.000005 [0 a:1] "AUTH" "(redacted)" "(redacted)"` + "\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := make([][]byte, len(tt.args))
			for i, a := range tt.args {
				args[i] = []byte(a)
			}
			if got := string(monitorLine(at, tt.db, tt.addr, args, tt.redact)); got != tt.want {
				t.Errorf("monitorLine = %q, want %q", got, tt.want)
			}
		})
	}
}
