#!/usr/bin/env bash
# bench/cells.sh PORT [ROUNDS]: the harness's eight throughput cells
# (redis-benchmark -c 50 -n 200000 -r 100000: SET, GET, INCR, SET -d 256,
# then the same with -P 16) run ROUNDS times in a row (default 3) against
# one running server on 127.0.0.1:PORT, nothing paused in between: how a
# server's background work from earlier cells lands in later ones. Prints
# requests/s and p50 per cell. Run it by hand; it is not part of the tests.
set -euo pipefail
port=${1:?usage: bench/cells.sh PORT [ROUNDS]}
rounds=${2:-3}
cell() {
	redis-benchmark -h 127.0.0.1 -p "$port" -c 50 -n 200000 -r 100000 -t "$1" -d "$2" -P "$3" -q 2>/dev/null |
		grep -o '[A-Z]*: [0-9.]* requests per second.*' | sed "s/^/-P $3 -d $2 /"
}
for r in $(seq 1 "$rounds"); do
	echo "round $r"
	for p in 1 16; do
		for t in set get incr; do cell "$t" 3 "$p"; done
		cell set 256 "$p"
	done
done
