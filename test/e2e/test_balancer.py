"""test_balancer.py — echo_server behind a real load balancer (Debian's HAProxy, started here on
127.0.0.1) speaking the PROXY protocol, and the protocol's defences without one.

- Through HAProxy with send-proxy-v2, per-source limits see
  each client's own address: a client from 127.0.0.3 arriving at --max-connections displaces the
  newest connection of 127.0.0.2, which holds more than its --source-share (closed over-share); the
  same balancer without the PROXY protocol makes every client 127.0.0.1, and the newcomer is refused
  BYE busy (the control).
- Through HAProxy with send-proxy (version 1) and send-proxy-v2, with health checks every 100 ms
  (each a header, LOCAL in version 2, then a reset): the echo protocol works, and no health check
  is counted as a bad header.
- Direct peers of a server with --proxy-protocol: a missing, malformed, oversized or too slow header,
  and a peer outside --proxy-from, are each closed with their own reason, counted once; a good header
  followed by a line in the same segment is echoed; a bad --proxy-from exits 2 naming the flag."""
import os
import socket
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from balancer import HAProxy, free_port  # noqa: E402
from harness import SERVER, Line, Server, parse_stats, recv_line, tempdir  # noqa: E402


def line_from(port, source):
    """A Line connected from the loopback address `source`."""
    line = Line.__new__(Line)
    line.sock = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
    line.buf, line.answer_pings, line.pings = b"", False, 0
    return line


def final_stats(srv):
    code, out, err = srv.stop()
    assert code == 0, f"exit {code}: {err}"
    return parse_stats([l for l in out.splitlines() if l.startswith("final ")][0])


class ThroughHAProxy(unittest.TestCase):
    def crowd(self, proxy_flags, server_options):
        """Four connections from 127.0.0.2, then one from 127.0.0.3, at --max-connections 4 and
        --source-share 1, through HAProxy. Returns (what the newcomer got to its line, how many of
        the four were told BYE over-share, the server's final stats)."""
        with tempdir() as d, Server("--max-connections", "4", "--source-share", "1", *proxy_flags) as srv, \
                HAProxy(d, srv.port, server_options) as lb:
            first = [line_from(lb.port, "127.0.0.2") for _ in range(4)]
            for i, c in enumerate(first):
                c.send(f"a{i}\n")
                self.assertEqual(c.readline(), f"a{i}")
            newcomer = line_from(lb.port, "127.0.0.3")
            newcomer.send("b\n")
            got = newcomer.readline()
            told = sum(1 for c in first if (c.readline(timeout=0.5) or "").startswith("BYE over-share"))
            for c in [*first, newcomer]:
                c.close()
            time.sleep(0.2)
            return got, told, final_stats(srv)

    def test_per_source_limits_see_each_client_through_the_balancer(self):
        got, told, final = self.crowd(["--proxy-protocol"], "send-proxy-v2")
        self.assertEqual(got, "b", final)  # served: within its share
        self.assertGreaterEqual(told, 1, final)  # 127.0.0.2 held four, one more than the limit allows
        self.assertGreaterEqual(final["closes"].get("over-share", 0), 1, final)
        self.assertEqual(final["closes"].get("busy", 0), 0, final)
        for reason in ("proxy-missing", "proxy-malformed", "proxy-untrusted", "proxy-timeout"):
            self.assertNotIn(reason, final["closes"], final)

    def test_without_the_proxy_protocol_every_client_is_the_balancer(self):
        got, told, final = self.crowd([], "")
        self.assertEqual(got, "BYE busy", final)  # 127.0.0.1 holds every connection: no share left
        self.assertEqual(told, 0, final)

    def test_both_versions_and_their_health_checks(self):
        for version in ("send-proxy", "send-proxy-v2"):
            with self.subTest(version), tempdir() as d, Server("--proxy-protocol") as srv, \
                    HAProxy(d, srv.port, f"{version} check check-send-proxy inter 100") as lb:
                time.sleep(0.6)  # a few health checks, each a PROXY header of its own
                c = line_from(lb.port, "127.0.0.2")
                c.send("hello\n")
                self.assertEqual(c.readline(), "hello")
                c.close()
                time.sleep(0.2)
                final = final_stats(srv)
                self.assertGreaterEqual(sum(final["closes"].values()), 3, final)  # the checks and the client
                self.assertFalse([r for r in final["closes"] if r.startswith("proxy-")], final)


class DirectPeers(unittest.TestCase):
    def test_each_bad_header_is_closed_with_its_reason(self):
        with Server("--proxy-protocol", "--proxy-timeout", "300") as srv:
            def said(payload):
                s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
                if payload:
                    s.sendall(payload)
                got = recv_line(s)
                s.close()
                return got
            good = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            good.sendall(b"PROXY TCP4 192.0.2.1 127.0.0.1 40000 7000\r\nhello\n")
            self.assertEqual(recv_line(good), b"hello\n")
            self.assertEqual(said(b"hello\n"), b"")  # no header
            self.assertEqual(said(b"PROXY TCP4 192.0.2.1\r\n"), b"")
            self.assertEqual(said(b"\r\n\r\n\x00\r\nQUIT\n\x21\x11\x10\x00"), b"")  # 4 KiB announced
            start = time.monotonic()
            self.assertEqual(said(b""), b"")  # nothing at all: closed at --proxy-timeout
            waited = time.monotonic() - start
            self.assertGreaterEqual(waited, 0.25)
            self.assertLess(waited, 3.0)
            good.sendall(b"still\n")
            self.assertEqual(recv_line(good), b"still\n")  # held up by none of them
            good.close()
            time.sleep(0.2)
            final = final_stats(srv)
        closes = final["closes"]
        self.assertEqual(closes.get("proxy-missing"), 1, final)
        self.assertEqual(closes.get("proxy-malformed"), 1, final)
        self.assertEqual(closes.get("proxy-oversized"), 1, final)
        self.assertEqual(closes.get("proxy-timeout"), 1, final)
        self.assertEqual(closes.get("peer-closed"), 1, final)  # the good one, and nothing else
        self.assertEqual(int(final["accepted"]), sum(closes.values()), final)  # each counted once

    def test_a_peer_outside_the_trusted_ranges_is_refused(self):
        with Server("--proxy-protocol", "--proxy-from", "10.0.0.0/8,::1/128") as srv:
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            s.sendall(b"PROXY TCP4 192.0.2.1 127.0.0.1 40000 7000\r\nhello\n")
            self.assertEqual(recv_line(s), b"")
            s.close()
            time.sleep(0.2)
            final = final_stats(srv)
        self.assertEqual(final["closes"].get("proxy-untrusted"), 1, final)

    def test_a_bad_range_is_refused_naming_the_flag(self):
        p = subprocess.run([SERVER, "--proxy-protocol", "--proxy-from", "10.0.0.0/33"],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--proxy-from", p.stderr)
        self.assertIn("0 to 32", p.stderr)


if __name__ == "__main__":
    unittest.main()
