"""threading_bench.py — the two threading models side by side: echo_server with an io_context per
thread (--threads N) and with one io_context run by N threads, a strand and a wheel per shard
(--io-threads N), at N = 1 and 2, each with the wheel (--timers wheel) and with the per-socket-timer
baseline (--timers asio: one steady_timer per connection per concern) — the same load for all.

Load: --connections connections (default 2,000) each sending a line every 100 ms, with a request
timeout; the server with reader and writer idle, heartbeats and the write timeout on. Configurations
run in alternated order, --rounds rounds (default 3); figures are medians. For each: the server's CPU
µs per response (user + system, /proc/PID/stat), its CPU as a share of one core, connections per core
at this rate (connections / that share), echo RTT p50 / p99 from the client, and the load generator's
own CPU share (it must not be the bottleneck). Writes JSON to --out and prints a Markdown table.
    python3 bench/e2e/threading_bench.py [--connections 2000] [--seconds 8] [--rounds 3]"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_bench import CLIENT, LIVENESS, ROOT, SERVER, TICKS, median, proc_figures, stop  # noqa: E402

CONFIGS = [(model, n, timers) for n in (1, 2) for model in ("threads", "pool") for timers in ("wheel", "asio")]


def child_cpu_s():
    """CPU seconds of this process's waited-for children (the load generator)."""
    t = os.times()
    return t.children_user + t.children_system


def run(model, n, timers, conns, seconds):
    flags = ["--io-threads" if model == "pool" else "--threads", str(n), "--timers", timers, *LIVENESS]
    server = subprocess.Popen([SERVER, "--listen", "127.0.0.1:0", "--drain-window", "0", *flags], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    if not line.startswith("listening on "):
        raise SystemExit(f"server did not start: {line!r} {server.stderr.read()}")
    port = int(line.strip().rsplit(":", 1)[1])
    try:
        before = proc_figures(server.pid)
        client_before = child_cpu_s()
        client = subprocess.run(
            [CLIENT, "--quiet", "--connect", f"127.0.0.1:{port}", "--connections", str(conns), "--send-interval", "100",
             "--request-timeout", "1000", "--duration", str(seconds * 1000), "--connect-stagger-us", "100"],
            capture_output=True, text=True, timeout=seconds + 120)
        client_cpu = child_cpu_s() - client_before
        after = proc_figures(server.pid)
    finally:
        stop(server)
    summary = json.loads(client.stdout)
    cpu = after["cpu_s"] - before["cpu_s"]
    share = cpu / seconds
    return {"model": model, "threads": n, "timers": timers, "cpu_s": round(cpu, 3),
            "cpu_us_per_response": round(cpu * 1e6 / max(1, summary["responses"]), 3),
            "core_share": round(share, 3), "connections_per_core": round(conns / share) if share else None,
            "rtt_p50_ms": summary["rtt_ms"]["p50"], "rtt_p99_ms": summary["rtt_ms"]["p99"],
            "responses": summary["responses"], "timeouts": summary["timeouts"],
            "client_core_share": round(client_cpu / seconds, 3)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connections", type=int, default=2000)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "threading_bench.json"))
    a = ap.parse_args()
    runs = {c: [] for c in CONFIGS}
    for r in range(a.rounds):
        k = (r * 3) % len(CONFIGS)
        for c in CONFIGS[k:] + CONFIGS[:k]:  # alternated: no configuration always first
            runs[c].append(run(*c, a.connections, a.seconds))
    with open(a.out, "w") as f:
        json.dump({"connections": a.connections, "seconds": a.seconds,
                   "runs": {"/".join(map(str, c)): v for c, v in runs.items()}}, f, indent=1)
    print(f"{a.connections:,} connections × 10 lines/s, {a.seconds} s per run, {a.rounds} rounds in alternated "
          "order, medians.\n")
    print("| threads | model | timers | CPU µs per response | server cores | connections per core | "
          "RTT p50 / p99 ms | timeouts | client cores |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for c in CONFIGS:
        rs = runs[c]
        m = {k: median([x[k] for x in rs]) for k in ("cpu_us_per_response", "core_share", "connections_per_core",
                                                       "rtt_p50_ms", "rtt_p99_ms", "client_core_share")}
        model = "io_context per thread" if c[0] == "threads" else "one io_context, strands"
        print(f"| {c[1]} | {model} | {c[2]} | {m['cpu_us_per_response']} | {m['core_share']} | "
              f"{m['connections_per_core']:,} | {m['rtt_p50_ms']} / {m['rtt_p99_ms']} | "
              f"{sum(x['timeouts'] for x in rs)} | {m['client_core_share']} |")


if __name__ == "__main__":
    main()
