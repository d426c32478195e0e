// A plan keyed by the trace's identities, rewritten with the identities
// the shim sees when the replay runs it (Note [Replay runtime identities] in
// bench/replay/schedule.h): the replay knows its own schedule, so every
// resolved entry's tensor and ops are named as the shim will count them.
#pragma once

#include <string>
#include <vector>

#include "bench/replay/schedule.h"
#include "policy/plan.h"

namespace cuswap::bench {

// The tensor as the shim sees it in the steady-state iteration.
policy::TensorRef runtime_tensor(const policy::Workload& w, const Schedule& s, uint32_t tensor);
// The launch that stands for op `op`: its first (prefetch_at, next_use) or
// its last (evict_after).
policy::OpRef runtime_op(const Schedule& s, uint32_t op, bool last);

// `plan` with its resolved `entries` rewritten; entries on 0-byte tensors
// are dropped (they are never allocated). Header fields are kept; device
// and budget_bytes are set from the arguments.
policy::Plan translate_plan(const policy::Workload& w, const Schedule& s, const policy::Plan& plan,
                            const std::vector<policy::ResolvedEntry>& entries, int device,
                            uint64_t budget_bytes);

}  // namespace cuswap::bench
