// heartwheel/completion_node.hpp — the contract between a wheel's driver and the asynchronous
// operations filed in it.
//
// A completion_node is a timer node that stands for a pending asynchronous operation with a handler
// (asio_wheel::async_wait, net's tracked requests, or an operation of your own). When the driver
// stops — asio_wheel::shutdown() or its destruction — with such a node still filed, it calls
// complete(errc::wheel_stopped) on it instead of handing it back, so that no handler, and no
// coroutine frame suspended on one, is leaked. complete() runs at most once per filing, on the
// driver's thread; it may delete the node. Any other node is handed back by shutdown() (or simply
// let go of at destruction) and never fires.
#ifndef HEARTWHEEL_COMPLETION_NODE_HPP
#define HEARTWHEEL_COMPLETION_NODE_HPP

#include <heartwheel/asio.hpp> // heartwheel::error_code: the flavour's error code
#include <heartwheel/timer_node.hpp>


namespace heartwheel {

class completion_node : public timer_node {
public:
    /// Completes the operation with `ec` (at most once; the node may delete itself).
    virtual void complete(error_code ec) = 0;
};

} // namespace heartwheel

#endif
