// The `cuswap` planner (the default): cost-model driven.
//
// Note [cuswap planner]
// 1. Candidates (policy/planners/cuswap_candidates.h) are every time a
//    tensor is away between two of its uses, and, for weights and
//    optimizer state (resident at start, live at the end), the time from
//    their last use to their first use in the next iteration (Note [Wrap
//    entries] in policy/plan.h), and for state that is a new tensor each
//    iteration, the time from the last use of the one left for the next
//    iteration to the first use of the one the previous iteration left
//    (Note [Carried tensors]); what is left for the next iteration with
//    nothing from the previous one to pair with leaves after its last use
//    and is not needed again in this one. Small tensors (a copy shorter
//    than a few link latencies) that leave within a few ops of each other
//    form one group while the group's time away still covers its two
//    copies: it leaves after its last member's last use, comes back for
//    its first member's next use, and moves as one copy each way, so many
//    small tensors pay one latency.
// 2. The benefit of a candidate is bytes x the time it can stay away once
//    both copies are paid; it is hideable when its time away covers the
//    copy out and the copy back.
// 3. Hideable candidates are placed greedily (steps 3-5 are in
//    policy/planners/cuswap_selection.h), largest benefit first, on the
//    two copy lanes of the infinite-memory schedule (one lane when the
//    directions contend): the copy out as early as the lane allows after
//    the last use, the copy back as late as the lane allows before the next
//    use. A candidate is taken only if the ops it leaves free still exceed
//    the budget (an excess tree per op), so nothing moves that the budget
//    does not need.
// 4. Only when hideable candidates cannot remove the excess are copies
//    that cannot be hidden taken: when the link is the bottleneck, what can
//    be hidden moves first. Two ways, both tried (step 7): largest bytes x
//    time away first, each copy making the next op wait for it and coming
//    back as late as it can; or least wait per byte of the excess removed
//    first, each away for just the ops over the budget in its window, with
//    or without the lanes' other copies in the way (Note [Least unhidden
//    time] in policy/planners/cuswap_selection.cpp).
// 5. The greedy takes the largest first, and what it takes later often
//    covers the ops an earlier choice was taken for (a tensor away across
//    the whole iteration, then tensors that must be away at an op it cannot
//    leave: it is used there). So each choice, least benefit first, is
//    dropped when every op it leaves free stays within the budget without
//    it: fewer bytes cross the link, and the copies that stay have it to
//    themselves.
// 6. Plan, simulate, adjust: a prefetch that made its op wait in the
//    simulation moves its trigger earlier by the wait, and an entry whose
//    tensor was needed back before it landed (a copy out for nothing,
//    Notes [Cancelled copies] and [Lazy landing] in policy/simulator.cpp)
//    is fetched later, once that copy is done, or dropped, whichever
//    simulates faster; rounds go on while they change the plan and until
//    no stall can be removed that way, and the plan that is kept has no
//    copy for nothing.
// 7. The choice is made on the infinite-memory timeline, while copies and
//    stalls shift the real one; so steps 3-6 run again for budgets a few
//    percent below the real one, each with step 4's three ways, and the
//    best simulated plan is kept.
// 8. When that plan still stalls, the selections of the seed, Capuchin and
//    vDNN planners, put through step 6 and with only their copies for
//    nothing dropped, are simulated too and the fastest plan kept: on
//    fine-grained traces (PyTorch's aten ops) copies that cannot be hidden
//    are sometimes better spent on fewer, larger maps, and on long
//    sequences (NMT at T = 400) many tensors that hide beat a few large
//    ones that do not.
// 9. (Steps 9-14 are in policy/planners/cuswap_finish.h.) The op that
//    waits longest is usually one that needs many tensors back at once
//    while the device is full (where a trace gives only each tensor's
//    producer and free, what is freed together is last used together).
//    Every prefetch started before it for a later op takes link time and
//    memory from it, so the kept plan's prefetches that cross such an op
//    start right after it instead, op by op, longest wait first, while
//    that simulates faster. It runs from the best plan whose step 4 went by
//    bytes x time away too, where that is another plan, and the faster
//    result is kept: a plan that starts faster can end slower here (the
//    1-layer LM at 50% on pcie3).
// 10. Copies back run one after another on their lane, so a prefetch that
//    waits at the end of such a run cannot land sooner by starting sooner
//    alone (step 6): it queues behind the others. So for the prefetch that
//    waited longest, every prefetch started no later than it and still
//    wanted after its start moves earlier too, by its wait (or a half, one
//    and a half or three times it), kept when the plan simulates faster,
//    and again from the new plan's waits; never to start before an op that
//    waited and that it did not cross before (step 9 keeps those clear).
// 11. A prefetch whose trigger comes after its lane fell idle leaves the
//    lane idle until then, and every copy queued behind it lands that much
//    later. So where the copy-in lane sat idle before a planned prefetch,
//    longest idle first, the prefetch's group is triggered by the op
//    running when the lane fell idle (no earlier than its copy out, and
//    never before an op that waited, as in step 10), kept when the plan
//    simulates faster. ResNet-50 V100 at 50% on pcie3, whose backward pass
//    waits on its copies back, idled 2.5 ms before a pair of prefetches:
//    258.6 -> 256.1 ms (1.058x -> 1.047x the lower bound).
// 12. Where ops wait for copies back, a prefetch started before such an op
//    for a use after it holds the lane and the memory while the op waits
//    (step 9 moves all of them past one op at a time). So each group, the
//    one wanted back last first, starts right after the first op that
//    waited in its window instead, kept when the plan simulates faster.
//    Steps 11 and 12 run once steps 10, 13 and 14 gain nothing, and when
//    they gain those run again, so no plan is slower than without them.
//    The transformer snapshot at 50% on pcie3: 71.2 -> 70.8 ms (1.059x ->
//    1.053x). What is left there is the choice made for its first peak:
//    the 366 MiB away then are wanted back soon after it, and even copied
//    in order of need they stall 20.1 ms; the bound's bytes are those
//    wanted back last.
// 13. Each group, largest first, is dropped when the plan still fits and
//    simulates faster without it: the choice of steps 3-5 was made on the
//    infinite-memory timeline, and margins (step 7) take more than the
//    real one needs.
// 14. Copies out run one after another too, and an op waiting for room
//    waits for a whole copy: with the largest copies last, an op that
//    needs only part of the last one waits for all of it. So, smallest
//    first, a group's copy out moves after the last larger group that
//    leaves before it is needed back, kept when that simulates faster.
//    Steps 10, 13 and 14 run again while a round makes the plan faster.
//    ResNet-50 V100 on pcie3, whose forward pass waits for its copies out
//    and so starts the backward pass's copies back late: at 75% 145.3 ->
//    135.3 ms (1.096x -> 1.020x the lower bound), at 50% 263.5 -> 258.6 ms
//    (1.077x -> 1.058x); the transformer snapshot at 50% on pcie3: 73.9 ->
//    71.4 ms (1.099x -> 1.063x).
#include <algorithm>
#include <map>
#include <optional>

#include "policy/planners/common.h"
#include "policy/planners/cuswap_candidates.h"
#include "policy/planners/cuswap_finish.h"
#include "policy/planners/cuswap_selection.h"
#include "policy/planners/planners.h"

namespace cuswap::policy::planners {

namespace {

// Members of a group leave within this many ops of the first: tried in turn
// (one op: only what leaves after the same op).
constexpr uint32_t kGroupSpans[] = {8, 0};
constexpr int kFeedbackRounds = 4;
// Step 4's ways (Note [Least unhidden time] in policy/planners/cuswap_selection.cpp).
enum class Unhidden : uint8_t { bytes_x_time, least_wait_on_lanes, least_wait };

constexpr double kMargins[] = {0, 0.02, 0.05, 0.1, 0.2};  // of the budget, tried in turn

// Step 6's reading of one simulation, per group: its largest wait, the
// earliest next use of its entries, and how much too early it was wanted
// back while a copy out ran.
struct Feedback {
  std::map<uint32_t, int64_t> late, early;
  std::map<uint32_t, uint32_t> first_use;
  bool wasted = false;  // some entry's copy out was for nothing
};

Feedback feedback(const Plan& plan, const SimResult& result) {
  Feedback f;
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    const PlanEntry& e = plan.entries[i];
    f.late[e.group] = std::max(f.late[e.group], result.entry_late_ns[i]);
    if (e.returns) {
      const auto it = f.first_use.try_emplace(e.group, e.next_use.index).first;
      it->second = std::min(it->second, e.next_use.index);
    }
    if (result.entry_cancelled[i] != 0) {
      f.wasted = true;
      f.early[e.group] = std::max(f.early[e.group], result.entry_early_ns[i]);
    }
  }
  return f;
}

// Two ways past a copy for nothing: drop the entry, or (with `delay`)
// fetch its group later, once the copy out is done (when that is still
// before its next use). With `may_move`, waits move a group's trigger
// earlier. `changed`: whether the plan returned differs.
Plan revise(const Workload& workload, const std::vector<int64_t>& starts, const Plan& plan,
            const SimResult& result, const Feedback& f, bool may_move, bool delay, bool& changed) {
  Plan next = plan;
  next.entries.clear();
  changed = false;
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    PlanEntry e = plan.entries[i];
    const bool too_early = f.early.count(e.group) != 0;
    uint32_t trigger = e.prefetch_at.index;
    if (too_early && delay && e.returns) {
      const int64_t when = starts[trigger] + f.early.at(e.group);
      const uint32_t last = f.first_use.at(e.group);
      const auto it = std::lower_bound(starts.begin() + trigger, starts.begin() + last + 1, when);
      trigger = static_cast<uint32_t>(it - starts.begin());
      if (trigger > last) trigger = last;
    } else if (result.entry_cancelled[i] != 0) {
      changed = true;
      continue;  // dropped
    } else if (may_move && e.returns && f.late.at(e.group) > 0 && !too_early) {
      const uint32_t after = e.evict_after.index, use = e.next_use.index;
      const bool wraps = !e.leaves || use <= after;
      trigger = trigger_by(starts, after, trigger, wraps, starts[trigger] - f.late.at(e.group));
    }
    if (e.returns && trigger != e.prefetch_at.index) {
      e.prefetch_at = op_ref(workload, trigger);
      changed = true;
    }
    next.entries.push_back(std::move(e));
  }
  return next;
}

// The fastest plan offered so far.
struct Fastest {
  Plan plan;
  SimResult result;
  bool empty = true;
  uint32_t offer_id = 0;  // which offer it kept: the same id, the same plan
  void offer(Plan p, const SimResult& r, uint32_t id) {
    if (!empty && !faster(r, result)) return;
    plan = std::move(p);
    result = r;
    empty = false;
    offer_id = id;
  }
  // Nothing waits: no plan can be faster.
  bool done() const {
    return !empty && result.fits && result.iteration_ns == result.infinite_memory_ns;
  }
};

class CuswapPlanner final : public Planner {
 public:
  std::string_view name() const override { return "cuswap"; }
  std::string_view summary() const override {
    return "cuswap's own (default): bytes x time away against copy time, weights across "
           "iterations, small tensors grouped, unhideable copies last, refined on simulation";
  }

  Plan plan(const Workload& workload, const PlanRequest& request) const override {
    const std::vector<uint64_t> live =
        live_bytes_per_op(workload, parked_at_start(workload, request.budget_bytes));
    const uint64_t peak = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
    if (peak <= request.budget_bytes) return new_plan(workload, request, name());
    const std::vector<int64_t> starts = infinite_memory_starts(workload, request.time_scale);
    // Step 7: the schedule is planned on the infinite-memory timeline, the
    // simulation runs on the real one; planning for a slightly smaller
    // budget leaves room for the difference. The best margin wins, over
    // wide and narrow groups of small tensors and step 4's ways. `by_bytes`
    // is the best without Note [Least unhidden time]: step 9 starts from
    // it too, so that no plan is slower than one made without it.
    Fastest best, by_bytes;
    uint32_t offers = 0;
    const auto done = [&] { return best.done(); };
    for (uint32_t span : kGroupSpans) {
      if (done()) break;
      const std::vector<Candidate> all = candidates(workload, request, starts, span);
      for (size_t i = 0; i < std::size(kMargins) && !done(); ++i) {
        const auto target =
            static_cast<uint64_t>(static_cast<double>(request.budget_bytes) * (1.0 - kMargins[i]));
        for (const Unhidden way :
             {Unhidden::bytes_x_time, Unhidden::least_wait_on_lanes, Unhidden::least_wait}) {
          SimResult result;
          Plan plan = plan_for(workload, request, starts, live, all, target, way, result);
          ++offers;
          if (way == Unhidden::bytes_x_time) by_bytes.offer(plan, result, offers);
          best.offer(std::move(plan), result, offers);
          if (done()) break;
        }
      }
    }
    // Step 8: the peers' selections as more starting points.
    for (const Planner* peer : {&seed_planner(), &capuchin_planner(), &vdnn_planner()}) {
      if (done()) break;
      // The peer's plan refined, or with only its copies for nothing
      // dropped where that is faster: moving its triggers as well can undo
      // what it hid well.
      Plan raw = peer->plan(workload, request);
      SimResult result, kept_result;
      Plan plan = refine_entries(workload, request, starts, raw, result);
      Plan kept = refine_entries(workload, request, starts, std::move(raw), kept_result,
                                 /*move_triggers=*/false);
      if (faster(kept_result, result)) {
        plan = std::move(kept);
        result = kept_result;
      }
      plan.planner = name();
      ++offers;
      by_bytes.offer(plan, result, offers);
      best.offer(std::move(plan), result, offers);
    }
    if (done()) return std::move(best.plan);
    const bool apart = by_bytes.offer_id != best.offer_id;
    Fastest deferred;
    SimResult result = best.result;
    Plan plan = defer_crossings(workload, request, starts, std::move(best.plan), result);
    deferred.offer(std::move(plan), result, 0);
    if (apart) {
      result = by_bytes.result;
      plan = defer_crossings(workload, request, starts, std::move(by_bytes.plan), result);
      deferred.offer(std::move(plan), result, 0);
    }
    result = deferred.result;
    return finish_plan(workload, request, starts, std::move(deferred.plan), result);
  }

 private:
  // Steps 3-5 for one target budget, then step 6; `result` is the chosen
  // plan's simulation.
  Plan plan_for(const Workload& workload, const PlanRequest& request,
                const std::vector<int64_t>& starts, const std::vector<uint64_t>& live,
                const std::vector<Candidate>& all, uint64_t target, Unhidden way,
                SimResult& result) const {
    Selection selection(request, starts, live, all, target);
    selection.place_hideable();
    if (way == Unhidden::bytes_x_time) {
      selection.place_unhidden();
    } else {
      selection.place_least_unhidden(way == Unhidden::least_wait_on_lanes);
    }
    selection.drop_unneeded();
    return refine_entries(workload, request, starts,
                          build(workload, request, all, selection.chosen()), result);
  }

  Plan build(const Workload& workload, const PlanRequest& request,
             const std::vector<Candidate>& all, const std::vector<Chosen>& chosen) const {
    Plan plan = new_plan(workload, request, name());
    for (uint32_t g = 0; g < chosen.size(); ++g) {
      const Candidate& c = all[chosen[g].candidate];
      if (c.stays_out) {
        for (uint32_t t : c.tensors)
          plan.entries.push_back(make_leaving_entry(workload, t, c.after, g));
        continue;
      }
      if (c.carries()) {
        for (uint32_t t : c.tensors)
          plan.entries.push_back(make_leaving_entry(workload, t, c.after, g));
        for (size_t m = 0; m < c.arriving.size(); ++m)
          plan.entries.push_back(make_returning_entry(workload, c.arriving[m], chosen[g].trigger,
                                                      c.arriving_nexts[m], g));
        continue;
      }
      for (size_t m = 0; m < c.tensors.size(); ++m)
        plan.entries.push_back(
            make_entry(workload, c.tensors[m], c.after, chosen[g].trigger, c.nexts[m], g));
    }
    return plan;
  }

  // Step 6 on any plan: a group whose next use waited moves its prefetch
  // earlier by the wait; a group wanted back while its copy out ran is
  // fetched later, or the entry dropped, whichever simulates faster. The
  // fastest round without a copy for nothing is kept. Without
  // `move_triggers`, only copies for nothing are dropped.
  Plan refine_entries(const Workload& workload, const PlanRequest& request,
                      const std::vector<int64_t>& starts, Plan plan, SimResult& result,
                      bool move_triggers = true) const {
    result = simulate_plan(workload, plan, request);
    std::optional<Plan> best;
    SimResult best_result;
    if (result.wasted_evictions == 0) best = plan, best_result = result;
    // Every round changes the plan, and after the feedback rounds only
    // drops go on: it ends with no copy for nothing left.
    for (int round = 0;; ++round) {
      const bool may_move = move_triggers && round < 2 * kFeedbackRounds;
      const Feedback f = feedback(plan, result);
      if (!f.wasted && !may_move) break;
      bool dropped = false, delayed = false;
      Plan next = revise(workload, starts, plan, result, f, may_move, /*delay=*/false, dropped);
      SimResult r = dropped ? simulate_plan(workload, next, request) : result;
      if (f.wasted && may_move) {
        Plan later = revise(workload, starts, plan, result, f, may_move, /*delay=*/true, delayed);
        if (delayed) {
          const SimResult rl = simulate_plan(workload, later, request);
          if (!dropped || faster(rl, r)) {
            next = std::move(later);
            r = rl;
            dropped = true;  // a change the round must keep
          }
        }
      }
      if (!dropped) break;
      plan = std::move(next);
      result = std::move(r);
      if (result.wasted_evictions == 0 && (!best || faster(result, best_result))) {
        best = plan;
        best_result = result;
      }
    }
    // The fastest round without a copy for nothing (the last one has none).
    if (best && !faster(result, best_result)) {
      result = best_result;
      return *std::move(best);
    }
    return plan;
  }
};

}  // namespace

const Planner& cuswap_planner() {
  static const CuswapPlanner planner;
  return planner;
}

}  // namespace cuswap::policy::planners
