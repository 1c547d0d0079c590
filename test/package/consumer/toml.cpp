// consumer_toml — heartwheel::toml: liveness tables read from TOML text and out of the application's
// own larger document (toml++, found through the package config), with a bad value refused naming
// the key and the accepted range.
#include <heartwheel/net/config/liveness_toml.hpp>

#include <iostream>
#include <stdexcept>
#include <string>

int main() {
    namespace net = heartwheel::net;
    const auto from_text = net::parse_liveness_config("[heartbeat]\ninterval = \"5ms\"\ntimeout = \"20ms\"\n");
    const toml::table doc = toml::parse("[app]\nname = \"kv\"\n[idle]\nreader_idle = \"30s\"\n");
    const auto from_doc = net::parse_liveness_config(doc, "app.toml", {"app"});
    if (from_text.heartbeat.interval.count() != 5 || from_doc.idle.reader_idle.count() != 30000) return 1;
    std::string refused;
    try {
        net::parse_liveness_config("[heartbeat]\ninterval = \"-5ms\"\n");
    } catch (const std::exception& e) {
        refused = e.what();
    }
    if (refused.find("heartbeat.interval") == std::string::npos) {
        std::cerr << "consumer_toml: a negative interval was not refused by name: '" << refused << "'\n";
        return 1;
    }
    std::cout << "consumer_toml: read [heartbeat] from text and [idle] from the application's document; refused: "
              << refused << '\n';
}
