#!/usr/bin/env bash
# Idle kept-alive HTTP/1.1 connections, heartwheel's http_connection against beast::tcp_stream's
# expires_after, side by side: alternated rounds, medians; writes docs/benchmarks.md's "http_idle"
# section and docs/http_idle.json. Usage: bash bench/http/run.sh [build dir] [connections] [rounds]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
n=${2:-10000}
rounds=${3:-5}
out=$(mktemp)
for r in $(seq 1 "$rounds"); do
  for mode in heartwheel beast; do
    "$build/bench/http_idle" --mode "$mode" --connections "$n" | tee -a "$out" || true
  done
done
python3 "$root/bench/http/report.py" "$out" "$root/docs/http_idle.json"
