#!/usr/bin/env bash
# heartwheel against Netty, Go and Node (bench/peers/peers_bench.py): installs the peers' toolchains
# and heartwheel's dependencies, builds, checks every server's behaviour (test_peers.py), measures,
# writes docs/peers_bench.json and the "peers" section of docs/benchmarks.md. Arguments go to
# peers_bench.py (e.g. --sizes 1000 --rounds 1 --idle 2000 --death 500 --death-rounds 1).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bash "$root/scripts/install-deps.sh"
bash "$root/bench/peers/install.sh"
bash "$root/scripts/build.sh" "$root/build"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
python3 "$root/bench/peers/peers_bench.py" "$@" | tee /dev/stderr | python3 "$root/bench/put_section.py" peers
