"""peers_bench.py — heartwheel's echo_server against the servers a user would pick instead (issue 34):
Netty 4.1 (IdleStateHandler), Go (goroutine per connection, SetReadDeadline, a timer for pings) and
Node (net, refreshed timers), each speaking the same protocol with the same policy (peers.py), each
checked first by test_peers.py, all on one thread for the connections, driven by one load generator
(heartwheel's echo_client, the same for all; its own CPU is reported), in alternated order.

  load   --sizes connections (default 1,000 and 10,000) sending --rate lines per second in all
         (default 10,000: a line every 100 ms per connection at 1,000, every second at 10,000; the
         same work at every size, which two cores carry with the load generator below one core)
         for --seconds after a 5 s warm-up under the same load (a JIT compiles; runtimes grow their
         pools), with reader idle 10 s and heartbeats (5 s, 3 misses) on: server CPU µs per
         response (user + system of the whole process: the JVM's and Go's runtime threads count),
         echo RTT p50 / p99 from the client; --rounds rounds, medians. A run whose client sent
         under 90 % of its schedule or got answers to under 95 % of what it sent is marked
         saturated (the machine, not the server, set the pace: its CPU per response is not
         comparable).
  idle   --idle connections (default 10,000) that send nothing, heartbeats every 10 min: the
         server's RSS after they are all accepted minus its RSS before (after a warm-up of 100
         connections echoing for 2 s, so a JIT and a runtime's first growth are in the baseline,
         which is reported apart), per connection. The JVM runs with a fixed, pre-touched heap, and
         its connections' heap is read apart (live heap after a full GC, jcmd) and added.
  death  --death peers (default 2,000) answer PINGs (1 s interval, 3 misses) for 5 s, then all fall
         silent; each notes when its first unanswered PING and the server's close arrived
         (bench/scale/peer_observer.py): lateness = close - (that PING + 3 s), as the peer sees it.
         --death-rounds rounds, pooled.
Prints Markdown, writes JSON (--out).
    python3 bench/peers/peers_bench.py [--servers heartwheel,netty,go,node] [--sizes 1000,10000]
        [--rate 10000] [--seconds 10] [--rounds 3] [--idle 10000] [--death 2000] [--death-rounds 2]
        [--phases load,idle,death] [--out FILE]"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peers  # noqa: E402

CLIENT = os.path.join(peers.BUILD, "examples", "echo_client")
OBSERVER = os.path.join(HERE, "..", "scale", "peer_observer.py")
TICKS = os.sysconf("SC_CLK_TCK")
# The JVM's heap is fixed and touched up front, so its RSS does not move with the collector's moods:
# a connection's heap is read as the live heap after a full collection (jcmd), its native memory as RSS.
JVM = ["-Xms256m", "-Xmx256m", "-XX:+AlwaysPreTouch"]
LOAD = {"reader_idle": 10000, "interval": 5000, "misses": 3, "jvm_flags": JVM}
IDLE = {"reader_idle": 3600000, "interval": 600000, "misses": 3, "jvm_flags": JVM}
DEATH = {"reader_idle": 0, "interval": 1000, "misses": 3, "jvm_flags": JVM}
WARMUP_S = 5
TLS_STAGGER_US = 1000


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def sockets(pid):
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            n += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return n


def children_cpu():
    t = os.times()
    return t.children_user + t.children_system


def client(port, conns, interval_ms, duration_ms, extra=(), stagger_us=100):
    return [CLIENT, "--quiet", "--connect", f"127.0.0.1:{port}", "--connections", str(conns), "--send-interval",
            str(interval_ms), "--duration", str(duration_ms), "--connect-stagger-us", str(stagger_us), *extra]


def load_run(name, conns, seconds, rate):
    interval_ms = max(1, round(conns * 1000 / rate))
    server, port = peers.start(name, LOAD)
    try:
        # The same warm-up for all (a JIT compiles, runtimes grow their pools); only what follows counts.
        subprocess.run(client(port, conns, interval_ms, WARMUP_S * 1000), capture_output=True, timeout=WARMUP_S + 120)
        before, c0 = cpu_s(server.pid), children_cpu()
        r = subprocess.run(client(port, conns, interval_ms, seconds * 1000, ["--request-timeout", "1000"]),
                           capture_output=True, text=True, timeout=seconds + 120)
        after, c1 = cpu_s(server.pid), children_cpu()
    finally:
        peers.stop(server)
    s = json.loads(r.stdout)
    # The schedule: every connection a line per interval once connected (the client opens one per 100 µs).
    offered = conns * max(0.0, seconds * 1000 - conns * 0.1) / interval_ms
    behind = s["requests"] < 0.9 * offered or s["responses"] < 0.95 * s["requests"]
    return {"cpu_us_per_response": (after - before) * 1e6 / max(1, s["responses"]), "responses": s["responses"],
            "requests": s["requests"], "offered": round(offered), "saturated": int(behind),
            "interval_ms": interval_ms,
            "timeouts": s["timeouts"], "rtt_p50_ms": s["rtt_ms"]["p50"], "rtt_p99_ms": s["rtt_ms"]["p99"],
            "server_cores": (after - before) / seconds, "client_cores": (c1 - c0) / seconds}


def live_heap_kib(name, pid):
    """The JVM's live heap after a full collection (0 for the other servers: their heap is in RSS)."""
    if name != "netty":
        return 0
    subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, timeout=60)
    out = subprocess.run(["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True, timeout=60).stdout
    # G1: " garbage-first heap   total 262144K, used 12345K [...]"
    for line in out.splitlines():
        if "used" in line and "total" in line:
            return int(line.split("used")[1].split("K")[0].strip(" ,"))
    raise SystemExit(f"jcmd GC.heap_info said: {out}")


def idle_run(name, conns, tls=None):
    """Idle memory per connection; with tls=(cert, key) over TLS 1.3, the client verifying the certificate."""
    server, port = peers.start(name, {**IDLE, "tls": tls} if tls else IDLE)
    extra = ["--tls", "--ca", tls[0]] if tls else []
    # TLS: 1,000 new connections a second, which every server and the client carry on 2 cores (at 10,000
    # a second the handshakes outrun them; echo_server then sheds the oldest beyond --max-handshakes).
    stagger = TLS_STAGGER_US if tls else 100
    try:
        subprocess.run(client(port, 100, 10, 2000, extra), capture_output=True, timeout=60)  # warm-up
        time.sleep(1)
        heap0 = live_heap_kib(name, server.pid)
        base, s0 = rss_kib(server.pid), sockets(server.pid)
        c = subprocess.Popen(client(port, conns, 0, 600000, extra, stagger), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while sockets(server.pid) - s0 < conns and time.monotonic() < deadline:
            time.sleep(0.5)
        accepted = sockets(server.pid) - s0
        time.sleep(3)
        rss = rss_kib(server.pid)
        heap = live_heap_kib(name, server.pid) - heap0
        c.terminate()
        c.wait()
    finally:
        peers.stop(server)
    n = max(1, accepted)
    return {"baseline_kib": base, "accepted": accepted, "rss_bytes_per_conn": (rss - base) * 1024 / n,
            "heap_bytes_per_conn": heap * 1024 / n, "bytes_per_conn": ((rss - base) + heap) * 1024 / n}


def death_run(name, k):
    server, port = peers.start(name, DEATH)
    try:
        obs = subprocess.Popen([sys.executable, OBSERVER, str(port), str(k), str(DEATH["interval"]), "--interval",
                                str(DEATH["interval"]), "--misses", str(DEATH["misses"])],
                               stdout=subprocess.PIPE, text=True)
        if obs.stdout.readline().strip() != "ready":
            raise SystemExit(f"peer_observer did not connect to {name}")
        time.sleep(5)
        obs.send_signal(signal.SIGUSR1)
        out = json.loads(obs.stdout.readline())
        obs.wait()
    finally:
        peers.stop(server)
    return out


def pct(v, q):
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--servers", default=",".join(peers.NAMES))
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--rate", type=int, default=10000, help="lines per second offered in all, at every size")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--idle", type=int, default=10000)
    ap.add_argument("--death", type=int, default=2000)
    ap.add_argument("--death-rounds", type=int, default=2)
    ap.add_argument("--phases", default="load,idle,tls,death", help="which of load, idle, tls, death to run")
    ap.add_argument("--out", default=os.path.join(peers.ROOT, "docs", "peers_bench.json"))
    a = ap.parse_args()
    names = a.servers.split(",")
    phases = a.phases.split(",")
    for ph in phases:
        if ph not in ("load", "idle", "tls", "death"):
            sys.exit(f"--phases: unknown phase '{ph}' (accepted: load, idle, tls, death)")
    for n in names:
        if n not in peers.NAMES:
            sys.exit(f"--servers: unknown server '{n}' (accepted: {', '.join(peers.NAMES)})")
    if a.rate <= 0:
        print(f"--rate: {a.rate} is out of range (accepted: 1 or more lines per second)", file=sys.stderr)
        sys.exit(2)
    # Each server must do what the policy says before any figure of it counts.
    subprocess.run([sys.executable, os.path.join(HERE, "test_peers.py"), *names], check=True, stdout=sys.stderr)
    res = {"load": {}, "idle": {}, "tls": {}, "death": {}}

    def rotated(r):
        return names[r % len(names):] + names[:r % len(names)]

    for size in map(int, a.sizes.split(",") if "load" in phases else []):
        runs = {n: [] for n in names}
        for r in range(a.rounds):
            for n in rotated(r):
                runs[n].append(load_run(n, size, a.seconds, a.rate))
        # Medians; a size is marked saturated for a server if any of its rounds was.
        res["load"][size] = {n: {k: (max if k == "saturated" else statistics.median)(x[k] for x in v) for k in v[0]}
                             for n, v in runs.items()}
    for n in names if "idle" in phases else []:
        res["idle"][n] = idle_run(n, a.idle)
    cert = peers.certificate() if "tls" in phases else None
    for n in names if "tls" in phases else []:
        res["tls"][n] = idle_run(n, a.idle, cert)
    lat = {n: [] for n in names}
    counts = {n: {"observed": 0, "closed": 0, "no_unanswered_ping": 0, "unstamped": 0} for n in names}
    delays = {n: [] for n in names}
    for r in range(a.death_rounds if "death" in phases else 0):
        for n in rotated(r):
            o = death_run(n, a.death)
            lat[n] += o["lateness_ms"]
            delays[n].append(o["read_delay_ms"]["p99"] or 0.0)
            for k in counts[n]:
                counts[n][k] += o[k]
    for n in names if "death" in phases else []:
        v = sorted(lat[n])
        res["death"][n] = {**counts[n], "p50_ms": pct(v, 0.5), "p99_ms": pct(v, 0.99), "max_ms": v[-1] if v else None,
                           "min_ms": v[0] if v else None, "early": sum(x < 0 for x in v),
                           "observer_read_delay_p99_ms": max(delays[n], default=0.0)}
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)

    report(res, a)


def report(res, a):
    """Markdown tables of the phases that ran."""
    def ratio(table, n, key):
        base = table.get("heartwheel", {}).get(key)
        return table[n][key] / base if base else 0.0

    flags = " ".join(sys.argv[1:])
    print(f"{time.strftime('%Y-%m-%d', time.gmtime())}, `peers_bench.py{' ' + flags if flags else ''}`: one thread "
          f"serves the connections in every server; one echo_client drives all; {a.rounds} rounds in alternated "
          f"order, medians.\n")
    for size, table in res["load"].items():
        every = next(iter(table.values()))["interval_ms"]
        print(f"**{size:,} connections, a line every {every:,.0f} ms each ({size * 1000 / every:,.0f} lines/s), "
              f"{a.seconds} s** (reader idle 10 s, heartbeat 5 s × 3)\n")
        print("| server | CPU µs per response | × heartwheel | server cores | RTT p50 / p99 ms | timeouts | client cores |")
        print("| --- | ---: | ---: | ---: | --- | ---: | ---: |")
        for n, x in table.items():
            mark = " (saturated)" if x["saturated"] else ""
            print(f"| {n}{mark} | {x['cpu_us_per_response']:.1f} | {ratio(table, n, 'cpu_us_per_response'):.2f} | "
                  f"{x['server_cores']:.2f} | {x['rtt_p50_ms']:.2f} / {x['rtt_p99_ms']:.2f} | {int(x['timeouts'])} | "
                  f"{x['client_cores']:.2f} |")
        print()
    for phase, what in (("idle", "idle connections"),
                        ("tls", "idle TLS connections (TLS 1.3, a P-256 certificate the client verifies)")):
        if not res[phase]:
            continue
        print(f"**{a.idle:,} {what}**: server RSS after they were accepted minus before, per connection "
              f"(the baseline: the process after a warm-up, reported apart); the JVM's heap is fixed and pre-touched "
              f"({' '.join(JVM)}), so its connections' heap is read as the live heap after a full GC and added\n")
        print("| server | bytes per idle connection | × heartwheel | of which RSS / JVM heap | accepted | baseline RSS MiB |")
        print("| --- | ---: | ---: | --- | ---: | ---: |")
        for n, x in res[phase].items():
            print(f"| {n} | {x['bytes_per_conn']:,.0f} | {ratio(res[phase], n, 'bytes_per_conn'):.2f} | "
                  f"{x['rss_bytes_per_conn']:,.0f} / {x['heap_bytes_per_conn']:,.0f} | {x['accepted']:,} | "
                  f"{x['baseline_kib'] / 1024:.1f} |")
        print()
    if res["death"]:
        print(f"**Death detection as the peers see it**: {a.death:,} peers stop answering (PING after 1 s of silence, "
              f"closed at the 3rd unanswered: first unanswered PING + 3 s); close time minus that, {a.death_rounds} "
              f"rounds pooled; times are the kernel's arrival times at the peers (SO_TIMESTAMPNS), not when the "
              f"observer's loop read them (its read delay, p99, in the last column)\n")
        print("| server | p50 ms | p99 ms | max ms | min ms | early | closed / observed | closes without a stamp | observer read delay p99 ms |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
        for n, x in res["death"].items():
            print(f"| {n} | {x['p50_ms']:.2f} | {x['p99_ms']:.2f} | {x['max_ms']:.2f} | {x['min_ms']:.2f} | "
                  f"{x['early']} | {x['closed']:,} / {x['observed']:,} | {x['unstamped']} | "
                  f"{x['observer_read_delay_p99_ms']:.2f} |")

if __name__ == "__main__":
    main()
