"""test_faults.py — fault injection end to end: echo_server in one network namespace, peers in another,
joined by a veth pair on which the peers' packets can be dropped at will (tc netem or nftables, see
netns.py).

Faults: a half-open peer (all its packets dropped) and a reconnecting client; a peer that stops
reading while the server writes; a slow TLS handshake, garbage instead of a ClientHello and a stalled
TLS record; a connection flood beyond --max-connections; SIGTERM under load. Each test also keeps a
well-behaved connection going and checks it is unaffected. Skipped, with the reason, where namespaces
cannot be made (not root, no iproute2, no netem). Every wait is bounded."""
import json
import os
import select
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from harness import CLIENT, Line, Server, make_cert, parse_stats, recv_line, tempdir  # noqa: E402
import netns  # noqa: E402

NET = None


def setUpModule():
    global NET
    reason = netns.unavailable()
    if reason:
        print(f"SKIPPED fault injection: {reason}", file=sys.stderr)
        raise unittest.SkipTest(reason)
    NET = netns.Network()


def tearDownModule():
    if NET is not None:
        NET.close()


def closes_of(final_output):
    """{reason: count} from the server's 'final ... closes=a:1,b:2 ...' line."""
    for line in final_output.splitlines():
        if line.startswith("final "):
            return parse_stats(line)["closes"]
    raise AssertionError(f"no final line in {final_output!r}")


def report(text):
    """A measured figure, printed for docs/reliability.md."""
    print(f"\n  [fault] {text}", file=sys.stderr)


def peak_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM")


def wait_closed(sock, timeout):
    """Seconds until the peer closes (EOF or reset) without reading data meant for us; None on timeout."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        ready, _, _ = select.select([sock], [], [], 0.05)
        if ready:
            try:
                if not sock.recv(65536):
                    return time.monotonic() - start
            except OSError:
                return time.monotonic() - start
    return None


class StatsWatcher:
    """Reads the server's 'stats ...' lines in a thread and remembers when the close counts changed."""

    def __init__(self, srv):
        self.history, self.last = [], {}
        self.cond = threading.Condition()
        self.finished = threading.Event()  # the output ended (after the 'final' line)
        threading.Thread(target=self._read, args=(srv.proc.stdout,), daemon=True).start()

    def _read(self, stream):
        for line in stream:
            if line.startswith(("stats ", "final ")):
                closes = parse_stats(line)["closes"]
                with self.cond:
                    self.history.append((time.monotonic(), closes))
                    self.last = closes
                    self.cond.notify_all()
        self.finished.set()

    def stop(self, srv):
        """SIGTERM the server: its exit code, whether its output ended, and the closes of its last line."""
        srv.proc.send_signal(signal.SIGTERM)
        code = srv.proc.wait(timeout=10)
        return code, self.finished.wait(10), self.last

    def wait_until(self, pred, timeout):
        """The time of the first stats line whose closes satisfy pred; None on timeout."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for t, closes in self.history:
                    if pred(closes):
                        return t
                left = deadline - time.monotonic()
                if left <= 0 or not self.cond.wait(left):
                    return None


class Faults(unittest.TestCase):
    def tearDown(self):
        NET.heal()

    def server(self, *flags):
        return Server(*flags, host=netns.SERVER_IP, prefix=NET.server_prefix)

    def line(self, srv, **kw):
        conn = Line(srv.port, host=netns.SERVER_IP, **kw)
        self.addCleanup(conn.close)
        return conn

    def raw(self, srv):
        sock = socket.create_connection((netns.SERVER_IP, srv.port), timeout=5)
        self.addCleanup(sock.close)
        return sock

    def assert_echoes(self, conn, text):
        conn.send(text + "\n")
        self.assertEqual(conn.readline(timeout=5), text)

    def test_half_open_peer_closed_by_heartbeat_then_client_reconnects(self):
        # The peers' packets vanish; the server's still leave, but with no ACK coming back its TCP
        # stalls in retransmission, so the peers cannot tell: a true half-open connection. The server
        # must find out by itself (heartbeat), and the client once the path is back (its data gets a
        # reset), after which it reconnects with backoff.
        interval, timeout, misses = 300, 300, 2
        with self.server("--heartbeat-interval", str(interval), "--heartbeat-timeout", str(timeout),
                         "--heartbeat-misses", str(misses), "--stats-interval", "50") as srv:
            stats = StatsWatcher(srv)
            peer = self.line(srv, answer_pings=True)
            self.assert_echoes(peer, "before the fault")
            client = subprocess.Popen(
                [CLIENT, "--quiet", "--verbose", "--connect", f"{netns.SERVER_IP}:{srv.port}", "--connections", "2",
                 "--send-interval", "100", "--reconnect", "yes", "--backoff-initial", "200", "--backoff-max", "800",
                 "--connect-timeout", "300", "--duration", "14000"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(1.0)
            fault_at = time.monotonic()
            NET.drop_peer_packets()
            closed_at = stats.wait_until(lambda c: c.get("heartbeat-timeout", 0) >= 3, timeout=10)
            self.assertIsNotNone(closed_at, f"half-open peers not closed: {stats.last}")
            bound = misses * (interval + timeout) / 1000 + 1.0
            self.assertLess(closed_at - fault_at, bound, "closed within the configured bound")
            self.assertGreater(closed_at - fault_at, (misses - 1) * interval / 1000, "not before the misses")
            report(f"half-open: 3 peers closed by heartbeat-timeout {closed_at - fault_at:.2f}s after the fault "
                   f"(bound {bound:.1f}s)")
            time.sleep(0.5)
            NET.heal()
            out, err = client.communicate(timeout=40)
            self.assertEqual(client.returncode, 0, err)
            summary = json.loads(out)
            self.assertGreaterEqual(summary["reconnects"], 2, summary)
            for i in range(2):  # each client reconnected after the fault and its last connection worked
                mine = [l.split(": ", 1)[1] for l in err.splitlines() if l.startswith(f"client {i}: ")]
                self.assertGreaterEqual(mine.count("connected"), 2, mine)
                self.assertTrue(any(l.startswith("reconnecting in ") for l in mine), mine)
            self.assertGreater(summary["responses"], 40, summary)
            self.assertEqual(stats.stop(srv)[0], 0)

    def test_peer_that_stops_reading_is_bounded_and_closed_by_write_timeout(self):
        # The close is read off the server's own count: the peer, which neither reads nor can send (the
        # server stopped reading it, so its window is shut too), may not hear of it for a long time. Its
        # zero-window probes back off exponentially, and a reset whose sequence number lies beyond its
        # full receive window is dropped (RFC 5961). Once the server has counted the close, the peer
        # reads: its window update reaches a socket that is gone, and the answer is a reset.
        with self.server("--write-timeout", "1500", "--stats-interval", "50") as srv:
            stats = StatsWatcher(srv)
            good = self.line(srv)
            self.assert_echoes(good, "hello")
            rss_before = peak_rss_kib(srv.proc.pid)
            hog = self.raw(srv)
            hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            hog.setblocking(False)
            line = b"x" * 65535 + b"\n"
            pending, pushed, start, peer_saw_close = line, 0, time.monotonic(), False
            while time.monotonic() - start < 20 and not stats.last.get("write-timeout"):
                _, writable, _ = select.select([], [hog], [], 0.05)
                try:
                    if writable:
                        n = hog.send(pending)
                        pushed += n
                        pending = pending[n:] or line
                except (BrokenPipeError, ConnectionResetError):
                    peer_saw_close = True
                    break
            closed_at = stats.wait_until(lambda c: c.get("write-timeout", 0) >= 1, timeout=5 if peer_saw_close else 0)
            self.assertIsNotNone(closed_at, f"not closed by write-timeout after pushing {pushed} bytes: {stats.last}")
            closed_after = closed_at - start
            self.assert_echoes(good, f"still here after {pushed} bytes pushed")
            if not peer_saw_close:  # the peer reads now, and meets the reset (or the FIN) within a bounded time
                hog.settimeout(0.5)
                deadline = time.monotonic() + 10
                while not peer_saw_close and time.monotonic() < deadline:
                    try:
                        peer_saw_close = hog.recv(1 << 16) == b""
                    except socket.timeout:
                        pass
                    except (BrokenPipeError, ConnectionResetError):
                        peer_saw_close = True
                self.assertTrue(peer_saw_close, "the peer's socket was not closed")
            growth = peak_rss_kib(srv.proc.pid) - rss_before
            self.assertLess(growth, 24 * 1024, f"server grew {growth} KiB for a non-reading peer")
            report(f"non-reader: pushed {pushed / 2**20:.1f} MiB, closed by write-timeout after {closed_after:.2f}s, "
                   f"server peak RSS +{growth / 1024:.1f} MiB")
            self.assert_echoes(good, "unaffected")
            code, finished, closes = stats.stop(srv)
            self.assertEqual(code, 0)
            self.assertTrue(finished, "no final line")
            self.assertEqual(closes.get("write-timeout"), 1, closes)

    def test_slow_tls_handshake_and_garbage_closed_at_handshake_timeout(self):
        with tempdir() as d:
            cert, key = make_cert(d)
            handshake_ms = 800
            with self.server("--tls", "--cert", cert, "--key", key, "--handshake-timeout", str(handshake_ms)) as srv:
                good = self.line(srv, tls_ca=cert)
                self.assert_echoes(good, "tls ok")

                # A real ClientHello, sent one byte every 100 ms.
                hello_bio, out_bio = ssl.MemoryBIO(), ssl.MemoryBIO()
                tls = ssl.create_default_context().wrap_bio(hello_bio, out_bio, server_hostname="localhost")
                try:
                    tls.do_handshake()
                except ssl.SSLWantReadError:
                    pass
                client_hello = out_bio.read()
                self.assertGreater(len(client_hello), 100)
                slow = self.raw(srv)
                stalled = self.raw(srv)
                stalled.sendall(b"\x16\x03\x01\x40\x00" + b"\x01" * 10)  # a record header promising 16 KiB
                garbage = self.raw(srv)
                garbage.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                start = time.monotonic()
                slow_closed = None
                for b in client_hello:
                    try:
                        slow.send(bytes([b]))
                    except OSError:
                        slow_closed = time.monotonic() - start
                        break
                    if wait_closed(slow, 0.1) is not None:
                        slow_closed = time.monotonic() - start
                        break
                self.assertIsNotNone(slow_closed, "slow handshake never closed")
                self.assertGreater(slow_closed, handshake_ms / 1000 * 0.5)  # timed from accept, before our clock started
                self.assertLess(slow_closed, handshake_ms / 1000 + 1.5)
                report(f"tls: slow ClientHello closed after {slow_closed:.2f}s (handshake timeout {handshake_ms} ms)")
                garbage_closed = wait_closed(garbage, 5)
                self.assertIsNotNone(garbage_closed)
                self.assertLess(time.monotonic() - start, handshake_ms / 1000 + 1.5)
                stalled_closed = wait_closed(stalled, 5)
                self.assertIsNotNone(stalled_closed, "stalled record never closed")
                self.assertLess(time.monotonic() - start, handshake_ms / 1000 + 2.0)
                self.assert_echoes(good, "tls still ok")
                code, out, _ = srv.stop()
                self.assertGreaterEqual(closes_of(out).get("handshake-timeout", 0), 2, out)

    def test_connection_flood_beyond_max_connections(self):
        limit, extra = 20, 200
        with self.server("--max-connections", str(limit)) as srv:
            held = [self.line(srv) for _ in range(limit)]
            for i, c in enumerate(held):
                self.assert_echoes(c, f"held {i}")
            flood = []
            for _ in range(extra):
                s = self.raw(srv)
                flood.append(s)
            busy = 0
            for s in flood:
                s.settimeout(5)
                busy += recv_line(s) == b"BYE busy\n"
                s.close()
            self.assertEqual(busy, extra)
            report(f"flood: {extra} connections beyond --max-connections {limit} got BYE busy; {limit} held ones echo")
            for i, c in enumerate(held):
                self.assert_echoes(c, f"still held {i}")

    def test_sigterm_under_load_says_bye_shutdown_to_everyone(self):
        conns = 300
        with self.server("--shutdown-grace", "3000") as srv:
            client = subprocess.Popen(
                [CLIENT, "--quiet", "--connect", f"{netns.SERVER_IP}:{srv.port}", "--connections", str(conns),
                 "--send-interval", "20", "--duration", "5000"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(2.0)
            start = time.monotonic()
            srv.proc.send_signal(signal.SIGTERM)
            code, out, err = srv.stop(timeout=15)
            took = time.monotonic() - start
            self.assertEqual(code, 0, err)
            self.assertLess(took, 3.0 + 2.0)
            self.assertEqual(closes_of(out).get("shutdown"), conns, out)
            cout, cerr = client.communicate(timeout=30)
            summary = json.loads(cout)
            self.assertEqual(summary["closed_by_server"], {"shutdown": conns}, cerr)
            self.assertGreater(summary["responses"], conns)
            report(f"sigterm: {conns} connections under load got BYE shutdown; exit 0 after {took:.2f}s")


if __name__ == "__main__":
    unittest.main(verbosity=2)
