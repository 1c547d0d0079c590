#!/usr/bin/env python3
"""demo.py — a scripted scene with echo_server and echo_client that a person can follow.

Starts the server on a free port and shows, as they happen: healthy clients echoing, a silent client
closed for reader-idle, a client that stops answering pings closed for heartbeat-timeout, a request
that times out, a client reconnecting with growing backoff while the server is restarted (a drain: each client asked
to leave over 1.5 s), and an
overload moment: a flood of idle connections near --max-connections shed at the scaled reader-idle
timeout while healthy clients keep working (and the same limit filled from one address, which moves
nobody's timeouts: its source share), and a WebSocket chat whose idle and
unresponsive clients get close frames naming the reason, whose flooding member is slowed to its
readers' pace and whose idle connections cost a few KiB each (demo_ws.py), the same chat with headless Chromium pages as its clients (its own page
served on its port, pings answered by the browser, a drain shown in the page: demo_browser.py), HTTP keep-alive, a storm of TLS connects served past a handshake bound
of 20 while connections that never send a ClientHello are shed (the listener's admission), 1,000 TLS
connections' memory with lean records and with OpenSSL's state kept, and a
server out of descriptors refusing, resting and serving again (net::listener), a restart that refuses no connect (--handover: the new process takes the listening socket, the old
one drains into it), MQTT devices each closed at 1.5 x the keep-alive they announced (mosquitto's
clients publishing and subscribing beside them), and HAProxy in front
speaking the PROXY protocol (per-source limits see each client, not the balancer). Prints a summary,
then stops everything it started."""
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "e2e"))
from harness import make_cert, rss_mib  # noqa: E402  (the tests' throwaway certificate; a process's RSS)

BUILD = os.environ.get("HEARTWHEEL_BUILD", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
SERVER = os.path.join(BUILD, "examples", "echo_server")
CLIENT = os.path.join(BUILD, "examples", "echo_client")
T0 = time.monotonic()
LOCK = threading.Lock()
PROCS = []
SERVER_FLAGS = ["--reader-idle", "3000", "--heartbeat-interval", "500", "--heartbeat-timeout", "400",
                "--heartbeat-misses", "3", "--stats-interval", "2000", "--drain-window", "1500"]


def say(who, what):
    with LOCK:
        print(f"[{time.monotonic() - T0:5.1f}s] {who:<12} {what}", flush=True)


def relay(stream, who, keep=None):
    for line in stream:
        line = line.rstrip("\n")
        if keep is not None:
            keep.append(line)
        if line.startswith("{"):
            continue  # the JSON summary is printed at the end
        say(who, line)


def start_server(port=0, flags=SERVER_FLAGS):
    proc = subprocess.Popen([SERVER, "--listen", f"127.0.0.1:{port}", *flags], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    PROCS.append(proc)
    first = proc.stdout.readline().strip()
    if not first.startswith("listening on"):
        raise SystemExit(f"server did not start: {first}")
    say("server", first)
    lines = []
    threading.Thread(target=relay, args=(proc.stdout, "server", lines), daemon=True).start()
    return proc, int(first.rsplit(":", 1)[1]), lines


def start_client(name, *flags):
    proc = subprocess.Popen([CLIENT, *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    PROCS.append(proc)
    out = []
    threading.Thread(target=relay, args=(proc.stderr, name), daemon=True).start()
    threading.Thread(target=relay, args=(proc.stdout, name, out), daemon=True).start()
    return proc, out


def raw_peer(name, port, answer_pings, results):
    """A hand-driven peer: sends one line, then stays silent; optionally answers PINGs."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"hello from " + name.encode() + b"\n")
    buf, start = b"", time.monotonic()
    while time.monotonic() - start < 10:
        ready, _, _ = select.select([s], [], [], 0.5)
        if not ready:
            continue
        chunk = s.recv(4096)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            text = line.decode()
            if text.startswith("PING "):
                if answer_pings:
                    s.sendall(b"PONG " + line[5:] + b"\n")
                    say(name, f"got {text}, answered PONG")
                else:
                    say(name, f"got {text}, ignoring it")
            elif text.startswith("BYE "):
                say(name, f"server said {text} after {time.monotonic() - start:.1f}s")
                results[name] = text
            else:
                say(name, f"echo: {text}")
    s.close()


OVERLOAD_FLAGS = ["--max-connections", "100", "--reader-idle", "8000", "--reader-idle-min", "1000",
                  "--overload-threshold", "0.5", "--stats-interval", "1000"]


def overload_scene():
    """90 silent connections from 90 addresses fill a server with --max-connections 100 while 5 healthy
    ones work: reader-idle (8 s) is scaled towards its 1 s min, so the flood is shed in about 2 s. (From
    one address the flood would be that address's excess beyond its share — a tenth of the limit by
    default — which moves nobody's timeouts: the quiet peers of others never pay for one source.)"""
    print()
    server, port, lines = start_server(flags=OVERLOAD_FLAGS)
    print(f"  server policy: {' '.join(OVERLOAD_FLAGS)}\n")
    say("scene", "overload: 5 healthy clients work while 90 silent connections from 90 addresses fill the server to 95 %")
    healthy, out = start_client("healthy", "--connect", f"127.0.0.1:{port}", "--connections", "5",
                                "--send-interval", "200", "--request-timeout", "1000", "--duration", "4500", "--quiet")
    time.sleep(0.3)
    flood, start = [], time.monotonic()
    for i in range(90):  # one each from 127.0.1.1..90: every address within its share (10)
        flood.append(socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(f"127.0.1.{i + 1}", 0)))
    say("flood", "90 silent connections open; unscaled they would be closed after 8 s")
    shed, byes = [], 0
    while len(shed) < len(flood) and time.monotonic() - start < 9:
        ready, _, _ = select.select([s for s in flood if s not in shed], [], [], 0.2)
        for s in ready:  # readable: the goodbye, or the close
            byes += s.recv(100).startswith(b"BYE reader-idle")
            shed.append(s)
            if len(shed) in (1, len(flood)):
                say("flood", f"{len(shed)} of 90 closed by the server after {time.monotonic() - start:.1f}s")
    for s in flood:
        s.close()
    newcomer = socket.create_connection(("127.0.0.1", port), timeout=5)
    newcomer.sendall(b"new here\n")
    served = newcomer.recv(100) == b"new here\n"
    newcomer.close()
    say("newcomer", "served" if served else "NOT served")
    healthy.wait(timeout=20)
    time.sleep(0.2)
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=10)
    summary = next((json.loads(l) for l in reversed(out) if l.startswith("{")), {})
    final = next((l for l in lines if l.startswith("final ")), "(no final line)")
    print("\n=== overload summary ===")
    print(f"flood: {len(shed)} of 90 shed ({byes} with BYE reader-idle); newcomer served: {served}")
    print(f"healthy (5 connections): requests={summary.get('requests')}, responses={summary.get('responses')}, "
          f"timeouts={summary.get('timeouts')}, closed_by_server={summary.get('closed_by_server')}")
    print("server:", final)
    return (byes == 90 and served and summary.get("timeouts") == 0 and not summary.get("closed_by_server")
            and summary.get("requests") == summary.get("responses"))


def one_source_scene():
    """The same server filled to its limit from one address: that address's connections beyond its
    share (a tenth of --max-connections by default) are its excess, which scales no one's timeouts, so
    the quiet peers of others keep their full 8 s; a newcomer from another address takes the place of
    the flooding address's newest connection (BYE over-share) instead of being refused."""
    say("scene", "one address (127.0.0.9) fills the server to its limit while 5 quiet peers from 127.0.0.1 idle")
    server, port, lines = start_server(flags=OVERLOAD_FLAGS)
    quiet = []
    for _ in range(5):
        q = socket.create_connection(("127.0.0.1", port), timeout=5)
        q.sendall(b"hello\n")
        q.recv(100)
        quiet.append(q)
    flood = [socket.create_connection(("127.0.0.1", port), timeout=5, source_address=("127.0.0.9", 0))
             for _ in range(95)]
    time.sleep(2.5)  # scaled as in the scene before, the quiet peers would be closed after about 1 s
    quiet_closed = len(select.select(quiet, [], [], 0)[0])
    say("quiet", f"{quiet_closed} of 5 closed after 2.5 s at 100 % of the limit (their reader-idle stays 8 s)")
    newcomer = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=("127.0.0.2", 0))
    newcomer.sendall(b"let me in\n")
    served = newcomer.recv(100) == b"let me in\n"
    ready, _, _ = select.select(flood, [], [], 1.0)
    displaced = sum(s.recv(100).startswith(b"BYE over-share") for s in ready)
    say("newcomer", f"from 127.0.0.2: {'served' if served else 'NOT served'}; "
                    f"{displaced} of 127.0.0.9's connections told BYE over-share")
    for s in quiet + flood + [newcomer]:
        s.close()
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=10)
    return quiet_closed == 0 and served and displaced == 1


def handover_scene():
    """A restart that refuses no connect: the new process takes the old one's listening socket
    (--handover PATH, SCM_RIGHTS), the old one drains its clients into it; a client connecting 500
    times a second meanwhile is never refused."""
    import tempfile
    say("scene", "a restart with --handover: the new process takes the listening socket, the old one drains")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "echo.handover")
        flags = ["--handover", path, "--drain-window", "800", "--stats-interval", "0"]
        old, port, _ = start_server(flags=flags)
        keeper, keeper_out = start_client("kept", "--connect", f"127.0.0.1:{port}", "--send-interval", "100",
                                          "--reconnect", "yes", "--duration", "3000", "--quiet", "--verbose")
        counts, running = {"echoed": 0, "refused": 0, "other": 0}, [True]

        def knock():
            n = 0
            while running[0]:
                n += 1
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
                        s.sendall(b"knock %d\n" % n)
                        counts["echoed" if s.recv(100) == b"knock %d\n" % n else "other"] += 1
                except ConnectionRefusedError:
                    counts["refused"] += 1
                except OSError:
                    counts["other"] += 1
                time.sleep(0.002)

        knocker = threading.Thread(target=knock)
        knocker.start()
        time.sleep(0.8)
        new, new_port, _ = start_server(flags=flags)
        old.wait(timeout=10)
        say("restart", f"the old process exited ({old.returncode}) after its drain; the new one listens on the same port "
                       f"{new_port}")
        time.sleep(0.8)
        running[0] = False
        knocker.join()
        keeper.wait(timeout=10)
        new.send_signal(signal.SIGTERM)
        new.wait(timeout=10)
    summary = next((json.loads(l) for l in reversed(keeper_out) if l.startswith("{")), {})
    say("restart", f"connects meanwhile: {counts['echoed']} echoed, {counts['refused']} refused, {counts['other']} other; "
                   f"the kept client reconnected {summary.get('reconnects')} time(s), "
                   f"{summary.get('requests')} requests, {summary.get('responses')} responses")
    return (counts["refused"] == 0 and counts["other"] == 0 and counts["echoed"] > 100 and old.returncode == 0
            and summary.get("reconnects") == 1 and summary.get("requests") == summary.get("responses"))


def websocket_scene():
    """The WebSocket scene (scripts/demo_ws.py, in a Python that has websockets): ws_chat_server."""
    say("scene", "WebSocket on heartwheel: ping frames, close frames with their reasons, a flood slowed, idle memory")
    env = dict(os.environ, DEMO_T0=str(time.time() - (time.monotonic() - T0)), HEARTWHEEL_BUILD=BUILD)
    p = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "demo_ws.py")],
                       env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    print(p.stdout, end="", flush=True)
    return p.returncode == 0


def browser_scene():
    """The browser scene (scripts/demo_browser.py, in a Python that has Selenium): headless Chromium pages
    as the WebSocket chat's clients."""
    say("scene", "a browser: ws_chat_server serves its page, headless Chromium tabs chat, leave, and are drained")
    env = dict(os.environ, DEMO_T0=str(time.time() - (time.monotonic() - T0)), HEARTWHEEL_BUILD=BUILD)
    p = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "demo_browser.py")],
                       env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=90)
    print(p.stdout, end="", flush=True)
    return p.returncode in (0, 3)  # 3: skipped, saying why (no browser on this machine)


def http_scene():
    """HTTP/1.1 keep-alive on Beast (http_server): one connection serves several requests, parked
    between them while quiet (its socket, a deadline and a wait: the /metrics gauge shows it), a
    slowloris trickling its head gets 408 at the header timeout, an idle kept-alive connection is
    closed silently."""
    say("scene", "HTTP/1.1 keep-alive on Beast: keep-alive 1 s, request head within 1 s of its first byte")
    server = subprocess.Popen([os.path.join(BUILD, "examples", "http_server"), "--listen", "127.0.0.1:0",
                               "--keepalive-timeout", "1000", "--header-timeout", "1000", "--metrics", "127.0.0.1:0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    PROCS.append(server)
    port = int(server.stdout.readline().strip().rsplit(":", 1)[1])
    mport = int(server.stdout.readline().strip().rsplit(":", 1)[1])
    ok = True
    keep = socket.create_connection(("127.0.0.1", port), timeout=10)
    for i in range(3):
        keep.sendall(b"GET / HTTP/1.1\r\nHost: demo\r\n\r\n")
        answer = keep.recv(4096).decode(errors="replace")
        say("keep-alive", f"request {i + 1} on one connection: {answer.splitlines()[0]}, {answer.splitlines()[-1]!r}")
        time.sleep(0.1)
        parked = metrics_of(mport)("http_parked_connections")
        say("keep-alive", f"quiet for 100 ms: parked connections {parked} (its socket, a deadline and a wait)")
        ok = ok and parked != "?" and float(parked) == 1
    idle_since = time.monotonic()
    slow = socket.create_connection(("127.0.0.1", port), timeout=10)
    slow.sendall(b"GET / HTTP/1.1\r\n")
    started = time.monotonic()
    say("slowloris", "sends its request line, then a header byte every 100 ms")
    slow.settimeout(0.1)
    got = b""
    while time.monotonic() - started < 3:
        try:
            slow.sendall(b"X")
            chunk = slow.recv(4096)
            if not chunk:
                break
            got += chunk
        except socket.timeout:
            continue
        except OSError:
            break
    first = got.decode(errors="replace").splitlines()[0] if got else "(nothing)"
    say("slowloris", f"after {time.monotonic() - started:.2f} s: {first}")
    ok = ok and first == "HTTP/1.1 408 Request Timeout"
    keep.settimeout(5)
    rest = keep.recv(4096)
    say("keep-alive", f"idle for {time.monotonic() - idle_since:.2f} s: closed by the server, "
        f"{'nothing said' if rest == b'' else repr(rest)}")
    ok = ok and rest == b""
    server.send_signal(signal.SIGTERM)
    out, _ = server.communicate(timeout=10)
    final = [line for line in out.splitlines() if line.startswith("final ")]
    print("http_server:", final[0] if final else "(no final line)")
    return ok and bool(final) and "header-timeout:1" in final[0] and "keepalive-timeout:1" in final[0]


def storm_scene():
    """A TLS connect storm: 300 connections that never send a ClientHello, then 1,000 TLS clients at
    once, against --max-handshakes 20. A handshake takes a place only when its peer speaks: the silent
    ones hold none, and the storm queues for the 20 places inside the server (not in a backlog that
    overflows), served at the rate handshakes complete; nothing is shed."""
    import resource
    import tempfile
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # 1,300 sockets here and in the client
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    say("scene", "TLS storm: 300 silent connections, then 1,000 TLS clients at once, --max-handshakes 20")
    with tempfile.TemporaryDirectory() as d:
        cert, key = make_cert(d)
        server, port, lines = start_server(flags=["--tls", "--cert", cert, "--key", key, "--max-handshakes", "20"])
        silent = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(300)]
        say("silent", "300 connections open, none sends a ClientHello")
        start = time.monotonic()
        storm, out = start_client("storm", "--connect", f"127.0.0.1:{port}", "--tls", "--ca", cert,
                                  "--connections", "1000", "--send-interval", "1000", "--duration", "5000", "--quiet")
        storm.wait(timeout=60)
        time.sleep(0.2)
        summary = next((json.loads(l) for l in reversed(out) if l.startswith("{")), {})
        say("storm", f"{summary.get('connects')} of 1,000 connected, {summary.get('connect_failures')} failed, "
                     f"{summary.get('responses')} echoes in {time.monotonic() - start:.1f}s")
        for s in silent:
            s.close()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)
    final = next((l for l in lines if l.startswith("final ")), "(no final line)")
    print("echo_server:", final)
    # The silent ones never held a handshake place (a handshake takes one when its peer speaks): none shed.
    return summary.get("connects") == 1000 and summary.get("connect_failures") == 0 and "handshake-shed" not in final


def metrics_of(mport):
    """A server's /metrics (its endpoint on 127.0.0.1:mport): a reader of one sample by name."""
    with socket.create_connection(("127.0.0.1", mport), timeout=5) as c:
        c.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        got = b""
        while chunk := c.recv(65536):
            got += chunk
    text = got.decode(errors="replace")
    return lambda name: next((l.split()[-1] for l in text.splitlines() if l.startswith(name + " ")), "?")


def tls_memory_scene():
    """1,000 TLS 1.3 connections (a line a second each), twice: with lean records (the default: OpenSSL's state freed
    once the handshake is over, the records protected from the traffic secrets) and with OpenSSL's
    state kept (--tls-lean no). The server's resident memory per connection, each way."""
    import tempfile
    say("scene", "1,000 TLS connections: the server's memory with lean records, then with OpenSSL's state kept")
    per = {}
    with tempfile.TemporaryDirectory() as d:
        cert, key = make_cert(d)
        for lean in ("yes", "no"):
            server, port, lines = start_server(flags=["--tls", "--cert", cert, "--key", key, "--tls-lean", lean,
                                                      "--metrics", "127.0.0.1:0"])
            time.sleep(0.3)
            mport = int(next(l for l in lines if l.startswith("metrics on ")).rsplit(":", 1)[1])
            before = rss_mib(server.pid)
            # a line a second each: once 1,000 lines have come, every handshake is over
            client, out = start_client("tls", "--connect", f"127.0.0.1:{port}", "--tls", "--ca", cert,
                                       "--connections", "1000", "--send-interval", "1000", "--duration", "30000",
                                       "--quiet")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and float(metrics_of(mport)("heartwheel_lines_total")) < 1000:
                time.sleep(0.2)
            time.sleep(0.5)
            per[lean] = (rss_mib(server.pid) - before) * 1024 * 1024 / 1000
            client.kill()
            client.wait()
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=10)
    say("tls", f"{per['yes']:,.0f} B per TLS connection with lean records, {per['no']:,.0f} B with OpenSSL's "
               f"state kept ({per['no'] / max(per['yes'], 1):.1f}x)")
    return 0 < per["yes"] < per["no"] / 2


def descriptor_scene():
    """Out of descriptors (a hard limit of 64) in kv_server: net::listener refuses what waits with
    BYE busy, rests instead of spinning, says so once, and serves again once descriptors free up."""
    say("scene", "descriptor limit 64 in kv_server: 40 clients held, 60 more knock; then all leave")
    import resource

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    server = subprocess.Popen([os.path.join(BUILD, "examples", "kv_server"), "--listen", "127.0.0.1:0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=low_limit)
    PROCS.append(server)
    port = int(server.stdout.readline().strip().rsplit(":", 1)[1])
    threading.Thread(target=relay, args=(server.stderr, "kv_server"), daemon=True).start()

    def ask():
        with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
            c.sendall(b"SET demo yes\n")
            try:
                return c.recv(100).decode(errors="replace").strip()
            except OSError as e:
                return str(e)

    held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(40)]
    extra = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(60)]
    time.sleep(0.5)
    with open(f"/proc/{server.pid}/stat") as f:
        before = sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:13])
    time.sleep(2)
    with open(f"/proc/{server.pid}/stat") as f:
        used = (sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:13]) - before) / os.sysconf("SC_CLK_TCK")
    told = 0
    for e in extra:
        e.settimeout(0.05)
        try:
            told += e.recv(100) == b"BYE busy\n"
        except OSError:
            pass
    say("kv_server", f"at the limit: {told} of 60 extra clients told BYE busy, {used:.2f} s of CPU in 2 s (no busy loop)")
    for c in held + extra:
        c.close()
    time.sleep(0.3)
    answer = ask()
    say("fresh", f"descriptors free again: SET answered {answer!r}")
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=10)
    return answer == "OK" and used < 0.5 and told > 0


def metrics_scene():
    """Any server's /metrics and its drain, set up from a TOML file: chat_server reads its server
    settings (metrics, drain_window) as --config keys beside the liveness tables."""
    say("scene", "chat_server configured by a TOML file: /metrics while 20 members chat, then a 2 s drain watched there")
    conf = os.path.join(tempfile.mkdtemp(prefix="heartwheel-demo-"), "chat.toml")
    with open(conf, "w") as f:
        f.write('metrics = "127.0.0.1:0"\ndrain_window = "2s"\n[heartbeat]\ninterval = "10s"\n')
    server = subprocess.Popen([os.path.join(BUILD, "examples", "chat_server"), "--listen", "127.0.0.1:0", "--config", conf],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    PROCS.append(server)
    port = int(server.stdout.readline().strip().rsplit(":", 1)[1])
    mport = int(server.stdout.readline().strip().rsplit(":", 1)[1])

    def scrape():
        pick = metrics_of(mport)
        return {k: pick(k) for k in ("chat_members", "heartwheel_accepted_total", "heartwheel_draining")} | {
            "closed draining": pick('heartwheel_closes_total{reason="draining"}')}

    members = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(20)]
    time.sleep(0.3)
    members[0].sendall(b"hello, room\n")
    time.sleep(0.2)
    before = scrape()
    say("metrics", f"serving: {before}")
    server.send_signal(signal.SIGTERM)
    time.sleep(0.8)
    during = scrape()
    say("metrics", f"0.8 s into the drain: {during}")
    out, _ = server.communicate(timeout=15)
    for m in members:
        m.close()
    say("chat_server", out.strip().splitlines()[-1] if out.strip() else "(no final line)")
    return before["heartwheel_draining"] == "0" and during["heartwheel_draining"] == "1" and server.returncode == 0


def configuration_scene():
    """One configuration: kv_server's own [kv] table (examples/kv_policy.hpp) beside the library's
    [connection] and [idle] tables in one TOML file, validated together; a misspelled key is refused by
    name before anything listens."""
    say("scene", "kv_server configured by one file: [kv] max_commands = 3 beside [connection] and [idle]; then a typo")
    conf_dir = tempfile.mkdtemp(prefix="heartwheel-demo-")
    conf, typo = os.path.join(conf_dir, "kv.toml"), os.path.join(conf_dir, "typo.toml")
    with open(conf, "w") as f:
        f.write('[kv]\nmax_commands = 3\n[connection]\nlinger = "500ms"\n[idle]\nreader_idle = "30s"\n')
    with open(typo, "w") as f:
        f.write('[connection]\nlingr = "500ms"\n')
    binary = os.path.join(BUILD, "examples", "kv_server")
    server = subprocess.Popen([binary, "--listen", "127.0.0.1:0", "--config", conf],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    PROCS.append(server)
    port = int(server.stdout.readline().strip().rsplit(":", 1)[1])
    got = b""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
        c.sendall(b"SET k v\nGET k\nGET k\nGET k\n")
        while chunk := c.recv(4096):
            got += chunk
    say("client", f"4 commands sent, the server answered {got.decode().strip().splitlines()}")
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=10)
    refused = subprocess.run([binary, "--config", typo], capture_output=True, text=True, timeout=10)
    say("kv_server", f"with the typo: exit {refused.returncode}, {refused.stderr.strip()}")
    return got == b"OK\nVALUE v\nVALUE v\nBYE max-commands\n" and refused.returncode == 2 and "connection.lingr" in refused.stderr


def mqtt_scene():
    """Devices that choose their own keep-alive: mqtt_server closes each one silent for 1.5 x the
    keep-alive its CONNECT announced (its own phase deadline, the shared settings untouched), while
    Debian's mosquitto_sub and mosquitto_pub subscribe and publish through it."""
    say("scene", "mqtt_server: devices with keep-alives of 1 and 2 s go silent, one keeps pinging; mosquitto_pub -> mosquitto_sub")
    server = subprocess.Popen([os.path.join(BUILD, "examples", "mqtt_server"), "--listen", "127.0.0.1:0", "--drain-window", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    PROCS.append(server)
    port = int(server.stdout.readline().strip().rsplit(":", 1)[1])
    sub = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-V", "mqttv311", "-v", "-t", "home/+/temp",
                            "-C", "1", "-W", "10"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    PROCS.append(sub)

    def connect(keep_alive, name):
        body = b"\x00\x04MQTT\x04\x02" + keep_alive.to_bytes(2, "big") + len(name).to_bytes(2, "big") + name
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(bytes([0x10, len(body)]) + body)
        s.recv(4)  # CONNACK
        return s, time.monotonic()

    closed = {}

    def silent(keep_alive):
        s, sent = connect(keep_alive, f"sensor-{keep_alive}s".encode())
        while s.recv(64):
            pass
        closed[keep_alive] = time.monotonic() - sent
        say("mqtt", f"silent device with keep-alive {keep_alive} s: closed after {closed[keep_alive]:.3f} s (1.5 x {keep_alive} s)")
        s.close()

    threads = [threading.Thread(target=silent, args=(k,)) for k in (1, 2)]
    for t in threads:
        t.start()
    pinger, _ = connect(1, b"thermostat")
    time.sleep(0.5)
    subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-V", "mqttv311", "-t", "home/kitchen/temp", "-m", "21.5"],
                   timeout=10)
    received, _ = sub.communicate(timeout=15)
    say("mosquitto_sub", received.strip() or "(nothing)")
    pongs = 0
    for _ in range(5):  # a PINGREQ every 0.8 s: never silent for 1.5 s
        pinger.sendall(b"\xc0\x00")
        pongs += pinger.recv(2) == b"\xd0\x00"
        time.sleep(0.8)
    say("mqtt", f"pinging device (keep-alive 1 s): {pongs} PINGRESP over 4 s, still connected")
    for t in threads:
        t.join(10)
    pinger.close()
    server.send_signal(signal.SIGTERM)
    out, _ = server.communicate(timeout=15)
    say("mqtt_server", out.strip().splitlines()[-1] if out.strip() else "(no final line)")
    return (received.strip() == "home/kitchen/temp 21.5" and pongs == 5 and 1.5 <= closed.get(1, 0) < 2.0
            and 3.0 <= closed.get(2, 0) < 3.5)


def balancer_scene():
    """Behind HAProxy (send-proxy-v2, health checks): the PROXY protocol gives echo_server each client's
    own address, so --source-share judges clients, not the balancer; a peer without a header is closed."""
    import tempfile
    say("scene", "behind HAProxy with the PROXY protocol: 4 clients from 127.0.0.2 fill --max-connections 4, "
                 "then one from 127.0.0.3 (--source-share 1)")
    server, port, lines = start_server(flags=["--proxy-protocol", "--max-connections", "4", "--source-share", "1"])
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        front = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as d:
        config = os.path.join(d, "haproxy.cfg")
        with open(config, "w") as f:
            f.write(f"defaults\n    mode tcp\n    timeout connect 2s\n    timeout client 30s\n    timeout server 30s\n"
                    f"frontend front\n    bind 127.0.0.1:{front}\n    default_backend back\n"
                    f"backend back\n    server s1 127.0.0.1:{port} send-proxy-v2 check check-send-proxy inter 5s\n")
        lb = subprocess.Popen(["haproxy", "-db", "-f", config], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        PROCS.append(lb)
        # Ready once it listens (from /proc: a probe through it would take one of the server's places).
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open("/proc/net/tcp") as f:
                if any(l.split()[1] == f"0100007F:{front:04X}" and l.split()[3] == "0A" for l in list(f)[1:]):
                    break
            time.sleep(0.05)
        time.sleep(0.2)  # its first health check (a LOCAL header) has come and gone

        def client(source, text):
            c = socket.create_connection(("127.0.0.1", front), timeout=5, source_address=(source, 0))
            c.sendall(text.encode() + b"\n")
            return c, c.recv(100).decode(errors="replace").strip()

        first = [client("127.0.0.2", f"a{i}") for i in range(4)]
        say("127.0.0.2", f"4 connections through HAProxy echoed: {[got for _, got in first]}")
        newcomer, got = client("127.0.0.3", "b")
        say("127.0.0.3", f"at the limit, a newcomer within its share: {got!r}")
        told = []
        for c, _ in first:
            c.settimeout(0.5)
            try:
                told.append(c.recv(100).decode(errors="replace").strip())
            except OSError:
                pass
        told = [t for t in told if t]
        say("127.0.0.2", f"its newest connection told {told}")
        direct = socket.create_connection(("127.0.0.1", port), timeout=5)
        direct.sendall(b"hello without a header\n")
        direct.settimeout(2)
        try:
            closed = direct.recv(100) == b""
        except OSError:
            closed = True
        say("direct", "a peer without a PROXY header: " + ("closed" if closed else "answered?!"))
        for c, _ in first:
            c.close()
        newcomer.close()
        direct.close()
        time.sleep(0.2)
        lb.terminate()
        lb.wait(timeout=10)
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=10)
    final = next((l for l in lines if l.startswith("final ")), "(no final line)")
    print("echo_server:", final)
    return got == "b" and "BYE over-share" in told and closed and "proxy-missing:1" in final


def main():
    print("heartwheel demo: echo/heartbeat server with idle detection, heartbeats, request timeouts and backoff\n")
    server, port, server_lines = start_server()
    print(f"  server policy: {' '.join(SERVER_FLAGS)}\n")
    results = {}

    say("scene", "3 healthy clients send a request every 200 ms and answer pings")
    healthy, healthy_out = start_client("healthy", "--connect", f"127.0.0.1:{port}", "--connections", "3",
                                        "--send-interval", "200", "--request-timeout", "1000", "--duration", "9000",
                                        "--quiet")
    say("scene", "a silent client answers pings but sends no data: reader-idle after 3 s")
    say("scene", "a stuck client neither sends nor answers pings: heartbeat-timeout after 3 misses")
    peers = [threading.Thread(target=raw_peer, args=("silent", port, True, results)),
             threading.Thread(target=raw_peer, args=("stuck", port, False, results))]
    for p in peers:
        p.start()

    mute = socket.socket()
    mute.bind(("127.0.0.1", 0))
    mute.listen(4)
    say("scene", "a client sends requests to a service that accepts but never answers: 300 ms request timeout")
    timing_out, timing_out_out = start_client("impatient", "--connect", f"127.0.0.1:{mute.getsockname()[1]}",
                                              "--send-interval", "700", "--request-timeout", "300",
                                              "--duration", "1600", "--quiet", "--verbose")

    say("scene", "a client with reconnect (backoff 200 ms x2, up to 2 s) stays connected")
    rec, rec_out = start_client("reconnector", "--connect", f"127.0.0.1:{port}", "--send-interval", "500",
                                "--reconnect", "yes", "--backoff-initial", "200", "--backoff-multiplier", "2",
                                "--backoff-max", "2000", "--backoff-jitter", "0", "--stable-after", "1000",
                                "--duration", "13000", "--quiet", "--verbose")
    for p in peers:
        p.join()
    timing_out.wait(timeout=10)
    mute.close()

    time.sleep(0.5)
    say("scene", "restarting the server: it drains, asking each client to leave over 1.5 s (BYE draining 1500); "
                 "the reconnector backs off 200, 400, 800 ms ...")
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=10)
    say("server", f"exited with code {server.returncode}")
    time.sleep(3.2)
    server, _, server_lines2 = start_server(port)
    healthy.wait(timeout=20)
    rec.wait(timeout=20)
    time.sleep(0.3)

    print("\n=== summary ===")
    for name, out in (("healthy (3 connections)", healthy_out), ("impatient", timing_out_out), ("reconnector", rec_out)):
        summary = next((json.loads(l) for l in reversed(out) if l.startswith("{")), {})
        keys = ("connects", "reconnects", "connect_failures", "requests", "responses", "timeouts", "pings_received",
                "pongs_sent", "closed_by_server")
        print(f"{name}: " + ", ".join(f"{k}={summary.get(k)}" for k in keys) + f", rtt_ms={summary.get('rtt_ms')}")
    for name in ("silent", "stuck"):
        print(f"{name}: {results.get(name, 'no BYE seen')}")
    final = [l for l in server_lines if l.startswith("final ")]
    print("server before restart:", final[0] if final else "(no final line)")
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=10)
    final2 = [l for l in server_lines2 if l.startswith("final ")]
    print("server after restart: ", final2[0] if final2 else "(no final line)")
    ok = (results.get("silent") == "BYE reader-idle" and results.get("stuck") == "BYE heartbeat-timeout")
    ok = overload_scene() and ok
    ok = one_source_scene() and ok
    ok = handover_scene() and ok
    ok = websocket_scene() and ok
    ok = browser_scene() and ok
    ok = http_scene() and ok
    ok = storm_scene() and ok
    ok = tls_memory_scene() and ok
    ok = descriptor_scene() and ok
    ok = metrics_scene() and ok
    ok = configuration_scene() and ok
    ok = mqtt_scene() and ok
    ok = balancer_scene() and ok
    print("\ndemo", "finished: every behaviour shown" if ok else "finished, but a scene did not go as scripted")
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        for p in PROCS:
            if p.poll() is None:
                p.kill()
