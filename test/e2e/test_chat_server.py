"""chat_server (examples/chat): a fan-out server whose slow consumers are bounded by the connection's
output policy. One client floods 1 KB lines at 2 MB/s, healthy clients read everything, and 1, then 50 clients never
read. Every non-reader is closed slow-consumer (counted once each), the healthy readers get every
line in order, and the server's RSS stays within its base + non-readers x hard limit + slack. Before
the output bound one non-reader drove this server to 1.94 GB in 8 s. Bounded in time and count."""
import os
import socket
import subprocess
import sys
import threading
import time
import unittest

import side_by_side
from harness import BUILD, parse_stats, rss_mib, tempdir

CHAT = os.path.join(BUILD, "examples", "chat_server")
SANITIZED = bool(os.environ.get("HEARTWHEEL_SANITIZE"))  # sanitizer allocators keep freed memory
HARD = 1 << 20
SLACK_MIB = 48  # the allocator's own, the healthy readers' queues, the kernel's pages counted in RSS


class Chat:
    def __init__(self, config):
        self.proc = subprocess.Popen([CHAT, "--listen", "127.0.0.1:0", "--drain-window", "0", "--config", config], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("listening on 127.0.0.1:"), f"first line was {line!r}, {self.proc.stderr.read()}"
        self.port = int(line.strip().rsplit(":", 1)[1])

    def stop(self):
        self.proc.terminate()
        out, err = self.proc.communicate(timeout=30)
        assert self.proc.returncode == 0, err
        return parse_stats([l for l in out.splitlines() if l.startswith("final ")][0])


class Reader(threading.Thread):
    """A healthy client: reads every line, checks the flood's sequence, answers pings."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.expected = 0
        self.out_of_order = 0
        self.closed_with = None
        self.stop_at = None

    def run(self):
        buf = b""
        while True:
            try:
                chunk = self.sock.recv(1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                self.closed_with = self.closed_with or "eof"
                return
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if line.startswith(b"PING "):
                    self.sock.sendall(b"PONG " + line[5:] + b"\n")
                elif line.startswith(b"BYE "):
                    self.closed_with = line.decode()
                elif line.startswith(b"L"):
                    seq = int(line[1:].split(b" ", 1)[0])
                    if seq != self.expected:
                        self.out_of_order += 1
                    self.expected = seq + 1
            if self.stop_at is not None and self.expected >= self.stop_at:
                return


class SlowConsumers(unittest.TestCase):
    def setUp(self):
        self.tmp = tempdir()
        self.config = os.path.join(self.tmp.name, "chat.toml")
        with open(self.config, "w") as f:
            f.write('[idle]\nreader_idle = "5m"\n[output]\nhard_limit = "1MiB"\nsoft_limit = "256KiB"\n'
                    'soft_limit_time = "2s"\n')

    def tearDown(self):
        self.tmp.cleanup()

    def run_flood(self, non_readers, seconds=12.0 if SANITIZED else 6.0, rate_bytes=2 << 20):
        chat = Chat(self.config)
        try:
            readers = [Reader(chat.port) for _ in range(3)]
            mutes = []
            for _ in range(non_readers):  # connected, never read a byte
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.connect(("127.0.0.1", chat.port))
                mutes.append(s)
            flooder = socket.create_connection(("127.0.0.1", chat.port), timeout=30)
            time.sleep(0.3)  # every member joined
            base = rss_mib(chat.proc.pid)
            for r in readers:
                r.start()
            payload = b"x" * 990  # 1 KB lines: the bytes, not the per-line work, fill the non-readers
            sent = 0
            peak = base
            start = time.monotonic()
            batch = 20
            interval = batch * (len(payload) + 10) / rate_bytes
            next_at = start
            while time.monotonic() - start < seconds:
                flooder.sendall(b"".join(b"L%d %s\n" % (sent + i, payload) for i in range(batch)))
                sent += batch
                next_at += interval
                delay = next_at - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                peak = max(peak, rss_mib(chat.proc.pid))
            for r in readers:
                r.stop_at = sent
            deadline = time.monotonic() + 30
            while any(r.expected < sent and r.closed_with is None for r in readers) and time.monotonic() < deadline:
                time.sleep(0.05)
                peak = max(peak, rss_mib(chat.proc.pid))
            closed = [r.closed_with for r in readers]  # before the server's own stop closes them
            final = chat.stop()
        finally:
            if chat.proc.poll() is None:
                chat.proc.kill()
        for s in mutes:
            s.close()
        flooder.close()
        bound = base + non_readers * HARD / (1 << 20) + SLACK_MIB
        print(f"chat flood: {sent} lines ({sent * 1000 / 1e6:.1f} MB) to 3 readers and {non_readers} non-readers; "
              f"server RSS base {base:.1f} MiB, peak {peak:.1f} MiB (bound {bound:.1f}); closes {final['closes']}; "
              f"readers got {[r.expected for r in readers]}", file=sys.stderr)
        self.assertEqual(final["closes"].get("slow-consumer", 0), non_readers, final)
        for r, c in zip(readers, closed):  # healthy peers lose nothing and are never closed
            self.assertEqual(r.expected, sent)
            self.assertEqual(r.out_of_order, 0)
            self.assertIsNone(c)
        if not SANITIZED:
            self.assertLess(peak, bound)
        return peak - base

    def test_one_non_reader(self):
        self.run_flood(1)

    def test_fifty_non_readers(self):
        self.run_flood(50)


if __name__ == "__main__":
    side_by_side.main(__file__)
