#!/usr/bin/env bash
# End-to-end benchmark: echo_server --timers wheel, asio and none (no liveness: the floor) under the same
# echo_client load at 1,000 and 10,000 connections, three alternated rounds, then an idle run and a death
# run (wheel and asio, lateness as 2,000 peers see it beside the server's own); writes
# docs/e2e_bench.json and prints the tables. Arguments go to e2e_bench.py
# (e.g. --sizes 1000 --seconds 5 --rounds 1).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh" "$root/build"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
python3 "$root/bench/e2e/e2e_bench.py" "$@" | tee /dev/stderr | python3 "$root/bench/put_section.py" e2e
# The README's Performance list follows the records this run rewrote.
python3 "$root/bench/readme_summary.py"
