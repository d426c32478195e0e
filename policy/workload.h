// The view of a Trace that planners and the simulator work on: one
// iteration of one device, as a sequence of ops on one compute engine and
// the tensors that live during it, every time expressed as an op index.
//
// The words (window, use, resident at start, loss point) are defined once,
// in docs/architecture.md ("Glossary").
//
// Invariants:
// - ops are in trace order; an op's duration_ns is its own time on the
//   compute engine, with time already covered by an earlier op of the
//   device (an enclosing PyTorch aten::conv2d around aten::convolution, a
//   kernel on another stream that overlaps it) counted once, and idle_ns
//   the time the engine sat idle before it in the capture (Note [Idle
//   time]); copies are not ops, their time is the engine's idle time;
// - for every tensor, alloc_op <= every use <= free_op (alloc_op is
//   kResidentAtStart for tensors resident at start; free_op is ops.size()
//   for tensors still live at the window's end); uses are sorted and unique;
// - allocs_at / uses_at / frees_after index tensors by op.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tracer/trace.h"

namespace cuswap::policy {

inline constexpr uint32_t kResidentAtStart = UINT32_MAX;

struct WorkOp {
  uint32_t trace_index = 0;
  std::string name;  // the op's name (kernel name for .cst traces)
  std::string type;
  uint32_t ordinal = 0;     // among the window's ops of the same name
  int64_t duration_ns = 0;  // unscaled, as captured
  int64_t idle_ns = 0;      // unscaled: the engine's idle time before the op, as captured
};

struct WorkTensor {
  uint32_t trace_index = trace::kNoOp;  // kNoOp for tensors made up (batch scaling)
  std::string name;
  uint64_t size_bytes = 0;
  uint32_t alloc_op = kResidentAtStart;
  uint32_t free_op = 0;              // freed when this op ends; ops.size(): live at the end
  std::vector<uint32_t> uses;        // sorted, unique op indices
  uint32_t ordinal = 0;              // allocation ordinal among the window's tensors of the
                                     // same kind (resident at start, or allocated in it)
  uint32_t producer = trace::kNoOp;  // window op that produced it, where known
  bool slab = false;  // charged as a piece of a slab (Note [Charged sizes]): it never moves
  bool resident_at_start() const { return alloc_op == kResidentAtStart; }
};

struct Workload {
  std::string source;
  int device = 0;
  bool host_as_device = false;  // captured on a CPU: host tensors stand in for device ones
  uint32_t iteration = trace::kNoIteration;  // the trace's iteration index, or none
  std::vector<WorkOp> ops;
  std::vector<WorkTensor> tensors;
  std::vector<std::vector<uint32_t>> allocs_at;    // per op: tensors allocated at its start
  std::vector<std::vector<uint32_t>> uses_at;      // per op: tensors it uses
  std::vector<std::vector<uint32_t>> frees_after;  // per op: tensors freed when it ends
  std::vector<std::string> notes;                  // how the window was chosen, one line each

  // Fills allocs_at / uses_at / frees_after from tensors (after edits).
  void index();
};

struct WorkloadOptions {
  int device = -2;  // -2: the device holding the most device bytes
  // -1: Note [Which iteration]; otherwise the trace's iteration index
  int64_t iteration = -1;
};

// Builds the view; false with one line in `error` when the trace has no
// ops or the requested device/iteration does not exist.
[[nodiscard]] bool build_workload(const trace::Trace& trace, const WorkloadOptions& options,
                                  Workload& out, std::string& error);

// The workload of a trace with allocations and no ops (a memory snapshot):
// Note [Workloads from an allocation stream] (policy/stream_workload.cpp).
// build_workload calls it for such a trace.
[[nodiscard]] bool build_stream_workload(const trace::Trace& trace, int device, Workload& out,
                                         std::string& error);

// Live bytes at each op (while it runs) when nothing is moved, and the peak.
std::vector<uint64_t> live_bytes_per_op(const Workload& workload);
// The same without the tensors marked in `parked` (one flag per tensor,
// policy/baseline.h's parked_at_start), which stay on the host.
std::vector<uint64_t> live_bytes_per_op(const Workload& workload,
                                        const std::vector<uint8_t>& parked);

// Note [Charged sizes]
// The swapping allocator does not hand out bytes but pages: a buffer of at
// least swap_min bytes gets its own range of whole pages (kRuntimePageBytes),
// a smaller one a piece of a slab in units of kRuntimeSmallBytes (Note [The
// small pool] in allocator/small_pool.cpp).
// A plan meant for the allocator is made with each tensor at what the budget
// is charged for it, or it overshoots the budget by the rounding and the
// allocator evicts by LRU what the plan kept. Only sizes change, and
// tensors that take slab slots are marked `slab` (Note [Pinned small
// tensors] in policy/simulator.cpp).
inline constexpr uint64_t kRuntimePageBytes = uint64_t{2} << 20;
inline constexpr uint64_t kRuntimeSmallBytes = 512;
uint64_t charged_bytes(uint64_t size_bytes, uint64_t swap_min_bytes);
Workload with_charged_sizes(const Workload& workload, uint64_t swap_min_bytes);
// Whether the allocator keeps `tensor` in a slab, where it never moves: it
// was charged as a slot, or it is below swap_min (0: no such rule). Note
// [Pinned small tensors] in policy/simulator.cpp.
inline bool never_moves(const WorkTensor& tensor, uint64_t swap_min_bytes) {
  return tensor.slab || tensor.size_bytes < swap_min_bytes;
}

// Note [The loss point]: the first op at which live bytes reach their peak;
// the forward pass is the ops before it.
uint32_t loss_point(const Workload& workload);

}  // namespace cuswap::policy
