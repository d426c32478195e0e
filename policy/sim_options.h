// What one simulation is asked: the budget, the link, the time scale and
// what to record (docs/simulator.md). A header of its own so that the
// bounds (policy/bounds.h), which take the same options, need not include
// the simulator that calls them.
#pragma once

#include <cstdint>

#include "policy/link.h"

namespace cuswap::policy {

struct SimOptions {
  uint64_t budget_bytes = UINT64_MAX;
  Link link;
  double time_scale = 1.0;       // op durations are multiplied by it
  bool record_timeline = false;  // fill SimResult's spans, copies, memory and residency
  bool bounds = false;           // fill lower_bound_ns and time_bound_ns (policy/bounds.h)
  // Note [Pinned small tensors]: tensors below this size never leave the
  // device (0: every tensor may move).
  uint64_t swap_min_bytes = 0;
  // Evictions land as their copies end instead of when room is wanted (Note
  // [Lazy landing]): the peak a plan itself leaves, with no budget.
  bool land_when_copied = false;
};

}  // namespace cuswap::policy
