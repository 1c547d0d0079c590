// heartwheel/net/detail/byte_array.hpp — a growable heap array of bytes in 16 bytes: a pointer and
// 32-bit size and capacity, nothing inline.
//
// Why not std::string: every idle connection holds the line framer's buffer and the write queue's
// front chunk, both empty nearly always; a std::string is 32 bytes (its inline room for 15
// characters is the half that an empty one wastes). Here an empty array is 16 bytes and holds no
// memory; the first byte appended allocates.
// Invariants: data() is null exactly when capacity() is 0; size() <= capacity() < 4 GiB; the bytes
// stay put until an append grows the array, erase_front() or release(). Callers check that a size
// stays below 4 GiB before appending (std::length_error otherwise, from append). Move-only.
#ifndef HEARTWHEEL_NET_DETAIL_BYTE_ARRAY_HPP
#define HEARTWHEEL_NET_DETAIL_BYTE_ARRAY_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace heartwheel::net::detail {

class byte_array {
public:
    static constexpr std::size_t max_size = std::numeric_limits<std::uint32_t>::max();

    byte_array() noexcept = default;
    byte_array(byte_array&& o) noexcept { swap(o); }
    byte_array& operator=(byte_array&& o) noexcept {
        byte_array(std::move(o)).swap(*this);
        return *this;
    }
    ~byte_array() { ::operator delete(data_); }

    void swap(byte_array& o) noexcept {
        std::swap(data_, o.data_);
        std::swap(size_, o.size_);
        std::swap(cap_, o.cap_);
    }

    const char* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    /// Heap bytes held.
    std::size_t capacity() const noexcept { return cap_; }
    bool empty() const noexcept { return size_ == 0; }
    std::string_view view() const noexcept { return {data_, size_}; }

    /// Room for at least n bytes in all (one allocation for a message of several parts).
    void reserve(std::size_t n) {
        if (n > cap_) grow_to(n);
    }
    void append(const char* p, std::size_t n) {
        if (n == 0) return;
        if (n > max_size - size_) throw std::length_error("byte_array: 4 GiB or more");
        const std::size_t need = std::size_t{size_} + n;
        if (need > cap_) grow_to(std::max({need, std::min(std::size_t{cap_} * 2, max_size), std::size_t{32}}));
        std::memcpy(data_ + size_, p, n);
        size_ = static_cast<std::uint32_t>(need);
    }
    /// Drops the first n bytes (n <= size()), keeping the capacity.
    void erase_front(std::size_t n) noexcept {
        std::memmove(data_, data_ + n, size_ - n);
        size_ -= static_cast<std::uint32_t>(n);
    }
    /// Empty, keeping the capacity.
    void clear() noexcept { size_ = 0; }
    /// Empty, and the memory given back.
    void release() noexcept { byte_array().swap(*this); }

private:
    void grow_to(std::size_t cap) {
        // The scalar operator new, as an object's: a program's (or a test's) replacement sees it.
        char* bigger = static_cast<char*>(::operator new(cap));
        if (size_ > 0) std::memcpy(bigger, data_, size_);
        ::operator delete(data_);
        data_ = bigger;
        cap_ = static_cast<std::uint32_t>(cap);
    }

    char* data_ = nullptr;
    std::uint32_t size_ = 0, cap_ = 0;
};

} // namespace heartwheel::net::detail

#endif
