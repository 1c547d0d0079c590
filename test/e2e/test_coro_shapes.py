"""test_coro_shapes.py — the coroutine server shape (test/shapes/coro_echo_server.cpp) end to end, built
for standalone Asio and for Boost.Asio (coro_echo_server_boost) and run in both threading models (a
single io_context thread, and --io-threads 2: one io_context on two threads, a strand per shard).

Each combination: lines are echoed over TCP and TLS; a peer that answers pings stays; a silent peer is
pinged and closed heartbeat-timeout with its goodbye; a peer that sends nothing but PONGs is closed
reader-idle; on SIGTERM the server's final line counts every close exactly once by reason.""" 
import os
import time
import unittest

from harness import BUILD, CoroServer, Line, make_cert, tempdir

SHAPES = {"standalone": os.path.join(BUILD, "test", "coro_echo_server"),
          "boost": os.path.join(BUILD, "test", "coro_echo_server_boost")}


class CoroShapes(unittest.TestCase):
    def setUp(self):
        self.tmp = tempdir()
        self.cert, self.key = make_cert(self.tmp.name)
        self.config = os.path.join(self.tmp.name, "liveness.toml")
        # Dead after (misses - 1) * interval + timeout = 300 + 300 ms of silence; reader idle at 1.5 s.
        with open(self.config, "w") as f:
            f.write('[idle]\nreader_idle = "1500ms"\n[heartbeat]\ninterval = "300ms"\ntimeout = "300ms"\nmisses = 2\n')

    def tearDown(self):
        self.tmp.cleanup()

    def check(self, flavour, threads):
        binary = SHAPES[flavour]
        if not os.path.exists(binary):
            self.skipTest(f"{binary} not built (HEARTWHEEL_BOOST_ASIO=OFF)")
        with CoroServer(binary, self.config, io_threads=threads) as srv:
            talkers = [Line(srv.port, answer_pings=True) for _ in range(4)]  # spread over the shards
            for i, t in enumerate(talkers):
                t.send(f"hello {i}\n")
                self.assertEqual(t.wait_for("hello")[0], f"hello {i}")
            for i, t in enumerate(talkers):  # pinged meanwhile: answered as they read, still served
                t.send(f"again {i}\n")
                self.assertEqual(t.wait_for("again")[0], f"again {i}")
                t.close()
            silent = Line(srv.port)
            began = time.monotonic()
            self.assertTrue(silent.wait_for("PING")[0].startswith("PING "))
            bye = silent.wait_for("BYE", timeout=5)[0]
            self.assertEqual(bye, "BYE heartbeat-timeout")
            self.assertLess(time.monotonic() - began, 4.0)
            pongs_only = Line(srv.port, answer_pings=True)  # alive, but says nothing: reader idle
            self.assertEqual(pongs_only.wait_for("BYE", timeout=6)[0], "BYE reader-idle")
            self.assertGreater(pongs_only.pings, 2)
            time.sleep(0.3)
            code, out, err = srv.stop()
        self.assertEqual(code, 0, err)
        final = out.strip().splitlines()[-1]
        self.assertIn("heartbeat-timeout:1", final)
        self.assertIn("reader-idle:1", final)
        self.assertIn("peer-closed:4", final)

        with CoroServer(binary, self.config, (self.cert, self.key), io_threads=threads) as srv:
            peer = Line(srv.port, tls_ca=self.cert, answer_pings=True)
            peer.send("over tls\n")
            self.assertEqual(peer.wait_for("over")[0], "over tls")
            silent = Line(srv.port, tls_ca=self.cert)
            self.assertEqual(silent.wait_for("BYE", timeout=5)[0], "BYE heartbeat-timeout")

    def test_standalone_single_thread(self):
        self.check("standalone", 0)

    def test_standalone_thread_pool(self):
        self.check("standalone", 2)

    def test_boost_single_thread(self):
        self.check("boost", 0)

    def test_boost_thread_pool(self):
        self.check("boost", 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
