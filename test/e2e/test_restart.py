"""test_restart.py — a restart that refuses no connect (net::inherited_listeners, net::handover_server).

A client connects at about 1,000 a second (four threads, each connect answered with its echo) while
the server is replaced: with --handover PATH the new process takes the old one's listening socket —
the connects queued in its backlog with it — and the old one drains; not one connect is refused or
reset, and every one is echoed, over two restarts in a row. The control restarts the common way (the old process exits, then
the new one binds): connects are refused in between. (A connect the old process accepted just before
it drained may get the protocol's `BYE draining` before its echo: told to come back, counted apart.) And a handover that cannot be completed leaves
the old process serving: a successor for another address exits, a stale socket file of a killed
process is a first start, a path that is not a socket is refused. Bounded: ~12 s."""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from harness import SERVER, Server, parse_stats, wait_parked  # noqa: E402

THREADS, PER_THREAD_HZ = 4, 250  # 1,000 connects a second in all
# A sanitized server answers each connect slower: fewer connects in the same time, none lost either way.
SANITIZED = bool(os.environ.get("HEARTWHEEL_SANITIZE"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Load:
    """Connects to `port` at THREADS x PER_THREAD_HZ a second until stop(); counts each outcome."""

    def __init__(self, port):
        self.port = port
        self.counts = {"echoed": 0, "drained": 0, "refused": 0, "reset": 0, "other": 0}
        self.others = []  # what the first few "other" outcomes were
        self.lock = threading.Lock()
        self.running = True
        self.threads = [threading.Thread(target=self.run, args=(i,)) for i in range(THREADS)]
        for t in self.threads:
            t.start()

    def one(self, n):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=3) as s:
                s.sendall(b"n%d\n" % n)
                data = b""
                while not data.endswith(b"\n"):
                    chunk = s.recv(100)
                    if not chunk:
                        break
                    data += chunk
                if data.startswith(b"n%d\n" % n):  # answered (a goodbye may follow: the client leaves anyway)
                    return "echoed"
                # Accepted by a process that was leaving before it read the line (asked to within its
                # drain, or closed at the drain's end: seen under TSan): the protocol's goodbye, the
                # line never processed — told to come back, neither refused nor reset.
                return "drained" if data.startswith((b"BYE draining", b"BYE shutdown")) else ("other", data)
        except ConnectionRefusedError:
            return "refused"
        except ConnectionResetError:
            return "reset"
        except OSError as e:
            return ("other", repr(e))

    def run(self, i):
        period = 1.0 / PER_THREAD_HZ
        next_at = time.monotonic() + i * period / THREADS
        n = i
        while self.running:
            outcome = self.one(n)
            with self.lock:
                if isinstance(outcome, tuple):
                    outcome, what = outcome
                    if len(self.others) < 5:
                        self.others.append(what)
                self.counts[outcome] += 1
            n += THREADS
            next_at += period
            time.sleep(max(0.0, next_at - time.monotonic()))

    def stop(self):
        self.running = False
        for t in self.threads:
            t.join()
        return dict(self.counts, others=self.others)

    @staticmethod
    def answered(counts):
        """Connects that got their echo, or the protocol's goodbye before it (never refused, reset or lost)."""
        return counts["echoed"] + counts["drained"]


def assert_nothing_lost(test, counts, attempts):
    """About 1,000 connects a second went on (fewer sanitized): none refused, reset or unanswered;
    a goodbye before the line (counted drained) is rare."""
    test.assertGreater(attempts, 400 if SANITIZED else 1500)
    test.assertEqual(counts["refused"], 0, counts)
    test.assertEqual(counts["reset"], 0, counts)
    test.assertEqual(counts["other"], 0, counts)
    test.assertEqual(Load.answered(counts), attempts, counts)
    test.assertLess(counts["drained"], attempts / 100, counts)


class Handover(unittest.TestCase):
    def test_restarts_with_handover_refuse_and_reset_no_connect(self):
        """Three processes one after another on one port, each taking over from the one before."""
        port = free_port()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "echo.handover")
            current = Server("--handover", path, "--drain-window", "1000", port=port)
            load = Load(port)
            finals, took = [], []
            for _ in range(2):
                time.sleep(0.8)
                started = time.monotonic()
                successor = Server("--handover", path, "--drain-window", "1000", port=port)
                took.append(time.monotonic() - started)
                out, err = current.proc.communicate(timeout=10)
                self.assertEqual(current.proc.returncode, 0, err)
                self.assertIn("a new process took the listening socket", err)
                finals.append(parse_stats([l for l in out.splitlines() if l.startswith("final ")][0]))
                current = successor
            time.sleep(0.8)
            counts = load.stop()
            code, out, _ = current.stop()
            self.assertEqual(code, 0)
            finals.append(parse_stats([l for l in out.splitlines() if l.startswith("final ")][0]))
        attempts = sum(v for k, v in counts.items() if k != "others")
        accepted = [int(f["accepted"]) for f in finals]
        print(f"handover: {attempts} connects in ~{attempts / 1000:.1f} s across 2 restarts (each new process "
              f"listening {', '.join(f'{t * 1000:.0f}' for t in took)} ms after it started): {counts}; "
              f"accepted by each process {accepted}")
        assert_nothing_lost(self, counts, attempts)
        self.assertTrue(all(a > (30 if SANITIZED else 100) for a in accepted), accepted)  # each served its part
        self.assertEqual(sum(accepted), attempts)

    def test_the_common_restart_refuses_connects(self):
        """The control: without --handover the old process closes its socket, then the new one binds."""
        port = free_port()
        old = Server(port=port)
        load = Load(port)
        time.sleep(0.5)
        old.stop()
        time.sleep(0.2)  # a supervisor's restart delay, shorter than most
        new = Server(port=port)
        time.sleep(0.5)
        counts = load.stop()
        new.stop()
        print(f"common restart (exit, 200 ms, bind): {counts}")
        self.assertGreater(counts["refused"], 10 if SANITIZED else 50, counts)

    def test_a_successor_for_another_address_leaves_the_old_process_serving(self):
        port, other = free_port(), free_port()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "echo.handover")
            with Server("--handover", path, port=port) as old:
                p = subprocess.run([SERVER, "--listen", f"127.0.0.1:{other}", "--handover", path],
                                   capture_output=True, text=True, timeout=20)
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn(f"listens on no socket for 127.0.0.1:{other} (it serves on)", p.stderr)
                time.sleep(0.2)
                with socket.create_connection(("127.0.0.1", port), timeout=3) as s:  # still serving, not draining
                    s.sendall(b"still\n")
                    self.assertEqual(s.recv(100), b"still\n")
                # And the old process still hands over to a right successor afterwards.
                with Server("--handover", path, port=port) as new:
                    self.assertEqual(old.proc.wait(timeout=10), 0)
                    with socket.create_connection(("127.0.0.1", new.port), timeout=3) as s:
                        s.sendall(b"new\n")
                        self.assertEqual(s.recv(100), b"new\n")

    def test_a_stale_socket_file_is_a_first_start_and_a_plain_file_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "echo.handover")
            killed = Server("--handover", path)
            killed.proc.kill()
            killed.proc.wait()
            self.assertTrue(os.path.exists(path))  # left behind by SIGKILL
            with Server("--handover", path) as srv:
                with socket.create_connection(("127.0.0.1", srv.port), timeout=3) as s:
                    s.sendall(b"fresh\n")
                    self.assertEqual(s.recv(100), b"fresh\n")
            self.assertFalse(os.path.exists(path))  # removed by its own process at exit
            plain = os.path.join(d, "notes.txt")
            with open(plain, "w") as f:
                f.write("keep me\n")
            p = subprocess.run([SERVER, "--listen", "127.0.0.1:0", "--handover", plain],
                               capture_output=True, text=True, timeout=20)
            self.assertEqual(p.returncode, 1)
            self.assertIn("exists and is not a socket", p.stderr)
            with open(plain) as f:
                self.assertEqual(f.read(), "keep me\n")


def activated(sock, *flags):
    """echo_server as systemd's socket activation starts it: `sock` as descriptor 3, LISTEN_FDS=1 and
    LISTEN_PID its own pid (sh sets it, then execs the server in its place)."""
    port = sock.getsockname()[1]
    proc = subprocess.Popen(["sh", "-c", 'LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@"', SERVER,
                             "--listen", f"127.0.0.1:{port}", *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, pass_fds=(3,), preexec_fn=lambda: os.dup2(sock.fileno(), 3))
    line = proc.stdout.readline()
    assert line == f"listening on 127.0.0.1:{port}\n", (line, proc.stderr.read())
    return proc


class SocketActivation(unittest.TestCase):
    def test_two_instances_on_one_activated_socket_restart_one_by_one(self):
        """The systemd recipe (docs/operations.md): echo@a and echo@b share echo.socket; each restarted
        in turn while the other accepts from the same queue — nothing refused, reset or kept waiting
        for a drain. The socket is systemd's (here the test's): it never closes."""
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", 0))
            sock.listen(4096)
            port = sock.getsockname()[1]
            flags = ("--drain-window", "300")
            instances = [activated(sock, *flags), activated(sock, *flags)]
            load = Load(port)
            for i in range(2):
                time.sleep(0.6)
                instances[i].send_signal(signal.SIGTERM)
                out, err = instances[i].communicate(timeout=10)
                self.assertEqual(instances[i].returncode, 0, err)
                instances[i] = activated(sock, *flags)
            time.sleep(0.6)
            counts = load.stop()
            finals = []
            for p in instances:
                p.send_signal(signal.SIGTERM)
                out, _ = p.communicate(timeout=10)
                finals.append(parse_stats([l for l in out.splitlines() if l.startswith("final ")][0]))
        attempts = sum(v for k, v in counts.items() if k != "others")
        print(f"socket activation, two instances restarted one by one: {attempts} connects: {counts}; "
              f"the last two processes accepted {[int(f['accepted']) for f in finals]}")
        assert_nothing_lost(self, counts, attempts)

    def test_without_the_variables_the_server_binds_its_own(self):
        """LISTEN_PID naming another process: not activated (a child must not take its parent's)."""
        env = dict(os.environ, LISTEN_PID="1", LISTEN_FDS="1")
        p = subprocess.Popen([SERVER, "--listen", "127.0.0.1:0", "--drain-window", "0"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = p.stdout.readline()
        wait_parked(p.pid)
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=10)
        self.assertTrue(line.startswith("listening on 127.0.0.1:") and not line.endswith(":0\n"), line)


if __name__ == "__main__":
    unittest.main(verbosity=2)
