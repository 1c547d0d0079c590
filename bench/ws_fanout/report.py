"""report.py — medians of bench/ws_fanout's runs per mode, as a table in docs/benchmarks.md (section
"ws_fanout", between its markers) and the raw runs in a JSON file: report.py RUNS JSON."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from side_by_side import report  # noqa: E402

report("ws_fanout", sys.argv[1], sys.argv[2],
       [("peak_rss_mib", "server peak RSS above its start, MiB", "{:.1f}"),
        ("end_rss_mib", "server RSS once delivered, MiB", "{:.1f}"),
        ("lost", "messages not delivered within 60 s of the end (of those sent × the other members)", "{:.0f}"),
        ("closed", "healthy clients closed", "{:.0f}"),
        ("latency_p50_ms", "delivery latency p50, ms", "{:.0f}"),
        ("latency_p99_ms", "delivery latency p99, ms", "{:.0f}"),
        ("cpu_s", "server CPU, s", "{:.1f}")],
       lambda n, rounds: f"A chat room of {n} Beast WebSocket clients (another process), each sending 5 messages of 96 "
                         f"bytes a second for 20 s and reading all the others' (~{n * (n - 1) * 5:,} deliveries a second), "
                         f"the server on one io_context run by 4 threads, beside a compile taking a core; medians of "
                         f"{rounds} alternated rounds (`bash bench/ws_fanout/run.sh`, raw runs in docs/ws_fanout.json).",
       ("heartwheel `ws::ws_connection`", "Beast alone (its chat example's shape)"))
