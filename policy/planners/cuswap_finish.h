// Steps 9-14 of the cuswap planner (Note [cuswap planner] in
// policy/planners/cuswap.cpp): changes to a simulated plan, each kept only
// when the plan simulates faster with no copy for nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "policy/planner.h"

namespace cuswap::policy::planners {

// Whether `a` is better than `b`: it fits where `b` does not, or is faster.
bool faster(const SimResult& a, const SimResult& b);

// Step 9, from `plan` and its simulation `result` (updated with it).
Plan defer_crossings(const Workload& workload, const PlanRequest& request,
                     const std::vector<int64_t>& starts, Plan plan, SimResult& result);

// Steps 10-14, from `plan` and its simulation `result` (updated with it).
Plan finish_plan(const Workload& workload, const PlanRequest& request,
                 const std::vector<int64_t>& starts, Plan plan, SimResult& result);

}  // namespace cuswap::policy::planners
