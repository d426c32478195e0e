// The allocator's observer in a recorded run: its evictions, prefetches and
// waits go into the trace as eviction, prefetch and wait events, named by
// the buffer ids the trace uses, and each prefetch copy is timed on the
// device like a launch (Note [Device durations] in device_timer.h).
#pragma once

#include "allocator/buffer_table.h"
#include "allocator/swap_observer.h"
#include "runtime/device_timer.h"
#include "tracer/recorder.h"

namespace cuswap::hooks {

class SwapRecording final : public SwapObserver {
 public:
  // `timer` may be nullptr (record_timing:false): prefetches are then untimed.
  SwapRecording(trace::Recorder& recorder, const BufferTable& buffers, DeviceTimer* timer) noexcept
      : recorder_(recorder), buffers_(buffers), timer_(timer) {}

  uint64_t clock_ns() noexcept override { return recorder_.now_ns(); }
  void evicted(uintptr_t base, uint64_t bytes, EvictReason reason, uint64_t start_ns,
               uint64_t end_ns) noexcept override;
  void* copy_begin(CUstream stream) noexcept override;
  void prefetched(uintptr_t base, uint64_t bytes, PrefetchReason reason, CUstream stream,
                  void* token) noexcept override;
  void copy_abandoned(void* token) noexcept override;
  void waited(uintptr_t base, CUstream stream) noexcept override;

 private:
  uint64_t id_of(uintptr_t base) const noexcept;

  trace::Recorder& recorder_;
  const BufferTable& buffers_;
  DeviceTimer* timer_;
};

}  // namespace cuswap::hooks
