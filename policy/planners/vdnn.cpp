// The `vdnn` planner: Rhu et al., "vDNN" (MICRO'16), the vDNN-conv policy.
// Every feature map that a convolution reads in the forward pass is
// offloaded after its last forward use, whatever the budget, and prefetched
// one layer ahead: when the op just before its backward use starts. A
// trace without convolutions offloads every forward feature map (vDNN-all).
//
// Which maps a convolution reads: the trace's accesses say so where they
// list consumers (TF1, .cst). TF2 and PyTorch captures record a tensor's
// producer and the op before its free only, so there a convolution's input
// is what vDNN's layer-by-layer view makes it: the output of the layer
// before, the forward feature map made by the op that ran just before the
// convolution (or by the closest earlier op that made one).
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
    for (uint32_t k = 0; k <= loss && k < workload.ops.size(); ++k)
      any_conv |= is_convolution(workload.ops[k]);
    std::vector<uint8_t> conv_input(workload.tensors.size(), 0);
    bool by_access = false;
    for (const Gap& g : gaps) {
      const WorkTensor& t = workload.tensors[g.tensor];
      conv_input[g.tensor] = std::any_of(t.uses.begin(), t.uses.end(), [&](uint32_t u) {
        return u < loss && u != t.alloc_op && is_convolution(workload.ops[u]);
      });
      by_access |= conv_input[g.tensor] != 0;
    }
    if (any_conv && !by_access) {
      // The layer before each forward convolution: the latest op before it
      // that made a forward feature map, whose maps are then the input.
      // The op at the loss point is the last forward layer.
      const uint32_t last_forward =
          std::min<uint32_t>(loss, static_cast<uint32_t>(workload.ops.size()) - 1);
      std::vector<std::vector<uint32_t>> made_by(last_forward + 1);
      for (const Gap& g : gaps)
        made_by[workload.tensors[g.tensor].alloc_op].push_back(g.tensor);
      uint32_t last = UINT32_MAX;  // the latest op so far that made a forward map
      for (uint32_t k = 0; k <= last_forward; ++k) {
        if (is_convolution(workload.ops[k]) && last != UINT32_MAX)
          for (uint32_t t : made_by[last])
            conv_input[t] = 1;
        if (!made_by[k].empty()) last = k;
      }
    }
    uint32_t group = 0;
    for (const Gap& g : gaps) {
      if (any_conv && !conv_input[g.tensor]) continue;
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
