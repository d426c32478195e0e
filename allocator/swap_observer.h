// What the swapping allocator tells whoever watches it: each eviction, each
// prefetch and each wait a use had for a prefetch, as they happen. The hooks
// record them in the trace (runtime/swap_recording.cpp); allocator/ knows only
// this interface, never the recorder or the hooks.
//
// Invariants:
// - Every method is called with the allocator's lock held: it must not call
//   back into the allocator, and must not block for long.
// - An eviction or a prefetch is reported exactly when the allocator counts
//   it in SwapStats (evictions, prefetches, prefetches_on_demand,
//   bytes_to_host, bytes_to_device), with the same bytes, so that a
//   recording's totals equal the counters in its end record.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace cuswap {

// Why a buffer moved. The values are those of the trace's enums
// (trace::EvictReason, trace::PrefetchReason), which the hooks map them to.
enum class EvictReason : uint8_t {
  budget = 0,  // an allocation or a prefetch needed room under the budget
  plan = 1,    // a plan said so
};
enum class PrefetchReason : uint8_t {
  on_demand = 0,   // a use named the evicted buffer
  planned = 1,     // a plan's trigger, or fetched ahead (Note [Prefetching ahead])
  unseen_use = 2,  // a use cuswap could not see into needed every buffer back
};

class SwapObserver {
 public:
  virtual ~SwapObserver() = default;

  // The observer's clock, in nanoseconds; eviction times are read from it.
  virtual uint64_t clock_ns() noexcept = 0;

  // The buffer at `base` is on the host: its copy of `bytes` was queued at
  // `start_ns` and found complete at `end_ns`.
  virtual void evicted(uintptr_t base, uint64_t bytes, EvictReason reason, uint64_t start_ns,
                       uint64_t end_ns) noexcept = 0;

  // Around a prefetch copy: copy_begin() just before it is queued on
  // `stream` (the observer may queue work there to time it) returns a token;
  // then exactly one of prefetched() (the copy of `bytes` to `base` is
  // queued) or copy_abandoned() (it was not).
  virtual void* copy_begin(CUstream stream) noexcept = 0;
  virtual void prefetched(uintptr_t base, uint64_t bytes, PrefetchReason reason, CUstream stream,
                          void* token) noexcept = 0;
  virtual void copy_abandoned(void* token) noexcept = 0;

  // The use being prepared on `stream` waits for the prefetch of `base`.
  virtual void waited(uintptr_t base, CUstream stream) noexcept = 0;
};

}  // namespace cuswap
