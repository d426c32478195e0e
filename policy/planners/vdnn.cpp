// The `vdnn` planner: Rhu et al., "vDNN" (MICRO'16), the vDNN-conv policy.
// Every feature map that a convolution reads in the forward pass is
// offloaded after its last forward use, whatever the budget, and prefetched
// one layer ahead: when the op just before its backward use starts. A
// trace without convolutions offloads every forward feature map (vDNN-all).
#include <algorithm>

#include "policy/planners/common.h"
#include "policy/planners/planners.h"

namespace cuswap::policy::planners {

namespace {

class VdnnPlanner final : public Planner {
 public:
  std::string_view name() const override { return "vdnn"; }
  std::string_view summary() const override {
    return "vDNN (MICRO'16): offload every convolution input in the forward pass, prefetch one "
           "layer ahead";
  }

  Plan plan(const Workload& workload, const PlanRequest& request) const override {
    Plan plan = new_plan(workload, request, name());
    const uint32_t loss = loss_point(workload);
    const std::vector<Gap> gaps = forward_gaps(workload, loss);
    bool any_conv = false;
    for (uint32_t k = 0; k < loss; ++k)
      any_conv |= is_convolution(workload.ops[k]);
    uint32_t group = 0;
    for (const Gap& g : gaps) {
      const WorkTensor& t = workload.tensors[g.tensor];
      const bool conv_input = std::any_of(t.uses.begin(), t.uses.end(), [&](uint32_t u) {
        return u < loss && u != t.alloc_op && is_convolution(workload.ops[u]);
      });
      if (any_conv && !conv_input) continue;
      const uint32_t trigger = std::max(g.after + 1, g.next - 1);
      plan.entries.push_back(make_entry(workload, g.tensor, g.after, trigger, g.next, group++));
    }
    return plan;
  }
};

}  // namespace

const Planner& vdnn_planner() {
  static const VdnnPlanner planner;
  return planner;
}

}  // namespace cuswap::policy::planners
