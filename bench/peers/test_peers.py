"""test_peers.py — each server of the comparison does what the policy says (run before any figure):
echo, PING answered with PONG, "BYE reader-idle" for a peer that answers pings but sends no data,
"BYE heartbeat-timeout" for a silent peer no earlier than first PING + misses x interval; over TLS
(the certificate verified), echo and PONG. Exit 1 on any failure, naming the server and the check.
    python3 bench/peers/test_peers.py [heartwheel netty go node]"""
import os
import socket
import ssl
import sys
import time

import peers

sys.path.insert(0, os.path.join(peers.HERE, "..", "scale"))
from peer_observer import SO_TIMESTAMPNS, read_stamped  # noqa: E402  (recv with the kernel's arrival time)

POLICY = {"reader_idle": 600, "interval": 100, "misses": 3}


def lines(sock, deadline):
    """Yields (time, line) until the stream ends or the deadline passes. On a plain socket the time is
    the kernel's arrival time of the line's bytes (SO_TIMESTAMPNS: a busy machine that runs this loop
    late does not move it); over TLS, when this loop read them."""
    buf = b""
    stamped = not isinstance(sock, ssl.SSLSocket)
    if stamped:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.settimeout(0.05)
    while time.monotonic() < deadline:
        try:
            chunk, at = read_stamped(sock) if stamped else (sock.recv(4096), None)
        except socket.timeout:
            continue
        if not chunk:
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield (at if at is not None else time.time()), line.decode()


def check(name):
    server, port = peers.start(name, POLICY)
    failures = []
    try:
        # Echo and PING/PONG, then a peer that answers pings and sends nothing else: reader-idle.
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"hello\nPING 7\n")
        got, bye = [], None
        for _, line in lines(s, time.monotonic() + 3):
            if line.startswith("PING "):
                s.sendall(("PONG " + line[5:] + "\n").encode())
                got.append("PING")
            elif line.startswith("BYE "):
                bye = line[4:]
            else:
                got.append(line)
        if got[:2] != ["hello", "PONG 7"]:
            failures.append(f"echo / PONG: got {got[:2]}")
        if "PING" not in got:
            failures.append("no PING while the peer sent nothing for an interval")
        if bye != "reader-idle":
            failures.append(f"a peer answering pings but sending no data was told {bye!r}, not reader-idle")
        s.close()
        # A silent peer: heartbeat-timeout, at first PING + misses x interval, not before.
        s = socket.create_connection(("127.0.0.1", port))
        first, bye, closed = None, None, None
        for t, line in lines(s, time.monotonic() + 3):
            if line.startswith("PING ") and first is None:
                first = t
            elif line.startswith("BYE "):
                bye, closed = line[4:], t
        if bye != "heartbeat-timeout":
            failures.append(f"a silent peer was told {bye!r}, not heartbeat-timeout")
        elif first is None or closed - first < POLICY["misses"] * POLICY["interval"] / 1000 - 0.002:
            failures.append(f"heartbeat-timeout {None if first is None else round((closed - first) * 1000)} ms after "
                            f"the first PING: before {POLICY['misses'] * POLICY['interval']} ms")
        s.close()
    finally:
        peers.stop(server)
    failures += check_tls(name)
    return failures


def check_tls(name):
    """Echo and PONG over TLS, the client verifying the server's certificate."""
    cert = peers.certificate()
    server, port = peers.start(name, {**POLICY, "tls": cert})
    try:
        context = ssl.create_default_context(cafile=cert[0])
        with context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5),
                                 server_hostname="127.0.0.1") as s:
            s.sendall(b"hello\nPING 7\n")
            got = []
            for _, line in lines(s, time.monotonic() + 3):
                if line.startswith("PING "):  # a cold JVM's handshake may outlast the interval
                    s.sendall(("PONG " + line[5:] + "\n").encode())
                    continue
                got.append(line)
                if len(got) == 2:
                    break
        if got[:2] != ["hello", "PONG 7"]:
            return [f"TLS echo / PONG: got {got[:2]}"]
    except (OSError, ssl.SSLError) as e:
        return [f"TLS: {e}"]
    finally:
        peers.stop(server)
    return []


def main():
    names = sys.argv[1:] or peers.NAMES
    peers.build()
    bad = False
    for name in names:
        failures = check(name)
        print(f"{name}: " + ("ok" if not failures else "; ".join(failures)))
        bad = bad or bool(failures)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
