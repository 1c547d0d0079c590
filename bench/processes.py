"""processes.py — what the benchmarks that run real servers side by side share (bench/mqtt/run.py,
bench/http/nginx.py): a free port, the descriptor limit raised to its hard value, a process's RSS and
CPU from /proc, the median of a figure over rounds, the commit and a Debian package's version to
name in a report, and the order of alternated rounds."""
import os
import resource
import socket
import statistics
import subprocess

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raise_nofile():
    """The soft descriptor limit up to the hard one (here and, as a preexec_fn, in a server)."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid):
    """User + system CPU of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def median_at(rounds, *path):
    """The median over `rounds` of the figure at `path` (keys into each round's dict); NaN if none has it."""
    values = []
    for r in rounds:
        v = r
        for p in path:
            v = v.get(p) if isinstance(v, dict) else None
        if v is not None:
            values.append(v)
    return statistics.median(values) if values else float("nan")


def build_id():
    return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()


def package_version(name):
    return subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], capture_output=True, text=True).stdout


def alternated(rounds, systems):
    """(round, system) in the order the rounds run: each round starts with the other system."""
    for i in range(rounds):
        for s in (systems if i % 2 == 0 else tuple(reversed(systems))):
            yield i, s


def run_rounds(systems, rounds, prefix, run_one):
    """Runs run_one(system, workdir) for each system in alternated rounds, in one scratch directory,
    printing each round's JSON line to stderr as it ends; returns the rounds."""
    import json
    import sys
    import tempfile
    done = []
    with tempfile.TemporaryDirectory(prefix=prefix) as workdir:
        for _, system in alternated(rounds, systems):
            r = run_one(system, workdir)
            print(json.dumps(r), file=sys.stderr)
            done.append(r)
    return done


def write_result(result, path, report):
    """Writes the raw result as JSON to `path` and prints its report table (for put_section.py)."""
    import json
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(report(result))
