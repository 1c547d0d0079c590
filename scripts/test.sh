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
# As many suites at once as cores; an end-to-end suite, which mostly waits on real timers, runs its
# classes side by side (test/e2e/side_by_side.py); the suites that judge wall-clock time at scale run
# alone (RUN_SERIAL), the package tests one at a time (RESOURCE_LOCK compiler).
(cd "$root/build" && ctest --output-on-failure -j "$(nproc)" --timeout 900)
