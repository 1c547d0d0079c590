#!/usr/bin/env bash
# The README's test command: installs what is needed, builds (build/) and runs every suite with ctest
# — unit, property, driver, connection, teardown, package, end-to-end, fault injection, soak — in the
# normal build. CI (.ci/run) runs this command, then the same suites under the sanitizers
# (scripts/sanitize.sh) and the fuzz smoke (scripts/fuzz.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/install-deps.sh"
echo "== normal build =="
bash "$root/scripts/build.sh" "$root/build"
# Twice as many tests as cores: most of the suites' time is waiting on real timers (idle deadlines,
# heartbeats, goodbyes); the suites that compute run alone (RUN_SERIAL) or one at a time (the package
# tests' RESOURCE_LOCK), and an end-to-end suite runs its classes side by side (test/e2e/side_by_side.py).
(cd "$root/build" && ctest --output-on-failure -j "$((2 * $(nproc)))" --timeout 900)
