#!/usr/bin/env bash
# Measures what expiring keys costs (KV-4, issue 6): oncekv against
# redis-server, both appendonly with appendfsync everysec.
#
# Each run starts a fresh server, writes N new keys with a deadline
# (redis-benchmark -P 16: SET k:__rand_int__ <100 bytes> EX 20), waits until
# the first of them is about to expire, then polls DBSIZE until it is 0 and
# reports how long that took and the server's CPU time meanwhile (user +
# system, from /proc/PID/stat), per key expired. Nothing else runs (the
# deadline leaves the time to apply the load first), so the CPU is the
# sweeper's (or Redis's active expire cycle's) and the writes of the
# deletions to disk. With more keys than oncekv's cache holds, most keys
# have left memory before they expire.
#
# Usage: bench/expiry.sh [-n keys] [-r rounds] [-a seconds] [BINARY...]
#   BINARY  oncekv binaries to compare (default: this checkout, built),
#           and "redis" to place redis-server (default: last);
#           each round runs every one of them and redis-server, the order
#           turning from round to round
#   -n N    keys written per run (default 500000)
#   -r N    rounds (default 2)
#   -a S    also count the server's CPU for S seconds after the last key
#           is gone, when the storage engine compacts what the deletions
#           left (default 0: not measured)
#
# Example, two builds: go build -o /tmp/a . (at one commit), go build -o
# /tmp/b . (at another), then bench/expiry.sh -a 10 /tmp/a /tmp/b
#
# Needs go, redis-server, redis-benchmark and redis-cli, and Linux (/proc).
# Everything listens on 127.0.0.1 only. About a minute a round.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

keys=500000
rounds=2
after=0
while getopts "n:r:a:h" opt; do
  case $opt in
    n) keys=$OPTARG ;;
    r) rounds=$OPTARG ;;
    a) after=$OPTARG ;;
    h) usage ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
positive -n "$keys"
positive -r "$rounds"
[[ $after =~ ^[0-9]+$ ]] || { echo "-a wants whole seconds, got $after" >&2; exit 2; }
need redis-server redis-benchmark redis-cli
compared_servers "$@"
ticks=$(getconf CLK_TCK)
ttl=20

server_cmd() {
  local v=$1 port=$2 dir=$3
  case $v in
    redis) cmd=(redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly yes --appendfsync everysec --dir "$dir" --daemonize no) ;;
    *) cmd=("$v" --bind 127.0.0.1 --port "$port" --dir "$dir" --appendfsync everysec --loglevel warning) ;;
  esac
}

# name is how a server is called in the table: redis, or the binary's
# file name.
name() { [[ $1 == redis ]] && echo redis || basename "$1"; }

next_port=17100

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

value=$(head -c 100 /dev/zero | tr '\0' v)
echo "# bench/expiry.sh -n $keys -r $rounds -a $after"
echo
echo "$(nproc) CPUs, $(command -v go >/dev/null && go version | cut -d' ' -f3-), $(redis-server --version | cut -d' ' -f1-3)"
echo
echo "Load: \`redis-benchmark -c 50 -n $keys -r 100000000 -P 16 SET k:__rand_int__ <100 bytes> EX $ttl\`, then DBSIZE polled every 0.2 s until 0."
echo
if ((after > 0)); then
  echo "Then ${after} s more of the server's CPU, after the last key is gone: the engine's work on what the deletions left."
  echo
  echo "| round | server | keys | expired in | server CPU | CPU per key | CPU the ${after} s after | per key, with it |"
  echo "|---:|---|---:|---:|---:|---:|---:|---:|"
else
  echo "| round | server | keys | expired in | server CPU | CPU per key |"
  echo "|---:|---|---:|---:|---:|---:|"
fi
run=0
for ((round = 1; round <= rounds; round++)); do
  # Each round starts one server further along the list.
  order=()
  for ((i = 0; i < ${#servers[@]}; i++)); do
    order+=("${servers[(i + round - 1) % ${#servers[@]}]}")
  done
  for v in "${order[@]}"; do
    run=$((run + 1))
    port=$(free_port)
    dir="$work/run$run"
    mkdir -p "$dir"
    server_cmd "$v" "$port" "$dir"
    start_server "$(name "$v")" "$port" "$dir.log" "${cmd[@]}"
    start=$(date +%s.%N)
    redis-benchmark -h 127.0.0.1 -p "$port" -c 50 -n "$keys" -r 100000000 -P 16 -q \
      SET 'k:__rand_int__' "$value" EX "$ttl" >/dev/null 2>&1
    written=$(redis-cli -h 127.0.0.1 -p "$port" dbsize)
    # Wait until just before the first keys' deadline.
    sleep "$(echo "$start + $ttl - 0.5 - $(date +%s.%N)" | bc | awk '{ print ($1 > 0 ? $1 : 0) }')"
    c0=$(cpu_ticks "$pid")
    t0=$(date +%s.%N)
    left=$written
    for ((i = 0; i < 1500 && left > 0; i++)); do
      sleep 0.2
      left=$(redis-cli -h 127.0.0.1 -p "$port" dbsize)
    done
    c1=$(cpu_ticks "$pid")
    t1=$(date +%s.%N)
    ((left == 0)) || { echo "$(name "$v"): $left keys left after 300 s" >&2; exit 1; }
    c2=$c1
    if ((after > 0)); then
      sleep "$after"
      c2=$(cpu_ticks "$pid")
    fi
    awk -v r="$round" -v v="$(name "$v")" -v k="$written" -v t="$(echo "$t1 - $t0" | bc)" -v c="$((c1 - c0))" \
      -v a="$((c2 - c1))" -v after="$after" -v hz="$ticks" 'BEGIN {
        printf "| %d | %s | %d | %.1f s | %.2f s | %.2f µs |", r, v, k, t, c / hz, c / hz / k * 1e6
        if (after > 0) printf " %.2f s | %.2f µs |", a / hz, (c + a) / hz / k * 1e6
        printf "\n" }'
    stop_server
  done
done
