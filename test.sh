#!/usr/bin/env bash
# Runs every test of the project, installing what the tests need first.
# Usage: ./test.sh [go test flags…]
set -euo pipefail
cd "$(dirname "$0")"

need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need_apt+=(redis-tools)
command -v tmux >/dev/null 2>&1 || need_apt+=(tmux)
# Validates docker-compose.yml without a Docker engine (integration/docker_test.go).
command -v docker-compose >/dev/null 2>&1 || need_apt+=(docker-compose)
/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || need_apt+=(python3-redis)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== installing ${need_apt[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# The Debian package starts a redis-server on 6379 as a service; the tests
# start their own on free ports and do not need it.

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
echo "== go vet"
go vet ./...
echo "== go test -race"
go test -race -count=1 -timeout 15m "$@" ./...
# The race detector randomizes the scheduler's choices, which hides what
# these tests check: that the store's goroutines batch the work of the
# ones ready to run. They run once more without it.
echo "== go test (scheduling)"
go test -count=1 -run 'TestReadyWritersShareALogRound' "$@" ./store/badgerdb/
# Every benchmark runs once, so that one that no longer runs (fails,
# panics, hangs at once) shows here rather than when someone measures
# with it.
echo "== benchmarks, once each"
go test -count=1 -run '^$' -bench . -benchtime 1x -timeout 5m "$@" ./...
