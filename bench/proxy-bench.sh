#!/usr/bin/env bash
# Throughput of oncekv in proxy mode (--upstream), in one run:
#
#   - redis-benchmark SET and GET (without and with -P 16 pipelining)
#     straight to Redis, through 1 proxy, and through 2 proxies (the clients
#     split over both, requests/s summed), over a standalone redis-server
#     and over a Redis Cluster of 3 masters;
#   - ONCE claim+complete cycles/s (bench/oncebench) through 1 and 2
#     proxies, with oncebench's baseline (go-redis + Lua on the same
#     upstream, straight) for comparison. With 2 proxies, two oncebench runs
#     go at once, each with half the clients on one proxy, and their
#     cycles/s are summed (their rounds alternate oncekv/baseline in step,
#     as they start together with the same durations).
#
# Every server runs on this machine, on 127.0.0.1: the figures say what
# the proxy costs against the same Redis, not what a network would give.
#
# Usage: bench/proxy-bench.sh [-n requests] [-c clients] [-d once-seconds] [-o out.md] [-O]
#   -O skips the ONCE part. Needs redis-server, redis-cli and redis-benchmark 7
#   (apt-get install -y redis-server redis-tools) and python3 (free ports,
#   JSON). Run it by hand: it takes a few minutes and is not part of go test.
set -euo pipefail
cd "$(dirname "$0")/.."

n=200000; clients=50; once_secs=5; out=""; do_once=1
while getopts "n:c:d:o:O" opt; do
  case $opt in
    n) n=$OPTARG ;; c) clients=$OPTARG ;; d) once_secs=$OPTARG ;; o) out=$OPTARG ;; O) do_once=0 ;;
    *) echo "usage: $0 [-n requests] [-c clients] [-d once-seconds] [-o out.md] [-O]"; exit 2 ;;
  esac
done

for b in redis-server redis-benchmark redis-cli python3; do
  command -v $b >/dev/null || { echo "$b not found: apt-get install -y redis-server redis-tools python3"; exit 1; }
done

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/oncekv" .

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# A cluster node needs its port + 10000 free too (the cluster bus).
free_cluster_port() {
  python3 -c '
import socket
while True:
    s=socket.socket(); s.bind(("127.0.0.1",0)); p=s.getsockname()[1]
    if p+10000 > 65535: continue
    t=socket.socket()
    try: t.bind(("127.0.0.1",p+10000))
    except OSError: continue
    print(p); break'
}
wait_up() { for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return 0; sleep 0.1; done; echo "server on $1 did not start"; exit 1; }

start_redis() { # name port extra…
  local name=$1 port=$2; shift 2
  mkdir -p "$work/$name"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$work/$name" --save "" --appendonly no \
    --daemonize no "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  wait_up "$port"
}
start_proxy() { # name port upstream
  "$work/oncekv" --bind 127.0.0.1 --port "$2" --upstream "$3" --loglevel warning >"$work/$1.log" 2>&1 &
  pids+=($!)
  wait_up "$2"
}

echo "starting a redis-server, a 3-master cluster and 4 proxies…" >&2
rport=$(free_port)
start_redis redis "$rport"
# oncebench's baseline runs on a redis-server of its own: its keys must not
# meet those the proxies write to their upstream.
bport=$(free_port)
start_redis baseline "$bport"
cports=()
for i in 1 2 3; do
  p=$(free_cluster_port)
  cports+=("$p")
  start_redis "node$i" "$p" --cluster-enabled yes --cluster-config-file "$work/node$i/nodes.conf" --cluster-node-timeout 5000
done
redis-cli --cluster create "127.0.0.1:${cports[0]}" "127.0.0.1:${cports[1]}" "127.0.0.1:${cports[2]}" \
  --cluster-yes >"$work/cluster-create.log" 2>&1
for _ in $(seq 100); do
  ok=1
  for p in "${cports[@]}"; do
    redis-cli -p "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok' || ok=0
  done
  [ $ok = 1 ] && break
  sleep 0.1
done
[ $ok = 1 ] || { echo "the cluster did not come up"; cat "$work/cluster-create.log"; exit 1; }
cluster_up="redis-cluster://127.0.0.1:${cports[0]},127.0.0.1:${cports[1]},127.0.0.1:${cports[2]}"
ps1=$(free_port); ps2=$(free_port); pc1=$(free_port); pc2=$(free_port)
start_proxy ps1 "$ps1" "redis://127.0.0.1:$rport"
start_proxy ps2 "$ps2" "redis://127.0.0.1:$rport"
start_proxy pc1 "$pc1" "$cluster_up"
start_proxy pc2 "$pc2" "$cluster_up"

# rps TEST PIPELINE CLIENTS REQUESTS ARGS… → requests/s of one redis-benchmark
rps() {
  local t=$1 p=$2 c=$3 req=$4; shift 4
  # (--cluster prints the masters before the CSV: take the test's line.)
  redis-benchmark "$@" -c "$c" -n "$req" -r 100000 -P "$p" -t "$t" --csv 2>/dev/null |
    tr -d '"' | grep -i "^$t," | head -1 | awk -F, '{printf "%d\n", $2 + 0.5}'
}
# rps2 TEST PIPELINE PORT1 PORT2 → summed requests/s of two at once, half the clients each
rps2() {
  local t=$1 p=$2
  rps "$t" "$p" $((clients / 2)) $((n / 2)) -p "$3" >"$work/a.rps" &
  local a=$!
  rps "$t" "$p" $((clients / 2)) $((n / 2)) -p "$4" >"$work/b.rps"
  wait $a
  python3 -c "print(round(float(open('$work/a.rps').read())+float(open('$work/b.rps').read())))"
}
ratio() { python3 -c "print('%.2f' % ($1/$2))"; }

{
  echo "## oncekv proxy mode: throughput"
  echo
  echo "redis-benchmark, $clients clients, $n requests, random keys (-r 100000); $(nproc) cores, all on 127.0.0.1."
  echo "\"2 proxies\": two redis-benchmark at once, $((clients / 2)) clients each, one per proxy; requests/s summed."
  echo
  echo "| upstream | test | pipeline | straight to Redis | 1 proxy | 2 proxies | 1 proxy / Redis | 2 proxies / Redis |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|"
} >"$work/table.md"
for up in standalone cluster; do
  for p in 1 16; do
    for t in set get; do
      echo "  $up $t -P $p…" >&2
      if [ $up = standalone ]; then
        direct=$(rps "$t" "$p" "$clients" "$n" -p "$rport")
        one=$(rps "$t" "$p" "$clients" "$n" -p "$ps1")
        two=$(rps2 "$t" "$p" "$ps1" "$ps2")
      else
        direct=$(rps "$t" "$p" "$clients" "$n" --cluster -p "${cports[0]}")
        one=$(rps "$t" "$p" "$clients" "$n" -p "$pc1")
        two=$(rps2 "$t" "$p" "$pc1" "$pc2")
      fi
      echo "| $up | $t | $p | $direct | $one | $two | $(ratio "$one" "$direct") | $(ratio "$two" "$direct") |" >>"$work/table.md"
    done
  done
done

if [ $do_once = 1 ]; then
  echo "  ONCE (oncebench)…" >&2
  ob=(go run ./bench/oncebench -client raw -duration "${once_secs}s" -warmup 1s -rounds 2 -waiters 1 -wake-samples 10 -wake-min-rounds 2)
  once_row() { # label json…: oncekv cycles/s summed, the baseline's best (mean of the runs)
    python3 - "$@" <<'PY'
import json, sys
label, files = sys.argv[1], sys.argv[2:]
once, base = 0.0, []
for f in files:
    d = json.load(open(f))
    once += sum(r["cycles_per_s"] for r in d["cycles"] if r["oncekv"])
    b = [r["cycles_per_s"] for r in d["cycles"] if not r["oncekv"]]
    if b: base.append(max(b))
bl = sum(base)
print("| %s | %d | %d | %s |" % (label, once, bl, ("%.2f" % (once / bl)) if bl else "-"))
PY
  }
  {
    echo
    echo "### ONCE claim+complete cycles/s (bench/oncebench, raw client)"
    echo
    echo "Baseline: oncebench's best Lua claim/complete straight to a redis-server of its own (the same kind as the standalone upstream), in the same run."
    echo
    echo "| through | oncekv proxy cycles/s | baseline cycles/s | ratio |"
    echo "|---|---:|---:|---:|"
  } >>"$work/table.md"
  for up in standalone cluster; do
    if [ $up = standalone ]; then a=$ps1; b=$ps2; else a=$pc1; b=$pc2; fi
    if "${ob[@]}" -oncekv "127.0.0.1:$a" -redis "127.0.0.1:$bport" -clients "$clients" -json "$work/o1.json" >"$work/o1.log" 2>&1; then
      once_row "$up, 1 proxy" "$work/o1.json" >>"$work/table.md"
    else
      echo "| $up, 1 proxy | oncebench failed: see below | | |" >>"$work/table.md"; tail -n 5 "$work/o1.log" >&2
    fi
    "${ob[@]}" -oncekv "127.0.0.1:$a" -redis "127.0.0.1:$bport" -clients $((clients / 2)) -json "$work/o2a.json" >"$work/o2a.log" 2>&1 &
    oa=$!
    okb=0
    "${ob[@]}" -oncekv "127.0.0.1:$b" -redis "127.0.0.1:$bport" -clients $((clients / 2)) -json "$work/o2b.json" >"$work/o2b.log" 2>&1 || okb=1
    if wait $oa && [ $okb = 0 ]; then
      once_row "$up, 2 proxies" "$work/o2a.json" "$work/o2b.json" >>"$work/table.md"
    else
      echo "| $up, 2 proxies | oncebench failed | | |" >>"$work/table.md"; tail -n 5 "$work/o2a.log" "$work/o2b.log" >&2
    fi
  done
fi

cat "$work/table.md"
[ -n "$out" ] && cp "$work/table.md" "$out"
exit 0
