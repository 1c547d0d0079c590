"""harness.py — start echo_server / echo_client binaries and talk to them over 127.0.0.1.

Every wait is bounded; a test never asserts a duration tighter than generous bounds."""
import os
import select
import signal
import socket
import ssl
import subprocess
import tempfile
import time

BUILD = os.environ.get("HEARTWHEEL_BUILD", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
SERVER = os.path.join(BUILD, "examples", "echo_server")
CLIENT = os.path.join(BUILD, "examples", "echo_client")
# HEARTWHEEL_ECHO_MODEL=pool runs every started server in the thread-pool model (test_pool_model.py).
MODEL = os.environ.get("HEARTWHEEL_ECHO_MODEL", "threads")


def debian_module(name):
    """Imports `name`, a module that comes from a Debian package (python3-websockets,
    python3-paho-mqtt). A Python without Debian's packages (pyenv, a venv) runs the calling script again
    under Debian's own /usr/bin/python3, which has them."""
    import importlib
    import sys
    try:
        return importlib.import_module(name)
    except ImportError:
        if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
            os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
        raise


def threading_flags(flags):
    """`flags` for the threading model under test: in the pool model --threads N becomes --io-threads N
    (one io_context on N threads, a strand per shard) and a server given neither gets --io-threads 2."""
    flags = list(flags)
    if MODEL != "pool":
        return flags
    if "--threads" in flags:
        flags[flags.index("--threads")] = "--io-threads"
        return flags
    return flags + ["--io-threads", "2"]


def rss_mib(pid):
    """A process's resident set, MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def parse_stats(line):
    """The fields of a server 'stats ...' or 'final ...' line: {name: text}, with 'closes' as
    {reason: count}."""
    fields = dict(f.split("=", 1) for f in line.split()[1:] if "=" in f)
    closes = fields.get("closes", "none")
    fields["closes"] = {} if closes == "none" else {k: int(v) for k, v in (p.split(":") for p in closes.split(","))}
    return fields


class Server:
    """An echo_server on a free port of `host`; stopped (SIGTERM) on exit. `prefix` runs it through
    another command (the fault tests use `ip netns exec NS`, which execs, so the pid is the server's)."""

    def __init__(self, *flags, expect_listen=True, host="127.0.0.1", prefix=(), port=0):
        if expect_listen:  # a server that must refuse its flags is left as the test wrote it
            flags = threading_flags(flags)
            if "--drain-window" not in flags:  # SIGTERM shuts down at once (BYE shutdown) unless a test drains
                flags = [*flags, "--drain-window", "0"]
        self.proc = subprocess.Popen([*prefix, SERVER, "--listen", f"{host}:{port}", *flags], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.host = host
        self.port = None
        if expect_listen:
            line = self.proc.stdout.readline()
            assert line.startswith(f"listening on {host}:"), f"first line was {line!r}, stderr: {self.proc.stderr.read()}"
            self.port = int(line.strip().rsplit(":", 1)[1])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self, timeout=10):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        return self.proc.returncode, out, err


class CoroServer(Server):
    """A coroutine-shaped server (test/shapes/coro_echo_server.cpp; `binary` picks its Asio flavour),
    started like echo_server (first line: listening on HOST:PORT); `io_threads` runs it on a pool."""

    def __init__(self, binary, config, tls=None, io_threads=0):
        args = [binary, "--listen", "127.0.0.1:0", "--config", config]
        if io_threads:
            args += ["--io-threads", str(io_threads)]
        if tls:
            args += ["--tls", *tls]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.host = "127.0.0.1"
        line = self.proc.stdout.readline()
        assert line.startswith("listening on 127.0.0.1:"), f"first line was {line!r}, stderr: {self.proc.stderr.read()}"
        self.port = int(line.strip().rsplit(":", 1)[1])


class FramedServer:
    """A Beast example server (ws_chat_server, http_server) on `host`:`port` (0: any) with `flags` (`prefix`: run
    through another command, as Server's). stop() sends
    SIGTERM and returns its final line — "final closes=<reason>:<n>,... <count>=<n>" — as
    ({reason: n}, n); leaving the `with` kills it if it still runs."""

    def __init__(self, binary, count, *flags, host="127.0.0.1", prefix=(), port=0):
        self.count = count
        if "--drain-window" not in flags:  # SIGTERM closes at once ("shutdown") unless a test drains
            flags = [*flags, "--drain-window", "0"]
        self.proc = subprocess.Popen([*prefix, binary, "--listen", f"{host}:{port}", *flags], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith(f"listening on {host}:"), f"first line {line!r}: {self.proc.stderr.read()}"
        self.host = host
        self.port = int(line.strip().rsplit(":", 1)[1])

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.ended()

    def ended(self, timeout=30):
        """Waits for the process to exit (by itself: a drain after a handover; or after stop()) and
        returns its final line as ({reason: n}, n)."""
        out, err = self.proc.communicate(timeout=timeout)
        assert self.proc.returncode == 0, f"exit {self.proc.returncode}: {err}"
        final = [line for line in out.splitlines() if line.startswith("final ")][0]
        fields = dict(part.split("=", 1) for part in final.split()[1:])
        closes = {} if fields["closes"] == "none" else {
            r: int(n) for r, n in (c.rsplit(":", 1) for c in fields["closes"].split(","))}
        return closes, int(fields[self.count])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


class Line:
    """A line-oriented connection (plain or TLS) with bounded reads."""

    def __init__(self, port, tls_ca=None, answer_pings=False, host="127.0.0.1"):
        raw = socket.create_connection((host, port), timeout=5)
        if tls_ca:
            ctx = ssl.create_default_context(cafile=tls_ca)
            raw = ctx.wrap_socket(raw, server_hostname="localhost")
        self.sock = raw
        self.buf = b""
        self.answer_pings = answer_pings
        self.pings = 0

    def send(self, text):
        self.sock.sendall(text.encode() if isinstance(text, str) else text)

    def readline(self, timeout=5.0):
        """The next line (without newline) that is not an answered PING; None on close or timeout."""
        deadline = time.monotonic() + timeout
        while True:
            if b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                text = line.decode(errors="replace")
                if self.answer_pings and text.startswith("PING "):
                    self.pings += 1
                    self.send("PONG " + text[5:] + "\n")
                    continue
                return text
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            pending = isinstance(self.sock, ssl.SSLSocket) and self.sock.pending()
            if not pending:
                ready, _, _ = select.select([self.sock], [], [], left)
                if not ready:
                    return None
            try:
                chunk = self.sock.recv(65536)
            except (ConnectionResetError, ssl.SSLError, OSError):
                return None
            if not chunk:
                return None
            self.buf += chunk

    def wait_for(self, prefix, timeout=5.0):
        """Reads lines until one starts with prefix; returns (line, seconds waited) or (None, ...)."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            line = self.readline(timeout - (time.monotonic() - start))
            if line is None:
                return None, time.monotonic() - start
            if line.startswith(prefix):
                return line, time.monotonic() - start
        return None, time.monotonic() - start

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def recv_line(sock):
    """What a blocking socket delivers up to and including its first newline, or what arrived before
    it closed or failed."""
    got = b""
    try:
        while not got.endswith(b"\n"):
            chunk = sock.recv(100)
            if not chunk:
                break
            got += chunk
    except OSError:
        pass
    return got


def run_client(*flags, timeout=60):
    p = subprocess.run([CLIENT, "--quiet", *flags], capture_output=True, text=True, timeout=timeout)
    return p


def make_cert(directory):
    """A throwaway CA-less self-signed certificate for localhost / 127.0.0.1, made at test time."""
    cert = os.path.join(directory, "cert.pem")
    key = os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


def tls_flags(directory):
    """echo_server's flags for TLS with a throwaway certificate, and that certificate (for --ca)."""
    cert, key = make_cert(directory)
    return ["--tls", "--cert", cert, "--key", key], cert


def tempdir():
    return tempfile.TemporaryDirectory(prefix="heartwheel-e2e-")


def tls_cipher(port, *args):
    """The suite `openssl s_client *args` agreed with 127.0.0.1:port, or None when the handshake failed."""
    p = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", *args], input="",
                       capture_output=True, text=True, timeout=20)
    for line in (p.stdout + p.stderr).splitlines():
        if "Cipher is" in line:
            return None if "(NONE)" in line else line.split("Cipher is", 1)[1].strip()
    return None


def cpu_seconds(pid):
    """User + system CPU time a process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def only_fd_exhaustion_reports(err):
    """Whether every sanitizer report in `err` is UBSan's false "invalid vptr" at the descriptor limit
    (its check writes the object's memory to a pipe, which then cannot be made); the reason a server
    under test there runs with UBSAN_OPTIONS=halt_on_error=0."""
    lines = err.splitlines()
    for i, line in enumerate(lines):
        if "runtime error" in line or "ERROR: AddressSanitizer" in line:
            if not ("does not point to an object of type" in line and i + 2 < len(lines) and
                    "invalid vptr" in lines[i + 1] and "memory cannot be printed" in lines[i + 2]):
                return False
    return True


# x86-64 system calls a thread idles in: read, poll, futex, nanosleep, clock_nanosleep, epoll_wait,
# epoll_pwait.
_IDLE_CALLS = {"0", "7", "202", "35", "230", "232", "281"}


def wait_parked(pid, timeout=10.0):
    """Waits until every thread of `pid` sits in a blocking system call (its event loop, a lock),
    seen twice 20 ms apart. A test that signals a server the moment it has started waits for this
    first: GCC 12's ThreadSanitizer runtime can lose a signal that arrives as a thread enters a
    blocking call (SIGTERM right after "listening on" never reached the handler, 27 runs of 60; the
    same with a plain sigaction + epoll_wait program, never without TSan). The servers catch it."""
    if os.uname().machine != "x86_64":
        time.sleep(0.5)
        return
    deadline = time.monotonic() + timeout
    seen = 0
    while seen < 2 and time.monotonic() < deadline:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
            calls = []
            for t in tasks:
                with open(f"/proc/{pid}/task/{t}/syscall") as f:
                    calls.append(f.read().split(" ", 1)[0].strip())
        except OSError:  # a thread came or went
            calls = ["running"]
        seen = seen + 1 if all(c in _IDLE_CALLS for c in calls) else 0
        time.sleep(0.02)
