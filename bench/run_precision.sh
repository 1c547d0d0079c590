#!/usr/bin/env bash
# Fire lateness of 100,000 timers on a real io_context: heartwheel at 1 ms and 10 ms ticks and one
# asio::steady_timer per timer, interleaved, three rounds (medians), with the run-queue wait of each
# run. Writes docs/precision.json and the "precision" section of docs/benchmarks.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/bench/precision
[[ -x $bin ]] || { bash "$root/scripts/install-deps.sh"; bash "$root/scripts/build.sh" "$root/build"; }
"$bin" "${1:-100000}" "${2:-3}" > "$root/docs/precision.json"
python3 - "$root/docs/precision.json" <<'PY' | tee /dev/stderr | python3 "$root/bench/put_section.py" precision
import json, sys
rows = json.load(open(sys.argv[1]))
print(f"{rows[0]['timers']:,} timers, deadlines spread over 0.5–3 s, one io_context thread; the systems run "
      f"interleaved, {rows[0]['rounds']} rounds, medians shown. Lateness is against the exact deadline, so a wheel's "
      "floor is up to one tick (deadlines round up to a tick). Run-queue wait: how long the process was runnable "
      "but had no CPU during a run (/proc/self/schedstat) — the machine's noise, not the timers'.\n")
print("| system | fired | early | late p50 ms | late p99 ms | late max ms | p99 per round (run-queue wait ms) | CPU s | driver wake-ups/s | steady_timer re-arms/s |")
print("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|")
for r in rows:
    wheel = r["system"].startswith("heartwheel")
    w = f"{r['wakeups_per_s']:.0f}" if wheel else "—"
    a = f"{r['rearms_per_s']:.0f}" if wheel else "—"
    per = ", ".join(f"{x['p99']:.3f} ({x['runq_wait_ms']:.0f})" for x in r["p99_by_round"])
    print(f"| {r['system']} | {r['fired']:,} | {r['early']} | {r['late_ms']['p50']:.3f} | {r['late_ms']['p99']:.3f} | "
          f"{r['late_ms']['max']:.3f} | {per} | {r['cpu_seconds']:.2f} | {w} | {a} |")
PY
