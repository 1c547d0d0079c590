"""report.py — medians of bench/ws_idle's runs per mode, as a table in docs/benchmarks.md (section
"ws_idle", between its markers) and the raw runs in a JSON file: report.py RUNS JSON."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from side_by_side import report  # noqa: E402

report("ws_idle", sys.argv[1], sys.argv[2],
       [("bytes_per_idle_connection", "bytes per idle connection (server RSS)", "{:.0f}"),
        ("heap_bytes_per_idle_connection", "of which the heap in use (malloc's count, chunk headers included)", "{:.0f}"),
        ("cpu_us_per_ping", "server CPU per ping round, µs", "{:.2f}"),
        ("wakeups_per_s", "server wake-ups per second (voluntary switches)", "{:.1f}"),
        ("death_p50_ms", "death lateness p50, ms (as the peer sees it)", "{:.2f}"),
        ("death_p99_ms", "death lateness p99, ms", "{:.2f}"),
        ("death_max_ms", "death lateness max, ms", "{:.2f}"),
        ("death_min_ms", "death lateness min, ms (negative: early)", "{:.2f}"),
        ("early", "closed early (of all)", "{:.0f}"),
        ("death_arrival_p50_ms", "death lateness p50, ms, by the close frame's arrival (the kernel's stamp; Beast's close is a FIN: -1)", "{:.2f}"),
        ("death_arrival_p99_ms", "death lateness p99, ms, by the close frame's arrival", "{:.2f}"),
        ("last_ping_late_p50_ms", "the last (unanswered) ping's arrival after the last pong + 1 s, p50, ms", "{:.2f}"),
        ("deadlines_span_ms", "the deaths' deadlines: from the first to the last, ms", "{:.1f}"),
        ("deadlines_most_in_1ms", "... the most falling due within one millisecond", "{:.0f}"),
        ("cpu_us_per_death", "server CPU per death, µs (its last, unanswered ping and its close)", "{:.2f}"),
        ("server_judged_mean_ms", "judged past its deadline, mean ms (the server's own count; Beast keeps none: -1)", "{:.2f}")],
       lambda n, rounds: f"{n:,} idle WebSocket connections (Beast clients in another process answering every "
                         f"ping), a ping after 1 s of silence and death 1 s later, one server thread; medians of "
                         f"{rounds} alternated rounds (`bash bench/ws/run.sh`, raw runs in docs/ws_idle.json).",
       ("heartwheel `ws::ws_connection`", "Beast `stream_base::timeout`"))
