// Package benchkit is what the benchmark programs under bench/ share:
// starting oncekv and redis-server as child processes on free 127.0.0.1
// ports, each in a directory of its own (proc.go); a minimal RESP2 client
// whose cost is the same against both servers (resp.go); and the memory
// figures of a process, read from /proc (procfs.go).
//
// It is not for tests or users: servers started here die with the
// benchmark (on Linux), and every error is returned for the program to
// print and stop.
package benchkit
