#!/usr/bin/env bash
# bench/cells.sh PORT [ROUNDS [PID [PAUSE]]]: the harness's eight
# throughput cells (redis-benchmark -c 50 -n 200000 -r 100000: SET, GET,
# INCR, SET -d 256, then the same with -P 16) run ROUNDS times in a row
# (default 3) against one running server on 127.0.0.1:PORT: how a
# server's background work from earlier cells lands in later ones. Prints
# requests/s and p50 per cell.
#
# With PID (the server's process), each cell also prints the server's CPU
# time during it (ticks of /proc/PID/stat, usually 10 ms each). With PAUSE
# (seconds), the server is stopped (SIGSTOP) for that long after each
# cell, as the harness pauses a server while it measures the other; with
# none, nothing is paused in between. Run it by hand; it is not part of
# the tests.
set -euo pipefail
port=${1:?usage: bench/cells.sh PORT [ROUNDS [PID [PAUSE]]]}
rounds=${2:-3}
pid=${3:-}
pause=${4:-0}
ticks() {
	if [[ -n $pid ]]; then awk '{print $14 + $15}' "/proc/$pid/stat"; else echo 0; fi
}
cell() {
	local before after line
	before=$(ticks)
	line=$(redis-benchmark -h 127.0.0.1 -p "$port" -c 50 -n 200000 -r 100000 -t "$1" -d "$2" -P "$3" -q 2>/dev/null |
		tr '\r' '\n' | grep -o '[A-Z]*: [0-9.]* requests per second.*' | tail -1)
	after=$(ticks)
	if [[ -n $pid ]]; then line="$line, server CPU $((after - before)) ticks"; fi
	echo "-P $3 -d $2 $line"
	if [[ -n $pid && $pause != 0 ]]; then
		kill -STOP "$pid"
		sleep "$pause"
		kill -CONT "$pid"
	fi
}
for r in $(seq 1 "$rounds"); do
	echo "round $r"
	for p in 1 16; do
		for t in set get incr; do cell "$t" 3 "$p"; done
		cell set 256 "$p"
	done
done
