// The workload view and the simulator on traces whose answers are derived
// by hand in the comments.
#include <gtest/gtest.h>

#include <algorithm>

#include "policy/bounds.h"
#include "policy/simulator.h"
#include "policy/workload.h"
#include "tests/policy/synthetic.h"

namespace cuswap::policy::test {
namespace {

Workload build(const trace::Trace& trace) {
  Workload w;
  std::string error;
  EXPECT_TRUE(build_workload(trace, {}, w, error)) << error;
  EXPECT_EQ(trace::validate(trace), "");
  return w;
}

SimOptions options(uint64_t budget, Link link = test_link(), double scale = 1.0) {
  SimOptions o;
  o.budget_bytes = budget;
  o.link = link;
  o.time_scale = scale;
  o.bounds = true;
  return o;
}

// The timing of copies with no budget: evictions land as their copies end
// (without it, nothing would ever want their room).
SimOptions landing(Link link = test_link()) {
  SimOptions o = options(UINT64_MAX, link);
  o.land_when_copied = true;
  return o;
}

// Six 1000 ns ops; tensor "a" (1000 B) made by op 0, used again by op 5.
trace::Trace six_ops() {
  TraceBuilder b;
  for (int i = 0; i < 6; ++i)
    b.op("op" + std::to_string(i), 1000);
  b.tensor("a", 1000, 0, {5}, 5);
  b.tensor("tmp", 500, 2, {}, 2);
  return b.take();
}

TEST(Workload, MapsTimesToOps) {
  const Workload w = build(six_ops());
  ASSERT_EQ(w.ops.size(), 6u);
  ASSERT_EQ(w.tensors.size(), 2u);
  EXPECT_EQ(w.tensors[0].alloc_op, 0u);
  EXPECT_EQ(w.tensors[0].free_op, 5u);
  EXPECT_EQ(w.tensors[0].uses, (std::vector<uint32_t>{0, 5}));
  EXPECT_EQ(w.tensors[1].alloc_op, 2u);
  EXPECT_EQ(w.tensors[1].free_op, 2u);
  const std::vector<uint64_t> live = live_bytes_per_op(w);
  EXPECT_EQ(live, (std::vector<uint64_t>{1000, 1000, 1500, 1000, 1000, 1000}));
  EXPECT_EQ(loss_point(w), 2u);
}

TEST(Workload, FreeBoundsTheLastUseWhenTheSourceHasNoAccesses) {
  TraceBuilder b;
  for (int i = 0; i < 4; ++i)
    b.op("op" + std::to_string(i), 10);
  b.tensor("x", 8, 0, {}, 3);  // only producer and free known
  const Workload w = build(b.take());
  EXPECT_EQ(w.tensors[0].uses, (std::vector<uint32_t>{0, 3}));
}

TEST(Workload, NestedOpsCountOnce) {
  trace::Trace t;
  t.source = "nested";
  t.ops.push_back({"outer", "outer", 0, 0, 0, 100, trace::kNoIteration});
  t.ops.push_back({"inner", "inner", 0, 0, 10, 50, trace::kNoIteration});
  t.ops.push_back({"next", "next", 0, 0, 100, 30, trace::kNoIteration});
  trace::Tensor x;
  x.size_bytes = 4;
  x.producer = 0;
  x.accesses = {0};
  t.tensors.push_back(x);
  const Workload w = build(t);
  ASSERT_EQ(w.ops.size(), 3u);
  EXPECT_EQ(w.ops[0].duration_ns, 100);
  EXPECT_EQ(w.ops[1].duration_ns, 0);  // inside outer
  EXPECT_EQ(w.ops[2].duration_ns, 30);
}

TEST(Simulator, NoPlanRunsAtComputeSpeed) {
  const Workload w = build(six_ops());
  const SimResult r = simulate(w, PlanMode::scheduled, {}, options(UINT64_MAX));
  EXPECT_EQ(r.iteration_ns, 6000);
  EXPECT_EQ(r.infinite_memory_ns, 6000);
  EXPECT_EQ(r.lower_bound_ns, 6000);
  EXPECT_EQ(r.stall_ns, 0);
  EXPECT_EQ(r.peak_bytes, 1500u);
  EXPECT_TRUE(r.fits);
  const SimResult scaled =
      simulate(w, PlanMode::scheduled, {}, options(UINT64_MAX, test_link(), 2.5));
  EXPECT_EQ(scaled.iteration_ns, 15000);
  EXPECT_EQ(scaled.time_scale, 2.5);
}

TEST(Simulator, PrefetchOnTimeHidesTheCopies) {
  const Workload w = build(six_ops());
  // Evict after op 0 (D2H 1000..3000 with 1000 ns latency), prefetch at op 3
  // (H2D 3000..5000): op 5 starts at 5000 as without swapping.
  const std::vector<ResolvedEntry> plan = {{0, 0, 3, 5, 0}};
  const SimResult r = simulate(w, PlanMode::scheduled, plan, landing(test_link(1000)));
  EXPECT_EQ(r.iteration_ns, 6000);
  EXPECT_EQ(r.stall_ns, 0);
  EXPECT_EQ(r.d2h_bytes, 1000u);
  EXPECT_EQ(r.h2d_bytes, 1000u);
  EXPECT_EQ(r.evictions, 1u);
  EXPECT_EQ(r.prefetches, 1u);
  EXPECT_EQ(r.late_prefetches, 0u);
  // "a" is away over [3000, 3000): the eviction ends as the prefetch starts,
  // so op 2 (2000..3000) still sees a + tmp.
  EXPECT_EQ(r.peak_bytes, 1500u);
}

TEST(Simulator, LatePrefetchStallsByTheDifference) {
  const Workload w = build(six_ops());
  // Prefetch at op 4 (4000): H2D 4000..6000, op 5 waits 1000 ns.
  const std::vector<ResolvedEntry> plan = {{0, 0, 4, 5, 0}};
  const SimResult r = simulate(w, PlanMode::scheduled, plan, landing(test_link(1000)));
  EXPECT_EQ(r.stall_ns, 1000);
  EXPECT_EQ(r.iteration_ns, 7000);
  ASSERT_EQ(r.entry_late_ns.size(), 1u);
  EXPECT_EQ(r.entry_late_ns[0], 1000);
  EXPECT_EQ(r.late_prefetches, 1u);
  // a is away over [3000, 4000): op 3 runs with 0 bytes; op 2 with 1500.
  EXPECT_EQ(r.peak_bytes, 1500u);
}

TEST(Simulator, AnEvictionLandsOnlyWhenItsRoomIsWanted) {
  const Workload w = build(six_ops());
  // a leaves after op 0 (D2H 1000..3000) and is prefetched at op 3. With
  // no budget nothing wants its room: the prefetch finds it still on the
  // device and keeps it, and no copy comes back (Note [Lazy landing]).
  const std::vector<ResolvedEntry> plan = {{0, 0, 3, 5, 0}};
  const SimResult lazy =
      simulate(w, PlanMode::scheduled, plan, options(UINT64_MAX, test_link(1000)));
  EXPECT_EQ(lazy.d2h_bytes, 1000u);
  EXPECT_EQ(lazy.h2d_bytes, 0u);
  EXPECT_EQ(lazy.prefetches, 0u);
  EXPECT_EQ(lazy.wasted_evictions, 1u);
  EXPECT_EQ(lazy.peak_bytes, 1500u);
  EXPECT_EQ(lazy.iteration_ns, 6000);
  // Under a budget of 1000, op 2's temporary wants a's room: a lands when
  // its copy ends (3000, op 2 waits 1000) and comes back from op 3.
  const SimResult tight = simulate(w, PlanMode::scheduled, plan, options(1000, test_link(1000)));
  EXPECT_EQ(tight.h2d_bytes, 1000u);
  EXPECT_EQ(tight.prefetches, 1u);
  EXPECT_EQ(tight.wasted_evictions, 0u);
  EXPECT_EQ(tight.peak_bytes, 1000u);
  EXPECT_EQ(tight.stall_ns, 1000);
}

TEST(Simulator, TheOldestEvictionGivesItsRoomFirst) {
  // Four 1000 ns ops; a (1000 B) by op 0, b (1000 B) by op 1, both read by
  // op 3; tmp (1000 B) at op 2. Budget 2000: op 2 wants 1000 B, and of a
  // (out after op 0, D2H 1000..2000) and b (after op 1, 2000..3000), a
  // lands; b stays, kept by its prefetch at op 3, which brings only a back
  // (3000..4000).
  TraceBuilder b;
  for (int i = 0; i < 4; ++i)
    b.op("op" + std::to_string(i), 1000);
  b.tensor("a", 1000, 0, {3}, 3);
  b.tensor("b", 1000, 1, {3}, 3);
  b.tensor("tmp", 1000, 2, {}, 2);
  const Workload w = build(b.take());
  const std::vector<ResolvedEntry> plan = {{0, 0, 3, 3, 0}, {1, 1, 3, 3, 1}};
  const SimResult r = simulate(w, PlanMode::scheduled, plan, options(2000));
  EXPECT_EQ(r.evictions, 2u);
  EXPECT_EQ(r.d2h_bytes, 2000u);
  EXPECT_EQ(r.h2d_bytes, 1000u);
  EXPECT_EQ(r.wasted_evictions, 1u);
  ASSERT_EQ(r.entry_cancelled.size(), 2u);
  EXPECT_EQ(r.entry_cancelled[0], 0);
  EXPECT_EQ(r.entry_cancelled[1], 1);
  EXPECT_EQ(r.peak_bytes, 2000u);
  EXPECT_EQ(r.iteration_ns, 5000);  // op 3 waits for a until 4000
}

TEST(Simulator, EvictionLowersThePeakUnderABudget) {
  const Workload w = build(six_ops());
  // Budget 1000: tmp (500) at op 2 needs a out. Evicted after op 0 with no
  // latency: D2H 1000..2000, so op 2 allocates at 2000 without waiting;
  // prefetch at op 3: H2D 3000..4000.
  const std::vector<ResolvedEntry> plan = {{0, 0, 3, 5, 0}};
  const SimResult r = simulate(w, PlanMode::scheduled, plan, options(1000));
  EXPECT_EQ(r.peak_bytes, 1000u);
  EXPECT_EQ(r.stall_ns, 0);
  EXPECT_EQ(r.forced_evictions, 0u);
  EXPECT_TRUE(r.fits);
}

TEST(Simulator, DuplexContentionSharesTheLink) {
  TraceBuilder b;
  for (int i = 0; i < 5; ++i)
    b.op("op" + std::to_string(i), 1000);
  b.tensor("x", 1000, 0, {3}, 3);
  b.tensor("y", 1500, 1, {4}, 4);
  const Workload w = build(b.take());
  ASSERT_EQ(w.tensors[0].name, "x");
  // x: out after op 0, back from op 2 for op 3; y: out after op 1, back
  // from op 4 for op 4.
  const std::vector<ResolvedEntry> plan = {{0, 0, 2, 3, 0}, {1, 1, 4, 4, 1}};
  // Full duplex: x D2H 1000..2000, H2D 2000..3000 (on time); y D2H
  // 2000..3500, H2D 4000..5500: op 4 waits 1500 and ends at 6500.
  const SimResult duplex = simulate(w, PlanMode::scheduled, plan, landing());
  EXPECT_EQ(duplex.stall_ns, 1500);
  EXPECT_EQ(duplex.iteration_ns, 6500);
  EXPECT_EQ(duplex.lower_bound_ns, 5000);
  // Shared: x D2H 1000..2000, y D2H 2000..3500, x H2D 3500..4500 (op 3
  // waits 1500, runs 4500..5500), y H2D 5500..7000 (op 4 waits 1500).
  const SimResult shared = simulate(w, PlanMode::scheduled, plan, landing(test_link(0, true)));
  EXPECT_EQ(shared.stall_ns, 3000);
  EXPECT_EQ(shared.iteration_ns, 8000);
  EXPECT_EQ(shared.lower_bound_ns, 5000);
  EXPECT_EQ(shared.h2d_bytes, 2500u);
  EXPECT_EQ(shared.d2h_bytes, 2500u);
}

// Op 0 makes b (3000 B) and a (1000 B), both read again by op 5; six
// 1000 ns ops, a link of 1 B/ns without latency.
trace::Trace two_out() {
  TraceBuilder b;
  for (int i = 0; i < 6; ++i)
    b.op("op" + std::to_string(i), 1000);
  b.tensor("b", 3000, 0, {5}, 5);
  b.tensor("a", 1000, 0, {5}, 5);
  return b.take();
}

TEST(Simulator, ACopyCalledOffBeforeItStartsStillRuns) {
  const Workload w = build(two_out());
  ASSERT_EQ(w.tensors[0].name, "b");
  // b leaves after op 0 (D2H 1000..4000); a queues behind it (4000..5000)
  // and its prefetch comes at op 1 (1000): a stays, but its copy was handed
  // to the driver and runs for nothing (Note [Cancelled copies]).
  const std::vector<ResolvedEntry> plan = {{0, 0, 4, 5, 0}, {1, 0, 1, 5, 1}};
  SimOptions o = landing();
  o.record_timeline = true;
  const SimResult r = simulate(w, PlanMode::scheduled, plan, o);
  EXPECT_EQ(r.d2h_bytes, 4000u);
  EXPECT_EQ(r.evictions, 2u);
  EXPECT_EQ(r.cancelled_evictions, 1u);
  EXPECT_EQ(r.wasted_evictions, 1u);
  ASSERT_EQ(r.entry_cancelled.size(), 2u);
  EXPECT_EQ(r.entry_cancelled[0], 0);
  EXPECT_EQ(r.entry_cancelled[1], 1);
  // b comes back at op 4 (4000..7000), op 5 waits until 7000.
  EXPECT_EQ(r.iteration_ns, 8000);
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const CopySpan& c : r.copies)
    if (!c.to_device) out.emplace_back(c.start_ns, c.end_ns);
  EXPECT_EQ(out, (std::vector<std::pair<int64_t, int64_t>>{{1000, 4000}, {4000, 5000}}));
}

TEST(Simulator, ACopyAlreadyRunningIsChargedAndCountedWasted) {
  const Workload w = build(two_out());
  // a leaves after op 0 on an idle engine (1000..2000) and is asked back
  // at op 1 (1000): the copy runs for nothing, a stays.
  const std::vector<ResolvedEntry> plan = {{1, 0, 1, 5, 0}};
  const SimResult r = simulate(w, PlanMode::scheduled, plan, options(UINT64_MAX));
  EXPECT_EQ(r.d2h_bytes, 1000u);
  EXPECT_EQ(r.wasted_evictions, 1u);
  EXPECT_EQ(r.cancelled_evictions, 1u);
  EXPECT_EQ(r.entry_cancelled[0], 1);
  EXPECT_EQ(r.h2d_bytes, 0u);
}

TEST(Simulator, TheNextUseOfATensorKeptWaitsForItsCopyOut) {
  // Six 1000 ns ops; b (3000 B) made by op 0 and read by ops 2 and 5. b
  // leaves after op 0 (D2H 1000..4000) and its prefetch comes at op 1: b
  // stays, and op 2, which may write it, waits for the copy reading it.
  TraceBuilder b;
  for (int i = 0; i < 6; ++i)
    b.op("op" + std::to_string(i), 1000);
  b.tensor("b", 3000, 0, {2, 5}, 5);
  const Workload w = build(b.take());
  const SimResult r =
      simulate(w, PlanMode::scheduled, {{0, 0, 1, 2, 0}}, options(UINT64_MAX));
  EXPECT_EQ(r.wasted_evictions, 1u);
  EXPECT_EQ(r.h2d_bytes, 0u);
  EXPECT_EQ(r.iteration_ns, 8000);  // ops 2..5 from 4000
  EXPECT_EQ(r.stall_ns, 2000);
}

// Three 1000 ns ops; a (1000 B) made by op 0 and read by op 2; tmp
// (1000 B) a temporary of op 1. Budget 1000: a is away while op 1 runs.
trace::Trace squeeze() {
  TraceBuilder b;
  for (int i = 0; i < 3; ++i)
    b.op("op" + std::to_string(i), 1000);
  b.tensor("a", 1000, 0, {2}, 2);
  b.tensor("tmp", 1000, 1, {}, 1);
  return b.take();
}

TEST(Bounds, OneTensorThatMustLeaveAndComeBack) {
  const Workload w = build(squeeze());
  // Out: a is released when op 0 ends (1000) and 1000 B take 1000 ns, so
  // op 1 starts at 2000 at the earliest and ends at 3000; in: a must be
  // back before op 2, another 1000 ns, and op 2 takes 1000: 5000 + two
  // latencies. The time-only bound is compute (3000) or 1000 B / 1 B/ns.
  for (int64_t latency : {0, 100}) {
    const Bounds b = lower_bounds(w, options(1000, test_link(latency)));
    EXPECT_EQ(b.compute_ns, 3000);
    EXPECT_EQ(b.time_only_ns, 3000);
    EXPECT_EQ(b.problem_ns, 5000 + 2 * latency) << latency;
    EXPECT_EQ(b.op, 1u);
    // The simulator's reactive plan meets it exactly.
    const SimResult r = simulate(w, PlanMode::lru, {}, options(1000, test_link(latency)));
    EXPECT_TRUE(r.fits);
    EXPECT_EQ(r.iteration_ns, 5000 + 2 * latency);
    EXPECT_EQ(r.lower_bound_ns, b.problem_ns);
    EXPECT_EQ(r.time_bound_ns, b.time_only_ns);
  }
  // With room for both nothing moves.
  EXPECT_EQ(lower_bounds(w, options(2000)).problem_ns, 3000);
}

TEST(Bounds, WeightsNotUsedYetLeaveForFree) {
  // w (1000 B) is resident at start and first read by op 2: it may have
  // left in the previous iteration, so the out side costs nothing; it must
  // still come back before op 2.
  TraceBuilder b;
  for (int i = 0; i < 3; ++i)
    b.op("op" + std::to_string(i), 1000);
  b.weight("w", 1000, {2});
  b.tensor("tmp", 1000, 1, {}, 1);
  const Workload w = build(b.take());
  const Bounds bounds = lower_bounds(w, options(1000));
  // op 1 runs 1000..2000; w back by op 2 from 2000: 1000 ns; op 2 ends 4000.
  EXPECT_EQ(bounds.problem_ns, 4000);
}

TEST(Simulator, UntouchedTensorsParkWhenTheyDoNotFitBesideThePeak) {
  // u (2000 B) is resident at start and touched by nothing; the iteration's
  // own peak is 1500 B (six_ops).
  TraceBuilder b;
  for (int i = 0; i < 6; ++i)
    b.op("op" + std::to_string(i), 1000);
  b.weight("u", 2000, {});
  b.tensor("a", 1000, 0, {5}, 5);
  b.tensor("tmp", 500, 2, {}, 2);
  const Workload w = build(b.take());
  ASSERT_EQ(w.tensors[0].name, "u");
  EXPECT_EQ(parked_at_start(w, 3500), (std::vector<uint8_t>{0, 0, 0}));
  EXPECT_EQ(parked_at_start(w, 3499), (std::vector<uint8_t>{1, 0, 0}));
  const SimResult kept = simulate(w, PlanMode::lru, {}, options(3500));
  EXPECT_EQ(kept.peak_bytes, 3500u);
  EXPECT_EQ(kept.d2h_bytes, 0u);
  // Parked: no copy at all, though u fit at the start.
  const SimResult parked = simulate(w, PlanMode::lru, {}, options(3000));
  EXPECT_EQ(parked.peak_bytes, 1500u);
  EXPECT_EQ(parked.d2h_bytes, 0u);
  EXPECT_EQ(parked.iteration_ns, 6000);
}

TEST(Simulator, AWrapEntryStartsOnTheHostAndLeavesAfterItsLastUse) {
  // w (1000 B) resident at start, read by ops 1 and 3, live at the end.
  TraceBuilder b;
  for (int i = 0; i < 6; ++i)
    b.op("op" + std::to_string(i), 1000);
  b.weight("w", 1000, {1, 3});
  b.tensor("x", 1000, 5, {}, 5);
  const Workload w = build(b.take());
  ASSERT_EQ(w.tensors[0].name, "w");
  // Back from op 0 (H2D 0..1000) for op 1; out after op 3 (D2H 4000..5000),
  // so op 5 finds room for x under a 1000 B budget.
  const std::vector<ResolvedEntry> plan = {{0, 3, 0, 1, 0}};
  ASSERT_TRUE(plan[0].wraps());
  const SimResult r = simulate(w, PlanMode::scheduled, plan, options(1000));
  EXPECT_TRUE(r.fits);
  EXPECT_EQ(r.peak_bytes, 1000u);
  EXPECT_EQ(r.h2d_bytes, 1000u);
  EXPECT_EQ(r.d2h_bytes, 1000u);
  EXPECT_EQ(r.forced_evictions, 0u);
  EXPECT_EQ(r.stall_ns, 0);
  EXPECT_EQ(r.iteration_ns, 6000);
}

TEST(Simulator, TheMemoryTimelineReachesThePeakWithinOneInstant) {
  // op1 takes no time: its 5000 B temporary comes and goes at 1000 ns.
  TraceBuilder b;
  b.op("op0", 1000);
  b.op("op1", 0);
  b.op("op2", 1000);
  b.tensor("a", 1000, 0, {2}, 2);
  b.tensor("tmp", 5000, 1, {}, 1);
  const Workload w = build(b.take());
  SimOptions o = options(UINT64_MAX);
  o.record_timeline = true;
  const SimResult r = simulate(w, PlanMode::scheduled, {}, o);
  EXPECT_EQ(r.peak_bytes, 6000u);
  uint64_t drawn = 0;
  for (size_t i = 0; i < r.memory.size(); ++i) {
    drawn = std::max(drawn, r.memory[i].bytes);
    if (i > 0) {
      EXPECT_GT(r.memory[i].time_ns, r.memory[i - 1].time_ns);
    }
  }
  EXPECT_EQ(drawn, 6000u);
  ASSERT_GE(r.memory.size(), 2u);
  EXPECT_EQ(r.memory.back().bytes, 0u);
}

TEST(Simulator, InfeasibleBudgetIsReportedExactly) {
  TraceBuilder b;
  for (int i = 0; i < 3; ++i)
    b.op("op" + std::to_string(i), 100);
  b.tensor("x", 1000, 0, {1}, 1);
  b.tensor("y", 700, 1, {2}, 2);
  const Workload w = build(b.take());
  // op 1 uses x and allocates y: 1700 bytes at once.
  const std::optional<Shortfall> s = check_budget(w, 1500);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->op, 1u);
  EXPECT_EQ(s->required_bytes, 1700u);
  EXPECT_EQ(s->over_bytes, 200u);
  ASSERT_EQ(s->largest.size(), 2u);
  EXPECT_EQ(w.tensors[s->largest[0]].name, "x");
  EXPECT_EQ(w.tensors[s->largest[1]].name, "y");
  EXPECT_FALSE(check_budget(w, 1700).has_value());
  const SimResult r = simulate(w, PlanMode::lru, {}, options(1500));
  EXPECT_FALSE(r.fits);
  ASSERT_TRUE(r.shortfall.has_value());
  EXPECT_EQ(r.shortfall->over_bytes, 200u);
}

// Four 1000 ns ops; t0 (1000 B) made by op 0 and used by op 3; t1 and t2
// are temporaries of ops 1 and 2. Budget 1000.
trace::Trace reactive_case() {
  TraceBuilder b;
  for (int i = 0; i < 4; ++i)
    b.op("op" + std::to_string(i), 1000);
  b.tensor("t0", 1000, 0, {3}, 3);
  b.tensor("t1", 1000, 1, {}, 1);
  b.tensor("t2", 1000, 2, {}, 2);
  return b.take();
}

TEST(Simulator, LruEvictsOnPressureAndFetchesOnUse) {
  const Workload w = build(reactive_case());
  // op 1 needs 1000: t0 is evicted (D2H 1000..2000), op 1 runs 2000..3000;
  // op 2 fits; op 3 fetches t0 (H2D 4000..5000) and runs 5000..6000.
  const SimResult r = simulate(w, PlanMode::lru, {}, options(1000));
  EXPECT_EQ(r.iteration_ns, 6000);
  EXPECT_EQ(r.stall_ns, 2000);
  EXPECT_EQ(r.infinite_memory_ns, 4000);
  EXPECT_EQ(r.evictions, 1u);
  EXPECT_EQ(r.forced_evictions, 1u);
  EXPECT_EQ(r.demand_fetches, 1u);
  EXPECT_EQ(r.d2h_bytes, 1000u);
  EXPECT_EQ(r.h2d_bytes, 1000u);
  EXPECT_EQ(r.peak_bytes, 1000u);
  EXPECT_TRUE(r.fits);
}

TEST(Simulator, OndemandPaysAFaultPerChunk) {
  const Workload w = build(reactive_case());
  // As lru, but the fetch is a fault: 1000 ns of transfer + one 2 MiB
  // chunk's 20 us fault latency: 4000..25000, op 3 runs 25000..26000.
  const SimResult r = simulate(w, PlanMode::ondemand, {}, options(1000));
  EXPECT_EQ(r.stall_ns, 1000 + 21000);
  EXPECT_EQ(r.iteration_ns, 26000);
}

TEST(Simulator, AnOpsFetchesAreIssuedTogether) {
  // o0..o4 of 1000 ns; a and b (1000 B each) are made at o0 and used at
  // o3; c and d at o1 and used at o4. Budget 2000. The plan sends a and b
  // out after o0 (one copy, D2H 1000..3000), so o1 allocates c and d at
  // 3000 and runs 3000..4000; o2 4000..5000. Their prefetch at o3 finds c
  // and d holding the budget, so o3 fetches them: out goes c (D2H
  // 5000..6000), in comes a (H2D 6000..7000); the copy out of d is issued
  // with it and queues behind c's (6000..7000), so b comes in 7000..8000
  // and o3 runs 8000..9000, not 9000..10000 as when b's room was made
  // only after a landed. o4 fetches c and d (9000..11000), runs to 12000.
  TraceBuilder b;
  for (int i = 0; i < 5; ++i)
    b.op("o" + std::to_string(i), 1000);
  b.tensor("a", 1000, 0, {3}, 3);
  b.tensor("b", 1000, 0, {3}, 3);
  b.tensor("c", 1000, 1, {4}, 4);
  b.tensor("d", 1000, 1, {4}, 4);
  const Workload w = build(b.take());
  const std::vector<ResolvedEntry> plan = {{0, 0, 3, 3, 0}, {1, 0, 3, 3, 0}};
  const SimResult r =
      simulate(w, PlanMode::scheduled, plan, SimOptions{2000, test_link(), 1.0, true});
  ASSERT_EQ(r.ops.size(), 5u);
  EXPECT_EQ(r.ops[3].start_ns, 8000);
  EXPECT_EQ(r.iteration_ns, 12000);
  EXPECT_EQ(r.forced_evictions, 2u);
  EXPECT_EQ(r.demand_fetches, 4u);
  EXPECT_EQ(r.peak_bytes, 2000u);
  EXPECT_TRUE(r.fits);
}

TEST(Simulator, TensorsBelowSwapMinNeverMove) {
  // six_ops under a 1000 B budget: the plan that evicts "a" fits (as in
  // EvictionLowersThePeakUnderABudget). With a swap_min above a's size the
  // runtime would keep it in a slab: the eviction is skipped, nothing can
  // make room for tmp at op 2, and the budget is not met.
  const Workload w = build(six_ops());
  const std::vector<ResolvedEntry> plan = {{0, 0, 3, 5, 0}};
  SimOptions pinned = options(1000);
  pinned.swap_min_bytes = 2000;
  const SimResult r = simulate(w, PlanMode::scheduled, plan, pinned);
  EXPECT_EQ(r.evictions, 0u);
  EXPECT_EQ(r.d2h_bytes, 0u);
  EXPECT_FALSE(r.fits);
  // A workload charged at the allocator's sizes marks its slab tensors,
  // which stay put without a swap_min too.
  const Workload charged = with_charged_sizes(w, 2000);
  ASSERT_TRUE(charged.tensors[0].slab);
  EXPECT_EQ(charged.tensors[0].size_bytes % 512, 0u);  // a slab piece, in 512-byte units
  EXPECT_GE(charged.tensors[0].size_bytes, w.tensors[0].size_bytes);
  EXPECT_LT(charged.tensors[0].size_bytes, w.tensors[0].size_bytes + 512);
  const SimResult rc =
      simulate(charged, PlanMode::scheduled, plan, options(charged.tensors[0].size_bytes));
  EXPECT_EQ(rc.evictions, 0u);
  const SimResult moves = simulate(w, PlanMode::scheduled, plan, options(1000));
  EXPECT_EQ(moves.evictions, 1u);
  EXPECT_TRUE(moves.fits);
}

}  // namespace
}  // namespace cuswap::policy::test
