// Package integration holds the end-to-end tests of the oncekv server: a
// harness that runs the real binary and Debian's redis-server side by side
// (harness_test.go), a minimal raw RESP2/RESP3 client that returns replies as
// bytes (resp_test.go), and a differential runner (diff_test.go) that sends
// the same scripts of commands to both servers and compares the replies
// byte for byte, in RESP2 and again in RESP3, and a fuzz target (FuzzDiff)
// that generates such scripts.
//
// Run them with
//
//	go test ./integration -count=1
//	go test ./integration -run Diff -count=1        # only the differential tables
//	go test ./integration -run Matrix -count=1 -v   # the client matrix (matrix_test.go)
//	go test ./integration -run X -fuzz FuzzDiff -fuzztime 10m -fuzzminimizetime 10s -parallel 2
//	                                 # random scripts against both (fuzzdiff_test.go)
//
// Environment:
//
//	ONCEKV_BIN=/path/to/oncekv       use this binary instead of building one
//	                                 (build it with -tags oncekv_poison,oncekv_testhooks,
//	                                 or the tests that need those fail)
//	ONCEKV_DIFF_AGAINST=redis        point the "oncekv" side of the diff tables
//	                                 at a second redis-server (checks the runner
//	                                 and the tables themselves)
//
// Everything listens on 127.0.0.1 only. redis-server (7.0) must be on PATH;
// the client matrix also needs redis-cli, tmux, Node.js 20.11+ with npm and
// Debian's python3-redis (./test.sh installs the Debian packages).
package integration
