package commands

import "testing"

// TestParseTimeout: the blocking commands' timeout as redis-server 7.0.15
// reads it (each case checked with redis-cli against it): milliseconds
// rounded up, a product out of long long's range negative, and no error
// for a deadline past int64 (7.2's "timeout is out of range").
func TestParseTimeout(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ms   int64
		want error
	}{
		{"0", 0, nil}, {"-0", 0, nil}, {"1.5", 1500, nil}, {"0x10", 16000, nil},
		{"0.001", 1, nil}, {"0.0001", 1, nil}, {"1e-300", 1, nil},
		{"-0.0001", 0, nil}, {"-0.001", 0, nil}, // just above -1 ms: for good
		{"-0.002", 0, ErrTimeoutNegative}, {"-1", 0, ErrTimeoutNegative},
		{"9223372036854775", 9223372036854775000, nil},
		{"9223372036854775.807", 9223372036854775807, nil},
		{"9223372036854775.808", 0, ErrTimeoutNegative}, {"1e300", 0, ErrTimeoutNegative},
		{"inf", 0, ErrTimeoutNegative}, {"-inf", 0, ErrTimeoutNegative},
		{"abc", 0, ErrTimeoutFloat}, {"nan", 0, ErrTimeoutFloat}, {" 1", 0, ErrTimeoutFloat}, {"", 0, ErrTimeoutFloat},
	} {
		ms, err := parseTimeout([]byte(tc.in))
		if ms != tc.ms || err != tc.want {
			t.Errorf("parseTimeout(%q) = %d, %v; want %d, %v", tc.in, ms, err, tc.ms, tc.want)
		}
	}
}
