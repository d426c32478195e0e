// A swap plan: for chosen tensors of one iteration, evict after which op
// and start the prefetch at which op, keyed by identities a runtime can
// match from one iteration to the next (docs/plan-format.md, field by field).
//
// Invariants of a plan that resolve() accepts:
// - every entry's tensor exists in the window with the recorded size;
// - evict_after < prefetch_at <= next_use, all ops of the window; or, for a
//   wrap entry (Note [Wrap entries]), prefetch_at <= next_use <= evict_after;
//   or one side only, for a tensor carried into the next iteration (Note
//   [Carried tensors]);
// - entries of one group share evict_after and prefetch_at (they move as
//   one copy each way).
// Reactive plans (lru, ondemand) have no entries: the simulator decides.
//
// Note [Wrap entries]
// Weights and optimizer state live across iterations: resident when the
// iteration starts, still live when it ends. Such a tensor can leave after
// its last use in one iteration and come back for its first use in the
// next, so its time away wraps around the iteration's end. A wrap entry
// says so with next_use (the first use) at or before evict_after (the last
// use): the tensor starts the iteration on the host, is fetched at
// prefetch_at, and leaves when evict_after ends. Other entries of the same
// tensor lie between its next_use and its evict_after.
//
// Note [Carried tensors]
// Some state is not one tensor across iterations but a new one each time:
// the iteration frees what an earlier one left (resident at start, freed
// in it) and leaves a tensor of the same size for the next (allocated in
// it, live at the end), as TensorFlow 2 does with the buffers of a
// training step. Such a pair can move like a weight: the one left for the
// next iteration leaves after its last use (an entry that only leaves:
// returns is false, no prefetch_at or next_use), and the one from the
// previous iteration starts on the host and comes back for its first use
// (an entry that only returns: leaves is false, no evict_after). A planner
// pairs them byte for byte, so one iteration stands for the steady state.
// Where a capture is not one whole step (no iteration marks), what it
// leaves may have nothing at its start to pair with: an entry that only
// leaves then says it is not needed again in the window.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/workload.h"

namespace cuswap::policy {

inline constexpr int kPlanVersion = 1;

// How the plan is followed.
enum class PlanMode : uint8_t {
  scheduled,  // the entries, copies started at their triggers
  lru,        // no entries: evict least recently used on pressure, fetch on use
  ondemand,   // no entries: evict oldest-fetched on pressure, fault in on use
};
std::string_view mode_name(PlanMode mode);
std::optional<PlanMode> parse_mode(std::string_view name);

// An op as a runtime sees it: its name and which of the iteration's ops of
// that name it is; `index` is the op's position in the window, for offline use.
struct OpRef {
  std::string name;
  uint32_t ordinal = 0;
  uint32_t index = 0;
};

// A tensor as a runtime sees it: the n-th allocation of the iteration (or
// the n-th tensor resident when the iteration starts) and its size.
struct TensorRef {
  bool resident_at_start = false;
  uint32_t ordinal = 0;
  uint64_t size_bytes = 0;
  int device = 0;
  std::string name;  // informative only
};

struct PlanEntry {
  TensorRef tensor;
  OpRef evict_after;    // copy out when this op ends, then free the device copy
  OpRef prefetch_at;    // start the copy back when this op is launched
  OpRef next_use;       // the op that needs it back
  uint32_t group = 0;   // entries of one group move as one copy each way
  bool leaves = true;   // false: starts on the host (Note [Carried tensors])
  bool returns = true;  // false: not back in this iteration (Note [Carried tensors])
  // Note [Wrap entries], by the ops' indices (set where the plan was made)
  bool wraps() const { return leaves && returns && next_use.index <= evict_after.index; }
};

// What the planner predicted, from its own simulation.
struct PlanPrediction {
  uint64_t peak_bytes = 0;
  int64_t iteration_ns = 0;
  int64_t infinite_memory_ns = 0;
};

struct Plan {
  int version = kPlanVersion;
  std::string planner;
  PlanMode mode = PlanMode::scheduled;
  std::string source;  // the trace it was made from
  uint32_t iteration = trace::kNoIteration;
  int device = 0;
  uint64_t budget_bytes = 0;
  std::string link;
  double time_scale = 1.0;
  std::vector<PlanEntry> entries;
  std::optional<PlanPrediction> predicted;
};

// An entry turned into workload indices.
struct ResolvedEntry {
  uint32_t tensor = 0;
  uint32_t evict_after = 0;
  uint32_t prefetch_at = 0;
  uint32_t next_use = 0;
  uint32_t group = 0;
  bool leaves = true;   // false: evict_after is unused
  bool returns = true;  // false: prefetch_at and next_use are unused
  // Note [Wrap entries]
  bool wraps() const { return leaves && returns && next_use <= evict_after; }
};

// Builds an entry for workload tensor `t` from op indices.
PlanEntry make_entry(const Workload& workload, uint32_t tensor, uint32_t evict_after,
                     uint32_t prefetch_at, uint32_t next_use, uint32_t group);
// One-sided entries (Note [Carried tensors]).
// Op `op` of the workload, as a plan names it.
OpRef op_ref(const Workload& workload, uint32_t op);
PlanEntry make_leaving_entry(const Workload& workload, uint32_t tensor, uint32_t evict_after,
                             uint32_t group);
PlanEntry make_returning_entry(const Workload& workload, uint32_t tensor, uint32_t prefetch_at,
                               uint32_t next_use, uint32_t group);

// Matches the plan's identities against the workload: tensors by
// (resident_at_start, ordinal) and size, ops by (name, ordinal). False with
// one line naming the entry and key that do not match.
[[nodiscard]] bool resolve(const Plan& plan, const Workload& workload,
                           std::vector<ResolvedEntry>& out, std::string& error);

// JSON (docs/plan-format.md). write_plan_json never fails; read_plan_json
// returns false with one line naming `name` and the key in `error`.
std::string write_plan_json(const Plan& plan);
[[nodiscard]] bool read_plan_json(std::string_view json, std::string_view name, Plan& out,
                                  std::string& error);
[[nodiscard]] bool read_plan_file(const std::string& path, Plan& out, std::string& error);

}  // namespace cuswap::policy
