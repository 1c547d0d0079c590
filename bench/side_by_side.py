"""side_by_side.py — what the side-by-side benchmarks' reports share (bench/ws/report.py,
bench/http/report.py): their runs (one JSON line per run, a "mode" each) kept raw in a JSON file,
the median of each figure per mode, and a table heartwheel | the other | ratio written into
docs/benchmarks.md between the section's markers (bench/put_section.py) and printed."""
import json
import os
import statistics
import subprocess
import sys


def report(section, runs_path, json_path, keys, heading, columns, modes=("heartwheel", "beast")):
    """keys: (JSON key, row label, format) per row; heading(n, rounds) -> the paragraph above the table;
    columns: the two column titles. A ratio is shown where both medians are positive."""
    runs = [json.loads(line) for line in open(runs_path) if line.startswith("{")]
    with open(json_path, "w") as f:
        json.dump(runs, f, indent=1)
    med = {m: {k: statistics.median(r[k] for r in runs if r["mode"] == m) for k, _, _ in keys} for m in modes}
    rounds = sum(1 for r in runs if r["mode"] == modes[0])
    lines = [heading(runs[0]["connections"], rounds), "",
             f"| | {columns[0]} | {columns[1]} | ratio |", "|---|---:|---:|---:|"]
    for k, label, fmt in keys:
        h, b = med[modes[0]][k], med[modes[1]][k]
        ratio = f"{h / b:.2f}×" if b > 0 and h > 0 else "—"
        lines.append(f"| {label} | {fmt.format(h)} | {fmt.format(b)} | {ratio} |")
    subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "put_section.py"), section],
                   input="\n".join(lines) + "\n", text=True, check=True)
    print("\n".join(lines))
