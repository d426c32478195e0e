// Counts the calling thread's allocations through the global operator new,
// for tests that prove a path allocates nothing. Linking
// tests/support/allocation_counter.cpp replaces every form of operator new
// and delete in the test executable (forwarding to malloc and free).
#pragma once

#include <cstdint>

namespace cuswap::testing {

// Allocations made by this thread so far (per thread, so gtest's own threads
// and other tests' workers do not count).
uint64_t allocations_on_this_thread() noexcept;

}  // namespace cuswap::testing
