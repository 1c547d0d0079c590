"""A process stall at scale never closes a talking peer (issue: liveness you can trust, point 1).

1,000 echo_client connections each send a line every second and answer every PING. The server is
stopped (SIGSTOP) for 12 s with its heartbeats falling due inside the stall, then resumed: every
deadline is overdue at once and ~1,000 sockets are ready, far more than one reactor pass reads.
No talking peer may be closed — judged from the peers' side (the client saw no BYE, opened no second
connection) and from the server's counts — while a few silent peers (connected, never sending) are
still closed by a policy after the stall: a stall must not make a dead peer immortal.

Both read styles: the stock echo_server (callbacks, async_receive) and a coroutine server reading
with async_read_until on connection::stream() (test/shapes/coro_echo_server.cpp); over TCP and TLS;
several runs each (the outcome used to depend on the order of one reactor pass, so one green run
proves little). The four run side by side (two at once in a sanitized build), each in its own process:
their stalls overlap, so the cores are busy with the other servers' bursts too. Each run prints its
figure: false closes / 1,000."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import unittest

import side_by_side
from harness import BUILD, CLIENT, CoroServer, Server, make_cert, parse_stats, tempdir

SANITIZED = bool(os.environ.get("HEARTWHEEL_SANITIZE"))
CORO = os.path.join(BUILD, "test", "coro_echo_server")
PEERS = 1000
SILENT = 5
STALL_S = 12
# One run per shape by default (the test command stays short); CI runs the normal build once more
# (HEARTWHEEL_STALL_RUNS=1 in .ci/run) and each sanitizer build once: a timing outcome needs several runs.
RUNS = int(os.environ.get("HEARTWHEEL_STALL_RUNS", 1))


class StallAtScale:
    def setUp(self):
        self.tmp = tempdir()
        self.cert, self.key = make_cert(self.tmp.name)
        self.config = os.path.join(self.tmp.name, "liveness.toml")
        with open(self.config, "w") as f:
            f.write('[idle]\nreader_idle = "10s"\n[heartbeat]\ninterval = "3s"\ntimeout = "2s"\nmisses = 2\n')

    def tearDown(self):
        self.tmp.cleanup()

    def start(self, shape, tls):
        if shape == "echo_server":
            flags = ["--reader-idle", "10000", "--heartbeat-interval", "3000", "--heartbeat-timeout", "2000",
                     "--heartbeat-misses", "2", "--stats-interval", "1000"]
            if tls:
                flags += ["--tls", "--cert", self.cert, "--key", self.key]
            return Server(*flags)
        return CoroServer(CORO, self.config, (self.cert, self.key) if tls else None)

    def run_once(self, shape, tls):
        with self.start(shape, tls) as srv:
            warmup = 6 if SANITIZED else 3
            duration_ms = (warmup + STALL_S + 6) * 1000
            args = [CLIENT, "--quiet", "--connect", f"127.0.0.1:{srv.port}", "--connections", str(PEERS),
                    "--send-interval", "1000", "--duration", str(duration_ms)]
            if tls:
                args += ["--tls", "--ca", self.cert]
            client = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            silent = []
            for _ in range(SILENT):  # connected, never a byte: dead as far as the server can tell
                s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
                silent.append(s)
            time.sleep(warmup)
            srv.proc.send_signal(signal.SIGSTOP)
            time.sleep(STALL_S)
            srv.proc.send_signal(signal.SIGCONT)
            out, err = client.communicate(timeout=duration_ms / 1000 + 60)
            self.assertEqual(client.returncode, 0, err)
            summary = json.loads(out.strip().splitlines()[-1])
            # The silent peers: closed by the server (they see their end of stream) after the stall.
            silent_closed = 0
            for s in silent:
                s.settimeout(5)
                try:
                    while s.recv(4096):
                        pass
                    silent_closed += 1
                except (ConnectionResetError, ssl_error()):
                    silent_closed += 1
                except socket.timeout:
                    pass
                s.close()
            code, sout, serr = srv.stop(timeout=30)
            self.assertEqual(code, 0, serr)
            final = parse_stats([l for l in sout.splitlines() if l.startswith("final ")][0])
        return summary, final["closes"], silent_closed

    def check(self, shape, tls):
        figures = []
        for run in range(RUNS):
            summary, closes, silent_closed = self.run_once(shape, tls)
            false_closes = sum(summary.get("closed_by_server", {}).values())
            figures.append(false_closes)
            print(f"{shape} {'TLS' if tls else 'TCP'} run {run + 1}: {STALL_S} s stall, {PEERS} talking peers: "
                  f"false closes {false_closes}/{PEERS} (client saw {summary.get('closed_by_server')}, "
                  f"connects {summary['connects']}); server closes {closes}; silent peers closed "
                  f"{silent_closed}/{SILENT}", file=sys.stderr)
            self.assertEqual(summary.get("closed_by_server", {}), {}, summary)
            self.assertEqual(summary["connects"], PEERS, summary)  # nobody had to reconnect
            policy = {k: v for k, v in closes.items() if k != "peer-closed"}
            # Only the silent peers are closed by a policy, each exactly once.
            self.assertEqual(sum(policy.values()), SILENT, closes)
            # (over TLS a silent peer never finishes its handshake: the 10 s handshake timeout and the
            # 10 s reader-idle both fall due in the stall, and either may judge it first)
            self.assertTrue(set(policy) <= {"reader-idle", "heartbeat-timeout", "handshake-timeout"}, closes)
            self.assertEqual(silent_closed, SILENT)
        return figures


# One class per shape and transport: side_by_side runs them at once, each in its own process — four
# servers stopped and resumed together, ~4,000 sockets ready at once on the machine's cores.
class EchoServerTcp(StallAtScale, unittest.TestCase):
    def test_no_talking_peer_closed(self):
        self.check("echo_server", False)


class EchoServerTls(StallAtScale, unittest.TestCase):
    def test_no_talking_peer_closed(self):
        self.check("echo_server", True)


class CoroutineReadUntilTcp(StallAtScale, unittest.TestCase):
    def test_no_talking_peer_closed(self):
        self.check("coro", False)


class CoroutineReadUntilTls(StallAtScale, unittest.TestCase):
    def test_no_talking_peer_closed(self):
        self.check("coro", True)


def ssl_error():
    import ssl
    return ssl.SSLError


if __name__ == "__main__":
    side_by_side.main(__file__, sanitized_at_once=2)  # a sanitized server computes several times more
