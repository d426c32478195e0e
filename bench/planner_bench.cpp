// Planner and simulator speed on a synthetic training step of 100k tensors:
// a forward pass of 25k ops, each making a feature map kept for the
// backward pass and a temporary, a loss op, and a backward pass of 25k ops
// that read the maps back in reverse order. Sizes cycle over 64 KiB-4 MiB,
// durations over 20-200 us. The budget is 60% of the peak on pcie5, where
// the copies hide; the "tight" cases are 30% on pcie3, where the link is
// the bottleneck and the cuswap planner runs its whole search.
#include <benchmark/benchmark.h>

#include <algorithm>

#include "policy/bounds.h"
#include "policy/planner.h"

namespace {

using namespace cuswap;

trace::Trace synthetic_step(uint32_t layers) {
  trace::Trace t;
  t.source = "synthetic";
  int64_t now_ns = 0;
  const auto op = [&](std::string name, int64_t duration_ns) {
    trace::Op o;
    o.name = o.type = std::move(name);
    o.start_ns = now_ns;
    o.duration_ns = duration_ns;
    now_ns += duration_ns;
    t.ops.push_back(std::move(o));
    return static_cast<uint32_t>(t.ops.size() - 1);
  };
  const auto size_of = [](uint32_t i) { return uint64_t{65536} << (i % 7); };
  std::vector<uint32_t> forward(layers);
  for (uint32_t i = 0; i < layers; ++i)
    forward[i] = op("fwd" + std::to_string(i), 20'000 + 30'000 * (i % 7));
  const uint32_t loss = op("loss", 50'000);
  std::vector<uint32_t> backward(layers);
  for (uint32_t i = layers; i-- > 0;)
    backward[i] = op("bwd" + std::to_string(i), 40'000 + 25'000 * (i % 7));
  (void)loss;
  for (uint32_t i = 0; i < layers; ++i) {
    trace::Tensor map;
    map.name = "map" + std::to_string(i);
    map.size_bytes = map.requested_bytes = size_of(i);
    map.producer = forward[i];
    map.alloc_ns = t.ops[forward[i]].start_ns;
    map.accesses = {forward[i]};
    if (i + 1 < layers) map.accesses.push_back(forward[i + 1]);
    map.accesses.push_back(backward[i]);
    map.free_ns = t.ops[backward[i]].start_ns + t.ops[backward[i]].duration_ns;
    t.tensors.push_back(map);
    trace::Tensor temp;
    temp.name = "temp" + std::to_string(i);
    temp.size_bytes = temp.requested_bytes = size_of(i + 3) / 2;
    temp.producer = forward[i];
    temp.alloc_ns = map.alloc_ns;
    temp.accesses = {forward[i]};
    temp.free_ns = t.ops[forward[i]].start_ns + t.ops[forward[i]].duration_ns;
    t.tensors.push_back(temp);
  }
  std::stable_sort(
      t.tensors.begin(), t.tensors.end(),
      [](const trace::Tensor& a, const trace::Tensor& b) { return a.alloc_ns < b.alloc_ns; });
  return t;
}

struct Setup {
  policy::Workload workload;
  policy::PlanRequest request;
};

Setup make_setup(uint64_t percent, const char* link) {
  Setup out;
  std::string error;
  if (!policy::build_workload(synthetic_step(50'000), {}, out.workload, error)) std::abort();
  const std::vector<uint64_t> live = policy::live_bytes_per_op(out.workload);
  out.request.budget_bytes = *std::max_element(live.begin(), live.end()) * percent / 100;
  out.request.link = *policy::find_link(link);
  return out;
}

const Setup& setup(bool tight = false) {
  static const Setup loose_setup = make_setup(60, "pcie5");
  static const Setup tight_setup = make_setup(30, "pcie3");
  return tight ? tight_setup : loose_setup;
}

void BM_Plan(benchmark::State& state, const char* planner_name, bool tight) {
  const Setup& s = setup(tight);
  const policy::Planner& planner = *policy::find_planner(planner_name);
  size_t entries = 0;
  for (auto _ : state) {
    const policy::Plan plan = planner.plan(s.workload, s.request);
    entries = plan.entries.size();
    benchmark::DoNotOptimize(entries);
  }
  state.counters["tensors"] = static_cast<double>(s.workload.tensors.size());
  state.counters["entries"] = static_cast<double>(entries);
}
BENCHMARK_CAPTURE(BM_Plan, cuswap, "cuswap", false)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_Plan, seed, "seed", false)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_Plan, cuswap_tight, "cuswap", true)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// The plan-independent lower bounds (policy/bounds.h), computed once per
// comparison.
void BM_Bounds(benchmark::State& state) {
  const Setup& s = setup(true);
  const policy::SimOptions options = policy::sim_options(s.request);
  for (auto _ : state) {
    const policy::Bounds b = policy::lower_bounds(s.workload, options);
    benchmark::DoNotOptimize(b.problem_ns);
  }
}
BENCHMARK(BM_Bounds)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_Simulate(benchmark::State& state) {
  const Setup& s = setup();
  const policy::Plan plan = policy::find_planner("cuswap")->plan(s.workload, s.request);
  std::vector<policy::ResolvedEntry> entries;
  std::string error;
  if (!policy::resolve(plan, s.workload, entries, error)) std::abort();
  const policy::SimOptions options = policy::sim_options(s.request);
  for (auto _ : state) {
    const policy::SimResult r = policy::simulate(s.workload, plan.mode, entries, options);
    benchmark::DoNotOptimize(r.iteration_ns);
  }
  state.counters["ops/s"] = benchmark::Counter(
      static_cast<double>(s.workload.ops.size()) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
  state.counters["entries"] = static_cast<double>(entries.size());
}
BENCHMARK(BM_Simulate)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
