#!/usr/bin/env bash
# Every benchmark, one after the other (never two at once: they would disturb each other), each
# regenerating its section of docs/benchmarks.md: micro-benchmarks and chart, precision, instruction
# counts (callgrind), the end-to-end wheel-vs-asio server run and the threading models. About 20 minutes
# on 2 cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/bench/run_micro.sh"
bash "$root/bench/run_precision.sh"
bash "$root/bench/run_instructions.sh"
bash "$root/bench/e2e/run.sh"
bash "$root/bench/e2e/run_threading.sh"
