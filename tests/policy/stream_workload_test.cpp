// Note [Workloads from an allocation stream]: workloads of traces with
// allocations and frees but no ops, built here as a memory snapshot has
// them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "policy/workload.h"

namespace cuswap::policy::test {
namespace {

// An allocation stream, one event a microsecond, as a snapshot without
// times has it.
class Stream {
 public:
  uint32_t alloc(uint64_t bytes, std::string name) {
    trace::Tensor t;
    t.name = std::move(name);
    t.size_bytes = bytes;
    t.alloc_ns = next();
    trace.tensors.push_back(std::move(t));
    return static_cast<uint32_t>(trace.tensors.size() - 1);
  }
  void free(uint32_t tensor) { trace.tensors[tensor].free_ns = next(); }
  uint32_t persistent(uint64_t bytes) {
    trace::Tensor t;
    t.name = "weight";
    t.size_bytes = bytes;
    t.persistent = true;
    trace.tensors.push_back(std::move(t));
    return static_cast<uint32_t>(trace.tensors.size() - 1);
  }
  // A training step of eight events: two feature maps kept for the
  // backward pass, scratch memory, a gradient; each step frees what it made.
  void step(int index) {
    const uint32_t a = alloc(1000, "a" + std::to_string(index));
    const uint32_t b = alloc(2000, "b");
    const uint32_t scratch = alloc(5000, "scratch");
    free(scratch);
    const uint32_t g = alloc(3000, "g");
    free(a);
    free(b);
    free(g);
  }
  trace::Trace trace;

 private:
  int64_t next() { return 1000 * events_++; }
  int64_t events_ = 0;
};

void expect_well_formed(const Workload& w) {
  const auto n = static_cast<uint32_t>(w.ops.size());
  for (const WorkTensor& t : w.tensors) {
    for (uint32_t u : t.uses) {
      if (!t.resident_at_start()) {
        EXPECT_GE(u, t.alloc_op) << t.name;
      }
      EXPECT_LE(u, t.free_op) << t.name;
      EXPECT_LT(u, n) << t.name;
    }
  }
}

TEST(StreamWorkload, TheRepeatingStepIsTheWindow) {
  Stream s;
  s.persistent(7000);
  const uint32_t warmup = s.alloc(9000, "start-up");  // does not repeat
  s.free(warmup);
  for (int i = 0; i < 5; ++i)
    s.step(i);
  const uint32_t cut = s.alloc(1000, "a5");  // a step cut short by the snapshot
  (void)cut;
  s.trace.format = trace::TraceFormat::torch_snapshot;
  Workload w;
  std::string error;
  ASSERT_TRUE(build_workload(s.trace, {}, w, error)) << error;
  ASSERT_EQ(w.ops.size(), 8u) << "one step: four allocations, four frees";
  EXPECT_EQ(w.ops[0].name, "alloc") << "a step starts where the fewest bytes are live";
  EXPECT_EQ(w.ops[7].name, "free");
  ASSERT_EQ(w.tensors.size(), 5u) << "the weight and the step's four buffers";
  const WorkTensor& weight = w.tensors[0];
  EXPECT_TRUE(weight.resident_at_start());
  EXPECT_EQ(weight.free_op, 8u);
  EXPECT_TRUE(weight.uses.empty()) << "a snapshot does not say when weights are read";
  EXPECT_EQ(w.tensors[1].name, "a2") << "the middle of the five whole steps";
  const WorkTensor& scratch = w.tensors[3];
  EXPECT_EQ(scratch.size_bytes, 5000u);
  EXPECT_EQ(scratch.alloc_op, 2u);
  EXPECT_EQ(scratch.free_op, 3u) << "freed after the op that reads it last";
  EXPECT_EQ(scratch.uses, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(w.ops[1].duration_ns, 1000) << "an op lasts until the next event";
  expect_well_formed(w);
  const std::vector<uint64_t> live = live_bytes_per_op(w);
  EXPECT_EQ(*std::max_element(live.begin(), live.end()), 7000u + 1000u + 2000u + 5000u);
}

TEST(StreamWorkload, WithoutARepeatTheWholeHistoryIsTheWindow) {
  Stream s;
  uint32_t live = s.alloc(4096, "first");
  for (uint64_t i = 1; i < 40; ++i) {
    const uint32_t next = s.alloc(4096 + 512 * i, "next");
    s.free(live);
    live = next;
  }
  Workload w;
  std::string error;
  ASSERT_TRUE(build_workload(s.trace, {}, w, error)) << error;
  EXPECT_EQ(w.ops.size(), 79u);
  EXPECT_EQ(w.tensors.size(), 40u);
  EXPECT_TRUE(w.tensors.back().free_op == w.ops.size()) << "live at the end";
  expect_well_formed(w);
}

TEST(StreamWorkload, ASampledProfileIsRefused) {
  Stream s;
  s.alloc(4096, "sampled");
  s.trace.sampled = true;
  Workload w;
  std::string error;
  EXPECT_FALSE(build_workload(s.trace, {}, w, error));
  EXPECT_NE(error.find("only a sample"), std::string::npos) << error;
}

}  // namespace
}  // namespace cuswap::policy::test
