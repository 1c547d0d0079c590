// heartwheel/net/detail/slot_allocator.hpp — one pending operation placed in memory its owner holds.
//
// The idea: what an idle connection keeps pending is one Asio operation (a wait for readiness), which
// Asio would otherwise allocate on its own — from the thread's recycling cache, which hands out
// whatever block was freed last (an accept's or a handshake's, larger than the wait). An object that
// knows it has at most one such operation at a time keeps memory sized for it and hands this
// allocator to the operation's handler: the operation then adds no block of its own. One that does
// not fit, or comes while the memory is taken, gets a heap block of its size.
//
// The owner offers `slot()` (the memory, aligned for a pointer), `slot_size` (its bytes; 0: none)
// and `slot_taken`. Invariant: `slot_taken` is set by the allocation and cleared by the
// deallocation; Asio frees an operation's memory before it runs its handler, so a handler that
// owns the memory's owner keeps it alive past that deallocation.
#ifndef HEARTWHEEL_NET_DETAIL_SLOT_ALLOCATOR_HPP
#define HEARTWHEEL_NET_DETAIL_SLOT_ALLOCATOR_HPP

#include <cstddef>
#include <memory>
#include <type_traits>

namespace heartwheel::net::detail {

template <class T, class Owner>
class slot_allocator {
public:
    using value_type = T;
    template <class U>
    struct rebind {
        using other = slot_allocator<U, Owner>;
    };

    explicit slot_allocator(Owner* o) noexcept : o_(o) {}
    template <class U>
    slot_allocator(const slot_allocator<U, Owner>& a) noexcept : o_(a.owner()) {}

    T* allocate(std::size_t n) {
        if constexpr (fits) {
            if (n == 1 && !o_->slot_taken) {
                o_->slot_taken = true;
                return reinterpret_cast<T*>(o_->slot());
            }
        }
        return std::allocator<T>().allocate(n);
    }
    void deallocate(T* p, std::size_t n) {
        if constexpr (fits) {
            if (static_cast<void*>(p) == o_->slot()) {
                o_->slot_taken = false;
                return;
            }
        }
        std::allocator<T>().deallocate(p, n);
    }

    Owner* owner() const noexcept { return o_; }
    friend bool operator==(const slot_allocator& a, const slot_allocator& b) noexcept { return a.o_ == b.o_; }
    friend bool operator!=(const slot_allocator& a, const slot_allocator& b) noexcept { return a.o_ != b.o_; }

private:
    static constexpr bool fits_slot() noexcept {
        if constexpr (std::is_void_v<T>)
            return false;
        else
            return sizeof(T) <= Owner::slot_size && alignof(T) <= alignof(void*);
    }
    static constexpr bool fits = fits_slot();
    Owner* o_;
};

} // namespace heartwheel::net::detail

#endif
