// The `cuswap` planner (the default): cost-model driven.
//
// Note [cuswap planner]
// 1. Candidates are every gap between two uses of a tensor, weights and
//    optimizer state included. Small tensors (a copy shorter than a few
//    link latencies) that leave after the same op and come back within a
//    few ops of each other form one group and move as one copy each way,
//    so a recurrent step's many small activations pay one latency.
// 2. The benefit of a candidate is bytes x the time it can stay away once
//    both copies are paid; it is hideable when its idle time covers the
//    copy out and the copy back.
// 3. Hideable candidates are placed greedily, largest benefit first, on the
//    two copy lanes of the infinite-memory schedule (one lane when the
//    directions contend): the copy out as early as the lane allows after
//    the last use, the copy back as late as the lane allows before the next
//    use. A candidate is taken only if the ops it leaves free still exceed
//    the budget (an excess tree per op), so nothing moves that the budget
//    does not need.
// 4. Only when hideable candidates cannot remove the excess are copies
//    that cannot be hidden taken (largest bytes x idle time first): when the
//    link is the bottleneck, what can be hidden moves first. Such a copy
//    makes the next op wait for it, and comes back as late as it can.
// 5. Plan, simulate, adjust: a prefetch that made its op wait in the
//    simulation moves its trigger earlier by the wait; the best of a few
//    rounds (fits first, then iteration time) is kept.
// 6. The choice is made on the infinite-memory timeline, while copies and
//    stalls shift the real one; so steps 3-5 run again for budgets a few
//    percent below the real one, and the best simulated plan is kept.
// 7. When that plan still stalls, the seed's selection (forward feature
//    maps, longest-lived first), re-timed by step 5, is simulated too and
//    kept if faster: on fine-grained traces (PyTorch's aten ops) copies that
//    cannot be hidden are sometimes better spent on its fewer, larger maps.
#include <algorithm>
#include <cmath>

#include "policy/planners/common.h"
#include "policy/planners/planners.h"
#include "policy/planners/schedule_state.h"

namespace cuswap::policy::planners {

namespace {

constexpr int64_t kSmallCopyLatencies = 4;  // below this many latencies of transfer: small
constexpr uint32_t kGroupSpanOps = 8;       // next uses this close share one prefetch
constexpr int kFeedbackRounds = 4;
constexpr double kMargins[] = {0, 0.02, 0.05, 0.1, 0.2};  // of the budget, tried in turn

struct Candidate {
  std::vector<uint32_t> tensors;
  uint64_t bytes = 0;
  uint32_t after = 0;
  uint32_t next = 0;
  int64_t idle_ns = 0;
};

std::vector<Candidate> candidates(const Workload& workload, const PlanRequest& request,
                                  const std::vector<int64_t>& starts) {
  std::vector<Gap> gaps = all_gaps(workload);
  const auto small = [&](const Gap& g) {
    const uint64_t size = workload.tensors[g.tensor].size_bytes;
    return request.link.copy_ns(size) - request.link.latency_ns <
           kSmallCopyLatencies * request.link.latency_ns;
  };
  std::vector<Candidate> out;
  std::vector<Gap> smalls;
  for (const Gap& g : gaps) {
    if (small(g)) {
      smalls.push_back(g);
      continue;
    }
    out.push_back({{g.tensor}, workload.tensors[g.tensor].size_bytes, g.after, g.next, 0});
  }
  std::sort(smalls.begin(), smalls.end(), [](const Gap& a, const Gap& b) {
    return a.after != b.after ? a.after < b.after
                              : (a.next != b.next ? a.next < b.next : a.tensor < b.tensor);
  });
  for (size_t i = 0; i < smalls.size();) {
    Candidate c{{}, 0, smalls[i].after, smalls[i].next, 0};
    size_t j = i;
    // A tensor appears once per group: its gaps never share an `after`.
    while (j < smalls.size() && smalls[j].after == c.after &&
           smalls[j].next <= c.next + kGroupSpanOps) {
      c.tensors.push_back(smalls[j].tensor);
      c.bytes += workload.tensors[smalls[j].tensor].size_bytes;
      ++j;
    }
    out.push_back(std::move(c));
    i = j;
  }
  for (Candidate& c : out)
    c.idle_ns = starts[c.next] - starts[c.after + 1];
  return out;
}

class CuswapPlanner final : public Planner {
 public:
  std::string_view name() const override { return "cuswap"; }
  std::string_view summary() const override {
    return "cuswap's own (default): bytes x idle time against copy time, copy-link contention, "
           "small tensors grouped, unhideable copies last, refined on simulation";
  }

  Plan plan(const Workload& workload, const PlanRequest& request) const override {
    const std::vector<uint64_t> live = live_bytes_per_op(workload);
    const uint64_t peak = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
    if (peak <= request.budget_bytes) return new_plan(workload, request, name());
    const std::vector<int64_t> starts = infinite_memory_starts(workload, request.time_scale);
    const std::vector<Candidate> all = candidates(workload, request, starts);
    // Step 6: the schedule is planned on the infinite-memory timeline, the
    // simulation runs on the real one; planning for a slightly smaller
    // budget leaves room for the difference. The best margin wins.
    Plan best;
    SimResult best_result;
    for (size_t i = 0; i < std::size(kMargins); ++i) {
      const auto target =
          static_cast<uint64_t>(static_cast<double>(request.budget_bytes) * (1.0 - kMargins[i]));
      SimResult result;
      Plan plan = plan_for(workload, request, starts, live, all, target, result);
      if (i == 0 || better(result, best_result)) {
        best = std::move(plan);
        best_result = result;
      }
      if (best_result.fits && best_result.iteration_ns == best_result.infinite_memory_ns) break;
    }
    if (best_result.fits && best_result.iteration_ns == best_result.infinite_memory_ns) return best;
    // Step 7: the seed's selection as one more starting point.
    SimResult seed_result;
    Plan seed =
        retime(workload, request, starts, seed_planner().plan(workload, request), seed_result);
    if (better(seed_result, best_result)) {
      seed.planner = name();
      return seed;
    }
    return best;
  }

 private:
  struct Chosen {
    uint32_t candidate;
    uint32_t trigger;
  };

  static bool better(const SimResult& a, const SimResult& b) {
    if (a.fits != b.fits) return a.fits;
    return a.iteration_ns < b.iteration_ns;
  }

  // Steps 3-5 for one target budget; `result` is the chosen plan's simulation.
  Plan plan_for(const Workload& workload, const PlanRequest& request,
                const std::vector<int64_t>& starts, const std::vector<uint64_t>& live,
                const std::vector<Candidate>& all, uint64_t target, SimResult& result) const {
    std::vector<int64_t> excess(live.size());
    for (size_t k = 0; k < live.size(); ++k)
      excess[k] = static_cast<int64_t>(live[k]) - static_cast<int64_t>(target);
    ExcessTree tree(excess);
    Lane out_lane, in_lane_own;
    Lane& in_lane = request.link.duplex_contention ? out_lane : in_lane_own;

    const auto copy_ns = [&](const Candidate& c) { return request.link.copy_ns(c.bytes); };
    const auto benefit = [&](const Candidate& c) {
      return static_cast<double>(c.bytes) * static_cast<double>(c.idle_ns - 2 * copy_ns(c));
    };
    std::vector<uint32_t> order(all.size());
    for (uint32_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return benefit(all[a]) > benefit(all[b]); });

    std::vector<Chosen> chosen;
    std::vector<uint32_t> unhidden;
    // Ops wholly inside [from_ns, to_ns): first op starting at or after
    // from_ns, up to the op before the trigger.
    const auto first_op_from = [&](int64_t from_ns) {
      return static_cast<uint32_t>(std::lower_bound(starts.begin(), starts.end() - 1, from_ns) -
                                   starts.begin());
    };
    for (uint32_t i : order) {
      if (tree.max_all() <= 0) break;
      const Candidate& c = all[i];
      const int64_t copy = copy_ns(c);
      if (c.idle_ns < 2 * copy) {
        unhidden.push_back(i);
        continue;
      }
      const std::optional<int64_t> out_start = out_lane.earliest(starts[c.after + 1], copy);
      if (!out_start) continue;
      const int64_t out_end = *out_start + copy;
      const std::optional<int64_t> in_start = in_lane.latest(starts[c.next], copy, out_end);
      if (!in_start) {
        unhidden.push_back(i);
        continue;
      }
      const uint32_t trigger = op_starting_by(starts, c.after, c.next, *in_start);
      const uint32_t first = first_op_from(out_end);
      if (first >= trigger || tree.max(first, trigger - 1) <= 0) {
        // Hidden, it frees no op over the budget; the op right after its
        // last use may still need it gone, at the price of a wait.
        unhidden.push_back(i);
        continue;
      }
      out_lane.reserve(*out_start, out_end);
      in_lane.reserve(*in_start, *in_start + copy);
      tree.add(first, trigger - 1, -static_cast<int64_t>(c.bytes));
      chosen.push_back({i, trigger});
    }
    // Copies that cannot be hidden, only for what is left over the budget.
    std::stable_sort(unhidden.begin(), unhidden.end(), [&](uint32_t a, uint32_t b) {
      return static_cast<double>(all[a].bytes) * static_cast<double>(all[a].idle_ns) >
             static_cast<double>(all[b].bytes) * static_cast<double>(all[b].idle_ns);
    });
    for (uint32_t i : unhidden) {
      if (tree.max_all() <= 0) break;
      const Candidate& c = all[i];
      const int64_t copy = copy_ns(c);
      // The op after the last use waits for the copy out, and the copy back
      // starts as late as it can while the tensor is still away for that op.
      const uint32_t first = c.after + 1;
      const uint32_t trigger =
          std::max(latest_trigger(starts, c.after, c.next, copy), std::min(c.next, c.after + 2));
      if (first >= trigger || tree.max(first, trigger - 1) <= 0) continue;
      tree.add(first, trigger - 1, -static_cast<int64_t>(c.bytes));
      chosen.push_back({i, trigger});
    }
    return refine(workload, request, starts, all, std::move(chosen), result);
  }

  Plan build(const Workload& workload, const PlanRequest& request,
             const std::vector<Candidate>& all, const std::vector<Chosen>& chosen) const {
    Plan plan = new_plan(workload, request, name());
    for (uint32_t g = 0; g < chosen.size(); ++g) {
      const Candidate& c = all[chosen[g].candidate];
      for (uint32_t t : c.tensors)
        plan.entries.push_back(make_entry(workload, t, c.after, chosen[g].trigger, c.next, g));
    }
    return plan;
  }

  // Step 5 for a plan made elsewhere: late prefetches move earlier.
  Plan retime(const Workload& workload, const PlanRequest& request,
              const std::vector<int64_t>& starts, Plan plan, SimResult& result) const {
    result = simulate_plan(workload, plan, request);
    for (int round = 0; round < kFeedbackRounds; ++round) {
      Plan next = plan;
      bool moved = false;
      for (size_t i = 0; i < next.entries.size(); ++i) {
        if (result.entry_late_ns[i] <= 0) continue;
        PlanEntry& e = next.entries[i];
        const uint32_t trigger =
            op_starting_by(starts, e.evict_after.index, e.next_use.index,
                           starts[e.prefetch_at.index] - result.entry_late_ns[i]);
        if (trigger == e.prefetch_at.index) continue;
        e.prefetch_at = OpRef{workload.ops[trigger].name, workload.ops[trigger].ordinal, trigger};
        moved = true;
      }
      if (!moved) break;
      const SimResult r = simulate_plan(workload, next, request);
      if (!better(r, result)) break;
      plan = std::move(next);
      result = r;
    }
    return plan;
  }

  // Note [cuswap planner], step 5.
  Plan refine(const Workload& workload, const PlanRequest& request,
              const std::vector<int64_t>& starts, const std::vector<Candidate>& all,
              std::vector<Chosen> chosen, SimResult& best_result) const {
    Plan best = build(workload, request, all, chosen);
    best_result = simulate_plan(workload, best, request);
    SimResult last = best_result;
    for (int round = 0; round < kFeedbackRounds; ++round) {
      // Entries are laid out group by group, in `chosen` order.
      std::vector<int64_t> late(chosen.size(), 0);
      size_t entry = 0;
      for (size_t g = 0; g < chosen.size(); ++g)
        for (size_t n = 0; n < all[chosen[g].candidate].tensors.size(); ++n, ++entry)
          late[g] = std::max(late[g], last.entry_late_ns[entry]);
      bool moved = false;
      for (size_t g = 0; g < chosen.size(); ++g) {
        if (late[g] <= 0) continue;
        const Candidate& c = all[chosen[g].candidate];
        const uint32_t trigger =
            op_starting_by(starts, c.after, c.next, starts[chosen[g].trigger] - late[g]);
        moved |= trigger != chosen[g].trigger;
        chosen[g].trigger = trigger;
      }
      if (!moved) break;
      Plan plan = build(workload, request, all, chosen);
      last = simulate_plan(workload, plan, request);
      if (better(last, best_result)) {
        best = std::move(plan);
        best_result = last;
      }
    }
    return best;
  }
};

}  // namespace

const Planner& cuswap_planner() {
  static const CuswapPlanner planner;
  return planner;
}

}  // namespace cuswap::policy::planners
