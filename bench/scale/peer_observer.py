"""peer_observer.py — the death phase as the peers see it (issue 34: judge liveness from the peer's side).

Opens K connections to an echo_server and answers every PING with its PONG, as the benchmark's
clients do, until SIGUSR1 (the moment the benchmark stops every client). From then on it answers
nothing and, per connection, notes when the first and the last unanswered PING arrived (P, L) and
when the server's close arrived (its BYE line, or the end of the stream if no BYE came first: C).
The policy's death time after P is (misses - 1) x max(interval, timeout) + timeout (docs/liveness.md;
exact without jitter), so the connection's lateness as its peer sees it is C - (P + that): the
server's judgement lateness, what rounding added ping after ping, and the two one-way trips (on
127.0.0.1, tens of microseconds each way, in opposite directions, so they mostly cancel). With jitter
the intervals vary, and --from-last measures from the last ping instead: C - (L + timeout). A
negative value is a close before the deadline. Runs at the priority it is started with (start it
before lowering your own).

Times are the kernel's, not this loop's: every socket has SO_TIMESTAMPNS on, so each read carries the
time its bytes arrived (CLOCK_REALTIME, stamped on receipt, before any process runs). A loop that reads
2,000 PINGs arriving together would stamp the last of them milliseconds late — a late P makes a close
look early, a late C makes it look late — so P, L and C are the kernel's arrival times of the PING and
BYE lines; only a close with no BYE before it (the end of the stream carries no timestamp) falls back
to this loop's clock, and is counted ("unstamped"). How far behind the loop was is reported too
("read_delay_ms": the loop's clock at each read minus the kernel's stamp).

    python3 peer_observer.py PORT K TIMEOUT_MS [--interval MS] [--misses N] [--from-last] [--source ADDR]
prints "ready" once all K are connected, then on SIGUSR1 observes, and prints one JSON object when
every connection has closed (or 60 s after the signal): {"observed", "closed", "lateness_ms": [...],
"no_unanswered_ping", "unstamped", "read_delay_ms": {"p50", "p99", "max"}}."""
import json
import selectors
import signal
import socket
import struct
import sys
import time

# Linux's SO_TIMESTAMPNS (asm-generic; Python's socket module does not name it); its control message has
# the same type and carries a struct timespec.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
STAMP_SPACE = socket.CMSG_SPACE(struct.calcsize("qq"))


def read_stamped(s):
    """recv() that also returns the kernel's arrival time of the bytes read (None with none: end of stream)."""
    data, anc, _, _ = s.recvmsg(65536, STAMP_SPACE)
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(payload) >= 16:
            sec, nsec = struct.unpack("qq", payload[:16])
            return data, sec + nsec / 1e9
    return data, None


def main():
    port, k, timeout_ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    def arg(name, default):
        return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default
    source = arg("--source", "127.0.0.1")
    interval_ms, misses = float(arg("--interval", 0)), int(arg("--misses", 1))
    from_last = "--from-last" in sys.argv
    death_s = ((misses - 1) * max(interval_ms, timeout_ms) + timeout_ms) / 1000
    sel = selectors.DefaultSelector()
    conns = {}
    for _ in range(k):
        s = socket.socket()
        s.bind((source, 0))
        s.connect(("127.0.0.1", port))
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        s.setblocking(False)
        conns[s] = {"buf": b"", "ping": None, "last": None, "closed": None}
        sel.register(s, selectors.EVENT_READ)
    stopped, delays, unstamped = [], [], []
    signal.signal(signal.SIGUSR1, lambda *_: stopped.append(time.monotonic()))
    print("ready", flush=True)
    end = None
    while any(c["closed"] is None for c in conns.values()):
        if stopped and end is None:
            end = stopped[0] + 60
        if end is not None and time.monotonic() > end:
            break
        for key, _ in sel.select(timeout=0.5):
            s = key.fileobj
            c = conns[s]
            try:
                data, stamp = read_stamped(s)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data, stamp = b"", None
            wall = time.time()
            if stamp is not None and stopped:
                delays.append(wall - stamp)
            now = stamp if stamp is not None else wall
            if not data:
                if c["closed"] is None:
                    c["closed"] = now
                    if stopped:
                        unstamped.append(s)
                sel.unregister(s)
                continue
            c["buf"] += data
            while b"\n" in c["buf"]:
                line, c["buf"] = c["buf"].split(b"\n", 1)
                if line.startswith(b"BYE ") and stopped and c["closed"] is None:
                    c["closed"] = now
                elif line.startswith(b"PING "):
                    if not stopped:
                        try:
                            s.send(b"PONG " + line[5:] + b"\n")
                        except OSError:
                            pass
                    elif c["closed"] is None:
                        if c["ping"] is None:
                            c["ping"] = now
                        c["last"] = now
    lateness = [round((c["closed"] - (c["last"] + timeout_ms / 1000 if from_last else c["ping"] + death_s)) * 1000, 3)
                for c in conns.values() if c["closed"] is not None and c["ping"] is not None]
    print(json.dumps({"observed": k, "closed": sum(c["closed"] is not None for c in conns.values()),
                      "no_unanswered_ping": sum(c["ping"] is None for c in conns.values()),
                      "unstamped": len(unstamped), "read_delay_ms": spread(delays),
                      "lateness_ms": sorted(lateness)}), flush=True)


def spread(v):
    """p50, p99 and max of delays in seconds, as milliseconds."""
    v = sorted(v)
    if not v:
        return {"p50": None, "p99": None, "max": None}
    return {"p50": round(v[len(v) // 2] * 1000, 3), "p99": round(v[min(len(v) - 1, int(0.99 * len(v)))] * 1000, 3),
            "max": round(v[-1] * 1000, 3)}


if __name__ == "__main__":
    main()
