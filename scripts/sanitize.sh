#!/usr/bin/env bash
# The sanitizer builds CI runs after the test command: every suite again under AddressSanitizer +
# UndefinedBehaviorSanitizer (build-address/) and under ThreadSanitizer (build-thread/). The package and
# benchmark checks do not apply (a consumer would need the same flags); everything else runs,
# end-to-end tests included. -g1 for the reports' line tables; ASan+UBSan at -Og, TSan at -O1 (-Og
# compiles the ASan+UBSan build ~30% faster than -O1 — UBSan's checks are most of its compile time —
# and its suites ran as fast: 210 s either way, 2026-11-28; TSan compiles as fast at either level).
# The Boost.Asio repeats of the driver and connection suites are not built (the normal build runs them).
# The suites labelled `threads` (the thread-pool model's repeats) run under TSan only: under ASan they
# would run the same code as e2e_echo and soak_short a second time. The ones labelled `unit` and
# `property` (plain data structures and policies on a manual clock, one thread, no I/O) run under ASan
# only: with one thread there is nothing for TSan to find. The one labelled `scale` (the stall
# of four servers with 1,000 TLS peers: a timing scenario) runs in neither, nor does the one labelled
# `browser` (headless Chromium against ws_chat_server: e2e_ws_chat runs the same server code).
# Expects the dependencies scripts/test.sh installs. HEARTWHEEL_SANITIZE_ONLY=address or =thread runs
# one of the two.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)
for san in address,undefined thread; do
  [[ -n ${HEARTWHEEL_SANITIZE_ONLY:-} && ${san%%,*} != "$HEARTWHEEL_SANITIZE_ONLY" ]] && continue
  dir="$root/build-${san%%,*}"
  opt=-O1 skip='package|scale|browser|unit|property'
  [[ $san == address,undefined ]] && opt=-Og skip='package|scale|threads|browser'
  echo "== $san sanitizer build =="
  flags=(-DHEARTWHEEL_SANITIZE="$san" -DHEARTWHEEL_BUILD_BENCH=OFF -DHEARTWHEEL_TEST_BOOST_REPEATS=OFF
         -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt -g1 -DNDEBUG")
  HEARTWHEEL_CONFIGURE_ONLY=1 bash "$root/scripts/build.sh" "$dir" "${flags[@]}"
  # Only the executables something here runs: a suite's target has its test's name, so the suites
  # skipped above are not compiled either (each costs a minute or more under a sanitizer).
  skipped=$(cd "$dir" && ctest -N -L "$skip" | sed -n 's/^ *Test *#[0-9]*: *//p')
  targets=$(ninja -C "$dir" -t targets all | sed -n 's|^\(.*/\)\{0,1\}\([^/:]*\): CXX_EXECUTABLE_LINKER.*|\2|p' |
            grep -vxF -f <(printf '%s\n' $skipped) || true)
  HEARTWHEEL_BUILD_TARGETS="$(echo $targets)" bash "$root/scripts/build.sh" "$dir" "${flags[@]}"
  (cd "$dir" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
     ctest --output-on-failure -j "$jobs" --timeout 900 -LE "$skip")
done
