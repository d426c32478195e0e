// Fuzz target for the plan reader and for resolving a plan against a trace.
// Built as a libFuzzer binary with clang (plan_fuzz), and linked with
// tests/tracer/fuzz_replay_main.cpp into a plain program that ctest runs
// over corpus/plan/ (plans of the training chain, tests/policy/chain.h) and
// their prefixes and bit flips, with any compiler.
//
// Reading never crashes and fails with one line naming the file and a key
// or an offset; a plan that reads and resolves against the chain simulates
// with the simulator's invariants.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "policy/plan.h"
#include "policy/simulator.h"
#include "policy/workload.h"
#include "tests/policy/chain.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cuswap::policy;
  static const Workload workload = [] {
    Workload w;
    std::string error;
    if (!build_workload(test::training_chain(), {}, w, error)) std::abort();
    return w;
  }();
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  Plan plan;
  std::string error;
  if (!read_plan_json(json, "fuzz.plan", plan, error)) {
    if (error.rfind("fuzz.plan: ", 0) != 0 || error.find('\n') != std::string::npos) std::abort();
    return 0;
  }
  std::vector<ResolvedEntry> entries;
  if (!resolve(plan, workload, entries, error)) {
    if (error.empty() || error.find('\n') != std::string::npos) std::abort();
    return 0;
  }
  SimOptions options;
  options.budget_bytes = plan.budget_bytes ? plan.budget_bytes : UINT64_MAX;
  options.link = *find_link("pcie5");
  options.bounds = true;
  const SimResult r = simulate(workload, plan.mode, entries, options);
  if (r.iteration_ns < r.infinite_memory_ns) std::abort();
  if (r.fits && r.iteration_ns < r.lower_bound_ns) std::abort();
  return 0;
}
