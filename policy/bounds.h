// Lower bounds on the iteration time of any plan for one workload, budget
// and link: what every planner is measured against (Note [Lower bounds] in
// policy/bounds.cpp). Both are the same for every planner and never above
// the simulated time of a plan that fits.
#pragma once

#include <cstdint>

#include "policy/sim_options.h"
#include "policy/workload.h"

namespace cuswap::policy {

struct Bounds {
  int64_t compute_ns = 0;    // the infinite-memory iteration
  int64_t time_only_ns = 0;  // max(compute, (peak - budget) / bandwidth)
  int64_t problem_ns = 0;    // Note [Lower bounds]; >= time_only_ns
  uint32_t op = 0;           // the op that sets problem_ns, where copies do
};

Bounds lower_bounds(const Workload& workload, const SimOptions& options);

}  // namespace cuswap::policy
