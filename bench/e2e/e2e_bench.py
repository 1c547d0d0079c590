"""e2e_bench.py — echo_server with --timers wheel against --timers asio under the same echo_client load.

Load run: N connections (default 5,000), each sending a line every 50 ms with a request timeout, the
server with reader and writer idle, heartbeats and the write timeout on, for a fixed duration. Idle
run: 10,000 silent connections (they answer pings only if pinged; there are no heartbeats) with a
long reader-idle timeout. For each server: CPU seconds (user + system, /proc/PID/stat), peak RSS
(VmHWM), voluntary context switches (each one a sleep and a wake-up), echo RTT p50 / p99 from the
client, and the wheel / asio ratios. The servers run one after the other, in the same script run.
Writes JSON to --out and prints a Markdown table.
    python3 bench/e2e/e2e_bench.py [--connections 5000] [--seconds 20] [--idle-connections 10000]"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BUILD = os.environ.get("HEARTWHEEL_BUILD", os.path.join(ROOT, "build"))
SERVER = os.path.join(BUILD, "examples", "echo_server")
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
    p = subprocess.Popen([SERVER, "--listen", "127.0.0.1:0", "--timers", mode, *flags],
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


def load_run(mode, conns, seconds):
    server, port = start_server(mode, ["--reader-idle", "10000", "--writer-idle", "10000", "--heartbeat-interval",
                                       "5000", "--heartbeat-timeout", "5000", "--write-timeout", "10000"])
    try:
        before = proc_figures(server.pid)
        client = subprocess.run(
            [CLIENT, "--quiet", "--connect", f"127.0.0.1:{port}", "--connections", str(conns), "--send-interval", "50",
             "--request-timeout", "1000", "--duration", str(seconds * 1000), "--connect-stagger-us", "200"],
            capture_output=True, text=True, timeout=seconds + 120)
        after = proc_figures(server.pid)
    finally:
        stop(server)
    summary = json.loads(client.stdout)
    return {"mode": mode, "cpu_s": round(after["cpu_s"] - before["cpu_s"], 2), "peak_rss_kib": after["peak_rss_kib"],
            "vol_ctx": after["vol_ctx"] - before["vol_ctx"], "rtt_p50_ms": summary["rtt_ms"]["p50"],
            "rtt_p99_ms": summary["rtt_ms"]["p99"], "responses": summary["responses"], "timeouts": summary["timeouts"],
            "closed_by_server": summary["closed_by_server"]}


def idle_run(mode, conns, seconds):
    server, port = start_server(mode, ["--reader-idle", "600000"])
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


def ratio(a, b):
    return f"{a / b:.2f}×" if b else "n/a"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connections", type=int, default=5000)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--idle-connections", type=int, default=10000)
    ap.add_argument("--idle-seconds", type=int, default=10)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "e2e_bench.json"))
    a = ap.parse_args()
    load = {m: load_run(m, a.connections, a.seconds) for m in ("wheel", "asio")}
    idle = {m: idle_run(m, a.idle_connections, a.idle_seconds) for m in ("wheel", "asio")}
    result = {"load": load, "idle": idle, "connections": a.connections, "seconds": a.seconds,
              "machine": f"{os.cpu_count()} cores", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    w, s = load["wheel"], load["asio"]
    print(f"Load: {a.connections} connections, a line every 50 ms each, {a.seconds} s, request timeout, reader/writer "
          f"idle, heartbeats and write timeout on.\n")
    # CPU per echoed line matters when the machine saturates and the two servers echo different amounts.
    for r in (w, s):
        r["cpu_us_per_response"] = round(r["cpu_s"] * 1e6 / max(1, r["responses"]), 2)
    print("| server | CPU s | CPU µs per response | peak RSS MiB | voluntary ctx switches | RTT p50 ms | RTT p99 ms "
          "| responses | timeouts |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in (w, s):
        print(f"| {r['mode']} | {r['cpu_s']} | {r['cpu_us_per_response']} | {r['peak_rss_kib'] / 1024:.1f} | "
              f"{r['vol_ctx']} | {r['rtt_p50_ms']} | {r['rtt_p99_ms']} | {r['responses']} | {r['timeouts']} |")
    print(f"| **wheel / asio** | **{ratio(w['cpu_s'], s['cpu_s'])}** | **{ratio(w['cpu_us_per_response'], s['cpu_us_per_response'])}** "
          f"| {ratio(w['peak_rss_kib'], s['peak_rss_kib'])} | {ratio(w['vol_ctx'], s['vol_ctx'])} | "
          f"{ratio(w['rtt_p50_ms'], s['rtt_p50_ms'])} | {ratio(w['rtt_p99_ms'], s['rtt_p99_ms'])} | "
          f"{ratio(w['responses'], s['responses'])} | |")
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"\nIdle: {a.idle_connections} silent connections, reader-idle 600 s, no heartbeats, measured over "
          f"{a.idle_seconds} s after they connected.\n")
    print("| server | CPU s | wake-ups per second | peak RSS MiB |")
    print("|---|---:|---:|---:|")
    for m in ("wheel", "asio"):
        r = idle[m]
        print(f"| {m} | {r['cpu_s']} | {r['wakeups_per_s']} | {r['peak_rss_kib'] / 1024:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
