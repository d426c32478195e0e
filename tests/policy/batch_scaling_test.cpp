// Batch scaling on traces built in code where sizes and durations are
// exact lines in the batch: size = 100 + 50 B bytes, duration = 1000 + 500 B ns.
#include <gtest/gtest.h>

#include "policy/batch_scaling.h"
#include "tests/policy/synthetic.h"

namespace cuswap::policy::test {
namespace {

// Three ops; x made by op 0 and read by op 2; y a temporary of op 1.
// Peak at op 1: x + y = 200 + 100 B bytes.
Workload at_batch(uint32_t batch) {
  TraceBuilder b;
  for (int i = 0; i < 3; ++i)
    b.op("op" + std::to_string(i), 1000 + 500 * batch);
  b.tensor("x", 100 + 50 * batch, 0, {2}, 2);
  b.tensor("y", 100 + 50 * batch, 1, {}, 1);
  Workload w;
  std::string error;
  EXPECT_TRUE(build_workload(b.take(), {}, w, error)) << error;
  return w;
}

TEST(BatchScaling, FitsTheLinesExactly) {
  BatchModel model;
  std::string error;
  ASSERT_TRUE(fit_batch_model({{4, at_batch(4)}, {2, at_batch(2)}}, model, error)) << error;
  EXPECT_EQ(model.batches, (std::vector<uint32_t>{2, 4}));
  EXPECT_EQ(model.matched_tensors, 2u);
  ASSERT_EQ(model.tensor_bytes.size(), 2u);
  EXPECT_NEAR(model.tensor_bytes[0].fixed, 100, 1e-6);
  EXPECT_NEAR(model.tensor_bytes[0].per_batch, 50, 1e-6);
  EXPECT_NEAR(model.op_ns[1].fixed, 1000, 1e-6);
  EXPECT_NEAR(model.op_ns[1].per_batch, 500, 1e-6);
  const Workload w = synthesize(model, 8);
  EXPECT_EQ(w.tensors[0].size_bytes, 500u);
  EXPECT_EQ(w.ops[2].duration_ns, 5000);
}

TEST(BatchScaling, NeedsTwoBatchSizes) {
  BatchModel model;
  std::string error;
  EXPECT_FALSE(fit_batch_model({{2, at_batch(2)}, {2, at_batch(2)}}, model, error));
  EXPECT_NE(error.find("two or more different batch sizes"), std::string::npos) << error;
}

TEST(BatchScaling, LargestBatchWithoutSwapping) {
  BatchModel model;
  std::string error;
  ASSERT_TRUE(fit_batch_model({{2, at_batch(2)}, {4, at_batch(4)}}, model, error)) << error;
  MaxBatchOptions options;
  options.request.budget_bytes = 1000;  // 200 + 100 B <= 1000: B <= 8
  options.request.link = test_link();
  const std::vector<MaxBatchRow> rows = max_batch(model, options, all_planners());
  ASSERT_EQ(rows.size(), 1 + all_planners().size());
  EXPECT_EQ(rows[0].planner, "");
  EXPECT_EQ(rows[0].max_batch, 8u);
  EXPECT_EQ(rows[0].peak_bytes, 1000u);
  EXPECT_FALSE(rows[0].capped);
  // With swapping x can be away while op 1 runs: at most y + the copies in
  // flight, so every planner that moves x reaches at least the same batch.
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_GE(rows[i].max_batch, 8u) << rows[i].planner;
    EXPECT_LE(rows[i].overhead, options.max_overhead) << rows[i].planner;
    EXPECT_LE(rows[i].peak_bytes, 1000u) << rows[i].planner;
  }
}

TEST(BatchScaling, SearchesPastAFailureAtSmallBatches) {
  // A fitted model whose memory first falls with the batch (a fixed part
  // fitted with a negative slope, clamped at 0 from batch 10) and then
  // grows: 1000 - 50 B bytes up to batch 10, 50 B after. Under 700 B it
  // fits from batch 6 to batch 14 only; batch 1 does not fit.
  BatchModel model;
  std::string error;
  ASSERT_TRUE(fit_batch_model({{2, at_batch(2)}, {4, at_batch(4)}}, model, error)) << error;
  model.tensor_bytes[0] = {1000, -100};
  model.tensor_bytes[1] = {0, 50};
  MaxBatchOptions options;
  options.request.budget_bytes = 700;
  options.request.link = test_link();
  const std::vector<MaxBatchRow> rows = max_batch(model, options, {});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].max_batch, 14u);
  EXPECT_FALSE(rows[0].capped);
  EXPECT_EQ(rows[0].peak_bytes, 700u);
  EXPECT_NE(rows[0].limit.find("batch 15: peak 750 B over the budget"), std::string::npos)
      << rows[0].limit;
}

}  // namespace
}  // namespace cuswap::policy::test
