// The replay's schedule and runtime identities (bench/replay/schedule.h,
// Note [Replay runtime identities]) on a small hand-made workload.
#include <gtest/gtest.h>

#include "bench/replay/schedule.h"
#include "bench/replay/translate.h"

namespace cuswap::bench {
namespace {

using policy::kResidentAtStart;

policy::WorkTensor tensor(const char* name, uint64_t size, uint32_t alloc_op, uint32_t free_op,
                          std::vector<uint32_t> uses, uint32_t ordinal) {
  policy::WorkTensor t;
  t.name = name;
  t.size_bytes = size;
  t.alloc_op = alloc_op;
  t.free_op = free_op;
  t.uses = std::move(uses);
  t.ordinal = ordinal;
  return t;
}

// Four ops. W: a weight (resident, never freed); H1: carried in, paired with
// T1 (same size, left for the next iteration); H2: carried in with nothing
// to pair; A: an activation; T2: left for the next iteration, unpaired; Z:
// 0 bytes. Tensors are listed with the residents out of ordinal order.
policy::Workload small_workload() {
  policy::Workload w;
  for (const char* name : {"a", "b", "c", "d"}) {
    policy::WorkOp op;
    op.name = name;
    op.duration_ns = 1000;
    w.ops.push_back(op);
  }
  w.tensors = {
      tensor("H1", 64, kResidentAtStart, 2, {0, 2}, 1),
      tensor("W", 100, kResidentAtStart, 4, {1}, 0),
      tensor("H2", 32, kResidentAtStart, 1, {1}, 2),
      tensor("A", 1000, 0, 1, {0, 1}, 0),
      tensor("T1", 64, 1, 4, {1, 3}, 1),
      tensor("T2", 48, 2, 4, {2}, 2),
      tensor("Z", 0, 2, 2, {2}, 3),
  };
  w.index();
  return w;
}

enum : uint32_t { H1, W, H2, A, T1, T2, Z };

TEST(ReplaySchedule, AllocationsAreCountedFromTheMarkAndZeroBytesAreSkipped) {
  const policy::Workload w = small_workload();
  const Schedule s = build_schedule(w, 1.0);
  EXPECT_EQ(s.runtime_ordinal[A], 0u);
  EXPECT_EQ(s.runtime_ordinal[T1], 1u);
  EXPECT_EQ(s.runtime_ordinal[T2], 2u);
  EXPECT_EQ(s.runtime_ordinal[Z], kNone);
  for (uint32_t t : {A, T1, T2})
    EXPECT_EQ(s.runtime_resident[t], 0) << w.tensors[t].name;
}

TEST(ReplaySchedule, ResidentRanksFollowTheSteadyStateAllocationOrder) {
  const policy::Workload w = small_workload();
  const Schedule s = build_schedule(w, 1.0);
  // The counter is rank 0; then weights, paired heads (by their tails'
  // allocation), unpaired heads (reallocated at the end of an iteration).
  EXPECT_EQ(s.setup, (std::vector<uint32_t>{W, H1, H2}));
  EXPECT_EQ(s.runtime_ordinal[W], 1u);
  EXPECT_EQ(s.runtime_ordinal[H1], 2u);
  EXPECT_EQ(s.runtime_ordinal[H2], 3u);
  for (uint32_t t : {W, H1, H2})
    EXPECT_EQ(s.runtime_resident[t], 1) << w.tensors[t].name;
}

TEST(ReplaySchedule, TailsBecomeHeadsOrGoAtTheEnd) {
  const policy::Workload w = small_workload();
  const Schedule s = build_schedule(w, 1.0);
  EXPECT_EQ(s.becomes[T1], H1);
  EXPECT_EQ(s.carried_from[H1], T1);
  EXPECT_EQ(s.becomes[T2], kNone);
  EXPECT_EQ(s.end_frees, (std::vector<uint32_t>{T2}));
  EXPECT_EQ(s.end_reallocs, (std::vector<uint32_t>{H2}));
  // Heads are freed in the window like anything else; Z never exists.
  EXPECT_EQ(s.frees[1], (std::vector<uint32_t>{A, H2}));
  EXPECT_EQ(s.frees[2], (std::vector<uint32_t>{H1}));
  EXPECT_EQ(s.allocs[2], (std::vector<uint32_t>{T2}));
}

TEST(ReplaySchedule, OneLaunchPerOpWritingWhatItAllocates) {
  const policy::Workload w = small_workload();
  const Schedule s = build_schedule(w, 2.0);
  ASSERT_EQ(s.launches.size(), 4u);
  for (uint32_t op = 0; op < 4; ++op) {
    EXPECT_EQ(s.first_launch[op], op);
    EXPECT_EQ(s.last_launch[op], op);
    EXPECT_EQ(s.launches[op].slots, 4u);
    EXPECT_EQ(s.launches[op].ordinal, op);
    EXPECT_EQ(s.launches[op].duration_ns, 2000);
  }
  EXPECT_EQ(s.launches[0].tensors, (std::vector<uint32_t>{H1, A}));
  EXPECT_EQ(s.launches[0].writes, (std::vector<uint8_t>{0, 1}));
}

TEST(ReplaySchedule, AnOpOverManyBuffersIsSeveralLaunches) {
  policy::Workload w;
  w.ops.resize(2);
  w.ops[0].name = "wide";
  w.ops[1].name = "narrow";
  for (uint32_t i = 0; i < 170; ++i)
    w.tensors.push_back(tensor("x", 512, 0, 0, {0}, i));
  w.index();
  const Schedule s = build_schedule(w, 1.0);
  ASSERT_EQ(s.launches.size(), 3u);
  EXPECT_EQ(s.launches[0].slots, 160u);
  EXPECT_EQ(s.launches[1].slots, 16u);
  EXPECT_EQ(s.launches[1].tensors.size(), 10u);
  EXPECT_EQ(s.launches[2].slots, 4u);  // an op that touches nothing still launches
  EXPECT_EQ(s.launches[2].ordinal, 0u);
  const policy::OpRef first = runtime_op(s, 0, false), last = runtime_op(s, 0, true);
  EXPECT_EQ(first.name, "cuswap_replay_op160");
  EXPECT_EQ(first.ordinal, 0u);
  EXPECT_EQ(last.name, "cuswap_replay_op16");
  EXPECT_EQ(last.ordinal, 0u);
  EXPECT_EQ(runtime_op(s, 1, false).name, "cuswap_replay_op4");
}

TEST(ReplayTranslate, EntriesTakeTheRuntimeIdentities) {
  const policy::Workload w = small_workload();
  const Schedule s = build_schedule(w, 1.0);
  policy::Plan plan;
  plan.planner = "test";
  plan.device = 3;
  std::vector<policy::ResolvedEntry> entries(3);
  entries[0] = {A, 0, 1, 1, 0, true, true};
  entries[1] = {H1, 0, 0, 0, 1, false, true};  // comes back only
  entries[2] = {Z, 0, 1, 1, 2, true, true};    // never allocated: dropped
  const policy::Plan out = translate_plan(w, s, plan, entries, 0, 12345);
  EXPECT_EQ(out.device, 0);
  EXPECT_EQ(out.budget_bytes, 12345u);
  ASSERT_EQ(out.entries.size(), 2u);
  const policy::PlanEntry& a = out.entries[0];
  EXPECT_FALSE(a.tensor.resident_at_start);
  EXPECT_EQ(a.tensor.ordinal, 0u);
  EXPECT_EQ(a.tensor.size_bytes, 1000u);
  EXPECT_EQ(a.evict_after.name, "cuswap_replay_op4");
  EXPECT_EQ(a.evict_after.ordinal, 0u);
  EXPECT_EQ(a.prefetch_at.ordinal, 1u);
  EXPECT_EQ(a.next_use.ordinal, 1u);
  const policy::PlanEntry& h = out.entries[1];
  EXPECT_TRUE(h.tensor.resident_at_start);
  EXPECT_EQ(h.tensor.ordinal, 2u);
  EXPECT_FALSE(h.leaves);
  EXPECT_TRUE(h.returns);
  EXPECT_EQ(h.group, 1u);
}

TEST(ReplaySchedule, BatchScalingLeavesWeightsAndCarriedStateAlone) {
  policy::Workload w = small_workload();
  scale_batch(w, 3.0);
  EXPECT_EQ(w.tensors[A].size_bytes, 3000u);
  EXPECT_EQ(w.tensors[W].size_bytes, 100u);
  EXPECT_EQ(w.tensors[T1].size_bytes, 64u);
  EXPECT_EQ(w.ops[0].duration_ns, 3000);
}

// Note [Replay workspaces]: a workspace per convolution, allocated after
// its outputs and freed after it, of a size that differs from one
// convolution to the next and not from one iteration to the next.
TEST(ReplaySchedule, WorkspacesFollowConvolutions) {
  policy::Workload w;
  for (const char* name : {"conv1/Conv2D", "relu", "aten::cudnn_convolution", "Conv2DBackprop"}) {
    policy::WorkOp op;
    op.name = name;
    op.duration_ns = 1000;
    w.ops.push_back(op);
  }
  w.tensors = {
      tensor("x", 64u << 20, kResidentAtStart, 4, {0}, 0),
      tensor("y", 32u << 20, 0, 2, {0, 1, 2}, 0),
      tensor("z", 8u << 20, 2, 4, {2, 3}, 1),
  };
  w.index();
  policy::Workload again = w;
  ASSERT_EQ(add_workspaces(w), 3u) << "every op named a convolution, any case";
  ASSERT_EQ(add_workspaces(again), 3u);
  EXPECT_EQ(scratch_tensors(w), 3u);
  ASSERT_EQ(w.tensors.size(), 6u);
  std::vector<uint64_t> sizes;
  for (uint32_t t = 3; t < 6; ++t) {
    const policy::WorkTensor& ws = w.tensors[t];
    EXPECT_EQ(ws.alloc_op, ws.free_op) << ws.name;
    EXPECT_EQ(ws.uses, std::vector<uint32_t>{ws.alloc_op}) << ws.name;
    EXPECT_NE(ws.alloc_op, 1u) << "relu asks for none";
    EXPECT_GE(ws.size_bytes, uint64_t{1} << 20);
    EXPECT_EQ(ws.size_bytes, again.tensors[t].size_bytes) << "the same layer, the same size";
    sizes.push_back(ws.size_bytes);
  }
  EXPECT_LE(w.tensors[3].size_bytes, 64u << 20) << "at most the op's largest tensor";
  EXPECT_GE(w.tensors[3].size_bytes, 16u << 20) << "at least a quarter of it";
  EXPECT_NE(sizes[0], sizes[1]);
  // Allocated after the op's outputs: z before op 2's workspace.
  const Schedule s = build_schedule(w, 1.0);
  ASSERT_EQ(s.allocs[2].size(), 2u);
  EXPECT_EQ(w.tensors[s.allocs[2][0]].name, "z");
  EXPECT_EQ(s.frees[2].back(), 4u) << "op 2's workspace (tensor 4) is freed after it";
}

}  // namespace
}  // namespace cuswap::bench
