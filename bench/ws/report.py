"""report.py — medians of bench/ws_idle's runs per mode, as a table in docs/benchmarks.md (section
"ws_idle", between its markers) and the raw runs in a JSON file."""
import json
import statistics
import subprocess
import sys
import os

runs = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
json.dump(runs, open(sys.argv[2], "w"), indent=1)
keys = [("bytes_per_idle_connection", "bytes per idle connection (server RSS)", "{:.0f}"),
        ("cpu_us_per_ping", "server CPU per ping round, µs", "{:.2f}"),
        ("wakeups_per_s", "server wake-ups per second (voluntary switches)", "{:.1f}"),
        ("death_p50_ms", "death lateness p50, ms (as the peer sees it)", "{:.2f}"),
        ("death_p99_ms", "death lateness p99, ms", "{:.2f}"),
        ("death_max_ms", "death lateness max, ms", "{:.2f}"),
        ("death_min_ms", "death lateness min, ms (negative: early)", "{:.2f}"),
        ("early", "closed early (of all)", "{:.0f}")]
med = {m: {k: statistics.median(r[k] for r in runs if r["mode"] == m) for k, _, _ in keys}
       for m in ("heartwheel", "beast")}
n = runs[0]["connections"]
rounds = sum(1 for r in runs if r["mode"] == "heartwheel")
lines = [f"{n:,} idle WebSocket connections (Beast clients in another process answering every ping), a ping "
         f"after 1 s of silence and death 1 s later, one server thread; medians of {rounds} alternated rounds "
         f"(`bash bench/ws/run.sh`, raw runs in docs/ws_idle.json).", "",
         "| | heartwheel `ws::ws_connection` | Beast `stream_base::timeout` | ratio |", "|---|---:|---:|---:|"]
for k, label, fmt in keys:
    h, b = med["heartwheel"][k], med["beast"][k]
    ratio = f"{h / b:.2f}×" if b else "—"
    lines.append(f"| {label} | {fmt.format(h)} | {fmt.format(b)} | {ratio} |")
subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "..", "put_section.py"), "ws_idle"],
               input="\n".join(lines) + "\n", text=True, check=True)
print("\n".join(lines))
