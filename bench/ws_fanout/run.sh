#!/usr/bin/env bash
# A WebSocket chat room under load beside a compile: heartwheel's ws_connection against the same room
# on Beast alone (bench/ws_fanout.cpp), alternated rounds, medians; writes docs/benchmarks.md's
# "ws_fanout" section and docs/ws_fanout.json. The compile (this benchmark's own source, -O2, in a
# loop) takes one of the machine's cores for the whole run, in both modes alike.
# Usage: bash bench/ws_fanout/run.sh [build dir] [clients] [rounds]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
n=${2:-200}
rounds=${3:-3}
out=$(mktemp)
# The compile loop in its own process group, so that the trap stops the compiler it is running too.
setsid bash -c "while true; do c++ -std=c++20 -O2 -DHEARTWHEEL_BOOST_ASIO -I'$root/net/include' \
  -I'$root/lib/include' -c '$root/bench/ws_fanout.cpp' -o /dev/null; done" &
compiler=$!
trap 'kill -- -$compiler 2>/dev/null || true' EXIT
sleep 2
for r in $(seq 1 "$rounds"); do
  for mode in heartwheel beast; do
    "$build/bench/ws_fanout" --mode "$mode" --clients "$n" --rate 5 --seconds 20 --threads 4 | tee -a "$out" || true
  done
done
python3 "$root/bench/ws_fanout/report.py" "$out" "$root/docs/ws_fanout.json"
