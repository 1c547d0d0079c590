"""chat_fleet.py — the WebSocket chat's deploy at full size (issue 58, point 6): HAProxy in front of N
ws_chat_servers, M members through the balancers for the whole run — a few talking, every one listening
to its room (the process it reached) — and every server restarted one by one with --handover and a
drain window: the new process takes its predecessor's listening socket, the old one asks each member
to leave with close 1012 spread over the window, and they come back through a balancer after a random
delay within it (test/e2e/chat_members.py: what a client that honours 1012 does).

Judged from the members (each process of them prints its summary): no message lost between members
present (from one sender connection, every member's sequence whole between the first and the last it
got), connects that failed, closes other than 1012, reconnects against the 1012s; from the balancers:
new sessions per second through the run (HAProxy's counters, summed over the balancers, read every
100 ms: the plot); from the old processes: their closes. heartwheel only: the Go peer has no chat (a
Go WebSocket server would need a library outside Go's standard one), so the side by side with Go is
the echo fleet's (fleet_bench.py).

A balancer holds two descriptors per member and a process here at most 20,000: one HAProxy per 9,000
members, each in front of every server; a process of members per 2,500 (Python's asyncio reads a few
tens of thousands of messages a second: the talkers are few, so that every room's fan-out stays within
what the members' processes read on two cores shared with the servers).
    python3 bench/fleet/chat_fleet.py [--members 10000] [--servers 4] [--window 4000] [--talkers 40]
        [--period 5] [--out docs/chat_fleet.json] [--plot docs/chat_fleet.png]
Prints Markdown (the "chat_fleet" section of docs/benchmarks.md)."""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
BUILD = os.environ.get("HEARTWHEEL_BUILD", os.path.join(ROOT, "build"))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
sys.path.insert(0, HERE)
from balancer import free_port  # noqa: E402
from fleet_bench import balancers, first_line, per_second, raise_nofile, sessions_timeline  # noqa: E402

CHAT = os.path.join(BUILD, "examples", "ws_chat_server")
MEMBERS = os.path.join(ROOT, "test", "e2e", "chat_members.py")
PER_PROCESS = 2500
RAMP_S = 4.0  # the members' first connects spread over this


def chat_server(port, handover, window):
    p = subprocess.Popen([CHAT, "--listen", f"127.0.0.1:{port}", "--proxy-protocol", "--handover", handover,
                          "--drain-window", str(window), "--max-connections", "20000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=raise_nofile)
    first_line(p, "ws_chat_server")
    return p


def final_closes(out):
    """The closes and messages of a ws_chat_server's final line ("final closes=r:n,... messages=n")."""
    line = [l for l in out.splitlines() if l.startswith("final ")][0]
    fields = dict(part.split("=", 1) for part in line.split()[1:])
    closes = {} if fields["closes"] == "none" else {
        r: int(n) for r, n in (c.rsplit(":", 1) for c in fields["closes"].split(","))}
    return closes, int(fields["messages"])


def run(members, n_servers, window, talkers, period, settle_s):
    with tempfile.TemporaryDirectory(prefix="heartwheel-chat-fleet-") as d:
        ports = [free_port() for _ in range(n_servers)]
        handovers = [os.path.join(d, f"c{i}.handover") for i in range(n_servers)]
        servers = [chat_server(ports[i], handovers[i], window) for i in range(n_servers)]
        n_lbs = -(-members // 9000)
        n_procs = max(n_lbs, -(-members // PER_PROCESS))
        lbs, _ = balancers(d, ports, "send-proxy-v2 check check-send-proxy inter 500", members, n_lbs)
        timeline, stop_sampling, sampler = sessions_timeline(lbs)
        t_start = time.monotonic()
        cycle_s = window / 1000 + settle_s
        seconds = RAMP_S + settle_s + n_servers * (cycle_s + 1) + settle_s
        share = [members // n_procs + (k < members % n_procs) for k in range(n_procs)]
        procs, first = [], 0
        for k, count in enumerate(share):
            procs.append(subprocess.Popen(
                ["/usr/bin/python3", MEMBERS, str(lbs[k % n_lbs].port), str(first), str(count), str(seconds),
                 str(window), "--talkers", str(talkers), "--period", str(period), "--ramp", str(RAMP_S)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=raise_nofile))
            first += count
        finals, restarts = [], []
        time.sleep(RAMP_S + settle_s)
        for i in range(n_servers):
            at = round(time.monotonic() - t_start, 2)
            old = servers[i]
            servers[i] = chat_server(ports[i], handovers[i], window)  # takes the socket; the old one drains
            out, _ = old.communicate(timeout=window / 1000 + 30)
            finals.append(final_closes(out))
            took = time.monotonic() - t_start - at
            restarts.append({"server": i, "at_s": at, "took_s": round(took, 2)})
            time.sleep(max(0.0, cycle_s - took))
        summaries = []
        for p in procs:
            out, err = p.communicate(timeout=seconds + 120)
            lines = [l for l in out.splitlines() if l.startswith("{")]
            if not lines:
                raise SystemExit(f"a members' process printed no summary: {err[-2000:]}")
            summaries.append(json.loads(lines[-1]))
        stop_sampling.set()
        sampler.join()
        for s in servers:
            s.send_signal(signal.SIGTERM)
            s.communicate(timeout=window / 1000 + 30)
        for lb in lbs:
            lb.__exit__(None, None, None)
    closes = {}
    for c, _ in finals:
        for reason, n in c.items():
            closes[reason] = closes.get(reason, 0) + n
    codes = {}
    for s in summaries:
        for code, n in s["closes"].items():
            codes[code] = codes.get(code, 0) + n
    drain_times = sorted(t for s in summaries for t in s["drain_closes_at"])
    return {"members": members, "servers": n_servers, "balancers": n_lbs, "member_processes": n_procs,
            "window_ms": window, "talkers": talkers, "period_s": period, "restarts": restarts,
            "sent": sum(s["sent"] for s in summaries), "delivered": sum(s["delivered"] for s in summaries),
            "pairs": sum(s["pairs"] for s in summaries), "holes": sum(s["holes"] for s in summaries),
            "hole_examples": [h for s in summaries for h in s["hole_examples"]][:5],
            "member_closes": codes, "reconnects": sum(s["reconnects"] for s in summaries),
            "connect_failures": sum(s["connect_failures"] for s in summaries),
            "reconnects_match_1012": all(s["reconnects_matching_1012"] for s in summaries),
            "told_to_leave": sum(c.get("draining", 0) for c, _ in finals),
            "restarted_servers_closes": closes, "restarted_servers_messages": sum(m for _, m in finals),
            "drain_closes_spread_s": round(drain_times[-1] - drain_times[0], 2) if drain_times else None,
            # Closes other than 1012, each [seconds since the start, code, reason, the member's
            # connection count, when that connection was made]: where they fell against the restarts.
            "other_closes": sorted([round(t - t_start, 3), c, r, e, round(at - t_start, 3)]
                                   for s in summaries for t, c, r, e, at in s["other_closes_at"])[:50],
            "sessions_timeline": timeline}


def markdown(r):
    ps = per_second(r["sessions_timeline"])
    peak = max(ps[int(r["restarts"][0]["at_s"]):] or [0])
    other = {k: v for k, v in r["member_closes"].items() if k != "1012"}
    rows = ["| | heartwheel ws_chat_server |", "|---|---:|",
            f"| messages sent by the talkers / delivered to members | {r['sent']:,} / {r['delivered']:,} |",
            f"| sender connections a member heard, and of those with a message missing between the first and the last it got | "
            f"{r['pairs']:,} / **{r['holes']:,}** |",
            f"| closes 1012 the members got / the old processes' draining closes | {r['member_closes'].get('1012', 0):,} / "
            f"{r['told_to_leave']:,} |",
            f"| every member came back once per 1012 | {'yes' if r['reconnects_match_1012'] else '**no**'} "
            f"({r['reconnects']:,} reconnects) |",
            f"| closes other than 1012 the members got | {', '.join(f'{k}: {v:,}' for k, v in other.items()) or 'none'} |",
            f"| connects that failed | {r['connect_failures']:,} |",
            f"| peak new sessions per second at the balancers during the restarts | {peak:,} |",
            "| closes counted by the restarted processes (peer-closed: the balancers' health checks) | "
            + ", ".join(f"{k} {v:,}" for k, v in sorted(r["restarted_servers_closes"].items())) + " |"]
    return "\n".join(rows)


def plot(r, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 4))
    ps = per_second(r["sessions_timeline"])
    ax.plot(range(len(ps)), ps, drawstyle="steps-post", label="heartwheel ws_chat_server")
    for rs in r["restarts"]:
        ax.axvline(rs["at_s"], linewidth=0.6, linestyle=":")
    ax.set_xlabel("seconds since the members started (dotted: a server restarted)")
    ax.set_ylabel("new sessions per second at the balancers")
    ax.set_title(f"A rolling restart of every chat server, {r['members']:,} WebSocket members coming back")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, default=10000)
    ap.add_argument("--servers", type=int, default=4)
    ap.add_argument("--window", type=int, default=4000, help="ws_chat_server's --drain-window (ms)")
    ap.add_argument("--talkers", type=int, default=40)
    ap.add_argument("--period", type=float, default=5.0, help="seconds between a talker's messages")
    ap.add_argument("--settle", type=float, default=3.0)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "chat_fleet.json"))
    ap.add_argument("--plot", default=os.path.join(ROOT, "docs", "chat_fleet.png"))
    ap.add_argument("--plot-only", action="store_true")
    a = ap.parse_args()
    if a.plot_only:
        with open(a.out) as f:
            plot(json.load(f), a.plot)
        return 0
    r = run(a.members, a.servers, a.window, a.talkers, a.period, a.settle)
    with open(a.out, "w") as f:
        json.dump(r, f, indent=1)
    try:
        plot(r, a.plot)
    except ImportError:
        subprocess.run(["/usr/bin/python3", __file__, "--plot-only", "--out", a.out, "--plot", a.plot], check=True)
    print(f"{r['members']:,} WebSocket members through {r['balancers']} HAProxy balancer(s) to {r['servers']} "
          f"ws_chat_servers ({r['member_processes']} processes of members; {r['talkers']} talkers, a message each "
          f"{r['period_s']:g} s to their room); every server restarted one by one (--handover, drain window "
          f"{r['window_ms']} ms). Plot: docs/{os.path.basename(a.plot)}.\n")
    print(markdown(r))
    print()
    print(json.dumps({"holes": r["holes"], "connect_failures": r["connect_failures"], "reconnects": r["reconnects"],
                      "told_to_leave": r["told_to_leave"]}))
    ok = (r["holes"] == 0 and r["connect_failures"] == 0 and r["reconnects_match_1012"]
          and set(r["member_closes"]) <= {"1012"} and r["member_closes"].get("1012", 0) == r["told_to_leave"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
