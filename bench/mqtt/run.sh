#!/usr/bin/env bash
# mqtt_server beside Debian's mosquitto broker (bench/mqtt/run.py): idle memory per subscribed
# connection, CPU per delivered message and the death lateness of silent devices, alternated rounds,
# medians; writes docs/mqtt_bench.json and docs/benchmarks.md's "mqtt" section.
# Usage: bash bench/mqtt/run.sh [--connections N] [--messages M] [--devices K] [--rounds R]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
export HEARTWHEEL_BUILD=${HEARTWHEEL_BUILD:-$root/build}
[[ -x $HEARTWHEEL_BUILD/examples/mqtt_server && -x /usr/sbin/mosquitto ]] || {
  bash "$root/scripts/install-deps.sh"
  bash "$root/scripts/build.sh" "$HEARTWHEEL_BUILD"
}
python3 "$root/bench/mqtt/run.py" "$@" | python3 "$root/bench/put_section.py" mqtt
