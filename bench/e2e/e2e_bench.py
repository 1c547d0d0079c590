"""e2e_bench.py — what liveness costs a real server: echo_server with --timers wheel, with --timers asio
(one steady_timer per connection per concern) and with --timers none (no liveness at all: the floor),
under the same echo_client load.

Load runs: at 1,000 and at 10,000 connections, each sending a line every 100 ms (10 lines/s) with a
request timeout, the server with reader and writer idle, heartbeats and the write timeout on (none:
off). The three servers run in alternated order, three rounds; figures are medians. For each: CPU
seconds (user + system, /proc/PID/stat), CPU µs per response, peak RSS (VmHWM), voluntary context
switches, echo RTT p50 / p99 from the client — and the liveness overhead: CPU per response over the
floor's, in percent. Idle run: 10,000 silent connections with a long reader-idle timeout (no
heartbeats). Death run (wheel and asio; none detects nothing): 2,000 peers (bench/scale/peer_observer.py)
answer pings, then all stop answering (heartbeat 1 s, 3 misses: dead at the first unanswered PING +
3 s); lateness as the peers see it (kernel arrival times of the PING and the BYE), next to the
server's own figure (its Prometheus metrics: judgement minus deadline, mean and max, and how many it
judged early or more than a tick late). Writes JSON to --out and prints Markdown tables.
    python3 bench/e2e/e2e_bench.py [--sizes 1000,10000] [--seconds 10] [--rounds 3] [--idle-connections 10000]
                                   [--death 2000] [--death-rounds 2]"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BUILD = os.environ.get("HEARTWHEEL_BUILD", os.path.join(ROOT, "build"))
SERVER = os.path.join(BUILD, "examples", "echo_server")
OBSERVER = os.path.join(ROOT, "bench", "scale", "peer_observer.py")
sys.path.insert(0, os.path.join(ROOT, "bench", "scale"))
from scale_bench import scrape  # noqa: E402  (the server's metrics: samples by name)
CLIENT = os.path.join(BUILD, "examples", "echo_client")
TICKS = os.sysconf("SC_CLK_TCK")


def proc_figures(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime
    status = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            status[k] = v.split()[0] if v.split() else ""
    return {"cpu_s": cpu, "peak_rss_kib": int(status["VmHWM"]), "vol_ctx": int(status["voluntary_ctxt_switches"]),
            "threads": int(status["Threads"])}


def start_server(mode, flags):
    p = subprocess.Popen([SERVER, "--listen", "127.0.0.1:0", "--timers", mode, "--drain-window", "0", *flags],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if not line.startswith("listening on "):
        raise SystemExit(f"{mode} server did not start: {line!r} {p.stderr.read()}")
    return p, int(line.strip().rsplit(":", 1)[1])


def stop(p):
    p.terminate()
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


LIVENESS = ["--reader-idle", "10000", "--writer-idle", "10000", "--heartbeat-interval", "5000", "--heartbeat-timeout",
            "5000", "--write-timeout", "10000"]
MODES = ("none", "wheel", "asio")


def load_run(mode, conns, seconds):
    server, port = start_server(mode, LIVENESS if mode != "none" else [])
    try:
        before = proc_figures(server.pid)
        client = subprocess.run(
            [CLIENT, "--quiet", "--connect", f"127.0.0.1:{port}", "--connections", str(conns), "--send-interval", "100",
             "--request-timeout", "1000", "--duration", str(seconds * 1000), "--connect-stagger-us", "100"],
            capture_output=True, text=True, timeout=seconds + 120)
        after = proc_figures(server.pid)
    finally:
        stop(server)
    summary = json.loads(client.stdout)
    return {"mode": mode, "cpu_s": round(after["cpu_s"] - before["cpu_s"], 2), "peak_rss_kib": after["peak_rss_kib"],
            "vol_ctx": after["vol_ctx"] - before["vol_ctx"], "rtt_p50_ms": summary["rtt_ms"]["p50"],
            "rtt_p99_ms": summary["rtt_ms"]["p99"], "responses": summary["responses"], "timeouts": summary["timeouts"],
            "closed_by_server": summary["closed_by_server"],
            "cpu_us_per_response": round((after["cpu_s"] - before["cpu_s"]) * 1e6 / max(1, summary["responses"]), 3)}


def idle_run(mode, conns, seconds):
    server, port = start_server(mode, ["--reader-idle", "600000"] if mode != "none" else [])
    client = subprocess.Popen(
        [CLIENT, "--quiet", "--connect", f"127.0.0.1:{port}", "--connections", str(conns), "--send-interval", "0",
         "--duration", str((seconds + 30) * 1000), "--connect-stagger-us", "100"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(conns * 100e-6 + 3)  # all connected, accept bursts over
        before = proc_figures(server.pid)
        time.sleep(seconds)
        after = proc_figures(server.pid)
    finally:
        client.kill()
        client.wait()
        stop(server)
    return {"mode": mode, "connections": conns, "seconds": seconds,
            "cpu_s": round(after["cpu_s"] - before["cpu_s"], 3),
            "wakeups_per_s": round((after["vol_ctx"] - before["vol_ctx"]) / seconds, 2),
            "peak_rss_kib": after["peak_rss_kib"]}


DEATH = ["--reader-idle", "0", "--heartbeat-interval", "1000", "--heartbeat-misses", "3", "--heartbeat-timeout", "1000"]


def death_run(mode, peers):
    server, port = start_server(mode, [*DEATH, "--metrics", "127.0.0.1:0"])
    try:
        line = server.stdout.readline()
        if not line.startswith("metrics on "):
            raise SystemExit(f"{mode} server did not serve metrics: {line!r}")
        metrics_port = int(line.strip().rsplit(":", 1)[1])
        obs = subprocess.Popen([sys.executable, OBSERVER, str(port), str(peers), "1000", "--interval", "1000",
                                "--misses", "3"], stdout=subprocess.PIPE, text=True)
        if obs.stdout.readline().strip() != "ready":
            raise SystemExit(f"peer_observer did not connect to the {mode} server")
        time.sleep(5)  # pings answered: every connection has a round trip measured
        obs.send_signal(signal.SIGUSR1)
        seen = json.loads(obs.stdout.readline())
        obs.wait()
        m = scrape(metrics_port)
    finally:
        stop(server)
    deaths = m.get("heartwheel_heartbeat_death_lateness_seconds_count", 0)
    return {"mode": mode, "observed": seen["observed"], "closed": seen["closed"], "lateness_ms": seen["lateness_ms"],
            "server_deaths": int(deaths),
            "server_mean_ms": m.get("heartwheel_heartbeat_death_lateness_seconds_sum", 0) * 1000 / max(1, deaths),
            "server_max_ms": m.get("heartwheel_heartbeat_death_lateness_max_seconds", 0) * 1000,
            "server_early": int(m.get("heartwheel_heartbeat_deaths_judged_early_total", 0)),
            "server_late": int(m.get("heartwheel_heartbeat_deaths_judged_late_total", 0))}


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000", help="connection counts of the load runs")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--idle-connections", type=int, default=10000)
    ap.add_argument("--idle-seconds", type=int, default=10)
    ap.add_argument("--death", type=int, default=2000, help="peers in the death run (0: no death run)")
    ap.add_argument("--death-rounds", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "e2e_bench.json"))
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")]
    runs = {n: {m: [] for m in MODES} for n in sizes}
    for n in sizes:
        for r in range(a.rounds):
            order = MODES[r % len(MODES):] + MODES[:r % len(MODES)]  # alternated: no mode always first
            for m in order:
                runs[n][m].append(load_run(m, n, a.seconds))
    idle = {m: idle_run(m, a.idle_connections, a.idle_seconds) for m in MODES}
    detecting = ("wheel", "asio")
    death_runs = {m: [] for m in detecting}
    for r in range(a.death_rounds if a.death > 0 else 0):
        for m in detecting[r % 2:] + detecting[:r % 2]:
            death_runs[m].append(death_run(m, a.death))
    with open(a.out, "w") as f:  # the raw runs first: nothing measured is lost if the summary fails
        json.dump({"runs": {str(n): runs[n] for n in sizes}, "idle": idle, "death_runs": death_runs}, f, indent=1)
    death = {}
    for m, rs in death_runs.items():
        if not rs:
            continue
        v = sorted(x for r in rs for x in r["lateness_ms"])
        at = lambda q: v[min(len(v) - 1, int(q * len(v)))] if v else None  # noqa: E731
        death[m] = {"observed": sum(r["observed"] for r in rs), "closed": sum(r["closed"] for r in rs),
                    "peer_p50_ms": at(0.5), "peer_p99_ms": at(0.99), "peer_max_ms": v[-1] if v else None,
                    "peer_min_ms": v[0] if v else None, "peer_early": sum(x < 0 for x in v),
                    "server_mean_ms": round(sum(r["server_mean_ms"] * r["server_deaths"] for r in rs)
                                            / max(1, sum(r["server_deaths"] for r in rs)), 3),
                    "server_max_ms": round(max(r["server_max_ms"] for r in rs), 3),
                    "server_early": sum(r["server_early"] for r in rs), "server_late": sum(r["server_late"] for r in rs)}
    summary = {}
    for n in sizes:
        summary[n] = {}
        for m in MODES:
            rs = runs[n][m]
            summary[n][m] = {k: median([x[k] for x in rs]) for k in
                             ("cpu_s", "cpu_us_per_response", "peak_rss_kib", "vol_ctx", "rtt_p50_ms", "rtt_p99_ms",
                              "responses", "timeouts")}
            summary[n][m]["closed_by_server"] = [x["closed_by_server"] for x in rs]
        floor = summary[n]["none"]["cpu_us_per_response"]
        for m in MODES:
            summary[n][m]["overhead_pct"] = round((summary[n][m]["cpu_us_per_response"] / floor - 1) * 100, 1) if floor else None
            summary[n][m]["overhead_pct_by_round"] = [
                round((x["cpu_us_per_response"] / f["cpu_us_per_response"] - 1) * 100, 1) if f["cpu_us_per_response"] else None
                for x, f in zip(runs[n][m], runs[n]["none"])]
    result = {"runs": {str(n): runs[n] for n in sizes}, "summary": {str(n): summary[n] for n in sizes}, "idle": idle,
              "death_runs": death_runs, "death": death,
              "seconds": a.seconds, "rounds": a.rounds, "machine": f"{os.cpu_count()} cores",
              "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"Load: each connection sends a line every 100 ms (10 lines/s) for {a.seconds} s with a 1 s request timeout; "
          f"wheel and asio run reader/writer idle, heartbeats and the write timeout, none runs no liveness at all. "
          f"{a.rounds} rounds in alternated order, medians. Overhead = CPU per response over none's.\n")
    print("| connections | server | CPU s | CPU µs per response | **liveness overhead** | overhead by round | peak RSS MiB "
          "| voluntary ctx switches | RTT p50 ms | RTT p99 ms | responses | timeouts |")
    print("|---:|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        for m in MODES:
            r = summary[n][m]
            over = "floor" if m == "none" else f"**{r['overhead_pct']:+.1f} %**"
            by = "" if m == "none" else ", ".join(f"{x:+.1f}" for x in r["overhead_pct_by_round"])
            print(f"| {n:,} | {m} | {r['cpu_s']} | {r['cpu_us_per_response']} | {over} | {by} | "
                  f"{r['peak_rss_kib'] / 1024:.1f} | {r['vol_ctx']} | {r['rtt_p50_ms']} | {r['rtt_p99_ms']} | "
                  f"{r['responses']:,} | {r['timeouts']} |")
    print(f"\nIdle: {a.idle_connections:,} silent connections, reader-idle 600 s (none: no liveness), no heartbeats, "
          f"measured over {a.idle_seconds} s after they connected.\n")
    print("| server | CPU s | wake-ups per second | peak RSS MiB |")
    print("|---|---:|---:|---:|")
    for m in MODES:
        r = idle[m]
        print(f"| {m} | {r['cpu_s']} | {r['wakeups_per_s']} | {r['peak_rss_kib'] / 1024:.1f} |")
    if death:
        print(f"\nDeath: {a.death:,} peers answer pings, then all stop (heartbeat 1 s, 3 misses: dead at the first "
              f"unanswered PING + 3 s), {a.death_rounds} rounds pooled; lateness = the BYE's arrival minus that, "
              f"as the peers' kernel stamped both; the server's own: its judgement minus the deadline (metrics), "
              f"judged early (never, by design) and more than a tick late.\n")
        print("| server | peer p50 ms | peer p99 ms | peer max ms | peer min ms | read early at the peer "
              "| server mean ms | server max ms | judged early | judged > 1 tick late | closed / observed |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for m, r in death.items():
            print(f"| {m} | {r['peer_p50_ms']:.2f} | {r['peer_p99_ms']:.2f} | {r['peer_max_ms']:.2f} | "
                  f"{r['peer_min_ms']:.2f} | {r['peer_early']} | {r['server_mean_ms']:.2f} | {r['server_max_ms']:.2f} | "
                  f"{r['server_early']} | {r['server_late']} | {r['closed']:,} / {r['observed']:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
