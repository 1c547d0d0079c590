#!/usr/bin/env bash
# The README's test command: installs what is needed, then builds and runs every test with ctest three
# times — a normal build, an AddressSanitizer + UndefinedBehaviorSanitizer build and a
# ThreadSanitizer build — then replays the fuzz corpora and fuzzes each libFuzzer target briefly.
# HEARTWHEEL_SANITIZERS=0 skips the sanitizer builds, HEARTWHEEL_FUZZ=0 the fuzz smoke.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/install-deps.sh"
jobs=$(nproc)

echo "== normal build =="
bash "$root/scripts/build.sh" "$root/build"
(cd "$root/build" && ctest --output-on-failure -j "$jobs" --timeout 900)

if [[ ${HEARTWHEEL_SANITIZERS:-1} != 0 ]]; then
  # The package and benchmark checks do not apply to sanitizer builds (a consumer would need the same
  # flags); everything else runs, end-to-end tests included. -O1 -g1 (the sanitizers' own advice: fast
  # enough, and line tables for their reports): the ASan build takes ~4 min instead of ~7 at -O2 -g.
  for san in address,undefined thread; do
    dir="$root/build-${san%%,*}"
    echo "== $san sanitizer build =="
    bash "$root/scripts/build.sh" "$dir" -DHEARTWHEEL_SANITIZE="$san" -DHEARTWHEEL_BUILD_BENCH=OFF \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
    (cd "$dir" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
       TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
       ctest --output-on-failure -j "$jobs" --timeout 900 -LE package)
  done
fi

if [[ ${HEARTWHEEL_FUZZ:-1} != 0 ]]; then
  echo "== fuzz smoke (libFuzzer, ${HEARTWHEEL_FUZZ_SECONDS:-20}s per target) =="
  bash "$root/scripts/fuzz.sh" "${HEARTWHEEL_FUZZ_SECONDS:-20}"
fi
