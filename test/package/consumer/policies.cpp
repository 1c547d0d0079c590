// consumer_policies — heartwheel::policies alone: no Asio, no OpenSSL, no toml++. A gRPC-style
// backoff without jitter doubles up to its max, and a policy out of range is refused naming its field.
#include <heartwheel/net/policies/backoff.hpp>
#include <heartwheel/net/policies/policies.hpp>

#include <iostream>
#include <vector>

int main() {
    namespace net = heartwheel::net;
    net::backoff_policy p;
    p.initial = net::milliseconds(100);
    p.max = net::milliseconds(400);
    p.multiplier = 2.0;
    p.jitter = 0.0;
    net::backoff b(p);
    std::vector<long long> delays;
    for (int i = 0; i < 4; ++i) delays.push_back(b.next().count());
    if (delays != std::vector<long long>{100, 200, 400, 400}) return 1;
    net::heartbeat_policy h;
    h.interval = net::milliseconds(1000);
    h.misses = 0;
    try {
        h.validate();
        return 1;
    } catch (const net::config_error& e) {
        std::cout << "consumer_policies: backoff 100, 200, 400, 400 ms; refused: " << e.what() << '\n';
    }
}
