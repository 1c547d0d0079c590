"""End-to-end tests of the embedding example, kv_server (examples/kv_server.cpp): its protocol, the
blocking WAIT as a tracked request with a deadline, and liveness it gets from heartwheel::net alone
(reader idle from a liveness TOML file, BYE <reason> as last words). Bounded in time; 127.0.0.1 only."""
import os
import signal
import socket
import subprocess
import threading
import time
import unittest

import side_by_side
from harness import BUILD, tempdir

KV = os.path.join(BUILD, "examples", "kv_server")


class Kv:
    def __init__(self, *flags):
        self.proc = subprocess.Popen([KV, "--listen", "127.0.0.1:0", "--drain-window", "0", *flags], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("listening on 127.0.0.1:"), (line, self.proc.stderr.read())
        self.port = int(line.strip().rsplit(":", 1)[1])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()

    def client(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        return s, s.makefile("rwb")


def ask(f, line):
    f.write((line + "\n").encode())
    f.flush()
    return f.readline().decode().strip()


class KvServer(unittest.TestCase):
    def test_set_get_and_wait(self):
        with Kv() as kv:
            a, fa = kv.client()
            b, fb = kv.client()
            self.assertEqual(ask(fa, "SET k v1"), "OK")
            self.assertEqual(ask(fa, "GET k"), "VALUE v1")
            self.assertEqual(ask(fa, "GET nope"), "NONE")
            start = time.monotonic()
            self.assertEqual(ask(fa, "WAIT x 200"), "TIMEOUT")  # the request's own deadline
            self.assertGreaterEqual(time.monotonic() - start, 0.2 - 0.005)
            threading.Timer(0.2, lambda: ask(fb, "SET x hello")).start()
            start = time.monotonic()
            self.assertEqual(ask(fa, "WAIT x 5000"), "VALUE hello")  # completed by another client
            self.assertLess(time.monotonic() - start, 3)
            self.assertEqual(ask(fa, "QUIT"), "BYE quit")
            self.assertEqual(fa.readline(), b"")  # closed after the goodbye
            a.close()
            b.close()

    def test_a_drain_answers_a_wait_in_progress_before_the_goodbye(self):
        """A connection asked to leave with a tracked request in flight (its WAIT) answers it first,
        then says BYE draining (net::connection::leave)."""
        with Kv("--drain-window", "3000") as kv:
            a, fa = kv.client()
            self.assertEqual(ask(fa, "SET k v"), "OK")
            fa.write(b"WAIT w 800\n")
            fa.flush()
            time.sleep(0.1)
            kv.proc.send_signal(signal.SIGTERM)  # the only connection: asked at once
            start = time.monotonic()
            self.assertEqual(fa.readline().decode().strip(), "TIMEOUT")  # its own deadline, not the drain
            self.assertGreaterEqual(time.monotonic() - start, 0.5)
            self.assertTrue(fa.readline().decode().startswith("BYE draining"))
            self.assertEqual(fa.readline(), b"")
            a.close()
            kv.proc.communicate(timeout=10)
            self.assertEqual(kv.proc.returncode, 0)

    def test_liveness_from_a_toml_file(self):
        with tempdir() as d:
            cfg = os.path.join(d, "live.toml")
            with open(cfg, "w") as f:
                f.write('[idle]\nreader_idle = "300ms"\n[heartbeat]\ninterval = "10s"\n')
            with Kv("--config", cfg) as kv:
                start = time.monotonic()
                s, f = kv.client()
                self.assertEqual(f.readline().decode().strip(), "BYE reader-idle")
                self.assertGreaterEqual(time.monotonic() - start, 0.29)
                s.close()
            with open(cfg, "w") as f:
                f.write('[idle]\nreader_idle = "soon"\n')
            p = subprocess.run([KV, "--config", cfg], capture_output=True, text=True, timeout=10)
            self.assertEqual(p.returncode, 2)
            self.assertIn("idle.reader_idle", p.stderr)


if __name__ == "__main__":
    side_by_side.main(__file__)
