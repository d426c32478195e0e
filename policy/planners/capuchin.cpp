// The `capuchin` planner: Peng et al., "Capuchin" (ASPLOS'20), swap only.
// The first iteration is observed passively (here: the trace). Tensors are
// ranked by free time, the time between the end of the copy out and the
// start of the copy back, and chosen from the largest until the bytes
// taken out cover the peak's excess over the budget. Each is evicted after
// its use and fetched back at an in-trigger access computed from the copy
// time; then one simulated iteration gives feedback: a prefetch that made
// its op wait moves its trigger earlier by the wait, as the runtime would
// in the next iteration.
#include <algorithm>

#include "policy/planners/common.h"
#include "policy/planners/planners.h"

namespace cuswap::policy::planners {

namespace {

class CapuchinPlanner final : public Planner {
 public:
  std::string_view name() const override { return "capuchin"; }
  std::string_view summary() const override {
    return "Capuchin (ASPLOS'20): largest free time first, evict after use, in-trigger moved "
           "earlier on feedback from a simulated iteration";
  }

  Plan plan(const Workload& workload, const PlanRequest& request) const override {
    Plan plan = new_plan(workload, request, name());
    const std::vector<uint64_t> live =
        live_bytes_per_op(workload, parked_at_start(workload, request.budget_bytes));
    const uint64_t peak = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
    if (peak <= request.budget_bytes) return plan;
    const std::vector<int64_t> starts = infinite_memory_starts(workload, request.time_scale);
    std::vector<Gap> gaps = forward_gaps(workload, loss_point(workload));
    const auto free_time = [&](const Gap& g) {
      return starts[g.next] - starts[g.after + 1] -
             2 * request.link.copy_ns(workload.tensors[g.tensor].size_bytes);
    };
    std::stable_sort(gaps.begin(), gaps.end(),
                     [&](const Gap& a, const Gap& b) { return free_time(a) > free_time(b); });
    uint64_t taken = 0;
    uint32_t group = 0;
    std::vector<uint32_t> chosen;  // the entries' tensors
    for (const Gap& g : gaps) {
      if (taken >= peak - request.budget_bytes) break;
      const uint64_t size = workload.tensors[g.tensor].size_bytes;
      const uint32_t trigger = latest_trigger(starts, g.after, g.next, request.link.copy_ns(size));
      plan.entries.push_back(make_entry(workload, g.tensor, g.after, trigger, g.next, group++));
      chosen.push_back(g.tensor);
      taken += size;
    }
    // Feedback from the first iteration.
    const SimResult first = simulate_plan(workload, plan, request);
    for (size_t i = 0; i < plan.entries.size(); ++i) {
      if (first.entry_late_ns[i] <= 0) continue;
      PlanEntry& e = plan.entries[i];
      const uint32_t trigger = op_starting_by(starts, e.evict_after.index, e.next_use.index,
                                              starts[e.prefetch_at.index] - first.entry_late_ns[i]);
      e = make_entry(workload, chosen[i], e.evict_after.index, trigger, e.next_use.index, e.group);
    }
    return plan;
  }
};

}  // namespace

const Planner& capuchin_planner() {
  static const CapuchinPlanner planner;
  return planner;
}

}  // namespace cuswap::policy::planners
