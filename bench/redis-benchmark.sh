#!/usr/bin/env bash
# Runs redis-benchmark against oncekv and a real redis-server with the same
# fsync policy, alternating between them, and prints requests/s, the ratio
# ours/redis (median of the rounds) and p50/p99 latencies.
#
# Usage: bench/redis-benchmark.sh [-f everysec|always] [-n requests] [-r rounds] [-o out.md]
# Needs redis-server and redis-benchmark (apt-get install redis-server redis-tools).
# Run it by hand: it takes minutes and is not part of go test.
set -euo pipefail
cd "$(dirname "$0")/.."

fsync=everysec; n=200000; rounds=2; out=""; tests="set,get,incr"
while getopts "f:n:r:o:t:" opt; do
  case $opt in
    f) fsync=$OPTARG ;; n) n=$OPTARG ;; r) rounds=$OPTARG ;; o) out=$OPTARG ;; t) tests=$OPTARG ;;
    *) echo "usage: $0 [-f everysec|always] [-n requests] [-r rounds] [-o out.md] [-t set,get,incr]"; exit 2 ;;
  esac
done

for b in redis-server redis-benchmark redis-cli; do
  command -v $b >/dev/null || { echo "$b not found: apt-get install -y redis-server redis-tools"; exit 1; }
done

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/oncekv" .

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "server on $1 did not start"; exit 1; }

rport=$(free_port); oport=$(free_port)
mkdir -p "$work/redis" "$work/oncekv-data"
redis-server --port "$rport" --bind 127.0.0.1 --dir "$work/redis" --save "" \
  --appendonly yes --appendfsync "$fsync" --daemonize no >"$work/redis.log" 2>&1 &
"$work/oncekv" --port "$oport" --dir "$work/oncekv-data" --appendfsync "$fsync" --loglevel warning >"$work/oncekv.log" 2>&1 &
wait_up "$rport"; wait_up "$oport"

# run PORT PIPELINE EXTRA… → csv lines "test,rps,p50,p99"
run() {
  local port=$1 p=$2; shift 2
  redis-benchmark -p "$port" -c 50 -n "$n" -r 100000 -P "$p" "$@" --csv 2>/dev/null |
    tail -n +2 | tr -d '"' | awk -F, '{print $1","$2","$5","$7}'
}

results="$work/results.csv"   # server,pipeline,test,round,rps,p50,p99
for round in $(seq "$rounds"); do
  for p in 1 16; do
    for spec in "$tests:" "set:-d 256"; do
      t=${spec%%:*}; extra=${spec#*:}
      label=""; [ -n "$extra" ] && label=" $extra"
      for server in redis oncekv; do
        port=$rport; [ $server = oncekv ] && port=$oport
        # shellcheck disable=SC2086
        run "$port" "$p" -t "$t" $extra | while IFS=, read -r test rps p50 p99; do
          echo "$server,$p,$test$label,$round,$rps,$p50,$p99"
        done >>"$results"
      done
    done
  done
done

table=$(python3 - "$results" "$fsync" <<'PY'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
fsync = sys.argv[2]
cells = {}
for server, p, test, rnd, rps, p50, p99 in rows:
    cells.setdefault((test, p), {}).setdefault(server, []).append((float(rps), float(p50), float(p99)))
print(f"appendfsync {fsync} (redis: appendonly yes), -c 50, median of rounds\n")
print("| test | -P | oncekv req/s | redis req/s | ratio | oncekv p50/p99 ms | redis p50/p99 ms |")
print("|---|---|---|---|---|---|---|")
for (test, p), by in sorted(cells.items(), key=lambda kv: (int(kv[0][1]), kv[0][0])):
    o, r = by.get("oncekv", []), by.get("redis", [])
    if not o or not r:
        continue
    ratios = [a[0] / b[0] for a, b in zip(o, r)]
    med = lambda xs, i: statistics.median(x[i] for x in xs)
    print(f"| {test} | {p} | {med(o,0):,.0f} | {med(r,0):,.0f} | {statistics.median(ratios):.2f}x "
          f"| {med(o,1):.3f} / {med(o,2):.3f} | {med(r,1):.3f} / {med(r,2):.3f} |")
PY
)
echo "$table"
if [ -n "$out" ]; then
  { echo; echo "Command: \`bench/redis-benchmark.sh -f $fsync -n $n -r $rounds\`"; echo; echo "$table"; } >>"$out"
fi
