// Shared planner helpers (planners/common.h).
#include "policy/planners/common.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace cuswap::policy::planners {

std::vector<Gap> forward_gaps(const Workload& workload, uint32_t loss) {
  std::vector<Gap> gaps;
  for (uint32_t t = 0; t < workload.tensors.size(); ++t) {
    const WorkTensor& tensor = workload.tensors[t];
    if (tensor.resident_at_start() || tensor.alloc_op >= loss) continue;
    const auto first_late = std::lower_bound(tensor.uses.begin(), tensor.uses.end(), loss);
    if (first_late == tensor.uses.begin() || first_late == tensor.uses.end()) continue;
    const uint32_t after = *(first_late - 1);
    const uint32_t next = *first_late;
    if (next > after + 1) gaps.push_back({t, after, next});
  }
  return gaps;
}

uint32_t op_starting_in(const std::vector<int64_t>& starts_ns, uint32_t first, uint32_t last,
                        int64_t time_ns) {
  // starts_ns is non-decreasing: the last j in [first, last] with start <= time.
  const auto begin = starts_ns.begin() + first;
  const auto end = starts_ns.begin() + last + 1;
  const auto it = std::upper_bound(begin, end, time_ns);
  if (it == begin) return first;
  return static_cast<uint32_t>(it - starts_ns.begin()) - 1;
}

uint32_t op_starting_by(const std::vector<int64_t>& starts_ns, uint32_t after, uint32_t next,
                        int64_t time_ns) {
  return op_starting_in(starts_ns, after + 1, next, time_ns);
}

uint32_t latest_trigger(const std::vector<int64_t>& starts_ns, uint32_t after, uint32_t next,
                        int64_t copy_ns) {
  return op_starting_by(starts_ns, after, next, starts_ns[next] - copy_ns);
}

bool is_convolution(const WorkOp& op) {
  std::string text = op.type.empty() ? op.name : op.type;
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text.find("conv") != std::string::npos;
}

}  // namespace cuswap::policy::planners
