"""test_fleet.py — a fleet's deploy, short: Debian's HAProxy (send-proxy-v2, health checks) in front of
two echo servers over TLS, clients through the balancer, and a rolling restart of both servers one by
one with --handover (each new process takes its predecessor's listening socket; the old one drains
its clients over --drain-window, BYE draining, and they come back through the balancer).

Judged from the clients' side (echo_client's summary) and from each process's final line:
 - every request answered (requests = responses, no timeout, none failed when its connection closed;
   one still unanswered at a BYE draining was never processed, and echo_client sends it again);
 - no connect failed (the balancer always had a backend: the port never closed);
 - every client reconnected exactly once per goodbye it got: reconnects = the draining closes of the
   two old processes, and nothing else closed a client;
 - no handshake shed, none failed, no PROXY header refused (health checks every 300 ms included: a
   header, then a close before any TLS byte, is peer-closed);
 - the old processes exit 0 after their drain.
The full-size version (more servers and clients, a plot of reconnects per second) is a benchmark's
job. Bounded: ~14 s."""
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from balancer import HAProxy, free_port  # noqa: E402
from harness import CLIENT, Server, parse_stats, tempdir, tls_flags  # noqa: E402

SANITIZED = bool(os.environ.get("HEARTWHEEL_SANITIZE"))
CLIENTS = 60 if SANITIZED else 200
WINDOW_MS = 1000
# Long enough for the second drain's clients to be back before the clients stop (two restarts of
# ~2 s + a sanitized start + the drain each, then a window to come back in): 74 of 75 were back by
# 9 s once under ASan.
DURATION_MS = 11000


class RollingRestart(unittest.TestCase):
    def test_a_rolling_restart_behind_haproxy_loses_no_request(self):
        with tempdir() as d:
            tls, _ = tls_flags(d)
            ports = [free_port(), free_port()]
            handovers = [os.path.join(d, f"s{i}.handover") for i in range(2)]

            def server(i):
                return Server(*tls, "--proxy-protocol", "--handover", handovers[i], "--drain-window", str(WINDOW_MS),
                              port=ports[i])

            servers = [server(0), server(1)]
            with HAProxy(d, ports, "send-proxy-v2 check check-send-proxy inter 300") as lb:
                client = subprocess.Popen([CLIENT, "--connect", f"127.0.0.1:{lb.port}", "--tls", "--insecure",
                                           "--connections", str(CLIENTS), "--send-interval", "200",
                                           "--request-timeout", "3000", "--reconnect", "yes", "--duration", str(DURATION_MS),
                                           "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                finals = []
                for i in range(2):  # one by one: the next only once the first has drained
                    time.sleep(2.0)
                    successor = server(i)
                    out, err = servers[i].proc.communicate(timeout=20)
                    self.assertEqual(servers[i].proc.returncode, 0, err)
                    self.assertIn("a new process took the listening socket", err)
                    finals.append(parse_stats([l for l in out.splitlines() if l.startswith("final ")][0]))
                    servers[i] = successor
                out, err = client.communicate(timeout=30)
                self.assertEqual(client.returncode, 0, err)
                for s in servers:
                    code, out_s, err_s = s.stop()
                    self.assertEqual(code, 0, err_s)
                    finals.append(parse_stats([l for l in out_s.splitlines() if l.startswith("final ")][0]))
        summary = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
        drained = sum(f["closes"].get("draining", 0) for f in finals[:2])
        closes = {}
        for f in finals:
            for reason, n in f["closes"].items():
                closes[reason] = closes.get(reason, 0) + n
        print(f"rolling restart of 2 servers behind HAProxy, {CLIENTS} TLS clients: requests {summary['requests']}, "
              f"responses {summary['responses']} (+{summary['unanswered_at_exit']} in flight at the end), timeouts {summary['timeouts']}, failed on close "
              f"{summary['failed_on_close']}, retried after BYE draining {summary['retried']}, connect failures {summary['connect_failures']}, reconnects "
              f"{summary['reconnects']} (told to leave: {drained}); the four processes' closes {closes}")
        self.assertGreater(summary["requests"], CLIENTS * 10)
        # Every request answered; at most one per client still in flight when the client's run ended.
        self.assertEqual(summary["requests"], summary["responses"] + summary["unanswered_at_exit"], summary)
        self.assertLessEqual(summary["unanswered_at_exit"], CLIENTS, summary)
        self.assertEqual(summary["timeouts"], 0, summary)
        self.assertEqual(summary["failed_on_close"], 0, summary)
        self.assertEqual(summary["connect_failures"], 0, summary)
        self.assertGreater(drained, CLIENTS // 4, finals[:2])  # each old process had clients to drain
        self.assertEqual(summary["reconnects"], drained, (summary, finals[:2]))
        self.assertEqual(set(summary["closed_by_server"]) - {"draining"}, set(), summary)
        self.assertEqual(closes.get("handshake-shed", 0), 0, closes)
        self.assertEqual(closes.get("handshake-failed", 0), 0, closes)
        for reason in ("proxy-missing", "proxy-malformed", "proxy-untrusted", "proxy-timeout", "proxy-oversized"):
            self.assertEqual(closes.get(reason, 0), 0, closes)


if __name__ == "__main__":
    unittest.main(verbosity=2)
