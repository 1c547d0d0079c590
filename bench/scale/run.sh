#!/usr/bin/env bash
# The scale benchmark, one command on a fresh machine: installs the dependencies, builds, prints the
# per-part footprint of an idle connection (bench/scale/footprint.cpp), what OpenSSL keeps per TLS
# connection by part (bench/scale/openssl_parts.cpp) and an idle connection's server RSS
# over TCP and TLS side by side (bench/scale/tls_footprint.py), then runs 100,000 connections
# (bench/scale/scale_bench.py; arguments go to it, e.g. --connections 20000 --seconds 10, or
# --connections 1000000 for the million); each rewrites its section of
# docs/benchmarks.md (the last also docs/scale_bench.json, or docs/c1m_bench.json for a million, and
# the plot of memory against connections). Run as root: a million needs kernel settings raised for
# the run (scale_bench.py sets them and puts them back).
# Bounded: a few minutes (a million: about five). Exits non-zero when a healthy connection was closed, a death was judged
# before its deadline, or the deaths fell outside their window (judgements later than one tick are
# reported, not failed: see docs/benchmarks.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh" "$root/build"
ulimit -n "$(ulimit -Hn)"
"$root/build/bench/footprint" 9000 | tee /dev/stderr | python3 "$root/bench/put_section.py" footprint
"$root/build/bench/openssl_parts" 1000 | tee /dev/stderr | python3 "$root/bench/put_section.py" openssl_parts
python3 "$root/bench/scale/tls_footprint.py" | tee /dev/stderr | python3 "$root/bench/put_section.py" tls
# A million connections (--connections 1000000 or more) has a section of its own (docs/c1m_bench.json).
section=scale
prev=
for arg in "$@"; do
  if [ "$prev" = "--connections" ] && [ "$arg" -ge 1000000 ]; then section=c1m; fi
  prev=$arg
done
python3 "$root/bench/scale/scale_bench.py" "$@" | tee /dev/stderr | python3 "$root/bench/put_section.py" "$section"
# The README's Performance list follows the records this run rewrote.
python3 "$root/bench/readme_summary.py"
