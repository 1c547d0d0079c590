#!/usr/bin/env bash
# Instructions per operation for every system and operation at N live timers (default 1,000,000),
# plus the harness's own loop (op `loop`, subtracted in the table), counted by callgrind (the VMs here have no hardware counters; callgrind's counts do not depend on
# machine load). Writes docs/instructions.json and a Markdown table, which goes
# into docs/benchmarks.md (section "instructions"). Takes a few minutes: set-up runs under valgrind too, uninstrumented.
#   bash bench/run_instructions.sh [N] [K]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-1000000}
k=${2:-100000}
bin=$root/build/bench/instructions
[[ -x $bin ]] || { bash "$root/scripts/install-deps.sh"; bash "$root/scripts/build.sh" "$root/build"; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
results=()
for sys in heartwheel asio libevent libevent-common libev libuv heap; do
  for op in loop arm cancel rearm touch expire expire_cascade; do
    [[ $op == touch && $sys != heartwheel ]] && continue
    [[ $op == expire_cascade && $sys != heartwheel && $sys != heap ]] && continue
    file=$out/$sys-$op.out
    ops=$(valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$file" "$bin" "$sys" "$op" "$n" "$k" \
          2>/dev/null | sed -n 's/^ops=//p')
    ir=$(sed -n 's/^totals: *//p' "$file" | awk '{print $1}')
    per=$(awk -v ir="$ir" -v ops="$ops" 'BEGIN { printf "%.1f", ir / ops }')
    echo "$sys $op: $per instructions/op ($ir / $ops)" >&2
    results+=("{\"system\":\"$sys\",\"op\":\"$op\",\"n\":$n,\"ops\":$ops,\"instructions\":$ir,\"per_op\":$per}")
  done
done
(IFS=,; echo "[${results[*]}]") > "$root/docs/instructions.json"
/usr/bin/python3 "$root/bench/report.py" --instructions "$root/docs/instructions.json" | tee /dev/stderr | python3 "$root/bench/put_section.py" instructions
