#!/usr/bin/env bash
# Benchmarks oncekv against a real redis-server, in one run, and writes
# BENCHMARKS.md (tables, the exact commands, machine and versions) with
# SVG charts in bench/:
#
#   throughput  redis-benchmark -c 50 -n 200000 -r 100000: SET, GET, INCR and
#               SET -d 256, each with and without -P 16, alternated between
#               oncekv and redis-server started with the same appendfsync
#               (everysec, then always; redis: appendonly yes); and
#               bench/ceiling, a minimal Go server with the same appendfsync
#               (-- -ceiling=false: not)
#   once        bench/oncebench: ONCE claim+complete against go-redis + Lua
#               baselines, waiter wake-up latency up to 1000 waiters, and
#               the floors of both (PING + PING; a wake-up with no server)
#   memory      RSS idle and with 1M and 10M keys, GETs over a keyspace larger
#               than the cache, time to the first GET after a restart
#
# The work is done by the Go program bench/harness; this script maps the
# short options below to its flags and passes anything after -- as is
# (go run ./bench/harness -h lists them all).
#
# Usage: bench/redis-benchmark.sh [-q] [-f everysec,always] [-n requests] [-r rounds]
#                                 [-t set,get,incr,set-d256] [-k 1000000,10000000]
#                                 [-s throughput,once,memory] [-o out.md] [-- harness flags]
#   -q  smoke run: small sizes, well under 2 minutes; the report goes to a
#       temporary directory unless -o is given
#
# Needs redis-server and redis-benchmark 7 (apt-get install -y redis-server
# redis-tools) and Go. Run it by hand on a quiet machine: the full run takes
# about 20 minutes on 2 cores (-r 2: about 15) and is not part of go test.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

invoked="bench/redis-benchmark.sh${*:+ $*}"
args=()
while getopts "qf:n:r:t:k:s:o:h" opt; do
  case $opt in
    q) args+=(-smoke) ;;
    f) args+=(-fsync "$OPTARG") ;;
    n) args+=(-requests "$OPTARG") ;;
    r) args+=(-rounds "$OPTARG") ;;
    t) args+=(-tests "$OPTARG") ;;
    k) args+=(-mem-keys "$OPTARG") ;;
    s) args+=(-sections "$OPTARG") ;;
    o) args+=(-out "$OPTARG") ;;
    h) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

for b in redis-server redis-benchmark go; do
  command -v "$b" >/dev/null || { echo "$b not found (apt-get install -y redis-server redis-tools; Go from go.dev)" >&2; exit 1; }
done

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/harness" ./bench/harness
# The harness runs in the background so that a signal sent to this script
# (not only Ctrl-C, which reaches the whole process group) is passed on:
# it then stops its servers and removes its work directory.
"$bin/harness" -invoked-as "$invoked" ${args[@]+"${args[@]}"} "$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null || true' INT TERM
rc=0
wait "$child" || rc=$?
while kill -0 "$child" 2>/dev/null; do # wait returned early for a signal
  rc=0
  wait "$child" || rc=$?
done
exit "$rc"
