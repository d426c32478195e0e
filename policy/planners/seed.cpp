// The `seed` planner: Meng et al., "Training Deeper Models by GPU Memory
// Optimization on TensorFlow" (NIPS'17 ML Systems workshop).
//
// Which tensors: the forward pass's feature maps (Note [The loss point]),
// walked in reverse topological order, which for a trace is reverse
// producer order, taking the longest-lived first (most slack to overlap a
// copy), until the simulated peak fits the budget. The shortest prefix of
// that order which fits is found by bisection on the simulated peak.
//
// When: evict after the last forward use; swap in "as late as possible
// until the data transfer cannot be overlapped": the latest op whose start,
// on the critical path of the infinite-memory schedule, leaves the copy
// time (alone on the link: the paper models no contention) before the
// backward use.
#include <algorithm>

#include "policy/planners/common.h"
#include "policy/planners/planners.h"

namespace cuswap::policy::planners {

namespace {

class SeedPlanner final : public Planner {
 public:
  std::string_view name() const override { return "seed"; }
  std::string_view summary() const override {
    return "Meng et al. 2017: forward feature maps, longest-lived first in reverse topological "
           "order, swap-in as late as the copy can still be hidden";
  }

  Plan plan(const Workload& workload, const PlanRequest& request) const override {
    const std::vector<int64_t> starts = infinite_memory_starts(workload, request.time_scale);
    std::vector<Gap> gaps = forward_gaps(workload, loss_point(workload));
    const auto lifetime = [&](const Gap& g) { return starts[g.next] - starts[g.after + 1]; };
    std::stable_sort(gaps.begin(), gaps.end(), [&](const Gap& a, const Gap& b) {
      const int64_t la = lifetime(a), lb = lifetime(b);
      if (la != lb) return la > lb;
      return workload.tensors[a.tensor].alloc_op > workload.tensors[b.tensor].alloc_op;
    });
    const auto build = [&](size_t count) {
      Plan plan = new_plan(workload, request, name());
      for (size_t i = 0; i < count; ++i) {
        const Gap& g = gaps[i];
        const int64_t copy_ns = request.link.copy_ns(workload.tensors[g.tensor].size_bytes);
        const uint32_t trigger = latest_trigger(starts, g.after, g.next, copy_ns);
        plan.entries.push_back(
            make_entry(workload, g.tensor, g.after, trigger, g.next, static_cast<uint32_t>(i)));
      }
      return plan;
    };
    // The peak the plan itself leaves, without the simulator's own
    // evictions under pressure, each tensor gone once its copy out ends:
    // what the paper's search measures. Without a budget nothing is parked (Note [Untouched at start]), so what the
    // budget parks is taken off.
    SimOptions unbounded = sim_options(request);
    unbounded.budget_bytes = UINT64_MAX;
    unbounded.land_when_copied = true;
    const std::vector<uint8_t> parked = parked_at_start(workload, request.budget_bytes);
    uint64_t parked_bytes = 0;
    for (size_t x = 0; x < parked.size(); ++x)
      if (parked[x]) parked_bytes += workload.tensors[x].size_bytes;
    const auto fits = [&](size_t count) {
      const Plan plan = build(count);
      std::vector<ResolvedEntry> entries;
      std::string error;
      if (!resolve(plan, workload, entries, error)) entries.clear();  // they resolve
      return simulate(workload, plan.mode, entries, unbounded).peak_bytes - parked_bytes <=
             request.budget_bytes;
    };
    if (fits(0)) return build(0);
    size_t low = 0, high = gaps.size();   // fits(low) is false
    if (!fits(high)) return build(high);  // nothing fits: swap them all
    while (high - low > 1) {
      const size_t mid = low + (high - low) / 2;
      (fits(mid) ? high : low) = mid;
    }
    return build(high);
  }
};

}  // namespace

const Planner& seed_planner() {
  static const SeedPlanner planner;
  return planner;
}

}  // namespace cuswap::policy::planners
