#!/usr/bin/env bash
# A fleet's deploy at full size: HAProxy in front of N echo servers over TLS, every server restarted one
# by one while the clients send requests — heartwheel (--handover, a drain window) beside the same
# fleet of Go servers restarted the common way. Installs what it needs (HAProxy with heartwheel's
# dependencies; Go with the peers' toolchains), builds, measures; writes docs/fleet_bench.json,
# docs/fleet.png and the "fleet" section of docs/benchmarks.md; then the WebSocket chat's fleet the
# same way (docs/chat_fleet.json, docs/chat_fleet.png, the "chat_fleet" section).
#   bash bench/fleet/run.sh [fleet_bench.py flags]   (e.g. --clients 2000 --servers 2)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bash "$root/scripts/install-deps.sh"
bash "$root/bench/peers/install.sh"
bash "$root/scripts/build.sh" "$root/build"
ulimit -n "$(ulimit -Hn)"
python3 "$root/bench/fleet/fleet_bench.py" "$@" | tee /dev/stderr | python3 "$root/bench/put_section.py" fleet
# The WebSocket chat's fleet (heartwheel only: the Go peer has no chat).
python3 "$root/bench/fleet/chat_fleet.py" | tee /dev/stderr | python3 "$root/bench/put_section.py" chat_fleet
