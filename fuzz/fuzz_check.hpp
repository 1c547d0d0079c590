// fuzz_check.hpp — a check that stops the fuzzer with a message (and so a saved crash input) when an
// invariant fails; used by every target in fuzz/.
#ifndef HEARTWHEEL_FUZZ_CHECK_HPP
#define HEARTWHEEL_FUZZ_CHECK_HPP

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, what)                                                                       \
    do {                                                                                             \
        if (!(cond)) {                                                                               \
            std::fprintf(stderr, "%s:%d: invariant failed: %s (%s)\n", __FILE__, __LINE__, #cond, what); \
            std::abort();                                                                            \
        }                                                                                            \
    } while (0)

#endif
