"""test_pool_model.py — echo_server's end-to-end liveness behaviour again in the thread-pool model:
one io_context run by N threads, a shard (strand + wheel) per thread (--io-threads). The same tests as
test_echo_server.py, chosen where threading matters — heartbeats, idle, deadlines, TLS handshakes,
goodbyes on shutdown, accounting under a stall, threads sharing load — with every server they start
given --io-threads instead of --threads (harness.threading_flags)."""
import os
import sys

os.environ["HEARTWHEEL_ECHO_MODEL"] = "pool"  # read by harness at import
sys.path.insert(0, os.path.dirname(__file__))
import side_by_side  # noqa: E402
import test_echo_server  # noqa: E402

CHOSEN = [
    "TcpTransport", "TlsTransport",
    "Limits.test_max_connections_busy", "Limits.test_max_age", "Limits.test_writer_and_all_idle",
    "BadPeerInput.test_partial_line_at_close_and_abrupt_resets_do_not_hurt",
    "Lifecycle.test_sigterm_says_bye_shutdown_and_exits_0", "Lifecycle.test_metrics_endpoint",
    "Lifecycle.test_threads_share_the_load",
    "HeartbeatPolicy", "HostilePeers.test_trickled_line_proves_liveness",
    "ProcessStall", "Accounting.test_identity_holds_in_every_scrape_while_goodbyes_linger",
]

if __name__ == "__main__":
    side_by_side.main(__file__, CHOSEN, test_echo_server)
