#!/usr/bin/env bash
# Measures the server's CPU per request (issue 6): each server given, and
# redis-server, alternated, under one appendfsync policy, on the same
# redis-benchmark loads. Requests/s move a lot on a shared machine; the
# server's CPU per request (user + system from /proc/PID/stat over the
# load, divided by its requests) moves less, and is what tells two builds
# apart. Under "always", oncekv's requests per fsync are printed too (INFO
# persistence: oncekv_log_fsyncs).
#
# Each server starts fresh for each round, and the keys the loads read
# are set first (redis-benchmark -t set -P 16 over the same -r 100000).
#
# Usage: bench/cpu.sh [-r rounds] [-t "set get incr"] [-n requests] [-P pipeline]
#                     [-f everysec|always] [BINARY...]
#   BINARY  oncekv binaries to compare (default: this checkout, built);
#           "redis" is redis-server, and is always measured last in a
#           round unless given in another place
#   -r N    rounds (default 3)
#   -t T    redis-benchmark tests, space-separated (default "set get incr")
#   -n N    requests per test (default 2000000 with -P 16, else 400000)
#   -P N    pipeline (default 16)
#   -f F    appendfsync policy of every server (default everysec)
#
# Example, two builds: go build -o /tmp/a . (at one commit), go build -o
# /tmp/b . (at another), then bench/cpu.sh -P 1 -t "set incr" -f always /tmp/a /tmp/b
#
# Needs go, redis-server, redis-benchmark and redis-cli, and Linux (/proc).
# Everything listens on 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

rounds=3
tests="set get incr"
requests=
pipeline=16
fsync=everysec
while getopts "r:t:n:P:f:h" opt; do
  case $opt in
    r) rounds=$OPTARG ;;
    t) tests=$OPTARG ;;
    n) requests=$OPTARG ;;
    P) pipeline=$OPTARG ;;
    f) fsync=$OPTARG ;;
    h) usage ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
positive -r "$rounds"
positive -P "$pipeline"
[[ -z $requests ]] || positive -n "$requests"
[[ $fsync == everysec || $fsync == always ]] || { echo "-f wants everysec or always" >&2; exit 2; }
[[ -n $requests ]] || { if ((pipeline > 1)); then requests=2000000; else requests=400000; fi; }
need redis-server redis-benchmark redis-cli

compared_servers "$@"
ticks=$(getconf CLK_TCK)

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
fsyncs() { redis-cli -h 127.0.0.1 -p "$1" info persistence | tr -d '\r' | awk -F: -v f="$2" '$1 == f {print $2}'; }

echo "appendfsync $fsync, redis-benchmark -c 50 -n $requests -r 100000 -P $pipeline; per test: requests/s, server CPU µs per request[, requests per fsync]"
for ((r = 1; r <= rounds; r++)); do
  for b in "${servers[@]}"; do
    port=$(free_port)
    dir="$work/data-$r-$(basename "$b")"
    mkdir -p "$dir"
    if [[ $b == redis ]]; then
      start_server redis-server "$port" "$work/server.log" redis-server --port "$port" --bind 127.0.0.1 \
        --dir "$dir" --save '' --appendonly yes --appendfsync "$fsync" --daemonize no --loglevel warning
    else
      start_server "$b" "$port" "$work/server.log" "$b" --bind 127.0.0.1 --port "$port" --dir "$dir" \
        --appendfsync "$fsync" --loglevel warning
    fi
    redis-benchmark -h 127.0.0.1 -p "$port" -c 50 -n 200000 -r 100000 -t set -P 16 -q >/dev/null
    line="round $r $(basename "$b"):"
    for t in $tests; do
      s0=$(fsyncs "$port" oncekv_log_fsyncs) c0=$(cpu "$pid")
      out=$(redis-benchmark -h 127.0.0.1 -p "$port" -c 50 -n "$requests" -r 100000 -t "$t" -P "$pipeline" --csv | tail -1)
      c1=$(cpu "$pid") s1=$(fsyncs "$port" oncekv_log_fsyncs)
      rps=$(echo "$out" | cut -d, -f2 | tr -d '"')
      us=$(awk -v c="$((c1 - c0))" -v t="$ticks" -v n="$requests" 'BEGIN {printf "%.2f", c / t * 1e6 / n}')
      line+=" $t $(printf '%.0f' "$rps")/s ${us}µs"
      if [[ $fsync == always && -n $s1 && $s1 != "$s0" ]]; then
        line+=" $(awk -v n="$requests" -v s="$((s1 - s0))" 'BEGIN {printf "%.0f", n / s}')/fsync"
      fi
    done
    echo "$line"
    stop_server
  done
done
