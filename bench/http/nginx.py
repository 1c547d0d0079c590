#!/usr/bin/env python3
"""nginx.py — examples/http_server beside Debian's nginx for HTTP/1.1 keep-alive, the same clients for both.

Both servers get the same policy: keep-alive timeout 10 s (nginx keepalive_timeout, http_server
--keepalive-timeout), request head within 5 s (client_header_timeout, --header-timeout), one
worker / one thread, no access log, a 6-byte answer to GET / (nginx `return 200`). Per server and
round (a fresh process each, the servers alternated, medians reported):
 - bytes per idle kept-alive connection: N clients (Python, one process) each send one GET, read the
   answer and stay silent; the serving process's RSS after minus before, per connection (nginx: its
   worker's; user space only, the kernel's socket memory being the same for both);
 - keep-alive close lateness, as the clients see it: the end of the stream minus (the answer's
   arrival + 10 s): never negative (an answer arrives after it was sent), small;
 - requests per second and CPU per request: `wrk -t1 -c100 -d5s` on one core against the server on
   the other; the serving process's user + system CPU over the run, per request;
 - CPU per request for clients that pause between requests (a browser between clicks, a poller):
   N kept-alive clients each sending its next request a fixed pause after its last answer, for
   10 s (200 clients pausing 50 ms, 2,000 pausing 1 s); the serving process's CPU per request;
 - slowloris: a head sent one byte per 0.5 s; when the server gives up and what it answers (408 or a
   silent close).
Writes docs/http_nginx.json and the "http_nginx" section of docs/benchmarks.md.

  bash bench/http/nginx.sh [--connections N] [--rounds R]"""
import argparse
import os
import re
import selectors
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from processes import (ROOT, build_id, cpu_seconds, free_port, median_at,  # noqa: E402
                       package_version, raise_nofile, rss_bytes, run_rounds, write_result)

BUILD = os.environ.get("HEARTWHEEL_BUILD", os.path.join(ROOT, "build"))
KEEPALIVE_S, HEADER_S = 10, 5
# Clients that pause between requests (count, pause in ms), each run for THINK_S seconds.
THINK, THINK_S = ((200, 50), (2000, 1000)), 10
REQUEST = b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n"


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def start(server, workdir):
    """The process, the pid that serves (nginx: its worker), the port."""
    port = free_port()
    if server == "heartwheel":
        cmd = [os.path.join(BUILD, "examples", "http_server"), "--listen", f"127.0.0.1:{port}",
               "--keepalive-timeout", str(KEEPALIVE_S * 1000), "--header-timeout", str(HEADER_S * 1000),
               "--drain-window", "0"]
    else:
        for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            os.makedirs(os.path.join(workdir, d), exist_ok=True)
        conf = os.path.join(workdir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""worker_processes 1;
worker_rlimit_nofile 20000;
daemon off;
pid {workdir}/nginx.pid;
error_log {workdir}/error.log crit;
events {{ worker_connections 20000; }}
http {{
  access_log off;
  keepalive_timeout {KEEPALIVE_S}s;
  client_header_timeout {HEADER_S}s;
  client_body_temp_path {workdir}/body;
  proxy_temp_path {workdir}/proxy;
  fastcgi_temp_path {workdir}/fastcgi;
  uwsgi_temp_path {workdir}/uwsgi;
  scgi_temp_path {workdir}/scgi;
  server {{
    listen 127.0.0.1:{port};
    location / {{ return 200 "hello\\n"; }}
  }}
}}
""")
        cmd = ["/usr/sbin/nginx", "-p", workdir, "-c", conf]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=raise_nofile)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            serving = proc.pid if server == "heartwheel" else (children(proc.pid) or [None])[0]
            if serving:
                return proc, serving, port
        except OSError:
            pass
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"{server} did not listen: {proc.stderr.read()!r}")


def answered(s):
    got = b""
    while not got.endswith(b"hello\n"):
        chunk = s.recv(4096)
        if not chunk:
            raise RuntimeError(f"closed before the answer: {got!r}")
        got += chunk
    return got


def idle_phase(port, pid, n):
    time.sleep(0.3)
    before = rss_bytes(pid)
    socks, arrived = [], []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(REQUEST)
        answered(s)
        arrived.append(time.monotonic())
        socks.append(s)
    time.sleep(0.5)
    per_connection = (rss_bytes(pid) - before) / n
    sel = selectors.DefaultSelector()
    for i, s in enumerate(socks):
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, i)
    closed = {}
    deadline = time.monotonic() + KEEPALIVE_S + 20
    while len(closed) < n and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=1):
            try:
                data = key.fileobj.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                closed[key.data] = time.monotonic()
                sel.unregister(key.fileobj)
    sel.close()
    for s in socks:
        s.close()
    late = sorted((closed[i] - arrived[i] - KEEPALIVE_S) * 1000 for i in closed)
    return per_connection, late, len(closed)


def wrk_phase(port, pid):
    cpu0 = cpu_seconds(pid)
    out = subprocess.run(["wrk", "-t1", "-c100", "-d5s", f"http://127.0.0.1:{port}/"], capture_output=True, text=True,
                         timeout=60).stdout
    cpu = cpu_seconds(pid) - cpu0
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    rps = float(re.search(r"Requests/sec:\s*([\d.]+)", out).group(1))
    return rps, cpu * 1e6 / max(requests, 1)


def think_phase(port, pid, n, pause_s, seconds):
    """n kept-alive clients, each sending its next request `pause_s` after its last answer (a browser
    between clicks, a poller): the serving process's CPU per request over `seconds`, the connections
    made and answered once before it starts (their making is not counted). Every request must be
    answered on the connection it was sent on."""
    import heapq
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(REQUEST)
        answered(s)
        s.setblocking(False)
        socks.append(s)
    sel = selectors.DefaultSelector()
    for i, s in enumerate(socks):
        sel.register(s, selectors.EVENT_READ, i)
    t0 = time.monotonic() + 0.2
    due = [(t0 + pause_s * i / n, i) for i in range(n)]  # staggered over one pause
    heapq.heapify(due)
    got = [b""] * n
    waiting = set()
    answers, end = 0, t0 + seconds
    cpu0 = None
    while True:
        now = time.monotonic()
        if cpu0 is None and now >= t0:
            cpu0 = cpu_seconds(pid)
        if now >= end and not waiting:
            break
        if now >= end + 10:
            raise RuntimeError(f"{len(waiting)} requests unanswered 10 s after the run")
        while due and due[0][0] <= now and now < end:
            _, i = heapq.heappop(due)
            socks[i].send(REQUEST)
            waiting.add(i)
        timeout = max(0.0, min(due[0][0] if due and now < end else now + 0.05, now + 0.05) - now)
        for key, _ in sel.select(timeout=timeout):
            i = key.data
            try:
                chunk = key.fileobj.recv(4096)
            except BlockingIOError:
                continue
            if not chunk:
                raise RuntimeError("a kept-alive connection closed during the think-time run")
            got[i] += chunk
            if got[i].endswith(b"hello\n"):
                got[i] = b""
                waiting.discard(i)
                answers += 1
                heapq.heappush(due, (time.monotonic() + pause_s, i))
    cpu = cpu_seconds(pid) - cpu0
    sel.close()
    for s in socks:
        s.close()
    return cpu * 1e6 / max(answers, 1), answers


def slowloris_phase(port):
    """A head trickled a byte per 0.5 s: how long until the server answers or closes (whichever is
    first, seen within 10 ms), and what it answered."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.setblocking(False)
    start = time.monotonic()
    head = b"GET / HTTP/1.1\r\nHost: bench\r\nX-Slow: " + b"a" * 100
    got, gave_up = b"", None
    sel = selectors.DefaultSelector()
    sel.register(s, selectors.EVENT_READ)
    for byte in head:
        try:
            s.send(bytes([byte]))
        except OSError:
            break
        next_byte = time.monotonic() + 0.5
        while gave_up is None and time.monotonic() < next_byte:
            if sel.select(timeout=0.01):
                try:
                    chunk = s.recv(4096)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                gave_up = time.monotonic() - start
                got += chunk
        if gave_up is not None:
            break
    sel.close()
    s.close()
    status = got.split(b"\r\n", 1)[0].decode(errors="replace") if got else "closed silently"
    return gave_up if gave_up is not None else float("nan"), status


def round_of(server, n, workdir):
    proc, pid, port = start(server, workdir)
    try:
        per_connection, late, closed = idle_phase(port, pid, n)
        rps, cpu_us = wrk_phase(port, pid)
        think = {}
        for clients, pause_ms in THINK:
            cpu_think, answers = think_phase(port, pid, clients, pause_ms / 1000, THINK_S)
            think[f"{clients}x{pause_ms}ms"] = {"cpu_us_per_request": round(cpu_think, 2), "requests": answers}
        loris_s, loris_status = slowloris_phase(port)
        return {"server": server, "connections": n, "closed": closed,
                "idle_bytes_per_connection": round(per_connection, 1),
                "close_late_ms": {"min": round(late[0], 1), "median": round(statistics.median(late), 1),
                                  "p99": round(late[int(len(late) * 0.99) - 1], 1), "max": round(late[-1], 1)}
                if late else None,
                "requests_per_s": round(rps), "cpu_us_per_request": round(cpu_us, 2), "think": think,
                "slowloris_closed_after_s": round(loris_s, 2), "slowloris_answer": loris_status}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def report(result):
    rows = {s: [r for r in result["rounds"] if r["server"] == s] for s in ("heartwheel", "nginx")}

    med = median_at
    hw, ng = rows["heartwheel"], rows["nginx"]
    ratio = lambda a, b: f"{a / b:.2f}×" if b else "—"
    n = result["connections"]
    lines = [
        f"{n:,} kept-alive HTTP/1.1 connections (Python clients in one process, one GET each, then silent), "
        f"keep-alive timeout {KEEPALIVE_S} s and request head within {HEADER_S} s on both, one worker / one thread; "
        f"wrk -t1 -c100 -d5s for the rate; medians of {result['rounds_each']} alternated rounds "
        f"(`bash bench/http/nginx.sh`, raw runs in docs/http_nginx.json). Build: {result['build']}; nginx {result['nginx']}.",
        "",
        "| | http_server (heartwheel) | nginx | heartwheel / nginx |",
        "|---|---:|---:|---:|",
        f"| user-space bytes per idle kept-alive connection | {med(hw, 'idle_bytes_per_connection'):,.0f} | "
        f"{med(ng, 'idle_bytes_per_connection'):,.0f} | {ratio(med(hw, 'idle_bytes_per_connection'), med(ng, 'idle_bytes_per_connection'))} |",
        f"| requests per second (wrk, 100 connections) | {med(hw, 'requests_per_s'):,.0f} | {med(ng, 'requests_per_s'):,.0f} | "
        f"{ratio(med(hw, 'requests_per_s'), med(ng, 'requests_per_s'))} |",
        f"| server CPU per request (µs) | {med(hw, 'cpu_us_per_request'):.2f} | {med(ng, 'cpu_us_per_request'):.2f} | "
        f"{ratio(med(hw, 'cpu_us_per_request'), med(ng, 'cpu_us_per_request'))} |",
    ]
    for clients, pause_ms in THINK:
        key = f"{clients}x{pause_ms}ms"
        a, b = med(hw, "think", key, "cpu_us_per_request"), med(ng, "think", key, "cpu_us_per_request")
        lines.append(f"| server CPU per request (µs), {clients:,} clients each pausing {pause_ms:,} ms between requests | "
                     f"{a:.2f} | {b:.2f} | {ratio(a, b)} |")
    for q in ("median", "p99", "max", "min"):
        lines.append(f"| keep-alive close late by, {q} (ms past {KEEPALIVE_S} s) | {med(hw, 'close_late_ms', q):.1f} | "
                     f"{med(ng, 'close_late_ms', q):.1f} | |")
    lines.append(f"| slowloris (a head trickled a byte per 0.5 s): answered or closed after (s; {HEADER_S} s allowed) | {med(hw, 'slowloris_closed_after_s'):.2f} | "
                 f"{med(ng, 'slowloris_closed_after_s'):.2f} | |")
    lines.append(f"| slowloris: what it was answered | {hw[0]['slowloris_answer'] if hw else ''} | "
                 f"{ng[0]['slowloris_answer'] if ng else ''} | |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--connections", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "http_nginx.json"))
    a = ap.parse_args()
    raise_nofile()
    version, build = package_version("nginx-light"), build_id()
    rounds = run_rounds(("heartwheel", "nginx"), a.rounds, "heartwheel-nginx-bench-",
                        lambda server, workdir: round_of(server, a.connections, workdir))
    write_result({"connections": a.connections, "rounds_each": a.rounds, "build": build, "nginx": version,
                  "keepalive_s": KEEPALIVE_S, "header_s": HEADER_S, "rounds": rounds}, a.out, report)

if __name__ == "__main__":
    main()
