// The replay's schedule: what the replay benchmark does, call by call, to
// drive one workload iteration through the driver API, and the identities a
// runtime (the shim) sees for every op and tensor of the steady-state
// iteration. Pure computation: no driver calls, so the unit tests and the
// plan translation (bench/replay/translate.h) use it without a device.
//
// Per op, in order: allocate the tensors whose alloc_op it is, launch its
// kernel(s) on the compute stream (reading the tensors it uses, writing
// the ones it allocates), then free the tensors whose free_op it is.
//
// Note [Replay steady state]
// Each iteration must start with the same live set, or iteration i+1 is not
// iteration i again. The carried tensors (Note [Carried tensors] in
// policy/plan.h) are paired the way the cuswap planner pairs them: by size,
// the heads (resident at start, freed in the window, used) in order of
// first use against the tails (allocated in the window, live at its end,
// used) in tensor order. A paired tail *becomes* its head in the next
// iteration (same buffer, same bytes). An unpaired tail is freed at the end
// of the iteration; an unpaired head (and a head nobody uses) is allocated
// again at the end of the iteration, before the next iteration mark, and
// written. Before the first iteration, everything resident at start is
// allocated in the order the steady state holds it (below), so the first
// iteration already looks like the others.
//
// Note [Replay runtime identities]
// The shim names ops and tensors as docs/plan-format.md does, counted from
// the cuswap_iteration_begin mark:
// - an op is (kernel name as cuFuncGetName gives it, ordinal among this
//   iteration's launches of that name); an op whose tensors need more than
//   one launch is its first launch for prefetch_at and next_use and its last
//   for evict_after;
// - a tensor allocated after the mark is (false, index among all the
//   allocation calls since the mark, size asked);
// - a tensor live at the mark is (true, rank by allocation order among all
//   buffers live at the mark, size). The replay allocates its mismatch
//   counter first (rank 0), then the resident tensors never freed (in
//   workload order), then the paired heads (in the order their tails are
//   allocated in the iteration: that is when their buffers were made),
//   then the unpaired heads (in workload order: reallocated in that order).
// Tensors of 0 bytes are never allocated and have no identity.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policy/workload.h"

namespace cuswap::bench {

inline constexpr uint32_t kNone = UINT32_MAX;

// Kernel variants by the number of buffers one launch passes (each its own
// parameter, so the shim's parameter scan sees each). Parameter layout of
// variant N: counter pointer, duration (ns), N pointers, N sizes, N seeds
// (bench/replay/pattern.h); 16 + 24 N bytes, under the 4 KiB of a launch.
inline constexpr uint32_t kVariantSlots[] = {4, 16, 64, 160};
inline constexpr uint32_t kMaxSlots = 160;
// The kernel that writes resident tensors outside iterations.
inline constexpr const char* kInitKernel = "cuswap_replay_init";
std::string variant_name(uint32_t slots);  // "cuswap_replay_op16"
uint32_t variant_slots(uint32_t buffers);  // the smallest variant that holds them

struct Launch {
  uint32_t op = 0;
  uint32_t slots = 4;             // the variant
  uint32_t ordinal = 0;           // among the iteration's launches of the variant
  std::vector<uint32_t> tensors;  // workload tensor indices
  std::vector<uint8_t> writes;    // per tensor: 1 written (allocated by the op), 0 read
  int64_t duration_ns = 0;        // idle + duration of the op, scaled (on its first launch)
};

struct Schedule {
  // Before the first iteration, after the counter: resident tensors to
  // allocate and write, in this order.
  std::vector<uint32_t> setup;
  std::vector<std::vector<uint32_t>> allocs;        // per op
  std::vector<std::vector<uint32_t>> frees;         // per op, after its launches
  std::vector<Launch> launches;                     // in issue order
  std::vector<uint32_t> first_launch, last_launch;  // per op
  std::vector<uint32_t> end_frees;                  // unpaired tails, at the end of each iteration
  std::vector<uint32_t> end_reallocs;  // unpaired heads, allocated again after end_frees
  // Per tensor: the head a paired tail becomes next iteration, and back.
  std::vector<uint32_t> becomes, carried_from;
  // Per tensor: Note [Replay runtime identities]; kNone for 0-byte tensors.
  std::vector<uint32_t> runtime_ordinal;
  std::vector<uint8_t> runtime_resident;
};

// Builds the schedule; `time_scale` scales op durations as the simulator does.
Schedule build_schedule(const policy::Workload& workload, double time_scale);

// Note [Replay workspaces]: cuDNN asks for a workspace inside most
// convolutions, allocated and freed around its kernels, and its size
// follows the algorithm chosen for that layer, so one convolution's
// workspace is rarely the size of the last one's: an allocator that caches
// by size finds none to reuse. Traces that record such scratch memory
// (PyTorch's [memory] events, memory snapshots) already have it as tensors
// allocated and freed within one op; for those that do not, --workspaces
// adds one to every op whose name or type says convolution ("conv", any
// case): allocated after the op's outputs, used by it, freed after it.
// Its size is between a quarter of and the op's largest tensor (at least
// 1 MiB), set by a hash of the op's name and ordinal, so it is the same in
// every iteration and differs from convolution to convolution. Returns how
// many were added.
uint32_t add_workspaces(policy::Workload& workload);
// Tensors allocated and freed within one op, as the trace has them.
uint32_t scratch_tensors(const policy::Workload& workload);

// Note [Replay batch scaling]: one trace, a batch scale F: tensors that
// live within the window (allocated and freed in it: activations) and op
// durations scale by F; weights and carried state do not.
//
// Note [Replay at a fitted batch]
// Scaling one capture scales every part of a tensor, its fixed part too
// (vocabulary-sized buffers, per-layer constants), so far from the captured
// batch it overstates memory. With traces at two or more batch sizes and
// --batch N, the replay runs the workload `cuswap plan --max-batch` fits
// and searches (policy/batch_scaling.h: each size and duration fixed + per
// sample x batch), so a batch the simulator found is replayed as it found it.
void scale_batch(policy::Workload& workload, double factor);

}  // namespace cuswap::bench
