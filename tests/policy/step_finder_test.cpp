// Note [Steps without marks]: the period of a repeating op sequence.
#include <gtest/gtest.h>

#include <vector>

#include "policy/step_finder.h"

namespace cuswap::policy {
namespace {

// `times` copies of `step`, after `before` and followed by `after`.
std::vector<uint64_t> run(const std::vector<uint64_t>& before, const std::vector<uint64_t>& step,
                          int times, const std::vector<uint64_t>& after = {}) {
  std::vector<uint64_t> keys = before;
  for (int i = 0; i < times; ++i)
    keys.insert(keys.end(), step.begin(), step.end());
  keys.insert(keys.end(), after.begin(), after.end());
  return keys;
}

const std::vector<uint64_t> kStep = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

TEST(StepFinder, StepsAfterAWarmUpAreFound) {
  const Period p = repeating_period(run({90, 91, 92}, kStep, 5));
  EXPECT_EQ(p.ops, kStep.size());
  EXPECT_EQ(p.begins, 3u);
}

TEST(StepFinder, ALastPartialStepDoesNotHideThem) {
  const Period p = repeating_period(run({}, kStep, 4, {1, 2, 3, 4, 5}));
  EXPECT_EQ(p.ops, kStep.size());
  EXPECT_EQ(p.begins, 0u);
}

// One step whose layers repeat (an RNN's time steps), then other work: the
// layer is not a step.
TEST(StepFinder, RepeatsInsideOneStepAreNotSteps) {
  const std::vector<uint64_t> layer = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_EQ(repeating_period(run({50}, layer, 6, {60, 61, 62, 63, 64, 65, 66, 67})).ops, 0u);
  // Steps made of such layers are found whole.
  const std::vector<uint64_t> step = run({}, layer, 3, {60, 61, 62});
  const Period p = repeating_period(run({}, step, 3));
  EXPECT_EQ(p.ops, step.size());
}

TEST(StepFinder, TooFewRepeatsOrALoopOfOneOpAreNoSteps) {
  EXPECT_EQ(repeating_period(run({}, kStep, 1)).ops, 0u);
  // Two steps after a warm-up longer than they are: under half the ops.
  EXPECT_EQ(repeating_period(run(std::vector<uint64_t>(30, 77), kStep, 2)).ops, 0u);
  EXPECT_EQ(repeating_period(std::vector<uint64_t>(100, 5)).ops, 0u);
  EXPECT_EQ(repeating_period(run({}, {1, 2, 3}, 30)).ops, 0u);
  EXPECT_EQ(repeating_period({}).ops, 0u);
}

}  // namespace
}  // namespace cuswap::policy
