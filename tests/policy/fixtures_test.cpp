// Every planner on every committed captured trace (tests/data): at a budget
// of 60% of the iteration's peak without swapping, the simulated peak fits,
// or the budget is infeasible and the report says by exactly how much.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "policy/planner.h"
#include "policy/simulator.h"
#include "tracer/import/import.h"

#ifndef CUSWAP_TEST_DATA
#error "CUSWAP_TEST_DATA must name tests/data"
#endif

namespace cuswap::policy::test {
namespace {

// Trace files: everything under tests/data but documentation and the
// expectations file.
std::vector<std::string> fixture_files() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(CUSWAP_TEST_DATA, ec)) {
    if (!entry.is_regular_file()) continue;
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".md") || name.ends_with(".py") || name == "expected.json" ||
        name.ends_with(".txt") || name.ends_with(".sh"))
      continue;
    files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

struct Fixture {
  std::string file;
  trace::Trace trace;
  Workload workload;
};

const std::vector<Fixture>& fixtures() {
  static const std::vector<Fixture> all = [] {
    std::vector<Fixture> out;
    for (const std::string& file : fixture_files()) {
      Fixture f;
      f.file = file;
      std::string error;
      if (!trace::import_trace(file, {}, f.trace, error)) {
        ADD_FAILURE() << "import: " << error;
        continue;
      }
      if (f.trace.ops.empty()) {
        // A sampled memory profile has allocations but no ops: nothing to
        // time a copy against. The one thing to check is that it says so.
        EXPECT_FALSE(build_workload(f.trace, {}, f.workload, error)) << file;
        EXPECT_NE(error.find("the trace has no ops to plan"), std::string::npos) << error;
        continue;
      }
      if (!build_workload(f.trace, {}, f.workload, error)) {
        ADD_FAILURE() << "workload: " << error;
        continue;
      }
      out.push_back(std::move(f));
    }
    return out;
  }();
  return all;
}

uint64_t peak(const Workload& w) {
  const std::vector<uint64_t> live = live_bytes_per_op(w);
  return live.empty() ? 0 : *std::max_element(live.begin(), live.end());
}

PlanRequest at_percent(const Workload& w, int percent) {
  PlanRequest r;
  r.budget_bytes = peak(w) * static_cast<uint64_t>(percent) / 100;
  r.link = *find_link("pcie5");
  return r;
}

TEST(Fixtures, ThereAreSome) {
  EXPECT_FALSE(fixtures().empty());
}

class EveryPlanner : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryPlanner, FitsSixtyPercentOrSaysWhy) {
  const Planner* planner = find_planner(GetParam());
  ASSERT_NE(planner, nullptr);
  ASSERT_FALSE(fixtures().empty());
  for (const Fixture& f : fixtures()) {
    const PlanRequest request = at_percent(f.workload, 60);
    const PlanOutcome out = plan_and_simulate(*planner, f.workload, request);
    // What a plan of this planner says about the trace resolves against it.
    std::vector<ResolvedEntry> resolved;
    std::string error;
    EXPECT_TRUE(resolve(out.plan, f.workload, resolved, error)) << f.file << ": " << error;
    EXPECT_GE(out.result.iteration_ns, out.result.infinite_memory_ns) << f.file;
    EXPECT_GE(out.result.iteration_ns, out.result.lower_bound_ns) << f.file;
    const std::optional<Shortfall> shortfall = check_budget(f.workload, request.budget_bytes);
    if (!shortfall) {
      EXPECT_TRUE(out.result.fits) << f.file;
      EXPECT_LE(out.result.peak_bytes, request.budget_bytes) << f.file;
    } else {
      EXPECT_FALSE(out.result.fits) << f.file;
      ASSERT_TRUE(out.result.shortfall.has_value()) << f.file;
      EXPECT_EQ(out.result.shortfall->over_bytes,
                out.result.shortfall->required_bytes - request.budget_bytes)
          << f.file;
      // Recount the op's set by hand.
      const uint32_t k = out.result.shortfall->op;
      std::vector<uint32_t> set = f.workload.uses_at[k];
      set.insert(set.end(), f.workload.allocs_at[k].begin(), f.workload.allocs_at[k].end());
      std::sort(set.begin(), set.end());
      set.erase(std::unique(set.begin(), set.end()), set.end());
      uint64_t bytes = 0;
      for (uint32_t t : set)
        bytes += f.workload.tensors[t].size_bytes;
      EXPECT_EQ(bytes, out.result.shortfall->required_bytes) << f.file;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Policy, EveryPlanner,
                         ::testing::Values("cuswap", "seed", "vdnn", "capuchin", "lru",
                                           "ondemand"));

TEST(Fixtures, CuswapIsNoSlowerThanSeed) {
  ASSERT_FALSE(fixtures().empty());
  for (const Fixture& f : fixtures()) {
    for (int percent : {60, 80}) {
      const PlanRequest request = at_percent(f.workload, percent);
      if (check_budget(f.workload, request.budget_bytes)) continue;  // infeasible: both say so
      const SimResult c = plan_and_simulate(*find_planner("cuswap"), f.workload, request).result;
      const SimResult s = plan_and_simulate(*find_planner("seed"), f.workload, request).result;
      EXPECT_TRUE(c.fits) << f.file << " at " << percent << "%";
      EXPECT_LE(c.iteration_ns, s.iteration_ns) << f.file << " at " << percent << "%";
    }
  }
}

TEST(Fixtures, SimulationIsDeterministic) {
  ASSERT_FALSE(fixtures().empty());
  const Fixture& f = fixtures().front();
  const PlanRequest request = at_percent(f.workload, 60);
  const PlanOutcome a = plan_and_simulate(*find_planner("cuswap"), f.workload, request);
  const PlanOutcome b = plan_and_simulate(*find_planner("cuswap"), f.workload, request);
  EXPECT_EQ(write_plan_json(a.plan), write_plan_json(b.plan));
  EXPECT_EQ(a.result.iteration_ns, b.result.iteration_ns);
  EXPECT_EQ(a.result.peak_bytes, b.result.peak_bytes);
}

// A plan resolves only against the window it was made for, each tensor out
// once at a time, from a planner cuswap knows.
TEST(Fixtures, PlansAreCheckedAgainstTheTrace) {
  const Fixture* with_entries = nullptr;
  PlanOutcome made;
  for (const Fixture& f : fixtures()) {
    made = plan_and_simulate(*find_planner("cuswap"), f.workload, at_percent(f.workload, 60));
    if (!made.plan.entries.empty()) {
      with_entries = &f;
      break;
    }
  }
  ASSERT_NE(with_entries, nullptr);
  const Workload& w = with_entries->workload;
  std::vector<ResolvedEntry> resolved;
  std::string error;
  ASSERT_TRUE(resolve(made.plan, w, resolved, error)) << error;

  Plan p = made.plan;
  p.device = w.device + 1;
  EXPECT_FALSE(resolve(p, w, resolved, error));
  EXPECT_NE(error.find("key device: the plan is for device"), std::string::npos) << error;

  p = made.plan;
  p.iteration = w.iteration == trace::kNoIteration ? 7 : w.iteration + 7;
  EXPECT_FALSE(resolve(p, w, resolved, error));
  EXPECT_NE(error.find("key iteration: the plan is for iteration"), std::string::npos) << error;

  p = made.plan;
  p.planner = "nope";
  EXPECT_FALSE(resolve(p, w, resolved, error));
  EXPECT_NE(error.find("key planner: expected one of"), std::string::npos) << error;

  p = made.plan;
  p.entries.push_back(p.entries.front());
  EXPECT_FALSE(resolve(p, w, resolved, error));
  EXPECT_NE(error.find("its tensor is still out for entries[0]"), std::string::npos) << error;
}

}  // namespace
}  // namespace cuswap::policy::test
