// liveness_recorder.hpp — a liveness_handler for tests: records the closes a connection_liveness
// decides (and, through `also`, whatever else a test wants to note at that moment), its pings (as
// its ping_writer: hwtest::recorded(live, recorder) names it) and its idle events; request
// completions default to the given executor.
#ifndef HWTEST_LIVENESS_RECORDER_HPP
#define HWTEST_LIVENESS_RECORDER_HPP

#include <heartwheel/net/policies/connection_liveness.hpp>

#include <functional>
#include <utility>
#include <vector>

namespace hwtest {

class liveness_recorder final : public heartwheel::net::liveness_handler, public heartwheel::net::ping_writer {
public:
    explicit liveness_recorder(asio::any_io_executor ex) : ex_(std::move(ex)) {}

    std::vector<heartwheel::net::close_reason> closes;
    std::vector<heartwheel::net::idle_event> idle_events;
    int pings = 0;
    std::function<void(heartwheel::net::close_reason)> also; ///< runs after a close is recorded
    bool input = false; ///< what input_waiting() answers: the peer's bytes wait unread
    int input_asked = 0;

    void on_policy_close(heartwheel::net::close_reason why) override {
        closes.push_back(why);
        if (also) also(why);
    }
    void send_ping() override { ++pings; }
    void on_idle(heartwheel::net::idle_event e) override { idle_events.push_back(e); }
    asio::any_io_executor completion_executor() override { return ex_; }
    bool input_waiting() override {
        ++input_asked;
        return input;
    }

private:
    asio::any_io_executor ex_;
};

} // namespace hwtest

#endif
