#!/usr/bin/env bash
# End-to-end benchmark: echo_server --timers wheel vs --timers asio under the same echo_client load,
# then an idle run; writes docs/e2e_bench.json and prints the tables. Arguments go to e2e_bench.py
# (e.g. --connections 5000 --seconds 20).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh" "$root/build"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
python3 "$root/bench/e2e/e2e_bench.py" "$@" | tee /dev/stderr | python3 "$root/bench/put_section.py" e2e
