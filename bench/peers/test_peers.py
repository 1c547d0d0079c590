"""test_peers.py — each server of the comparison does what the policy says (run before any figure):
echo, PING answered with PONG, "BYE reader-idle" for a peer that answers pings but sends no data,
"BYE heartbeat-timeout" for a silent peer no earlier than first PING + misses x interval. Exit 1 on
any failure, naming the server and the check.
    python3 bench/peers/test_peers.py [heartwheel netty go node]"""
import socket
import sys
import time

import peers

POLICY = {"reader_idle": 600, "interval": 100, "misses": 3}


def lines(sock, deadline):
    """Yields (time, line) until the stream ends or the deadline passes."""
    buf = b""
    sock.settimeout(0.05)
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(4096)
        except socket.timeout:
            continue
        if not chunk:
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield time.monotonic(), line.decode()


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
    return failures


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
