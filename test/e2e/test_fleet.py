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
The same restart for the WebSocket chat (ChatRollingRestart): two ws_chat_servers behind HAProxy,
Python WebSocket clients through it, each sending a numbered message every 200 ms to the room of the
process it reached; each old process asks its clients to leave with close 1012 spread over its drain
window, and they come back through the balancer after a random delay within it. Judged from the
clients: no connect failed, every client came back once per 1012 it got and was closed in no other
way, the 1012s of one process spread over its window, and no message lost between members present —
every sequence a member received from another member's connection is whole between its first and
its last message (a member joining later or leaving earlier sees less, never one with holes).
The full-size version (more servers and clients, a plot of reconnects per second) is a benchmark's
job. Bounded: ~14 s each."""
import asyncio
import json
import os
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from balancer import HAProxy, free_port  # noqa: E402
from harness import BUILD, CLIENT, FramedServer, Server, parse_stats, tempdir, tls_flags  # noqa: E402
from chat_members import ChatMember, all_holes  # noqa: E402

CHAT = os.path.join(BUILD, "examples", "ws_chat_server")

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


class ChatRollingRestart(unittest.TestCase):
    def test_a_rolling_restart_of_the_chat_behind_haproxy_loses_no_message_between_members_present(self):
        members = 16 if SANITIZED else 40
        with tempdir() as d:
            ports = [free_port(), free_port()]
            handovers = [os.path.join(d, f"c{i}.handover") for i in range(2)]

            def server(i):
                return FramedServer(CHAT, "messages", "--proxy-protocol", "--handover", handovers[i],
                                    "--drain-window", str(WINDOW_MS), port=ports[i])

            servers = [server(0), server(1)]
            finals, drained_at = [], []
            try:
                with HAProxy(d, ports, "send-proxy-v2 check check-send-proxy inter 300") as lb:
                    until = time.monotonic() + DURATION_MS / 1000
                    clients = [ChatMember(k, lb.port, until, WINDOW_MS) for k in range(members)]

                    def restarts():
                        for i in range(2):  # one by one: the next only once the first has drained
                            time.sleep(2.5)
                            successor = server(i)
                            drained_at.append(time.monotonic())
                            finals.append(servers[i].ended(timeout=20))
                            servers[i] = successor

                    mover = threading.Thread(target=restarts)
                    mover.start()

                    async def all_members():
                        await asyncio.gather(*(c.run() for c in clients))

                    asyncio.run(asyncio.wait_for(all_members(), DURATION_MS / 1000 + 30))
                    mover.join(timeout=30)
                    for s in servers:
                        finals.append(s.stop())
            finally:
                for s in servers:
                    s.__exit__(None, None, None)
        self.assertEqual(len(finals), 4, "a restart did not finish")
        closes = {}
        for c, _ in finals:
            for reason, n in c.items():
                closes[reason] = closes.get(reason, 0) + n
        told = sum(c.get("draining", 0) for c, _ in finals[:2])
        codes = [code for c in clients for code, _, _ in c.closes]
        found, pairs, delivered = all_holes(clients)
        print(f"rolling restart of 2 chat servers behind HAProxy, {members} members: {delivered} messages delivered "
              f"over {pairs} sender/receiver connection pairs, {len(found)} with a hole; closes the members saw "
              f"{sorted(set(codes))} ({codes.count(1012)} × 1012, told to leave: {told}); reconnects "
              f"{sum(c.reconnects for c in clients)}; connect failures {sum(c.connect_failures for c in clients)}; "
              f"the four processes' closes {closes}")
        self.assertEqual(sum(c.connect_failures for c in clients), 0)
        self.assertGreater(told, members // 4, finals[:2])  # each old process had members to drain
        self.assertEqual(set(codes) - {1012}, set(), [c.closes for c in clients])
        self.assertEqual(codes.count(1012), told)
        for c in clients:
            self.assertEqual(c.reconnects, sum(code == 1012 for code, _, _ in c.closes), c.closes)
        # The asks of one process spread over its window, not all at once.
        for at in drained_at:
            times = sorted(t for c in clients for code, _, t in c.closes
                           if code == 1012 and at <= t <= at + WINDOW_MS / 1000 + 1)
            if len(times) >= 5:
                self.assertGreater(times[-1] - times[0], 0.4 * WINDOW_MS / 1000, times)
        self.assertEqual(found, [])
        self.assertGreater(delivered, members * members)  # the rooms were talking
        for reason in ("handshake-failed", "handshake-shed", "proxy-missing", "proxy-malformed", "proxy-untrusted",
                       "proxy-timeout", "proxy-oversized", "slow-consumer"):
            self.assertEqual(closes.get(reason, 0), 0, closes)


if __name__ == "__main__":
    unittest.main(verbosity=2)
