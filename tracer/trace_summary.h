// What is in a trace, in numbers: the data model `cuswap inspect` renders as
// text or JSON, computed from a CstTrace in one pass over its events.
//
// Definitions (the CLI's help and docs use the same words):
// - live bytes: the sum of the sizes of buffers allocated and not yet freed;
//   `peak_bytes` is its maximum over the trace, all devices together.
// - an iteration runs from one iteration mark to the next (the last one to
//   the end of the trace); events before the first mark belong to none.
// - a free of a buffer that is not live, and an allocation of an id that
//   is, are anomalies: counted, never fatal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tracer/cst_reader.h"

namespace cuswap::trace {

struct KernelLaunches {
  uint32_t kernel_id = 0;
  std::string name;
  uint64_t launches = 0;
};

struct BufferLifetime {
  uint64_t buffer_id = 0;
  uint64_t size_bytes = 0;
  int device = 0;
  uint64_t alloc_time_ns = 0;
  std::optional<uint64_t> free_time_ns;  // none: live at the end of the trace
  uint64_t launches = 0;                 // launches that list it
};

struct CopyTotals {
  CopyDirection direction = CopyDirection::unknown;
  uint64_t copies = 0;
  uint64_t bytes = 0;
};

struct IterationSummary {
  uint64_t ordinal = 0;
  uint64_t start_ns = 0;
  uint64_t duration_ns = 0;  // to the next mark, or to the last event
  uint64_t launches = 0;
  uint64_t allocs = 0;
  uint64_t frees = 0;
  uint64_t peak_bytes = 0;  // live bytes, including what was live at its start
};

struct TraceSummary {
  CstHeader header;
  bool complete = false;
  uint64_t stopped_at = 0;  // when incomplete
  std::string stopped_reason;

  uint64_t events = 0;
  uint64_t duration_ns = 0;  // time of the last event
  uint64_t threads = 0;

  uint64_t buffers = 0;  // allocations
  uint64_t allocated_bytes = 0;
  uint64_t peak_bytes = 0;
  uint64_t peak_time_ns = 0;
  uint64_t live_at_end = 0;
  uint64_t live_bytes_at_end = 0;
  uint64_t unmatched_frees = 0;
  uint64_t reused_ids = 0;

  uint64_t launches = 0;
  uint64_t kernels = 0;  // distinct kernels launched
  uint64_t launches_unknown_access = 0;
  uint64_t graph_launches = 0;
  uint64_t launches_truncated = 0;
  std::vector<KernelLaunches> top_kernels;  // most launched first
  std::vector<BufferLifetime> top_buffers;  // largest first

  uint64_t iterations = 0;
  std::vector<IterationSummary> per_iteration;

  std::vector<CopyTotals> copies;  // by direction, only directions seen
  uint64_t sets = 0;
  uint64_t set_bytes = 0;
  std::vector<std::pair<VmmOp, uint64_t>> vmm;  // operations seen, with counts

  // 2.x: device timings (Note [Device durations] in runtime/device_timer.h).
  uint64_t timed_launches = 0;
  uint64_t kernel_time_ns = 0;  // sum of timed launches' durations
  uint64_t prefetch_copy_time_ns = 0;  // sum of timed prefetch copies' durations

  // 2.x: cuswap's own decisions. The totals equal the allocator's counters
  // of the same names in the end record.
  uint64_t evictions = 0;
  uint64_t evictions_for_plan = 0;  // of evictions: a plan's, not the budget's
  uint64_t bytes_to_host = 0;
  uint64_t eviction_time_ns = 0;  // sum of the evictions' durations (host clock)
  uint64_t prefetches = 0;
  uint64_t prefetches_on_demand = 0;
  uint64_t prefetches_planned = 0;
  uint64_t prefetches_unseen_use = 0;
  uint64_t bytes_to_device = 0;
  uint64_t prefetch_waits = 0;  // uses that waited for a prefetch
  // 2.1: cuswap's figures for each of its iterations (iteration_stats).
  std::vector<IterationStats> cuswap_iterations;

  std::optional<CstEnd> end;  // counters, dropped events, buffer waits
};

// `top` bounds top_kernels and top_buffers.
TraceSummary summarize(const CstTrace& trace, size_t top = 10);

}  // namespace cuswap::trace
