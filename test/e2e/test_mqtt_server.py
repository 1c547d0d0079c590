"""End-to-end tests of mqtt_server (examples/mqtt): devices that choose their own keep-alive.

The server must close a client silent for 1.5 x the keep-alive it announced in CONNECT, never before,
whatever the other clients announced; a client that pings stays. Real clients of the ecosystem are
used where they can show it — Debian's mosquitto_pub / mosquitto_sub and paho-mqtt (python3-paho-mqtt)
— and raw sockets where a test must control every byte (a silent device, a malformed or oversized
packet, a CONNECT that never comes, a subscriber that never reads). Times are judged from the
client's side: from when it sent its last packet to when it read the end of the stream. Bounded in
time; 127.0.0.1 only."""
import os
import re
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import side_by_side  # noqa: E402
from harness import BUILD, debian_module, make_cert, tempdir  # noqa: E402

try:
    paho = debian_module("paho.mqtt.client")
except ImportError:  # the test command installs python3-paho-mqtt; without it those tests say so
    paho = None
NO_PAHO = "paho-mqtt is not installed (python3-paho-mqtt; scripts/install-deps.sh installs it)"
NO_MOSQUITTO = "mosquitto_pub/mosquitto_sub are not installed (mosquitto-clients; scripts/install-deps.sh installs them)"
HAS_MOSQUITTO = shutil.which("mosquitto_pub") is not None and shutil.which("mosquitto_sub") is not None

MQTT = os.path.join(BUILD, "examples", "mqtt_server")
SANITIZED = bool(os.environ.get("HEARTWHEEL_SANITIZE"))
LATE = 0.6 if SANITIZED else 0.25  # how late a close may be seen (the wheel's tick, a loaded machine)


class Broker:
    def __init__(self, *flags):
        self.proc = subprocess.Popen([MQTT, "--listen", "127.0.0.1:0", "--drain-window", "0", *flags],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("listening on 127.0.0.1:"), (line, self.proc.stderr.read())
        self.port = int(line.strip().rsplit(":", 1)[1])
        self.out = ""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.out, err = self.proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.out, err = self.proc.communicate()
        assert self.proc.returncode == 0, (self.proc.returncode, self.out, err)
        return self.out

    def closes(self):
        m = re.search(r"final closes=(\S*)", self.out)
        assert m, self.out
        return {k: int(v) for k, v in (kv.split(":") for kv in m.group(1).split(",") if kv)}


# --- raw MQTT 3.1.1 ------------------------------------------------------------------------------------

def length(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def text(s):
    s = s.encode() if isinstance(s, str) else s
    return struct.pack(">H", len(s)) + s


def packet(first, body):
    return bytes([first]) + length(len(body)) + body


def connect_packet(keep_alive, client_id="dev", level=4, name="MQTT", flags=0x02):
    return packet(0x10, text(name) + bytes([level, flags]) + struct.pack(">H", keep_alive) + text(client_id))


def subscribe_packet(pid, *filters):
    return packet(0x82, struct.pack(">H", pid) + b"".join(text(f) + b"\x00" for f in filters))


def publish_packet(topic, payload):
    return packet(0x30, text(topic) + payload)


PINGREQ = b"\xc0\x00"


def read_packet(s):
    """(type, body) of the next packet, or None at the end of the stream."""
    def exactly(n):
        got = b""
        while len(got) < n:
            chunk = s.recv(n - len(got))
            if not chunk:
                return None
            got += chunk
        return got
    first = exactly(1)
    if first is None:
        return None
    n, shift = 0, 0
    while True:
        b = exactly(1)
        if b is None:
            return None
        n |= (b[0] & 0x7F) << shift
        shift += 7
        if not b[0] & 0x80:
            break
    body = exactly(n) if n else b""
    return None if body is None else (first[0] >> 4, body)


def device(port, keep_alive, tls=None, **kw):
    """A connected raw client (over TLS with an ssl context) and when it sent its CONNECT."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    if tls is not None:
        s = tls.wrap_socket(s, server_hostname="localhost")
    sent = time.monotonic()
    s.sendall(connect_packet(keep_alive, **kw))
    assert read_packet(s) == (2, b"\x00\x00"), "no CONNACK accepting it"
    return s, sent


def seconds_until_eof(s, limit=15):
    """Reads (and drops) until the server closes; how long that took, or None if it did not."""
    s.settimeout(limit)
    start = time.monotonic()
    try:
        while s.recv(4096):
            pass
    except socket.timeout:
        return None
    except OSError:
        pass
    return time.monotonic() - start


class KeepAlive(unittest.TestCase):
    def test_each_silent_device_is_closed_at_one_and_a_half_times_its_own_keep_alive(self):
        """Three devices at once with keep-alives of 1, 2 and 3 s, silent after CONNECT: closed at 1.5,
        3 and 4.5 s, never before; the shared settings hold no keep-alive at all."""
        with Broker() as b:
            results = {}

            def one(keep_alive):
                s, sent = device(b.port, keep_alive, client_id=f"dev{keep_alive}")
                seconds_until_eof(s)
                results[keep_alive] = time.monotonic() - sent
                s.close()
            threads = [threading.Thread(target=one, args=(k,)) for k in (1, 2, 3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
        for k in (1, 2, 3):
            self.assertIn(k, results, f"keep-alive {k}: not closed")
            self.assertGreaterEqual(results[k], 1.5 * k, f"keep-alive {k}: closed early")
            self.assertLess(results[k], 1.5 * k + LATE, f"keep-alive {k}: closed late")
        self.assertEqual(b.closes().get("keepalive-timeout"), 3, b.out)
        print("silent devices closed after " + ", ".join(f"{k} s keep-alive: {results[k]:.3f} s" for k in (1, 2, 3)))

    def test_a_device_that_pings_stays_and_is_closed_once_it_stops(self):
        with Broker() as b:
            s, _ = device(b.port, 1)
            for _ in range(6):  # a PINGREQ every 0.8 s for ~5 s: longer than 1.5 s each time, never closed
                time.sleep(0.8)
                last = time.monotonic()  # the device's last packet leaves: its 1.5 s count from here
                s.sendall(PINGREQ)
                self.assertEqual(read_packet(s), (13, b""), "no PINGRESP")
            took = seconds_until_eof(s)
            closed = time.monotonic() - last
            s.close()
            self.assertIsNotNone(took)
            self.assertGreaterEqual(closed, 1.5, "closed early")
            self.assertLess(closed, 1.5 + LATE, "closed late")
        self.assertEqual(b.closes(), {"keepalive-timeout": 1}, b.out)

    @unittest.skipIf(paho is None, NO_PAHO)
    def test_paho_keeps_its_connection_by_pinging_on_its_own(self):
        """paho-mqtt with a 1 s keep-alive and its network loop running: it sends PINGREQ itself, so it
        is never closed over 5 s of no traffic; a silent raw device beside it is."""
        with Broker() as b:
            disconnected, connected = [], threading.Event()
            c = paho.Client(client_id="paho-pinger", protocol=paho.MQTTv311)
            c.on_connect = lambda *a: connected.set()
            c.on_disconnect = lambda client, userdata, rc: disconnected.append(rc)
            c.connect("127.0.0.1", b.port, keepalive=1)
            c.loop_start()
            try:
                self.assertTrue(connected.wait(5))
                silent, _ = device(b.port, 1, client_id="silent")
                time.sleep(5)
                self.assertEqual(disconnected, [], "paho was disconnected while it pinged")
                self.assertIsNotNone(seconds_until_eof(silent, limit=1), "the silent device was not closed")
                silent.close()
            finally:
                c.disconnect()
                c.loop_stop()
        self.assertEqual(b.closes().get("keepalive-timeout"), 1, b.out)

    def test_keep_alive_zero_means_none_unless_the_server_caps_it(self):
        with Broker() as b:
            s, _ = device(b.port, 0)
            self.assertIsNone(seconds_until_eof(s, limit=3), "a device asking for no keep-alive was closed")
            s.close()
        with Broker("--max-keep-alive", "1") as b:
            results = []
            for k in (0, 60):  # none, and more than the cap: both judged by the cap's 1.5 s
                s, sent = device(b.port, k, client_id=f"capped{k}")
                seconds_until_eof(s)
                results.append(time.monotonic() - sent)
                s.close()
        for took in results:
            self.assertGreaterEqual(took, 1.5)
            self.assertLess(took, 1.5 + LATE)
        self.assertEqual(b.closes().get("keepalive-timeout"), 2, b.out)


class Protocol(unittest.TestCase):
    @unittest.skipUnless(HAS_MOSQUITTO, NO_MOSQUITTO)
    def test_mosquitto_clients_subscribe_with_wildcards_and_receive(self):
        with Broker() as b:
            port = str(b.port)
            sub = subprocess.Popen(["mosquitto_sub", "-h", "127.0.0.1", "-p", port, "-V", "mqttv311", "-v",
                                    "-t", "sensors/+/temp", "-t", "alarms/#", "-C", "3", "-W", "20"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(0.5)  # subscribed

            def pub(topic, message, *extra):
                subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", port, "-V", "mqttv311", "-t", topic,
                                "-m", message, *extra], check=True, timeout=10)
            pub("sensors/kitchen/temp", "21.5")
            pub("sensors/kitchen/humidity", "40")  # matches neither filter
            pub("alarms/door", "open", "-q", "1")  # QoS 1: the server acknowledges, delivers at 0
            pub("alarms", "armed", "-q", "2")  # "alarms/#" matches its parent too; QoS 2's handshake
            out, err = sub.communicate(timeout=20)
        self.assertEqual(sub.returncode, 0, err)
        self.assertEqual(out.splitlines(), ["sensors/kitchen/temp 21.5", "alarms/door open", "alarms armed"])
        self.assertRegex(b.out, r"published=4 delivered=3")

    @unittest.skipIf(paho is None, NO_PAHO)
    def test_paho_fan_out_unsubscribe_and_one_copy_for_overlapping_filters(self):
        with Broker() as b:
            got = {"a": [], "b": []}
            clients = []
            for name in got:
                c = paho.Client(client_id=name, protocol=paho.MQTTv311)
                c.on_message = (lambda n: lambda client, userdata, msg: got[n].append((msg.topic, msg.payload)))(name)
                c.connect("127.0.0.1", b.port, keepalive=30)
                c.loop_start()
                clients.append(c)
            a, bb = clients
            for c in clients:
                _, mid = c.subscribe([("room/#", 1), ("room/+", 0)])  # overlapping: one copy each
            time.sleep(0.5)
            info = a.publish("room/1", b"hello", qos=1)
            info.wait_for_publish(5)
            self.assertTrue(info.is_published(), "no PUBACK")
            time.sleep(0.5)
            bb.unsubscribe("room/#")
            bb.unsubscribe("room/+")
            time.sleep(0.5)
            a.publish("room/2", b"again", qos=0)
            time.sleep(0.5)
            for c in clients:
                c.disconnect()
                c.loop_stop()
        self.assertEqual(got["a"], [("room/1", b"hello"), ("room/2", b"again")])
        self.assertEqual(got["b"], [("room/1", b"hello")])
        self.assertEqual(b.closes().get("disconnect"), 2, b.out)


class OverTls(unittest.TestCase):
    """--tls: the same broker over the library's TLS (net::tls_socket, the handshake under its
    admission and timeout); keep-alive judged the same way once the handshake is done."""

    def test_a_silent_device_over_tls_is_closed_on_time_and_mosquitto_clients_talk_through_it(self):
        with tempdir() as d:
            cert, key = make_cert(d)
            ctx = ssl.create_default_context(cafile=cert)
            with Broker("--tls", cert, key) as b:
                s, sent = device(b.port, 1, tls=ctx)
                seconds_until_eof(s)
                took = time.monotonic() - sent
                s.close()
                self.assertGreaterEqual(took, 1.5)
                self.assertLess(took, 1.5 + LATE)
                if HAS_MOSQUITTO:
                    port = str(b.port)
                    sub = subprocess.Popen(["mosquitto_sub", "-h", "localhost", "-p", port, "--cafile", cert, "-V", "mqttv311",
                                            "-t", "secure/#", "-C", "1", "-W", "15"],
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    time.sleep(0.7)
                    subprocess.run(["mosquitto_pub", "-h", "localhost", "-p", port, "--cafile", cert, "-V", "mqttv311",
                                    "-t", "secure/door", "-m", "locked"], check=True, timeout=10)
                    out, err = sub.communicate(timeout=20)
                    self.assertEqual((sub.returncode, out.strip()), (0, "locked"), err)
        self.assertEqual(b.closes().get("keepalive-timeout"), 1, b.out)


class BadPeers(unittest.TestCase):
    def test_malformed_packets_are_closed_with_their_reason(self):
        with Broker() as b:
            cases = [
                connect_packet(5, name="MQTX"),  # not MQTT's protocol name
                connect_packet(5, flags=0x03),  # the reserved flag set
                b"\x10\xff\xff\xff\xff\x01",  # a fifth remaining-length byte
                publish_packet("t", b"x"),  # a PUBLISH before any CONNECT
            ]
            for raw in cases:
                s = socket.create_connection(("127.0.0.1", b.port), timeout=5)
                s.sendall(raw)
                self.assertIsNotNone(seconds_until_eof(s, limit=5), f"{raw!r} was not closed")
                s.close()
            s, _ = device(b.port, 30)
            s.sendall(subscribe_packet(1, "a/#/b"))  # '#' not last: a failure code, not a close
            self.assertEqual(read_packet(s), (9, b"\x00\x01\x80"))
            s.sendall(connect_packet(30))  # a second CONNECT is a protocol violation
            self.assertIsNotNone(seconds_until_eof(s, limit=5))
            s.close()
            s = socket.create_connection(("127.0.0.1", b.port), timeout=5)
            s.sendall(connect_packet(30, level=3))  # MQTT 3.1: refused with return code 1
            self.assertEqual(read_packet(s), (2, b"\x00\x01"))
            self.assertIsNotNone(seconds_until_eof(s, limit=5))
            s.close()
        closes = b.closes()
        self.assertEqual(closes.get("malformed-packet"), 5, b.out)
        self.assertEqual(closes.get("unsupported-protocol"), 1, b.out)

    def test_an_oversized_packet_is_refused_from_its_header(self):
        with Broker("--max-packet", "1024") as b:
            s, _ = device(b.port, 30)
            s.sendall(b"\x30" + length(4000) + b"\x00\x01t")  # says 4,000 bytes; sends three
            self.assertIsNotNone(seconds_until_eof(s, limit=5), "not closed before its body came")
            s.close()
            s, _ = device(b.port, 30)  # one just under the bound is served
            s.sendall(subscribe_packet(1, "t"))
            self.assertEqual(read_packet(s), (9, b"\x00\x01\x00"))
            s.sendall(publish_packet("t", b"x" * 1000))
            kind, body = read_packet(s)
            self.assertEqual((kind, len(body)), (3, 1003))
            s.close()
        self.assertEqual(b.closes().get("packet-too-large"), 1, b.out)

    def test_a_connect_that_never_comes_is_closed_at_the_connect_timeout(self):
        with Broker("--connect-timeout", "500") as b:
            start = time.monotonic()  # before the connect: the server counts from its accept, after this
            s = socket.create_connection(("127.0.0.1", b.port), timeout=5)
            s.sendall(b"\x10")  # the first byte of a CONNECT, then nothing
            seconds_until_eof(s, limit=5)
            took = time.monotonic() - start
            s.close()
        self.assertGreaterEqual(took, 0.5, "closed before the connect timeout")
        self.assertLess(took, 0.5 + LATE, "closed late")
        self.assertEqual(b.closes(), {"connect-timeout": 1}, b.out)

    def test_a_subscriber_that_never_reads_is_closed_and_the_healthy_one_loses_nothing(self):
        with Broker() as b:
            stuck = socket.socket()
            stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            stuck.connect(("127.0.0.1", b.port))
            stuck.sendall(connect_packet(0, client_id="stuck") + subscribe_packet(1, "feed"))
            healthy, _ = device(b.port, 0, client_id="healthy")
            healthy.sendall(subscribe_packet(1, "feed"))
            self.assertEqual(read_packet(healthy), (9, b"\x00\x01\x00"))
            time.sleep(0.3)
            count, size = 3000, 8192
            received = []

            def drain():
                while len(received) < count:
                    p = read_packet(healthy)
                    if p is None:
                        return
                    received.append(len(p[1]))
            reader = threading.Thread(target=drain)
            reader.start()
            with socket.create_connection(("127.0.0.1", b.port), timeout=10) as pub:
                pub.sendall(connect_packet(0, client_id="pub"))
                read_packet(pub)
                message = publish_packet("feed", b"m" * size)
                # The healthy subscriber reads at its own pace: the publisher keeps at most 1 MiB ahead of
                # it (a loaded machine's reader falls behind a tight loop of 24 MB, and a subscriber that
                # lags past the output bound is a slow consumer too). The stuck one falls behind by all.
                deadline = time.monotonic() + 30
                for sent in range(count):
                    while sent - len(received) > (1 << 20) // size and reader.is_alive() and time.monotonic() < deadline:
                        time.sleep(0.001)
                    pub.sendall(message)
                reader.join(max(1, deadline - time.monotonic()))
            healthy.close()
            stuck.close()
        self.assertEqual(len(received), count, "the healthy subscriber lost messages")
        self.assertEqual(b.closes().get("slow-consumer"), 1, b.out)

    def test_bad_flags_name_the_flag_and_the_range(self):
        for flag, value in (("--max-packet", "8"), ("--connect-timeout", "soon"), ("--max-keep-alive", "70000")):
            p = subprocess.run([MQTT, flag, value], capture_output=True, text=True, timeout=10)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(flag, p.stderr)
            self.assertRegex(p.stderr, r"\d+\.\.\d+")


if __name__ == "__main__":
    side_by_side.main(__file__)
