"""test_overload_victims.py — who pays when one source fills the server (issue: overload as an attack lever).

Scaled timeouts (--reader-idle-min) shed idle connections under pressure. One address filling the
server with *busy* connections (a line every 0.5 s) is never idle, so without source shares
(--source-share 0) the scaled timeouts close the quiet healthy peers of everyone else (the control
run shows it). With a share — by default a tenth of --max-connections, here 30 — the address's
connections beyond its share do not count towards pressure, so the
quiet peers keep their full timeout, and at --max-connections a newcomer from another address
displaces the newest of the heavy address's connections (closed `over-share`) instead of being
refused. Judged from the peers' side: which sockets saw a BYE, and when. Bounded: ~7 s per run."""
import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from harness import Server, parse_stats, recv_line  # noqa: E402

LIMIT, QUIET, WATCH = 300, 30, 6.0


def connect(port, source):
    s = socket.socket()
    s.bind((source, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    return s


def gone(s):
    """What a closed non-blocking socket said last (a BYE line or b''), or None while it is open."""
    try:
        data = s.recv(65536)
    except BlockingIOError:
        return None
    except OSError:
        return b""
    if not data:
        return b""
    return data if b"BYE " in data else None


class SourceShare(unittest.TestCase):
    def run_attack(self, *flags):
        """30 quiet peers (one line, then silence inside a 30 s reader-idle) from 127.0.0.1, then 270
        busy ones from 127.0.0.2 filling the server; WATCH seconds later 20 newcomers from 127.0.0.3.
        Returns (quiet closed, newcomers echoed, busy ones that saw BYE over-share, final stats)."""
        with Server("--max-connections", str(LIMIT), "--reader-idle", "30000", "--reader-idle-min", "1000",
                    "--overload-threshold", "0.5", *flags) as srv:
            quiet = [connect(srv.port, "127.0.0.1") for _ in range(QUIET)]
            for s in quiet:
                s.sendall(b"hello\n")
                self.assertEqual(s.recv(100), b"hello\n")
                s.setblocking(False)
            busy = [connect(srv.port, "127.0.0.2") for _ in range(LIMIT - QUIET)]
            for s in busy:
                s.setblocking(False)
            quiet_closed = {}
            busy_closed = {}
            start = time.monotonic()
            while time.monotonic() - start < WATCH:
                for i, s in enumerate(busy):
                    if i in busy_closed:
                        continue
                    try:
                        s.send(b"busy\n")
                    except OSError:
                        pass
                    said = gone(s)
                    if said is not None:
                        busy_closed[i] = said
                for i, s in enumerate(quiet):
                    if i not in quiet_closed:
                        said = gone(s)
                        if said is not None:
                            quiet_closed[i] = (time.monotonic() - start, said)
                time.sleep(0.5)
            echoed = 0
            newcomers = []
            for n in range(20):
                c = connect(srv.port, "127.0.0.3")
                newcomers.append(c)
                c.sendall(b"new %d\n" % n)
                echoed += recv_line(c) == b"new %d\n" % n
            time.sleep(0.3)
            for i, s in enumerate(busy):
                if i not in busy_closed:
                    said = gone(s)
                    if said is not None:
                        busy_closed[i] = said
            for s in quiet + busy + newcomers:
                s.close()
            code, out, err = srv.stop()
        self.assertEqual(code, 0, err)
        final = parse_stats([l for l in out.splitlines() if l.startswith("final ")][0])
        over_share = sum(b"BYE over-share" in said for said in busy_closed.values())
        return quiet_closed, echoed, over_share, final

    def test_one_busy_source_does_not_make_quiet_peers_pay(self):
        quiet_closed, echoed, over_share, final = self.run_attack()  # the default share: 300 / 10
        print(f"default --source-share (auto, 30): {len(quiet_closed)}/{QUIET} quiet peers closed in {WATCH:.0f} s; newcomers echoed "
              f"{echoed}/20; busy connections that saw BYE over-share: {over_share}; closes {final['closes']}")
        self.assertEqual(quiet_closed, {}, "a quiet peer paid for the busy source")
        self.assertEqual(echoed, 20)
        self.assertGreaterEqual(over_share, 20)
        self.assertGreaterEqual(final["closes"].get("over-share", 0), 20, final)
        self.assertEqual(final["closes"].get("busy", 0), 0, final)
        self.assertEqual(int(final["accepted"]), sum(final["closes"].values()), final)

        # The control: without shares the same attack gets the quiet peers closed at the scaled timeout.
        quiet_closed, echoed, over_share, final = self.run_attack("--source-share", "0")
        times = sorted(t for t, _ in quiet_closed.values())
        print(f"--source-share 0: {len(quiet_closed)}/{QUIET} quiet peers closed reader-idle, after "
              f"{times[0] if times else 0:.1f}..{times[-1] if times else 0:.1f} s (unscaled 30 s); busy ones shed: {over_share}")
        self.assertGreaterEqual(len(quiet_closed), QUIET - 2)
        self.assertEqual(over_share, 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
