// Following plans end to end: the training program (programs/training.cpp)
// on simcuda under LD_PRELOAD=libcuswap.so, reactive, with a plan made by
// `cuswap plan` from the shim's own recording, and planned online; with
// reordered allocations, a changed pattern, no iteration marks, and plans
// that cannot be used.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace {

using cuswap::testing::ProgramResult;
using cuswap::testing::run_program;
using cuswap::testing::TempDir;
using Env = std::map<std::string, std::string>;

// 16 layers of 4-7 MiB activations (104 MiB at the peak) on a 12 GB/s link.
constexpr const char* kSimcuda = "memory:256MiB,h2d_gbps:12,d2h_gbps:12";
constexpr const char* kBudget = "budget:48MiB,link:pcie3";

Env environment(const std::string& cuswap_conf) {
  Env env = {
      {"CUSWAP_CONF", cuswap_conf}, {"SIMCUDA_CONF", kSimcuda}, {"LD_LIBRARY_PATH", SIMCUDA_DIR}};
  env["LD_PRELOAD"] = std::string(SANITIZER_RUNTIME).empty()
                          ? std::string(CUSWAP_SHIM)
                          : std::string(SANITIZER_RUNTIME) + ":" + CUSWAP_SHIM;
  return env;
}

ProgramResult train(const std::string& conf, std::vector<std::string> args = {}) {
  std::vector<std::string> argv = {PROG_TRAINING, "--layer-us", "300", "--iterations", "6"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, environment(conf));
}

// The value of `"key": N` in the program's "cuswap {...}" line, or -1.
long long stat(const ProgramResult& r, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(r.out, m, std::regex("\"" + key + "\": (-?[0-9]+)"))) return -1;
  return std::stoll(m[1]);
}

// The last iteration's figure (the "last_iteration" object comes last).
long long last_iteration(const ProgramResult& r, const std::string& key) {
  const size_t at = r.out.find("\"last_iteration\"");
  if (at == std::string::npos) return -1;
  std::smatch m;
  const std::string tail = r.out.substr(at);
  if (!std::regex_search(tail, m, std::regex("\"" + key + "\": (-?[0-9]+)"))) return -1;
  return std::stoll(m[1]);
}

void expect_intact(const ProgramResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* line : {"wrong bytes 0\n", "failures 0\n", "hazards 0\n"})
    EXPECT_NE(r.out.find(line), std::string::npos) << "missing '" << line << "' in\n"
                                                   << r.out << r.err;
}

// Records a run, plans it with the CLI at the budget and at the sizes the
// allocator charges (its default swap_min).
std::string make_plan(const TempDir& dir) {
  const std::string trace = dir.path("run.cst"), plan = dir.path("plan.json");
  ProgramResult rec = train("record:" + trace);
  EXPECT_EQ(rec.exit_code, 0) << rec.err;
  ProgramResult p = run_program({CUSWAP_CLI, "plan", trace, "--budget", "48MiB", "--link", "pcie3",
                                 "--swap-min", "1MiB", "-o", plan});
  EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
  return plan;
}

TEST(PlanFollowing, AnOfflinePlanIsFollowedWithoutOnDemandFetches) {
  TempDir dir;
  const std::string plan = make_plan(dir);
  ProgramResult r = train(std::string(kBudget) + ",plan:" + plan);
  expect_intact(r);
  EXPECT_GT(stat(r, "prefetches_planned"), 0) << r.out;
  EXPECT_GT(stat(r, "evictions_planned"), 0) << r.out;
  EXPECT_EQ(stat(r, "followed_iterations"), 5) << r.out;  // all but the first, which loads it
  EXPECT_EQ(last_iteration(r, "prefetches_on_demand"), 0) << r.out;
  EXPECT_GT(last_iteration(r, "prefetches_planned"), 0) << r.out;
  EXPECT_NE(r.out.find("peak device MiB 48\n"), std::string::npos) << r.out;
}

// Each iteration's figures are in the trace too (an iteration_stats event),
// as `cuswap inspect` shows them.
TEST(PlanFollowing, EachIterationsFiguresAreRecorded) {
  TempDir dir;
  const std::string plan = make_plan(dir), trace = dir.path("followed.cst");
  ProgramResult r = train(std::string(kBudget) + ",plan:" + plan + ",record:" + trace);
  expect_intact(r);
  ProgramResult inspect = run_program({CUSWAP_CLI, "inspect", trace, "--json"});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  const size_t at = inspect.out.find("\"cuswap_iterations\"");
  ASSERT_NE(at, std::string::npos) << inspect.out;
  const std::string list = inspect.out.substr(at, inspect.out.find(']', at) - at);
  std::vector<long long> planned;
  const std::regex entry("\"prefetches_planned\": ([0-9]+)");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), entry);
       it != std::sregex_iterator(); ++it)
    planned.push_back(std::stoll((*it)[1]));
  // Six iterations, five ended by the next one's start.
  ASSERT_EQ(planned.size(), 5u) << list;
  long long total = 0;
  for (long long n : planned) {
    EXPECT_GT(n, 0) << list;  // the plan is followed from the first mark
    total += n;
  }
  EXPECT_LE(total, stat(r, "prefetches_planned")) << list;
  size_t followed = 0;
  for (size_t p = list.find("\"followed\": true"); p != std::string::npos;
       p = list.find("\"followed\": true", p + 1))
    ++followed;
  EXPECT_EQ(followed, planned.size()) << list;
  ProgramResult text = run_program({CUSWAP_CLI, "inspect", trace});
  EXPECT_NE(text.out.find("cuswap's iterations:"), std::string::npos) << text.out;
}

TEST(PlanFollowing, ReorderedAllocationsStillFollowThePlan) {
  TempDir dir;
  const std::string plan = make_plan(dir);
  ProgramResult r = train(std::string(kBudget) + ",plan:" + plan, {"--reorder-at", "3"});
  expect_intact(r);
  EXPECT_EQ(stat(r, "mismatched_iterations"), 0) << r.out << r.err;
  EXPECT_EQ(stat(r, "followed_iterations"), 5) << r.out;
}

TEST(PlanFollowing, AChangedPatternFallsBackForThatIteration) {
  TempDir dir;
  const std::string plan = make_plan(dir);
  ProgramResult r = train(std::string(kBudget) + ",plan:" + plan, {"--shrink-at", "3"});
  expect_intact(r);
  EXPECT_EQ(stat(r, "mismatched_iterations"), 1) << r.out << r.err;
  EXPECT_EQ(stat(r, "followed_iterations"), 4) << r.out;
  EXPECT_NE(r.err.find("the plan no longer matches"), std::string::npos) << r.err;
  EXPECT_EQ(last_iteration(r, "prefetches_on_demand"), 0) << r.out;  // followed again after
}

TEST(PlanFollowing, OnlinePlanningTakesOverAndWaitsLessThanReactive) {
  ProgramResult reactive = train(std::string(kBudget) + ",online:false");
  ProgramResult online = train(kBudget);
  expect_intact(reactive);
  expect_intact(online);
  EXPECT_NE(online.err.find("plan of iteration 2 takes over"), std::string::npos) << online.err;
  EXPECT_NE(online.err.find("predicted iteration"), std::string::npos) << online.err;
  EXPECT_GT(last_iteration(reactive, "prefetches_on_demand"), 0) << reactive.out;
  EXPECT_LT(last_iteration(online, "prefetches_on_demand"),
            last_iteration(reactive, "prefetches_on_demand"))
      << online.out;
  EXPECT_GT(last_iteration(online, "prefetches_planned"), 0) << online.out;
}

TEST(PlanFollowing, AStalePlanIsMadeAgainOnline) {
  // From iteration 5 every step is half as long: three mismatched
  // iterations make the plan stale, the next is recorded and planned.
  ProgramResult r = train(kBudget, {"--shrink-from", "5", "--iterations", "14"});
  expect_intact(r);
  EXPECT_NE(r.err.find("plan of iteration 2 takes over"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("went stale"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("plan of iteration 9 takes over"), std::string::npos) << r.err;
  const size_t last = r.out.find("\"last_iteration\"");
  ASSERT_NE(last, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"followed\": true", last), std::string::npos) << r.out;
  EXPECT_GT(last_iteration(r, "prefetches_planned"), 0) << r.out;
}

TEST(PlanFollowing, IterationsAreFoundWithoutMarks) {
  ProgramResult r = train(kBudget, {"--no-marks", "--iterations", "8"});
  expect_intact(r);
  // A step is the weight check, 16 fills and 16 checks.
  EXPECT_EQ(stat(r, "iteration_period_launches"), 33) << r.out;
  EXPECT_NE(r.err.find("takes over"), std::string::npos) << r.err;
  EXPECT_GT(stat(r, "prefetches_planned"), 0) << r.out;
}

TEST(PlanFollowing, ALatePrefetchMovesItsTrigger) {
  // Every prefetch of the plan starts at its use: each is late, and the
  // runtime moves its trigger earlier, iteration after iteration.
  TempDir dir;
  std::ifstream in(make_plan(dir));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string late = std::regex_replace(
      text, std::regex("\"prefetch_at\": (\\{[^}]*\\}),\n( *)\"next_use\": (\\{[^}]*\\})"),
      "\"prefetch_at\": $3,\n$2\"next_use\": $3");
  ASSERT_NE(late, text);
  const std::string plan = dir.path("late.json");
  std::ofstream(plan) << late;
  ProgramResult r =
      train(std::string(kBudget) + ",stats:true,plan:" + plan, {"--iterations", "10"});
  expect_intact(r);
  EXPECT_GT(stat(r, "triggers_moved"), 0) << r.out << r.err;
  EXPECT_GT(stat(r, "late_prefetches"), 0) << r.out;
  // Later iterations have fewer late prefetches than the first followed one.
  std::vector<long long> late_per_iteration;
  const std::regex line("stats: iteration [0-9]+: .* on demand, ([0-9]+) late");
  for (std::sregex_iterator it(r.err.begin(), r.err.end(), line), end; it != end; ++it)
    late_per_iteration.push_back(std::stoll((*it)[1]));
  ASSERT_GE(late_per_iteration.size(), 9u) << r.err;
  EXPECT_GT(late_per_iteration[0], 0) << r.err;  // the first, which follows the plan as made
  EXPECT_LT(late_per_iteration.back(), late_per_iteration[0]) << r.err;
}

void expect_refused(const std::string& plan_conf, const std::string& why) {
  ProgramResult r = train(std::string(kBudget) + ",online:false," + plan_conf);
  expect_intact(r);
  size_t lines = 0;
  for (size_t at = r.err.find("not following it"); at != std::string::npos;
       at = r.err.find("not following it", at + 1))
    ++lines;
  EXPECT_EQ(lines, 1u) << r.err;
  EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
  EXPECT_EQ(stat(r, "prefetches_planned"), 0) << r.out;
}

TEST(PlanFollowing, AMissingPlanIsOneErrorAndReactive) {
  TempDir dir;
  expect_refused("plan:" + dir.path("nowhere.json"), dir.path("nowhere.json"));
}

TEST(PlanFollowing, ACorruptPlanIsOneErrorAndReactive) {
  TempDir dir;
  const std::string path = dir.path("corrupt.json");
  std::ofstream(path) << "{\"version\": 1, \"entries\": [";
  expect_refused("plan:" + path, "corrupt.json");
}

TEST(PlanFollowing, APlanForAnotherDeviceIsOneErrorAndReactive) {
  TempDir dir;
  const std::string plan = make_plan(dir);
  std::ifstream in(plan);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text = std::regex_replace(text, std::regex("\"device\": 0,\n"), "\"device\": 3,\n");
  const std::string other = dir.path("other.json");
  std::ofstream(other) << text;
  expect_refused("plan:" + other, "key device: the plan is for device 3, this process has 1");
}

TEST(PlanFollowing, APlanForABiggerBudgetIsOneErrorAndReactive) {
  TempDir dir;
  const std::string plan = make_plan(dir);
  ProgramResult r = train("budget:32MiB,online:false,plan:" + plan);
  expect_intact(r);
  EXPECT_NE(r.err.find("key budget_bytes: the plan needs a budget of 50331648 bytes"),
            std::string::npos)
      << r.err;
}

}  // namespace
