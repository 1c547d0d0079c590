#!/usr/bin/env python3
"""demo_ws.py — the demo's WebSocket scene: ws_chat_server (Boost.Beast on heartwheel, one io_context on
two threads) with real WebSocket clients (Python's websockets): two clients chat, one that answers the
server's ping frames but says nothing is closed 1001 "reader-idle", one that stops answering pings is
closed 1001 "heartbeat-timeout". Run by demo.py (exit 0 when the scene went as scripted)."""
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time

try:
    import websockets
except ImportError:  # a Python without Debian's packages (pyenv, a venv): Debian's own has them
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    raise

BUILD = os.environ.get("HEARTWHEEL_BUILD", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
SERVER = os.path.join(BUILD, "examples", "ws_chat_server")
T0 = float(os.environ.get("DEMO_T0", time.time()))
CONFIG = '[idle]\nreader_idle = "3s"\n[heartbeat]\ninterval = "500ms"\ntimeout = "400ms"\nmisses = 3\n'


def say(who, what):
    print(f"[{time.time() - T0:5.1f}s] {who:<12} {what}", flush=True)


async def scene(port):
    url = f"ws://127.0.0.1:{port}"
    alice = await websockets.connect(url, ping_interval=None)
    bob = await websockets.connect(url, ping_interval=None)
    quiet = await websockets.connect(url, ping_interval=None)
    mute = await websockets.connect(url, ping_interval=None)

    async def no_pong(data=b""):
        say("ws-mute", "a ping frame arrives; no pong goes back")
    mute.pong = no_pong
    say("ws-scene", "alice and bob chat; quiet answers ping frames but says nothing; mute stops answering pings")
    results = {}

    async def until_closed(name, ws):
        try:
            while True:
                msg = await ws.recv()
                if name == "bob":
                    say("ws-bob", f"got {msg!r}, answers")
                    await ws.send(f"re: {msg}")
        except websockets.ConnectionClosed as e:
            results[name] = (e.rcvd.code, e.rcvd.reason) if e.rcvd else None
            say(f"ws-{name}", f"closed; the server's close frame: {results[name]}")
    watchers = [asyncio.create_task(until_closed(n, w)) for n, w in (("bob", bob), ("quiet", quiet), ("mute", mute))]
    for i in range(8):  # 4 s: quiet (3 s of silence) and mute (3 missed pings) are closed meanwhile
        await alice.send(f"hello #{i}")
        await asyncio.sleep(0.5)
    await asyncio.wait_for(asyncio.gather(watchers[1], watchers[2]), 10)
    await alice.close()
    await bob.close()
    await watchers[0]
    return results


def main():
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(CONFIG)
    proc = subprocess.Popen([SERVER, "--listen", "127.0.0.1:0", "--config", f.name], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        first = proc.stdout.readline().strip()
        say("ws-server", first)
        results = asyncio.run(scene(int(first.rsplit(":", 1)[1])))
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=10)
        for line in out.splitlines():
            say("ws-server", line)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.unlink(f.name)
    ok = (results.get("quiet") == (1001, "reader-idle") and results.get("mute") == (1001, "heartbeat-timeout")
          and results.get("bob") == (1000, ""))  # bob closed itself, healthy to the end: the server answered 1000
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
