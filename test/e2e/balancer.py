"""balancer.py — Debian's HAProxy for the end-to-end tests: started in the foreground on 127.0.0.1 in
front of one or more backend servers, ready once it listens (read from /proc/net/tcp, not by
connecting: a probe through the balancer would be a connection of a server's, and hold one of its
places for a moment), stopped on exit."""
import os
import socket
import subprocess
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port):
    """Whether something listens on 127.0.0.1:port (/proc/net/tcp, state 0A)."""
    with open("/proc/net/tcp") as f:
        return any(line.split()[1] == f"0100007F:{port:04X}" and line.split()[3] == "0A" for line in list(f)[1:])


class HAProxy:
    """haproxy in the foreground on 127.0.0.1:<port>: backend servers at `server_ports` (one port, or
    a list), each with `server_options` (e.g. "send-proxy-v2 check check-send-proxy inter 2s"). With
    `stats`, a stats socket in `directory` (sessions() reads the frontend's count from it)."""

    def __init__(self, directory, server_ports, server_options, balance="roundrobin", maxconn=8000, stats=False):
        self.port = free_port()
        self.stats = os.path.join(directory, "haproxy.sock") if stats else None
        if isinstance(server_ports, int):
            server_ports = [server_ports]
        servers = "\n".join(f"    server s{i + 1} 127.0.0.1:{p} {server_options}" for i, p in enumerate(server_ports))
        config = os.path.join(directory, "haproxy.cfg")
        stats_line = f"\n    stats socket {self.stats} mode 600 level admin" if stats else ""
        with open(config, "w") as f:
            f.write(f"""global
    maxconn {maxconn}{stats_line}
defaults
    mode tcp
    maxconn {maxconn}
    timeout connect 2s
    timeout client 30s
    timeout server 30s
frontend front
    bind 127.0.0.1:{self.port} backlog 4096
    default_backend back
backend back
    balance {balance}
{servers}
""")
        self.proc = subprocess.Popen(["haproxy", "-db", "-f", config], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if listening(self.port) and (not stats or os.path.exists(self.stats)):
                return
            assert self.proc.poll() is None, f"haproxy exited: {self.proc.stdout.read()}"
            time.sleep(0.05)
        raise AssertionError("haproxy did not listen")

    def sessions(self):
        """The frontend's sessions since the start (HAProxy's `stot`, from the stats socket)."""
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(self.stats)
            s.sendall(b"show stat\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        lines = data.decode().splitlines()
        header = lines[0].lstrip("# ").split(",")
        for line in lines[1:]:
            row = dict(zip(header, line.split(",")))
            if row.get("pxname") == "front" and row.get("svname") == "FRONTEND":
                return int(row["stot"])
        raise RuntimeError("no frontend row in HAProxy's stats")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
