// What a workload and a budget settle before any plan: when each op would
// start with nothing to wait for (the infinite-memory schedule), and which
// tensors resident at start stay parked on the host (Note [Untouched at
// start] in policy/baseline.cpp). The planners, the bounds and the
// simulator all start from these, so they sit below all three.
#pragma once

#include <cstdint>
#include <vector>

#include "policy/workload.h"

namespace cuswap::policy {

// The op durations scaled, as the simulator runs them.
int64_t scaled_ns(int64_t duration_ns, double time_scale);
// Each op's start on the compute engine when nothing waits (prefix sums).
std::vector<int64_t> infinite_memory_starts(const Workload& workload, double time_scale);

// Note [Untouched at start]: which tensors resident at start stay on the
// host for the whole iteration under `budget_bytes` (1 = parked).
std::vector<uint8_t> parked_at_start(const Workload& workload, uint64_t budget_bytes);

}  // namespace cuswap::policy
