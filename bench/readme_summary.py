"""readme_summary.py — the README's Performance list, written from the runs' own records: every figure
in it comes from a JSON file a benchmark's command wrote (docs/*.json) or from the JSON line a command
wrote into its section of docs/benchmarks.md, never from a hand edit. Each benchmark command that
changes one of those records runs this script after it; the test command runs it with --check, which
fails when the README says something its records do not (a figure edited by hand, or a record
re-measured without the README following).

Every comparison is worded from the figures: "the fewest", "the best" and the like only when the
record says so, and a target the record misses is said as missed.
    python3 bench/readme_summary.py [--check] [--root DIR]"""
import argparse
import json
import os
import re
import sys
import textwrap

BEGIN, END = "<!-- performance begin -->\n", "<!-- performance end -->"
PEERS = ("netty", "go", "node")
NAMES = {"netty": "Netty", "go": "Go", "node": "Node"}


def load(root, name):
    with open(os.path.join(root, "docs", name)) as f:
        return json.load(f)


def section_json(root, section):
    """The JSON line a command wrote into its section of docs/benchmarks.md."""
    with open(os.path.join(root, "docs", "benchmarks.md")) as f:
        page = f.read()
    m = re.search(f"<!-- {section} begin -->(.*?)<!-- {section} end -->", page, re.S)
    if not m:
        raise SystemExit(f"readme_summary: docs/benchmarks.md has no {section} section")
    lines = [l for l in m.group(1).splitlines() if l.startswith("{")]
    return json.loads(lines[-1])


def n(v):
    return f"{v:,.0f}"


def pct(v):
    return f"{v + 0.0:+.1f}%"  # + 0.0: a -0.0 says +0.0


def bullet(text):
    """One list item, wrapped as the README's lines are."""
    return textwrap.fill(" ".join(text.split()), width=104, initial_indent="- ", subsequent_indent="  ",
                         break_on_hyphens=False) + "\n"


def micro(root):
    d = load(root, "micro_timers.json")
    ns = {}
    for b in d["benchmarks"]:
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        op, system, size = b["name"].split("/")[:3]
        if "ns_per_op" in b:
            ns[(op, system, size)] = b["ns_per_op"]
    e = lambda s: ns[("expire", s, "1000000")]
    r = lambda s: ns[("rearm", s, "1000000")]
    return (bullet(f"**Expiry** at 1,000,000 live timers armed in random memory order: {e('heartwheel'):.0f} ns per fired "
                   f"timer, against {e('asio'):.0f} for `asio::steady_timer`, {e('libev'):.0f} for libev and "
                   f"{e('libevent-common'):.0f} for libevent (common timeouts).")
            + bullet(f"**Re-arming an idle deadline**: {r('heartwheel'):.0f} ns against {r('asio'):.0f} for `steady_timer`; "
                     "`touch`, what a read does, is one store."))


def end_to_end(root):
    e = load(root, "e2e_bench.json")
    s = e["summary"]["1000"]
    idle = e["idle"]["wheel"]
    p = load(root, "peers_bench.json")
    wakes = idle["wakeups_per_s"]
    out = (f"**End to end**, what liveness adds to a server's CPU per response: {pct(s['wheel']['overhead_pct'])} for the "
           f"wheel against {pct(s['asio']['overhead_pct'])} for one `steady_timer` per socket at 1,000 connections; "
           + (f"{n(idle['connections'])} idle connections do not wake the server." if wakes == 0 else
              f"{n(idle['connections'])} idle connections wake the server {wakes:g} times a second.") + " ")
    ratios = []
    for conns in ("1000", "10000"):
        load_ = p["load"][conns]
        ours = load_["heartwheel"]["cpu_us_per_response"]
        best = min(PEERS, key=lambda k: load_[k]["cpu_us_per_response"])
        h = load_["heartwheel"]
        ratios.append((conns, ours / load_[best]["cpu_us_per_response"], NAMES[best], int(conns) * 1000 / h["interval_ms"]))
    idle_b = {k: v["bytes_per_conn"] for k, v in p["idle"].items()}
    tls_b = {k: v["bytes_per_conn"] for k, v in p["tls"].items()}
    death = {k: v["p50_ms"] for k, v in p["death"].items()}
    rank = lambda d: sorted(d, key=d.get).index("heartwheel") + 1
    words = {1: "the fewest", 2: "second", 3: "third", 4: "the most"}
    peers_idle = [idle_b[k] for k in PEERS]
    peers_tls = sorted(tls_b[k] for k in PEERS)
    out += ("Against the same server on Netty, Go or Node (the best of them each time): "
            + " and ".join(f"{r:.2f}× {who}'s CPU per response at {n(int(c))} connections" for c, r, who, _ in ratios)
            + (f" ({n(ratios[0][3])} lines/s offered at both); " if ratios[0][3] == ratios[1][3]
               else f" ({n(ratios[0][3])} and {n(ratios[1][3])} lines/s offered); "))
    out += (f"{words[rank(idle_b)]} bytes per idle connection ({n(idle_b['heartwheel'])} against "
            f"{n(min(peers_idle))}–{n(max(peers_idle))}); over TLS {n(tls_b['heartwheel'])}, {words[rank(tls_b)]} of the four "
            f"(the others {', '.join(n(v) for v in peers_tls)}); ")
    fastest = rank(death) == 1
    observed = p["death"]["heartwheel"]["observed"]
    peers_death = [death[k] for k in PEERS]
    out += (f"{'the fastest' if fastest else 'not the fastest'} to close {n(observed)} dead peers as they see it "
            f"(median {death['heartwheel']:.2f} ms after the policy's time, against "
            f"{min(peers_death):.1f}–{max(peers_death):.1f}). ")
    st = load(root, "storm_bench.json")
    runs = {k: v["storm"] for k, v in st["runs"]["tls"].items()}
    ours = runs["heartwheel"]
    est = ours["established"]
    best = max(runs, key=lambda k: runs[k]["goodput_per_s"])
    others = sorted(PEERS, key=lambda k: -runs[k]["goodput_per_s"])
    out += (f"A storm of {n(st['connections'])} TLS connects offered at {n(st['rate'])} a second: "
            f"{'all' if est == st['connections'] else n(est)} established, 99 % by {ours['t99_s']:g} s, "
            + ("at the best goodput of the four" if best == "heartwheel" else f"at {ours['goodput_per_s'] / runs[best]['goodput_per_s']:.2f}× {NAMES[best]}'s goodput")
            + " ("
            + ", ".join(f"{NAMES[k]} {runs[k]['goodput_per_s'] / ours['goodput_per_s']:.2f}×" for k in others)
            + " of ours).")
    return bullet(out)


def footprint(root):
    f = section_json(root, "footprint")
    return bullet(f"**Footprint**: {n(f['total'])} bytes of server user space per idle TCP connection with reader idle, "
                  f"heartbeat and max age on ({n(f['connections'])} connections); {n(f['lean_tls_total'])} per idle "
                  f"TLS 1.3 connection over `net::tls_socket` with lean records (OpenSSL's state freed after the "
                  f"handshake), {n(f['tls_total'])} with OpenSSL's state kept, {n(f['asio_tls_total'])} over Asio's "
                  f"`ssl::stream`.")


def precision(root):
    d = load(root, "scale_bench.json")
    death = d["death"]
    early = death["judged_early"]
    within = death["each_within_one_tick"]
    return bullet(f"**Precision**: at {n(d['steady']['connections'])} connections whose peers all stop answering, "
            f"{n(death['judged'])} deaths judged: "
            + ("none before its deadline" if early == 0 else f"**{n(early)} before their deadline**")
            + (f", each within one {d['tick_ms']} ms tick of it" if within
               else f", {n(death['judged_later_than_one_tick'])} later than one {d['tick_ms']} ms tick")
            + ".")


def million(root):
    """The million live connections (docs/c1m_bench.json), when it was run; its targets said met or missed."""
    if not os.path.exists(os.path.join(root, "docs", "c1m_bench.json")):
        return ""
    d = load(root, "c1m_bench.json")
    s, death = d["steady"], d["death"]
    per = s["server_rss_per_connection_bytes"]
    p99 = death["judgement_lateness_p99_ms_at_most"]
    return bullet(f"**A million**: {n(s['connections'])} live TCP connections on this machine, "
                  f"{s['server_processes']} `--reuse-port` servers and as many clients (a process may hold 20,000 "
                  f"descriptors here), up in {s['connect_seconds']:g} s: {n(per)} bytes of server RSS per connection "
                  + ("(the target, at most 1 KiB, met)" if per <= 1024 else "(the target, at most 1 KiB, **missed**)")
                  + f", {n(s['kernel_slab_per_socket_bytes'])} of kernel slab per socket; "
                  f"{n(s['heartbeats_per_s'])} heartbeats a second answered at "
                  f"{s['cpu_ms_per_1000_heartbeats']:g} ms of server CPU per 1,000; every peer then silent: "
                  f"{n(death['judged'])} deaths judged, "
                  + ("none early" if death["judged_early"] == 0 else f"**{n(death['judged_early'])} early**")
                  + f", the 99th percentile within ≤ {p99:g} ms of its deadline "
                  + (f"(within one {d['tick_ms']} ms tick: met)." if p99 is not None and p99 <= d["tick_ms"]
                     else f"(one {d['tick_ms']} ms tick: **missed**)."))


TAIL = """- **Beside the servers users already run**: `mqtt_server` against Debian's mosquitto (idle memory per
  device, CPU per delivered message, how late silent devices are closed) and `http_server` against
  nginx (idle kept-alive memory, wrk's rate, close lateness, slowloris): the tables on the
  [benchmarks page](docs/benchmarks.md), written by `bash bench/mqtt/run.sh` and `bash bench/http/nginx.sh`.
"""


def summary(root):
    return ("On a shared 2-core VM, every figure side by side in one run ([benchmarks](docs/benchmarks.md)); this\n"
            "list is written from those runs' records by `python3 bench/readme_summary.py`:\n"
            + micro(root) + end_to_end(root) + footprint(root) + precision(root) + million(root) + TAIL)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="fail when the README differs from its records")
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    args = ap.parse_args()
    path = os.path.join(args.root, "README.md")
    with open(path) as f:
        readme = f.read()
    a, b = readme.find(BEGIN), readme.find(END)
    if a < 0 or b < a:
        raise SystemExit("readme_summary: README.md has no performance markers")
    text = summary(args.root)
    current = readme[a + len(BEGIN):b]
    if args.check:
        if current != text:
            print("README.md's Performance list differs from the runs' records; it should read:\n" + text)
            return 1
        print("README.md's Performance list matches the runs' records")
        return 0
    with open(path, "w") as f:
        f.write(readme[:a + len(BEGIN)] + text + readme[b:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
