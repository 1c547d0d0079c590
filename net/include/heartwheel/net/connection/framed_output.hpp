// heartwheel/net/connection/framed_output.hpp — a connection's output when a framing layer writes for itself
// (a Beast websocket::stream over the connection's stream: its frames, its queue, its close frame).
// The connection then has no byte queue and no send(): raw bytes under a framing layer would break
// its frames. What is left for the output is the goodbye: the framing layer writes it itself and says
// when it is out, and the close path waits for that, bounded by the linger, before the FIN.
//
//   using ws_conn = net::connection<Stream, net::connection_liveness, net::framed_output>;
//   void last_words(close_reason r) override {       // the framing layer's handler
//       conn->goodbye_in_flight();
//       ws.async_close(code_for(r), [conn](error_code) { conn->goodbye_written(); });
//   }
//
// It meets the output contract of byte_output.hpp (a base of the connection, reaching it by a cast).
// Invariants: a goodbye is in flight only between goodbye_in_flight(), called inside last_words, and
// goodbye_written() (or the linger's end); the socket is corked for the goodbye only when the layer
// says its FIN follows the goodbye's write (goodbye_in_flight_then_fin): a goodbye may wait for the
// peer (Beast's close handshake) before the FIN.
#ifndef HEARTWHEEL_NET_FRAMED_OUTPUT_HPP
#define HEARTWHEEL_NET_FRAMED_OUTPUT_HPP

#include <heartwheel/asio.hpp>
#include <heartwheel/net/connection/connection_context.hpp>

#include <cstddef>
#include <utility>

namespace heartwheel::net {

template <class Connection>
class framed_output {
public:
    /// Called inside last_words(): the framing layer is writing its goodbye (a close frame); the close
    /// waits for goodbye_written() — bounded by the linger — before the FIN and the linger's end.
    void goodbye_in_flight() noexcept {
        if (self().in_last_words_) goodbye_pending_ = true;
    }
    /// The same for a goodbye followed by the FIN as soon as it is written (goodbye_written() from its
    /// write's completion, waiting for nothing from the peer): on TCP its last partial segment waits
    /// in the kernel for the FIN, and the two leave as one segment (connection::hold_tail_for_fin).
    /// A goodbye that waits for the peer first (Beast's async_close) uses goodbye_in_flight().
    void goodbye_in_flight_then_fin() noexcept {
        if (!self().in_last_words_) return;
        goodbye_pending_ = true;
        self().hold_tail_for_fin();
    }
    /// A goodbye to a peer judged dead (is_peer_dead_reason), said at once, inside last_words(): on a
    /// plain TCP socket its bytes are handed to the socket without waiting — what the socket does not
    /// take is lost with the peer, which reads nothing more anyway — the FIN leaves with them in one
    /// segment, and the close goes on (the peer's end of stream is not waited for). The judgement
    /// that closed the connection says its goodbye itself, not a turn of the executor later behind
    /// every other handler ready then (a burst of deaths). False where it cannot be said so (TLS,
    /// another stream, a live peer, outside last_words): the layer writes it as usual.
    bool goodbye_now(asio::const_buffer bytes) {
        Connection& c = self();
        if (!c.goodbye_now_applies()) return false;
        c.hold_tail_for_fin();
        (void)c.write_goodbye_now(bytes); // a full window: lost with the peer
        goodbye_pending_ = true;
        goodbye_written(); // the FIN, then the close
        return true;
    }
    /// The framing layer's goodbye is out (or failed): the close goes on with the FIN, then the peer's
    /// end of stream or the linger's.
    void goodbye_written() {
        if (!std::exchange(goodbye_pending_, false)) return;
        self().half_close();
    }
    /// The framing layer keeps its own queue: none here.
    std::size_t queued() const noexcept { return 0; }

protected:
    explicit framed_output(const connection_options&) noexcept {}
    ~framed_output() = default;

    // --- the output contract (byte_output.hpp) -------------------------------------------------------
    void output_closing() noexcept {}
    void output_before_last_words() noexcept {}
    bool output_busy() const noexcept { return goodbye_pending_; }
    void output_flush() noexcept {}

private:
    Connection& self() noexcept { return static_cast<Connection&>(*this); }

    bool goodbye_pending_ = false;
};

} // namespace heartwheel::net

#endif
