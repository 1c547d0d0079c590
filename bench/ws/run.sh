#!/usr/bin/env bash
# Idle WebSocket connections with keep-alive pings, heartwheel's ws_connection against Beast's own
# stream_base::timeout, side by side: alternated rounds, medians; writes docs/benchmarks.md's "ws_idle"
# section and docs/ws_idle.json. Usage: bash bench/ws/run.sh [build dir] [connections] [rounds]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
n=${2:-10000}
rounds=${3:-3}
out=$(mktemp)
for r in $(seq 1 "$rounds"); do
  for mode in heartwheel beast; do
    "$build/bench/ws_idle" --mode "$mode" --connections "$n" --window-ms 10000 | tee -a "$out" || true
  done
done
python3 "$root/bench/ws/report.py" "$out" "$root/docs/ws_idle.json"
