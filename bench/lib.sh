# Shared by the bench/*.sh scripts that start servers themselves: source
# it after `set -euo pipefail`. It makes $work, a scratch directory, and
# removes it, with the server in $pid if any, when the script exits.

# usage prints the script's header comment (its usage) and exits.
usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
  exit 0
}

# positive FLAG VALUE exits the script unless VALUE is a positive whole
# number.
positive() {
  [[ $2 =~ ^[1-9][0-9]*$ ]] || { echo "$1 wants a positive number" >&2; exit 2; }
}

need() {
  local b
  for b in "$@"; do
    command -v "$b" >/dev/null || { echo "$b not found" >&2; exit 1; }
  done
}

# compared_servers BINARY... sets servers to the oncekv binaries given
# (default: this checkout, built into $work), each checked, and redis,
# last unless given in another place.
compared_servers() {
  servers=("$@")
  if ((${#servers[@]} == 0)); then
    need go
    go build -o "$work/oncekv" .
    servers=("$work/oncekv")
  fi
  [[ " ${servers[*]} " == *" redis "* ]] || servers+=(redis)
  local b
  for b in "${servers[@]}"; do
    [[ $b == redis || -x $b ]] || { echo "$b is not an executable" >&2; exit 2; }
  done
}

work=$(mktemp -d)
pid=
cleanup() {
  if [[ -n $pid ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_port prints a port from next_port up (set it before the first call)
# that nothing on 127.0.0.1 accepts on.
next_port=17000
free_port() {
  while (exec 3<>"/dev/tcp/127.0.0.1/$next_port") 2>/dev/null; do next_port=$((next_port + 1)); done
  echo "$next_port"
  next_port=$((next_port + 1))
}

# start_server NAME PORT LOG CMD... starts CMD in the background, its output
# in LOG, sets pid, and waits until it answers PING on PORT; it exits the
# script if the server dies or does not answer within 10 s.
start_server() {
  local name=$1 port=$2 log=$3 i
  shift 3
  "$@" >"$log" 2>&1 &
  pid=$!
  for ((i = 0; i < 100; i++)); do
    [[ $(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null) == PONG ]] && return 0
    kill -0 "$pid" 2>/dev/null || { echo "$name did not start:" >&2; cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  echo "$name did not answer PING on port $port" >&2
  exit 1
}

# stop_server stops the server in pid.
stop_server() {
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=
}
