"""chat_members.py — members of ws_chat_server's room for the fleet tests and the fleet benchmark: each
a Python WebSocket client (Debian's python3-websockets) that sends "<id> <epoch> <seq>" every
`period` seconds on its connection of the moment (epoch: how many times it connected before), notes
what it receives per sender connection, and after a close 1012 (the server drains) comes back after
a random delay within the drain window — through a balancer, to whichever server it picks.

"No message lost between members present" is read from what each member received: from one sender
connection, a member's sequence numbers must be whole between the first and the last it got (a
member that joined later or left earlier sees less, never one with holes): holes().

As a program, many members in one process for the benchmark (bench/fleet/chat_fleet.py), printing one
JSON summary at the end:
    python3 chat_members.py PORT FIRST_ID COUNT SECONDS WINDOW_MS [--talkers N] [--period S] [--ramp S]
Members FIRST_ID .. FIRST_ID + COUNT - 1; those below --talkers (ids, fleet-wide) send, the others
only listen."""
import asyncio
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import debian_module  # noqa: E402

websockets = debian_module("websockets")


class ChatMember:
    def __init__(self, ident, port, until, window_ms, talks=True, period=0.2, start_after=0.0):
        self.ident, self.port, self.until, self.window_ms = ident, port, until, window_ms
        self.talks, self.period, self.start_after = talks, period, start_after
        self.epoch = 0
        self.received = {}  # (receiver epoch, sender id, sender epoch) -> [seq, ...]
        self.closes = []  # (close code, reason, monotonic time) the server sent
        self.connect_failures = 0
        self.reconnects = 0
        self.sent = 0
        self.connected_at = 0.0

    async def run(self):
        await asyncio.sleep(self.start_after)
        while time.monotonic() < self.until:
            try:
                ws = await websockets.connect(f"ws://127.0.0.1:{self.port}", ping_interval=None, open_timeout=30,
                                              close_timeout=2, max_queue=None)
            except (OSError, asyncio.TimeoutError, websockets.InvalidHandshake):
                self.connect_failures += 1
                await asyncio.sleep(0.2)
                continue
            self.connected_at = time.monotonic()
            sender = asyncio.ensure_future(self.send(ws))
            code = None
            try:
                async for text in ws:
                    ident, epoch, seq = (int(x) for x in text.split())
                    self.received.setdefault((self.epoch, ident, epoch), []).append(seq)
            except websockets.ConnectionClosed:
                pass
            sender.cancel()
            if ws.close_rcvd is not None and ws.close_rcvd_then_sent:  # the server closed first
                code = ws.close_rcvd.code
                self.closes.append((code, ws.close_rcvd.reason, time.monotonic()))
            if time.monotonic() >= self.until or code != 1012:  # another close: noted, the caller judges it
                break
            self.epoch += 1
            self.reconnects += 1
            await asyncio.sleep(random.uniform(0, self.window_ms / 1000))

    async def send(self, ws):
        seq = 0
        try:
            await asyncio.sleep(random.uniform(0, self.period))  # talkers out of step
            while time.monotonic() < self.until:
                if self.talks:
                    await ws.send(f"{self.ident} {self.epoch} {seq}")
                    seq += 1
                    self.sent += 1
                await asyncio.sleep(self.period)
            await ws.close()
        except websockets.ConnectionClosed:
            pass


def holes(member):
    """(the sender connections whose sequence this member got with a hole in it, how many sender
    connections it heard, how many messages it got)."""
    found, pairs, delivered = [], 0, 0
    for (epoch, sender, sender_epoch), seqs in member.received.items():
        pairs += 1
        delivered += len(seqs)
        if seqs != list(range(seqs[0], seqs[0] + len(seqs))):
            found.append((member.ident, epoch, sender, sender_epoch, seqs[:20]))
    return found, pairs, delivered


def all_holes(members):
    """holes() over many members: (the holes, the sender connections heard, the messages got)."""
    found, pairs, delivered = [], 0, 0
    for m in members:
        h, p, n = holes(m)
        found += h
        pairs += p
        delivered += n
    return found, pairs, delivered


def main():
    import argparse
    ap = argparse.ArgumentParser()
    for name in ("port", "first", "count"):
        ap.add_argument(name, type=int)
    ap.add_argument("seconds", type=float)
    ap.add_argument("window_ms", type=int)
    ap.add_argument("--talkers", type=int, default=None, help="ids below this send (default: all)")
    ap.add_argument("--period", type=float, default=0.2)
    ap.add_argument("--ramp", type=float, default=0.0, help="seconds over which the members' first connects spread")
    a = ap.parse_args()
    until = time.monotonic() + a.seconds
    members = [ChatMember(k, a.port, until, a.window_ms, a.talkers is None or k < a.talkers, a.period,
                          a.ramp * i / max(1, a.count)) for i, k in enumerate(range(a.first, a.first + a.count))]

    async def all_members():
        await asyncio.gather(*(m.run() for m in members))

    asyncio.run(all_members())
    found, pairs, delivered = all_holes(members)
    codes = {}
    for m in members:
        for code, _, _ in m.closes:
            codes[str(code)] = codes.get(str(code), 0) + 1
    print(json.dumps({"members": len(members), "sent": sum(m.sent for m in members), "delivered": delivered,
                      "pairs": pairs, "holes": len(found), "hole_examples": found[:5], "closes": codes,
                      "reconnects": sum(m.reconnects for m in members),
                      "connect_failures": sum(m.connect_failures for m in members),
                      "reconnects_matching_1012": all(m.reconnects == sum(c == 1012 for c, _, _ in m.closes)
                                                      for m in members),
                      "drain_closes_at": sorted(round(t, 3) for m in members for c, _, t in m.closes if c == 1012),
                      "other_closes_at": sorted([round(t, 3), c, r, m.epoch, round(m.connected_at, 3)]
                                                for m in members for c, r, t in m.closes if c != 1012)[:50]}))


if __name__ == "__main__":
    main()
