// heartwheel/detail/wait_op.hpp — the completion_node behind asio_wheel::async_wait
// (heartwheel/completion_node.hpp: a driver that stops completes it with errc::wheel_stopped).
//
// One heap wait_op per wait holds the handler, a work guard on the handler's executor and the
// cancellation hook. It completes exactly once: by expiry, by a cancellation signal, or because the
// wheel refused or stopped; then it deletes itself and posts the handler to its executor, so a
// handler never runs inside the wheel's advance.
#ifndef HEARTWHEEL_DETAIL_WAIT_OP_HPP
#define HEARTWHEEL_DETAIL_WAIT_OP_HPP

#include <heartwheel/completion_node.hpp>

#include <heartwheel/asio.hpp>

#include <system_error>
#include <utility>

namespace heartwheel::detail {

class wait_op_base : public completion_node {
public:
    /// Hooks the handler's cancellation slot, if it has one, to cancel this wait.
    virtual void connect_cancellation() = 0;

protected:
    void on_expire() override { complete({}); }
};

template <class Handler>
class wait_op final : public wait_op_base {
public:
    template <class Executor>
    wait_op(Handler h, const Executor& fallback)
        : handler_(std::move(h)),
          work_(asio::make_work_guard(asio::get_associated_executor(handler_, fallback))) {}

    void connect_cancellation() override {
        auto slot = asio::get_associated_cancellation_slot(handler_);
        if (!slot.is_connected()) return;
        slot.assign([this](asio::cancellation_type type) {
            if (type == asio::cancellation_type::none) return;
            // The slot is left alone here: its handler is the code that is running.
            if (cancel()) finish(asio::error::operation_aborted);
        });
    }

    void complete(error_code ec) override {
        auto slot = asio::get_associated_cancellation_slot(handler_);
        if (slot.is_connected()) slot.clear();
        finish(ec);
    }

private:
    void finish(error_code ec) {
        auto handler = std::move(handler_);
        auto work = std::move(work_);
        delete this;
        auto ex = work.get_executor();
        asio::post(ex, [h = std::move(handler), ec]() mutable { std::move(h)(ec); });
    }

    Handler handler_;
    asio::executor_work_guard<asio::associated_executor_t<Handler, asio::any_io_executor>> work_;
};

} // namespace heartwheel::detail

#endif
