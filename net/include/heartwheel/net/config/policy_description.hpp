// heartwheel/net/config/policy_description.hpp — a liveness policy described once: its table name, and each
// field's name, kind, unit, accepted range, help text and, for a timeout that shrinks under overload,
// where its minimum lives and which close reason it decides.
//
// One description drives everything that used to list the fields by hand: validation (each field's
// range, then the policy's own rules between fields), the TOML loader (liveness_toml.hpp: one table
// per policy, one key per field, and `[overload] <field>_min` for each scalable timeout), the
// applications' flags (an option names the field it sets; its parsing, default and range come from
// here), overload scaling (which timeouts scale, and which close reasons are "closed while scaled")
// and the docs' table of knobs (knob_table(), compared with docs/liveness.md by a test).
//
// Invariants: a field is reached through a plain function pair (get/set as a double in the field's
// unit: milliseconds, seconds, a count, a number, bytes, 0/1, or a choice's index), so the generic
// code needs no knowledge of a policy's struct; every range is checked in the unit the field is
// stored in, exactly (a year of milliseconds is exact in a double). A scalable timeout's minimum is a
// member of its own policy (`reader_idle_min` beside `reader_idle`); its external name is
// `overload.<field>_min`, as the TOML table and the flags have always said it.
//
// Adding a policy: one header that defines the struct, its description() and its slot (the member
// name liveness_config gives it), plus one line in liveness_config's list. timeout_policy.hpp is
// the worked example; docs/design.md has the recipe.
#ifndef HEARTWHEEL_NET_POLICY_DESCRIPTION_HPP
#define HEARTWHEEL_NET_POLICY_DESCRIPTION_HPP

#include <heartwheel/net/connection/close_reason.hpp>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace heartwheel::net {

struct scaled_min;

/// How a field is written and stored.
enum class field_kind : std::uint8_t {
    duration, ///< milliseconds; text with a unit ("500ms", "30s"), a bare integer is milliseconds
    seconds,  ///< whole seconds; text with a unit, a bare integer is seconds
    count,    ///< a whole number
    number,   ///< a real number (fractions, factors)
    size,     ///< bytes; text with a unit ("8MiB", "64kB"), a bare integer is bytes
    flag,     ///< true or false
    choice,   ///< one of a list of names
};

/// One field of a policy.
struct field_description {
    const char* name = "";  ///< the struct member and TOML key: "reader_idle"
    field_kind kind = field_kind::duration;
    double lo = 0, hi = 0;  ///< accepted range, in the field's unit (choice: an index)
    const char* help = "";  ///< one line: what it does (the docs' table, a flag's default help)
    bool zero_is_off = false;          ///< 0 disables what the field enables
    const char* range_note = nullptr;  ///< the docs' range text where other fields bound it
    const char* const* choices = nullptr;
    std::size_t choice_count = 0;
    double (*get)(const void* policy) = nullptr;
    void (*set)(void* policy, double value) = nullptr;
    /// Whether the range applies (a field that only matters when another enables it); null: always.
    bool (*applies)(const void* policy) = nullptr;
    /// A timeout that shrinks under overload: its minimum, a member of the same policy.
    scaled_min* (*min_at)(void* policy) = nullptr;
    /// A field whose default is derived from others: a value above `hi` means "not set", and this
    /// says what it then is (the docs' default column; e.g. "half of output.soft_limit").
    const char* unset_note = nullptr;
    close_reason reason{}; ///< for a scalable timeout: the reason a close at it carries

    bool scalable() const noexcept { return min_at != nullptr; }
    const scaled_min& min_of(const void* policy) const noexcept { return *min_at(const_cast<void*>(policy)); }
};

/// A policy's fields: a view of a static array (a description allocates nothing).
class field_list {
public:
    field_list() = default;
    template <std::size_t N>
    field_list(const field_description (&fields)[N]) noexcept : first_(fields), count_(N) {}
    const field_description* begin() const noexcept { return first_; }
    const field_description* end() const noexcept { return first_ + count_; }
    std::size_t size() const noexcept { return count_; }
    const field_description& operator[](std::size_t i) const noexcept { return first_[i]; }

private:
    const field_description* first_ = nullptr;
    std::size_t count_ = 0;
};

/// One policy: its table and fields, and the rules between its fields.
struct policy_description {
    const char* table = ""; ///< TOML table, field prefix, liveness_config's member: "idle"
    field_list fields;
    /// Rules between fields, after each field's own range (throws config_error); may be null.
    void (*check)(const void* policy, const std::string& prefix) = nullptr;
    /// After loading: derive fields not given from those given (bit i: fields[i] was given).
    void (*derive)(void* policy, std::uint64_t given) = nullptr;

    const field_description* find(std::string_view name) const noexcept;
    std::size_t index_of(std::string_view name) const noexcept; ///< fields.size() when absent
};

/// Checks every field's range, the scalable minimums, then the policy's rules; throws config_error
/// naming "prefix.field". Allocates only to report an error.
void validate_policy(const policy_description& d, const void* policy, const std::string& prefix);
/// One field's own range (not the rules between fields); config_error naming `who` (a flag, a key).
void check_field(const field_description& f, const void* policy, const std::string& who);

/// A field's value as text, in its own form ("30s", "1500ms", "256KiB", "0.1", "inbound", "true").
std::string field_text(const field_description& f, double value);
/// The accepted range as text ("0..31536000000 ms", "1..1000", "inbound or outbound").
std::string range_text(const field_description& f);

/// Parses a field's value from text. `bare_integers` = whether a number without a unit is read in
/// the field's unit (command lines; TOML integers) or refused (TOML strings must carry their unit).
/// The result is in the field's unit; its range is validate_policy's to judge, except for a count,
/// whose range is checked here (a number that does not fit the field names the range that matters).
double parse_field(const field_description& f, std::string_view text, const std::string& who, bool bare_integers);

namespace detail {

template <class> struct member_of;
template <class C, class T> struct member_of<T C::*> {
    using policy = C;
    using type = T;
};

template <class T> constexpr field_kind kind_of() {
    if constexpr (std::is_same_v<T, std::chrono::milliseconds>) return field_kind::duration;
    else if constexpr (std::is_same_v<T, std::chrono::seconds>) return field_kind::seconds;
    else if constexpr (std::is_same_v<T, bool>) return field_kind::flag;
    else if constexpr (std::is_enum_v<T>) return field_kind::choice;
    else if constexpr (std::is_floating_point_v<T>) return field_kind::number;
    else if constexpr (std::is_same_v<T, std::size_t>) return field_kind::size;
    else return field_kind::count;
}

} // namespace detail

/// The description of the member `M` (a pointer to a policy's field): kind and access from its type.
/// A std::size_t member is a size in bytes; other integers are counts.
template <auto M>
field_description field(const char* name, double lo, double hi, const char* help) {
    using P = typename detail::member_of<decltype(M)>::policy;
    using T = typename detail::member_of<decltype(M)>::type;
    field_description f;
    f.name = name;
    f.kind = detail::kind_of<T>();
    f.lo = lo;
    f.hi = hi;
    f.help = help;
    f.get = [](const void* p) -> double {
        const T& v = static_cast<const P*>(p)->*M;
        if constexpr (std::is_same_v<T, std::chrono::milliseconds> || std::is_same_v<T, std::chrono::seconds>)
            return static_cast<double>(v.count());
        else return static_cast<double>(v);
    };
    f.set = [](void* p, double v) {
        T& out = static_cast<P*>(p)->*M;
        if constexpr (std::is_same_v<T, std::chrono::milliseconds> || std::is_same_v<T, std::chrono::seconds>)
            out = T(static_cast<typename T::rep>(std::llround(v)));
        else if constexpr (std::is_same_v<T, bool>) out = v != 0;
        else if constexpr (std::is_floating_point_v<T>) out = static_cast<T>(v);
        else if constexpr (std::is_enum_v<T>) out = static_cast<T>(static_cast<std::underlying_type_t<T>>(std::llround(v)));
        else out = static_cast<T>(std::llround(v));
    };
    return f;
}

/// A choice among `names` (the enum's values 0, 1, ...).
template <auto M, std::size_t N>
field_description choice(const char* name, const char* const (&names)[N], const char* help) {
    field_description f = field<M>(name, 0, static_cast<double>(N - 1), help);
    f.choices = names;
    f.choice_count = N;
    return f;
}

/// Marks `f` as a timeout that 0 disables.
inline field_description off_at_zero(field_description f) {
    f.zero_is_off = true;
    return f;
}

/// `f` with the docs' range text, where other fields bound it ("initial..1 year").
inline field_description noted(field_description f, const char* range_note) {
    f.range_note = range_note;
    return f;
}

/// `f` judged only when `applies(policy)` (a field that matters only when another enables it).
inline field_description only_when(field_description f, bool (*applies)(const void* policy)) {
    f.applies = applies;
    return f;
}

/// `f` derived from other fields until set: a value above its range means unset (`note` says what it
/// then is).
inline field_description derived_when_unset(field_description f, const char* note) {
    f.unset_note = note;
    return f;
}

/// Marks `f` as a timeout that shrinks under overload to the minimum `Min` (a scaled_min member of
/// the same policy); a close at it is `why`.
template <auto Min>
field_description scalable(field_description f, close_reason why) {
    using P = typename detail::member_of<decltype(Min)>::policy;
    f.min_at = [](void* p) -> scaled_min* { return &(static_cast<P*>(p)->*Min); };
    f.reason = why;
    return f;
}

/// The longest duration any field takes: a year, in milliseconds.
inline constexpr double year_ms = 365.0 * 24 * 3600 * 1000;

} // namespace heartwheel::net

#endif
