#!/usr/bin/env bash
# Instructions per operation for every system and operation at N live timers (default 1,000,000),
# plus the harness's own loop (op `loop`, subtracted in the table), counted by callgrind (the VMs here
# have no hardware counters; callgrind's counts do not depend on machine load). Writes
# docs/instructions.json — the figures bench_instructions_check (the test command) holds the timer
# core to — and the "instructions" section of docs/benchmarks.md. Takes a few minutes: set-up runs
# under valgrind too, uninstrumented.
#   bash bench/run_instructions.sh [N] [K]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-1000000}
k=${2:-100000}
bin=$root/build/bench/instructions
[[ -x $bin ]] || { bash "$root/scripts/install-deps.sh"; bash "$root/scripts/build.sh" "$root/build"; }
cmake --build "$root/build" --target instructions
python3 "$root/bench/instructions.py" record "$bin" "$root/docs/instructions.json" "$n" "$k"
/usr/bin/python3 "$root/bench/report.py" --instructions "$root/docs/instructions.json" | tee /dev/stderr | python3 "$root/bench/put_section.py" instructions
