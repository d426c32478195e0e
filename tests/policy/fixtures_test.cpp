// Every planner on every committed captured trace (tests/data): at a budget
// of 60% of the iteration's peak without swapping, the simulated peak fits,
// or the budget is infeasible and the report says by exactly how much.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "policy/bounds.h"
#include "policy/planner.h"
#include "policy/planners/cuswap_candidates.h"
#include "policy/simulator.h"
#include "policy/step_finder.h"
#include "tests/policy/plan_checks.h"
#include "tracer/import/import.h"

#ifndef CUSWAP_TEST_DATA
#error "CUSWAP_TEST_DATA must name tests/data"
#endif

namespace cuswap::policy::test {
namespace {

// Under the sanitizers (CUSWAP_SHORT_SWEEP) the fixtures are the real GPU
// captures and one small model in each importer's format: the planners and
// the simulator run the same code on every trace, so the sanitizers' part
// is memory and undefined behaviour on every path, which these reach; the
// figures over every capture are the release build's to check.
#ifdef CUSWAP_SHORT_SWEEP
constexpr bool kShortSweep = true;
#else
constexpr bool kShortSweep = false;
#endif
bool short_sweep_fixture(const std::string& file) {
  return file.find("/gpu/") != std::string::npos ||
         file.find("/lstm-l4-t32-b4.") != std::string::npos;
}

// Trace files: everything under tests/data but documentation and the
// expectations file (under the sanitizers, short_sweep_fixture's).
std::vector<std::string> fixture_files() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(CUSWAP_TEST_DATA, ec)) {
    if (!entry.is_regular_file()) continue;
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".md") || name.ends_with(".py") || name == "expected.json" ||
        name.ends_with(".txt") || name.ends_with(".sh"))
      continue;
    if (kShortSweep && !short_sweep_fixture(entry.path().string())) continue;
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
      if (f.trace.ops.empty() && f.trace.sampled) {
        // A sampled memory profile has allocations but no ops: nothing to
        // time a copy against. The one thing to check is that it says so.
        // (A memory snapshot has every allocation: Note [Workloads from an
        // allocation stream].)
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

// The residency spans are the memory counter taken apart by tensor: a
// tensor is never on the device twice at once; swept with departures first
// and with arrivals first at each instant, they bound the counter's peak;
// and the byte-time under both is the same (the counter shows a fall 1 ns
// late, Note [Memory accounting]).
void expect_residency_adds_up(const Fixture& f, const SimResult& r) {
  if (r.peak_bytes == 0) return;  // nothing on the device
  ASSERT_FALSE(r.residency.empty()) << f.file;
  std::vector<std::pair<int64_t, int64_t>> changes;  // (time, +-bytes)
  std::vector<int64_t> last_end(f.workload.tensors.size(), INT64_MIN);
  double span_area = 0;
  for (const TensorSpan& s : r.residency) {
    ASSERT_LT(s.tensor, f.workload.tensors.size()) << f.file;
    EXPECT_LE(s.start_ns, s.end_ns) << f.file;
    EXPECT_LE(s.end_ns, r.iteration_ns) << f.file;
    EXPECT_GE(s.start_ns, last_end[s.tensor]) << f.file << ": tensor " << s.tensor;
    last_end[s.tensor] = s.end_ns;
    const auto size = static_cast<int64_t>(f.workload.tensors[s.tensor].size_bytes);
    changes.emplace_back(s.start_ns, size);
    changes.emplace_back(s.end_ns, -size);
    span_area += static_cast<double>(size) * static_cast<double>(s.end_ns - s.start_ns);
  }
  const auto sweep = [&](bool rises_first) {
    std::sort(changes.begin(), changes.end(), [&](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first < b.first;
      return rises_first ? a.second > b.second : a.second < b.second;
    });
    int64_t used = 0, highest = 0;
    for (const auto& change : changes) {
      used += change.second;
      highest = std::max(highest, used);
    }
    EXPECT_EQ(used, 0) << f.file;
    return static_cast<uint64_t>(highest);
  };
  EXPECT_LE(sweep(false), r.peak_bytes) << f.file;
  EXPECT_GE(sweep(true), r.peak_bytes) << f.file;
  double counter_area = 0;
  for (size_t i = 0; i < r.memory.size(); ++i) {
    const int64_t next = i + 1 < r.memory.size() ? r.memory[i + 1].time_ns : r.iteration_ns;
    counter_area += static_cast<double>(r.memory[i].bytes) *
                    static_cast<double>(std::max<int64_t>(0, next - r.memory[i].time_ns));
  }
  EXPECT_NEAR(span_area, counter_area, 1e-4 * counter_area) << f.file;
}

class EveryPlanner : public ::testing::TestWithParam<std::string> {};

// With the timeline recorded, which changes no figure, also the residency
// spans (expect_residency_adds_up).
TEST_P(EveryPlanner, FitsSixtyPercentOrSaysWhy) {
  const Planner* planner = find_planner(GetParam());
  ASSERT_NE(planner, nullptr);
  ASSERT_FALSE(fixtures().empty());
  for (const Fixture& f : fixtures()) {
    const PlanRequest request = at_percent(f.workload, 60);
    const PlanOutcome out = plan_and_simulate(*planner, f.workload, request, true);
    expect_residency_adds_up(f, out.result);
    // What a plan of this planner says about the trace resolves against it.
    std::vector<ResolvedEntry> resolved;
    std::string error;
    EXPECT_TRUE(resolve(out.plan, f.workload, resolved, error)) << f.file << ": " << error;
    EXPECT_GE(out.result.iteration_ns, out.result.infinite_memory_ns) << f.file;
    // The bound holds for plans that fit; an infeasible budget over-commits.
    if (out.result.fits) {
      EXPECT_GE(out.result.iteration_ns, out.result.lower_bound_ns) << f.file;
    }
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

// The comparison sweep: every real GPU capture and every model at batch 4,
// at 75%, 50% and 30% of the peak, on pcie3 and pcie5, every planner. One
// test, so the sweep runs once; each check names its case. Under the
// sanitizers (CUSWAP_SHORT_SWEEP) only the GPU captures at 50% and 30% on
// pcie5.
bool in_sweep(const std::string& file) {
  if (kShortSweep) return file.find("/gpu/") != std::string::npos;
  return file.find("/gpu/") != std::string::npos || file.find("-b4.") != std::string::npos;
}
bool is_gpu_capture(const std::string& file) {
  return file.find("/gpu/") != std::string::npos;
}
bool is_cnn(const std::string& file) {
  return file.find("resnet50") != std::string::npos ||
         file.find("inception") != std::string::npos || file.find("vgg16") != std::string::npos;
}

// Small tensors that leave together move as one copy: most candidates
// under 64 KiB are groups, and a plan's group's entries share their
// triggers. The candidates are checked, not the plan: the fastest plan
// may move no small tensor at all (ResNet-50 at 30% on pcie5 moves 37
// tensors, none small, since Note [Least unhidden time]).
void check_groups(const Workload& workload, const PlanRequest& request, const Plan& plan,
                  const std::string& name) {
  const std::vector<int64_t> starts = infinite_memory_starts(workload, request.time_scale);
  size_t small = 0, small_candidates = 0;
  for (const planners::Candidate& c : planners::candidates(workload, request, starts, 8)) {
    const auto members =
        static_cast<size_t>(std::count_if(c.tensors.begin(), c.tensors.end(), [&](uint32_t t) {
          return workload.tensors[t].size_bytes < 65536;
        }));
    if (members == 0) continue;
    small += members;
    ++small_candidates;
  }
  EXPECT_GT(small, 20u) << name;
  EXPECT_LE(small_candidates * 2, small) << name;
  std::map<uint32_t, std::vector<const PlanEntry*>> groups;
  for (const PlanEntry& e : plan.entries)
    groups[e.group].push_back(&e);
  for (const auto& [group, entries] : groups)
    for (const PlanEntry* e : entries) {
      EXPECT_EQ(e->evict_after.index, entries.front()->evict_after.index) << name << " " << group;
      EXPECT_EQ(e->prefetch_at.index, entries.front()->prefetch_at.index) << name << " " << group;
    }
}

TEST(Sweep, EveryCaptureEveryBudgetEveryLink) {
  size_t cases = 0, entries_checked = 0, near_bound = 0, grouped = 0;
  for (const Fixture& f : fixtures()) {
    if (!in_sweep(f.file)) continue;
    for (const char* link_name : {"pcie3", "pcie5"}) {
      if (kShortSweep && std::string_view(link_name) != "pcie5") continue;
      for (int percent : {75, 50, 30}) {
        if (kShortSweep && percent == 75) continue;
        ++cases;
        const std::string name = f.file + " at " + std::to_string(percent) + "% on " + link_name;
        PlanRequest request = at_percent(f.workload, percent);
        request.link = *find_link(link_name);
        std::vector<PlanOutcome> outcomes;
        for (const Planner* p : all_planners())
          outcomes.push_back(plan_and_simulate(*p, f.workload, request, p->name() == "cuswap"));
        ASSERT_EQ(outcomes[0].plan.planner, "cuswap");
        ASSERT_EQ(outcomes[2].plan.planner, "vdnn");
        const SimResult& mine = outcomes[0].result;
        // The bound: one for every planner, below each plan that fits.
        EXPECT_GE(mine.lower_bound_ns, mine.time_bound_ns) << name;
        EXPECT_GE(mine.time_bound_ns, mine.infinite_memory_ns) << name;
        for (const PlanOutcome& o : outcomes) {
          EXPECT_EQ(o.result.lower_bound_ns, mine.lower_bound_ns) << name << " " << o.plan.planner;
          EXPECT_EQ(o.result.time_bound_ns, mine.time_bound_ns) << name << " " << o.plan.planner;
          if (o.result.fits) {
            EXPECT_GE(o.result.iteration_ns, o.result.lower_bound_ns)
                << name << " " << o.plan.planner;
          }
        }
        // cuswap fits wherever a peer fits, and is not slower. A peer's plan
        // that keeps a copy for nothing, which cuswap's may not, can be
        // ahead by a little: 7 us in 204 ms on the TF2 Seq2Seq at 30%, 97 us
        // in 23.4 ms on the TF1 LSTM at 75% on pcie3.
        for (size_t i = 1; i < outcomes.size(); ++i) {
          const SimResult& peer = outcomes[i].result;
          if (!peer.fits) continue;
          EXPECT_TRUE(mine.fits) << name << ": " << outcomes[i].plan.planner << " fits";
          const double slack = peer.wasted_evictions > 0 ? 1.01 : 1.001;
          EXPECT_LE(static_cast<double>(mine.iteration_ns),
                    slack * static_cast<double>(peer.iteration_ns))
              << name << ": " << outcomes[i].plan.planner;
        }
        if (is_gpu_capture(f.file) && percent == 50 && request.link.name == "pcie5") {
          ++near_bound;
          EXPECT_TRUE(mine.fits) << name;
          EXPECT_LE(static_cast<double>(mine.iteration_ns),
                    1.10 * static_cast<double>(mine.lower_bound_ns))
              << name;
        }
        // On pcie3 the link is the limit: within 7.5% of the bound, and
        // ResNet-50 within 3% at 75% and 5% at 50%, the transformer snapshot
        // within 5.5% at 50% (steps 10-14 of Note [cuswap planner] took
        // them from 1.096x, 1.077x and 1.099x; without step 12 the snapshot
        // is at 1.059x).
        if (is_gpu_capture(f.file) && percent != 30 && request.link.name == "pcie3") {
          ++near_bound;
          const bool resnet = f.file.ends_with("gpu/torch-resnet50-v100.trace.json.gz");
          const bool snapshot = f.file.ends_with("gpu/torch-transformer-adamw.snapshot.json.gz");
          const double within = resnet     ? (percent == 75 ? 1.03 : 1.05)
                                : snapshot ? (percent == 50 ? 1.055 : 1.075)
                                           : 1.075;
          EXPECT_LE(static_cast<double>(mine.iteration_ns),
                    within * static_cast<double>(mine.lower_bound_ns))
              << name;
        }
        entries_checked += expect_time_away_covers_copies(f.workload, outcomes[0].plan,
                                                          outcomes[0].result, request.link, name);
        // The memory timeline (the export's counter) reaches the peak.
        uint64_t drawn = 0;
        for (const MemorySample& m : mine.memory)
          drawn = std::max(drawn, m.bytes);
        EXPECT_EQ(drawn, mine.peak_bytes) << name;
        if (f.file.ends_with("gpu/torch-resnet50-v100.trace.json.gz") && percent == 30 &&
            request.link.name == "pcie5") {
          ++grouped;
          check_groups(f.workload, request, outcomes[0].plan, name);
        }
        // vDNN finds convolution inputs on captures that record no reads
        // (TF2, PyTorch) too.
        if (is_cnn(f.file)) {
          EXPECT_FALSE(outcomes[2].plan.entries.empty()) << name;
        }
      }
    }
  }
  EXPECT_GT(cases, kShortSweep ? 6u : 200u);
  EXPECT_GE(near_bound, 3u);
  EXPECT_EQ(grouped, 1u);
  EXPECT_GT(entries_checked, kShortSweep ? 100u : 1000u);
}

// Note [Lower bounds] holds for every plan, not only on the sweep's
// fixtures: on every trace (both batch sizes and the GPU captures), at 75%
// and 50% on pcie3 and pcie5, no planner's plan that fits simulates faster
// than the bound. The bound is computed once a case; the plans without it.
TEST(Bounds, NoPlanOfAnyFixtureBeatsTheBound) {
  size_t cases = 0;
  for (const Fixture& f : fixtures()) {
    for (const char* link_name : {"pcie3", "pcie5"}) {
      for (int percent : {75, 50}) {
        PlanRequest request = at_percent(f.workload, percent);
        request.link = *find_link(link_name);
        const int64_t bound_ns = lower_bounds(f.workload, sim_options(request)).problem_ns;
        for (const Planner* p : all_planners()) {
          ++cases;
          const Plan plan = p->plan(f.workload, request);
          const SimResult r = simulate_plan(f.workload, plan, request);
          if (!r.fits) continue;  // an infeasible budget over-commits
          EXPECT_GE(r.iteration_ns, bound_ns)
              << f.file << " at " << percent << "% on " << link_name << ": " << p->name();
        }
      }
    }
  }
  EXPECT_GT(cases, kShortSweep ? 100u : 2000u);
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

// Planner step 9 on a real GPU capture. A PyTorch profile gives each
// tensor's producer and free only, so the saved maps that HTA's step frees
// together at one op are all last used there (1.36 GiB, the op over the
// most bytes). At 1434 MiB on pcie3 that op waits for them, and a prefetch
// started before it for a later op would take link time and memory from
// it: the plan starts every such prefetch after it.
TEST(Fixtures, NoPrefetchCrossesTheOpThatNeedsTheMostBytes) {
  const std::string file =
      std::string(CUSWAP_TEST_DATA) + "/gpu/torch-hta-v100-rank1.trace.json.gz";
  trace::Trace captured_trace;
  Workload captured;
  std::string error;
  ASSERT_TRUE(trace::import_trace(file, {}, captured_trace, error)) << error;
  ASSERT_TRUE(build_workload(captured_trace, {}, captured, error)) << error;
  const Workload w = with_charged_sizes(captured, uint64_t{1} << 20);
  uint32_t busiest = 0;
  uint64_t most = 0;
  for (uint32_t k = 0; k < w.ops.size(); ++k) {
    uint64_t bytes = 0;
    for (uint32_t t : w.uses_at[k])
      bytes += w.tensors[t].size_bytes;
    if (bytes > most) most = bytes, busiest = k;
  }
  ASSERT_GT(most, uint64_t{1} << 30);
  PlanRequest request;
  request.budget_bytes = uint64_t{1434} << 20;
  request.link = *find_link("pcie3");
  const Plan plan = find_planner("cuswap")->plan(w, request);
  size_t back_for_it = 0, crossing = 0;
  for (const PlanEntry& e : plan.entries) {
    if (!e.returns) continue;
    back_for_it += e.next_use.index == busiest;
    if (!e.wraps() && e.prefetch_at.index <= busiest && e.next_use.index > busiest) {
      ++crossing;
      ADD_FAILURE() << e.tensor.name << " (" << e.tensor.size_bytes << " B) is fetched at op "
                    << e.prefetch_at.index << " for op " << e.next_use.index << ", across op "
                    << busiest;
    }
  }
  EXPECT_GT(back_for_it, 10u);
  EXPECT_EQ(crossing, 0u);
}

// A GPU capture read without its step marks (Note [Steps without marks])
// is planned one step at a time as with them: the steps found hold the
// marked steps' ops, and the window planned takes about a marked step's
// time, never the whole capture's.
TEST(StepsWithoutMarks, AGpuCaptureStrippedOfItsMarksKeepsItsSteps) {
  const std::string file = std::string(CUSWAP_TEST_DATA) + "/gpu/torch-resnet50-v100.trace.json.gz";
  trace::Trace marked;
  std::string error;
  ASSERT_TRUE(trace::import_trace(file, {}, marked, error)) << error;
  ASSERT_GE(marked.iterations.size(), 3u);
  Workload with_marks;
  ASSERT_TRUE(build_workload(marked, {}, with_marks, error)) << error;

  trace::Trace stripped = marked;
  stripped.iterations.clear();
  const std::vector<trace::Iteration> steps = find_steps(stripped, with_marks.device);
  ASSERT_GE(steps.size(), marked.iterations.size() - 1);
  Workload without;
  ASSERT_TRUE(build_workload(stripped, {}, without, error)) << error;
  EXPECT_EQ(without.ops.size(), with_marks.ops.size());
  EXPECT_NE(without.iteration, trace::kNoIteration);
  const auto span_ns = [](const Workload& w) {
    int64_t ns = 0;
    for (const WorkOp& op : w.ops)
      ns += op.duration_ns + op.idle_ns;
    return ns;
  };
  const int64_t marked_ns = span_ns(with_marks), found_ns = span_ns(without);
  EXPECT_GT(found_ns, marked_ns * 8 / 10);
  EXPECT_LT(found_ns, marked_ns * 12 / 10);
  const trace::Iteration& last = marked.iterations.back();
  EXPECT_LT(found_ns, last.end_ns - marked.iterations.front().start_ns);
}

}  // namespace
}  // namespace cuswap::policy::test
