"""netns.py — a two-host network made of Linux network namespaces for the fault-injection tests.

`Network()` creates namespaces hw-srv-<pid> and hw-cli-<pid> joined by a veth pair (10.77.0.1 for the
server, 10.77.0.2 for the peers), moves this process into the client namespace (so every socket the
test opens, and every client it starts, is a peer on that link) and, on close(), moves back and
deletes both namespaces (which removes the veth pair). The fault is "every packet the peers send is
dropped": `tc netem loss 100%` on the peers' veth where the kernel has netem, otherwise an nftables
output rule dropping what leaves through that veth in the peers' namespace (same effect, e.g. on
kernels built without sch_netem; the namespace's loopback is left alone in both). `unavailable()`
says why this cannot run here (not root, no iproute2, no netns, neither netem nor nftables), or None."""
import ctypes
import os
import shutil
import subprocess

CLONE_NEWNET = 0x40000000
SERVER_IP, PEER_IP = "10.77.0.1", "10.77.0.2"


def _run(*cmd, check=True):
    return subprocess.run(list(cmd), capture_output=True, text=True, check=check, timeout=30)


def _setns(path):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({path}): {os.strerror(err)}")
    finally:
        os.close(fd)


def unavailable():
    if os.geteuid() != 0:
        return "fault injection needs root (ip netns, tc)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"'{tool}' not found (Debian package iproute2)"
    probe = f"hw-probe-{os.getpid()}"
    r = _run("ip", "netns", "add", probe, check=False)
    if r.returncode != 0:
        return f"cannot create a network namespace: {r.stderr.strip()}"
    try:
        if _drop_method(probe, "lo") is None:
            return "neither 'tc netem' (kernel sch_netem) nor nftables ('nft', package nftables) works here"
    finally:
        _run("ip", "netns", "del", probe, check=False)
    return None


def _drop_method(ns, dev):
    """'netem' or 'nft', whichever can drop packets in namespace ns; None if neither."""
    r = _run("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "netem", "loss", "0%", check=False)
    if r.returncode == 0:
        _run("ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", dev, "root", check=False)
        return "netem"
    if shutil.which("nft") and _run("ip", "netns", "exec", ns, "nft", "add", "table", "inet", "hwprobe",
                                    check=False).returncode == 0:
        _run("ip", "netns", "exec", ns, "nft", "delete", "table", "inet", "hwprobe", check=False)
        return "nft"
    return None


class Network:
    def __init__(self):
        tag = os.getpid()
        self.srv, self.cli = f"hw-srv-{tag}", f"hw-cli-{tag}"
        self.srv_if, self.cli_if = f"hws{tag % 100000}", f"hwc{tag % 100000}"
        self._home = os.open("/proc/self/ns/net", os.O_RDONLY)
        try:
            for ns in (self.srv, self.cli):
                _run("ip", "netns", "add", ns)
            _run("ip", "link", "add", self.srv_if, "netns", self.srv, "type", "veth", "peer", "name", self.cli_if,
                 "netns", self.cli)
            for ns, dev, ip in ((self.srv, self.srv_if, SERVER_IP), (self.cli, self.cli_if, PEER_IP)):
                self.exec_in(ns, "ip", "addr", "add", f"{ip}/24", "dev", dev)
                self.exec_in(ns, "ip", "link", "set", dev, "up")
                self.exec_in(ns, "ip", "link", "set", "lo", "up")
            self.method = _drop_method(self.cli, self.cli_if)
            _setns(f"/run/netns/{self.cli}")
        except Exception:
            self.close()
            raise

    def exec_in(self, ns, *cmd):
        return _run("ip", "netns", "exec", ns, *cmd)

    @property
    def server_prefix(self):
        """Prepended to a command to run it in the server's namespace."""
        return ("ip", "netns", "exec", self.srv)

    def drop_peer_packets(self):
        """From now on every packet the peers send is lost (the server's still arrive)."""
        if self.method == "netem":
            self.exec_in(self.cli, "tc", "qdisc", "replace", "dev", self.cli_if, "root", "netem", "loss", "100%")
        else:
            self.exec_in(self.cli, "nft", "add", "table", "inet", "hwfault")
            self.exec_in(self.cli, "nft", "add", "chain", "inet", "hwfault", "out",
                         "{ type filter hook output priority 0; policy accept; }")
            # Only the link's: the peers' namespace keeps its loopback (a browser and its driver talk over it).
            self.exec_in(self.cli, "nft", "add", "rule", "inet", "hwfault", "out", "oifname", self.cli_if, "drop")

    def heal(self):
        """Restores the path."""
        _run("ip", "netns", "exec", self.cli, "tc", "qdisc", "del", "dev", self.cli_if, "root", check=False)
        _run("ip", "netns", "exec", self.cli, "nft", "delete", "table", "inet", "hwfault", check=False)

    def close(self):
        if self._home is not None:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.setns(self._home, CLONE_NEWNET)
            os.close(self._home)
            self._home = None
        for ns in (self.srv, self.cli):
            _run("ip", "netns", "del", ns, check=False)
