// The run-time cursor (policy/follower.h) and iteration detection
// (policy/iteration_detector.h), fed event sequences directly.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/follower.h"
#include "common/iteration_detector.h"

namespace cuswap::policy {
namespace {

using Live = PlanFollower::LiveBuffer;

OpRef op(const std::string& name, uint32_t ordinal, uint32_t index) {
  return OpRef{name, ordinal, index};
}

// A step of `layers` forward launches ("fwd") and as many backward ones
// ("bwd"), activation i of (i + 1) MiB allocated before fwd i; the plan
// moves activation 0 out after fwd 0 and back at bwd `layers - 3` for bwd
// `layers - 1`, and the weight (resident, rank 1 of 2) around the step's
// end (a wrap entry).
constexpr uint32_t kLayers = 6;
constexpr uint64_t kMiB = 1 << 20;

Plan step_plan() {
  Plan plan;
  PlanEntry a;
  a.tensor = TensorRef{false, 0, kMiB, 0, "act0"};
  a.evict_after = op("fwd", 0, 0);
  a.prefetch_at = op("bwd", kLayers - 3, 2 * kLayers - 3);
  a.next_use = op("bwd", kLayers - 1, 2 * kLayers - 1);
  plan.entries.push_back(a);
  PlanEntry w;
  w.tensor = TensorRef{true, 1, 64 * kMiB, 0, "weight"};
  w.next_use = op("fwd", 0, 0);
  w.prefetch_at = op("fwd", 0, 0);
  w.evict_after = op("bwd", kLayers - 1, 2 * kLayers - 1);
  w.group = 1;
  plan.entries.push_back(w);
  return plan;
}

struct Step {
  std::vector<PlanFollower::Actions> actions;  // per launch
  std::vector<std::string> names;
};

// Runs one step; allocation ids start at `first_id`. `order` permutes the
// allocations (they all happen before the first launch).
Step run_step(PlanFollower& f, uint64_t first_id, const std::vector<uint32_t>& order = {}) {
  const std::vector<Live> live = {{1, 8}, {2, 64 * kMiB}};
  f.begin_iteration(live);
  for (uint32_t i = 0; i < kLayers; ++i) {
    const uint32_t layer = order.empty() ? i : order[i];
    f.on_alloc(first_id + layer, (layer + 1) * kMiB);
  }
  Step s;
  for (uint32_t i = 0; i < 2 * kLayers; ++i) {
    s.names.push_back(i < kLayers ? "fwd" : "bwd");
    s.actions.emplace_back();
    f.on_launch(s.names.back(), s.actions.back());
  }
  for (uint32_t i = 0; i < kLayers; ++i)
    f.on_free(first_id + i);
  return s;
}

TEST(PlanFollower, StartsEachCopyAtItsLaunch) {
  PlanFollower f(step_plan());
  ASSERT_EQ(f.entries(), 2u);
  Step s = run_step(f, 100);
  EXPECT_TRUE(f.following());
  // fwd 0: the weight comes back before it, activation 0 leaves after it.
  ASSERT_EQ(s.actions[0].prefetch.size(), 1u);
  EXPECT_EQ(s.actions[0].prefetch[0].buffer_id, 2u);
  ASSERT_EQ(s.actions[0].evict.size(), 1u);
  EXPECT_EQ(s.actions[0].evict[0].buffer_id, 100u);
  // bwd 3 (launch 9) fetches activation 0 back for bwd 5 (launch 11).
  ASSERT_EQ(s.actions[2 * kLayers - 3].prefetch.size(), 1u);
  EXPECT_EQ(s.actions[2 * kLayers - 3].prefetch[0].buffer_id, 100u);
  ASSERT_EQ(s.actions[2 * kLayers - 1].uses.size(), 1u);
  // The weight leaves after the last launch.
  ASSERT_EQ(s.actions[2 * kLayers - 1].evict.size(), 1u);
  EXPECT_EQ(s.actions[2 * kLayers - 1].evict[0].buffer_id, 2u);
  for (uint32_t i = 1; i < 2 * kLayers - 3; ++i)
    EXPECT_TRUE(s.actions[i].prefetch.empty()) << i;
}

TEST(PlanFollower, ReorderedAllocationsBindBySize) {
  PlanFollower f(step_plan());
  // Activations 0 and 1 swap places: ordinal 0 is now 2 MiB, activation 0
  // comes second.
  Step s = run_step(f, 200, {1, 0, 2, 3, 4, 5});
  EXPECT_TRUE(f.following()) << f.mismatch();
  ASSERT_EQ(s.actions[0].evict.size(), 1u);
  EXPECT_EQ(s.actions[0].evict[0].buffer_id, 200u);  // activation 0's buffer, not ordinal 0's
}

// Layers of one size, and a plan that moves only the third layer's buffer:
// the two before it, which the plan keeps, must not take its place.
Plan third_layer_plan() {
  Plan plan;
  PlanEntry e;
  e.tensor = TensorRef{false, 2, 4 * kMiB, 0, "layer2"};
  e.evict_after = op("fwd", 0, 0);
  e.prefetch_at = op("bwd", 0, 1);
  e.next_use = op("bwd", 1, 2);
  plan.entries.push_back(e);
  return plan;
}

uint64_t evicted_buffer(PlanFollower& f, const std::vector<uint64_t>& sizes) {
  f.begin_iteration({});
  for (uint64_t i = 0; i < sizes.size(); ++i)
    f.on_alloc(100 + i, sizes[i]);
  PlanFollower::Actions a;
  f.on_launch("fwd", a);
  return a.evict.size() == 1 ? a.evict[0].buffer_id : 0;
}

TEST(PlanFollower, AnAllocationThePlanDoesNotNameKeepsOffALaterOnesTensor) {
  PlanFollower f(third_layer_plan());
  EXPECT_EQ(evicted_buffer(f, {4 * kMiB, 4 * kMiB, 4 * kMiB, 4 * kMiB}), 102u) << f.mismatch();
  EXPECT_TRUE(f.following()) << f.mismatch();
}

TEST(PlanFollower, ATensorAllocatedEarlyIsBoundWhenItsOrdinalGoesBy) {
  PlanFollower f(third_layer_plan());
  // The third layer's buffer comes first, a 1 MiB workspace takes ordinal 2.
  EXPECT_EQ(evicted_buffer(f, {4 * kMiB, kMiB, kMiB, kMiB}), 100u) << f.mismatch();
  // And late: ordinal 2 is another size, the 4 MiB buffer comes next.
  EXPECT_EQ(evicted_buffer(f, {kMiB, kMiB, kMiB, 4 * kMiB}), 103u) << f.mismatch();
  EXPECT_TRUE(f.following()) << f.mismatch();
}

TEST(PlanFollower, AChangedPatternStopsFollowingAndGoesStale) {
  PlanFollower f(step_plan());
  (void)run_step(f, 100);
  EXPECT_TRUE(f.following());
  for (uint32_t round = 0; round < kReplanAfter; ++round) {
    EXPECT_FALSE(f.stale());
    // A last partial batch: every activation is half the size.
    const std::vector<Live> live = {{1, 8}, {2, 64 * kMiB}};
    f.begin_iteration(live);
    PlanFollower::Actions a;
    for (uint32_t i = 0; i < 2 * kMatchWindow + 2; ++i)
      f.on_alloc(1000 + i, (i + 1) * kMiB / 2 + 4096);
    EXPECT_FALSE(f.following());
    EXPECT_NE(f.mismatch().find("did not come"), std::string::npos) << f.mismatch();
    f.on_launch("fwd", a);
    EXPECT_TRUE(a.evict.empty());  // nothing is started once it no longer matches
    EXPECT_TRUE(a.prefetch.empty());
  }
  const std::vector<Live> live = {{1, 8}, {2, 64 * kMiB}};
  f.begin_iteration(live);
  EXPECT_TRUE(f.stale());
  EXPECT_EQ(f.stats().mismatched_iterations, kReplanAfter);
  EXPECT_EQ(f.stats().followed_iterations, 1u);
}

TEST(PlanFollower, AMissingResidentBufferIsAMismatch) {
  PlanFollower f(step_plan());
  const std::vector<Live> live = {{1, 8}, {2, 32 * kMiB}};  // the weight is another size
  f.begin_iteration(live);
  EXPECT_FALSE(f.following());
  EXPECT_NE(f.mismatch().find("67108864 bytes"), std::string::npos) << f.mismatch();
}

TEST(PlanFollower, ALatePrefetchMovesItsTriggerEarlierEachTime) {
  PlanFollower f(step_plan());
  Step s = run_step(f, 100);
  const uint32_t entry = s.actions[2 * kLayers - 1].uses[0].entry;
  f.report_late(entry, 5000);
  s = run_step(f, 300);  // the move happens at this step's start
  EXPECT_EQ(f.stats().triggers_moved, 1u);
  EXPECT_EQ(f.stats().late_ns, 5000u);
  EXPECT_TRUE(s.actions[2 * kLayers - 3].prefetch.empty());
  ASSERT_EQ(s.actions[2 * kLayers - 4].prefetch.size(), 1u);  // one launch earlier
  EXPECT_EQ(s.actions[2 * kLayers - 4].prefetch[0].buffer_id, 300u);
  f.report_late(entry, 5000);
  s = run_step(f, 400);
  ASSERT_EQ(s.actions[2 * kLayers - 6].prefetch.size(), 1u);  // then two
  // On time from then on: it stays.
  s = run_step(f, 500);
  s = run_step(f, 600);
  ASSERT_EQ(s.actions[2 * kLayers - 6].prefetch.size(), 1u);
  EXPECT_EQ(f.stats().triggers_moved, 2u);
}

// Note [Moving triggers]: an iteration after moves that fetched more on
// demand than the one before puts the moved triggers back, for good.
TEST(PlanFollower, MovesThatMakeRoomRunShortAreUndone) {
  PlanFollower f(step_plan());
  Step s = run_step(f, 100);
  const uint32_t entry = s.actions[2 * kLayers - 1].uses[0].entry;
  f.report_late(entry, 5000);
  s = run_step(f, 300);  // moved one launch earlier at this step's start
  ASSERT_EQ(s.actions[2 * kLayers - 4].prefetch.size(), 1u);
  f.report_late(entry, 5000);
  f.report_on_demand(0);
  s = run_step(f, 400);  // moved two more
  ASSERT_EQ(s.actions[2 * kLayers - 6].prefetch.size(), 1u);
  f.report_late(entry, 5000);
  f.report_on_demand(3);  // that step fetched on demand
  s = run_step(f, 500);
  ASSERT_EQ(s.actions[2 * kLayers - 4].prefetch.size(), 1u) << "back where it was";
  EXPECT_TRUE(s.actions[2 * kLayers - 6].prefetch.empty());
  EXPECT_EQ(f.stats().triggers_moved_back, 1u);
  // Late again: it stays.
  f.report_late(entry, 5000);
  f.report_on_demand(0);
  s = run_step(f, 600);
  ASSERT_EQ(s.actions[2 * kLayers - 4].prefetch.size(), 1u);
  EXPECT_EQ(f.stats().triggers_moved, 2u);
}

TEST(PlanFollower, ATriggerNeverMovesBeforeItsEviction) {
  PlanFollower f(step_plan());
  Step s = run_step(f, 100);
  const uint32_t entry = s.actions[2 * kLayers - 1].uses[0].entry;
  for (uint64_t round = 0; round < 8; ++round) {
    f.report_late(entry, 1000);
    s = run_step(f, 1000 * (round + 2));
  }
  // Launch 1 is the first after the eviction at launch 0.
  ASSERT_EQ(s.actions[1].prefetch.size(), 1u);
  EXPECT_TRUE(s.actions[0].prefetch.size() == 1 && s.actions[0].prefetch[0].buffer_id == 2u);
}

TEST(PlanFollower, OneSidedEntriesStartOneCopy) {
  Plan plan;
  PlanEntry leaving;
  leaving.tensor = TensorRef{false, 0, kMiB, 0, "tail"};
  leaving.evict_after = op("fwd", 0, 0);
  leaving.returns = false;
  PlanEntry returning;
  returning.tensor = TensorRef{true, 1, 64 * kMiB, 0, "head"};
  returning.prefetch_at = op("bwd", 0, kLayers);
  returning.next_use = op("bwd", 1, kLayers + 1);
  returning.leaves = false;
  plan.entries = {leaving, returning};
  PlanFollower f(plan);
  Step s = run_step(f, 100);
  size_t prefetches = 0, evictions = 0;
  for (const auto& a : s.actions) {
    prefetches += a.prefetch.size();
    evictions += a.evict.size();
  }
  EXPECT_EQ(prefetches, 1u);
  EXPECT_EQ(evictions, 1u);
  EXPECT_EQ(s.actions[kLayers].prefetch.at(0).buffer_id, 2u);
}

// ---------------------------------------------------------------------------

std::vector<uint64_t> loop_body() {
  // Kernels repeat inside a step too (1 appears four times).
  return {1, 2, 1, 3, 4, 1, 5, 6, 1, 7, 8, 9};
}

TEST(IterationDetector, FindsThePeriodAfterStartUpWork) {
  IterationDetector d;
  for (uint64_t key : {100, 101, 102})
    EXPECT_FALSE(d.on_launch(key));  // start-up
  std::vector<uint64_t> boundaries;
  uint64_t index = 3;
  const std::vector<uint64_t> body = loop_body();
  for (int step = 0; step < 6; ++step)
    for (uint64_t key : body) {
      if (d.on_launch(key)) boundaries.push_back(index);
      ++index;
    }
  EXPECT_EQ(d.period(), body.size());
  ASSERT_GE(boundaries.size(), 3u);
  for (size_t i = 1; i < boundaries.size(); ++i)
    EXPECT_EQ(boundaries[i] - boundaries[i - 1], body.size());
  // Every boundary starts the same launch of the body.
  const uint64_t phase = (boundaries[0] - 3) % body.size();
  for (uint64_t b : boundaries)
    EXPECT_EQ((b - 3) % body.size(), phase);
}

TEST(IterationDetector, AChangedLoopStartsOver) {
  IterationDetector d;
  const std::vector<uint64_t> body = loop_body();
  for (int step = 0; step < 4; ++step)
    for (uint64_t key : body)
      (void)d.on_launch(key);
  ASSERT_EQ(d.period(), body.size());
  (void)d.on_launch(999);  // something new
  EXPECT_EQ(d.period(), 0u);
  std::vector<uint64_t> longer = body;
  longer.push_back(10);
  for (int step = 0; step < 4; ++step)
    for (uint64_t key : longer)
      (void)d.on_launch(key);
  EXPECT_EQ(d.period(), longer.size());
}

TEST(IterationDetector, ALoopOfAFewLaunchesHasNoSteps) {
  // A repeat of three is not a step, and nor is any multiple of it: every
  // one repeats, so none of them tells where a step would begin.
  for (uint64_t few : {1, 3, 7}) {
    IterationDetector d;
    size_t boundaries = 0;
    for (uint64_t i = 0; i < 5000; ++i)
      boundaries += d.on_launch(i % few) ? 1 : 0;
    EXPECT_EQ(d.period(), 0u) << few;
    EXPECT_EQ(boundaries, 0u) << few;
  }
  // Eight launches that differ are one.
  IterationDetector d;
  for (uint64_t i = 0; i < 100; ++i)
    (void)d.on_launch(i % 8);
  EXPECT_EQ(d.period(), 8u);
}

TEST(IterationDetector, ARepeatedLayerGivesWayToTheWholeStep) {
  // Ten identical "layers" of 8 launches, then a 4-launch tail: the layer
  // is found first, breaks at the tail, and the step (84) is found later.
  std::vector<uint64_t> step;
  for (int layer = 0; layer < 10; ++layer)
    for (uint64_t k = 1; k <= 8; ++k)
      step.push_back(k);
  for (uint64_t k = 90; k < 94; ++k)
    step.push_back(k);
  IterationDetector d;
  for (int s = 0; s < 12; ++s)
    for (uint64_t key : step)
      (void)d.on_launch(key);
  EXPECT_EQ(d.period(), step.size());
}

}  // namespace
}  // namespace cuswap::policy
