// The allocator's decisions into the trace (runtime/swap_recording.h).
#include "runtime/swap_recording.h"

namespace cuswap::hooks {

uint64_t SwapRecording::id_of(uintptr_t base) const noexcept {
  auto hit = buffers_.find(base);
  return hit ? hit->id : trace::kNoBuffer;
}

void SwapRecording::evicted(uintptr_t base, uint64_t bytes, EvictReason reason,
                            uint64_t start_ns, uint64_t end_ns) noexcept {
  recorder_.record_eviction(id_of(base), bytes, static_cast<trace::EvictReason>(reason), start_ns,
                            end_ns);
}

void* SwapRecording::copy_begin(CUstream stream) noexcept {
  return timer_ ? timer_->start(stream) : nullptr;
}

void SwapRecording::prefetched(uintptr_t base, uint64_t bytes, PrefetchReason reason,
                               CUstream stream, void* token) noexcept {
  const uint64_t seq =
      recorder_.record_prefetch(id_of(base), bytes, static_cast<trace::PrefetchReason>(reason),
                                reinterpret_cast<uint64_t>(stream));
  if (timer_) timer_->finish(static_cast<DeviceTimer::Pair*>(token), stream, seq);
}

void SwapRecording::copy_abandoned(void* token) noexcept {
  if (timer_) timer_->abandon(static_cast<DeviceTimer::Pair*>(token));
}

void SwapRecording::waited(uintptr_t base, CUstream stream) noexcept {
  recorder_.record_wait(id_of(base), reinterpret_cast<uint64_t>(stream));
}

}  // namespace cuswap::hooks
