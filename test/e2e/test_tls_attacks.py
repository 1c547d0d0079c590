"""test_tls_attacks.py — attacks on echo_server's TLS path, judged by the healthy clients beside them.

Cross-talk: a connection whose write fails (a reset) while its receive is armed closes its socket; a
receive whose wait had already completed must not then read the old descriptor number, which accept
may meanwhile have given to a new client (its ClientHello would be eaten). The attacker makes exactly
that state again and again on a two-thread server while victims keep connecting; every victim must
complete its handshake and get its echo. Bounded in time (HEARTWHEEL_TLS_ATTACK_SECONDS, default 12)."""
import os
import socket
import ssl
import struct
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from harness import Server, parse_stats, tempdir, tls_flags  # noqa: E402

SECONDS = float(os.environ.get("HEARTWHEEL_TLS_ATTACK_SECONDS", "12"))


def tls_context(ca):
    ctx = ssl.create_default_context(cafile=ca)
    return ctx


class CrossTalk(unittest.TestCase):
    def attack_once(self, port, ctx):
        """Fills the server's socket buffer towards us (we read nothing, through a 4 KB receive
        buffer) while its receive stays armed (the high-water mark is far above what we send), then
        sends one more line and resets: the server's pending write and its receive both complete."""
        raw = socket.socket()
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        raw.settimeout(5)
        raw.connect(("127.0.0.1", port))
        try:  # the attacker's own handshake is a victim too: nothing but cross-talk fails it
            s = ctx.wrap_socket(raw, server_hostname="localhost")
        except (OSError, ssl.SSLError) as e:
            raw.close()
            return f"attacker handshake: {type(e).__name__}: {e}"
        line = b"x" * 1023 + b"\n"
        try:
            s.sendall(line * 3200)  # 3.2 MB echoed back at a peer that does not read
            time.sleep(0.05)
            s.sendall(b"one more\n")
        except (OSError, ssl.SSLError):
            pass
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()  # a reset, without close_notify
        return None

    def victim(self, port, ctx, stop, results):
        n = 0
        while not stop.is_set():
            n += 1
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
                    with ctx.wrap_socket(raw, server_hostname="localhost") as s:
                        s.sendall(b"victim %d\n" % n)
                        got = b""
                        while not got.endswith(b"\n"):
                            chunk = s.recv(100)
                            if not chunk:
                                break
                            got += chunk
                        results.append(None if got == b"victim %d\n" % n else f"echo {got!r}")
            except (OSError, ssl.SSLError) as e:
                results.append(f"{type(e).__name__}: {e}")

    def test_a_reset_during_a_pending_write_never_reads_another_connection(self):
        with tempdir() as d:
            flags, ca = tls_flags(d)
            ctx = tls_context(ca)
            with Server(*flags, "--threads", "2", "--output-high-water", "64MiB", "--output-low-water", "1MiB",
                        "--output-hard-limit", "128MiB", "--output-soft-limit", "0", "--stats-interval", "0") as srv:
                stop = threading.Event()
                results = []
                victims = [threading.Thread(target=self.victim, args=(srv.port, ctx, stop, results)) for _ in range(2)]
                for v in victims:
                    v.start()
                attacks = 0
                end = time.monotonic() + SECONDS
                try:
                    while time.monotonic() < end:
                        results.append(self.attack_once(srv.port, ctx))
                        attacks += 1
                finally:
                    stop.set()
                    for v in victims:
                        v.join(20)
                code, out, err = srv.stop()
        self.assertEqual(code, 0, err)
        failures = [r for r in results if r is not None]
        print(f"cross-talk: {attacks} resets with a write pending and a receive armed, {len(results)} handshakes (victims' and the attacker's own) "
              f"on 2 threads, {len(failures)} failed")
        self.assertGreater(attacks, 10)
        self.assertGreater(len(results), 100)
        self.assertEqual(failures, [], failures[:5])
        final = parse_stats([l for l in out.splitlines() if l.startswith("final ")][0])
        self.assertEqual(int(final["accepted"]), sum(final["closes"].values()), final)


if __name__ == "__main__":
    unittest.main(verbosity=2)
