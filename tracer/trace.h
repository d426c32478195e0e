// The one model of a training run that the importers fill and the planners,
// the simulator and the CLI read, whatever the source: cuswap's own `.cst`
// recordings, TensorFlow 1 timelines and StepStats, TensorFlow 2 profiles and
// PyTorch profiler traces and memory snapshots.
//
// The words (op, tensor, iteration) are defined once, in
// docs/architecture.md ("Glossary"), and used the same in policy/ and the CLI.
//
// Invariants, established by every importer and checked by validate():
// - times are nanoseconds from the start of the trace (the earliest event
//   is at or after 0);
// - ops are sorted by (start_ns, index of appearance in the source);
// - tensors are sorted by (alloc_ns, index of appearance in the source);
// - every op index in a tensor is < ops.size(), and a tensor's accesses are
//   sorted by the op's start time (the producer, when known, is among them);
// - alloc_ns <= free_ns when the tensor is freed;
// - iterations are sorted, do not overlap, and first_op/end_op index ops.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cuswap::trace {

inline constexpr uint32_t kNoOp = UINT32_MAX;
inline constexpr uint32_t kNoIteration = UINT32_MAX;

enum class TraceFormat : uint8_t {
  cst,                 // cuswap's own recording
  tf1_timeline,        // TensorFlow 1 Chrome-trace JSON (timeline.py, show_memory)
  tf1_step_stats,      // TensorFlow 1 RunMetadata / StepStats proto
  tf2_xplane,          // TensorFlow 2 profiler xplane.pb
  tf2_memory_profile,  // TensorFlow 2 memory_profile.json(.gz): sampled
  torch_profiler,      // PyTorch profiler Chrome-trace JSON (profile_memory)
  torch_snapshot,      // PyTorch CUDA memory snapshot, converted to JSON
};

// The name `cuswap inspect --json` prints in its `format` key.
std::string_view format_name(TraceFormat format);

// Where an allocation lives. Only device tensors count towards device memory
// (peak bytes, budgets); host allocations are reported beside them.
enum class MemorySpace : uint8_t { device, host };

struct Op {
  std::string name;  // node or kernel name ("conv1/Conv2D", "fill_kernel")
  std::string type;  // op type ("Conv2D", "aten::addmm"); the name again for kernels
  int device = 0;    // device ordinal; -1 for host ops
  uint32_t stream = 0;  // stream or lane within the device, as the source numbers it
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  uint32_t iteration = kNoIteration;
  // A copy between host and device (memcpy lanes, PyTorch Memcpy events):
  // it runs on a copy engine, not on the compute engine.
  bool is_copy = false;
};

struct Tensor {
  std::string name;  // "conv1/Conv2D:0", or "" where the source names none
  uint64_t size_bytes = 0;  // what the allocator handed out (allocated, not requested)
  uint64_t requested_bytes = 0;  // what was asked for, where known (else = size_bytes)
  MemorySpace space = MemorySpace::device;
  int device = 0;
  std::string allocator;  // "GPU_0_bfc", "cpu", "cuda:0" …; "" where unknown
  uint64_t address = 0;   // where known, else 0
  int64_t alloc_ns = 0;
  std::optional<int64_t> free_ns;  // none: still live at the end of the trace
  uint32_t producer = kNoOp;       // the op that allocated or wrote it first
  std::vector<uint32_t> accesses;  // ops that touched it, in start-time order
  uint32_t iteration = kNoIteration;
  // A tensor allocated before the trace and never freed in it (weights,
  // optimizer state) is persistent; planners may still move it.
  bool persistent = false;
};

struct Iteration {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t first_op = 0;  // ops [first_op, end_op) belong to it
  uint32_t end_op = 0;
};

// Per-allocator figures as the source itself reports them, kept so that
// `inspect` can show them and tests can compare against them.
struct AllocatorReport {
  std::string allocator;
  MemorySpace space = MemorySpace::device;
  int device = 0;
  std::optional<uint64_t> peak_bytes;  // the source's own peak, where it has one
};

struct Trace {
  TraceFormat format = TraceFormat::cst;
  std::string source;  // the file it came from
  std::vector<Op> ops;
  std::vector<Tensor> tensors;
  std::vector<Iteration> iterations;
  std::vector<AllocatorReport> allocators;
  // The peak of device memory in use as the source accounts it (TF2: the
  // allocator's bytes_allocated; TF1: live tensors of the GPU allocator);
  // none when the source has no figure of its own.
  std::optional<uint64_t> reported_peak_device_bytes;
  bool sampled = false;  // the source keeps only a sample of its events
  std::vector<std::string> notes;  // what the importer could not represent, one line each
};

// The first broken invariant (see the file header) as one line, or "" when
// the trace keeps them all.
std::string validate(const Trace& trace);

// The peak of the sum of sizes of live device tensors over time, with the
// time it is first reached. A tensor is live over [alloc_ns, free_ns); at one
// instant frees come before allocations. Persistent tensors count from 0.
// Without a device: the highest of the devices' peaks.
struct LivePeak {
  uint64_t bytes = 0;
  int64_t time_ns = 0;
};
LivePeak device_live_peak(const Trace& trace);
LivePeak device_live_peak(const Trace& trace, int device);

}  // namespace cuswap::trace
