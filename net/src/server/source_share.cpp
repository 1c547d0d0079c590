// source_share.cpp — counts per source, the excess, and the list of sources over their share; see
// source_share.hpp.
#include <heartwheel/net/server/source_share.hpp>

namespace heartwheel::net {

source_share::member::~member() {
    if (source_ != nullptr) static_cast<element*>(source_)->second.table->unlink(*this);
}

source_share::~source_share() {
    for (auto& [key, e] : sources_) // members outliving the table hold no pointer into it
        for (member* m = e.oldest; m != nullptr;) {
            member* next = m->next_;
            m->prev_ = m->next_ = nullptr;
            m->source_ = nullptr;
            m = next;
        }
}

void source_share::set_over(entry& e, bool over) noexcept {
    if (e.over == over) return;
    e.over = over;
    if (over) {
        e.prev_over = nullptr;
        e.next_over = over_;
        if (over_) over_->prev_over = &e;
        over_ = &e;
    } else {
        (e.prev_over ? e.prev_over->next_over : over_) = e.next_over;
        if (e.next_over) e.next_over->prev_over = e.prev_over;
        e.prev_over = e.next_over = nullptr;
    }
}

void source_share::add(member& m, const asio::ip::address& source) {
    if (m.source_ != nullptr) static_cast<element*>(m.source_)->second.table->unlink(m); // from any table
    auto& node = *sources_.try_emplace(source).first; // node-based: the element stays where it is
    entry& e = node.second;
    e.table = this;
    m.source_ = &node;
    m.prev_ = e.newest;
    m.next_ = nullptr;
    (e.newest ? e.newest->next_ : e.oldest) = &m;
    e.newest = &m;
    if (++e.count > share_) {
        ++excess_;
        set_over(e, true);
    }
}

void source_share::remove(member& m) noexcept {
    if (m.source_ != nullptr && static_cast<element*>(m.source_)->second.table == this) unlink(m);
}

void source_share::unlink(member& m) noexcept {
    auto& counted = *static_cast<element*>(m.source_);
    entry& e = counted.second;
    (m.prev_ ? m.prev_->next_ : e.oldest) = m.next_;
    (m.next_ ? m.next_->prev_ : e.newest) = m.prev_;
    m.prev_ = m.next_ = nullptr;
    m.source_ = nullptr;
    if (e.count-- > share_) --excess_;
    if (e.count <= share_) set_over(e, false);
    if (e.count == 0) {
        const asio::ip::address key = counted.first; // a copy: not a reference into the node being erased
        sources_.erase(key);
    }
}

source_share::member* source_share::make_room(const asio::ip::address& source) {
    if (count(source) + 1 > share_) return nullptr; // the newcomer's own source is at its share
    entry* heaviest = nullptr;
    for (entry* e = over_; e != nullptr; e = e->next_over)
        if (heaviest == nullptr || e->count > heaviest->count) heaviest = e;
    if (heaviest == nullptr) return nullptr;
    member& victim = *heaviest->newest;
    unlink(victim);
    return &victim;
}

std::size_t source_share::count(const asio::ip::address& source) const {
    const auto it = sources_.find(source);
    return it == sources_.end() ? 0 : it->second.count;
}

} // namespace heartwheel::net
