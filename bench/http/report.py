"""report.py — medians of bench/http_idle's runs per mode, as a table in docs/benchmarks.md (section
"http_idle", between its markers) and the raw runs in a JSON file: report.py RUNS JSON."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from side_by_side import report  # noqa: E402

report("http_idle", sys.argv[1], sys.argv[2],
       [("bytes_per_idle_connection", "bytes per idle kept-alive connection (server RSS)", "{:.0f}"),
        ("cpu_us_per_request", "server CPU per request (accept, parse, answer, arm the wait), µs", "{:.2f}"),
        ("close_p50_ms", "keep-alive close lateness p50, ms (as the peer sees it)", "{:.2f}"),
        ("close_p99_ms", "keep-alive close lateness p99, ms", "{:.2f}"),
        ("close_max_ms", "keep-alive close lateness max, ms", "{:.2f}"),
        ("close_min_ms", "keep-alive close lateness min, ms (negative: early)", "{:.2f}")],
       lambda n, rounds: f"{n:,} kept-alive HTTP/1.1 connections (plain Asio clients in another process, one GET "
                         f"each, then silent), keep-alive timeout 2 s, one server thread; medians of {rounds} "
                         f"alternated rounds (`bash bench/http/run.sh`, raw runs in docs/http_idle.json).",
       ("heartwheel `http::http_connection`", "Beast `tcp_stream::expires_after`"))
