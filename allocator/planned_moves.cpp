// Copies a plan starts ahead of need (Note [Planned moves]).
//
// Note [Planned moves]
// A planned eviction queues its copy out on the eviction stream after the
// buffer's last use and returns: the host thread does not wait. The buffer
// is evicting, its pages still mapped, until it lands as any eviction does
// (pages back to the pool, the range onto the host copy), and it lands when
// room is wanted, and only then: an allocation or prefetch that finds none
// takes pages of evictions in flight (its first use waiting for their
// copies on the device), else lands the finished ones, else waits for the
// oldest that still holds pages, and only then evicts by LRU, in flight as
// well (Note [Reactive evictions in flight]). One whose room nothing
// wanted before its prefetch stays, and no copy comes back (the
// simulator's Note [Lazy landing]). A use of an evicting buffer calls the
// eviction off: the use waits for the copy (which reads the bytes the use
// may write), the host copy goes back once the copy is done, and the buffer
// is resident again; one that gave pages away lands first (the host waits
// for its copy) and comes back as any evicted buffer does.
// A planned prefetch waits, on the prefetch stream, for the point the
// trigger launch's stream has reached, so the copy starts when the device
// gets there and not when the host, running ahead, asks. It never evicts
// anything to make room: a prefetch that finds none after the evictions in
// flight have landed is not started, and the use fetches it on demand. A
// buffer it brings back counts as just used, so that memory pressure before
// its use takes it last: it comes back because it is wanted soon.
#include <algorithm>

#include "allocator/swap_internal.h"
#include "common/log.h"

namespace cuswap {

CUresult Allocator::start_eviction(uintptr_t base) noexcept {
  std::lock_guard lock(mu_);
  Block* found = by_base_.find(base);
  if (!found) return CUDA_ERROR_INVALID_VALUE;
  Block& block = *found;
  if (block.small || block.pins > 0 ||
      (block.residency != Residency::resident && block.residency != Residency::prefetching))
    return CUDA_ERROR_NOT_READY;
  Device& dev = *devices_[static_cast<size_t>(block.device)];
  dev.planned = true;  // the plan's moves, not Note [Prefetching ahead]
  if (block.escaped && !dev.host_vmm) return CUDA_ERROR_NOT_READY;
  ScopedContext scope(driver_, dev.context);
  if (scope.status() != CUDA_SUCCESS) return scope.status();
  try {
    dev.evicting.reserve(dev.evicting.size() + 1);
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (CUresult r = take_host_copy(dev, block); r != CUDA_SUCCESS) return r;
  if (CUresult r = queue_copy_out(dev, block); r != CUDA_SUCCESS) {
    // A wait may be queued but no copy: nothing reads the host copy.
    release_host_copy(dev, block);
    return r;
  }
  EventRef copied = record_event(dev, dev.evict_stream);
  if (!copied) {
    // Cannot tell when it is done: wait for it and land it now.
    if (calls_.cuStreamSynchronize(dev.evict_stream) != CUDA_SUCCESS) {
      // The copy's fate is unknown: keep the host copy out of reuse.
      lose_host_copy(dev, block);
      return CUDA_ERROR_UNKNOWN;
    }
    (void)land_eviction(dev, block, EvictReason::plan, observer_ ? observer_->clock_ns() : 0);
    return CUDA_SUCCESS;
  }
  block.evict_copy = std::move(copied);
  block.evict_reason = EvictReason::plan;
  dev.evicting.push_back(&block);  // reserved above
  return CUDA_SUCCESS;
}

// Pages of evicting buffers, oldest first, for a use that will wait for
// their copies: `after` is the last donor's copy (the eviction stream runs
// in order, so it ends after the others). The donor's range stays mapped to
// them until it lands, unused.
bool Allocator::donate_pages(Device& dev, size_t count, std::vector<PageHandle>& out,
                             PagesAfter& after) noexcept {
  bool took = false;
  for (Block* block : dev.evicting) {
    if (out.size() >= out.capacity() || count == 0) break;
    // An escaped buffer's range may be reached by uses nobody sees: it
    // keeps its pages until it lands, its range then on its host copy.
    if (block->pages.empty() || !block->evict_copy || block->escaped) continue;
    while (!block->pages.empty() && count > 0 && out.size() < out.capacity()) {
      out.push_back(block->pages.back());
      block->pages.pop_back();
      --count;
    }
    if (!block->donated) count_eviction(*block, block->evict_reason);
    block->donated = true;
    after.donor = block->evict_copy;
    took = true;
  }
  return took;
}

// Pages that may hold donated or reclaimed ones go back to the pool once
// the copies and uses that may still reach them are done.
void Allocator::give_donated(Device& dev, std::vector<PageHandle>& pages,
                             PagesAfter& after) noexcept {
  after.donor.synchronize();
  after.donor.reset();
  synchronize_point(dev, after.uses);
  after.uses.reset();
  give_pages(dev, pages);
}

bool Allocator::land_evictions(Device& dev, bool wait_for_one) noexcept {
  bool pages_back = false;
  // Those done land; then, if no page came back and the caller may wait,
  // the host waits for the oldest that still holds pages (the eviction
  // stream runs in order: it ends before the younger ones). One whose pages
  // all went to other uses gives nothing back by landing: it lands when its
  // copy is done, never waited for.
  for (bool wait = false;; wait = true) {
    for (size_t i = 0; i < dev.evicting.size();) {
      Block& block = *dev.evicting[i];
      if (wait) {
        if (block.pages.empty()) {
          ++i;
          continue;
        }
        block.evict_copy.synchronize();
      }
      const bool holds_pages = !block.pages.empty();
      if (!EventRef(block.evict_copy).done() ||
          (!land_eviction(dev, block, block.evict_reason, observer_ ? observer_->clock_ns() : 0) &&
           block.residency == Residency::evicting)) {
        ++i;  // not yet, or its range could not be unmapped: tried again later
        if (wait) break;
        continue;
      }
      dev.evicting.erase(dev.evicting.begin() + static_cast<std::ptrdiff_t>(i));
      pages_back |= holds_pages && block.residency == Residency::evicted;
      if (wait) break;
    }
    if (pages_back || wait || !wait_for_one) return pages_back;
  }
}

void Allocator::leave_flight(Device& dev, Block& block) noexcept {
  auto it = std::find(dev.evicting.begin(), dev.evicting.end(), &block);
  if (it != dev.evicting.end()) dev.evicting.erase(it);
}

void Allocator::cancel_eviction(Device& dev, Block& block, CUstream stream) noexcept {
  if (block.donated) {
    // Its pages are another buffer's now: it can only land, and come back
    // as any evicted buffer does; until it can, it stays in flight and the
    // caller finds it evicting.
    block.evict_copy.synchronize();
    if (EventRef(block.evict_copy).done() &&
        land_eviction(dev, block, block.evict_reason, observer_ ? observer_->clock_ns() : 0))
      leave_flight(dev, block);
    return;
  }
  leave_flight(dev, block);
  EventRef copy = std::move(block.evict_copy);
  ++stats_.evictions_cancelled;
  if (copy.done()) {
    release_host_copy(dev, block);
    return;
  }
  // The host copy goes back once the copy reading into it is done; the
  // use (or the buffer's next use) waits for the copy.
  bool ordered = stream && calls_.cuStreamWaitEvent(stream, copy.event()) == CUDA_SUCCESS;
  if (!ordered) {
    for (EventRef& wait : block.waits.events) {
      if (wait) continue;
      wait = copy;
      ordered = true;
      break;
    }
  }
  const bool queued = release_host_copy_after(dev, block, copy);
  if (!ordered || !queued) copy.synchronize();
  if (queued) {
    block.residency = Residency::resident;
  } else {
    release_host_copy(dev, block);
  }
}

CUresult Allocator::start_prefetch(uintptr_t base, CUstream trigger, CUevent done) noexcept {
  std::lock_guard lock(mu_);
  Block* found = by_base_.find(base);
  if (!found) return CUDA_ERROR_INVALID_VALUE;
  Block& block = *found;
  Device& dev = *devices_[static_cast<size_t>(block.device)];
  dev.planned = true;
  ScopedContext scope(driver_, dev.context);
  if (scope.status() != CUDA_SUCCESS) return scope.status();
  if (block.residency == Residency::evicting && block.evict_copy) {
    const bool donated = block.donated;
    cancel_eviction(dev, block, nullptr);
    if (!donated) return CUDA_ERROR_NOT_READY;  // never left: nothing to bring back
  }
  if (block.residency != Residency::evicted) return CUDA_ERROR_NOT_READY;
  if (trigger) {
    if (const EventRef reached = record_event(dev, trigger)) {
      if (CUresult r = calls_.cuStreamWaitEvent(dev.prefetch_stream, reached.event());
          r != CUDA_SUCCESS)
        return r;
    }
  }
  Block* keep[] = {&block};
  CUresult r = prefetch(block, dev.prefetch_stream, keep, PrefetchReason::planned,
                        /*may_evict=*/false);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) return CUDA_ERROR_NOT_READY;  // the use fetches it
  if (r != CUDA_SUCCESS) return r;
  ++stats_.prefetches_planned;
  block.last_tick = ++tick_;  // wanted soon: the last to go under pressure
  if (done) (void)calls_.cuEventRecord(done, dev.prefetch_stream);
  return CUDA_SUCCESS;
}

}  // namespace cuswap
