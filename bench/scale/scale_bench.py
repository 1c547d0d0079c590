"""scale_bench.py — 100,000 live connections on one machine, all with reader idle, heartbeats (every
connection pinged and answering) and max age, then the death of every client at once.

The server processes share one port (--reuse-port), as many as the per-process descriptor limit
needs; the echo_client processes spread their connections over source addresses of 127.0.0.0/8
(--source), each address having its own ephemeral ports. Everything stays on 127.0.0.0/8. The
heartbeat interval has ±10 % jitter, as deployed, and the clients make their connections over one
heartbeat interval, as a long-running server's have arrived: pings, and so deaths, spread evenly over
the interval (made within a few seconds, they would bunch there for many intervals to come).

Phase 1 (steady): once every connection is up, a window of --seconds: total server RSS and per
connection, kernel socket memory (/proc/net/sockstat, /proc/meminfo Slab), server CPU per 1,000
heartbeats, the wheels' wake-ups per second, the p99 ping round trip (the servers' RTT histogram over
the window), and closes for a liveness reason (there must be none: every client answers).
Phase 2 (death): every client is stopped (SIGSTOP; its kernel still ACKs, it answers nothing). Each
connection is judged heartbeat-timeout at its next ping + the timeout: the first close may come no
earlier than the stop + timeout, the last no later than the stop + 1.1 × interval + timeout + one tick
(plus the polling period, 250 ms, and 50 ms for a scrape: the window is read off the metrics, which
are scraped rarely, and from here on at the lowest priority, so that the observer does not compete with
the servers for the CPU). Per connection, the servers measure each judgement against
the deadline that connection missed (when its last ping fell due + the timeout, never before the
formula from its first unanswered ping): none may come before it (a failure), and how many come more than one tick after it (the target) is reported. Reported: when the closes began and ended, that per-connection lateness
(histogram, mean, maximum), the closing burst's server CPU, the wheels' wake-up lateness during it
and the server processes' run-queue wait (/proc/PID/schedstat: time runnable but waiting for a CPU),
and the machine's CPU over the phase (/proc/stat: busy, softirq, and steal: time the hypervisor gave
this machine's virtual CPUs to someone else). Beside the servers, bench/scale/wake_probe (cyclictest's
method: a plain thread sleeping to 1 ms deadlines) measures how late the machine itself wakes an
ordinary thread over the same phase: the floor under the servers' per-connection lateness. The
phase's scrapes also make a time series: per quarter-second window, the late judgements, the probe's
worst wake-up and the hypervisor's steal, so that the late judgements can be read against the moments
the machine itself missed the tick. And from the peers' side (bench/scale/peer_observer.py, a
separate process at the servers' priority): K more connections (1 % of them, 50..200) answer pings
like the clients until the stop, then note when their first unanswered PING and the server's close
arrived — close minus (that PING + the timeout) is the lateness a peer sees, next to the servers' own
figure.
The machine: what N connections need beyond Debian's defaults is raised for the run and put back
after it (machine_settings: the connection tracker's table, in case loopback is tracked; orphaned
sockets, which the death phase makes by the million; the system's descriptors), each only when below
what is needed, and recorded. Ports need nothing: every client has source addresses of its own. A
process may hold 20,000 descriptors here (a hard limit), so N needs N / --per-process servers and as
many clients. While the connections come up, the servers' RSS, the clients' and the kernel's slab are
sampled against the connections up (the "ramp": RSS against connections from 0 to N, plotted with
matplotlib to --plot).
What the rest of the machine used over the death phase — the processes outside the benchmark,
kernel threads included, the busiest by name — is reported beside the machine's busy time: a host
agent that walks every process's sockets (this machine's PID 1 does, ~1 % of a core per 10,000
sockets, most of a core at two million) takes its share of the cores the servers judge on.
Prints Markdown and writes JSON (--out).
    python3 bench/scale/scale_bench.py [--connections 100000] [--seconds 30]"""
import argparse
import json
import math
import os
import signal
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BUILD = os.environ.get("HEARTWHEEL_BUILD", os.path.join(ROOT, "build"))
SERVER = os.path.join(BUILD, "examples", "echo_server")
CLIENT = os.path.join(BUILD, "examples", "echo_client")
PROBE = os.path.join(BUILD, "bench", "wake_probe")
OBSERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peer_observer.py")
TICKS = os.sysconf("SC_CLK_TCK")
PER_PROCESS = 15000  # connections per process, under a 20,000-descriptor limit with room for hashing skew
JITTER = 0.1  # heartbeat interval ±10 % by default, as a deployment would run it (--jitter)
HB_CLOSES = 'heartwheel_closes_total{reason="heartbeat-timeout"}'
POLL = 0.25  # seconds between the death phase's scrapes (each scrape is work on every server's thread)
# Kernel memory a loopback connection's two sockets take while idle, a bound (measured: ~4.2 KiB
# each: socket, inode, file, TCP state), and what a server and a client hold per connection: the
# run refuses to start when the machine's available memory is short of that.
KERNEL_PER_PAIR, SERVER_PER_CONN, CLIENT_PER_CONN = 9 * 1024, 1536, 6 * 1024


def machine_settings(n):
    """Raises what n connections need of the kernel (each setting only when below it); returns
    {setting: [before, during]} for the record and for restore_machine(). Not root: nothing is changed,
    and a setting that is short is named."""
    want = {"net/netfilter/nf_conntrack_max": 2 * n + 100000,  # both ends, should loopback be tracked
            "net/ipv4/tcp_max_orphans": n + 100000,  # the death phase's closes: every server side at once
            "fs/file-max": 2 * n + 200000}  # both ends' descriptors, and the rest of the machine's
    changed = {}
    for key, need in want.items():
        path = "/proc/sys/" + key
        if not os.path.exists(path):
            continue
        with open(path) as f:
            before = int(f.read().split()[0])
        if before >= need:
            continue
        try:
            with open(path, "w") as f:
                f.write(str(need))
            changed[key] = [before, need]
        except OSError as e:
            print(f"note: {key} is {before}, below the {need} {n:,} connections need ({e.strerror}: run as root)",
                  file=sys.stderr)
    return changed


def restore_machine(changed):
    for key, (before, _) in changed.items():
        try:
            with open("/proc/sys/" + key, "w") as f:
                f.write(str(before))
        except OSError as e:
            print(f"note: could not put {key} back to {before}: {e.strerror}", file=sys.stderr)


def policy_flags(interval, timeout, tick, misses=1, jitter=JITTER):
    """echo_server's flags for every benchmarked server: metrics, reader idle, heartbeat and max age on."""
    return ["--metrics", "127.0.0.1:0", "--max-connections", "25000", "--tick", str(tick), "--reader-idle", "3600000",
            "--heartbeat-interval", str(interval), "--heartbeat-timeout", str(timeout), "--heartbeat-misses", str(misses),
            "--heartbeat-jitter", str(jitter), "--max-age", "7200000", "--shutdown-grace", "0"]


def start_server(flags, port=0):
    """An echo_server on 127.0.0.1:port (0: any): (process, port, metrics port), read off its first lines."""
    p = subprocess.Popen([SERVER, "--listen", f"127.0.0.1:{port}", "--drain-window", "0", *flags], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if not line.startswith("listening on "):
        raise SystemExit(f"echo_server did not start: {line!r} {p.stderr.read()}")
    return p, int(line.strip().rsplit(":", 1)[1]), int(p.stdout.readline().strip().rsplit(":", 1)[1])


def proc_cpu_rss(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICKS
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return cpu, rss


def run_queue_wait(pids):
    """Summed over the processes, from /proc/PID/schedstat: (seconds waited runnable for a CPU,
    number of times scheduled in)."""
    wait = slices = 0
    for pid in pids:
        with open(f"/proc/{pid}/schedstat") as f:
            _, w, n = f.read().split()[:3]
        wait += int(w)
        slices += int(n)
    return wait / 1e9, slices


def others_cpu(exclude):
    """CPU seconds so far of every process not in `exclude` (pids), kernel threads too: {pid: (name, s)}."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in exclude:
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        name = st[st.index("(") + 1:st.rindex(")")]
        fields = st[st.rindex(")") + 2:].split()
        out[int(d)] = (name, (int(fields[11]) + int(fields[12])) / TICKS)
    return out


def others_delta(before, after):
    """What the processes outside the benchmark used between two others_cpu() readings: total, top three."""
    used = sorted(((after[p][1] - before.get(p, (None, 0.0))[1], after[p][0]) for p in after), reverse=True)
    return {"total_s": round(sum(u for u, _ in used), 2), "top": [[name, round(u, 2)] for u, name in used[:3] if u >= 0.01]}


def machine_cpu():
    """Machine-wide CPU seconds from /proc/stat: {busy, softirq, steal, idle}. Steal is time the
    hypervisor ran something else while a virtual CPU here wanted to run."""
    with open("/proc/stat") as f:
        v = [int(x) / TICKS for x in f.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = v
    return {"busy": user + nice + system + irq + softirq, "softirq": softirq, "steal": steal, "idle": idle + iowait}


def sockstat_tcp():
    with open("/proc/net/sockstat") as f:
        for line in f:
            if line.startswith("TCP:"):
                w = line.split()
                return {w[i]: int(w[i + 1]) for i in range(1, len(w) - 1, 2)}
    return {}


def meminfo_kib(field):
    """A /proc/meminfo figure in KiB (e.g. "Slab", "MemAvailable"); 0 if absent."""
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def slab_kib():
    return meminfo_kib("Slab")


def scrape(mport, timeout=30, tries=5):
    """The server's metrics: plain samples by name (labels kept in the name). Tried again when the
    server closed it: its endpoint gives a request head a second (a slowloris defence), and this
    harness, at the lowest priority on a saturated machine, may take longer to send one."""
    for attempt in range(tries):
        try:
            body = urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=timeout).read().decode()
            break
        except OSError:
            if attempt == tries - 1:
                raise
            time.sleep(0.1)
    out = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def scrape_all(mports, last):
    """Every server's metrics, in place in `last`; a server that does not answer within 2 s (busy, or
    this harness too slow for its endpoint) keeps its previous sample for this round."""
    for i, m in enumerate(mports):
        try:
            last[i] = scrape(m, timeout=2, tries=1)
        except OSError:
            pass
    return list(last)


def total(scrapes, name):
    return sum(s.get(name, 0.0) for s in scrapes)


def histogram(scrapes, name):
    """{upper bound: cumulative count} summed over servers."""
    h = {}
    for s in scrapes:
        for k, v in s.items():
            if k.startswith(name + "_bucket{le=\""):
                le = k.split('le="', 1)[1].split('"', 1)[0]
                bound = math.inf if le == "+Inf" else float(le)
                h[bound] = h.get(bound, 0.0) + v
    return h


def quantile(h_after, h_before, q):
    """The upper bound of the bucket holding quantile q of the observations between two scrapes."""
    bounds = sorted(h_after)
    n = h_after[math.inf] - h_before.get(math.inf, 0.0)
    if n <= 0:
        return None
    for b in bounds:
        if h_after[b] - h_before.get(b, 0.0) >= q * n:
            return b
    return math.inf


def liveness_closes(scrapes):
    reasons = ("reader-idle", "writer-idle", "all-idle", "heartbeat-timeout", "read-timeout", "write-timeout",
               "max-age", "handshake-timeout")
    return {r: int(total(scrapes, f'heartwheel_closes_total{{reason="{r}"}}')) for r in reasons
            if total(scrapes, f'heartwheel_closes_total{{reason="{r}"}}')}


def series_point(scrapes, began, ended, servers, tick):
    """One point of the death phase's time series: when the servers were scraped (monotonic seconds),
    the running totals that consecutive points difference into a window, and the machine's steal."""
    h = histogram(scrapes, "heartwheel_timer_lateness_seconds")
    within_tick = max([b for b in h if b <= tick / 1000], default=None)  # the bucket bound at or below the tick
    return {"began": began, "ended": ended,
            "late": total(scrapes, "heartwheel_heartbeat_deaths_judged_late_total"),
            "closed": total(scrapes, HB_CLOSES),
            "wakes_late": h.get(math.inf, 0.0) - h.get(within_tick, 0.0),
            "steal": machine_cpu()["steal"], "cpu": sum(proc_cpu_rss(p.pid)[0] for p in servers)}


def line_up(series, probe_events, death, tick):
    """Where the late judgements fell in time, against the machine's own wake-ups: for each window
    between consecutive scrapes (from the start of the previous scrape to the end of this one: each
    server was read somewhere in between), the late judgements in it, the worst late wake-up of the
    plain thread beside the servers (wake_probe) overlapping it, and the hypervisor's steal. A window is
    one where the machine itself missed the target when the probe woke more than one tick late in it
    or in the window before (a server that lost the CPU that long works off a backlog after it)."""
    windows, late_total, late_machine, machine_windows, missed_before = [], 0, 0, 0, False
    for prev, cur in zip(series, series[1:]):
        lo, hi = prev["began"], cur["ended"]
        worst = max([ms for t, ms in probe_events if t < hi and t + ms / 1000 > lo], default=0.0)
        missed = worst > tick
        late = int(cur["late"] - prev["late"])
        late_total += late
        if missed or missed_before:
            late_machine += late
            machine_windows += 1
        missed_before = missed
        if late or missed:
            windows.append({"from_s": round(prev["ended"] - death, 2), "to_s": round(cur["ended"] - death, 2),
                            "judged_late": late, "wheel_wakeups_late": int(cur["wakes_late"] - prev["wakes_late"]),
                            "probe_worst_ms": worst, "steal_ms": round((cur["steal"] - prev["steal"]) * 1000),
                            "server_cpu_s": round(cur["cpu"] - prev["cpu"], 2)})
    peak = max((cur["closed"] - prev["closed"]) / max(1e-3, cur["ended"] - prev["ended"])
               for prev, cur in zip(series, series[1:])) if len(series) > 1 else 0.0
    return {"windows": len(series) - 1, "peak_deaths_per_s": round(peak), "judged_late": late_total,
            "judged_late_where_the_machine_missed": late_machine, "windows_where_the_machine_missed": machine_windows,
            "notable": windows}


def ramp_summary(ramp):
    """Bytes per connection over the first and the second half of the ramp (a straight line gives the
    same two slopes), and the kernel's slab per connection at the top."""
    pts = [p for p in ramp if p["connections"] > 0]
    if len(pts) < 3:
        return {"server_bytes_per_connection_first_half": None, "server_bytes_per_connection_second_half": None,
                "linear": False, "slab_bytes_per_connection": None, "client_bytes_per_connection_second_half": None}
    top = pts[-1]
    mid = min(pts, key=lambda p: abs(p["connections"] - top["connections"] / 2))
    first = mid["server_rss_kib"] * 1024 / max(1, mid["connections"])
    second = (top["server_rss_kib"] - mid["server_rss_kib"]) * 1024 / max(1, top["connections"] - mid["connections"])
    client = (top["client_rss_kib"] - mid["client_rss_kib"]) * 1024 / max(1, top["connections"] - mid["connections"])
    return {"server_bytes_per_connection_first_half": round(first), "server_bytes_per_connection_second_half": round(second),
            "linear": abs(second - first) <= 0.15 * max(first, second),
            "client_bytes_per_connection_second_half": round(client),
            "slab_bytes_per_connection": round(top["slab_kib"] * 1024 / max(1, top["connections"]))}


def plot_ramp(ramp, n, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4))
    xs = [p["connections"] for p in ramp]
    for key, label in (("server_rss_kib", "servers' RSS (heartwheel echo_server, all processes)"),
                       ("client_rss_kib", "clients' RSS (echo_client, all processes)"),
                       ("slab_kib", "kernel slab (both ends of every connection)")):
        ax.plot(xs, [p[key] / 1048576 for p in ramp], label=label)
    ax.set_xlabel("connections up")
    ax.set_ylabel("GiB")
    ax.set_title(f"Memory against connections, 0 to {n:,}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--plot-only":  # redraw from a run's JSON (Debian's Python)
        with open(sys.argv[2]) as f:
            r = json.load(f)
        plot_ramp(r["ramp"], r["connections"], sys.argv[3])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connections", type=int, default=100000)
    ap.add_argument("--seconds", type=int, default=30, help="the steady window")
    ap.add_argument("--heartbeat-interval", type=int, default=None,
                    help="ms (default 10,000; 60,000 from 500,000 connections: the connects, made over one "
                         "interval, and the heartbeats then come at ~17,000 a second, which two cores carry beside "
                         "their clients)")
    ap.add_argument("--heartbeat-timeout", type=int, default=5000)
    ap.add_argument("--tick", type=int, default=10)
    ap.add_argument("--heartbeat-misses", type=int, default=1)
    ap.add_argument("--jitter", type=float, default=JITTER, help="heartbeat interval jitter (fraction)")
    ap.add_argument("--per-process", type=int, default=PER_PROCESS, help="connections per server / client process")
    ap.add_argument("--out", default=None, help="the JSON (default: docs/scale_bench.json, docs/c1m_bench.json "
                                                "from a million connections)")
    ap.add_argument("--plot", default=None, help="RSS against connections (default: scale_ramp.png, c1m_ramp.png "
                                                 "from a million, beside --out; docs/ without it)")
    a = ap.parse_args()
    n = a.connections
    a.heartbeat_interval = a.heartbeat_interval or (60000 if n >= 500000 else 10000)
    big = n >= 1000000
    # The plot goes beside the JSON: a run that writes its JSON elsewhere (the test command's smoke,
    # into the build tree) leaves docs/ alone.
    a.plot = a.plot or os.path.join(os.path.dirname(a.out) if a.out else os.path.join(ROOT, "docs"),
                                    "c1m_ramp.png" if big else "scale_ramp.png")
    a.out = a.out or os.path.join(ROOT, "docs", "c1m_bench.json" if big else "scale_bench.json")
    procs = max(1, math.ceil(n / a.per_process))
    need_kib = n * (KERNEL_PER_PAIR + SERVER_PER_CONN + CLIENT_PER_CONN) // 1024
    if meminfo_kib("MemAvailable") < need_kib:
        raise SystemExit(f"{n:,} connections need about {need_kib / 1048576:.1f} GiB (kernel, servers, clients); "
                         f"this machine has {meminfo_kib('MemAvailable') / 1048576:.1f} GiB available")
    poll = POLL if procs <= 8 else 1.0  # each poll scrapes every server: fewer of them with many
    changed = machine_settings(n)
    interval, timeout, tick = a.heartbeat_interval, a.heartbeat_timeout, a.tick
    misses, jitter = a.heartbeat_misses, a.jitter
    flags = ["--reuse-port", *policy_flags(interval, timeout, tick, misses, jitter)]
    servers, mports, clients, probe, observer = [], [], [], None, None
    observed = min(200, max(50, n // 100))
    ramp = []
    try:
        port = 0
        for _ in range(procs):
            p, port, mport = start_server(flags, port)
            servers.append(p)
            mports.append(mport)
        time.sleep(0.5)
        base_rss = sum(proc_cpu_rss(p.pid)[1] for p in servers)
        slab0 = slab_kib()
        per_client = math.ceil(n / procs)
        # Connections made over one heartbeat interval, as a server's are after a while: their pings, and
        # so their deaths, spread evenly over the interval instead of bunching where they were made.
        stagger_us = max(100, interval * 1000 // per_client)
        for j in range(procs):
            count = min(per_client, n - j * per_client)
            # Four source addresses per client: ~3,750 connections each, far below the ~28,000 ports.
            src = f"127.1.{j}.1-127.1.{j}.4"
            clients.append(subprocess.Popen(
                [CLIENT, "--quiet", "--connect", f"127.0.0.1:{port}", "--connections", str(count), "--send-interval",
                 "0", "--answer-pings", "yes", "--duration", "3600000", "--connect-stagger-us", str(stagger_us),
                 # The clients' own heartbeat waits three of the servers' intervals: only the servers ping
                 # (a client pinging first would be inbound traffic, and the servers would never ping).
                 "--heartbeat-interval", str(3 * interval),
                 "--source", src],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        t0 = time.monotonic()
        bound = max(120, 3 * interval / 1000 + 60)  # the clients take an interval to connect
        last = [{} for _ in mports]
        while True:
            up = total(scrape_all(mports, last), "heartwheel_connections")
            # The ramp: RSS against connections, the servers' and the clients' apart, and the kernel's slab.
            ramp.append({"s": round(time.monotonic() - t0, 2), "connections": int(up),
                         "server_rss_kib": sum(proc_cpu_rss(p.pid)[1] for p in servers) - base_rss,
                         "client_rss_kib": sum(proc_cpu_rss(c.pid)[1] for c in clients),
                         "slab_kib": slab_kib() - slab0})
            if up >= n:
                break
            if time.monotonic() - t0 > bound:
                raise SystemExit(f"only {up:.0f} of {n} connections came up in {bound:.0f} s")
            time.sleep(0.5)
        connect_s = time.monotonic() - t0
        time.sleep(2)  # the accept bursts are over
        # The peers' side: a few more connections, answering like the clients until the stop.
        # Measured from the first unanswered PING + the policy's death time; with jitter (intervals
        # vary) and more than one miss, from the last unanswered PING + the timeout.
        observer = subprocess.Popen([sys.executable, OBSERVER, str(port), str(observed), str(timeout), "--source",
                                     "127.2.0.1", "--interval", str(interval), "--misses", str(misses),
                                     *(["--from-last"] if jitter > 0 and misses > 1 else [])],
                                    stdout=subprocess.PIPE, text=True)
        if observer.stdout.readline().strip() != "ready":
            raise SystemExit("peer_observer did not connect")
        # The machine's own wake-up tail, read over the death phase: a plain thread sleeping to 1 ms
        # deadlines at the servers' priority (started before the harness lowers its own).
        probe = subprocess.Popen([PROBE, "1000", str(tick)], stdout=subprocess.PIPE, text=True)
        # The observer yields to what it observes: from here on this process (the scrapes, not the
        # servers and clients it started, which keep their priority) runs at the lowest priority.
        os.nice(19)
        # Phase 1: steady.
        before = [scrape(m) for m in mports]
        cpu0 = sum(proc_cpu_rss(p.pid)[0] for p in servers)
        time.sleep(a.seconds)
        after = [scrape(m) for m in mports]
        figures = [proc_cpu_rss(p.pid) for p in servers]
        cpu1, rss = sum(f[0] for f in figures), sum(f[1] for f in figures)
        client_rss = sum(proc_cpu_rss(c.pid)[1] for c in clients)
        per_server = sorted(int(s.get("heartwheel_connections", 0)) for s in after)
        per_rss = sorted(f[1] for f in figures)
        slab1, sock1 = slab_kib(), sockstat_tcp()
        pings = total(after, "heartwheel_pings_sent_total") - total(before, "heartwheel_pings_sent_total")
        pongs = total(after, "heartwheel_pongs_received_total") - total(before, "heartwheel_pongs_received_total")
        wakeups = total(after, "heartwheel_driver_wakeups_total") - total(before, "heartwheel_driver_wakeups_total")
        rtt_p99 = quantile(histogram(after, "heartwheel_rtt_seconds"), histogram(before, "heartwheel_rtt_seconds"), 0.99)
        steady = {
            "connections": int(total(after, "heartwheel_connections")), "server_processes": procs,
            "connect_seconds": round(connect_s, 1), "window_s": a.seconds,
            "server_rss_mib": round(rss / 1024, 1), "server_rss_per_connection_bytes": round((rss - base_rss) * 1024 / n),
            "kernel_tcp_sockets_in_use": sock1.get("inuse", 0), "kernel_tcp_buffer_pages": sock1.get("mem", 0),
            "kernel_slab_per_socket_bytes": round((slab1 - slab0) * 1024 / (2 * n)),
            "server_cpu_s": round(cpu1 - cpu0, 2), "pings": int(pings), "pongs": int(pongs),
            "cpu_ms_per_1000_heartbeats": round((cpu1 - cpu0) * 1e6 / max(1, pings), 2),
            "wakeups_per_s": round(wakeups / a.seconds, 1), "rtt_p99_ms_at_most": None if rtt_p99 is None else rtt_p99 * 1000,
            "read_buffers": int(total(after, "heartwheel_read_buffers")),
            "liveness_closes": liveness_closes(after),
            "heartbeats_per_s": round(pongs / a.seconds),
            "client_processes": len(clients), "client_rss_mib": round(client_rss / 1024, 1),
            "client_rss_per_connection_bytes": round(client_rss * 1024 / n),
            "per_server_process": {"connections_min": per_server[0], "connections_max": per_server[-1],
                                   "rss_mib_min": round(per_rss[0] / 1024, 1), "rss_mib_max": round(per_rss[-1] / 1024, 1),
                                   "base_rss_mib": round(base_rss / 1024 / procs, 1)},
        }
        # Phase 2: every client dies at once.
        late0 = histogram(after, "heartwheel_timer_lateness_seconds")
        wakes0 = total(after, "heartwheel_driver_wakeups_total")
        cpu2 = sum(proc_cpu_rss(p.pid)[0] for p in servers)
        rq0 = run_queue_wait([p.pid for p in servers])
        m0 = machine_cpu()
        ours = {os.getpid(), probe.pid, observer.pid} | {p.pid for p in servers + clients}
        o0 = others_cpu(ours)
        probe.send_signal(signal.SIGUSR1)  # count from here
        observer.send_signal(signal.SIGUSR1)  # the observed peers stop answering with the clients
        for c in clients:
            c.send_signal(signal.SIGSTOP)
        death = time.monotonic()
        first = last = None
        limit = death + (interval * (1 + jitter) + (misses - 1) * max(interval, timeout) * (1 + jitter) + timeout) / 1000 + 30
        series = [series_point(after, death, death, servers, tick)]
        last = list(after)
        while time.monotonic() < limit:
            began = time.monotonic()
            scrapes = scrape_all(mports, last)
            series.append(series_point(scrapes, began, time.monotonic(), servers, tick))
            closed = series[-1]["closed"]
            now = time.monotonic() - death
            if closed > 0 and first is None:
                first = now
            if closed >= n:
                last = now
                break
            time.sleep(poll)
        final = [scrape(m) for m in mports]
        cpu3 = sum(proc_cpu_rss(p.pid)[0] for p in servers)
        rq1 = run_queue_wait([p.pid for p in servers])
        m1 = machine_cpu()
        others = others_delta(o0, others_cpu(ours))
        probe.send_signal(signal.SIGTERM)
        wake = json.loads(probe.communicate(timeout=10)[0])
        coincidence = line_up(series, wake.pop("late_events"), death, tick)
        peer = json.loads(observer.communicate(timeout=90)[0].strip().splitlines()[-1])
        pl = peer.pop("lateness_ms")
        peer.update({"p50_ms": pl[len(pl) // 2] if pl else None, "p99_ms": pl[min(len(pl) - 1, int(len(pl) * 0.99))] if pl else None,
                     "max_ms": pl[-1] if pl else None, "min_ms": pl[0] if pl else None,
                     "before_the_deadline": sum(x < 0 for x in pl), "later_than_one_tick_plus_1ms": sum(x > tick + 1 for x in pl)})
        machine = {k: round(m1[k] - m0[k], 2) for k in m0}
        wakes = total(final, "heartwheel_driver_wakeups_total") - wakes0
        late_sum = total(final, "heartwheel_timer_lateness_seconds_sum") - total(after, "heartwheel_timer_lateness_seconds_sum")
        late_p99 = quantile(histogram(final, "heartwheel_timer_lateness_seconds"), late0, 0.99)
        late_max = quantile(histogram(final, "heartwheel_timer_lateness_seconds"), late0, 1.0)
        more = (misses - 1) * max(interval, timeout)  # the misses after the first, each an interval or a timeout apart
        earliest = (more * (1 - jitter) + timeout) / 1000
        latest = (interval * (1 + jitter) + more * (1 + jitter) + timeout + tick) / 1000 + poll + 0.05
        name = "heartwheel_heartbeat_death_lateness_seconds"
        deaths = total(final, name + "_count") - total(after, name + "_count")
        h1, h0 = histogram(final, name), histogram(after, name)
        death_p50, death_p99 = quantile(h1, h0, 0.5), quantile(h1, h0, 0.99)
        death_max = max(s.get("heartwheel_heartbeat_death_lateness_max_seconds", 0.0) for s in final)
        early = int(total(final, "heartwheel_heartbeat_deaths_judged_early_total"))
        late = int(total(final, "heartwheel_heartbeat_deaths_judged_late_total")
                   - total(after, "heartwheel_heartbeat_deaths_judged_late_total"))
        # How many within each bound (cumulative), for the page: e.g. within the tick + 2 ms.
        within = {f"{b * 1000:g}": int(h1[b] - h0.get(b, 0.0)) for b in sorted(h1) if b != math.inf}
        within2 = within.get(f"{tick + 2:g}")
        death_phase = {
            "heartbeat_timeout_closes": int(total(final, HB_CLOSES)),
            "first_close_s": None if first is None else round(first, 3), "all_closed_s": None if last is None else round(last, 3),
            "earliest_allowed_s": earliest, "latest_allowed_s": round(latest, 3),
            "within_bounds": first is not None and last is not None and first >= earliest - 0.01 and last <= latest,
            "judged": int(deaths), "judged_early": early,
            "judgement_lateness_p50_ms_at_most": None if death_p50 is None else death_p50 * 1000,
            "judgement_lateness_p99_ms_at_most": None if death_p99 is None else death_p99 * 1000,
            "judgement_lateness_mean_ms": round((total(final, name + "_sum") - total(after, name + "_sum")) * 1000
                                                / max(1, deaths), 2),
            "judgement_lateness_max_ms": round(death_max * 1000, 2),
            "judged_later_than_one_tick": late,
            "judged_later_than_one_tick_plus_2ms": None if within2 is None else int(deaths) - within2,
            "judged_within_ms": within,
            "each_within_one_tick": deaths >= n and early == 0 and late == 0,
            "burst_cpu_s": round(cpu3 - cpu2, 2),
            "lateness_p99_ms_at_most": None if late_p99 is None else late_p99 * 1000,
            "lateness_max_ms_at_most": None if late_max is None else late_max * 1000,
            "lateness_mean_ms": round(late_sum * 1000 / max(1, wakes), 2),
            "run_queue_wait_s": round(rq1[0] - rq0[0], 2),
            "run_queue_wait_per_slice_ms": round((rq1[0] - rq0[0]) * 1000 / max(1, rq1[1] - rq0[1]), 2),
            "machine_cpu_s": machine, "others_cpu": others, "burst_s": round(time.monotonic() - death, 2), "wake_probe": wake,
            "late_by_window": coincidence, "peer_side": peer,
            "other_closes": {k: v for k, v in liveness_closes(final).items() if k != "heartbeat-timeout"},
        }
    finally:
        if probe is not None and probe.poll() is None:
            probe.kill()
        if observer is not None and observer.poll() is None:
            observer.kill()
        for c in clients:
            try:
                c.send_signal(signal.SIGCONT)
                c.kill()
                c.wait(timeout=30)
            except Exception:
                pass
        for p in servers:
            p.send_signal(signal.SIGTERM)
        for p in servers:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        restore_machine(changed)
    result = {"connections": n, "steady": steady, "death": death_phase, "ramp": ramp, "machine_settings": changed,
              "heartbeat_interval_ms": interval, "heartbeat_timeout_ms": timeout,
              "tick_ms": tick, "machine": f"{os.cpu_count()} cores", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    try:
        plot_ramp(ramp, n, a.plot)
    except ImportError:  # this Python has no matplotlib: Debian's has
        subprocess.run(["/usr/bin/python3", __file__, "--plot-only", a.out, a.plot], check=True)
    s, d = steady, death_phase
    print(f"{s['connections']} connections over {procs} server processes (--reuse-port) and {procs} clients "
          f"(--source), up in {s['connect_seconds']} s; reader idle, heartbeat every {interval / 1000:g} s "
          f"(timeout {timeout / 1000:g} s, every client answering) and max age on; wheel tick {tick} ms.\n")
    r = ramp_summary(ramp)
    pp = s["per_server_process"]
    one = n * s["server_rss_per_connection_bytes"] / 1048576
    print(f"Memory against connections as they came up (every 0.5 s; plot: docs/{os.path.basename(a.plot)}): server RSS "
          f"{r['server_bytes_per_connection_first_half']} B per connection over the first half, "
          f"{r['server_bytes_per_connection_second_half']} B over the second (linear: "
          f"{'yes' if r['linear'] else 'no'}); kernel slab {r['slab_bytes_per_connection']} B per connection (both ends). "
          f"Per server process: {pp['connections_min']:,}–{pp['connections_max']:,} connections, "
          f"{pp['rss_mib_min']}–{pp['rss_mib_max']} MiB RSS ({pp['base_rss_mib']} MiB of it before any connection). One "
          f"process without the 20,000-descriptor limit would need {n + 64:,} descriptors (RLIMIT_NOFILE) and about "
          f"{one:,.0f} MiB for its connections. The machine, for the run: "
          + (", ".join(f"{k.split('/')[-1]} {b:,} → {w:,}" for k, (b, w) in changed.items()) or "nothing changed")
          + " (put back after it).\n")
    print("| steady window | value |\n|---|---:|")
    print(f"| server RSS, total | {s['server_rss_mib']} MiB |")
    print(f"| server RSS per connection | {s['server_rss_per_connection_bytes']} B |")
    print(f"| kernel slab per socket (approximate, both ends / 2) | {s['kernel_slab_per_socket_bytes']} B |")
    print(f"| kernel TCP sockets in use / buffer pages (sockstat, machine-wide) | {s['kernel_tcp_sockets_in_use']} / "
          f"{s['kernel_tcp_buffer_pages']} |")
    print(f"| server CPU over {a.seconds} s | {s['server_cpu_s']} s |")
    print(f"| heartbeats (pings sent / pongs) | {s['pings']} / {s['pongs']} |")
    print(f"| heartbeats answered per second | {s['heartbeats_per_s']:,} |")
    print(f"| server CPU per 1,000 heartbeats | {s['cpu_ms_per_1000_heartbeats']} ms |")
    print(f"| client RSS per connection ({s['client_processes']} echo_client processes; with each one's base / "
          f"as the ramp grew) | {s['client_rss_per_connection_bytes']} B / {r['client_bytes_per_connection_second_half']} B |")
    print(f"| driver wake-ups per second (all wheels) | {s['wakeups_per_s']} |")
    print(f"| ping RTT p99 (histogram bucket bound) | ≤ {s['rtt_p99_ms_at_most']} ms |")
    print(f"| read buffers held | {s['read_buffers']} |")
    print(f"| closes for a liveness reason | {s['liveness_closes'] or 'none'} |")
    print(f"\n| every client stopped | value |\n|---|---:|")
    print(f"| closed heartbeat-timeout | {d['heartbeat_timeout_closes']} of {n} |")
    print(f"| first / last close after the stop | {d['first_close_s']} s / {d['all_closed_s']} s |")
    c = d["late_by_window"]
    span = (d["all_closed_s"] or 0) - (d["first_close_s"] or 0)
    print(f"| closes per second: mean over the burst / busiest quarter second | {n / max(1e-3, span):.0f} / "
          f"{c['peak_deaths_per_s']} |")
    print(f"| allowed window | {d['earliest_allowed_s']} s .. {d['latest_allowed_s']} s |")
    print(f"| within it | {'yes' if d['within_bounds'] else 'NO'} |")
    print(f"| judged dead, each against the deadline it missed (when its last ping fell due + the timeout, never before the formula from its first unanswered ping) | {d['judged']} |")
    print(f"| ... before that deadline | {d['judged_early']} |")
    print(f"| ... more than one tick ({tick} ms) after it | {d['judged_later_than_one_tick']} |")
    print(f"| ... more than one tick + 2 ms after it | {d['judged_later_than_one_tick_plus_2ms']} |")
    print(f"| ... lateness p50 / p99 (bucket bounds) | ≤ {d['judgement_lateness_p50_ms_at_most']} ms / "
          f"≤ {d['judgement_lateness_p99_ms_at_most']} ms |")
    print(f"| ... lateness mean / max | {d['judgement_lateness_mean_ms']} ms / {d['judgement_lateness_max_ms']} ms |")
    print(f"| every one within one tick of its deadline | {'yes' if d['each_within_one_tick'] else 'NO'} |")
    pe = d["peer_side"]
    since = "the last unanswered PING + the timeout" if jitter > 0 and misses > 1 else "the first unanswered PING + the death time"
    print(f"| as {pe['observed']} peers saw it: close minus ({since}), p50 / p99 / min / max | "
          f"{pe['p50_ms']} / {pe['p99_ms']} / {pe['min_ms']} / {pe['max_ms']} ms ({pe['closed']} closes seen; "
          f"{pe['before_the_deadline']} before the deadline, {pe['later_than_one_tick_plus_1ms']} more than one tick + 1 ms after; "
          f"kernel arrival times, {pe['unstamped']} closes without one) |")
    rd = pe["read_delay_ms"]
    print(f"| ... the observer's own read delay after each arrival (what stamping on read would have added), p50 / p99 / max | "
          f"{rd['p50']} / {rd['p99']} / {rd['max']} ms |")
    print(f"| closing burst's server CPU | {d['burst_cpu_s']} s |")
    print(f"| wheels' wake-up lateness p99 / max (bucket bounds) | ≤ {d['lateness_p99_ms_at_most']} ms / ≤ {d['lateness_max_ms_at_most']} ms |")
    print(f"| wheels' wake-up lateness, mean | {d['lateness_mean_ms']} ms |")
    print(f"| servers' run-queue wait (schedstat): total / per time scheduled in | {d['run_queue_wait_s']} s / "
          f"{d['run_queue_wait_per_slice_ms']} ms |")
    mc = d["machine_cpu_s"]
    print(f"| machine over the phase ({d['burst_s']} s × {os.cpu_count()} cores): busy / of it softirq / stolen by the "
          f"hypervisor | {mc['busy']} s / {mc['softirq']} s / {mc['steal']} s |")
    oc = d["others_cpu"]
    print(f"| ... of it, processes outside the benchmark (kernel threads too): total, the busiest | {oc['total_s']} s: "
          + (", ".join(f"{name} {u} s" for name, u in oc["top"]) or "none") + " |")
    w = d["wake_probe"]
    print(f"| beside them, a plain thread sleeping to 1 ms deadlines (wake_probe): woken more than one tick / "
          f"one tick + 2 ms late | {w['late_tick']} / {w['late_tick_2ms']} of {w['wakeups']} "
          f"({100 * w['late_tick'] / max(1, w['wakeups']):.2f} %; servers' judgements: "
          f"{100 * d['judged_later_than_one_tick'] / max(1, d['judged']):.2f} %), max {w['max_us'] / 1000:.1f} ms |")
    print(f"| late judgements in the quarter-second windows where the plain thread itself woke more than one tick "
          f"late (or in the window after one) | {c['judged_late_where_the_machine_missed']} of {c['judged_late']} "
          f"({c['windows_where_the_machine_missed']} of {c['windows']} windows) |")
    print(f"| other closes | {d['other_closes'] or 'none'} |")
    ok = (s["connections"] >= n and not s["liveness_closes"] and d["within_bounds"] and not d["other_closes"]
          and d["heartbeat_timeout_closes"] >= n and d["judged"] >= n and d["judged_early"] == 0
          and d["peer_side"]["closed"] == d["peer_side"]["observed"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
