#!/usr/bin/env bash
# Runs the micro-benchmarks for every system in one run and regenerates docs/micro_timers.json, the
# tables inside docs/benchmarks.md (between the markers) and the chart docs/micro_timers.png.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh" "$root/build"
rm -f "$root/docs/micro_memory.json"
"$root/build/bench/micro_timers" --benchmark_out="$root/docs/micro_timers.json" --benchmark_out_format=json "$@"
tables=$(/usr/bin/python3 "$root/bench/report.py" "$root/docs/micro_timers.json" --chart "$root/docs/micro_timers.png")
TABLES="$tables" /usr/bin/python3 - "$root/docs/benchmarks.md" <<'PY'
import os, re, sys
path = sys.argv[1]
text = open(path).read()
begin, end = "<!-- micro tables begin -->", "<!-- micro tables end -->"
text = re.sub(re.escape(begin) + ".*?" + re.escape(end), begin + "\n" + os.environ["TABLES"] + "\n" + end, text, flags=re.S)
open(path, "w").write(text)
PY
echo "updated docs/benchmarks.md and docs/micro_timers.png"
# The README's Performance list follows the records this run rewrote.
python3 "$root/bench/readme_summary.py"
