// heartwheel/net/detail/counted_ref.hpp — one word that shares an immutable object made once per thread
// and config (a liveness's settings, an output's limits) among the connections made from it.
//
// Invariants: T carries its own count (`mutable std::atomic<std::size_t> refs`), so a reference is a
// pointer and no control block; the count is atomic because a connection may be destroyed on another
// thread than the one that made it; the last reference deletes the object.
#ifndef HEARTWHEEL_NET_DETAIL_COUNTED_REF_HPP
#define HEARTWHEEL_NET_DETAIL_COUNTED_REF_HPP

#include <atomic>
#include <cstddef>
#include <utility>

namespace heartwheel::net::detail {

template <class T>
class counted_ref {
public:
    counted_ref() noexcept = default;
    explicit counted_ref(const T* s) noexcept : s_(s) {
        if (s_) s_->refs.fetch_add(1, std::memory_order_relaxed);
    }
    counted_ref(const counted_ref& o) noexcept : counted_ref(o.s_) {}
    counted_ref(counted_ref&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
    counted_ref& operator=(counted_ref o) noexcept {
        std::swap(s_, o.s_);
        return *this;
    }
    ~counted_ref() {
        if (s_ && s_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete s_;
    }
    const T& operator*() const noexcept { return *s_; }
    const T* operator->() const noexcept { return s_; }
    const T* get() const noexcept { return s_; }

private:
    const T* s_ = nullptr;
};

/// The few objects a thread made last, the most recent first (a server has one config or a few):
/// find() returns one that `same` accepts and puts it first; put() keeps a new one first.
template <class T, std::size_t N = 4>
class recent_refs {
public:
    template <class Same>
    counted_ref<T> find(Same&& same) noexcept {
        for (std::size_t i = 0; i < N && at_[i].get(); ++i) {
            if (!same(*at_[i])) continue;
            counted_ref<T> found = at_[i];
            put_first(found, i);
            return found;
        }
        return {};
    }
    void put(const counted_ref<T>& made) noexcept { put_first(made, N - 1); }

private:
    // Puts `s` first, moving the ones before position `i` down one (the last one goes at N - 1).
    void put_first(counted_ref<T> s, std::size_t i) noexcept {
        for (; i > 0; --i) at_[i] = std::move(at_[i - 1]);
        at_[0] = std::move(s);
    }
    counted_ref<T> at_[N];
};

} // namespace heartwheel::net::detail

#endif
