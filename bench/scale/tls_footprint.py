"""tls_footprint.py — what an idle connection costs the server over TCP and over TLS, side by side in one
run: the server's resident memory (VmRSS) per connection, with the scale benchmark's policies on.

Per transport: one echo_server (reader idle, heartbeat every 2 s — so every connection has sent and
answered pings, and its buffers have been used and released, before it is measured — and max age),
its RSS read after start; one echo_client with --connections N answering pings and sending nothing;
once all N are up and two more heartbeat intervals have passed, the RSS again: (after − before) / N.
TLS uses a throwaway self-signed P-256 certificate made with openssl; the client verifies it (--ca).
RSS is what the process really holds (touched pages), so it includes what OpenSSL and Asio's
ssl::stream keep per connection, which bench/scale/footprint.cpp (heap bytes, TCP only) does not see.
Prints a Markdown table and a JSON line.
    python3 bench/scale/tls_footprint.py [--connections 2000]"""
import argparse
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "..", "test", "e2e")]
from harness import make_cert  # noqa: E402  (the e2e tests' throwaway P-256 certificate)
from scale_bench import CLIENT, policy_flags, proc_cpu_rss, scrape, start_server  # noqa: E402

INTERVAL, TIMEOUT, TICK = 2000, 1000, 10


def measure(n, server_flags, client_flags):
    """Server RSS per idle connection (bytes) and the connections counted, for one transport."""
    server, port, mport = start_server([*policy_flags(INTERVAL, TIMEOUT, TICK), *server_flags])
    client = None
    try:
        time.sleep(0.5)
        before = proc_cpu_rss(server.pid)[1]
        client = subprocess.Popen([CLIENT, "--quiet", "--connect", f"127.0.0.1:{port}", "--connections", str(n),
                                   "--send-interval", "0", "--answer-pings", "yes", "--duration", "3600000",
                                   *client_flags], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while scrape(mport).get("heartwheel_connections", 0) < n:
            if client.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"only {scrape(mport).get('heartwheel_connections', 0):.0f} of {n} connections "
                                 f"came up: {client.stderr.read() if client.poll() is not None else 'timed out'}")
            time.sleep(0.2)
        time.sleep(2 * INTERVAL / 1000 + 0.5)  # every connection pinged and answering, then idle again
        m = scrape(mport)
        after = proc_cpu_rss(server.pid)[1]
        pongs = int(m.get("heartwheel_pongs_received_total", 0))
        return {"connections": int(m.get("heartwheel_connections", 0)), "pongs": pongs,
                "rss_per_connection_bytes": round((after - before) * 1024 / n), "read_buffers": int(m.get("heartwheel_read_buffers", 0))}
    finally:
        if client is not None:
            client.kill()
            client.wait()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connections", type=int, default=2000)
    n = ap.parse_args().connections
    with tempfile.TemporaryDirectory(prefix="heartwheel-tls-") as d:
        cert, key = make_cert(d)
        tcp = measure(n, [], [])
        tls = measure(n, ["--tls", "--cert", cert, "--key", key], ["--tls", "--ca", cert])
        tls_openssl = measure(n, ["--tls", "--cert", cert, "--key", key, "--tls-lean", "no"], ["--tls", "--ca", cert])
    ktls = kernel_tls()
    print(f"{n} idle connections per transport, one echo_server each (reader idle, heartbeat every "
          f"{INTERVAL / 1000:g} s answered, max age); server RSS after − before, per connection.\n")
    print("| transport | server RSS per idle connection | pongs received | read buffers held |\n|---|---:|---:|---:|")
    for name, r in (("TCP", tcp), ("TLS 1.3 (P-256 certificate), lean records (the default)", tls),
                    ("TLS 1.3, OpenSSL's state kept (`--tls-lean no`)", tls_openssl)):
        print(f"| {name} | {r['rss_per_connection_bytes']:,} B | {r['pongs']:,} | {r['read_buffers']} |")
    print(f"\nKernel TLS (`SSL_OP_ENABLE_KTLS`, the `tls` upper-layer protocol): {ktls}.\n")
    print(json.dumps({"connections": n, "tcp": tcp, "tls": tls, "tls_openssl": tls_openssl, "kernel_tls": ktls},
                     separators=(",", ":")))
    ok = all(r["connections"] >= n and r["pongs"] >= n and r["read_buffers"] == 0 for r in (tcp, tls, tls_openssl))
    return 0 if ok else 1


def kernel_tls():
    """Whether this kernel offers kernel TLS: a connected TCP socket asked for the `tls` upper-layer
    protocol (what OpenSSL's SSL_OP_ENABLE_KTLS does first)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    c = socket.create_connection(listener.getsockname())
    try:
        c.setsockopt(socket.IPPROTO_TCP, 31, b"tls")  # TCP_ULP
        return "available"
    except OSError as e:
        return f"not available on this kernel ({os.uname().release}: TCP_ULP \"tls\" fails with {errno.errorcode.get(e.errno, e.errno)})"
    finally:
        c.close()
        listener.close()


if __name__ == "__main__":
    sys.exit(main())
