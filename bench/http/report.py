"""report.py — medians of bench/http_idle's runs per mode, as a table in docs/benchmarks.md (section
"http_idle", between its markers) and the raw runs in a JSON file."""
import json
import os
import statistics
import subprocess
import sys

runs = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
json.dump(runs, open(sys.argv[2], "w"), indent=1)
keys = [("bytes_per_idle_connection", "bytes per idle kept-alive connection (server RSS)", "{:.0f}"),
        ("cpu_us_per_request", "server CPU per request (accept, parse, answer, arm the wait), µs", "{:.2f}"),
        ("close_p50_ms", "keep-alive close lateness p50, ms (as the peer sees it)", "{:.2f}"),
        ("close_p99_ms", "keep-alive close lateness p99, ms", "{:.2f}"),
        ("close_max_ms", "keep-alive close lateness max, ms", "{:.2f}"),
        ("close_min_ms", "keep-alive close lateness min, ms (negative: early)", "{:.2f}")]
med = {m: {k: statistics.median(r[k] for r in runs if r["mode"] == m) for k, _, _ in keys}
       for m in ("heartwheel", "beast")}
n = runs[0]["connections"]
rounds = sum(1 for r in runs if r["mode"] == "heartwheel")
lines = [f"{n:,} kept-alive HTTP/1.1 connections (plain Asio clients in another process, one GET each, then "
         f"silent), keep-alive timeout 2 s, one server thread; medians of {rounds} alternated rounds "
         f"(`bash bench/http/run.sh`, raw runs in docs/http_idle.json).", "",
         "| | heartwheel `http::http_connection` | Beast `tcp_stream::expires_after` | ratio |",
         "|---|---:|---:|---:|"]
for k, label, fmt in keys:
    h, b = med["heartwheel"][k], med["beast"][k]
    ratio = f"{h / b:.2f}×" if b > 0 and h > 0 else "—"
    lines.append(f"| {label} | {fmt.format(h)} | {fmt.format(b)} | {ratio} |")
subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "..", "put_section.py"), "http_idle"],
               input="\n".join(lines) + "\n", text=True, check=True)
print("\n".join(lines))
