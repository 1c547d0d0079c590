#!/usr/bin/env bash
# heartwheel against Netty, Go and Node: installs the peers' toolchains and heartwheel's
# dependencies, builds, checks every server's behaviour (test_peers.py), measures.
#   bash bench/peers/run.sh [peers_bench.py flags]        (e.g. --sizes 1000 --rounds 1 --idle 2000)
#     load, idle, tls, death: docs/peers_bench.json and the "peers" section of docs/benchmarks.md
#   bash bench/peers/run.sh storm [storm_bench.py flags]  (e.g. --connections 2000 --servers heartwheel,go)
#     the connect storm: docs/storm_bench.json, docs/storm.png and the "storm" section
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bash "$root/scripts/install-deps.sh"
bash "$root/bench/peers/install.sh"
bash "$root/scripts/build.sh" "$root/build"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
if [ "${1:-}" = storm ]; then
  shift
  python3 "$root/bench/peers/test_peers.py" >&2 # builds the peers and checks each
  python3 "$root/bench/peers/storm_bench.py" "$@" | tee /dev/stderr | python3 "$root/bench/put_section.py" storm
else
  python3 "$root/bench/peers/peers_bench.py" "$@" | tee /dev/stderr | python3 "$root/bench/put_section.py" peers
fi
# The README's Performance list follows the records this run rewrote.
python3 "$root/bench/readme_summary.py"
