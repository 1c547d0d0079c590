#!/usr/bin/env bash
# The two threading models side by side: echo_server --threads N (an io_context per thread) and
# --io-threads N (one io_context on N threads, a strand and a wheel per shard), N = 1 and 2, each with
# --timers wheel and the per-socket-timer baseline --timers asio, under the same echo_client load;
# writes docs/threading_bench.json and the "threading" section of docs/benchmarks.md. Arguments go to
# threading_bench.py (e.g. --connections 1000 --seconds 5 --rounds 1). Then the pool designs
# (bench/threading_designs.cpp) at 1, 2 and 4 threads: the "threading_designs" section.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh" "$root/build"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
python3 "$root/bench/e2e/threading_bench.py" "$@" | tee /dev/stderr | python3 "$root/bench/put_section.py" threading
# The designs for sharing wheels on a pool, side by side at 1, 2 and 4 threads (bench/threading_designs.cpp).
for t in 1 2 4; do
  "$root/build/bench/threading_designs" --threads "$t" --rounds 5 --json "$root/docs/threading_designs_$t.json"
done | tee /dev/stderr | python3 "$root/bench/put_section.py" threading_designs
