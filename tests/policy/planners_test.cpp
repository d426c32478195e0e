// Planners on hand-checkable traces (chain.h): which tensors, which ops.
#include <gtest/gtest.h>

#include <set>

#include <fmt/format.h>

#include "policy/planner.h"
#include "tests/policy/chain.h"
#include "tests/policy/plan_checks.h"

namespace cuswap::policy::test {
namespace {

Workload build(const trace::Trace& trace) {
  Workload w;
  std::string error;
  EXPECT_TRUE(build_workload(trace, {}, w, error)) << error;
  return w;
}

PlanRequest request(uint64_t budget, Link link = test_link()) {
  PlanRequest r;
  r.budget_bytes = budget;
  r.link = link;
  return r;
}

TEST(Planners, RegistryFindsEveryPlanner) {
  EXPECT_EQ(planner_names(), "cuswap, seed, vdnn, capuchin, lru, ondemand");
  for (const Planner* p : all_planners())
    EXPECT_EQ(find_planner(p->name()), p);
  EXPECT_EQ(find_planner("nope"), nullptr);
}

TEST(Planners, ChainLossPointAndGaps) {
  const Workload w = build(training_chain());
  EXPECT_EQ(loss_point(w), 3u);
  EXPECT_EQ(live_bytes_per_op(w),
            (std::vector<uint64_t>{1000, 2000, 3000, 4000, 4000, 4000, 3000, 2000, 1000}));
}

TEST(Seed, TakesTheLongestLivedFeatureMapFirst) {
  const Workload w = build(training_chain());
  // Budget 3000: taking x0 out over f2..b2 brings every op to <= 3000.
  const Plan plan = find_planner("seed")->plan(w, request(3000));
  ASSERT_EQ(plan.entries.size(), 1u);
  const PlanEntry& e = plan.entries[0];
  EXPECT_EQ(e.tensor.name, "x0");
  EXPECT_FALSE(e.tensor.resident_at_start);
  EXPECT_EQ(e.tensor.ordinal, 0u);
  EXPECT_EQ(e.tensor.size_bytes, 1000u);
  EXPECT_EQ(e.evict_after.name, "f1");
  EXPECT_EQ(e.next_use.name, "b0");
  // The copy takes 1 us: the latest op that leaves it before b0 is b1.
  EXPECT_EQ(e.prefetch_at.name, "b1");
  EXPECT_EQ(e.prefetch_at.index, 7u);
}

TEST(Seed, TakesBothWhenTheBudgetIsTighter) {
  const Workload w = build(training_chain());
  const Plan plan = find_planner("seed")->plan(w, request(2000));
  ASSERT_EQ(plan.entries.size(), 2u);
  EXPECT_EQ(plan.entries[0].tensor.name, "x0");
  EXPECT_EQ(plan.entries[1].tensor.name, "x1");
  EXPECT_EQ(plan.entries[1].evict_after.name, "f2");
  EXPECT_EQ(plan.entries[1].prefetch_at.name, "b2");
}

TEST(Seed, NothingWhenTheBudgetFits) {
  const Workload w = build(training_chain());
  EXPECT_TRUE(find_planner("seed")->plan(w, request(4000)).entries.empty());
  EXPECT_TRUE(find_planner("cuswap")->plan(w, request(4000)).entries.empty());
}

TEST(Cuswap, FitsWithoutStallWhenTheCopiesHide) {
  const Workload w = build(training_chain());
  const PlanOutcome out = plan_and_simulate(*find_planner("cuswap"), w, request(3000));
  EXPECT_FALSE(out.plan.entries.empty());
  EXPECT_TRUE(out.result.fits);
  EXPECT_LE(out.result.peak_bytes, 3000u);
  EXPECT_EQ(out.result.stall_ns, 0);
  EXPECT_EQ(out.result.iteration_ns, out.result.infinite_memory_ns);
  ASSERT_TRUE(out.plan.predicted.has_value());
  EXPECT_EQ(out.plan.predicted->peak_bytes, out.result.peak_bytes);
}

TEST(Cuswap, NoSlowerThanSeedOnTheChain) {
  const Workload w = build(training_chain());
  for (uint64_t budget : {3000u, 2000u}) {
    const PlanOutcome c = plan_and_simulate(*find_planner("cuswap"), w, request(budget));
    const PlanOutcome s = plan_and_simulate(*find_planner("seed"), w, request(budget));
    EXPECT_TRUE(c.result.fits) << budget;
    EXPECT_LE(c.result.iteration_ns, s.result.iteration_ns) << budget;
  }
}

TEST(Cuswap, GroupsSmallTensorsOfOneStep) {
  // Ten 100 B tensors made by op 0 and read back by op 6, a 500 B
  // temporary at op 3; budget 1100 needs 400 B out over op 3. Each copy is
  // 100 ns against a 1 us latency: small, so they move as one group. Op 3
  // lands four of them (Note [Lazy landing]); the copies out of the other
  // six would be for nothing, and the plan drops them.
  TraceBuilder b;
  for (int i = 0; i < 7; ++i)
    b.op(fmt::format("s{}", i), 1'000'000);
  for (int i = 0; i < 10; ++i)
    b.tensor(fmt::format("h{}", i), 100, 0, {6}, 6);
  b.tensor("tmp", 500, 3, {}, 3);
  const Workload w = build(b.take());
  const PlanOutcome out =
      plan_and_simulate(*find_planner("cuswap"), w, request(1100, test_link(1000)));
  ASSERT_EQ(out.plan.entries.size(), 4u);
  std::set<uint32_t> groups;
  for (const PlanEntry& e : out.plan.entries)
    groups.insert(e.group);
  EXPECT_EQ(groups.size(), 1u);
  EXPECT_TRUE(out.result.fits);
  EXPECT_LE(out.result.peak_bytes, 1100u);
  EXPECT_EQ(out.result.evictions, 4u);
  EXPECT_EQ(out.result.wasted_evictions, 0u);
  EXPECT_EQ(out.result.stall_ns, 0);
}

TEST(Cuswap, PrefersWhatCanBeHidden) {
  // Ops o0..o7 of 1, 1, 0.3, 0.3, 0.3, 1, 1, 1 ms; 600 kB tensors copy in
  // 0.6 ms each way. "long" (o0 -> o6) is idle 2.9 ms: hideable. "short"
  // (o1 -> o5) is idle 0.9 ms, under the 1.2 ms round trip. Either frees
  // o3, where live bytes are 1.8 MB against a 1.2 MB budget: only "long"
  // moves.
  TraceBuilder b;
  const int64_t ms = 1'000'000;
  const int64_t durations[] = {ms, ms, 300'000, 300'000, 300'000, ms, ms, ms};
  for (int i = 0; i < 8; ++i)
    b.op(fmt::format("o{}", i), durations[i]);
  b.tensor("long", 600'000, 0, {6}, 6);
  b.tensor("short", 600'000, 1, {5}, 5);
  b.tensor("tmp", 600'000, 3, {}, 3);
  const Workload w = build(b.take());
  const PlanOutcome out = plan_and_simulate(*find_planner("cuswap"), w,
                                            request(1'200'000, Link{"slow", 1e9, 0, false}));
  ASSERT_EQ(out.plan.entries.size(), 1u);
  EXPECT_EQ(out.plan.entries[0].tensor.name, "long");
  EXPECT_EQ(out.plan.entries[0].evict_after.name, "o0");
  // Back as late as the lane allows: 3.3..3.9 ms, started by o5 (2.9 ms).
  EXPECT_EQ(out.plan.entries[0].prefetch_at.name, "o5");
  EXPECT_TRUE(out.result.fits);
  EXPECT_EQ(out.result.stall_ns, 0);
}

TEST(Cuswap, WeightsLeaveAfterTheirLastUseUntilTheNextIteration) {
  // Ten 1 us ops; w (2000 B, a weight) is read by ops 2 and 3 only; x
  // (1000 B) is made by op 6 and read by op 7. Budget 2500: at ops 6-7 w
  // must be away, which only the time from op 3 to op 2 of the next
  // iteration can cover (8 us against two 2 us copies).
  TraceBuilder b;
  for (int i = 0; i < 10; ++i)
    b.op(fmt::format("o{}", i), 1000);
  b.weight("w", 2000, {2, 3});
  b.tensor("x", 1000, 6, {7}, 7);
  const Workload w = build(b.take());
  const PlanOutcome out = plan_and_simulate(*find_planner("cuswap"), w, request(2500));
  ASSERT_EQ(out.plan.entries.size(), 1u);
  const PlanEntry& e = out.plan.entries[0];
  EXPECT_TRUE(e.tensor.resident_at_start);
  EXPECT_EQ(e.evict_after.name, "o3");
  EXPECT_EQ(e.next_use.name, "o2");
  EXPECT_LE(e.prefetch_at.index, e.next_use.index);
  std::vector<ResolvedEntry> resolved;
  std::string error;
  ASSERT_TRUE(resolve(out.plan, w, resolved, error)) << error;
  EXPECT_TRUE(resolved[0].wraps());
  EXPECT_TRUE(out.result.fits);
  EXPECT_EQ(out.result.iteration_ns, out.result.infinite_memory_ns);
  EXPECT_EQ(out.result.forced_evictions, 0u);
}

TEST(Cuswap, StateMadeAnewEachIterationMovesAsAPair) {
  // Ten 1 us ops. "old" (2000 B) was left by the previous iteration and is
  // read and freed by op 8; "new" (2000 B), made by op 2, is live at the
  // end: the next iteration's "old". Budget 3000 (4000 live over ops 2-8):
  // new leaves after op 2 and old starts on the host, back for op 8.
  TraceBuilder b;
  for (int i = 0; i < 10; ++i)
    b.op(fmt::format("o{}", i), 1000);
  const uint32_t old = b.weight("old", 2000, {8});
  b.free_at(old, 8);
  b.tensor("new", 2000, 2, {}, std::nullopt);
  const Workload w = build(b.take());
  const PlanOutcome out = plan_and_simulate(*find_planner("cuswap"), w, request(3000));
  ASSERT_EQ(out.plan.entries.size(), 2u);
  const PlanEntry* leaving = nullptr;
  const PlanEntry* returning = nullptr;
  for (const PlanEntry& e : out.plan.entries)
    (e.returns ? returning : leaving) = &e;
  ASSERT_NE(leaving, nullptr);
  ASSERT_NE(returning, nullptr);
  EXPECT_EQ(leaving->tensor.name, "new");
  EXPECT_EQ(leaving->evict_after.name, "o2");
  EXPECT_EQ(returning->tensor.name, "old");
  EXPECT_FALSE(returning->leaves);
  EXPECT_EQ(returning->next_use.name, "o8");
  EXPECT_EQ(leaving->group, returning->group);
  EXPECT_EQ(leaving->tensor.size_bytes, returning->tensor.size_bytes);
  EXPECT_TRUE(out.result.fits);
  EXPECT_EQ(out.result.iteration_ns, out.result.infinite_memory_ns);
  EXPECT_EQ(out.result.forced_evictions, 0u);
  EXPECT_EQ(out.result.d2h_bytes, 2000u);
  EXPECT_EQ(out.result.h2d_bytes, 2000u);
}

TEST(Cuswap, WhatOutlivesTheCaptureUnpairedLeavesForGood) {
  // As above without "old": "new" is not needed again in the window, so it
  // leaves after op 2 and does not come back; the op 5 temporary fits.
  TraceBuilder b;
  for (int i = 0; i < 10; ++i)
    b.op(fmt::format("o{}", i), 1000);
  b.tensor("new", 2000, 2, {}, std::nullopt);
  b.tensor("tmp", 2000, 6, {}, 6);
  const Workload w = build(b.take());
  const PlanOutcome out = plan_and_simulate(*find_planner("cuswap"), w, request(3000));
  ASSERT_EQ(out.plan.entries.size(), 1u);
  EXPECT_EQ(out.plan.entries[0].tensor.name, "new");
  EXPECT_FALSE(out.plan.entries[0].returns);
  EXPECT_TRUE(out.result.fits);
  EXPECT_EQ(out.result.iteration_ns, out.result.infinite_memory_ns);
  EXPECT_EQ(out.result.h2d_bytes, 0u);
  EXPECT_EQ(out.result.forced_evictions, 0u);
}

TEST(Cuswap, GroupsSmallTensorsThatLeaveAfterDifferentOps) {
  // Ten 100 B tensors, h_i made by op i (0..4, two each) and read back by
  // op 9; a 600 B temporary at op 7. Copies of 100 ns against a 1 us
  // latency: they leave together after op 4 and come back as one copy.
  TraceBuilder b;
  for (int i = 0; i < 10; ++i)
    b.op(fmt::format("s{}", i), 1'000'000);
  for (int i = 0; i < 10; ++i)
    b.tensor(fmt::format("h{}", i), 100, static_cast<uint32_t>(i / 2), {9}, 9);
  b.tensor("tmp", 600, 7, {}, 7);
  const Workload w = build(b.take());
  const PlanOutcome out =
      plan_and_simulate(*find_planner("cuswap"), w, request(1100, test_link(1000)));
  ASSERT_GE(out.plan.entries.size(), 5u);
  std::set<uint32_t> groups;
  for (const PlanEntry& e : out.plan.entries) {
    groups.insert(e.group);
    EXPECT_EQ(e.evict_after.index, out.plan.entries[0].evict_after.index);
    EXPECT_EQ(e.prefetch_at.index, out.plan.entries[0].prefetch_at.index);
  }
  EXPECT_EQ(groups.size(), 1u);
  EXPECT_TRUE(out.result.fits);
  EXPECT_EQ(out.result.stall_ns, 0);
  EXPECT_EQ(out.result.wasted_evictions, 0u);
}

TEST(Cuswap, DropsAChoiceThatLaterChoicesMadeUnneeded) {
  // Ops o0..o10 of 1 ms; the link copies 100 kB in 0.1 ms. Live bytes are
  // 500 kB but 700 kB at o3 (tmp3) and at o8 (tmp8), against a 500 kB
  // budget. "big" (300 kB, back for o8) has the largest benefit and is
  // taken first, for o3; it cannot help at o8, where it is used, so "c"
  // and "d" (100 kB each, away until o10) are taken for o8. They free o3
  // as well, so "big" is not needed any more and does not move.
  TraceBuilder b;
  for (int i = 0; i < 11; ++i)
    b.op(fmt::format("o{}", i), 1'000'000);
  b.tensor("big", 300'000, 0, {8}, 8);
  b.tensor("c", 100'000, 0, {10}, 10);
  b.tensor("d", 100'000, 0, {10}, 10);
  b.tensor("tmp3", 200'000, 3, {}, 3);
  b.tensor("tmp8", 200'000, 8, {}, 8);
  const Workload w = build(b.take());
  const PlanOutcome out = plan_and_simulate(*find_planner("cuswap"), w, request(500'000));
  std::set<std::string> moved;
  for (const PlanEntry& e : out.plan.entries)
    moved.insert(e.tensor.name);
  EXPECT_EQ(moved, (std::set<std::string>{"c", "d"}));
  EXPECT_TRUE(out.result.fits);
  EXPECT_EQ(out.result.stall_ns, 0);
}

TEST(Cuswap, NoEvictionIsShorterThanItsCopies) {
  // The chain at budgets from loose to tight, on a link slow enough that
  // some gaps cannot hide a copy: every entry whose tensor left was away,
  // on the simulated timeline, for at least its copy out and its copy in.
  const Workload w = build(training_chain());
  size_t checked = 0;
  for (uint64_t budget : {3500u, 3000u, 2500u, 2000u}) {
    for (double bandwidth : {1e6, 2e5}) {
      const Link link{"slow", bandwidth, 10'000, false};
      const PlanRequest r = request(budget, link);
      const Plan plan = find_planner("cuswap")->plan(w, r);
      const SimResult sim = simulate_plan(w, plan, r, true);
      checked += expect_time_away_covers_copies(
          w, plan, sim, link, std::to_string(budget) + " B at " + std::to_string(bandwidth));
    }
  }
  EXPECT_GT(checked, 0u);
}

TEST(Peers, VdnnFindsConvolutionInputsWithoutConsumerAccesses) {
  // As TF2 records it: each map's producer and the op before its free, no
  // reads. f1 and f2 are convolutions, so x0 and x1 (the outputs of the
  // layers before them) are their inputs; x2 is not.
  TraceBuilder b;
  const int64_t ms = 1'000'000;
  uint32_t f[3], back[3];
  for (int i = 0; i < 3; ++i)
    f[i] = b.op(fmt::format("f{}", i), ms, i == 0 ? "Relu" : "Conv2D");
  b.op("L", ms, "Loss");
  for (int i = 2; i >= 0; --i)
    back[i] = b.op(fmt::format("b{}", i), ms, "Conv2DBackprop");
  for (int i = 0; i < 3; ++i)
    b.tensor(fmt::format("x{}", i), 1000, f[i], {back[i]}, back[i]);
  const Workload w = build(b.take());
  const Plan plan = find_planner("vdnn")->plan(w, request(UINT64_MAX));
  std::set<std::string> names;
  for (const PlanEntry& e : plan.entries)
    names.insert(e.tensor.name);
  EXPECT_EQ(names, (std::set<std::string>{"x0", "x1"}));
}

TEST(Peers, VdnnOffloadsEveryConvolutionInput) {
  const Workload w = build(training_chain());
  const Plan plan = find_planner("vdnn")->plan(w, request(UINT64_MAX));
  // x0 and x1 are read by convolutions f1 and f2; both go, whatever the budget.
  ASSERT_EQ(plan.entries.size(), 2u);
  EXPECT_EQ(plan.entries[0].tensor.name, "x0");
  // One layer ahead: the op before b0 is b1.
  EXPECT_EQ(plan.entries[0].prefetch_at.name, "b1");
  EXPECT_EQ(plan.entries[1].prefetch_at.name, "b2");
}

TEST(Peers, CapuchinCoversThePeakExcess) {
  const Workload w = build(training_chain());
  const Plan plan = find_planner("capuchin")->plan(w, request(3000));
  // 1000 B over: the largest free time, x0, is enough.
  ASSERT_EQ(plan.entries.size(), 1u);
  EXPECT_EQ(plan.entries[0].tensor.name, "x0");
}

TEST(Peers, ReactivePlansHaveNoEntries) {
  const Workload w = build(training_chain());
  for (const char* name : {"lru", "ondemand"}) {
    const PlanOutcome out = plan_and_simulate(*find_planner(name), w, request(2000));
    EXPECT_TRUE(out.plan.entries.empty()) << name;
    EXPECT_EQ(out.plan.mode, name == std::string("lru") ? PlanMode::lru : PlanMode::ondemand);
    EXPECT_TRUE(out.result.fits) << name;
    EXPECT_LE(out.result.peak_bytes, 2000u) << name;
    EXPECT_GT(out.result.evictions, 0u) << name;
  }
}

TEST(Planners, EveryPlannerKeepsAFeasibleBudget) {
  const Workload w = build(training_chain());
  for (const Planner* p : all_planners()) {
    const PlanOutcome out = plan_and_simulate(*p, w, request(2000));
    EXPECT_TRUE(out.result.fits) << p->name();
    EXPECT_LE(out.result.peak_bytes, 2000u) << p->name();
    EXPECT_GE(out.result.iteration_ns, out.result.infinite_memory_ns) << p->name();
  }
}

TEST(Planners, InfeasibleBudgetIsReportedNotHidden) {
  const Workload w = build(training_chain());
  // f1 reads x0 and makes x1: 2000 B at once.
  for (const Planner* p : all_planners()) {
    const PlanOutcome out = plan_and_simulate(*p, w, request(1500));
    EXPECT_FALSE(out.result.fits) << p->name();
    ASSERT_TRUE(out.result.shortfall.has_value()) << p->name();
    EXPECT_EQ(out.result.shortfall->over_bytes, 500u);
    EXPECT_EQ(out.result.shortfall->op, 1u);
  }
}

}  // namespace
}  // namespace cuswap::policy::test
