#!/usr/bin/env bash
# Builds the libFuzzer targets with clang, AddressSanitizer and UndefinedBehaviorSanitizer into
# build-fuzz/, replays each seed corpus (the library's in fuzz/corpus/<target>/, the echo product's in
# examples/echo/fuzz/corpus/<target>/), then fuzzes each target for
# $1 seconds (default 20; CI uses the default, run e.g. `bash scripts/fuzz.sh 3600` for a long run).
# New inputs go to build-fuzz/corpus/<target>/ (the seeds in the repo are not touched); a crash is
# saved to build-fuzz/artifacts/ and fails the script. Set HEARTWHEEL_FUZZ_TARGETS to run a subset.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-20}
dir=$root/build-fuzz
targets=${HEARTWHEEL_FUZZ_TARGETS:-line_framer ws_frames config wheel proxy tls control_line echo_config}

# Only the fuzzers are built (not the examples and their Beast servers, which nothing here runs).
fuzzers=$(printf '%s_fuzz ' $targets)
CXX=clang++ HEARTWHEEL_BUILD_TARGETS="$fuzzers" bash "$root/scripts/build.sh" "$dir" -DCMAKE_CXX_COMPILER=clang++ -DHEARTWHEEL_BUILD_FUZZ=ON \
  -DHEARTWHEEL_BUILD_TESTS=OFF -DHEARTWHEEL_BUILD_BENCH=OFF -DHEARTWHEEL_BOOST_ASIO=OFF -DHEARTWHEEL_SANITIZE=address,undefined \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" # libFuzzer's advice; line tables for the reports

mkdir -p "$dir/artifacts"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for t in $targets; do
  # The library's targets are in fuzz/, the echo product's in examples/echo/fuzz/.
  if [[ -d $root/fuzz/corpus/$t ]]; then bin=$dir/fuzz/${t}_fuzz seeds=$root/fuzz/corpus/$t
  else bin=$dir/examples/${t}_fuzz seeds=$root/examples/echo/fuzz/corpus/$t; fi
  work=$dir/corpus/$t
  mkdir -p "$work"
  echo "== fuzz $t: replay $(ls "$seeds" | wc -l) seeds, then ${seconds}s =="
  "$bin" -runs=0 "$seeds" 2>&1 | tail -1
  "$bin" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/${t}-" "$work" "$seeds" 2>"$dir/$t.log" \
    || { tail -40 "$dir/$t.log"; echo "fuzz $t FAILED; input saved under $dir/artifacts/" >&2; exit 1; }
  grep -E "stat::number_of_executed_units|stat::new_units_added" "$dir/$t.log" | tr '\n' ' '
  echo
done
echo "fuzz: all targets clean"
