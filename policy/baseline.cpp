// The infinite-memory schedule and the parked set (policy/baseline.h).
//
// Note [Untouched at start]
// A tensor resident at start that no op of the iteration touches (memory
// from before the trace that the source knows only as a byte count) is
// needed by nothing: in a run of many iterations it stays wherever it is.
// It keeps its place on the device while it fits beside the peak of what
// the iteration does touch; what does not fit stays on the host from
// iteration to iteration, so it starts there and costs no copy. The rule
// depends on the workload and the budget only, so every planner, the
// bounds and the simulator see the same parked set.
#include "policy/baseline.h"

#include <algorithm>
#include <cmath>

namespace cuswap::policy {

int64_t scaled_ns(int64_t duration_ns, double time_scale) {
  return std::llround(static_cast<double>(duration_ns) * time_scale);
}

std::vector<int64_t> infinite_memory_starts(const Workload& workload, double time_scale) {
  // starts[k] is when op k's turn on the engine comes, idle time before it
  // included (Note [Idle time]); starts.back() is the iteration's end.
  std::vector<int64_t> starts(workload.ops.size() + 1, 0);
  for (size_t k = 0; k < workload.ops.size(); ++k)
    starts[k + 1] = starts[k] + scaled_ns(workload.ops[k].idle_ns, time_scale) +
                    scaled_ns(workload.ops[k].duration_ns, time_scale);
  return starts;
}

std::vector<uint8_t> parked_at_start(const Workload& workload, uint64_t budget_bytes) {
  std::vector<uint8_t> untouched(workload.tensors.size(), 0);
  for (size_t x = 0; x < workload.tensors.size(); ++x)
    untouched[x] = workload.tensors[x].resident_at_start() && workload.tensors[x].uses.empty();
  const std::vector<uint64_t> touched = live_bytes_per_op(workload, untouched);
  uint64_t used = touched.empty() ? 0 : *std::max_element(touched.begin(), touched.end());
  std::vector<uint8_t> parked(workload.tensors.size(), 0);
  for (size_t x = 0; x < workload.tensors.size(); ++x) {
    if (!untouched[x]) continue;
    const uint64_t size = workload.tensors[x].size_bytes;
    if (used <= budget_bytes && size <= budget_bytes - used) {
      used += size;
    } else {
      parked[x] = 1;
    }
  }
  return parked;
}

}  // namespace cuswap::policy
