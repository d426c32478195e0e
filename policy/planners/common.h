// What several planners share: the forward pass's feature maps and their
// gap to the backward pass, and trigger search on the infinite-memory
// schedule (Note [The loss point] in policy/workload.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "policy/workload.h"

namespace cuswap::policy::planners {

// A tensor's absence that a plan may create: out after op `after`, needed
// back by op `next`.
struct Gap {
  uint32_t tensor = 0;
  uint32_t after = 0;
  uint32_t next = 0;
};

// Feature maps: tensors allocated in the forward pass (before `loss`) and
// used again at or after it; the gap runs from the last forward use to the
// first use at or after the loss point.
std::vector<Gap> forward_gaps(const Workload& workload, uint32_t loss);

// The latest op j in (after, next] such that a copy of `copy_ns` started
// when j starts ends by the time `next` starts; after+1 if none does.
uint32_t latest_trigger(const std::vector<int64_t>& starts_ns, uint32_t after, uint32_t next,
                        int64_t copy_ns);

// The latest op j in [first, last] that starts at or before `time_ns`;
// `first` if none does.
uint32_t op_starting_in(const std::vector<int64_t>& starts_ns, uint32_t first, uint32_t last,
                        int64_t time_ns);

// The latest op j in (after, next] that starts at or before `time_ns`.
uint32_t op_starting_by(const std::vector<int64_t>& starts_ns, uint32_t after, uint32_t next,
                        int64_t time_ns);

// Whether an op looks like a convolution (by type, or name where untyped).
bool is_convolution(const WorkOp& op);

}  // namespace cuswap::policy::planners
