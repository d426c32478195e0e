// Step 1 of the cuswap planner (Note [cuswap planner] in
// policy/planners/cuswap.cpp): every time a tensor could be away, with small
// tensors that leave close together grouped into one copy each way. The
// other steps choose among these; none of them looks at a tensor again.
#pragma once

#include <cstdint>
#include <vector>

#include "policy/planner.h"
#include "policy/workload.h"

namespace cuswap::policy::planners {

struct Candidate {
  std::vector<uint32_t> tensors;
  std::vector<uint32_t> nexts;  // per tensor: the use it comes back for
  uint64_t bytes = 0;
  uint32_t after = 0;   // leaves when this op ends
  uint32_t next = 0;    // back for this op (the first of its tensors' next uses)
  bool wraps = false;   // back in the next iteration (Note [Wrap entries])
  int64_t idle_ns = 0;  // time away on the infinite-memory schedule
  // Note [Carried tensors]: `tensors` leave for the next iteration, where
  // they are `arriving` (the previous iteration's, byte for byte), back for
  // `arriving_nexts`.
  std::vector<uint32_t> arriving;
  std::vector<uint32_t> arriving_nexts;
  bool carries() const { return !arriving.empty(); }
  // Left for the next iteration with nothing from the previous one to pair
  // with: it leaves after its last use and is not needed again here.
  bool stays_out = false;
};

// The candidates of `workload` on the infinite-memory schedule `starts`;
// members of a group leave within `group_span` ops of the first.
std::vector<Candidate> candidates(const Workload& workload, const PlanRequest& request,
                                  const std::vector<int64_t>& starts, uint32_t group_span);

}  // namespace cuswap::policy::planners
