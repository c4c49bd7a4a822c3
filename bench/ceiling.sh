#!/usr/bin/env bash
# Measures the ceiling of a Go server on this machine (issue 6): the
# deliberately minimal RESP server bench/ceiling (in-memory map, append-only
# log written once per batch, fsynced every second or, with -a always, before
# each batch's replies) against redis-server with appendonly yes and the same
# appendfsync, on the redis-benchmark cells -c 50 -n 200000 -r 100000,
# SET/GET/INCR, -P 1 and -P 16.
#
# bench/redis-benchmark.sh also runs bench/ceiling (goroutine mode), next to
# oncekv in every cell of BENCHMARKS.md, under both policies; this script
# runs it alone, in more variants (one epoll loop, GOMAXPROCS=1, and with
# -N net.Conn's reads and writes instead of raw system calls).
#
# Each round runs every server variant in turn (the order rotates from round
# to round), each on a fresh port and a fresh data directory. The table
# gives the median requests/s over the rounds (the mean of the middle two
# for an even count) and, in parentheses, the ratio to redis-server's median.
#
# Usage: bench/ceiling.sh [-r rounds] [-G] [-N] [-a everysec|always]
#   -r N  rounds (default 3)
#   -G    leave out the GOMAXPROCS=1 variants of the ceiling server
#   -N    add variants that read and write with net.Conn and os.File
#         (-io net) rather than raw system calls (internal/rawio)
#   -a P  appendfsync policy of every server (default everysec)
#
# Needs go, redis-server, redis-benchmark and redis-cli. Everything listens
# on 127.0.0.1 only. Run it on a quiet machine: about 45 s a round with the
# GOMAXPROCS=1 variants on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh

rounds=3
gmp1=1
netio=0
policy=everysec
while getopts "r:GNa:h" opt; do
  case $opt in
    r) rounds=$OPTARG ;;
    G) gmp1=0 ;;
    N) netio=1 ;;
    a) policy=$OPTARG ;;
    h) usage ;;
    *) exit 2 ;;
  esac
done
positive -r "$rounds"
[[ $policy == everysec || $policy == always ]] || { echo "-a: everysec or always, not $policy" >&2; exit 2; }
need go redis-server redis-benchmark redis-cli
go build -o "$work/ceiling" ./bench/ceiling

variants=(redis goroutine epoll)
((netio)) && variants+=(goroutine-net epoll-net)
((gmp1)) && variants+=(goroutine-gmp1 epoll-gmp1)
tests=(SET GET INCR)
pipes=(1 16)
bench_cmd="redis-benchmark -h 127.0.0.1 -p PORT -q -n 200000 -c 50 -r 100000 -P \$P -t set,get,incr   # P = 1, 16"

# server_cmd sets cmd to the command that starts variant $1 on port $2 with
# its data in directory $3.
server_cmd() {
  local v=$1 port=$2 dir=$3
  case $v in
    redis) cmd=(redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly yes --appendfsync "$policy" --dir "$dir" --daemonize no) ;;
    *-gmp1) cmd=(env GOMAXPROCS=1 "$work/ceiling" -addr "127.0.0.1:$port" -mode "${v%-gmp1}" -aof "$dir/ceiling.aof" -appendfsync "$policy") ;;
    *-net) cmd=("$work/ceiling" -addr "127.0.0.1:$port" -mode "${v%-net}" -io net -aof "$dir/ceiling.aof" -appendfsync "$policy") ;;
    *) cmd=("$work/ceiling" -addr "127.0.0.1:$port" -mode "$v" -aof "$dir/ceiling.aof" -appendfsync "$policy") ;;
  esac
}

echo "# bench/ceiling.sh -r $rounds$( ((gmp1)) || echo ' -G')$( ((netio)) && echo ' -N') -a $policy"
echo
echo "$(nproc) CPUs, $(go version | cut -d' ' -f3-), $(redis-server --version | cut -d' ' -f1-3)"
echo
echo "Commands (PORT and DIR are fresh for every run):"
echo
echo '```'
for v in "${variants[@]}"; do
  server_cmd "$v" PORT DIR
  printf '%-15s %s\n' "$v:" "$(printf '%q ' "${cmd[@]}" | sed "s|$work/ceiling|ceiling|; s/ $//")"
done
echo "$bench_cmd"
echo "ceiling = go build -o ceiling ./bench/ceiling"
echo '```'
echo


declare -A results # "variant TEST P" -> requests/s of each round, space separated
run=0
for ((round = 1; round <= rounds; round++)); do
  n=${#variants[@]}
  for ((k = 0; k < n; k++)); do
    v=${variants[(k + round - 1) % n]}
    run=$((run + 1))
    port=$(free_port)
    dir="$work/run$run"
    mkdir -p "$dir"
    server_cmd "$v" "$port" "$dir"
    start_server "$v" "$port" "$dir/server.log" "${cmd[@]}"
    for p in "${pipes[@]}"; do
      out=$(redis-benchmark -h 127.0.0.1 -p "$port" -q -n 200000 -c 50 -r 100000 -P "$p" -t set,get,incr 2>&1 | tr '\r' '\n')
      for t in "${tests[@]}"; do
        rps=$(awk -v t="$t:" '$1 == t && $3 == "requests" { r = $2 } END { print r }' <<<"$out")
        [[ -n $rps ]] || { echo "no $t result from redis-benchmark against $v:" >&2; echo "$out" >&2; exit 1; }
        results["$v $t $p"]+=" $rps"
      done
    done
    echo "round $round/$rounds: $v done" >&2
    stop_server
  done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

printf '| server |'
for t in "${tests[@]}"; do for p in "${pipes[@]}"; do printf ' %s P%s |' "$t" "$p"; done; done
printf '\n|---|'
for t in "${tests[@]}"; do for p in "${pipes[@]}"; do printf -- '---:|'; done; done
echo
for v in "${variants[@]}"; do
  case $v in
    redis) name="redis-server" ;;
    *-gmp1) name="ceiling ${v%-gmp1}, GOMAXPROCS=1" ;;
    *-net) name="ceiling ${v%-net}, net.Conn" ;;
    *) name="ceiling $v" ;;
  esac
  printf '| %s |' "$name"
  for t in "${tests[@]}"; do
    for p in "${pipes[@]}"; do
      m=$(median <<<"${results["$v $t $p"]}")
      r=$(median <<<"${results["redis $t $p"]}")
      printf ' %.0f (%.2fx) |' "$m" "$(awk -v a="$m" -v b="$r" 'BEGIN { print a / b }')"
    done
  done
  echo
done
echo
echo "requests/s, median of $rounds rounds; in parentheses: ratio to redis-server's median"
echo
echo "Each round's requests/s, round 1 first:"
echo
for v in "${variants[@]}"; do
  printf -- '- %s:' "$v"
  for t in "${tests[@]}"; do for p in "${pipes[@]}"; do printf ' %s P%s%s;' "$t" "$p" "${results["$v $t $p"]}"; done; done
  echo
done
