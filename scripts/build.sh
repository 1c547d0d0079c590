#!/usr/bin/env bash
# Configures and builds heartwheel into build/ (or $1), Release with line tables (-O2 -g1: backtraces
# and perf/callgrind keep files and lines; full -g costs the build about a third more for nothing the
# tests read), with Ninja. Later arguments override (scripts/sanitize.sh passes its own flags).
# HEARTWHEEL_BUILD_TARGETS (space-separated) builds only those targets (scripts/fuzz.sh: its fuzzers);
# HEARTWHEEL_CONFIGURE_ONLY=1 configures and builds nothing (scripts/sanitize.sh picks its targets then).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build}
shift || true
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DHEARTWHEEL_WERROR=ON \
  "$@" >/dev/null
[[ -n ${HEARTWHEEL_CONFIGURE_ONLY:-} ]] && exit 0
# shellcheck disable=SC2086 # the targets are words
cmake --build "$dir" -j "$(nproc)" ${HEARTWHEEL_BUILD_TARGETS:+--target $HEARTWHEEL_BUILD_TARGETS}
