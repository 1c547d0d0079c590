"""peers.py — the servers a user would pick instead of heartwheel, started the same way (issue 34).

Each speaks echo_server's protocol with the same policy: echo data lines, PING x -> PONG x, PONG
consumed, a PING after --heartbeat-interval of receiving nothing, "BYE heartbeat-timeout" at the
--heartbeat-misses-th unanswered PING (one interval each: death at the first unanswered PING +
misses x interval), "BYE reader-idle" after --reader-idle without a data line. Each prints
"listening on HOST:PORT" first. `build()` compiles the Go and Java ones into BUILD_DIR (install.sh
installs their toolchains); `start(name, policy)` returns (Popen, port)."""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
BUILD = os.environ.get("HEARTWHEEL_BUILD", os.path.join(ROOT, "build"))
OUT = os.path.join(BUILD, "bench", "peers")
NETTY_JARS = ["netty-common", "netty-buffer", "netty-transport", "netty-codec", "netty-handler", "netty-resolver"]
CLASSPATH = ":".join(f"/usr/share/java/{j}.jar" for j in NETTY_JARS)
NAMES = ("heartwheel", "netty", "go", "node")

sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from e2e_bench import stop  # noqa: E402,F401  (terminate, then kill: the e2e bench's own)


def build():
    os.makedirs(OUT, exist_ok=True)
    env = dict(os.environ, GOCACHE=os.path.join(OUT, "gocache"), GO111MODULE="off")
    subprocess.run(["go", "build", "-o", os.path.join(OUT, "peer_go"), os.path.join(HERE, "go", "main.go")],
                   check=True, env=env)
    subprocess.run(["javac", "-d", os.path.join(OUT, "netty"), "-cp", CLASSPATH,
                    os.path.join(HERE, "netty", "PeerNetty.java")], check=True)
    for tool in ("node", "java"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed: run bash bench/peers/install.sh")


def certificate():
    """A fresh throwaway P-256 certificate for 127.0.0.1 and localhost (the e2e tests' make_cert), in
    the build directory: (cert, key)."""
    sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
    from harness import make_cert  # noqa: E402
    os.makedirs(OUT, exist_ok=True)
    return make_cert(OUT)


def command(name, policy):
    """policy: dict with reader_idle, interval, misses (ms, ms, count), and optionally tls: (cert, key)."""
    common = ["--listen", "127.0.0.1:0", "--reader-idle", str(policy["reader_idle"]),
              "--heartbeat-interval", str(policy["interval"]), "--heartbeat-misses", str(policy["misses"])]
    if policy.get("tls"):
        common += ["--tls", "--cert", policy["tls"][0], "--key", policy["tls"][1]]
    if name == "heartwheel":
        return [os.path.join(BUILD, "examples", "echo_server"), "--drain-window", "0", *common,
                "--heartbeat-timeout", str(policy["interval"]), *policy.get("heartwheel_flags", [])]
    if name == "go":
        return [os.path.join(OUT, "peer_go"), *common]
    if name == "node":
        return ["node", os.path.join(HERE, "node", "server.js"), *common]
    if name == "netty":
        return ["java", *policy.get("jvm_flags", []), "-cp", f"{os.path.join(OUT, 'netty')}:{CLASSPATH}", "PeerNetty",
                *common]
    raise ValueError(name)


def start(name, policy):
    env = dict(os.environ)
    if name == "go":
        env["GOMAXPROCS"] = "1"  # one thread runs the connections, as in the other servers
    p = subprocess.Popen(command(name, policy), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = p.stdout.readline()
    if not line.startswith("listening on "):
        p.kill()
        raise SystemExit(f"{name} did not start: {line!r} {p.stderr.read()}")
    return p, int(line.strip().rsplit(":", 1)[1])


