// Replays one iteration and a plan on a model of one device: one compute
// engine running the ops in trace order, and two copy engines (H2D, D2H)
// on a link with a bandwidth and a per-copy latency (docs/simulator.md).
//
// Invariants of a result:
// - device bytes never exceed the budget unless the budget is infeasible
//   (Note [Infeasible budgets]); then `fits` is false and `shortfall` says
//   by how much, at which op, and what the op needed;
// - iteration_ns >= infinite_memory_ns; when the plan fits, also >=
//   lower_bound_ns and time_bound_ns (policy/bounds.h), which depend on the
//   workload, budget and link only, never on the plan;
// - the same inputs give the same result (no clocks, no hashing of pointers).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "policy/baseline.h"  // its callers read the schedule and the parked set here too
#include "policy/plan.h"
#include "policy/sim_options.h"
#include "policy/workload.h"

namespace cuswap::policy {

// Note [Infeasible budgets]
// While op k runs, the tensors it allocates and the tensors it uses must be
// on the device together; everything else can be moved out, given time. So
// a budget is feasible exactly when, for every op, that set fits. When it
// does not, the simulator lets the op over-commit (and says so) rather than
// stopping, so the rest of the iteration is still reported.
struct Shortfall {
  uint32_t op = 0;                // the op whose set is largest
  uint64_t required_bytes = 0;    // its allocated + used bytes
  uint64_t over_bytes = 0;        // required - budget
  std::vector<uint32_t> largest;  // its tensors, largest first (up to 5)
};

// The op needing the most bytes at once, or nullopt when every op fits.
std::optional<Shortfall> check_budget(const Workload& workload, uint64_t budget_bytes);

struct OpSpan {
  uint32_t op = 0;
  int64_t start_ns = 0, end_ns = 0;
};
struct CopySpan {
  uint32_t tensor = 0;   // the first tensor of the copy
  uint32_t tensors = 1;  // how many it moves
  uint64_t bytes = 0;
  int64_t start_ns = 0, end_ns = 0;
  bool to_device = false;
  bool on_demand = false;  // a fetch the op waited for, not a planned prefetch
};
// A stretch of time a tensor held device memory (from its allocation or the
// issue of its fetch to its free or the end of its copy out); end_ns is the
// iteration's end for tensors still there.
struct TensorSpan {
  uint32_t tensor = 0;
  int64_t start_ns = 0, end_ns = 0;
};
struct MemorySample {
  int64_t time_ns = 0;
  uint64_t bytes = 0;  // device bytes in use (and reserved for copies in flight) from then;
                       // the highest at that instant, a fall after it 1 ns later
};

struct SimResult {
  std::string link;
  double time_scale = 1.0;
  uint64_t budget_bytes = 0;
  uint64_t peak_bytes = 0;
  uint64_t infinite_memory_peak_bytes = 0;
  int64_t iteration_ns = 0;
  int64_t infinite_memory_ns = 0;
  int64_t lower_bound_ns = 0;  // with options.bounds: Note [Lower bounds]
  int64_t time_bound_ns = 0;   // with options.bounds: max(compute, (peak - budget) / bandwidth)
  int64_t stall_ns = 0;        // time the compute engine waited
  uint64_t h2d_bytes = 0, d2h_bytes = 0;
  uint32_t evictions = 0;            // tensors copied out
  uint32_t prefetches = 0;           // tensors fetched by a planned prefetch
  uint32_t demand_fetches = 0;       // tensors fetched because an op needed them
  uint32_t forced_evictions = 0;     // evictions the plan did not ask for (budget pressure)
  uint32_t late_prefetches = 0;      // planned prefetches an op waited for
  uint32_t cancelled_evictions = 0;  // evictions called off: the tensor wanted back or freed
                                     // before it landed (its copy out still runs)
  uint32_t wasted_evictions = 0;     // planned ones among them, wanted back
  bool fits = true;
  std::optional<Shortfall> shortfall;
  std::vector<int64_t> entry_late_ns;  // per resolved entry: how long its next use waited
  // Per resolved entry, 1 when its tensor never left: its copy out ran for
  // nothing (Note [Cancelled copies]).
  std::vector<uint8_t> entry_cancelled;
  std::vector<int64_t> entry_early_ns;  // per resolved entry: how long before its copy out
                                        // would have ended its tensor was wanted back
  std::vector<OpSpan> ops;
  std::vector<CopySpan> copies;
  std::vector<MemorySample> memory;
  std::vector<TensorSpan> residency;  // sorted by start, then tensor

  double overhead() const {
    return infinite_memory_ns > 0
               ? static_cast<double>(iteration_ns - infinite_memory_ns) / infinite_memory_ns
               : 0.0;
  }
};

SimResult simulate(const Workload& workload, PlanMode mode,
                   const std::vector<ResolvedEntry>& entries, const SimOptions& options);

}  // namespace cuswap::policy
