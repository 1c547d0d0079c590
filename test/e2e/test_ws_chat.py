"""test_ws_chat.py — ws_chat_server (Boost.Beast WebSocket on heartwheel, one io_context on two threads)
end to end with a real WebSocket client: Python's `websockets` (Debian's python3-websockets), never
hand-made frames except where a test sends garbage on purpose or a peer must answer nothing at all.

Each test starts its own server on 127.0.0.1:0 with a liveness config written for it, judges what the
*client* sees (close codes, reasons, when), and checks the server's final line: every close counted
once with its reason."""
import asyncio
import os
import resource
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import side_by_side  # noqa: E402
from harness import BUILD, FramedServer, debian_module, make_cert  # noqa: E402

websockets = debian_module("websockets")

SERVER = os.path.join(BUILD, "examples", "ws_chat_server")
SANITIZED = bool(os.environ.get("HEARTWHEEL_SANITIZE"))


class ChatServer(FramedServer):
    """ws_chat_server with `config` as its liveness file; stop() returns ({reason: n}, messages)."""

    def __init__(self, config, *flags):
        self.dir = tempfile.TemporaryDirectory()
        path = os.path.join(self.dir.name, "live.toml")
        with open(path, "w") as f:
            f.write(config)
        super().__init__(SERVER, "messages", "--config", path, *flags)

    def __exit__(self, *exc):
        super().__exit__(*exc)
        self.dir.cleanup()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def connect(port, tls=None, rcvbuf=None):
    scheme = "wss" if tls else "ws"
    sock = None
    if rcvbuf:  # a small receive buffer: what the peer does not read backs up in the server, not the kernel
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.connect(("127.0.0.1", port))
    # The client's own keepalive pings are off: the server's heartbeat is under test. A sanitized
    # server beside other suites may take longer than 10 s over 150 opening handshakes (TSan in CI:
    # one of ProcessStall's timed out once); how fast it opens is not what these tests judge.
    return await websockets.connect(f"{scheme}://127.0.0.1:{port}", ssl=tls, sock=sock, ping_interval=None,
                                    open_timeout=30 if SANITIZED else 10, close_timeout=5, max_queue=None)


async def all_joined(clients):
    """Waits until every client is in the room (the server adds one after its upgrade, a moment after
    the client has seen the upgrade answered): the first client's probe reaches all the others.
    Returns how many probes were sent (each is a message the server counts)."""
    for k in range(100):
        await clients[0].send(f"probe {k}")
        try:
            for c in clients[1:]:
                while await asyncio.wait_for(c.recv(), 0.2) != f"probe {k}":
                    pass
            return k + 1
        except asyncio.TimeoutError:
            continue
    raise AssertionError("the clients never were all in the room")


async def closed_by_server(ws, within=10):
    """Reads until the server closes; returns (close code, reason, seconds waited)."""
    start = time.monotonic()
    try:
        while True:
            await asyncio.wait_for(ws.recv(), within)
    except websockets.ConnectionClosed as e:
        rcvd = e.rcvd
        return (rcvd.code, rcvd.reason, time.monotonic() - start) if rcvd else (None, None, time.monotonic() - start)


class WebSocketChat(unittest.TestCase):
    def test_messages_reach_every_other_client(self):
        with ChatServer("[idle]\nreader_idle = \"10s\"\n") as srv:
            async def go():
                a, b, c = [await connect(srv.port) for _ in range(3)]
                probes.append(await all_joined([a, b, c]))
                for i in range(50):
                    await a.send(f"m{i}")
                for peer in (b, c):
                    self.assertEqual([await peer.recv() for _ in range(50)], [f"m{i}" for i in range(50)])
                with self.assertRaises(asyncio.TimeoutError):  # not echoed to its sender
                    await asyncio.wait_for(a.recv(), 0.3)
                for ws in (a, b, c):
                    await ws.close()
            probes = []
            run(go())
            closes, messages = srv.stop()
            self.assertEqual(messages, 50 + probes[0])
            self.assertEqual(closes, {"peer-closed": 3})

    def test_fragments_long_frames_utf8_and_a_clients_ping_with_another_implementation(self):
        # The layer reads RFC 6455's frames itself: what Python's websockets sends as a real client
        # does — a message in fragments (a text character cut between two of them), lengths in the
        # 16-bit and 64-bit forms, a ping of its own with a payload — arrives whole, and the ping's
        # pong carries its payload (websockets checks it).
        with ChatServer("[idle]\nreader_idle = \"10s\"\n", "--max-message", "200000") as srv:
            async def go():
                a, b = [await connect(srv.port) for _ in range(2)]
                probes.append(await all_joined([a, b]))
                await a.send(["caf", "\u00e9 au ", "lait \u2615"])  # fragments; é and ☕ intact
                mid, big = "m" * 3000, "\u00e9" * 80_000  # 126-form and 127-form lengths
                await a.send(mid)
                await a.send(big)
                got = [await asyncio.wait_for(b.recv(), 10) for _ in range(3)]
                pong = await a.ping(b"are you there")
                await asyncio.wait_for(pong, 5)
                for ws in (a, b):
                    await ws.close()
                return got
            probes = []
            got = run(go())
            self.assertEqual(got, ["caf\u00e9 au lait \u2615", "m" * 3000, "\u00e9" * 80_000])
            closes, messages = srv.stop()
            self.assertEqual(messages, 3 + probes[0])
            self.assertEqual(closes, {"peer-closed": 2})

    def test_silent_client_gets_close_frame_1001_reader_idle(self):
        with ChatServer("[idle]\nreader_idle = \"400ms\"\n") as srv:
            async def go():
                ws = await connect(srv.port)
                return await closed_by_server(ws)
            code, reason, waited = run(go())
            self.assertEqual((code, reason), (1001, "reader-idle"))
            # Never early: timed from the server's accept, a little before the client saw its upgrade answered.
            self.assertGreaterEqual(waited, 0.3)
            self.assertLess(waited, 3.0)
            closes, _ = srv.stop()
            self.assertEqual(closes, {"reader-idle": 1})

    def test_pings_keep_an_answering_client_and_close_one_that_stopped(self):
        # Pings are WebSocket ping frames; websockets answers them with pong frames by itself. The
        # second client keeps reading but stops answering (its pong() does nothing), and notes when
        # each ping arrived: the close must come after the policy's death time, counted from the first
        # unanswered ping as the client saw it, and with close code 1001 "heartbeat-timeout".
        config = "[idle]\nreader_idle = \"30s\"\n[heartbeat]\ninterval = \"100ms\"\ntimeout = \"100ms\"\nmisses = 3\n"
        with ChatServer(config) as srv:
            async def go():
                healthy = await connect(srv.port)
                mute = await connect(srv.port)
                pings = []

                async def no_pong(data=b""):
                    pings.append(time.monotonic())
                mute.pong = no_pong
                code, reason, _ = await closed_by_server(mute)
                closed_at = time.monotonic()
                self.assertEqual((code, reason), (1001, "heartbeat-timeout"))
                self.assertGreaterEqual(len(pings), 3)  # one ping per interval, each unanswered
                # Dead 300 ms after the first unanswered ping left the server (two more intervals and a
                # timeout); the client may see that ping a little late under load.
                self.assertGreaterEqual(closed_at - pings[0], 0.2)
                self.assertLess(closed_at - pings[0], 3.0)
                self.assertTrue(healthy.open, "the client answering pings was closed")
                await healthy.send("still here")
                await healthy.close()
            run(go())
            closes, _ = srv.stop()
            self.assertEqual(closes, {"heartbeat-timeout": 1, "peer-closed": 1})

    def test_slow_reader_is_closed_slow_consumer_and_healthy_readers_lose_nothing(self):
        # One writer, one healthy reader, one reader that never reads (paused: a frozen peer). The
        # writer is paced by the healthy reader (at most 200 messages ahead), so only the frozen one's
        # queue grows: past the 512 KiB bound (after the kernel's buffers fill) it is closed
        # slow-consumer; the healthy reader gets every message, in order.
        config = ("[idle]\nreader_idle = \"30s\"\n[output]\nhigh_water = 65536\nlow_water = 16384\n"
                  "hard_limit = 524288\nsoft_limit = 0\n")
        with ChatServer(config) as srv:
            async def go():
                writer, healthy, slow = [await connect(srv.port) for _ in range(3)]
                probes.append(await all_joined([writer, healthy, slow]))
                slow.transport.pause_reading()
                payload = "x" * 1000
                n = 8000  # 8 MB through each reader
                got = 0

                async def read_all():
                    nonlocal got
                    while got < n:
                        self.assertEqual(await healthy.recv(), f"{got}:{payload}")
                        got += 1
                reader = asyncio.create_task(read_all())
                for i in range(n):
                    while i - got > 200:
                        await asyncio.sleep(0.001)
                    await writer.send(f"{i}:{payload}")
                await asyncio.wait_for(reader, 30)
                self.assertEqual(got, n)
                slow.transport.resume_reading()
                # What was in the kernel's buffers, then the end: a close frame 1008 if it could
                # still be written within the linger, else the connection cut after it.
                code, reason, _ = await closed_by_server(slow, within=20)
                self.assertIn((code, reason), {(1008, "slow-consumer"), (None, None)})
                for ws in (writer, healthy):
                    await ws.close()
            probes = []
            run(go())
            closes, messages = srv.stop()
            self.assertEqual(messages, 8000 + probes[0])
            self.assertEqual(closes, {"slow-consumer": 1, "peer-closed": 2})

    def test_garbage_frame_is_a_protocol_error_1002(self):
        with ChatServer("[idle]\nreader_idle = \"10s\"\n") as srv:
            async def go():
                ws = await connect(srv.port)
                # A real client's connection, then a frame with a reserved opcode (0xB): not WebSocket.
                ws.transport.write(bytes([0x8B, 0x80, 1, 2, 3, 4]))
                return await closed_by_server(ws)
            code, _, _ = run(go())
            self.assertEqual(code, 1002)
            closes, _ = srv.stop()
            self.assertEqual(closes, {"protocol-error": 1})

    def test_a_close_code_rfc_6455_does_not_define_is_answered_1002(self):
        # 5000 and up are not close codes (RFC 6455 7.4.2): Beast would echo the peer's 5000.
        with ChatServer("[idle]\nreader_idle = \"10s\"\n") as srv:
            s = raw_client(srv.port)
            s.sendall(bytes([0x88, 0x82, 0, 0, 0, 0, 5000 >> 8, 5000 & 0xFF]))  # masked, zero mask
            answer = b""
            while chunk := s.recv(64):
                answer += chunk
            s.close()
            self.assertEqual(answer, bytes([0x88, 0x02, 0x03, 0xEA]))  # close 1002 and the FIN
            closes, _ = srv.stop()
            self.assertEqual(closes, {"protocol-error": 1})

    def test_oversized_message_is_closed_1009(self):
        with ChatServer("[idle]\nreader_idle = \"10s\"\n", "--max-message", "1024") as srv:
            async def go():
                ws = await connect(srv.port)
                await ws.send("y" * 4096)
                return await closed_by_server(ws)
            code, _, _ = run(go())
            self.assertEqual(code, 1009)
            closes, _ = srv.stop()
            self.assertEqual(closes, {"message-too-big": 1})

    def test_a_peer_judged_dead_gets_its_close_frame_and_the_fin_together(self):
        # A peer that says nothing at all after its upgrade — no pong, no answer to the close frame —
        # reads what the server sends: pings, then the close frame 1001 "heartbeat-timeout", then the
        # end of the stream right behind it. A peer judged dead is not waited for to answer the close
        # frame (a wait the linger bounds: the FIN came a whole second after the close frame).
        config = "[idle]\nreader_idle = \"30s\"\n[heartbeat]\ninterval = \"100ms\"\ntimeout = \"100ms\"\nmisses = 2\n"
        with ChatServer(config) as srv:
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                      b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
            data = b""
            while b"\r\n\r\n" not in data:
                data += s.recv(4096)
            head, data = data.split(b"\r\n\r\n", 1)
            self.assertTrue(head.startswith(b"HTTP/1.1 101"), head)
            opcodes, close_at, close_payload = [], None, None
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    eof_at = time.monotonic()
                    break
                data += chunk
                while len(data) >= 2 and len(data) >= 2 + (data[1] & 0x7F):  # server frames: short, unmasked
                    size = data[1] & 0x7F
                    opcodes.append(data[0] & 0x0F)
                    if data[0] & 0x0F == 0x8:
                        close_at, close_payload = time.monotonic(), data[2:2 + size]
                    data = data[2 + size:]
            s.close()
            self.assertIn(0x9, opcodes)  # pinged
            self.assertEqual(opcodes[-1], 0x8)
            self.assertEqual(close_payload, (1001).to_bytes(2, "big") + b"heartbeat-timeout")
            self.assertLess(eof_at - close_at, 1.0 if SANITIZED else 0.5)
            closes, _ = srv.stop()
            self.assertEqual(closes, {"heartbeat-timeout": 1})

    def test_stalled_upgrade_is_closed_by_the_handshake_timeout(self):
        with ChatServer("[idle]\nreader_idle = \"10s\"\n[limits]\nhandshake_timeout = \"300ms\"\n") as srv:
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n")  # and never the rest
            start = time.monotonic()
            self.assertEqual(s.recv(4096), b"")  # closed, nothing said: no WebSocket yet
            waited = time.monotonic() - start
            self.assertGreaterEqual(waited, 0.25)
            self.assertLess(waited, 5)
            s.close()
            closes, _ = srv.stop()
            self.assertEqual(closes, {"handshake-timeout": 1})

    @staticmethod
    def ask(port, request):
        """Sends `request` on a new connection and reads until the server closes it."""
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(request)
        reply = b""
        try:
            while chunk := s.recv(4096):
                reply += chunk
        except ConnectionResetError:  # closed with our bytes unread (a refused head): the end all the same
            pass
        s.close()
        return reply

    def test_a_plain_request_gets_the_page_or_404_and_closes_http_served(self):
        # The chat serves its own page on its WebSocket port (a browser's client: test_browser.py).
        with ChatServer("[idle]\nreader_idle = \"10s\"\n") as srv:
            page = self.ask(srv.port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            self.assertTrue(page.startswith(b"HTTP/1.1 200"), page[:80])
            self.assertIn(b"Connection: close", page)
            self.assertIn(b"new WebSocket(", page)
            missing = self.ask(srv.port, b"GET /nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            self.assertTrue(missing.startswith(b"HTTP/1.1 404"), missing[:80])
            posted = self.ask(srv.port, b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n")
            self.assertTrue(posted.startswith(b"HTTP/1.1 405"), posted[:80])
            closes, _ = srv.stop()
            self.assertEqual(closes, {"http-served": 3})

    def test_a_bad_upgrade_is_answered_400_and_garbage_closed_handshake_failed(self):
        with ChatServer("[idle]\nreader_idle = \"10s\"\n") as srv:
            # An upgrade without its key (RFC 6455 4.2.1): Beast refuses it.
            reply = self.ask(srv.port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n"
                                       b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\r\n")
            self.assertTrue(reply.startswith(b"HTTP/1.1 400"), reply[:80])
            # Not HTTP at all: closed without an answer.
            self.assertEqual(self.ask(srv.port, b"\x16\x03\x01 not a request\r\n\r\n"), b"")
            # A head past the 8 KiB limit: the same.
            self.assertEqual(self.ask(srv.port, b"GET / HTTP/1.1\r\nX: " + b"a" * 9000 + b"\r\n\r\n"), b"")
            closes, _ = srv.stop()
            self.assertEqual(closes, {"handshake-failed": 3})

    def test_wss_chat_and_reader_idle(self):
        with tempfile.TemporaryDirectory() as d:
            cert, key = make_cert(d)
            ctx = ssl.create_default_context(cafile=cert)
            with ChatServer("[idle]\nreader_idle = \"500ms\"\n", "--tls", cert, key) as srv:
                async def go():
                    a, b = await connect(srv.port, ctx), await connect(srv.port, ctx)
                    await all_joined([a, b])
                    await a.send("over tls")
                    self.assertEqual(await b.recv(), "over tls")
                    return await closed_by_server(b)
                code, reason, _ = run(go())
                self.assertEqual((code, reason), (1001, "reader-idle"))
                closes, _ = srv.stop()
                self.assertEqual(closes, {"reader-idle": 2})

    def test_sigterm_says_1001_shutdown_to_everyone(self):
        with ChatServer("[idle]\nreader_idle = \"30s\"\n") as srv:
            async def go():
                clients = [await connect(srv.port) for _ in range(8)]
                probes.append(await all_joined(clients))
                srv.proc.send_signal(signal.SIGTERM)
                return [await closed_by_server(c) for c in clients]
            probes = []
            seen = run(go())
            self.assertEqual({(code, reason) for code, reason, _ in seen}, {(1001, "shutdown")})
            out, err = srv.proc.communicate(timeout=30)
            self.assertEqual(srv.proc.returncode, 0, err)
            self.assertIn(f"final closes=shutdown:8 messages={probes[0]}", out)

    def test_sigterm_drains_with_1012_spread_over_the_window(self):
        """--drain-window 800: the first SIGTERM asks the 8 clients to leave with close 1012 (service
        restart) one after another over the window, not all at once; then the server exits 0."""
        with ChatServer("[idle]\nreader_idle = \"30s\"\n", "--drain-window", "800") as srv:
            async def go():
                clients = [await connect(srv.port) for _ in range(8)]
                probes.append(await all_joined(clients))
                srv.proc.send_signal(signal.SIGTERM)
                return await asyncio.gather(*(closed_by_server(c) for c in clients))  # (code, reason, after)
            probes = []
            seen = run(go())
            out, err = srv.proc.communicate(timeout=30)
        self.assertEqual(srv.proc.returncode, 0, err)
        self.assertEqual({(code, reason) for code, reason, _ in seen}, {(1012, "draining")})
        times = sorted(t for _, _, t in seen)
        print(f"ws drain of 8 over 800 ms: closes at {', '.join(f'{t:.2f}' for t in times)} s")
        self.assertGreater(times[-1] - times[0], 0.4, times)  # spread, not at once
        self.assertLess(times[-1], 3.0, times)
        self.assertIn(f"final closes=draining:8 messages={probes[0]}", out)

    def test_a_goodbye_behind_a_message_in_flight_still_arrives(self):
        # A reader that is not reading (a small receive buffer: ~4 MB of the 6 MB sent back up in the
        # server) has a message write in flight when the shutdown's close frame is queued behind it.
        # The connection waits for that goodbye (within its linger) instead of closing the socket at
        # once: once the reader reads again it gets what was written, in order, then the close frame
        # (what was still queued is dropped at the close, as the connection's own queue is).
        config = "[idle]\nreader_idle = \"30s\"\n[output]\nhard_limit = 16777216\nsoft_limit = 0\n"
        with ChatServer(config) as srv:
            async def go():
                writer, observer = await connect(srv.port), await connect(srv.port)
                reader = await connect(srv.port, rcvbuf=16384)
                probes.append(await all_joined([writer, observer, reader]))
                reader.transport.pause_reading()
                payload = "z" * 1000
                for i in range(6000):
                    await writer.send(f"{i}:{payload}")
                for i in range(6000):  # the server has relayed them all
                    self.assertEqual(await observer.recv(), f"{i}:{payload}")
                srv.proc.send_signal(signal.SIGTERM)
                await asyncio.sleep(0.15)
                reader.transport.resume_reading()
                got = 0
                try:
                    while True:
                        self.assertEqual(await asyncio.wait_for(reader.recv(), 10), f"{got}:{payload}")
                        got += 1
                except websockets.ConnectionClosed as e:
                    self.assertGreater(got, 0)
                    self.assertIsNotNone(e.rcvd, f"cut after {got} messages without its close frame")
                    self.assertEqual((e.rcvd.code, e.rcvd.reason), (1001, "shutdown"))
            probes = []
            run(go())
            out, err = srv.proc.communicate(timeout=30)
            self.assertEqual(srv.proc.returncode, 0, err)
            self.assertIn(f"final closes=shutdown:3 messages={6000 + probes[0]}", out)

    def test_bad_flags_exit_2_naming_the_flag(self):
        for args, needle in ((["--io-threads", "0"], "--io-threads = 0 is out of range: accepted 1..256"),
                             (["--listen", "nonsense"], "--listen"),
                             (["--max-message", "x"], '--max-message = "x" is not valid: accepted a size'),
                             (["--frobnicate"], "unknown argument '--frobnicate'")):
            p = subprocess.run([SERVER, *args], capture_output=True, text=True, timeout=10)
            self.assertEqual(p.returncode, 2, (args, p.stderr))
            self.assertIn(needle, p.stderr)


def raw_client(port):
    """A WebSocket client on a plain socket (no library between the test and the bytes): upgraded,
    blocking, for the flood below where Python's own client could neither send nor read fast enough."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        assert chunk, "closed during the upgrade"
        head += chunk
    assert head.startswith(b"HTTP/1.1 101"), head
    return s


def one_byte_frame(c):
    """A client's text frame of one byte (masked, with a zero mask: the payload goes as it is)."""
    return bytes([0x81, 0x81, 0, 0, 0, 0, c])


class Flood(unittest.TestCase):
    """One member floods a room of healthy readers with one-byte messages as fast as TCP takes them.
    Before producer budgets, Beast wrote one frame per message per reader while the flood was read
    in 64 KiB gulps, so every reader's queue passed its bound and all were closed 1008 slow-consumer
    while the flooder went on. Now the flooder's messages count against its budget until its readers
    have written them: over it, the server stops reading the flooder, so its TCP window closes and it
    goes at the speed its readers take. Judged from the readers' side: every one gets every message,
    in order, and nobody is closed."""

    def test_a_flooding_member_is_slowed_and_no_reader_is_closed(self):
        n, readers = (20_000 if SANITIZED else 100_000), 5
        config = ('[idle]\nreader_idle = "30s"\n[output]\nhigh_water = 65536\nlow_water = 16384\n'
                  'hard_limit = 1048576\nsoft_limit = 262144\nsoft_limit_time = "2s"\n')
        with ChatServer(config) as srv:
            flooder = raw_client(srv.port)
            socks = [raw_client(srv.port) for _ in range(readers)]
            expected = bytes(97 + i % 26 for i in range(n))
            got = [bytearray() for _ in socks]
            joined = [threading.Event() for _ in socks]
            errors = []

            def read(k):
                s, buf = socks[k], bytearray()
                try:
                    while len(got[k]) < n:
                        chunk = s.recv(1 << 16)
                        if not chunk:
                            return errors.append(f"reader {k} closed after {len(got[k])} messages: {bytes(buf[:8])!r}")
                        buf += chunk
                        whole = len(buf) // 3 * 3
                        frames, buf = buf[:whole], buf[whole:]
                        if frames[0::3].count(0x81) * 3 != whole or frames[1::3].count(1) * 3 != whole:
                            return errors.append(f"reader {k}: not a one-byte text frame: {bytes(frames[:12])!r}")
                        payload = frames[2::3]
                        if not got[k]:  # the join probes ('J') come first
                            if payload.lstrip(b"J") != payload:
                                joined[k].set()
                            payload = payload.lstrip(b"J")
                        got[k] += payload
                except OSError as e:
                    errors.append(f"reader {k}: {e}")

            threads = [threading.Thread(target=read, args=(k,)) for k in range(readers)]
            for t in threads:
                t.start()
            probes = 0
            while not all(j.is_set() for j in joined) and probes < 200:  # everyone is in the room
                flooder.sendall(one_byte_frame(ord("J")))
                probes += 1
                time.sleep(0.05)
            self.assertTrue(all(j.is_set() for j in joined), "the readers never were all in the room")
            start = time.monotonic()
            flooder.sendall(b"".join(one_byte_frame(c) for c in expected))
            sent = time.monotonic() - start
            for t in threads:
                t.join(60)
            took = time.monotonic() - start
            self.assertEqual(errors, [])
            for k in range(readers):
                self.assertEqual(bytes(got[k]), expected, f"reader {k}")
            print(f"flood of {n} one-byte messages to {readers} readers: sent in {sent:.2f} s, "
                  f"all delivered in {took:.2f} s")
            for s in (flooder, *socks):
                s.close()
            closes, messages = srv.stop()
            self.assertEqual(messages, n + probes)
            # Each side's close (or, if SIGTERM comes first, the server's): counted once, none slow.
            self.assertLessEqual(set(closes), {"peer-closed", "shutdown"})
            self.assertEqual(sum(closes.values()), readers + 1)


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


@unittest.skipIf(SANITIZED, "the sanitizers' allocators keep freed memory by design")
class MemoryAfterLoad(unittest.TestCase):
    """What a load peak freed goes back to the system once its connections are gone: 2,000 clients,
    50 of them broadcasting 4 KiB to all (queued for peers that do not read), then everyone leaves.
    free() alone returns only an arena's top: the server kept 27 of its 28 MiB (it grew 22). Now the
    last connection's leaving trims the heap (the teardown registry, for every server on
    net::connection): 31 -> 16 MiB, measured. What stays is Asio's reactor's per-descriptor state,
    kept for reuse, and the pages it pins."""

    def test_a_server_returns_what_a_load_peak_freed(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < 4096 <= hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (4096, hard))
        with ChatServer('[idle]\nreader_idle = "60s"\n') as srv:
            base = rss_mib(srv.proc.pid)
            socks = [raw_client(srv.port) for _ in range(2000)]
            for s in socks[:50]:  # a 4 KiB masked text frame (zero mask)
                s.sendall(bytes([0x81, 0xFE, 0x10, 0x00, 0, 0, 0, 0]) + b"x" * 4096)
            time.sleep(2)
            peak = rss_mib(srv.proc.pid)
            for s in socks:
                s.close()
            deadline = time.monotonic() + 10
            after = peak
            while time.monotonic() < deadline:
                time.sleep(0.5)
                after = rss_mib(srv.proc.pid)
                if after - base < 0.7 * (peak - base):
                    break
            print(f"RSS {base:.1f} MiB at start, {peak:.1f} at the peak, {after:.1f} once everyone left")
            # The load did grow it (by 9.6-10.7 MiB here: less since a write the socket takes at once
            # queues nothing), and a good part went back (kept without the trim: 27 of 28 MiB).
            self.assertGreater(peak - base, 8)
            self.assertLess(after - base, 0.75 * (peak - base))
            closes, _ = srv.stop()
            self.assertEqual(sum(closes.values()), 2000)


class ProcessStall(unittest.TestCase):
    """README and docs/liveness.md promise that a process stall never closes a talking peer, for every
    framing layer. 150 WebSocket clients each send a message a second (and read every broadcast); the
    server (one thread) is stopped for 12 s, past its 10 s reader idle and its heartbeat's deadlines,
    then resumed: no client may be closed, judged from the clients' side and the server's counts.
    Beast reads with read_some: the bytes Asio's reactor took out of the kernel sat behind the wheel's
    expiry when a write on the same socket completed in the same pass (16-23 of 150 clients closed
    reader-idle before liveness_stream's read_some left them in the kernel until its turn)."""

    def test_a_stall_closes_no_talking_client(self):
        n = 150
        config = '[idle]\nreader_idle = "10s"\n[heartbeat]\ninterval = "3s"\ntimeout = "2s"\nmisses = 2\n'
        with ChatServer(config, "--io-threads", "1") as srv:
            closed = []

            async def client(i, stop):
                ws = await connect(srv.port)

                async def reader():
                    try:
                        async for _ in ws:
                            pass
                    except websockets.ConnectionClosed:
                        pass
                    if not stop.is_set():
                        closed.append((i, ws.close_code, ws.close_reason))

                r = asyncio.create_task(reader())
                await asyncio.sleep(i / n)
                while not stop.is_set():
                    try:
                        await ws.send(f"m {i}")
                    except websockets.ConnectionClosed:
                        break
                    await asyncio.sleep(1.0)
                await ws.close()
                await r

            async def scene():
                stop = asyncio.Event()
                tasks = [asyncio.create_task(client(i, stop)) for i in range(n)]
                await asyncio.sleep(4)
                os.kill(srv.proc.pid, signal.SIGSTOP)
                try:
                    await asyncio.sleep(12)
                finally:
                    os.kill(srv.proc.pid, signal.SIGCONT)
                await asyncio.sleep(6)
                stop.set()
                await asyncio.gather(*tasks)

            asyncio.run(asyncio.wait_for(scene(), 90))
            closes, _ = srv.stop()
        print(f"stall of 12 s: {len(closed)} of {n} talking clients closed; closes {closes}")
        self.assertEqual(closed, [])
        self.assertEqual(closes, {"peer-closed": n})


if __name__ == "__main__":
    side_by_side.main(__file__)
