// The `lru` planner. Reactive, like TF2 LMS: when an allocation would
// exceed the budget, evict the least recently used tensors; fetch a tensor
// back when an op needs it.
// The plan has no entries: the simulator decides at every allocation
// (Note [Memory accounting] in policy/simulator.cpp).
#include "policy/planners/planners.h"

namespace cuswap::policy::planners {

namespace {

class LruPlanner final : public Planner {
 public:
  std::string_view name() const override { return "lru"; }
  std::string_view summary() const override {
    return "Reactive, like TF2 LMS: when an allocation would exceed the budget, evict the least "
           "recently used tensors; fetch a tensor back when an op needs it.";
  }
  Plan plan(const Workload& workload, const PlanRequest& request) const override {
    return new_plan(workload, request, name(), PlanMode::lru);
  }
};

}  // namespace

const Planner& lru_planner() {
  static const LruPlanner planner;
  return planner;
}

}  // namespace cuswap::policy::planners
