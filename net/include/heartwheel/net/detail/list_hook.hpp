// heartwheel/net/detail/list_hook.hpp — an intrusive, circular, doubly linked list (timeout_scale's
// queues, the teardown registry).
//
// Every list has a sentinel hook, so unlinking a node needs only the node itself (two stores), and a
// whole list moves to another in O(1). Invariants: a linked hook has next/prev != nullptr and
// next->prev == this; an unlinked hook has next == prev == nullptr; an empty list's sentinel points at
// itself.
#ifndef HEARTWHEEL_NET_DETAIL_LIST_HOOK_HPP
#define HEARTWHEEL_NET_DETAIL_LIST_HOOK_HPP

namespace heartwheel::net::detail {

struct list_hook {
    list_hook* next = nullptr;
    list_hook* prev = nullptr;

    bool linked() const noexcept { return next != nullptr; }

    void unlink() noexcept {
        next->prev = prev;
        prev->next = next;
        next = prev = nullptr;
    }
};

// A list is a sentinel hook that points at itself when empty.
struct list_head : list_hook {
    list_head() noexcept { next = prev = this; }
    list_head(const list_head&) = delete;
    list_head& operator=(const list_head&) = delete;

    bool empty() const noexcept { return next == this; }

    void push_back(list_hook& h) noexcept {
        h.prev = prev;
        h.next = this;
        prev->next = &h;
        prev = &h;
    }

    list_hook* front() const noexcept { return empty() ? nullptr : next; }

    // Moves every hook of `other` to the front of this list, keeping their order.
    void splice_front(list_head& other) noexcept {
        if (other.empty()) return;
        list_hook* first = other.next;
        list_hook* last = other.prev;
        last->next = next;
        next->prev = last;
        first->prev = this;
        next = first;
        other.next = other.prev = &other;
    }

    // Moves every hook of `other` to the back of this list, keeping their order.
    void splice_back(list_head& other) noexcept {
        if (other.empty()) return;
        list_hook* first = other.next;
        list_hook* last = other.prev;
        first->prev = prev;
        prev->next = first;
        last->next = this;
        prev = last;
        other.next = other.prev = &other;
    }
};

} // namespace heartwheel::net::detail

#endif
