// heartwheel/net/server/source_share.hpp — who pays for overload: connections one source holds beyond its
// share, not the quiet peers of everyone else.
//
// Scaled timeouts (timeout_scale) shed idle connections under pressure. Against one source that
// fills a server with *busy* connections that is the wrong victim: its connections are never idle,
// so the scaled timeouts close the quiet healthy peers of other sources instead (an attack pass: 900
// connections sending a line every 0.5 s got 100 quiet clients closed in 1-2 s, none of their own).
// Here every connection is counted under its source address; what a source holds beyond `share` is
// its *excess*. The application uses it twice:
//  - pressure: the excess does not count towards the load that scales timeouts (pressure =
//    (connections - excess) / limit), so one source filling the server does not shrink anyone's;
//  - admission at the limit: a newcomer whose source is within its share displaces the *newest*
//    connection of the source furthest over its share (make_room()): a full server keeps taking
//    peers from light sources, and the heavy source loses what it gained last.
// What remains (docs/reliability.md): many sources, each within its share, are not told apart from
// many healthy peers — the share is per address, so a botnet or an IPv6 prefix is the lever left.
//
// A plain data structure on one thread (one per thread; an application with several splits the
// share). Memory: an entry per source with a connection (~100 bytes); the members are intrusive and
// small (three pointers, no vtable), so a server can count every connection by default: the
// application's connection object derives from `member`, and make_room() hands back the one to close.
// Cost: add/remove O(1); make_room() walks the sources over their share, at most connections / share
// of them. Invariant: excess() == the sum over sources of max(0, count - share); a member is linked
// iff added and not removed or displaced since.
#ifndef HEARTWHEEL_NET_SOURCE_SHARE_HPP
#define HEARTWHEEL_NET_SOURCE_SHARE_HPP

#include <heartwheel/asio.hpp>

#include <cstddef>
#include <unordered_map>

namespace heartwheel::net {

class source_share {
public:
    /// One connection, counted under its source: the application's connection object derives from it.
    class member {
    public:
        bool counted() const noexcept { return source_ != nullptr; }

    protected:
        member() = default;
        member(const member&) = delete;
        member& operator=(const member&) = delete;
        ~member(); // removes itself if still counted

    private:
        friend class source_share;
        member* prev_ = nullptr;
        member* next_ = nullptr;
        void* source_ = nullptr; // the table's element (its address and its entry, which names the table)
    };

    /// `share`: connections a source may hold before the rest is excess (at least 1).
    explicit source_share(std::size_t share) : share_(share == 0 ? 1 : share) {}
    source_share(const source_share&) = delete;
    source_share& operator=(const source_share&) = delete;
    ~source_share();

    /// Counts `m` under `source` (its newest).
    void add(member& m, const asio::ip::address& source);
    /// Stops counting `m`. Idempotent.
    void remove(member& m) noexcept;
    /// At the limit, for a newcomer from `source`: when that source is within its share (it would
    /// hold at most `share` with the newcomer) and another is over its share, stops counting the
    /// newest connection of the source furthest over and returns it — the caller closes it;
    /// otherwise nullptr (refuse the newcomer).
    [[nodiscard]] member* make_room(const asio::ip::address& source);

    std::size_t excess() const noexcept { return excess_; }
    std::size_t share() const noexcept { return share_; }
    std::size_t sources() const noexcept { return sources_.size(); }
    /// Connections counted under `source`.
    std::size_t count(const asio::ip::address& source) const;

private:
    struct entry {
        source_share* table = nullptr;
        std::size_t count = 0;
        member* oldest = nullptr;
        member* newest = nullptr;
        entry* prev_over = nullptr; // the list of sources over their share
        entry* next_over = nullptr;
        bool over = false;
    };
    using element = std::unordered_map<asio::ip::address, entry>::value_type;

    void unlink(member& m) noexcept;
    void set_over(entry& e, bool over) noexcept;

    std::size_t share_;
    std::size_t excess_ = 0;
    std::unordered_map<asio::ip::address, entry> sources_;
    entry* over_ = nullptr; // sources over their share
};

} // namespace heartwheel::net

#endif
