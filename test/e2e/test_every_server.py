"""test_every_server.py — the defences a server gets from the library, checked on every example server.

A defence that lives in one example is one that users' servers do not get. Every server here accepts
through net::listener and makes its TLS context with net::server_tls_context, so each must:
 - at the descriptor limit (a hard RLIMIT_NOFILE of 64), refuse what waits, rest instead of spinning
   (< 0.5 s of CPU in 2 s), say so once, keep running, and serve a fresh client once descriptors free
   up (chat_server and kv_server used to stop accepting for good; http_server and ws_chat_server spun
   at 62-89 % CPU);
 - with TLS, refuse ffdhe-only ClientHellos (~110 ms of CPU each for ffdhe8192) and TLS 1.2 CBC suites;
 - at --max-connections, stop accepting (newcomers wait in the kernel's backlog, none refused) and
   serve the waiting client once a place frees; with TLS, shed handshakes that never sent a
   ClientHello while healthy ones wait for a --max-handshakes place (the library's admission);
 - with --proxy-protocol, serve a client whose connection starts with a PROXY header (and TLS after
   one), and close one without a header, counted proxy-missing;
 - with --handover PATH, let a successor take its listening socket — connects refused by neither
   meanwhile — then drain and exit 0 while the successor serves;
 - serve /metrics with --metrics HOST:PORT (the library's families; draining 1 during a drain);
 - catch SIGTERM before it says "listening on" (a supervisor signals once it has read that line);
 - close a client that never reads its answers (write-timeout or slow-consumer) with a reset;
 - answer --help with its usage, exit 0;
 - read one configuration: the connection's [connection] table in its --config file, refused by key
   when wrong (exit 2), and the tables a layer or the application adds ([http], [websocket], [kv])
   applied from the same file and from their flags.
What is judged is what a client sees, and the server's CPU from /proc."""
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import unittest
import warnings

sys.path.insert(0, os.path.dirname(__file__))
import side_by_side  # noqa: E402
from harness import BUILD, cpu_seconds, make_cert, only_fd_exhaustion_reports, tempdir, tls_cipher, wait_parked  # noqa: E402

SANITIZED = bool(os.environ.get("HEARTWHEEL_SANITIZE"))


# What every new connection sends first (ProxyProtocol sets a PROXY header here).
PREFIX = b""


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if PREFIX:
        s.sendall(PREFIX)
    return s


def ask(port, request, want):
    """A fresh client sends `request` and reads until `want` arrives: whether it did."""
    with connect(port) as s:
        s.sendall(request)
        got = b""
        try:
            while want not in got:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        except OSError:
            pass
        return want in got


def chat_probe(port):
    with connect(port) as a, connect(port) as b:
        time.sleep(0.3)  # both joined the room
        a.sendall(b"hello from a\n")
        b.settimeout(5)
        try:
            return b"hello from a" in b.recv(4096)
        except OSError:
            return False


UPGRADE = (b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")

# name: (binary, its TLS flags from (cert, key) or None, a probe: is a fresh client served?)
SERVERS = {
    "echo_server": ("echo_server", lambda c, k: ["--tls", "--cert", c, "--key", k],
                    lambda port: ask(port, b"ping me\n", b"ping me\n")),
    "chat_server": ("chat_server", None, chat_probe),
    "kv_server": ("kv_server", None, lambda port: ask(port, b"SET k v\n", b"OK\n")),
    "ws_chat_server": ("ws_chat_server", lambda c, k: ["--tls", c, k],
                       lambda port: ask(port, UPGRADE, b"HTTP/1.1 101")),
    "http_server": ("http_server", lambda c, k: ["--tls", c, k],
                    lambda port: ask(port, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", b"hello\n")),
    # An MQTT CONNECT (protocol level 4, keep-alive 30 s, client "dev"), answered by CONNACK accepted.
    "mqtt_server": ("mqtt_server", lambda c, k: ["--tls", c, k],
                    lambda port: ask(port, b"\x10\x0f\x00\x04MQTT\x04\x02\x00\x1e\x00\x03dev", b"\x20\x02\x00\x00")),
}


def start(binary, *flags, low_limit=False):
    env = dict(os.environ)
    if SANITIZED and low_limit:
        env["UBSAN_OPTIONS"] = "print_stacktrace=0:halt_on_error=0"  # see only_fd_exhaustion_reports
    proc = subprocess.Popen([os.path.join(BUILD, "examples", binary), "--listen", "127.0.0.1:0", *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=(lambda: __import__("resource").setrlimit(
                                __import__("resource").RLIMIT_NOFILE, (64, 64))) if low_limit else None)
    line = proc.stdout.readline()
    assert line.startswith("listening on 127.0.0.1:"), f"{binary}: first line {line!r}: {proc.stderr.read()}"
    return proc, int(line.strip().rsplit(":", 1)[1])


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()


class DescriptorLimit(unittest.TestCase):
    def check(self, name):
        binary, _, probe = SERVERS[name]
        proc, port = start(binary, low_limit=True)
        try:
            self.assertTrue(probe(port), f"{name}: not serving before the limit")
            held = [connect(port) for _ in range(40)]  # within the limit
            extra = [connect(port) for _ in range(60)]  # past it: the kernel's backlog holds them
            time.sleep(0.5)
            before = cpu_seconds(proc.pid)
            time.sleep(2.0)
            used = cpu_seconds(proc.pid) - before
            self.assertLess(used, 0.5, f"{name} used {used:.2f} s of CPU in 2 s at the descriptor limit")
            self.assertIsNone(proc.poll(), f"{name} exited at the descriptor limit")
            for s in held + extra:
                s.close()
            served = False
            deadline = time.monotonic() + 10
            while not served and time.monotonic() < deadline:
                served = probe(port)
                if not served:
                    time.sleep(0.2)
            self.assertTrue(served, f"{name}: a fresh client is not served once descriptors are free")
        finally:
            out, err = stop(proc)
        self.assertEqual(err.count("refusing new connections"), 1, f"{name}: {err}")
        self.assertIn(f"{name}: accept: ", err)
        self.assertIn("accepting again (", err)
        self.assertTrue(only_fd_exhaustion_reports(err), err)
        print(f"{name} at a descriptor limit of 64: {used:.3f} s CPU in 2 s")

    def test_echo_server(self):
        self.check("echo_server")

    def test_chat_server(self):
        self.check("chat_server")

    def test_kv_server(self):
        self.check("kv_server")

    def test_ws_chat_server(self):
        self.check("ws_chat_server")

    def test_http_server(self):
        self.check("http_server")

    def test_mqtt_server(self):
        self.check("mqtt_server")


def closes(out):
    """The final line's closes=reason:n,... as a dict."""
    m = re.search(r"final closes=(\S*)", out)
    assert m, out
    return {k: int(v) for k, v in (kv.split(":") for kv in m.group(1).split(",") if kv)}


class Admission(unittest.TestCase):
    """The listener's admission, wired by each server's --max-connections / --max-handshakes. (echo_server
    keeps its own BYE busy at --max-connections: test_echo_server.py; chat_server's probe needs two
    places at once, its admission is kv_server's code path.)"""

    def check_waits_then_serves(self, name):
        binary, _, probe = SERVERS[name]
        proc, port = start(binary, "--max-connections", "3")
        try:
            held = [connect(port) for _ in range(3)]
            result = []
            waiting = threading.Thread(target=lambda: result.append(probe(port)))
            waiting.start()
            waiting.join(1.0)
            self.assertTrue(waiting.is_alive(), f"{name}: served past --max-connections 3 ({result})")
            held[0].close()  # a place frees: the waiting client is taken from the backlog
            waiting.join(10)
            self.assertEqual(result, [True], f"{name}: the waiting client was not served once a place freed")
            for s in held[1:]:
                s.close()
        finally:
            out, err = stop(proc)
        if "final closes=" in out:  # kv_server says only how many it closed
            self.assertNotIn("busy", closes(out), f"{name}: {out}")  # waited, never refused

    def test_kv_server(self):
        self.check_waits_then_serves("kv_server")

    def test_ws_chat_server(self):
        self.check_waits_then_serves("ws_chat_server")

    def test_http_server(self):
        self.check_waits_then_serves("http_server")

    def test_mqtt_server(self):
        self.check_waits_then_serves("mqtt_server")

    def test_tls_servers_give_silent_connections_no_handshake_place(self):
        """300 connections that never send a ClientHello against --max-handshakes 50: a handshake takes
        a place only once its peer speaks, so the silent ones hold none (none shed: no one waits) and a
        healthy TLS client is served at once. (Before, each silent one held a place from its accept:
        the healthy client waited in the backlog until 250 of them were shed.)"""
        with tempdir() as d:
            cert, key = make_cert(d)
            ctx = ssl.create_default_context(cafile=cert)
            for name in ("ws_chat_server", "http_server"):
                binary, tls, _ = SERVERS[name]
                proc, port = start(binary, *tls(cert, key), "--max-handshakes", "50")
                try:
                    silent = [connect(port) for _ in range(300)]
                    time.sleep(0.2)
                    began = time.monotonic()
                    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
                    with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                        took = time.monotonic() - began
                        s.sendall(UPGRADE if name == "ws_chat_server" else
                                  b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                        self.assertIn(b"HTTP/1.1 10" if name == "ws_chat_server" else b"HTTP/1.1 200", s.recv(4096))
                    for c in silent:
                        c.close()
                finally:
                    out, _ = stop(proc)
                shed = closes(out).get("handshake-shed", 0)
                print(f"{name}: 300 silent connections, --max-handshakes 50: healthy handshake in {took:.2f} s; "
                      f"{shed} shed")
                self.assertEqual(shed, 0, out)


class ProxyProtocol(unittest.TestCase):
    """--proxy-protocol on every server: the listener reads the header, the protocol never sees it."""

    def check_header_required(self, name, probe, *flags):
        """A server started with `flags` serves a client after a PROXY header, and refuses one without:
        the server's stdout."""
        global PREFIX
        proc, port = start(SERVERS[name][0], *flags)
        try:
            PREFIX = b"PROXY TCP4 192.0.2.1 127.0.0.1 40000 80\r\n"
            self.assertTrue(probe(port), f"{name} {flags}: not served after a PROXY header")
            PREFIX = b""
            self.assertFalse(probe(port), f"{name} {flags}: served without a PROXY header")
        finally:
            PREFIX = b""
            out, _ = stop(proc)
        return out

    def test_every_server_reads_the_header_and_refuses_a_connection_without_one(self):
        for name, (_, _, probe) in SERVERS.items():
            out = self.check_header_required(name, probe, "--proxy-protocol")
            if "final closes=" in out:
                self.assertGreaterEqual(closes(out).get("proxy-missing", 0), 1, f"{name}: {out}")

    def test_every_server_takes_it_from_its_config_file(self):
        """The same settings as keys of --config (net::server_settings: one set() for flag and key); a
        misspelled key exits 2 naming it."""
        with tempdir() as d:
            good, bad = os.path.join(d, "good.toml"), os.path.join(d, "bad.toml")
            with open(good, "w") as f:
                f.write('proxy_protocol = true\nproxy_from = "127.0.0.0/8"\ndrain_window = "1s"\n')
            with open(bad, "w") as f:
                f.write("proxy_protcol = true\n")
            for name, (binary, _, probe) in SERVERS.items():
                self.check_header_required(name, probe, "--config", good)
                p = subprocess.run([os.path.join(BUILD, "examples", binary), "--listen", "127.0.0.1:0", "--config", bad],
                                   capture_output=True, text=True, timeout=20)
                self.assertEqual(p.returncode, 2, (name, p.stderr))
                self.assertIn("proxy_protcol", p.stderr, name)

    def test_tls_after_the_header(self):
        with tempdir() as d:
            cert, key = make_cert(d)
            ctx = ssl.create_default_context(cafile=cert)
            proc, port = start("http_server", "--proxy-protocol", "--tls", cert, key)
            try:
                raw = socket.create_connection(("127.0.0.1", port), timeout=5)
                raw.sendall(b"\r\n\r\n\x00\r\nQUIT\n\x21\x11\x00\x0c" + bytes([192, 0, 2, 1, 127, 0, 0, 1, 0x9c, 0x40, 0, 80]))
                with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    got = b""
                    while b"hello\n" not in got:
                        chunk = s.recv(4096)
                        if not chunk:
                            break
                        got += chunk
                self.assertIn(b"hello\n", got)
            finally:
                stop(proc)


class Handover(unittest.TestCase):
    """--handover on every server (net::listener's): a successor takes the socket, nothing is refused."""

    def test_every_server_hands_its_socket_to_a_successor(self):
        for name, (binary, _, probe) in SERVERS.items():
            with tempdir() as d:
                path = os.path.join(d, "handover")
                old, port = start(binary, "--handover", path, "--drain-window", "300")
                refused, connects, running = [0], [0], [True]

                def knock():  # ~200 connects a second while the socket changes hands
                    while running[0]:
                        try:
                            socket.create_connection(("127.0.0.1", port), timeout=2).close()
                            connects[0] += 1
                        except ConnectionRefusedError:
                            refused[0] += 1
                        except OSError:
                            pass
                        time.sleep(0.005)

                knocker = threading.Thread(target=knock)
                knocker.start()
                try:
                    time.sleep(0.2)
                    new, new_port = start(binary, "--handover", path, "--drain-window", "300")
                    try:
                        self.assertEqual(new_port, port, name)
                        _, err = old.communicate(timeout=20)
                        self.assertEqual(old.returncode, 0, f"{name}: {err}")
                        self.assertIn("a new process took the listening socket", err, name)
                        time.sleep(0.2)
                        running[0] = False
                        knocker.join()
                        self.assertTrue(probe(port), f"{name}: the successor does not serve")
                    finally:
                        stop(new)
                finally:
                    running[0] = False
                    knocker.join()
                    stop(old)
                print(f"{name}: handed over; {connects[0]} connects meanwhile, {refused[0]} refused")
                self.assertEqual(refused[0], 0, name)
                self.assertGreater(connects[0], 20, name)


class TlsPolicy(unittest.TestCase):
    def test_every_tls_server_refuses_ffdhe_and_cbc(self):
        with tempdir() as d:
            cert, key = make_cert(d)
            for name, (binary, tls, _) in SERVERS.items():
                if tls is None:
                    continue
                proc, port = start(binary, *tls(cert, key))
                try:
                    self.assertIsNone(tls_cipher(port, "-tls1_3", "-groups", "ffdhe2048:ffdhe8192"), name)
                    self.assertIsNone(tls_cipher(port, "-tls1_2", "-groups", "ffdhe2048:ffdhe8192"), name)
                    self.assertIsNone(tls_cipher(port, "-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA"), name)  # CBC
                    self.assertIsNotNone(tls_cipher(port, "-tls1_3", "-groups", "X25519"), name)
                    self.assertEqual(tls_cipher(port, "-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256"),
                                     "ECDHE-ECDSA-AES128-GCM-SHA256", name)
                finally:
                    stop(proc)


class Promises(unittest.TestCase):
    """README and docs/liveness.md promise that a process stall never closes a talking peer. Each
    framing layer (lines over connection::stream(); every layer under net/include/heartwheel/beast/)
    must have its stall test: a new layer without one, or a stall test removed, fails here."""

    STALL_TESTS = {  # framing layer: (suite, test class)
        "lines": ("test_stall_at_scale.py", "StallAtScale"),
        "websocket.hpp": ("test_ws_chat.py", "ProcessStall"),
        "http.hpp": ("test_http_keepalive.py", "ProcessStall"),
    }
    # Headers beside the layers that are parts of one (its table), and detail/ (what they share).
    # http_server.hpp is HTTP's request loop (http_server, whose stall test parks its quiet clients).
    LAYER_PARTS = {"ws_options.hpp": "websocket.hpp", "http_server.hpp": "http.hpp"}

    def test_the_stall_guard_is_tested_for_every_framing_layer(self):
        import ast
        here = os.path.dirname(os.path.abspath(__file__))
        layers = os.path.join(here, "..", "..", "net", "include", "heartwheel", "beast")
        for header in sorted(os.listdir(layers)):
            if os.path.isdir(os.path.join(layers, header)):
                continue
            layer = self.LAYER_PARTS.get(header, header)
            self.assertIn(layer, self.STALL_TESTS, f"framing layer {header} has no process-stall test")
        for layer, (suite, cls) in self.STALL_TESTS.items():
            with open(os.path.join(here, suite)) as f:
                tree = ast.parse(f.read())
            classes = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
            self.assertIn(cls, classes, f"{layer}: {suite} has no class {cls}")
            tests = [n.name for n in ast.walk(classes[cls]) if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
            if not tests:  # a mixin (StallAtScale): its concrete subclasses carry the tests
                tests = [n.name for c in classes.values() if any(getattr(b, "id", None) == cls for b in c.bases)
                         for n in ast.walk(c) if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]
            self.assertTrue(tests, f"{layer}: {suite} {cls} has no test")


def scrape(port, path="/metrics"):
    """GET `path` from a server's metrics port: (status line, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
        got = b""
        while chunk := s.recv(65536):
            got += chunk
    head, _, body = got.decode().partition("\r\n\r\n")
    return head.split("\r\n", 1)[0], body


def gauge(body, name):
    m = re.search(rf"^{re.escape(name)} (\S+)$", body, re.M)
    return float(m.group(1)) if m else None


class Metrics(unittest.TestCase):
    """net::serve_metrics on every server (--metrics HOST:PORT, the second line says where): the
    library's families, and the draining gauge at 1 while a drain asks the connections to leave."""

    def test_every_server_serves_metrics_and_its_draining_gauge(self):
        for name, (binary, _, _) in SERVERS.items():
            proc, port = start(binary, "--metrics", "127.0.0.1:0", "--drain-window", "3000")
            held = []
            try:
                second = proc.stdout.readline()
                self.assertTrue(second.startswith("metrics on 127.0.0.1:"), (name, second))
                mport = int(second.strip().rsplit(":", 1)[1])
                held = [connect(port) for _ in range(40)]
                deadline = time.monotonic() + 10
                while True:
                    status, body = scrape(mport)
                    self.assertIn(" 200 ", status, name)
                    if (gauge(body, "heartwheel_accepted_total") or 0) >= 40 or time.monotonic() > deadline:
                        break
                    time.sleep(0.1)
                if name != "echo_server":  # echo_server counts its own accepted (= closes + open)
                    self.assertGreaterEqual(gauge(body, "heartwheel_accepted_total"), 40, (name, body))
                self.assertEqual(gauge(body, "heartwheel_draining"), 0, (name, body))
                self.assertIn('heartwheel_closes_total{reason="reader-idle"}', body, name)
                self.assertGreater(gauge(body, "process_open_fds"), 40, name)
                self.assertIn(" 404 ", scrape(mport, "/")[0], name)
                proc.send_signal(signal.SIGTERM)
                time.sleep(0.5)  # 40 connections asked over 3 s: most are still there
                status, body = scrape(mport)
                self.assertEqual(gauge(body, "heartwheel_draining"), 1, (name, body))
                out, err = proc.communicate(timeout=20)
                self.assertEqual(proc.returncode, 0, (name, err[-500:]))
            finally:
                for c in held:
                    c.close()
                stop(proc)


class ReadyLine(unittest.TestCase):
    """A supervisor (systemd's notify shim, a deploy script, these tests) signals as soon as it has read
    "listening on": by then SIGTERM must be caught, so that it drains and exits 0 rather than killing
    the process mid-flight. Checked without a race: the server's stdout is a full pipe, so it blocks
    in the write of that line; its caught signals are read from /proc while it waits there."""

    def test_every_server_catches_sigterm_before_it_says_it_is_listening(self):
        import fcntl
        for name, (binary, _, _) in SERVERS.items():
            r, w = os.pipe()
            fcntl.fcntl(w, fcntl.F_SETFL, os.O_NONBLOCK)
            filled = 0
            try:
                while True:
                    filled += os.write(w, b"x" * 4096)
            except BlockingIOError:
                pass
            fcntl.fcntl(w, fcntl.F_SETFL, 0)
            proc = subprocess.Popen([os.path.join(BUILD, "examples", binary), "--listen", "127.0.0.1:0"],
                                    stdout=w, stderr=subprocess.PIPE)
            os.close(w)
            try:
                deadline = time.monotonic() + 20
                blocked = False
                while not blocked and proc.poll() is None and time.monotonic() < deadline:
                    with open(f"/proc/{proc.pid}/syscall") as f:
                        blocked = f.read().startswith("1 0x1 ")  # write(1, ...): the first line
                    time.sleep(0.01)
                self.assertTrue(blocked, f"{name}: never blocked writing its first line (exit {proc.poll()})")
                with open(f"/proc/{proc.pid}/status") as f:
                    caught = int(re.search(r"SigCgt:\s*([0-9a-f]+)", f.read()).group(1), 16)
                for sig in (signal.SIGTERM, signal.SIGINT):
                    self.assertTrue(caught >> (sig - 1) & 1, f"{name}: {sig.name} not caught when it says it is listening")
                out = b""
                while filled > 0:  # the filler, then the server's own lines
                    filled -= len(os.read(r, min(filled, 65536)))
                first = b""
                while not first.endswith(b"\n"):
                    chunk = os.read(r, 1)
                    self.assertTrue(chunk, f"{name}: stdout closed before the first line")
                    first += chunk
                self.assertTrue(first.startswith(b"listening on 127.0.0.1:"), (name, first))
                wait_parked(proc.pid)
                proc.send_signal(signal.SIGTERM)
                _, err = proc.communicate(timeout=20)
                with os.fdopen(r, "rb") as rest:
                    out = rest.read()
                r = None
                self.assertEqual(proc.returncode, 0, (name, err[-500:]))
                self.assertTrue(b"final " in out or b"closed " in out, (name, out))  # kv_server: "closed N"
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()
                if r is not None:
                    os.close(r)


class Help(unittest.TestCase):
    def test_every_server_answers_help(self):
        for name, (binary, _, _) in SERVERS.items():
            p = subprocess.run([os.path.join(BUILD, "examples", binary), "--help"], capture_output=True, text=True,
                               timeout=10)
            self.assertEqual(p.returncode, 0, (name, p.stderr))
            self.assertIn("--listen", p.stdout, name)


def config_file(text):
    import tempfile
    f = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    f.write(text)
    f.close()
    return f.name


class NonReader(unittest.TestCase):
    """A client that keeps asking and never reads the answers: the server stops reading it once its
    output passes the bound, and closes it — write-timeout (its write made no progress for 1 s here),
    or slow-consumer when the output passes its hard limit first — with a reset, so that no socket is
    left holding its send buffer behind a FIN the peer would never take. Judged from the peer's side
    (its TCP state leaves ESTABLISHED, or a send fails) and from the server's close counts. The
    servers with a non-reader case of their own (echo, chat, ws_chat, mqtt) are not repeated here."""

    CASES = {  # server: (what the client says first, the request it repeats)
        "kv_server": (b"SET k " + b"v" * 1000 + b"\n", b"GET k\n" * 64),
        "http_server": (b"", b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 65536\r\n\r\n" + b"x" * 65536),
    }

    def test_a_client_that_never_reads_is_closed_and_reset(self):
        path = config_file('[timeouts]\nwrite_timeout = "1s"\n')
        try:
            for name, (first, request) in self.CASES.items():
                with self.subTest(server=name):
                    self.one(name, path, first, request)
        finally:
            os.unlink(path)

    def one(self, name, path, first, request):
        proc, port = start(name, "--config", path, "--metrics", "127.0.0.1:0")
        try:
            mport = int(proc.stdout.readline().strip().rsplit(":", 1)[1])
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # and never reads
            s.connect(("127.0.0.1", port))
            s.sendall(first)
            s.setblocking(False)
            t0, closed, pending = time.monotonic(), None, b""
            while closed is None and time.monotonic() - t0 < 15:
                try:
                    pending = pending or request
                    pending = pending[s.send(pending):]
                except BlockingIOError:
                    time.sleep(0.02)
                except OSError as e:
                    closed = f"send failed: {e}"
                state = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0]
                if closed is None and state != 1:  # not ESTABLISHED
                    closed = f"TCP state {state}"
            elapsed = time.monotonic() - t0
            s.close()
            self.assertIsNotNone(closed, f"{name}: still open after 15 s of a client that never reads")
            _, body = scrape(mport)
            reasons = {r: gauge(body, f'heartwheel_closes_total{{reason="{r}"}}') or 0
                       for r in ("write-timeout", "slow-consumer")}
            print(f"{name}: closed after {elapsed:.1f} s ({closed}), {reasons}")
            self.assertEqual(sum(reasons.values()), 1, (name, reasons))
        finally:
            stop(proc)


class OneConfiguration(unittest.TestCase):
    def test_every_server_reads_the_connection_table_and_refuses_a_wrong_key_by_name(self):
        good, bad = config_file('[connection]\nlinger = "250ms"\nclose_on_idle = true\n'), \
            config_file('[connection]\nlingr = "250ms"\n')
        try:
            for name, (binary, _, probe) in SERVERS.items():
                p = subprocess.run([os.path.join(BUILD, "examples", binary), "--config", bad], capture_output=True,
                                   text=True, timeout=10)
                self.assertEqual(p.returncode, 2, (name, p.stderr))
                self.assertIn("connection.lingr", p.stderr, name)
                proc, port = start(binary, "--config", good)
                try:
                    self.assertTrue(probe(port), f"{name}: not serving with a [connection] table")
                finally:
                    stop(proc)
        finally:
            os.unlink(good)
            os.unlink(bad)

    def kv_session(self, *flags):
        """Three commands on one kv_server connection: what came back before it closed."""
        proc, port = start("kv_server", *flags)
        try:
            with connect(port) as s:
                s.sendall(b"SET k v\n")
                got = b""
                s.settimeout(5)
                while b"OK\n" not in got:
                    got += s.recv(4096)
                s.sendall(b"GET k\nGET k\n")
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        return got
                    got += chunk
        finally:
            stop(proc)

    def test_an_application_table_extends_the_configuration(self):
        # [kv] max_commands (kv_policy.hpp): after the second answer, BYE max-commands and the close.
        path = config_file("[kv]\nmax_commands = 2\n[idle]\nreader_idle = \"30s\"\n")
        try:
            self.assertEqual(self.kv_session("--config", path), b"OK\nVALUE v\nBYE max-commands\n")
            # The flag sets the same field, and wins over the file.
            self.assertEqual(self.kv_session("--config", path, "--max-commands", "1"), b"OK\nBYE max-commands\n")
            bad = config_file("[kv]\nmax_commands = -1\n")
            p = subprocess.run([os.path.join(BUILD, "examples", "kv_server"), "--config", bad], capture_output=True,
                               text=True, timeout=10)
            os.unlink(bad)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("kv.max_commands", p.stderr)
        finally:
            os.unlink(path)

    def test_the_http_and_websocket_tables_come_from_the_same_file(self):
        path = config_file("[http]\nmax_requests = 1\n")
        try:
            proc, port = start("http_server", "--config", path)
            try:
                with connect(port) as s:
                    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                    s.settimeout(5)
                    got = b""
                    while True:
                        chunk = s.recv(4096)
                        if not chunk:
                            break
                        got += chunk
                self.assertIn(b"Connection: close", got)  # the first request was its last
                self.assertTrue(got.endswith(b"hello\n"), got)
            finally:
                stop(proc)
        finally:
            os.unlink(path)
        for binary, text, key in [("http_server", "[http]\nheader_limit = 10\n", "http.header_limit"),
                                  ("ws_chat_server", "[websocket]\nmax_message = 8\n", "websocket.max_message")]:
            path = config_file(text)
            p = subprocess.run([os.path.join(BUILD, "examples", binary), "--config", path], capture_output=True,
                               text=True, timeout=10)
            os.unlink(path)
            self.assertEqual(p.returncode, 2, (binary, p.stderr))
            self.assertIn(key, p.stderr, binary)


if __name__ == "__main__":
    warnings.simplefilter("ignore", ResourceWarning)
    side_by_side.main(__file__)
