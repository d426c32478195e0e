// The `ondemand` planner. Reactive, like unified memory without hints:
// evict the oldest-fetched tensors on pressure; fault a tensor in, 2 MiB at
// a time, when an op touches it; no prefetch.
// The plan has no entries: the simulator decides at every allocation
// (Note [Memory accounting] in policy/simulator.cpp).
#include "policy/planners/planners.h"

namespace cuswap::policy::planners {

namespace {

class OndemandPlanner final : public Planner {
 public:
  std::string_view name() const override { return "ondemand"; }
  std::string_view summary() const override {
    return "Reactive, like unified memory without hints: evict the oldest-fetched tensors on "
           "pressure; fault a tensor in, 2 MiB at a time, when an op touches it; no prefetch.";
  }
  Plan plan(const Workload& workload, const PlanRequest& request) const override {
    return new_plan(workload, request, name(), PlanMode::ondemand);
  }
};

}  // namespace

const Planner& ondemand_planner() {
  static const OndemandPlanner planner;
  return planner;
}

}  // namespace cuswap::policy::planners
