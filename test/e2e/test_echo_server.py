"""End-to-end tests of echo_server and echo_client through real processes and sockets on 127.0.0.1,
over TCP and TLS: the protocol, every BYE reason, heartbeats, limits, the stats/metrics output, the
graceful stop, bad flags and config, and the client's JSON summary. Bounded in time and count."""
import json
import os
import signal
import socket
import ssl
import subprocess
import time
import unittest
import shutil
import tempfile
import threading
import urllib.request

import side_by_side
from harness import (CLIENT, SERVER, Line, Server, cpu_seconds, make_cert, only_fd_exhaustion_reports, parse_stats,  # noqa: E402
                     rss_mib, run_client, tempdir, tls_cipher, tls_flags)

SANITIZED = bool(os.environ.get("HEARTWHEEL_SANITIZE"))  # sanitizer allocators keep freed memory



class Transport:
    """Runs a liveness scenario over plain TCP or TLS."""
    tls = False

    def setUp(self):
        self.tmp = tempdir()
        self.flags = []
        self.ca = None
        if self.tls:
            cert, key = make_cert(self.tmp.name)
            self.flags = ["--tls", "--cert", cert, "--key", key]
            self.ca = cert

    def tearDown(self):
        self.tmp.cleanup()

    def server(self, *flags):
        return Server(*self.flags, *flags)

    def connect(self, srv, answer_pings=False):
        return Line(srv.port, tls_ca=self.ca, answer_pings=answer_pings)

    def test_echo_ping_pong(self):
        with self.server() as srv:
            c = self.connect(srv)
            c.send("hello world\nPING abc\nPONG zzz\nPING\n\n")
            self.assertEqual(c.readline(), "hello world")
            self.assertEqual(c.readline(), "PONG abc")
            self.assertEqual(c.readline(), "PING")  # no token: plain data, echoed
            self.assertEqual(c.readline(), "")      # empty line echoed; the PONG was consumed
            c.close()

    def test_silent_peer_closed_by_reader_idle(self):
        with self.server("--reader-idle", "300") as srv:
            start = time.monotonic()  # before connect: the server's idle clock starts after this
            c = self.connect(srv)
            line, _ = c.wait_for("BYE", timeout=5)
            self.assertEqual(line, "BYE reader-idle")
            self.assertGreaterEqual(time.monotonic() - start, 0.29)
            self.assertIsNone(c.readline(timeout=2))  # closed after the BYE

    def test_read_timeout_counts_every_byte(self):
        """--read-timeout closes a peer that sends nothing; unlike reader idleness, any byte counts,
        so a peer trickling a line one byte at a time is kept. Both timer modes implement it."""
        for timers in ("wheel", "asio"):
            with self.subTest(timers=timers), self.server("--timers", timers, "--read-timeout", "300") as srv:
                start = time.monotonic()  # before connect: the server's clock starts after this
                quiet = self.connect(srv)
                line, _ = quiet.wait_for("BYE", timeout=5)
                self.assertEqual(line, "BYE read-timeout")
                self.assertGreaterEqual(time.monotonic() - start, 0.29)
                self.assertIsNone(quiet.readline(timeout=2))  # closed after the BYE
                trickle = self.connect(srv)
                for _ in range(8):  # 0.8 s in all, a byte every 0.1 s
                    trickle.send("x")
                    time.sleep(0.1)
                trickle.send("\n")
                self.assertEqual(trickle.readline(), "x" * 8)  # still open: no BYE before the echo
                trickle.close()

    def test_peer_answering_pings_survives(self):
        with self.server("--heartbeat-interval", "100", "--heartbeat-timeout", "80", "--heartbeat-misses", "2") as srv:
            c = self.connect(srv, answer_pings=True)
            line, _ = c.wait_for("BYE", timeout=1.2)
            self.assertIsNone(line)
            self.assertGreaterEqual(c.pings, 5)
            c.send("still here\n")
            self.assertEqual(c.readline(), "still here")

    def test_peer_not_answering_closed_after_misses(self):
        with self.server("--heartbeat-interval", "100", "--heartbeat-timeout", "80", "--heartbeat-misses", "3") as srv:
            start = time.monotonic()  # before connect: the server's clocks start after this
            c = self.connect(srv)
            pings = 0
            while True:
                line = c.readline(timeout=5)
                self.assertIsNotNone(line, "closed without BYE")
                if line.startswith("PING "):
                    pings += 1
                    continue
                break
            self.assertEqual(line, "BYE heartbeat-timeout")
            self.assertEqual(pings, 3)
            # dead after (misses - 1) * interval + timeout from the first ping (sent 100 ms in)
            self.assertGreaterEqual(time.monotonic() - start, 0.1 + 2 * 0.1 + 0.08 - 0.01)

    def test_slow_draining_peer_is_not_write_idle(self):
        """The peer sends 8 MB lines and reads 64 KB per 20 ms: each echo takes seconds to drain, far
        longer than --writer-idle, but the socket keeps accepting pieces of it. Progress counts as
        activity, so the server must not close it as writer-idle. (The kernel reports a socket writable
        only when a good part of its send buffer is free, so the idle period must exceed that.)"""
        # Under a sanitizer (and a parallel ctest) the server itself can take over a second between
        # two writes of a TLS echo: its own slowness, not the peer's.
        idle = "3000" if SANITIZED else "1000"
        srv = self.server("--writer-idle", idle, "--max-line", "9000000", "--output-hard-limit", "64MiB")
        c = self.connect(srv)
        c.sock.setblocking(False)
        would_block = (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError)
        pending, received = b"", 0
        end = time.monotonic() + 4.0
        while time.monotonic() < end:
            if len(pending) < 1 << 20:
                pending += b"y" * (8 << 20) + b"\n"
            try:
                pending = pending[c.sock.send(pending[:1 << 20]):]
            except would_block:
                pass
            except (OSError, ssl.SSLError):
                self.fail("server closed the connection: " + srv.stop()[1])
            budget = 65536  # per tick; a TLS recv returns at most one record
            while budget > 0:
                try:
                    chunk = c.sock.recv(budget)
                except would_block:
                    break
                except (OSError, ssl.SSLError):
                    chunk = b""
                if chunk == b"":
                    self.fail("server closed the connection: " + srv.stop()[1])
                received += len(chunk)
                budget -= len(chunk)
            time.sleep(0.02)
        code, out, stop_err = srv.stop()
        self.assertEqual(code, 0, stop_err)
        final = [line for line in out.splitlines() if line.startswith("final ")][0]
        self.assertNotIn("writer-idle", final)
        self.assertIn("shutdown:1", final)
        self.assertGreater(received, 2 << 20)
        self.assertLess(received, 16 << 20)  # under 4 MB/s: each 8 MB echo took well over 1 s


class TcpTransport(Transport, unittest.TestCase):
    tls = False


class TlsTransport(Transport, unittest.TestCase):
    tls = True

    def test_handshake_timeout(self):
        with self.server("--handshake-timeout", "300") as srv:
            start = time.monotonic()  # before connect: the server's clock starts at accept, after this
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            s.settimeout(5)
            self.assertEqual(s.recv(100), b"")  # closed, no handshake ever started
            self.assertGreaterEqual(time.monotonic() - start, 0.29)
            good = self.connect(srv)  # unaffected
            good.send("ok\n")
            self.assertEqual(good.readline(), "ok")

    def test_garbage_instead_of_client_hello(self):
        with self.server("--handshake-timeout", "2000") as srv:
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            s.sendall(b"GET / HTTP/1.0\r\n\r\n" * 10)
            s.settimeout(5)
            try:
                data = s.recv(1000)
                while data:
                    data = s.recv(1000)
            except ConnectionResetError:
                pass
            good = self.connect(srv)
            good.send("ok\n")
            self.assertEqual(good.readline(), "ok")


class TlsPolicy(unittest.TestCase):
    """TLS 1.2 or later, forward-secret AEAD suites only for TLS 1.2, checked with openssl s_client and,
    when Debian's sslscan is installed (the test command installs it), with a scanner."""

    def handshake(self, port, *args):
        return tls_cipher(port, *args)

    def test_protocols_and_suites(self):
        with tempdir() as d:
            cert, key = make_cert(d)
            with Server("--tls", "--cert", cert, "--key", key) as srv:
                self.assertIsNone(self.handshake(srv.port, "-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0"))
                self.assertIsNone(self.handshake(srv.port, "-tls1", "-cipher", "DEFAULT:@SECLEVEL=0"))
                self.assertIsNone(self.handshake(srv.port, "-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA"))  # CBC
                self.assertIsNone(self.handshake(srv.port, "-tls1_2", "-cipher", "AES128-GCM-SHA256"))  # static RSA kx
                self.assertEqual(self.handshake(srv.port, "-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256"),
                                 "ECDHE-ECDSA-AES128-GCM-SHA256")
                self.assertIsNotNone(self.handshake(srv.port, "-tls1_3"))
                if shutil.which("sslscan"):
                    scan = subprocess.run(["sslscan", "--no-colour", f"127.0.0.1:{srv.port}"], capture_output=True,
                                          text=True, timeout=120).stdout
                    for old in ("SSLv2", "SSLv3", "TLSv1.0", "TLSv1.1"):
                        self.assertRegex(scan, rf"{old}\s+disabled", scan)
                    accepted = [l for l in scan.splitlines() if l.strip().startswith(("Accepted", "Preferred"))]
                    self.assertTrue(accepted, scan)
                    for l in accepted:
                        self.assertRegex(l, r"GCM|CHACHA20", l)
                    self.assertNotIn("Compression enabled", scan)
                    print("sslscan: " + "; ".join(" ".join(l.split()) for l in accepted))
            p = subprocess.run([SERVER, "--listen", "127.0.0.1:0", "--tls", "--cert", cert, "--key", key,
                                "--tls-ciphers", "NO-SUCH-SUITE"], capture_output=True, text=True, timeout=10)
            self.assertEqual(p.returncode, 1)
            self.assertIn("--tls-ciphers", p.stderr)
            with Server("--tls", "--cert", cert, "--key", key, "--tls-ciphers", "ECDHE+CHACHA20") as srv:
                self.assertEqual(self.handshake(srv.port, "-tls1_2"), "ECDHE-ECDSA-CHACHA20-POLY1305")

    def test_finite_field_groups_are_refused(self):
        """Key-exchange amplification: a ClientHello offering only ffdhe groups (an ffdhe8192 key share
        costs the server ~125 ms of CPU, x25519 ~0.4 ms) is refused; X25519 and P-256 are served;
        --tls-groups overrides the list and a bad one stops the server at start."""
        with tempdir() as d:
            cert, key = make_cert(d)
            with Server("--tls", "--cert", cert, "--key", key) as srv:
                self.assertIsNone(self.handshake(srv.port, "-tls1_3", "-groups", "ffdhe2048:ffdhe8192"))
                self.assertIsNone(self.handshake(srv.port, "-tls1_2", "-groups", "ffdhe2048:ffdhe8192"))
                self.assertIsNotNone(self.handshake(srv.port, "-tls1_3", "-groups", "X25519"))
                self.assertIsNotNone(self.handshake(srv.port, "-tls1_3", "-groups", "P-256"))
                # (TLS 1.2 also needs the certificate's own curve, P-256, among the client's groups)
                self.assertIsNotNone(self.handshake(srv.port, "-tls1_2", "-groups", "X25519:P-256"))
            with Server("--tls", "--cert", cert, "--key", key, "--tls-groups", "P-384") as srv:
                self.assertIsNone(self.handshake(srv.port, "-tls1_3", "-groups", "X25519"))
                self.assertIsNotNone(self.handshake(srv.port, "-tls1_3", "-groups", "P-384"))
            p = subprocess.run([SERVER, "--listen", "127.0.0.1:0", "--tls", "--cert", cert, "--key", key,
                                "--tls-groups", "no-such-group"], capture_output=True, text=True, timeout=10)
            self.assertEqual(p.returncode, 1)
            self.assertIn("--tls-groups", p.stderr)


class Limits(unittest.TestCase):
    def test_line_too_long(self):
        with Server("--max-line", "10") as srv:
            c = Line(srv.port)
            c.send("0123456789\n")  # exactly 10 bytes before the newline: fine
            self.assertEqual(c.readline(), "0123456789")
            c.send("01234567890\n")
            self.assertEqual(c.wait_for("BYE")[0], "BYE line-too-long")

    def test_max_connections_busy(self):
        with Server("--max-connections", "2") as srv:
            a, b = Line(srv.port), Line(srv.port)
            a.send("a\n")
            self.assertEqual(a.readline(), "a")
            b.send("b\n")
            self.assertEqual(b.readline(), "b")
            c = Line(srv.port)
            self.assertEqual(c.readline(), "BYE busy")
            a.send("still\n")
            self.assertEqual(a.readline(), "still")

    def test_max_age(self):
        with Server("--max-age", "300") as srv:
            c = Line(srv.port, answer_pings=True)
            line, waited = c.wait_for("BYE", timeout=5)
            self.assertEqual(line, "BYE max-age")
            self.assertGreaterEqual(waited, 0.26)  # 300 ms - 10 % jitter

    def test_writer_and_all_idle(self):
        for flag, reason in (("--writer-idle", "writer-idle"), ("--all-idle", "all-idle")):
            with Server(flag, "200") as srv:
                c = Line(srv.port)
                self.assertEqual(c.wait_for("BYE")[0], "BYE " + reason)

    def test_asio_timers_mode_behaves_the_same(self):
        with Server("--timers", "asio", "--reader-idle", "800", "--heartbeat-interval", "50",
                    "--heartbeat-timeout", "40") as srv:
            c = Line(srv.port, answer_pings=True)
            c.send("x\n")
            self.assertEqual(c.readline(), "x")
            self.assertEqual(c.wait_for("BYE")[0], "BYE reader-idle")
            d = Line(srv.port)
            self.assertEqual(d.wait_for("BYE")[0], "BYE heartbeat-timeout")


class BadPeerInput(unittest.TestCase):
    """Rows of docs/reliability.md: each odd input gets a defined outcome and the server keeps serving."""

    def test_binary_nul_and_invalid_utf8_are_echoed_byte_for_byte(self):
        with Server() as srv:
            c = Line(srv.port)
            payload = b"\x00\x01\xff\xfe bin \xc3\x28 \xed\xa0\x80 \x00\r"
            c.send(payload + b"\n")
            deadline = time.monotonic() + 5
            while b"\n" not in c.buf and time.monotonic() < deadline:
                c.sock.settimeout(1)
                c.buf += c.sock.recv(4096)
            self.assertEqual(c.buf.split(b"\n", 1)[0], payload)

    def test_malformed_control_lines_are_data(self):
        with Server() as srv:
            c = Line(srv.port)
            for line in ("PING", "PING ", "PINGX 1", "ping 1", "PONG", "BYE you", " PING 1"):
                c.send(line + "\n")
                self.assertEqual(c.readline(), line)

    def test_partial_line_at_close_and_abrupt_resets_do_not_hurt(self):
        with Server("--stats-interval", "50") as srv:
            for i in range(20):
                s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
                s.sendall(b"no newline here" * (i + 1))
                if i % 2:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                s.close()  # half the time a RST
            c = Line(srv.port)
            c.send("alive\n")
            self.assertEqual(c.readline(), "alive")
            c.close()
            code, out, stop_err = srv.stop()
            self.assertEqual(code, 0, stop_err)
            self.assertIn("final connections=0 accepted=21", out)

    def test_empty_connection(self):
        with Server() as srv:
            for _ in range(10):
                socket.create_connection(("127.0.0.1", srv.port), timeout=5).close()
            c = Line(srv.port)
            c.send("ok\n")
            self.assertEqual(c.readline(), "ok")


class Lifecycle(unittest.TestCase):
    def test_sigterm_says_bye_shutdown_and_exits_0(self):
        srv = Server("--stats-interval", "100")
        conns = [Line(srv.port) for _ in range(5)]
        for i, c in enumerate(conns):
            c.send(f"n{i}\n")
            self.assertEqual(c.readline(), f"n{i}")
        time.sleep(0.35)  # a few stats lines
        start = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        for c in conns:
            self.assertEqual(c.wait_for("BYE")[0], "BYE shutdown")
        code, out, _ = srv.stop(timeout=10)
        self.assertEqual(code, 0)
        self.assertLess(time.monotonic() - start, 5)
        self.assertIn("final connections=0", out)
        self.assertIn("shutdown:5", out)
        self.assertIn("stats connections=", out)

    def test_sigterm_drains_spread_over_the_window_then_exits_0(self):
        """--drain-window 1000: the first SIGTERM stops accepting and asks the 20 clients to leave with
        BYE draining 1000, a few at a time over the second (not all at once); every close is counted
        draining, and the server exits 0."""
        with Server("--drain-window", "1000") as srv:
            clients = [Line(srv.port) for _ in range(20)]
            for i, c in enumerate(clients):
                c.send(f"hi {i}\n")
                self.assertEqual(c.readline(), f"hi {i}")
            seen = [None] * len(clients)

            def watch(i):
                seen[i] = clients[i].wait_for("BYE", timeout=5)
            watchers = [threading.Thread(target=watch, args=(i,)) for i in range(len(clients))]
            srv.proc.send_signal(signal.SIGTERM)
            for t in watchers:
                t.start()
            time.sleep(0.2)
            with self.assertRaises(OSError):  # no longer accepting
                socket.create_connection(("127.0.0.1", srv.port), timeout=1).close()
            for t in watchers:
                t.join()
            out, err = srv.proc.communicate(timeout=20)
        self.assertEqual(srv.proc.returncode, 0, err)
        self.assertEqual({line for line, _ in seen}, {"BYE draining 1000"})
        times = sorted(t for _, t in seen)
        print(f"drain of 20 over 1000 ms: first BYE after {times[0]:.2f} s, last after {times[-1]:.2f} s")
        self.assertLess(times[0], 0.3, times)
        self.assertGreater(times[-1], 0.6, times)  # spread over the window
        self.assertLess(times[-1], 2.0, times)
        final = parse_stats([l for l in out.splitlines() if l.startswith("final ")][0])
        self.assertEqual(final["closes"], {"draining": 20}, final)

    def test_a_second_signal_during_a_drain_shuts_down_at_once(self):
        with Server("--drain-window", "10000") as srv:
            clients = [Line(srv.port) for _ in range(10)]
            for c in clients:
                c.send("x\n")
                self.assertEqual(c.readline(), "x")
            start = time.monotonic()
            srv.proc.send_signal(signal.SIGTERM)
            time.sleep(0.3)
            srv.proc.send_signal(signal.SIGTERM)
            said = [c.wait_for("BYE", timeout=5)[0] for c in clients]
            out, err = srv.proc.communicate(timeout=20)
            took = time.monotonic() - start
        self.assertEqual(srv.proc.returncode, 0, err)
        self.assertLess(took, 5.0)  # not the 10 s window
        self.assertIn("BYE draining 10000", said)  # the first few were asked to leave
        self.assertIn("BYE shutdown", said)        # the rest went at the second signal
        final = parse_stats([l for l in out.splitlines() if l.startswith("final ")][0])
        self.assertEqual(sum(final["closes"].values()), 10, final)

    def test_metrics_endpoint(self):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        with Server("--metrics", f"127.0.0.1:{port}") as srv:
            c = Line(srv.port)
            c.send("x\n")
            c.readline()
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
            self.assertIn("heartwheel_connections 1", body)
            self.assertIn('heartwheel_closes_total{reason="reader-idle"} 0', body)
            self.assertIn("# TYPE heartwheel_accepted_total counter", body)

    def test_metrics_listener_port_zero_bare_newlines_404_and_bounds(self):
        with Server("--metrics", "127.0.0.1:0") as srv:
            line = srv.proc.stdout.readline()  # after the pinned first line
            self.assertTrue(line.startswith("metrics on 127.0.0.1:"), line)
            mport = int(line.strip().rsplit(":", 1)[1])
            self.assertNotEqual(mport, 0)

            def get(request):
                with socket.create_connection(("127.0.0.1", mport), timeout=5) as s:
                    s.sendall(request)
                    data = b""
                    while chunk := s.recv(65536):
                        data += chunk
                    return data.decode()

            self.assertIn("heartwheel_connections", get(b"GET /metrics HTTP/1.0\n\n"))  # bare \n
            self.assertTrue(get(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").startswith("HTTP/1.0 200 OK"))
            self.assertTrue(get(b"GET /other HTTP/1.0\n\n").startswith("HTTP/1.0 404"))
            # Idle scrapers hold at most 8 slots, and each for at most 1 s (the head's deadline); the
            # server is unaffected.
            idle = [socket.create_connection(("127.0.0.1", mport)) for _ in range(20)]
            c = Line(srv.port)
            c.send("fine\n")
            self.assertEqual(c.readline(), "fine")
            start = time.monotonic()
            for s in idle:
                s.settimeout(8)
                self.assertEqual(s.recv(10), b"")  # closed: evicted by a newer one, else at 1 s
                s.close()
            self.assertLess(time.monotonic() - start, 3.5)
            self.assertIn("heartwheel_connections 1", get(b"GET /metrics HTTP/1.0\n\n"))

    def test_metrics_survive_slowloris(self):
        """12 slowloris connections trickle a request head a byte every 200 ms and keep all 8 scrape
        places busy; scrapes made meanwhile still succeed — each evicts the oldest unfinished one —
        and a head that is not done within 1 s is closed. (Before: 25 of 27 scrapes failed.)"""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            mport = probe.getsockname()[1]
        with Server("--metrics", f"127.0.0.1:{mport}") as srv:
            stop = threading.Event()

            def slowloris():
                while not stop.is_set():
                    try:
                        with socket.create_connection(("127.0.0.1", mport), timeout=5) as s:
                            for b in b"GET /metrics HTTP/1.1\r\nX-Slow: yes":
                                if stop.is_set():
                                    return
                                s.sendall(bytes([b]))
                                time.sleep(0.2)
                    except OSError:
                        time.sleep(0.05)  # closed by the server: come back

            attackers = [threading.Thread(target=slowloris, daemon=True) for _ in range(12)]
            for a in attackers:
                a.start()
            time.sleep(1.0)
            ok, tried = 0, 0
            for _ in range(20):
                tried += 1
                try:
                    samples = scrape_metrics(mport)
                    ok += "heartwheel_accepted_total" in samples
                except OSError:
                    pass
                time.sleep(0.1)
            stop.set()
            for a in attackers:
                a.join(timeout=10)
            print(f"metrics under 12 slowloris connections: {ok} of {tried} scrapes answered")
            self.assertEqual(ok, tried)
            c = Line(srv.port)
            c.send("fine\n")
            self.assertEqual(c.readline(), "fine")

    def test_metrics_pass_promtool(self):
        # Prometheus' own checker on the live endpoint (Debian's prometheus package, installed by the
        # test command); RTT and timer lateness are histograms, fds and the wheel's health are exported.
        self.assertIsNotNone(shutil.which("promtool"), "promtool missing: bash scripts/install-deps.sh installs it")
        # Pings every 50 ms are answered while the client reads; the long timeout means a client not read
        # while promtool runs (seconds on a loaded machine) is never closed heartbeat-timeout, which
        # would take one descriptor away from the count checked below.
        with Server("--metrics", "127.0.0.1:0", "--heartbeat-interval", "50", "--heartbeat-timeout", "60000") as srv:
            mport = int(srv.proc.stdout.readline().strip().rsplit(":", 1)[1])
            c = Line(srv.port, answer_pings=True)
            c.send("x\n")
            self.assertEqual(c.readline(), "x")
            self.assertIsNone(c.wait_for("BYE", timeout=0.6)[0])  # a few answered pings
            body = urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=5).read().decode()
            p = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            values = {}
            for line in body.splitlines():
                if line and not line.startswith("#"):
                    name, value = line.rsplit(" ", 1)
                    values[name] = float(value)
            self.assertIn("# TYPE heartwheel_rtt_seconds histogram", body)
            self.assertGreater(values["heartwheel_rtt_seconds_count"], 0)
            self.assertEqual(values['heartwheel_rtt_seconds_bucket{le="+Inf"}'], values["heartwheel_rtt_seconds_count"])
            self.assertGreater(values["heartwheel_timer_lateness_seconds_count"], 0)
            self.assertGreater(values["heartwheel_driver_wakeups_total"], 0)
            self.assertGreater(values["process_open_fds"], 3)
            self.assertGreater(values["process_max_fds"], values["process_open_fds"])
            self.assertGreaterEqual(values["heartwheel_pongs_received_total"], 1)
            self.assertGreaterEqual(values["heartwheel_lines_total"], 2)
            # process_open_fds counts descriptors, not a constant: four more connections, four more.
            more = [Line(srv.port) for _ in range(4)]
            for m in more:
                m.send("y\n")
                self.assertEqual(m.readline(), "y")
            body = urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=5).read().decode()
            fds = [float(line.rsplit(" ", 1)[1]) for line in body.splitlines() if line.startswith("process_open_fds ")]
            self.assertEqual(fds, [values["process_open_fds"] + 4])

    def test_threads_share_the_load(self):
        # heartbeat-timeout at ~390 ms (3 misses), reader-idle far later: no race even under sanitizers
        with Server("--threads", "2", "--reader-idle", "2000", "--heartbeat-interval", "100",
                    "--heartbeat-timeout", "90", "--stats-interval", "100") as srv:
            s = run_client("--connect", f"127.0.0.1:{srv.port}", "--connections", "40", "--send-interval", "20",
                           "--request-timeout", "1000", "--duration", "800")
            self.assertEqual(s.returncode, 0, s.stderr)
            data = json.loads(s.stdout.strip().splitlines()[-1])
            self.assertEqual(data["connects"], 40)
            self.assertEqual(data["timeouts"], 0)
            self.assertGreater(data["responses"], 400)
            silent = [Line(srv.port) for _ in range(4)]  # spread over both threads
            for c in silent:
                self.assertEqual(c.wait_for("BYE")[0], "BYE heartbeat-timeout")
            code, out, err = srv.stop()
            self.assertEqual(code, 0, err)
            self.assertIn("heartbeat-timeout:4", out.splitlines()[-1])

    def test_survives_a_closed_stdout(self):
        # `echo_server --stats-interval 200 | head -1`: the pipe closes; SIGPIPE used to kill it (141).
        proc = subprocess.Popen([SERVER, "--listen", "127.0.0.1:0", "--stats-interval", "50"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        port = int(proc.stdout.readline().strip().rsplit(":", 1)[1])
        proc.stdout.readline()  # a stats line
        proc.stdout.close()  # the reader goes away
        time.sleep(0.5)  # several stats lines fail to be written
        self.assertIsNone(proc.poll(), "the server died when its stdout closed")
        c = Line(port)
        c.send("still serving\n")
        self.assertEqual(c.readline(), "still serving")
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(timeout=10), 0)
        proc.stderr.close()

    def test_key_not_matching_cert_is_refused_at_start(self):
        with tempdir() as d:
            cert, _ = make_cert(d)  # an EC certificate ...
            rsa = os.path.join(d, "rsa.pem")  # ... and an RSA key that is not its own
            subprocess.run(["openssl", "genrsa", "-out", rsa, "2048"], check=True, capture_output=True)
            p = subprocess.run([SERVER, "--listen", "127.0.0.1:0", "--tls", "--cert", cert, "--key", rsa],
                               capture_output=True, text=True, timeout=10)
            self.assertNotEqual(p.returncode, 0)
            self.assertNotIn("listening on", p.stdout)
            self.assertIn("the private key " + rsa + " does not match the certificate", p.stderr)

    def test_port_in_use_exits_1(self):
        with Server() as srv:
            p = subprocess.run([SERVER, "--listen", f"127.0.0.1:{srv.port}"], capture_output=True, text=True, timeout=10)
            self.assertEqual(p.returncode, 1)
            self.assertIn(f"cannot listen on 127.0.0.1:{srv.port}", p.stderr)


class PastOneProcess(unittest.TestCase):
    """--reuse-port lets several server processes share one port (the kernel spreads connections over
    them); echo_client --source spreads its connections over local addresses of 127.0.0.0/8."""

    def test_two_servers_share_a_port_and_both_serve(self):
        with Server("--reuse-port", "--metrics", "127.0.0.1:0") as a:
            ma = int(a.proc.stdout.readline().strip().rsplit(":", 1)[1])
            with Server("--reuse-port", "--metrics", "127.0.0.1:0", port=a.port) as b:
                mb = int(b.proc.stdout.readline().strip().rsplit(":", 1)[1])
                clients = [Line(a.port) for _ in range(24)]
                for i, c in enumerate(clients):
                    c.send(f"hi {i}\n")
                    self.assertEqual(c.readline(), f"hi {i}")
                on_a = IdleBuffers.gauge(ma, "heartwheel_connections")
                on_b = IdleBuffers.gauge(mb, "heartwheel_connections")
                self.assertEqual(on_a + on_b, 24)
                self.assertGreater(on_a, 0)  # 24 connections all on one side: odds of 2^-23
                self.assertGreater(on_b, 0)
                for c in clients:
                    c.close()
        # Without --reuse-port the second server cannot listen there.
        with Server() as srv:
            p = subprocess.run([SERVER, "--reuse-port", "--listen", f"127.0.0.1:{srv.port}"], capture_output=True,
                               text=True, timeout=10)
            self.assertEqual(p.returncode, 1)

    def test_client_connects_from_each_source_address(self):
        with socket.socket() as lsock:
            lsock.bind(("127.0.0.1", 0))
            lsock.listen(64)
            lsock.settimeout(10)
            port = lsock.getsockname()[1]
            client = subprocess.Popen([CLIENT, "--quiet", "--connect", f"127.0.0.1:{port}", "--connections", "6",
                                       "--send-interval", "0", "--duration", "3000",
                                       "--source", "127.0.0.2,127.0.0.5-127.0.0.6"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                peers = []
                for _ in range(6):
                    conn, addr = lsock.accept()
                    peers.append(addr[0])
                    conn.close()
            finally:
                client.kill()
                client.wait()
            self.assertEqual(sorted(peers), ["127.0.0.2", "127.0.0.2", "127.0.0.5", "127.0.0.5", "127.0.0.6",
                                             "127.0.0.6"])

    def test_bad_source_exits_2_naming_the_flag(self):
        for bad in ("nonsense", "127.0.0.9-127.0.0.1", "10.0.0.0-10.2.0.0"):
            p = subprocess.run([CLIENT, "--source", bad], capture_output=True, text=True, timeout=10)
            self.assertEqual(p.returncode, 2, (bad, p.stderr))
            self.assertIn("--source", p.stderr)
            self.assertIn("ranges A-B", p.stderr)


class BadInput(unittest.TestCase):
    def run_server(self, *args):
        return subprocess.run([SERVER, *args], capture_output=True, text=True, timeout=10)

    def test_invalid_flags_name_flag_value_and_range(self):
        cases = [
            (["--reader-idle", "-5"], "--reader-idle", "-5", "0.."),
            (["--reader-idle=abc"], "--reader-idle", "abc", "milliseconds"),
            (["--heartbeat-misses", "0"], "--heartbeat-misses", "0", "1..1000"),
            (["--heartbeat-jitter", "2"], "--heartbeat-jitter", "2", "0..0.5"),
            (["--timers", "fast"], "--timers", "fast", "wheel, asio or none"),
            (["--listen", "nonsense"], "--listen", "nonsense", "HOST:PORT"),
            (["--listen", "127.0.0.1:70000"], "--listen", "70000", "0..65535"),
            (["--threads", "0"], "--threads", "0", "1..256"),
            (["--heartbeat-interval", "100", "--heartbeat-timeout", "0"], "--heartbeat-timeout", "0", "1.."),
            (["--reader-idle", "10x"], "--reader-idle", "10x", "30s"),
            (["--tick", "2h"], "--tick", "2h", "1..1000"),
            (["--heartbeat-rtt-factor", "-1"], "--heartbeat-rtt-factor", "-1", "0..100"),
            (["--overload-threshold", "2"], "--overload-threshold", "2", "0..0.99"),
            (["--reader-idle-min", "150%"], "--reader-idle-min", "150%", "percentage"),
            (["--reader-idle", "1000", "--reader-idle-min", "5s"], "--reader-idle-min", "5000", "at most --reader-idle"),
            (["--source-share", "lots"], "--source-share", "lots", "0..10000000 (or auto)"),
        ]
        for args, flag, value, accepted in cases:
            p = self.run_server(*args)
            self.assertEqual(p.returncode, 2, args)
            msg = p.stderr.strip()
            self.assertEqual(len(msg.splitlines()), 1, msg)
            for part in (flag, value, accepted):
                self.assertIn(part, msg, args)

    def test_unknown_flag_and_tls_without_cert(self):
        self.assertEqual(self.run_server("--no-such-flag").returncode, 2)
        p = self.run_server("--tls")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--cert", p.stderr)

    def test_help_lists_flags_with_defaults(self):
        p = self.run_server("--help")
        self.assertEqual(p.returncode, 0)
        for flag in ("--listen", "--reader-idle", "--heartbeat-interval", "--timers", "--max-line", "--tls", "--metrics"):
            self.assertIn(flag, p.stdout)
        self.assertIn("65536", p.stdout)

    def test_config_file_and_flag_override(self):
        with tempdir() as d:
            cfg = os.path.join(d, "server.toml")
            with open(cfg, "w") as f:
                f.write('reader_idle = 200\nmax_line = 5\nlisten = "127.0.0.1:0"\n')
            with Server("--config", cfg, "--max-line=100") as srv:
                c = Line(srv.port)
                c.send("0123456789\n")  # max_line 5 from the file is overridden by the flag
                self.assertEqual(c.readline(), "0123456789")
                self.assertEqual(c.wait_for("BYE")[0], "BYE reader-idle")
            with open(cfg, "w") as f:
                f.write("reader_idle = -1\n")
            p = self.run_server("--config", cfg)
            self.assertEqual(p.returncode, 2)
            self.assertIn("reader_idle", p.stderr)
            self.assertIn("-1", p.stderr)
            with open(cfg, "w") as f:
                f.write("reader_idel = 5\n")
            p = self.run_server("--config", cfg)
            self.assertEqual(p.returncode, 2)
            self.assertIn("reader_idel", p.stderr)


    def test_config_that_is_not_a_file_or_is_empty_exits_2(self):
        with tempdir() as d:
            empty = os.path.join(d, "empty.toml")
            open(empty, "w").close()
            for path, words in ((d, "is a directory"), ("/dev/null", "not a regular file"), (empty, "empty"),
                                (os.path.join(d, "missing.toml"), "No such file")):
                for binary in (SERVER, CLIENT):
                    p = subprocess.run([binary, "--config", path], capture_output=True, text=True, timeout=10)
                    self.assertEqual(p.returncode, 2, (binary, path, p.stderr))
                    self.assertIn(path, p.stderr)
                    self.assertIn(words, p.stderr)
                    self.assertNotIn("line 0", p.stderr)

    def test_config_types_units_and_liveness_tables(self):
        with tempdir() as d:
            cfg = os.path.join(d, "server.toml")
            with open(cfg, "w") as f:
                f.write('reader_idle = "100"\n')  # a string where a number belongs: refused
            p = self.run_server("--config", cfg)
            self.assertEqual(p.returncode, 2)
            self.assertIn("reader_idle", p.stderr)
            self.assertIn("unit", p.stderr)
            with open(cfg, "w") as f:  # net's liveness tables in the binary's file, durations with units
                f.write('listen = "127.0.0.1:0"\n[idle]\nreader_idle = "300ms"\n[heartbeat]\ninterval = "10s"\n')
            with Server("--config", cfg) as srv:
                start = time.monotonic()
                c = Line(srv.port)
                self.assertEqual(c.wait_for("BYE", timeout=5)[0], "BYE reader-idle")
                self.assertGreaterEqual(time.monotonic() - start, 0.29)
            with open(cfg, "w") as f:
                f.write('[heartbeat]\nmisses = 0\n')
            p = self.run_server("--config", cfg)
            self.assertEqual(p.returncode, 2)
            self.assertIn("heartbeat.misses", p.stderr)
            self.assertIn(cfg, p.stderr)
            self.assertIn("1..1000", p.stderr)
        with Server("--reader-idle", "0.3s") as srv:  # units on the command line too
            self.assertEqual(Line(srv.port).wait_for("BYE", timeout=5)[0], "BYE reader-idle")


class HeartbeatPolicy(unittest.TestCase):
    """The heartbeat timeout is independent of the interval (docs/liveness.md gives the time of death)."""

    def ping_times_until_bye(self, srv, limit):
        start = time.monotonic()  # before connect: the server's clocks start after this
        c = Line(srv.port)
        pings = []
        while True:
            line = c.readline(timeout=limit)
            self.assertIsNotNone(line, "closed without BYE")
            if line.startswith("PING "):
                pings.append(time.monotonic() - start)
                continue
            return pings, line, time.monotonic() - start

    def test_timeout_longer_than_interval(self):
        for timers in ("wheel", "asio"):
            with Server("--timers", timers, "--heartbeat-interval", "300", "--heartbeat-timeout", "600",
                        "--heartbeat-misses", "2") as srv:
                pings, bye, dead_at = self.ping_times_until_bye(srv, limit=5)
                self.assertEqual(bye, "BYE heartbeat-timeout", timers)
                # pings at P = 0.3 and P + timeout; death at P + misses * timeout = 1.5 s
                self.assertEqual(len(pings), 2, (timers, pings))
                self.assertGreaterEqual(pings[1] - pings[0], 0.55, (timers, pings))
                self.assertGreaterEqual(dead_at, 1.5 - 0.01, timers)
                self.assertLess(dead_at, 1.5 + 1.0, timers)

    def test_death_lateness_is_exported(self):
        # One silent peer, judged dead once: the death is in the lateness histogram, never early, and
        # late by at most the tick plus the wake-up (generous here: sanitizer builds, shared cores).
        for timers in ("wheel", "asio"):
            with Server("--timers", timers, "--metrics", "127.0.0.1:0", "--heartbeat-interval", "100",
                        "--heartbeat-timeout", "100", "--heartbeat-misses", "1") as srv:
                mport = int(srv.proc.stdout.readline().strip().rsplit(":", 1)[1])
                pings, bye, _ = self.ping_times_until_bye(srv, limit=5)
                self.assertEqual(bye, "BYE heartbeat-timeout", timers)
                m = scrape_metrics(mport)
                self.assertEqual(m["heartwheel_heartbeat_death_lateness_seconds_count"], 1, timers)
                self.assertEqual(m['heartwheel_heartbeat_death_lateness_seconds_bucket{le="+Inf"}'], 1, timers)
                self.assertEqual(m["heartwheel_heartbeat_deaths_judged_early_total"], 0, timers)
                # Late = past the tick's rounding (1 ms; steady_timers have none); the gauge is whole µs.
                late, bound = m["heartwheel_heartbeat_deaths_judged_late_total"], 0.001 if timers == "wheel" else 0.0
                worst = m["heartwheel_heartbeat_death_lateness_max_seconds"]
                if worst >= bound + 1e-6 or worst < bound:
                    self.assertEqual(late, 1 if worst > bound else 0, (timers, worst))
                self.assertLess(m["heartwheel_heartbeat_death_lateness_max_seconds"], 0.5, timers)
                self.assertEqual(m["heartwheel_heartbeat_death_lateness_max_seconds"],
                                 m["heartwheel_heartbeat_death_lateness_seconds_sum"], timers)

    def test_documented_flag_pairs_start_and_behave(self):
        # The two command lines: a timeout twice the interval, and an interval alone (the
        # default timeout, 10 s, is longer). An answering peer gets a ping every interval and stays.
        for flags, interval in ((["--heartbeat-interval", "1000", "--heartbeat-timeout", "2000"], 1.0),
                                (["--heartbeat-interval", "2000"], 2.0)):
            with Server(*flags) as srv:
                c = Line(srv.port, answer_pings=True)
                line, _ = c.wait_for("BYE", timeout=2 * interval + 0.6)
                self.assertIsNone(line, flags)
                self.assertEqual(c.pings, 2, flags)
                c.send("alive\n")
                self.assertEqual(c.readline(), "alive")


class HostilePeers(unittest.TestCase):
    """Peers that flood tiny lines and never read, and peers that trickle one line byte by byte."""

    @staticmethod
    def flood(port, stop, results, i):
        """Sends empty lines as fast as the server takes them and never reads; records how it ended."""
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # and never reads: the server's writes stall
        s.connect(("127.0.0.1", port))
        s.setblocking(False)
        chunk = b"\n" * 65536
        sent = 0
        try:
            while not stop.is_set():
                try:
                    sent += s.send(chunk)
                except BlockingIOError:
                    time.sleep(0.005)
        except OSError as e:  # reset by the server's close
            results[i] = ("closed", sent, type(e).__name__)
        else:
            results[i] = ("open", sent, None)
        s.close()

    def test_tiny_line_flood_from_non_readers_is_bounded_and_closed(self):
        flooders = 10
        with Server("--write-timeout", "1000", "--stats-interval", "100000") as srv:
            base = rss_mib(srv.proc.pid)
            stop = threading.Event()
            results = [None] * flooders
            threads = [threading.Thread(target=self.flood, args=(srv.port, stop, results, i)) for i in range(flooders)]
            for t in threads:
                t.start()
            good = Line(srv.port)
            # Each flooder gets a few million one-byte lines echoed (what the server's socket buffer and
            # its 1 MiB high-water mark take) before its writes stall; under ThreadSanitizer that alone
            # takes ~10 s of the server's one thread, so sanitized builds get a longer bound.
            peak, echoed, deadline = base, 0, time.monotonic() + (40 if SANITIZED else 12)
            while time.monotonic() < deadline and any(r is None for r in results):
                good.send(f"still here {echoed}\n")
                self.assertEqual(good.readline(timeout=5), f"still here {echoed}", "a healthy peer lost its echo")
                echoed += 1
                peak = max(peak, rss_mib(srv.proc.pid))
                time.sleep(0.05)
            stop.set()
            for t in threads:
                t.join(10)
            self.assertTrue(all(r is not None and r[0] == "closed" for r in results), results)
            good.send("after the flood\n")
            self.assertEqual(good.readline(), "after the flood")
            rc, out, _ = srv.stop()
            final = parse_stats([l for l in out.splitlines() if l.startswith("final ")][0])
            self.assertEqual(final["closes"].get("write-timeout"), flooders, final)
            print(f"flood: {flooders} non-readers, server RSS {base:.1f} -> peak {peak:.1f} MiB, "
                  f"bytes sent per flooder {[r[1] for r in results]}, healthy echoes {echoed}")
            if not SANITIZED:
                self.assertLess(peak - base, 64, "server memory grew by more than 64 MiB under the flood")

    def test_trickled_line_proves_liveness(self):
        # One long line, a byte every 100 ms, under heartbeats with one miss allowed and no PONG: any
        # received byte proves the peer alive (it used to be closed heartbeat-timeout after 400 ms).
        with Server("--heartbeat-interval", "200", "--heartbeat-timeout", "200", "--heartbeat-misses", "1") as srv:
            c = Line(srv.port)
            text = "trickled-line-of-bytes"
            for ch in text:
                c.send(ch)
                time.sleep(0.1)
            c.send("\n")
            while True:
                line = c.readline(timeout=5)
                self.assertIsNotNone(line, "closed while trickling")
                if line.startswith("PING "):
                    continue
                self.assertEqual(line, text)  # not a BYE
                break


class DescriptorLimit(unittest.TestCase):
    """More clients than descriptors: the server must not spin on EMFILE (it once took a core at
    100 %), must refuse the extra clients with BYE busy or a clean close, count them, and serve new
    clients once descriptors free up."""

    def test_more_clients_than_descriptors(self):
        import resource

        def low_limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

        # UBSan's vptr check validates an object's memory by writing it to a pipe; with no descriptor
        # left that pipe fails, and it reports every not-yet-cached type check as "invalid vptr" (a
        # false positive of the sanitizer, not of the server). Under sanitizers the server keeps
        # running through those reports, and only that exact report is tolerated (checked below).
        env = dict(os.environ)
        if SANITIZED:
            env["UBSAN_OPTIONS"] = "print_stacktrace=0:halt_on_error=0"
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            mport = probe.getsockname()[1]
        proc = subprocess.Popen([SERVER, "--listen", "127.0.0.1:0", "--max-connections", "1000", "--metrics",
                                 f"127.0.0.1:{mport}"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, preexec_fn=low_limit, env=env)
        try:
            port = int(proc.stdout.readline().strip().rsplit(":", 1)[1])
            held = []
            for i in range(40):  # well within the limit
                c = Line(port)
                c.send(f"h{i}\n")
                self.assertEqual(c.readline(), f"h{i}")
                held.append(c)
            extra = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(60)]
            time.sleep(0.5)

            before = cpu_seconds(proc.pid)
            time.sleep(2.0)
            used = cpu_seconds(proc.pid) - before
            answers = []
            for e in extra:  # refused (BYE busy, or closed) or still waiting (accepted as a session)
                e.settimeout(0.05)
                try:
                    answers.append(e.recv(100).decode())
                except socket.timeout:
                    answers.append("open")
                except OSError:
                    answers.append("reset")
            self.assertLess(used, 0.5, f"server used {used:.2f} s of CPU in 2 s at the descriptor limit")
            # /metrics still answers at the limit: its listener's spare descriptor, one scrape at a time.
            for _ in range(3):
                self.assertIn("heartwheel_accepted_total", scrape_metrics(mport))
            refused = sum(1 for a in answers if a in ("BYE busy\n", "", "reset"))
            self.assertGreater(refused, 0, answers)
            for e in extra:
                e.close()
            for c in held[:20]:
                c.close()
            time.sleep(0.3)
            fresh = Line(port)  # descriptors are free again: served
            fresh.send("back\n")
            self.assertEqual(fresh.readline(), "back")
            for c in held[20:]:
                c.send("still\n")
                self.assertEqual(c.readline(), "still")
        finally:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=15)
        self.assertTrue(only_fd_exhaustion_reports(err), err)  # the false positive described above
        self.assertIn("descriptor limit (64", err)
        self.assertIn("refusing new connections with BYE busy", err)
        self.assertEqual(err.count("refusing new connections"), 1, err)  # said once
        final = parse_stats([l for l in out.splitlines() if l.startswith("final ")][0])
        self.assertGreater(final["closes"].get("busy", 0), 0, final)
        self.assertEqual(int(final["accepted"]), sum(final["closes"].values()), final)
        print(f"descriptor limit 64: {used:.3f} s CPU in 2 s, {refused} of 60 extra refused, closes {final['closes']}")


class Overload(unittest.TestCase):
    """Scaled timeouts (docs/liveness.md, "Under overload"): silent peers fill the server to 90 % of
    --max-connections while ten healthy peers work. The silent ones come from 180 addresses, one each:
    every source within its share (one address's flood alone would be its excess, which does not
    count towards pressure: test_overload_victims). Reader-idle is 10 s, scaled down to 1 s at full
    pressure above a 0.5 threshold; at 95 % (190 of 200) the scale is 0.1, so the silent peers are
    closed about 1.9 s after they last spoke — never before 1 s — the healthy ones keep every echo,
    and new connections are served."""

    def test_silent_flood_is_shed_at_the_scaled_timeout(self):
        with Server("--max-connections", "200", "--reader-idle", "10000", "--reader-idle-min", "1000",
                    "--overload-threshold", "0.5", "--stats-interval", "200") as srv:
            healthy = [Line(srv.port) for _ in range(10)]
            silent, opened = [], []
            for i in range(180):
                silent.append(socket.create_connection(("127.0.0.1", srv.port), timeout=5,
                                                       source_address=(f"127.0.1.{i + 1}", 0)))
                opened.append(time.monotonic())
            for s in silent:
                s.setblocking(False)
            closed_after = [None] * len(silent)
            sent = echoed = 0
            start = time.monotonic()
            while time.monotonic() - start < 5.0 and None in closed_after:
                for c in healthy:  # a line each per round: these peers are never idle
                    c.send(f"hello {sent}\n")
                    sent += 1
                for c in healthy:
                    if c.readline(timeout=2.0) is not None:
                        echoed += 1
                now = time.monotonic()
                for i, s in enumerate(silent):
                    if closed_after[i] is not None:
                        continue
                    try:
                        data = s.recv(4096)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if data.startswith(b"BYE reader-idle") or not data:
                        closed_after[i] = (now - opened[i], data)
                time.sleep(0.05)
            fresh = Line(srv.port)
            fresh.send("new\n")
            self.assertEqual(fresh.readline(), "new")
            for c in healthy:
                c.send("still\n")
                self.assertEqual(c.readline(), "still")
            code, out, stop_err = srv.stop()
        self.assertEqual(code, 0, stop_err)
        times = sorted(t for t, _ in filter(None, closed_after))
        self.assertEqual(len(times), 180, f"{180 - len(times)} silent peers were not closed within 5 s")
        self.assertTrue(all(d.startswith(b"BYE reader-idle") for _, d in filter(None, closed_after)))
        self.assertGreaterEqual(times[0], 1.0, "closed before the min")
        median = times[len(times) // 2]
        # Scaled: 1 s + 0.1 * 9 s = 1.9 s at 95 %; the pressure falls as they go, so later ones get
        # longer (back towards 10 s below the threshold). Polled every ~50 ms.
        self.assertLess(median, 3.0, times)
        self.assertEqual(sent, echoed, "a healthy peer lost an echo")
        final = parse_stats([l for l in out.splitlines() if l.startswith("final ")][0])
        self.assertEqual(final["closes"].get("reader-idle"), 180, final)
        self.assertEqual(int(final["closes_while_scaled"]), 180, final)
        scales = [float(parse_stats(l)["scale"]) for l in out.splitlines() if l.startswith("stats ")]
        print(f"overload: 180 silent of 200 closed after {times[0]:.2f}..{times[-1]:.2f} s (median {median:.2f} s, "
              f"unscaled 10 s); {echoed} healthy echoes, none lost; scale went as low as {min(scales):.3f}")


class ProcessStall(unittest.TestCase):
    """The server stops for 5 s (SIGSTOP, SIGCONT) while 200 healthy clients send a line every 300 ms
    under a 2 s reader-idle timeout. With the wheel no healthy client is closed; the per-socket
    baseline (--timers asio) is measured and reported, not judged (docs/reliability.md)."""

    def run_stall(self, timers):
        with Server("--timers", timers, "--reader-idle", "2000") as srv:
            client = subprocess.Popen([CLIENT, "--quiet", "--connect", f"127.0.0.1:{srv.port}", "--connections", "200",
                                       "--send-interval", "300", "--duration", "10000"], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
            time.sleep(2.5)
            srv.proc.send_signal(signal.SIGSTOP)
            time.sleep(5)
            srv.proc.send_signal(signal.SIGCONT)
            out, err = client.communicate(timeout=30)
            summary = json.loads(out.strip().splitlines()[-1])
            code, sout, _ = srv.stop()
            final = parse_stats([l for l in sout.splitlines() if l.startswith("final ")][0])
            return summary, final

    def test_wheel_keeps_every_healthy_client_through_a_stall(self):
        summary, final = self.run_stall("wheel")
        self.assertEqual(final["closes"].get("reader-idle", 0), 0, final)
        self.assertEqual(summary["closed_by_server"].get("reader-idle", 0), 0, summary)
        self.assertEqual(summary["connects"], 200)
        baseline, bfinal = self.run_stall("asio")
        print(f"5 s stall, 200 healthy clients, reader-idle 2 s: wheel closed 0; --timers asio closed "
              f"{bfinal['closes'].get('reader-idle', 0)} for reader-idle")


def scrape_metrics(port):
    """The server's /metrics samples: {name, labels included: value}."""
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    samples = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


class Accounting(unittest.TestCase):
    """Every accepted connection is counted closed exactly once, with its reason: accepted = closes by
    reason + live, read from the Prometheus output, over TCP and TLS with good sessions, failed and
    timed-out handshakes, garbage, resets, too-long lines and busy rejections."""

    @staticmethod
    def metrics(port):
        samples = scrape_metrics(port)
        closes = {name.split('reason="', 1)[1].split('"', 1)[0]: int(v) for name, v in samples.items()
                  if name.startswith("heartwheel_closes_total{")}
        accepted, live = samples.get("heartwheel_accepted_total"), samples.get("heartwheel_connections")
        return (None if accepted is None else int(accepted)), (None if live is None else int(live)), closes

    def settle(self, mport, live_expected, timeout=10):
        """Waits until the server shows `live_expected` live connections; returns its figures."""
        deadline = time.monotonic() + timeout
        while True:
            accepted, live, closes = self.metrics(mport)
            if live == live_expected or time.monotonic() > deadline:
                return accepted, live, closes
            time.sleep(0.05)

    def run_mix(self, tls):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            mport = probe.getsockname()[1]
        with tempdir() as d:
            flags = ["--metrics", f"127.0.0.1:{mport}", "--max-line", "10", "--max-connections", "6",
                     "--handshake-timeout", "300", "--reader-idle", "3000"]
            extra, ca = tls_flags(d) if tls else ([], None)
            flags += extra
            with Server(*flags) as srv:
                expected = {}
                held = []
                for i in range(3):  # good sessions that stay open
                    c = Line(srv.port, tls_ca=ca)
                    c.send(f"hi {i}\n")
                    self.assertEqual(c.readline(), f"hi {i}")
                    held.append(c)
                for i in range(2):  # good sessions that end with the peer's close
                    c = Line(srv.port, tls_ca=ca)
                    c.send("bye\n")
                    self.assertEqual(c.readline(), "bye")
                    c.close()
                expected["peer-closed"] = 2
                c = Line(srv.port, tls_ca=ca)  # a too-long line
                c.send("x" * 50 + "\n")
                self.assertEqual(c.wait_for("BYE")[0], "BYE line-too-long")
                c.close()
                expected["line-too-long"] = 1
                r = socket.create_connection(("127.0.0.1", srv.port))  # a reset
                if tls:
                    r = ssl.create_default_context(cafile=ca).wrap_socket(r, server_hostname="localhost")
                    r.sendall(b"partial")
                r.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                r.close()  # its reason depends on timing (io-error, or handshake-failed mid-TLS-1.3): counted once
                if tls:
                    g = socket.create_connection(("127.0.0.1", srv.port))  # garbage instead of a ClientHello
                    g.sendall(b"GET / HTTP/1.0\r\n\r\n")
                    g.recv(100)
                    g.close()
                    expected["handshake-failed"] = 1
                    s = socket.create_connection(("127.0.0.1", srv.port))  # says nothing
                    time.sleep(0.6)
                    s.close()
                    expected["handshake-timeout"] = 1
                accepted, live, closes = self.settle(mport, 3)
                self.assertEqual(live, 3, closes)
                total = sum(closes.values())
                self.assertEqual(accepted, total + live, (accepted, live, closes))
                for reason, n in expected.items():  # at least these (the reset adds one more somewhere)
                    self.assertGreaterEqual(closes.get(reason, 0), n, (reason, closes))
                self.assertEqual(total, sum(expected.values()) + 1, closes)
                extra = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(6)]  # over the limit
                time.sleep(0.6)
                accepted, live, closes = self.metrics(mport)
                # TCP: BYE busy past the limit. TLS: at most 3 handshakes in progress (half the limit),
                # so the silent extras wait for a place and are shed as they stall instead.
                self.assertGreaterEqual(closes.get("busy", 0) + (closes.get("handshake-shed", 0) if tls else 0), 3, closes)
                for e in extra:
                    e.close()
                for c in held:
                    c.close()
                accepted, live, closes = self.settle(mport, 0)
                self.assertEqual(live, 0, closes)
                self.assertEqual(accepted, sum(closes.values()), (accepted, closes))
                print(f"{'TLS' if tls else 'TCP'}: accepted {accepted} = closes {closes}")

    def test_identity_holds_in_every_scrape_while_goodbyes_linger(self):
        """20 silent clients are closed reader-idle and never close their side, so each goodbye lingers
        up to a second. Scraped every 20 ms meanwhile: accepted = sum of closes + connections in every
        scrape (the lingering ones count as closed, and show as heartwheel_connections_closing). The
        sum used to exceed accepted by the lingering ones for about a second."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            mport = probe.getsockname()[1]
        with Server("--metrics", f"127.0.0.1:{mport}", "--reader-idle", "300") as srv:
            held = [Line(srv.port) for _ in range(20)]
            seen_closing, scrapes = 0, 0
            end = time.monotonic() + 2.0
            while time.monotonic() < end:
                samples = scrape_metrics(mport)
                accepted, open_ = int(samples["heartwheel_accepted_total"]), int(samples["heartwheel_connections"])
                closes = sum(int(v) for k, v in samples.items() if k.startswith("heartwheel_closes_total{"))
                self.assertEqual(accepted, closes + open_, samples)
                seen_closing = max(seen_closing, int(samples["heartwheel_connections_closing"]))
                scrapes += 1
                time.sleep(0.02)
            self.assertEqual(seen_closing, 20)  # all lingering at once, at some scrape
            for h in held:
                h.close()
            print(f"identity held in {scrapes} scrapes; up to {seen_closing} closing at once")

    def test_tcp(self):
        self.run_mix(tls=False)

    def test_tls(self):
        self.run_mix(tls=True)


class IdleBuffers(unittest.TestCase):
    """An idle connection holds no read buffer: the server's own accounting (heartwheel_read_buffers)
    shows none while connections wait between lines, one while a partial line is pending, and none
    again once it is complete; over TCP and TLS."""

    @staticmethod
    def gauge(mport, name):
        samples = scrape_metrics(mport)
        if name not in samples:
            raise AssertionError(f"{name} missing from /metrics")
        return int(samples[name])

    def wait_gauge(self, mport, name, want, timeout=5):
        deadline = time.monotonic() + timeout
        while (got := self.gauge(mport, name)) != want and time.monotonic() < deadline:
            time.sleep(0.02)
        return got

    def run_idle(self, tls):
        with tempdir() as d:
            flags = ["--metrics", "127.0.0.1:0", "--reader-idle", "20000", "--heartbeat-interval", "5000",
                     "--max-age", "60000"]
            extra, ca = tls_flags(d) if tls else ([], None)
            flags += extra
            with Server(*flags) as srv:
                mport = int(srv.proc.stdout.readline().strip().rsplit(":", 1)[1])
                conns = []
                for i in range(20):
                    c = Line(srv.port, tls_ca=ca)
                    c.send(f"line {i}\n")
                    self.assertEqual(c.readline(), f"line {i}")
                    conns.append(c)
                self.assertEqual(self.gauge(mport, "heartwheel_connections"), 20)
                self.assertEqual(self.wait_gauge(mport, "heartwheel_read_buffers", 0), 0)
                self.assertEqual(self.gauge(mport, "heartwheel_read_buffer_bytes"), 0)
                self.assertEqual(self.gauge(mport, "heartwheel_read_chunks_lent"), 0)
                head = "p" * 100
                conns[3].send(head)  # a partial line: kept until its newline comes
                self.assertEqual(self.wait_gauge(mport, "heartwheel_read_buffers", 1), 1)
                self.assertGreaterEqual(self.gauge(mport, "heartwheel_read_buffer_bytes"), 100)  # its 100 bytes, at least
                conns[3].send("q\n")
                self.assertEqual(conns[3].readline(), head + "q")
                self.assertEqual(self.wait_gauge(mport, "heartwheel_read_buffers", 0), 0)
                self.assertEqual(self.gauge(mport, "heartwheel_read_buffer_bytes"), 0)
                for c in conns:
                    c.close()

    def test_tcp(self):
        self.run_idle(tls=False)

    def test_tls(self):
        self.run_idle(tls=True)


class Client(unittest.TestCase):
    KEYS = {"connects", "connect_failures", "reconnects", "requests", "responses", "timeouts", "pings_received",
            "pongs_sent", "closed_by_server", "rtt_ms"}

    def summary(self, p):
        self.assertEqual(p.returncode, 0, p.stderr)
        data = json.loads(p.stdout.strip().splitlines()[-1])
        self.assertTrue(self.KEYS <= set(data), data)
        self.assertTrue({"p50", "p99", "max"} <= set(data["rtt_ms"]))
        return data

    def test_load_and_summary(self):
        with Server("--heartbeat-interval", "100", "--heartbeat-timeout", "90") as srv:
            s = self.summary(run_client("--connect", f"127.0.0.1:{srv.port}", "--connections", "20",
                                        "--send-interval=20", "--duration", "1000", "--request-timeout", "1000"))
            self.assertEqual(s["connects"], 20)
            self.assertGreater(s["requests"], 40)
            self.assertGreaterEqual(s["responses"], s["requests"] - 20)
            self.assertEqual(s["timeouts"], 0)
            self.assertGreater(s["rtt_ms"]["p50"], 0)

    def test_counts_bye_reasons_and_pings(self):
        with Server("--reader-idle", "300", "--heartbeat-interval", "100", "--heartbeat-timeout", "90") as srv:
            s = self.summary(run_client("--connect", f"127.0.0.1:{srv.port}", "--connections", "3",
                                        "--send-interval", "0", "--duration", "800"))
            self.assertEqual(s["closed_by_server"].get("reader-idle"), 3)
            self.assertGreaterEqual(s["pings_received"], 3)
            self.assertEqual(s["pongs_sent"], s["pings_received"])

    def test_request_timeouts_against_a_server_that_never_answers(self):
        with socket.socket() as mute:
            mute.bind(("127.0.0.1", 0))
            mute.listen(16)
            port = mute.getsockname()[1]
            s = self.summary(run_client("--connect", f"127.0.0.1:{port}", "--send-interval", "50",
                                        "--request-timeout", "100", "--duration", "600"))
            self.assertGreaterEqual(s["requests"], 3)
            self.assertEqual(s["responses"], 0)
            self.assertGreaterEqual(s["timeouts"], 3)
            # three in a row: the client leaves the server (it reconnects with --reconnect yes)
            self.assertEqual(s["closed_by_liveness"].get("request-timeouts"), 1, s)

    def test_client_detects_a_silent_server_and_reconnects(self):
        """A server that accepts and then never sends a byte: with --reader-idle (a client sending
        requests) or heartbeats (a quiet client: pings follow outbound silence) the client closes the
        link itself and, with --reconnect yes, connects again with backoff."""
        # (a request timeout longer than --reader-idle: three of them in a row would close it first)
        for liveness in (["--reader-idle", "300", "--send-interval", "50", "--request-timeout", "1000"],
                         ["--heartbeat-interval", "100", "--heartbeat-timeout", "100", "--heartbeat-misses", "2",
                          "--send-interval", "0", "--request-timeout", "100"]):
            with socket.socket() as mute:
                mute.bind(("127.0.0.1", 0))
                mute.listen(64)
                port = mute.getsockname()[1]
                start = time.monotonic()
                s = self.summary(run_client("--connect", f"127.0.0.1:{port}",
                                            "--reconnect", "yes", "--backoff-initial", "100",
                                            "--backoff-max", "200", "--duration", "2500", *liveness))
                held = []
                while True:  # what the silent server accepted (it never answers anything)
                    mute.settimeout(0.05)
                    try:
                        held.append(mute.accept()[0])
                    except OSError:
                        break
                for h in held:
                    h.close()
                reason = "reader-idle" if liveness[0] == "--reader-idle" else "heartbeat-timeout"
                self.assertGreaterEqual(s["closed_by_liveness"].get(reason, 0), 2, (liveness, s))
                self.assertGreaterEqual(s["connects"], 3, (liveness, s))
                self.assertGreaterEqual(s["reconnects"], 2, (liveness, s))
                self.assertEqual(s["responses"], 0)
                self.assertLess(time.monotonic() - start, 10)

    def test_busy_client_detects_a_frozen_server_by_inbound_silence(self):
        """The client sends a request every 100 ms to a server that is then stopped (SIGSTOP: its
        kernel still takes the bytes). With the default inbound trigger the pings follow what the
        client stopped receiving, so it closes the link heartbeat-timeout at the formula's time:
        last byte received + interval + (misses - 1) * max(interval, timeout) + timeout = 1.5 s
        after the freeze (interval = timeout = 500 ms, 2 misses), never before. With the outbound
        trigger its own requests keep putting the ping off and it never notices."""
        # The formula's timeout, not the RTT floor: a loaded machine's round trips would lengthen it.
        # (A close 2.4 s after the freeze, seen twice in CI, was first put down to that floor; the
        # second time, with the floor off, it was a long batch after a ping making the heartbeat
        # doubt the ping's miss — judged by stamps then, by reads counted since: idle_heartbeat_test's
        # a_long_batch_after_a_ping_does_not_undo_its_miss. The third time, 1 run in 13 under load,
        # it was judged on time but a request still in flight made the close linger the whole second
        # for the dead server's end of stream: connection_test's a_peer_judged_dead_is_not_lingered_for.)
        no_rtt_floor = tempfile.NamedTemporaryFile("w", suffix=".toml")
        no_rtt_floor.write("[heartbeat]\nrtt_factor = 0\n")
        no_rtt_floor.flush()
        for trigger in ("inbound", "outbound"):
            with Server() as srv:
                client = subprocess.Popen([CLIENT, "--quiet", "--verbose", "--connect", f"127.0.0.1:{srv.port}",
                                           "--send-interval", "100", "--heartbeat-interval", "500",
                                           "--heartbeat-timeout", "500", "--heartbeat-misses", "2",
                                           "--config", no_rtt_floor.name,
                                           "--heartbeat-trigger", trigger, "--duration", "4500"],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                closed_at = []

                def watch():
                    for line in client.stderr:
                        if "closed: heartbeat-timeout" in line:
                            closed_at.append(time.monotonic())

                watcher = threading.Thread(target=watch)
                watcher.start()
                time.sleep(1.0)
                srv.proc.send_signal(signal.SIGSTOP)
                frozen = time.monotonic()
                try:
                    client.wait(timeout=30)  # (not communicate(): the watcher alone reads stderr)
                finally:
                    srv.proc.send_signal(signal.SIGCONT)
                watcher.join(timeout=5)
                out = client.stdout.read()
                summary = json.loads(out.strip().splitlines()[-1])
                if trigger == "outbound":
                    self.assertEqual(closed_at, [], summary)
                    continue
                self.assertEqual(len(closed_at), 1, summary)
                after = closed_at[0] - frozen
                print(f"busy client, frozen server: closed heartbeat-timeout {after:.3f} s after the freeze "
                      f"(formula 1.5 s from the last byte received)")
                # The last echo came at most one send interval before the freeze — in a sanitized
                # build, whose echoes lag in batches, up to two (TSan in CI: 1.397 s once).
                self.assertGreaterEqual(after, 1.5 - (0.2 if SANITIZED else 0.1))
                self.assertLess(after, 1.5 + (1.5 if SANITIZED else 0.5))
                self.assertGreaterEqual(summary["requests"], 20)  # it kept sending until the close (10 per second)

    def test_backoff_keeps_growing_against_a_frozen_server(self):
        """A stopped server's kernel still completes every TCP handshake. The client's backoff resets
        only once the peer itself has sent bytes (reconnector::proven), so against the frozen server
        each connect-then-heartbeat-death is a failure and the delays keep growing; before, each
        link lived past --stable-after and the backoff reset to its first delay every time."""
        with Server() as srv:
            client = subprocess.Popen([CLIENT, "--quiet", "--verbose", "--connect", f"127.0.0.1:{srv.port}",
                                       "--send-interval", "100", "--heartbeat-interval", "200", "--heartbeat-timeout",
                                       "200", "--heartbeat-misses", "1", "--reconnect", "yes", "--backoff-initial", "100",
                                       "--backoff-multiplier", "2", "--backoff-jitter", "0", "--stable-after", "300",
                                       "--duration", "5000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(1.0)  # proven: the server echoes
            srv.proc.send_signal(signal.SIGSTOP)
            try:
                out, err = client.communicate(timeout=30)
            finally:
                srv.proc.send_signal(signal.SIGCONT)
        delays = [int(l.split("reconnecting in ")[1].split()[0]) for l in err.splitlines() if "reconnecting in" in l]
        print(f"reconnect delays against a frozen server: {delays} ms")
        self.assertGreaterEqual(len(delays), 4, err)
        self.assertEqual(delays[0], 100)  # the first link was proven and stable: reset
        self.assertEqual(delays[1:4], [200, 400, 800], err)  # then never proven: growing

    def test_connect_window_and_timeline(self):
        """--connect-window N opens the connections in a closed loop, at most N in their first attempt
        at once; --timeline counts first establishments per bin. Against a server that accepts and
        never answers a ClientHello, 3 of 12 begin (their handshakes never end); against echo_server
        all 12 connect, and the timeline counts 12."""
        accepted = []
        lsock, port = self.hostile_server(accepted.append)  # holds each open, reads nothing
        r = run_client("--connect", f"127.0.0.1:{port}", "--tls", "--insecure", "--connections", "12",
                       "--connect-window", "3", "--send-interval", "0", "--duration", "1500")
        lsock.close()
        self.summary(r)
        self.assertEqual(len(accepted), 3)
        for c in accepted:
            c.close()
        with Server() as srv:
            s = self.summary(run_client("--connect", f"127.0.0.1:{srv.port}", "--connections", "12", "--connect-window",
                                        "3", "--send-interval", "0", "--duration", "1000", "--timeline", "50"))
        self.assertEqual(s["connects"], 12)
        self.assertEqual(s["timeline"]["bin_ms"], 50)
        self.assertEqual(sum(s["timeline"]["established"]), 12)

    @staticmethod
    def hostile_server(behave):
        """A listening socket on a free port; each accepted connection runs behave(sock) in a thread."""
        lsock = socket.socket()
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(64)

        def loop():
            while True:
                try:
                    conn, _ = lsock.accept()
                except OSError:
                    return
                threading.Thread(target=behave, args=(conn,), daemon=True).start()

        threading.Thread(target=loop, daemon=True).start()
        return lsock, lsock.getsockname()[1]

    def test_client_is_bounded_against_a_hostile_server(self):
        """A malicious server must not grow the client or keep it hanging: (1) PINGs flooded at a
        client whose PONGs are never read: the client stops reading under backpressure and its write
        timeout closes the link, memory bounded; (2) a BYE with a unique reason per line: the client
        closes after the first and counts at most 32 reasons of at most 64 bytes; (3) garbage instead
        of echoes: the link closes protocol-error and reconnects; (4) requests read and never
        answered: after 3 timeouts in a row the link closes and reconnects."""
        def ping_flood(conn):
            # Never reads the PONGs. (Not with a tiny SO_RCVBUF: on loopback the segments it then drops
            # carry the client's ACKs too, and its own flood stalls in retransmission back-off.) Each
            # PING carries 1 KB that its PONG repeats, so the PONGs fill both kernels' buffers (~10 MB on
            # loopback) within a second even when this thread is slow on a busy machine (with 7-byte
            # PONGs, 600,000 were answered in 6 s without filling them, in a parallel test run).
            try:
                while True:
                    conn.sendall((b"PING " + b"1" * 1000 + b"\n") * 64)
            except OSError:
                pass

        def unique_byes(conn):
            try:
                for i in range(200000):
                    conn.sendall(b"BYE reason-%d-%s\n" % (i, b"z" * 200))
            except OSError:
                pass

        def garbage(conn):
            try:
                while conn.recv(65536):
                    conn.sendall(b"\x00\xffnot the protocol\n")
            except OSError:
                pass

        def never_answers(conn):
            try:
                while conn.recv(65536):
                    pass
            except OSError:
                pass

        lsock, port = self.hostile_server(ping_flood)
        client = subprocess.Popen([CLIENT, "--quiet", "--connect", f"127.0.0.1:{port}", "--send-interval", "0",
                                   "--write-timeout", "1000", "--duration", "6000"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        peak = 0.0
        while client.poll() is None:
            peak = max(peak, rss_mib(client.pid))
            time.sleep(0.05)
        s = self.summary(subprocess.CompletedProcess(client.args, client.returncode, client.stdout.read(),
                                                     client.stderr.read()))
        lsock.close()
        if not SANITIZED:  # (a sanitized client answers too slowly to fill its kernel's 4 MB send buffer)
            self.assertEqual(s["closed_by_liveness"].get("write-timeout"), 1, s)
            self.assertLess(peak, 64, "client RSS under a PING flood")  # was 403 MiB in 20 s
        print(f"PING flood: client closed write-timeout, RSS peak {peak:.1f} MiB")

        lsock, port = self.hostile_server(unique_byes)
        s = self.summary(run_client("--connect", f"127.0.0.1:{port}", "--send-interval", "0", "--duration", "1500"))
        lsock.close()
        self.assertLessEqual(len(s["closed_by_server"]), 33, s)  # 32 reasons and "(other)"
        self.assertTrue(all(len(k) <= 64 for k in s["closed_by_server"]), s)
        self.assertEqual(s["closed_by_liveness"].get("server-bye"), 1, s)  # closed after the first BYE

        for behave, reason in ((garbage, "protocol-error"), (never_answers, "request-timeouts")):
            lsock, port = self.hostile_server(behave)
            s = self.summary(run_client("--connect", f"127.0.0.1:{port}", "--send-interval", "50",
                                        "--request-timeout", "200", "--reconnect", "yes", "--backoff-initial", "100",
                                        "--backoff-max", "200", "--duration", "2500"))
            lsock.close()
            self.assertGreaterEqual(s["closed_by_liveness"].get(reason, 0), 2, s)
            self.assertGreaterEqual(s["connects"], 2, s)

    def test_outstanding_requests_fail_at_once_on_close(self):
        """A peer that takes requests, never answers, and hangs up after 400 ms: every outstanding
        request fails with the close (the 10 s request timeout never comes into play)."""
        with socket.socket() as peer:
            peer.bind(("127.0.0.1", 0))
            peer.listen(4)
            port = peer.getsockname()[1]

            def hang_up():
                conn, _ = peer.accept()
                time.sleep(0.4)
                conn.close()

            import threading
            t = threading.Thread(target=hang_up)
            t.start()
            start = time.monotonic()
            s = self.summary(run_client("--connect", f"127.0.0.1:{port}", "--send-interval", "50",
                                        "--request-timeout", "10000", "--duration", "1500"))
            t.join()
            self.assertLess(time.monotonic() - start, 5)
            self.assertGreaterEqual(s["requests"], 4)
            self.assertEqual(s["responses"], 0)
            self.assertEqual(s["timeouts"], 0)
            self.assertEqual(s["failed_on_close"], s["requests"])

    def test_reconnects_with_growing_backoff(self):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]  # nothing listens here
        s = self.summary(run_client("--connect", f"127.0.0.1:{port}", "--reconnect", "yes", "--backoff-initial", "50",
                                    "--backoff-multiplier", "2", "--backoff-jitter", "0", "--duration", "1000"))
        # attempts at 0, 50, 150, 350, 750 ms: five failures, not dozens
        self.assertGreaterEqual(s["connect_failures"], 4)
        self.assertLessEqual(s["connect_failures"], 6)

    def test_told_to_drain_reconnects_within_the_window_not_at_once(self):
        """A restart by SO_REUSEPORT overlap: the new server listens beside the old one, which then
        drains with --drain-window 1500. Its 30 clients (--reconnect yes, a 5 s failure backoff) each
        come back at a random moment within the 1.5 s it named (BYE draining 1500) — not all at once,
        not after the backoff — and every reconnect lands on the new server: none refused."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        old = Server("--drain-window", "1500", "--reuse-port", port=port)
        proc = subprocess.Popen([CLIENT, "--connect", f"127.0.0.1:{port}", "--connections", "30", "--reconnect", "yes",
                                 "--backoff-initial", "5000", "--backoff-jitter", "0", "--send-interval", "200",
                                 "--duration", "4500", "--quiet", "--verbose"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(1.0)  # all connected to the old one
            with Server("--reuse-port", port=port) as new:
                old.proc.send_signal(signal.SIGTERM)
                old_out, _ = old.proc.communicate(timeout=20)
                out, err = proc.communicate(timeout=30)
                _, new_out, _ = new.stop()
        finally:
            for p in (proc, old.proc):
                if p.poll() is None:
                    p.kill()
        delays = [int(line.split("reconnecting in ", 1)[1].split(" ms", 1)[0])
                  for line in err.splitlines() if "reconnecting in " in line]
        s = json.loads(out.strip().splitlines()[-1])
        print(f"drained clients came back after {min(delays)}..{max(delays)} ms (window 1500); "
              f"connects {s['connects']}, failures {s['connect_failures']}, closed_by_server {s['closed_by_server']}")
        self.assertEqual(s["closed_by_server"], {"draining": 30}, s)
        self.assertEqual(len(delays), 30, err)  # one wait each: the drain's
        self.assertTrue(all(0 <= d <= 1500 for d in delays), delays)
        self.assertGreater(max(delays) - min(delays), 500, delays)  # spread, not at once
        self.assertEqual((s["connects"], s["connect_failures"]), (60, 0), s)
        self.assertIn("closes=draining:30", old_out)
        self.assertIn("accepted=30", new_out)

    def test_tls_client(self):
        with tempdir() as d:
            flags, cert = tls_flags(d)
            with Server(*flags) as srv:
                s = self.summary(run_client("--connect", f"127.0.0.1:{srv.port}", "--tls", "--ca", cert,
                                            "--send-interval", "50", "--duration", "500"))
                self.assertEqual(s["connects"], 1)
                self.assertGreater(s["responses"], 3)

    def test_bad_client_flags(self):
        p = subprocess.run([CLIENT, "--backoff-strategy", "random"], capture_output=True, text=True, timeout=10)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--backoff-strategy", p.stderr)
        self.assertIn("decorrelated", p.stderr)
        p = subprocess.run([CLIENT, "--answer-pings", "maybe"], capture_output=True, text=True, timeout=10)
        self.assertEqual(p.returncode, 2)
        self.assertIn("yes or no", p.stderr)


if __name__ == "__main__":
    side_by_side.main(__file__)
