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

std::vector<Gap> all_gaps(const Workload& workload) {
  std::vector<Gap> gaps;
  for (uint32_t t = 0; t < workload.tensors.size(); ++t) {
    const std::vector<uint32_t>& uses = workload.tensors[t].uses;
    for (size_t i = 1; i < uses.size(); ++i)
      if (uses[i] > uses[i - 1] + 1) gaps.push_back({t, uses[i - 1], uses[i]});
  }
  return gaps;
}

uint32_t op_starting_by(const std::vector<int64_t>& starts_ns, uint32_t after, uint32_t next,
                        int64_t time_ns) {
  // starts_ns is non-decreasing: the last j in (after, next] with start <= time.
  const auto begin = starts_ns.begin() + after + 1;
  const auto end = starts_ns.begin() + next + 1;
  const auto it = std::upper_bound(begin, end, time_ns);
  if (it == begin) return after + 1;
  return static_cast<uint32_t>(it - starts_ns.begin()) - 1;
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
