"""fleet_bench.py — a fleet's deploy at full size (issue 58, point 6): Debian's HAProxy in front of N echo
servers over TLS, C clients through the balancer sending requests the whole time, and every server
restarted one by one — side by side with the same fleet of Go servers (bench/peers/go) restarted the
common way.

  heartwheel  echo_server --handover PATH --drain-window W --proxy-protocol behind `send-proxy-v2`: the
              new process takes its predecessor's listening socket, the old one asks each client to leave
              over W (BYE draining <ms>: the client comes back within the window, through the balancer)
              and exits once they have.
  go          peer_go (the Go server a user would write: goroutine per connection, crypto/tls) behind
              plain TCP: SIGTERM ends the process (Go's default), its connections drop with it, and the
              new process listens on the same port once the old one is gone.

Judged from the clients' side (one echo_client, the same for both: its JSON summary) and from the
balancer: requests answered or lost (failed when their connection closed under them, timed out, or
never answered), connects refused or reset, reconnects, and new sessions per second at the balancer
through the whole run (HAProxy's own counter, read from its stats socket every 100 ms: the plot). A
client reconnects when its server said BYE draining (within the named window) or, with --reconnect,
by its backoff when a connection dropped. The servers' own closes are read from their final lines.

This machine lets a process hold at most 20,000 descriptors; a balancer holds two per client, so one
HAProxy carries at most 9,000 clients here. 10,000 run through two balancers, each in front of every
server, half of the clients on each (one echo_client per balancer), as a fleet behind two balancers
(DNS or anycast over them) runs; the balancers' session counts are summed for the plot.
    python3 bench/fleet/fleet_bench.py [--clients 10000] [--servers 4] [--window 4000]
        [--systems heartwheel,go] [--out docs/fleet_bench.json] [--plot docs/fleet.png]
Prints Markdown (the "fleet" section of docs/benchmarks.md) and writes the JSON and, with matplotlib
(Debian's python3-matplotlib), the plot."""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
BUILD = os.environ.get("HEARTWHEEL_BUILD", os.path.join(ROOT, "build"))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
from balancer import HAProxy, free_port  # noqa: E402
from harness import make_cert, parse_stats  # noqa: E402
import peers  # noqa: E402

SERVER = os.path.join(BUILD, "examples", "echo_server")
CLIENT = os.path.join(BUILD, "examples", "echo_client")
SEND_INTERVAL_MS = 1000  # each client's request rate: C requests a second in all


def raise_nofile():
    import resource
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def first_line(proc, what):
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        proc.kill()
        raise SystemExit(f"{what} did not start: {line!r} {proc.stderr.read()}")


def heartwheel_server(port, cert, key, handover, window):
    p = subprocess.Popen([SERVER, "--listen", f"127.0.0.1:{port}", "--tls", "--cert", cert, "--key", key,
                          "--proxy-protocol", "--handover", handover, "--drain-window", str(window),
                          "--max-connections", "20000", "--reader-idle", "60000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=raise_nofile)
    first_line(p, "echo_server")
    return p


def go_server(port, cert, key):
    env = dict(os.environ, GOMAXPROCS="1")
    cmd = peers.command("go", {"reader_idle": 60000, "interval": 30000, "misses": 3, "tls": (cert, key)})
    cmd[cmd.index("--listen") + 1] = f"127.0.0.1:{port}"
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=raise_nofile)
    first_line(p, "peer_go")
    return p


def balancers(directory, ports, options, clients, n):
    """`n` HAProxy processes, each in front of every server, `clients` split between them (returned)."""
    share = [clients // n + (k < clients % n) for k in range(n)]
    lbs = []
    for k in range(n):
        os.makedirs(os.path.join(directory, f"lb{k}"))
        # Room for a restart's moves: a client back before the balancer has ended its old session
        # holds two for a moment (at maxconn HAProxy stops accepting); two descriptors per session.
        lbs.append(HAProxy(os.path.join(directory, f"lb{k}"), ports, options, maxconn=min(2 * share[k] + 100, 9500),
                           stats=True))
    return lbs, share


def sessions_timeline(lbs):
    """Samples the balancers' sessions since their start, summed, every 100 ms on a thread of its own:
    (the timeline it fills, the event that stops it, the thread)."""
    timeline, stop = [], threading.Event()

    def sample():
        t0 = time.monotonic()
        while not stop.is_set():
            try:
                timeline.append((round(time.monotonic() - t0, 2), sum(lb.sessions() for lb in lbs)))
            except OSError:
                pass
            stop.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    return timeline, stop, sampler


def merged(summaries):
    """The clients' summaries as one: counts added, closes by reason added."""
    out = {}
    for s in summaries:
        for k, v in s.items():
            if isinstance(v, dict):
                d = out.setdefault(k, {})
                for r, n in v.items():
                    d[r] = d.get(r, 0) + n
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                out[k] = out.get(k, 0) + v
    return out


def run(system, clients, n_servers, window, settle_s, n_balancers):
    with tempfile.TemporaryDirectory(prefix="heartwheel-fleet-") as d:
        cert, key = make_cert(d)
        ports = [free_port() for _ in range(n_servers)]
        handovers = [os.path.join(d, f"s{i}.handover") for i in range(n_servers)]
        if system == "heartwheel":
            start = lambda i: heartwheel_server(ports[i], cert, key, handovers[i], window)
            options = "send-proxy-v2 check check-send-proxy inter 500"
        else:
            start = lambda i: go_server(ports[i], cert, key)
            options = "check inter 500"
        servers = [start(i) for i in range(n_servers)]
        lbs, share = balancers(d, ports, options, clients, n_balancers)
        timeline, stop_sampling, sampler = sessions_timeline(lbs)
        t_start = time.monotonic()
        # Connect over ~2 s, settle, then restart each server in turn: each restart gets its window (the
        # drain; the Go servers' clients get as long to come back) and a settle; then a last settle, with
        # room for the last restart's process to go, before the clients stop.
        cycle_s = window / 1000 + settle_s
        duration_ms = int((2 + settle_s + n_servers * (cycle_s + 1) + settle_s) * 1000)
        client_procs = [subprocess.Popen(
            [CLIENT, "--connect", f"127.0.0.1:{lb.port}", "--tls", "--insecure", "--connections", str(n),
             "--connect-stagger-us", str(2_000_000 // n), "--send-interval", str(SEND_INTERVAL_MS),
             "--request-timeout", "5000", "--reconnect", "yes", "--duration", str(duration_ms), "--quiet"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=raise_nofile)
            for lb, n in zip(lbs, share)]
        finals, restarts = [], []
        time.sleep(2 + settle_s)
        for i in range(n_servers):
            at = round(time.monotonic() - t_start, 2)
            old = servers[i]
            if system == "heartwheel":
                servers[i] = start(i)  # takes the socket; the old one drains and exits
                out, err = old.communicate(timeout=window / 1000 + 30)
            else:
                old.send_signal(signal.SIGTERM)  # the common way: stop, then start anew on the port
                out, err = old.communicate(timeout=30)
                servers[i] = start(i)
            finals.append([l for l in out.splitlines() if l.startswith("final ")])
            took = time.monotonic() - t_start - at
            restarts.append({"server": i, "at_s": at, "took_s": round(took, 2)})
            time.sleep(max(0.0, cycle_s - took))
        outs = [c.communicate(timeout=duration_ms / 1000 + 60)[0] for c in client_procs]
        stop_sampling.set()
        sampler.join()
        for s in servers:  # their closes are the clients' exit: not counted
            s.send_signal(signal.SIGTERM)
            s.communicate(timeout=window / 1000 + 30)
        for lb in lbs:
            lb.__exit__(None, None, None)
    summary = merged(json.loads([l for l in out.splitlines() if l.startswith("{")][-1]) for out in outs)
    closes = {}
    for lines in finals:
        for line in lines:
            for reason, count in parse_stats(line)["closes"].items():
                closes[reason] = closes.get(reason, 0) + count
    keep = ("connects", "connect_failures", "reconnects", "requests", "responses", "timeouts", "failed_on_close",
            "retried", "unanswered_at_exit", "closed_by_server", "disconnects")
    return {"clients": clients, "servers": n_servers, "balancers": n_balancers, "window_ms": window, "restarts": restarts,
            "client": {k: summary.get(k) for k in keep}, "restarted_servers_closes": closes,
            "lost": summary["failed_on_close"] + summary["timeouts"],
            "sessions_timeline": timeline}


def per_second(timeline):
    """New sessions at the balancer in each second of the run."""
    out, last, second = [], 0, 1.0
    for t, total in timeline:
        while t >= second:
            out.append(total - last)
            last, second = total, second + 1.0
    return out


def restart_peak(r):
    """The most new sessions in one second from the first restart on (the first connects excluded)."""
    ps = per_second(r["sessions_timeline"])
    return max(ps[int(r["restarts"][0]["at_s"]):] or [0])


def markdown(res):
    rows = ["| | " + " | ".join(res) + " |", "|---|" + "---:|" * len(res)]
    get = lambda f: " | ".join(f(r) for r in res.values())
    rows += [
        "| requests sent | " + get(lambda r: f"{r['client']['requests']:,}") + " |",
        "| lost: failed as their connection closed, or timed out | " + get(lambda r: f"**{r['lost']:,}**") + " |",
        "| still in flight when the clients stopped (answered later or never) | " + get(lambda r: f"{r['client']['unanswered_at_exit']:,}") + " |",
        "| sent again after a BYE draining (never processed by the old server) | " + get(lambda r: f"{r['client']['retried']:,}") + " |",
        "| connects refused or reset | " + get(lambda r: f"{r['client']['connect_failures']:,}") + " |",
        "| reconnects (a client back on a server restarted later leaves again) | "
        + get(lambda r: f"{r['client']['reconnects']:,}") + " |",
        "| peak new sessions per second at the balancer during the restarts | "
        + get(lambda r: f"{restart_peak(r):,}") + " |",
        "| closes counted by the restarted processes (peer-closed: the balancer's health checks) | "
        + get(lambda r: ", ".join(f"{k} {v:,}" for k, v in sorted(r["restarted_servers_closes"].items())) or "not reported")
        + " |",
    ]
    return "\n".join(rows)


def plot(res, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4))
    for name, r in res.items():
        ps = per_second(r["sessions_timeline"])
        (line,) = ax.plot(range(len(ps)), ps, label=name, drawstyle="steps-post")  # second k: [k, k+1)
        for rs in r["restarts"]:
            ax.axvline(rs["at_s"], color=line.get_color(), linewidth=0.6, linestyle=":")
    ax.set_xlabel("seconds since the clients started (dotted, in its colour: one of its servers restarted)")
    ax.set_ylabel("new sessions per second at HAProxy")
    ax.set_title("A rolling restart of every server behind HAProxy, TLS clients reconnecting")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=10000)
    ap.add_argument("--servers", type=int, default=4)
    ap.add_argument("--window", type=int, default=4000, help="heartwheel's --drain-window (ms)")
    ap.add_argument("--settle", type=float, default=3.0, help="seconds between a restart's window and the next")
    ap.add_argument("--systems", default="heartwheel,go")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "fleet_bench.json"))
    ap.add_argument("--plot", default=os.path.join(ROOT, "docs", "fleet.png"))
    ap.add_argument("--plot-only", action="store_true", help="redraw the plot from --out")
    a = ap.parse_args()
    if a.plot_only:
        with open(a.out) as f:
            plot(json.load(f)["runs"], a.plot)
        return
    # A balancer holds two descriptors per client and a process here at most 20,000: 9,000 clients each.
    n_balancers = -(-a.clients // 9000)
    if "go" in a.systems:
        peers.build()
    res = {name: run(name, a.clients, a.servers, a.window, a.settle, n_balancers) for name in a.systems.split(",")}
    with open(a.out, "w") as f:
        json.dump({"clients": a.clients, "servers": a.servers, "balancers": n_balancers, "window_ms": a.window,
                   "send_interval_ms": SEND_INTERVAL_MS, "runs": res}, f, indent=1)
    try:
        plot(res, a.plot)
    except ImportError:  # this Python has no matplotlib: Debian's has
        subprocess.run(["/usr/bin/python3", __file__, "--plot-only", "--out", a.out, "--plot", a.plot], check=True)
    print(f"{a.clients:,} TLS clients through {'HAProxy' if n_balancers == 1 else f'{n_balancers} HAProxy balancers (each in front of every server, the clients split between them)'} "
          f"to {a.servers} servers, a request a second each; every server "
          f"restarted one by one (heartwheel: --handover, drain window {a.window} ms; Go: SIGTERM, then a new process). "
          f"Plot: docs/fleet.png.\n")
    print(markdown(res))
    print()
    print(json.dumps({k: {"lost": r["lost"], "connect_failures": r["client"]["connect_failures"],
                          "reconnects": r["client"]["reconnects"]} for k, r in res.items()}))


if __name__ == "__main__":
    main()
