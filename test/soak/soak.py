"""soak.py — load and soak: many concurrent connections with churn against echo_server with every
policy on, then checks that nothing was lost.

Load: echo_client holds most connections (a line per second each, request timeouts, answering pings,
reconnecting when the server's --max-age retires them), and this script churns the rest: it keeps a
pool of connections open, replacing some every few milliseconds; each sends a line, checks the
echo, answers PINGs and sends another line every few seconds (a well-behaved peer), and leaves in one
of three ways (FIN, reset, or half a line then FIN).
Checks: the server never crashes; every close has a reason the load explains (peer-closed, io-error
for the resets, max-age) and none another (idle, heartbeat, write timeout, line too long); the
client saw no request timeout and no close other than max-age; every churned echo came back; once
all connections are gone the wheels hold only the server's own timers again (the count at start),
and RSS is back near its start. Prints one JSON line of figures; exits 1 if a check fails.

    python3 test/soak/soak.py                       # 10,000 connections, 60 s (bounded: ~2 min)
    python3 test/soak/soak.py --connections 2000 --seconds 10   # the CI version
"""
import argparse
import errno
import json
import os
import random
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from harness import CLIENT, SERVER, parse_stats  # noqa: E402

EXPECTED = {"peer-closed", "io-error", "max-age", "shutdown"}


def rss_kib(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def stats_tuple(line):
    f = parse_stats(line)
    return int(f["connections"]), int(f["wheel"]), f["closes"]


class ServerProc:
    def __init__(self, binary, flags):
        self.proc = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--stats-interval", "200", "--drain-window", "0", *flags],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = self.proc.stdout.readline()
        if not first.startswith("listening on "):
            raise SystemExit(f"server did not start: {first!r} {self.proc.stderr.read()}")
        self.port = int(first.strip().rsplit(":", 1)[1])
        self.latest = None
        self.final = None
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cond:
                if line.startswith("stats "):
                    self.latest = stats_tuple(line)
                elif line.startswith("final "):
                    self.final = stats_tuple(line)
                self.cond.notify_all()

    def wait_stats(self, pred, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.latest is None or not pred(self.latest):
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return None
                self.cond.wait(min(left, 0.5))
            return self.latest


class Churner:
    """Keeps `pool` short-lived connections open, replacing `rate` per second."""

    def __init__(self, port, pool, rate):
        self.port, self.pool, self.rate = port, pool, rate
        self.sel = selectors.DefaultSelector()
        self.conns = {}
        self.stats = {"opened": 0, "echoed": 0, "fin": 0, "reset": 0, "partial": 0, "lost": 0, "connect_errors": 0,
                      "bye": {}}
        self.rng = random.Random(7)

    def open_one(self):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", self.port))
        except BlockingIOError:
            pass
        except OSError:
            self.stats["connect_errors"] += 1
            s.close()
            return
        token = f"churn {self.stats['opened']} {'x' * self.rng.randrange(1, 200)}"
        self.conns[s] = {"token": token, "sent": False, "buf": b"", "done": False, "last_send": time.monotonic()}
        self.sel.register(s, selectors.EVENT_WRITE | selectors.EVENT_READ)
        self.stats["opened"] += 1

    def finish(self, s, how):
        state = self.conns.pop(s)
        self.sel.unregister(s)
        if not state["done"]:
            self.stats["lost"] += 1
        try:
            if how == "reset":
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            elif how == "partial":
                s.send(b"half a line without its newline")
        except OSError:
            pass
        s.close()
        self.stats[how] += 1

    def on_event(self, s, mask):
        st = self.conns[s]
        if mask & selectors.EVENT_WRITE and not st["sent"]:
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self.stats["connect_errors"] += 1
                st["done"] = True
                return self.finish(s, "fin")
            s.send((st["token"] + "\n").encode())
            st["sent"] = True
            self.sel.modify(s, selectors.EVENT_READ)
        if mask & selectors.EVENT_READ:
            try:
                chunk = s.recv(4096)
            except OSError:
                chunk = b""
            if not chunk:
                return self.finish(s, "fin")
            st["buf"] += chunk
            for line in st["buf"].split(b"\n")[:-1]:
                text = line.decode(errors="replace")
                if text == st["token"] and not st["done"]:
                    st["done"] = True
                    self.stats["echoed"] += 1
                elif text.startswith("PING "):
                    self.send(s, "PONG " + text[5:])
                elif text.startswith("BYE "):
                    self.stats["bye"][text[4:]] = self.stats["bye"].get(text[4:], 0) + 1
            st["buf"] = st["buf"].rsplit(b"\n", 1)[-1]

    def send(self, s, text):
        try:
            s.send((text + "\n").encode())  # tiny lines: the socket buffer always has room
        except OSError:
            pass
        self.conns[s]["last_send"] = time.monotonic()

    def keep_alive(self, now):
        """A data line from every connection that has been quiet for 5 s (reader idleness is 20 s)."""
        for s, st in self.conns.items():
            if st["sent"] and now - st["last_send"] > 5:
                self.send(s, "still here")

    def run(self, seconds):
        end = time.monotonic() + seconds
        next_replace = next_keep_alive = time.monotonic()
        while time.monotonic() < end:
            while len(self.conns) < self.pool:
                self.open_one()
            for key, mask in self.sel.select(timeout=0.01):
                if key.fileobj in self.conns:
                    self.on_event(key.fileobj, mask)
            now = time.monotonic()
            if now >= next_keep_alive:
                self.keep_alive(now)
                next_keep_alive = now + 1
            while next_replace <= now:  # retire the oldest echoed connections
                next_replace += 1.0 / self.rate
                done = [c for c, st in self.conns.items() if st["done"]][:1]
                for c in done:
                    self.finish(c, self.rng.choice(["fin", "reset", "partial"]))
        for c in list(self.conns):  # let the last echoes arrive, then close everything
            deadline = time.monotonic() + 5
            while not self.conns[c]["done"] and time.monotonic() < deadline:
                for key, mask in self.sel.select(timeout=0.05):
                    if key.fileobj in self.conns:
                        self.on_event(key.fileobj, mask)
                if c not in self.conns:
                    break
            if c in self.conns:
                self.finish(c, "fin")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connections", type=int, default=10000, help="concurrent connections (default 10000)")
    ap.add_argument("--seconds", type=int, default=60, help="load duration (default 60)")
    ap.add_argument("--churn-share", type=float, default=0.2, help="share of connections the churner holds")
    ap.add_argument("--churn-rate", type=int, default=100, help="churned connections replaced per second")
    ap.add_argument("--server", default=SERVER, help="echo_server binary (e.g. a sanitizer build's)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", choices=["threads", "pool"], default="threads",
                    help="threads: an io_context per thread (--threads); pool: one io_context on that many threads (--io-threads)")
    ap.add_argument("--no-rss-check", action="store_true", help="for sanitizer builds, whose allocators keep memory")
    a = ap.parse_args()
    if not (1 <= a.seconds <= 600 and 10 <= a.connections <= 60000):
        ap.error("--seconds must be in 1..600 and --connections in 10..60000")

    pool = max(1, int(a.connections * a.churn_share))
    steady = a.connections - pool
    max_age_ms = max(2000, a.seconds * 1000 // 3)
    threading = ["--io-threads" if a.model == "pool" else "--threads", str(a.threads)]
    srv = ServerProc(a.server, [*threading, "--reader-idle", "20000", "--writer-idle", "20000",
                                "--all-idle", "30000", "--heartbeat-interval", "3000", "--heartbeat-timeout", "3000",
                                "--heartbeat-misses", "3", "--write-timeout", "10000", "--max-age", str(max_age_ms),
                                "--max-line", "4096", "--max-connections", str(a.connections * 2)])
    failures = []
    time.sleep(1.5)  # the wheel counts in the stats line are refreshed every 200 ms per worker
    base_wheel = srv.wait_stats(lambda s: True, 10)[1]
    rss_start = rss_kib(srv.proc.pid)
    client = subprocess.Popen(
        [CLIENT, "--quiet", "--connect", f"127.0.0.1:{srv.port}", "--connections", str(steady),
         "--send-interval", "1000", "--request-timeout", "5000", "--reconnect", "yes", "--backoff-initial", "100",
         "--backoff-max", "2000", "--duration", str(a.seconds * 1000), "--connect-stagger-us", "100"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    churner = Churner(srv.port, pool, a.churn_rate)
    began = time.monotonic()
    churner.run(a.seconds)
    out, err = client.communicate(timeout=a.seconds + 60)
    elapsed = time.monotonic() - began
    if client.returncode != 0:
        failures.append(f"echo_client exited {client.returncode}: {err[-500:]}")
    summary = json.loads(out) if out.strip() else {}

    idle = srv.wait_stats(lambda s: s[0] == 0 and s[1] == base_wheel, 20)
    if srv.proc.poll() is not None:
        failures.append(f"server died with {srv.proc.returncode}: {srv.proc.stderr.read()[-2000:]}")
    if idle is None:
        failures.append(f"after all connections left: stats {srv.latest}, wheel expected back at {base_wheel}")
    rss_end = 0
    for _ in range(30):  # the server trims its heap within a second of going idle
        if srv.proc.poll() is not None:
            break
        rss_end = rss_kib(srv.proc.pid)
        if rss_end - rss_start <= 16 * 1024:
            break
        time.sleep(0.1)
    rss_peak = rss_kib(srv.proc.pid, "VmHWM") if srv.proc.poll() is None else 0
    srv.proc.send_signal(signal.SIGTERM)
    try:
        code = srv.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        srv.proc.kill()
        code = "killed"
    time.sleep(0.2)
    if code != 0:
        failures.append(f"server exit code {code}: {srv.proc.stderr.read()[-3000:]}")
    closes = (srv.final or srv.latest or (0, 0, {}))[2]
    wrong = {k: v for k, v in closes.items() if k not in EXPECTED}
    if wrong:
        failures.append(f"connections closed for unexpected reasons: {wrong}")
    if closes.get("io-error", 0) > churner.stats["reset"] + churner.stats["partial"]:
        failures.append(f"io-error closes {closes.get('io-error')} exceed the resets the churner made")
    if summary.get("timeouts", 1) != 0:
        failures.append(f"client request timeouts: {summary.get('timeouts')}")
    if set(summary.get("closed_by_server", {})) - {"max-age"}:
        failures.append(f"client closed for unexpected reasons: {summary.get('closed_by_server')}")
    if churner.stats["lost"]:
        failures.append(f"churned connections closed before their echo: {churner.stats['lost']}")
    # "Near": what the connections took is given back, all but allocator caching (glibc's fragmented
    # arenas, Asio's pool of per-descriptor states, which keeps one per descriptor ever open at once).
    retained = (rss_end - rss_start) / max(1, rss_peak - rss_start)
    if not a.no_rss_check and rss_end - rss_start > max(16 * 1024, 0.35 * (rss_peak - rss_start)):
        failures.append(f"RSS not back near start: {rss_start} KiB at start, {rss_peak} at peak, {rss_end} at the end")

    figures = {"connections": a.connections, "steady": steady, "churn_pool": pool, "seconds": round(elapsed, 1),
               "churned": churner.stats["opened"], "churn": churner.stats, "client": summary,
               "server_closes": closes, "wheel_at_start": base_wheel, "wheel_at_end": idle[1] if idle else None,
               "rss_kib": {"start": rss_start, "peak": rss_peak, "end": rss_end},
               "rss_retained": round(retained, 3), "failures": failures}
    print(json.dumps(figures))
    if failures:
        for f in failures:
            print("FAIL:", f, file=sys.stderr)
        return 1
    print(f"soak ok: {a.connections} connections for {a.seconds}s, {churner.stats['opened']} churned, "
          f"wheel back to {base_wheel}, RSS {rss_start}->{rss_peak}->{rss_end} KiB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
