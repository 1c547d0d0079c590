#!/usr/bin/env python3
"""run.py — mqtt_server beside Debian's mosquitto broker, the same clients against both.

Per broker and round (a fresh process each time, the brokers alternated, medians reported):
 - idle memory: N clients connect (keep-alive 60 s) and subscribe to one topic; the broker's RSS
   after minus before, per connection (user space only: the kernel's socket memory is the same for
   both and is not counted);
 - CPU per delivered message: a publisher sends M QoS 0 messages of 64 bytes to that topic, every
   subscriber reads all M; the broker's user + system CPU over it, divided by the N x M deliveries;
 - death lateness: K more devices connect with a keep-alive of 2 s and go silent; each must be
   closed 3 s after its CONNECT at the earliest (1.5 x the keep-alive: the standard's rule);
   lateness is when the client reads the end of the stream minus (when it sent its CONNECT + 3 s):
   never negative, and small. (2 s, not 1: mosquitto computes 1.5 x K in whole seconds, which makes
   a 1 s keep-alive 1 s.)
Both brokers run one thread. mosquitto runs without persistence or logging, anonymous, on 127.0.0.1.
Writes docs/mqtt_bench.json and the "mqtt" section of docs/benchmarks.md.

  bash bench/mqtt/run.sh [--connections N] [--messages M] [--devices K] [--rounds R]"""
import argparse
import os
import selectors
import socket
import statistics
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from processes import (ROOT, build_id, cpu_seconds, free_port, median_at,  # noqa: E402
                       package_version, raise_nofile, rss_bytes, run_rounds, write_result)

BUILD = os.environ.get("HEARTWHEEL_BUILD", os.path.join(ROOT, "build"))
TOPIC = b"bench/feed"
PAYLOAD = b"p" * 64


def text(b):
    return struct.pack(">H", len(b)) + b


def packet(first, body):
    n, out = len(body), bytearray([first])
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out) + body


def connect_packet(client_id, keep_alive):
    return packet(0x10, text(b"MQTT") + bytes([4, 0x02]) + struct.pack(">H", keep_alive) + text(client_id))


SUBSCRIBE = packet(0x82, struct.pack(">H", 1) + text(TOPIC) + b"\x00")
PUBLISH = packet(0x30, text(TOPIC) + PAYLOAD)
DEVICE_KEEP_ALIVE = 2  # seconds: closed 1.5 x that after the CONNECT
CONNACK, SUBACK = 4, 5


def start(broker, workdir):
    port = free_port()
    if broker == "heartwheel":
        cmd = [os.path.join(BUILD, "examples", "mqtt_server"), "--listen", f"127.0.0.1:{port}", "--drain-window", "0"]
    else:
        conf = os.path.join(workdir, "mosquitto.conf")
        with open(conf, "w") as f:
            f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\nlog_dest none\n"
                    "max_connections -1\n")
        cmd = ["/usr/sbin/mosquitto", "-c", conf]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=raise_nofile)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{broker} did not listen: {proc.stderr.read()!r}")


def read_until(socks, want, limit=120):
    """Reads every socket until it has `want` bytes (or closes); the bytes each got."""
    sel = selectors.DefaultSelector()
    got = {s: 0 for s in socks}
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    left = len(socks)
    deadline = time.monotonic() + limit
    while left and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=1):
            s = key.fileobj
            try:
                data = s.recv(65536)
            except BlockingIOError:
                continue
            got[s] += len(data)
            if not data or got[s] >= want:
                sel.unregister(s)
                left -= 1
    sel.close()
    return got


def open_clients(port, n, prefix, keep_alive, subscribe):
    socks, sent = [], []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        sent.append(time.monotonic())
        s.sendall(connect_packet(f"{prefix}{i}".encode(), keep_alive) + (SUBSCRIBE if subscribe else b""))
        socks.append(s)
    return socks, sent


def round_of(broker, n, m, k, workdir):
    proc, port = start(broker, workdir)
    try:
        time.sleep(0.3)
        before = rss_bytes(proc.pid)
        clients, _ = open_clients(port, n, "sub", 60, True)
        got = read_until(clients, CONNACK + SUBACK)
        ready = sum(1 for v in got.values() if v >= CONNACK + SUBACK)
        time.sleep(1.0)
        idle = (rss_bytes(proc.pid) - before) / n
        # Fan-out: M messages to N subscribers.
        pub, _ = open_clients(port, 1, "pub", 60, False)
        read_until(pub, CONNACK)
        pub[0].setblocking(True)
        cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
        pub[0].sendall(PUBLISH * m)
        got = read_until(clients, len(PUBLISH) * m)
        wall = time.monotonic() - t0
        cpu = cpu_seconds(proc.pid) - cpu0
        delivered = sum(v // len(PUBLISH) for v in got.values())
        # Silent devices with a keep-alive of 1 s.
        devices, sent = open_clients(port, k, "dev", DEVICE_KEEP_ALIVE, False)
        sel = selectors.DefaultSelector()
        for i, s in enumerate(devices):
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ, i)
        closed_at = {}
        deadline = time.monotonic() + 30
        while len(closed_at) < k and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=1):
                try:
                    data = key.fileobj.recv(4096)
                except BlockingIOError:
                    continue
                except OSError:  # a reset is a close too
                    data = b""
                if not data:
                    closed_at[key.data] = time.monotonic()
                    sel.unregister(key.fileobj)
        sel.close()
        lateness = sorted((closed_at[i] - sent[i] - 1.5 * DEVICE_KEEP_ALIVE) * 1000 for i in closed_at)
        for s in clients + pub + devices:
            s.close()
        return {
            "broker": broker, "connections": n, "ready": ready, "idle_bytes_per_connection": round(idle, 1),
            "messages": m, "delivered": delivered, "fanout_wall_s": round(wall, 3),
            "cpu_us_per_delivery": round(cpu * 1e6 / max(delivered, 1), 3),
            "devices": k, "devices_closed": len(lateness),
            "lateness_ms": {"min": round(lateness[0], 1), "median": round(statistics.median(lateness), 1),
                            "p99": round(lateness[int(len(lateness) * 0.99) - 1], 1), "max": round(lateness[-1], 1)}
            if lateness else None,
            "early": sum(1 for x in lateness if x < 0),
        }
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def report(result):
    rows = {b: [r for r in result["rounds"] if r["broker"] == b] for b in ("heartwheel", "mosquitto")}
    hw, mq = rows["heartwheel"], rows["mosquitto"]
    f = median_at
    def ratio(a, b):
        return f"{a / b:.2f}×" if a is not None and b else "—"
    n, m, k = result["connections"], result["messages"], result["devices"]
    lines = [
        f"{n:,} subscribed MQTT 3.1.1 connections (keep-alive 60 s), {m} QoS 0 messages of 64 bytes fanned out to "
        f"all of them, then {k:,} silent devices with a keep-alive of {DEVICE_KEEP_ALIVE} s; one broker thread each; medians of "
        f"{result['rounds_each']} alternated rounds (`bash bench/mqtt/run.sh`, raw runs in docs/mqtt_bench.json). "
        f"Build: {result['build']}; mosquitto {result['mosquitto']}.",
        "",
        "| | mqtt_server (heartwheel) | mosquitto | heartwheel / mosquitto |",
        "|---|---:|---:|---:|",
        f"| user-space bytes per idle subscribed connection | {f(hw, 'idle_bytes_per_connection'):,.0f} | "
        f"{f(mq, 'idle_bytes_per_connection'):,.0f} | {ratio(f(hw, 'idle_bytes_per_connection'), f(mq, 'idle_bytes_per_connection'))} |",
        f"| CPU per delivered message (µs) | {f(hw, 'cpu_us_per_delivery'):.3f} | {f(mq, 'cpu_us_per_delivery'):.3f} | "
        f"{ratio(f(hw, 'cpu_us_per_delivery'), f(mq, 'cpu_us_per_delivery'))} |",
        f"| fan-out wall time (s: from the first PUBLISH until every reader has all {m}; {n * m:,} deliveries) | {f(hw, 'fanout_wall_s'):.2f} | "
        f"{f(mq, 'fanout_wall_s'):.2f} | |",
    ]
    for q in ("median", "p99", "max"):
        lines.append(f"| silent device closed late by, {q} (ms past 1.5 × keep-alive) | {f(hw, 'lateness_ms', q):.1f} | "
                     f"{f(mq, 'lateness_ms', q):.1f} | |")
    lines.append(f"| devices closed before 1.5 × keep-alive (all rounds) | {sum(r['early'] for r in hw)} | "
                 f"{sum(r['early'] for r in mq)} | |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--connections", type=int, default=10000)
    ap.add_argument("--messages", type=int, default=20)
    ap.add_argument("--devices", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "mqtt_bench.json"))
    a = ap.parse_args()
    raise_nofile()
    version, build = package_version("mosquitto"), build_id()
    rounds = run_rounds(("heartwheel", "mosquitto"), a.rounds, "heartwheel-mqtt-bench-",
                        lambda broker, workdir: round_of(broker, a.connections, a.messages, a.devices, workdir))
    write_result({"connections": a.connections, "messages": a.messages, "devices": a.devices, "rounds_each": a.rounds,
                  "build": build, "mosquitto": version, "rounds": rounds}, a.out, report)

if __name__ == "__main__":
    main()
