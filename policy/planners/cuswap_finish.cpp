// Steps 9-14 of the cuswap planner (policy/planners/cuswap_finish.h).
#include "policy/planners/cuswap_finish.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "policy/planners/common.h"

namespace cuswap::policy::planners {

namespace {

constexpr int kDeferTries = 24;                         // step 9's simulations
constexpr int kLaneTries = 64;                          // step 10's simulations
constexpr double kLaneShifts[] = {1.0, 0.5, 1.5, 3.0};  // step 10: of the wait
constexpr int kFillTries = 32;                          // step 11's simulations
constexpr int kPassTries = 32;                          // step 12's simulations
constexpr int kDropTries = 24;                          // step 13's simulations
constexpr int kLastTries = 24;                          // step 14's simulations
constexpr int kFinishRounds = 3;                        // rounds of steps 10-14 while faster

// `next` replaces `plan` (and its simulation `result`) when it simulates
// faster with no copy for nothing (and, with `must_fit`, fits); whether it
// did.
bool take_if_faster(const Workload& workload, const PlanRequest& request, Plan& next, Plan& plan,
                    SimResult& result, bool must_fit = false) {
  SimResult r = simulate_plan(workload, next, request);
  if ((must_fit && !r.fits) || r.wasted_evictions != 0 || !faster(r, result)) return false;
  plan = std::move(next);
  result = std::move(r);
  return true;
}

// `plan` with each returning entry's trigger set to `to(entry)` (its own
// for none) replaces `plan` when that simulates faster (take_if_faster); a
// plan that moves nothing is not simulated, and one that is counts in
// `tries`. Whether it replaced `plan`.
template <typename To>
bool take_retriggered(const Workload& workload, const PlanRequest& request, Plan& plan,
                      SimResult& result, int& tries, To&& to) {
  Plan next = plan;
  bool moved = false;
  for (PlanEntry& e : next.entries) {
    if (!e.returns) continue;
    const uint32_t trigger = to(std::as_const(e));
    if (trigger == e.prefetch_at.index) continue;
    e.prefetch_at = op_ref(workload, trigger);
    moved = true;
  }
  if (!moved) return false;
  ++tries;
  return take_if_faster(workload, request, next, plan, result);
}

// The earliest op that may trigger a returning entry's copy back: the one
// after its copy out, or the iteration's first for a wrap or an arrival.
uint32_t lowest_trigger(const PlanEntry& e) {
  return e.wraps() || !e.leaves ? 0 : e.evict_after.index + 1;
}

// A prefetch triggered by `from` moved to `trigger` (<= from), but never to
// start before an op that waited in between (step 9 keeps those clear).
uint32_t clear_of_waits(const std::vector<int64_t>& waited, uint32_t trigger, uint32_t from) {
  for (uint32_t k = from; k-- > trigger;)
    if (waited[k] > 0) return k + 1;
  return trigger;
}

// How long each op of a timed simulation waited, beyond the waits before
// it, against the infinite-memory schedule `starts`; 0 for most.
std::vector<int64_t> op_waits(const Workload& workload, const PlanRequest& request,
                              const std::vector<int64_t>& starts, const SimResult& timed) {
  std::vector<int64_t> waits(workload.ops.size(), 0);
  int64_t behind_ns = 0;
  for (const OpSpan& span : timed.ops) {
    const int64_t delay_ns = span.start_ns - starts[span.op] -
                             scaled_ns(workload.ops[span.op].idle_ns, request.time_scale);
    if (delay_ns > behind_ns) waits[span.op] = delay_ns - behind_ns;
    behind_ns = delay_ns;
  }
  return waits;
}

// The same for `plan`'s simulation.
std::vector<int64_t> op_waits(const Workload& workload, const PlanRequest& request,
                              const std::vector<int64_t>& starts, const Plan& plan) {
  return op_waits(workload, request, starts,
                  simulate_plan(workload, plan, request, /*record_timeline=*/true));
}

// The groups of `plan` whose every entry `counts`, with their bytes,
// smallest first.
template <typename Counts>
std::vector<std::pair<uint64_t, uint32_t>> groups_by_bytes(const Plan& plan, Counts&& counts) {
  std::map<uint32_t, uint64_t> bytes;
  std::map<uint32_t, bool> all;
  for (const PlanEntry& e : plan.entries) {
    bytes[e.group] += e.tensor.size_bytes;
    const auto it = all.try_emplace(e.group, true).first;
    it->second = it->second && counts(e);
  }
  std::vector<std::pair<uint64_t, uint32_t>> order;
  for (const auto& [g, b] : bytes)
    if (all.at(g)) order.emplace_back(b, g);
  std::sort(order.begin(), order.end());
  return order;
}

// Step 10: the prefetch that waited longest and every prefetch started
// no later than it start earlier together; a move is kept when the plan
// simulates faster, and a kept move starts the search again.
Plan shift_runs(const Workload& workload, const PlanRequest& request,
                const std::vector<int64_t>& starts, Plan plan, SimResult& result) {
  std::vector<uint8_t> tried(workload.ops.size(), 0);
  int tries = 0;
  for (bool kept = true; kept && tries < kLaneTries;) {
    kept = false;
    // The ops that waited: no prefetch moves to start before one it did
    // not cross already (step 9 keeps them clear).
    const std::vector<int64_t> waited = op_waits(workload, request, starts, plan);
    std::vector<std::pair<int64_t, size_t>> late;  // (wait, entry), longest first
    for (size_t i = 0; i < plan.entries.size(); ++i)
      if (plan.entries[i].returns && result.entry_late_ns[i] > 0)
        late.emplace_back(result.entry_late_ns[i], i);
    std::sort(late.begin(), late.end(), std::greater<>());
    for (const auto& [late_ns, i] : late) {
      if (tries >= kLaneTries || kept) break;
      const uint32_t last = plan.entries[i].prefetch_at.index;
      if (tried[last]) continue;
      tried[last] = 1;
      for (const double shift : kLaneShifts) {
        if (tries >= kLaneTries) break;
        const auto by = static_cast<int64_t>(shift * static_cast<double>(late_ns));
        kept = take_retriggered(workload, request, plan, result, tries, [&](const PlanEntry& e) {
          const uint32_t from = e.prefetch_at.index;
          // Those ahead of it: started no later, still wanted after its start.
          if (from > last || (!e.wraps() && e.next_use.index < last)) return from;
          return clear_of_waits(
              waited, op_starting_in(starts, lowest_trigger(e), from, starts[from] - by), from);
        });
        if (kept) break;
      }
    }
  }
  return plan;
}

// Step 11: where the copy-in lane sat idle before a prefetch that its
// trigger held back, the prefetch's group starts when the lane fell idle
// instead, longest idle first; a move is kept when the plan simulates
// faster, and a kept move starts the search again.
Plan fill_idle_lane(const Workload& workload, const PlanRequest& request,
                    const std::vector<int64_t>& starts, Plan plan, SimResult& result) {
  std::set<uint32_t> tried;  // groups
  int tries = 0;
  for (bool kept = true; kept && tries < kFillTries;) {
    kept = false;
    std::vector<ResolvedEntry> resolved;
    std::string error;
    if (!resolve(plan, workload, resolved, error)) break;
    std::map<uint32_t, uint32_t> group_of;  // returning tensor -> its group
    for (const ResolvedEntry& e : resolved)
      if (e.returns) group_of[e.tensor] = e.group;
    const SimResult timed = simulate_plan(workload, plan, request, /*record_timeline=*/true);
    std::vector<int64_t> op_starts;
    for (const OpSpan& span : timed.ops)
      op_starts.push_back(span.start_ns);
    const std::vector<int64_t> waited = op_waits(workload, request, starts, timed);
    std::vector<std::tuple<int64_t, int64_t, uint32_t>> idle;  // (idle, lane free from, group)
    std::vector<CopySpan> lane;
    for (const CopySpan& c : timed.copies)
      if (c.to_device) lane.push_back(c);
    std::stable_sort(lane.begin(), lane.end(),
                     [](const CopySpan& a, const CopySpan& b) { return a.start_ns < b.start_ns; });
    int64_t lane_free = -1;
    for (const CopySpan& c : lane) {
      const auto g = group_of.find(c.tensor);
      if (lane_free >= 0 && !c.on_demand && g != group_of.end() && c.start_ns > lane_free &&
          !tried.count(g->second))
        idle.emplace_back(c.start_ns - lane_free, lane_free, g->second);
      lane_free = std::max(lane_free, c.end_ns);
    }
    std::sort(idle.begin(), idle.end(), std::greater<>());
    for (const auto& [idle_ns, from_ns, g] : idle) {
      if (tries >= kFillTries) break;
      tried.insert(g);
      // The op running when the lane fell idle: its prefetches are issued
      // when it is ready, so the copy starts as the lane frees.
      const auto at = std::upper_bound(op_starts.begin(), op_starts.end(), from_ns);
      const auto k = static_cast<uint32_t>(std::max<std::ptrdiff_t>(0, at - op_starts.begin() - 1));
      kept = take_retriggered(workload, request, plan, result, tries, [&](const PlanEntry& e) {
        const uint32_t from = e.prefetch_at.index;
        if (e.group != g) return from;
        return std::min(from, clear_of_waits(waited, std::max(k, lowest_trigger(e)), from));
      });
      if (kept) break;
    }
  }
  return plan;
}

// Step 12: a group whose copy back starts before an op that waited, for a
// use after it, starts right after the first such op instead, the group
// wanted back last first; a move is kept when the plan simulates faster,
// and a kept move starts the search again.
Plan pass_first_wait(const Workload& workload, const PlanRequest& request,
                     const std::vector<int64_t>& starts, Plan plan, SimResult& result) {
  std::set<uint32_t> tried;  // groups
  int tries = 0;
  for (bool kept = true; kept && tries < kPassTries;) {
    kept = false;
    const std::vector<int64_t> waited = op_waits(workload, request, starts, plan);
    std::map<uint32_t, std::pair<uint32_t, uint32_t>> window;  // group -> (trigger, first use)
    for (const PlanEntry& e : plan.entries) {
      if (!e.returns) continue;
      const auto it = window.try_emplace(e.group, e.prefetch_at.index, e.next_use.index).first;
      it->second.first = std::min(it->second.first, e.prefetch_at.index);
      it->second.second = std::min(it->second.second, e.next_use.index);
    }
    // (time from its trigger to its use, group, new trigger)
    std::vector<std::tuple<int64_t, uint32_t, uint32_t>> moves;
    for (const auto& [g, w] : window) {
      const auto [trigger, use] = w;
      if (tried.count(g) || use <= trigger) continue;  // fetched for its trigger itself
      for (uint32_t k = trigger + 1; k + 1 < use; ++k)
        if (waited[k] > 0) {
          moves.emplace_back(starts[use] - starts[trigger], g, k + 1);
          break;
        }
    }
    std::sort(moves.begin(), moves.end(), std::greater<>());
    for (const auto& [away_ns, g, to] : moves) {
      if (tries >= kPassTries) break;
      tried.insert(g);
      kept = take_retriggered(workload, request, plan, result, tries, [&](const PlanEntry& e) {
        return e.group == g ? to : e.prefetch_at.index;
      });
      if (kept) break;
    }
  }
  return plan;
}

// Step 13: groups dropped one at a time, largest first, each kept out
// when the plan still fits and simulates faster without it.
Plan drop_groups(const Workload& workload, const PlanRequest& request, Plan plan,
                 SimResult& result) {
  auto order = groups_by_bytes(plan, [](const PlanEntry&) { return true; });
  std::reverse(order.begin(), order.end());
  int tries = 0;
  for (const auto& [bytes, g] : order) {
    if (tries++ >= kDropTries) break;
    Plan next = plan;
    std::erase_if(next.entries, [g = g](const PlanEntry& e) { return e.group == g; });
    take_if_faster(workload, request, next, plan, result, /*must_fit=*/true);
  }
  return plan;
}

// Step 14: smallest first, a group that leaves and comes back copies out
// after the last larger group that leaves before its trigger does.
Plan smaller_out_last(const Workload& workload, const PlanRequest& request, Plan plan,
                      SimResult& result) {
  const auto order =
      groups_by_bytes(plan, [](const PlanEntry& e) { return e.leaves && e.returns && !e.wraps(); });
  const std::map<uint32_t, uint64_t> bytes_of = [&] {
    std::map<uint32_t, uint64_t> m;
    for (const auto& [b, g] : order)
      m.emplace(g, b);
    return m;
  }();
  int tries = 0;
  for (const auto& [b, g] : order) {
    if (tries >= kLastTries) break;
    // Its tensors are not used from their evict_after to their next use,
    // and come back from their trigger: it may leave anywhere before.
    uint32_t from = 0, limit = UINT32_MAX;
    for (const PlanEntry& e : plan.entries)
      if (e.group == g) {
        from = e.evict_after.index;
        limit = std::min({limit, e.next_use.index, e.prefetch_at.index});
      }
    uint32_t to = from;
    for (const PlanEntry& e : plan.entries) {
      const auto it = bytes_of.find(e.group);
      if (it != bytes_of.end() && it->second > b && e.evict_after.index > to &&
          e.evict_after.index < limit)
        to = e.evict_after.index;
    }
    if (to == from) continue;
    ++tries;
    Plan next = plan;
    for (PlanEntry& e : next.entries)
      if (e.group == g) e.evict_after = op_ref(workload, to);
    take_if_faster(workload, request, next, plan, result);
  }
  return plan;
}

// Steps 10, 13 and 14, again while a round makes the plan faster.
Plan finish(const Workload& workload, const PlanRequest& request,
            const std::vector<int64_t>& starts, Plan plan, SimResult& result) {
  for (int round = 0; round < kFinishRounds; ++round) {
    const int64_t was = result.iteration_ns;
    plan = shift_runs(workload, request, starts, std::move(plan), result);
    plan = drop_groups(workload, request, std::move(plan), result);
    plan = smaller_out_last(workload, request, std::move(plan), result);
    if (result.iteration_ns >= was) break;
  }
  return plan;
}

}  // namespace

bool faster(const SimResult& a, const SimResult& b) {
  if (a.fits != b.fits) return a.fits;
  return a.iteration_ns < b.iteration_ns;
}

// Step 9: for the ops that waited, longest wait first, the prefetches
// started before the op for a later one start right after it instead; a
// move is kept when the plan simulates faster, and a kept move starts
// the search again from the new plan's waits.
Plan defer_crossings(const Workload& workload, const PlanRequest& request,
                     const std::vector<int64_t>& starts, Plan plan, SimResult& result) {
  std::vector<uint8_t> tried(workload.ops.size(), 0);
  int tries = 0;
  for (bool kept = true; kept && tries < kDeferTries;) {
    kept = false;
    const std::vector<int64_t> op_wait = op_waits(workload, request, starts, plan);
    std::vector<std::pair<int64_t, uint32_t>> waits;  // (wait, op), longest first
    for (uint32_t k = 0; k < op_wait.size(); ++k)
      if (op_wait[k] > 0) waits.emplace_back(op_wait[k], k);
    std::sort(waits.begin(), waits.end(), std::greater<>());
    for (const auto& [wait_ns, k] : waits) {
      if (tries >= kDeferTries) break;
      if (tried[k] || k + 1 >= workload.ops.size()) continue;
      tried[k] = 1;
      // Whole groups move, and only those none of whose tensors k needs.
      std::map<uint32_t, bool> crossing;
      for (const PlanEntry& e : plan.entries) {
        if (!e.returns || e.prefetch_at.index > k) continue;
        const bool crosses = !e.wraps() && e.next_use.index > k;
        const auto it = crossing.try_emplace(e.group, crosses).first;
        it->second = it->second && crosses;
      }
      kept = take_retriggered(workload, request, plan, result, tries, [&](const PlanEntry& e) {
        const uint32_t from = e.prefetch_at.index;
        const auto it = crossing.find(e.group);
        return from <= k && it != crossing.end() && it->second ? k + 1 : from;
      });
      if (kept) break;
    }
  }
  return plan;
}

Plan finish_plan(const Workload& workload, const PlanRequest& request,
                 const std::vector<int64_t>& starts, Plan plan, SimResult& result) {
  // Steps 10, 13 and 14 until a round gains nothing; then steps 11 and 12,
  // and when they gain, all of them again.
  plan = finish(workload, request, starts, std::move(plan), result);
  for (int round = 0; round < kFinishRounds; ++round) {
    const int64_t was = result.iteration_ns;
    plan = fill_idle_lane(workload, request, starts, std::move(plan), result);
    plan = pass_first_wait(workload, request, starts, std::move(plan), result);
    if (result.iteration_ns >= was) break;
    plan = finish(workload, request, starts, std::move(plan), result);
  }
  return plan;
}

}  // namespace cuswap::policy::planners
