// Moving bytes: choosing victims, evicting them to host memory and bringing
// them back (Note [Residency], Note [Eviction keeps the address mapped]).
//
// Failures never lose bytes: a buffer changes residency only after its
// bytes are safe where the new state says they are; when a step fails, the
// buffer stays (or goes back) where its bytes are valid and the error goes
// to the caller.
//
// Note [Reactive evictions in flight]
// An allocation or use that finds no room evicts least recently used
// buffers, and the host does not wait for their copies: they are queued on
// the eviction stream after the victims' last uses, one event after them
// all, and the victims join the evictions in flight as planned ones do
// (Note [Planned moves]). The pages the request wants are given to it at
// once, its first use waiting on the device for that event; the rest land
// when room is next wanted. The host waits only where nothing in flight can
// give pages (a caller that cannot order its use after a copy, or one whose
// donors are all spent), and the wait is counted. A victim freed before its
// copy ends costs no wait either (release_donor). An escaped buffer gives
// no page away before it lands: uses nobody sees may reach its range, which
// must hold its bytes, on the device or on its host copy, at every moment.
#include <algorithm>

#include "allocator/swap_internal.h"
#include "common/log.h"

namespace cuswap {
namespace {

bool kept(std::span<Allocator::Block* const> keep, const Allocator::Block* block) {
  return std::find(keep.begin(), keep.end(), block) != keep.end();
}

}  // namespace

// Note [Choosing victims]
// Without a plan, the victims are the least recently used buffers, a use or
// an allocation making a buffer the most recent. Putting first those whose
// last use is known done spares nothing, for with the copies in flight
// nothing waits for a last use: the copy follows it on the device. And it
// is wrong for a buffer just allocated: it has no use yet, so it would count
// as done and go first, and the use it was allocated for, a moment later,
// would wait on the host for its copy out and bring it back (ResNet-50 at
// 2x its batch under its 1x peak: ten such an iteration, 136 ms a step
// against 125 ms by recency alone).
//
// Evicts least recently used buffers of `dev` until `bytes_needed` of pages
// come back: the copies are queued and the buffers join the evictions in
// flight (Note [Reactive evictions in flight]).
CUresult Allocator::evict_for(Device& dev, uint64_t bytes_needed, std::span<Block* const> keep,
                              uint64_t largest) noexcept {
  std::vector<Block*> candidates;
  try {
    for (auto& [base, block] : blocks_) {
      if (block->device != dev.ordinal || block->small || block->pins || kept(keep, block))
        continue;
      // A buffer still being prefetched can go again: the eviction copy
      // waits for the prefetch copy (its waits).
      if (block->residency != Residency::resident && block->residency != Residency::prefetching)
        continue;
      if (block->escaped && !dev.host_vmm) continue;
      if (block->range_bytes > largest) continue;
      candidates.push_back(block);
    }
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (candidates.empty()) return CUDA_ERROR_OUT_OF_MEMORY;
  // Least recently used first (Note [Choosing victims]).
  std::sort(candidates.begin(), candidates.end(),
            [](const Block* a, const Block* b) { return a->last_tick < b->last_tick; });
  size_t chosen = 0;
  uint64_t freed = 0;
  while (chosen < candidates.size() && freed < bytes_needed)
    freed += candidates[chosen++]->range_bytes;
  const CUresult r = evict(dev, std::span<Block*>(candidates.data(), chosen));
  if (r == CUDA_SUCCESS) {
    // Note [Prefetching ahead]'s order; entries of buffers fetched back or
    // freed since go when they outnumber the buffers.
    std::vector<uintptr_t>& lifo = dev.evicted_for_room;
    if (lifo.size() > 2 * blocks_.size() + 64)
      std::erase_if(lifo, [this](uintptr_t base) {
        const Block* b = by_base_.find(base);
        return !b || (b->residency != Residency::evicted && b->residency != Residency::evicting);
      });
    try {
      for (size_t i = 0; i < chosen; ++i)
        lifo.push_back(candidates[i]->base);
    } catch (...) {
      lifo.clear();  // only the order of fetching ahead is lost
    }
  }
  return r;
}

// Note [Prefetching ahead]
// Without a plan, an evicted buffer comes back when a use names it, and the
// use waits for its copy. But training gives memory back in the reverse
// order it took it: past the step's peak, the backward pass frees as it
// goes and wants the forward pass's buffers last evicted first. So once
// live bytes have fallen well below their peak (an eighth of the budget),
// each free brings back the buffers last evicted for room while that
// leaves a quarter of the budget free without evicting anything: their
// copies run on the prefetch stream while the device computes, and a use
// finds them there or in flight. Once they rise an eighth above their low,
// the watch waits for the next peak. The room left matters: with an eighth,
// ResNet-50 at 4x its batch under its 1x peak fetched back what the
// backward pass's new buffers then evicted again (426 ms an iteration,
// against 387 without fetching ahead and 371 with a quarter). Where a plan
// moves buffers, fetching back is the plan's.
void Allocator::prefetch_ahead(Device& dev) noexcept {
  const uint64_t margin = dev.budget_bytes / 8, spare = dev.budget_bytes / 4;
  if (!dev.used_falling && dev.used_bytes + margin <= dev.used_peak) {
    dev.used_falling = true;
    dev.used_low = dev.used_bytes;
  }
  if (!dev.used_falling || dev.planned) return;
  dev.used_low = std::min(dev.used_low, dev.used_bytes);
  while (!dev.evicted_for_room.empty()) {
    Block* block = by_base_.find(dev.evicted_for_room.back());
    // One still in flight lands if its copy is done (no wait); if not, a
    // later free asks again, for it is wanted before those evicted before
    // it. One fetched back or freed since is passed over.
    if (block && block->device == dev.ordinal && block->residency == Residency::evicting) {
      land_evictions(dev, /*wait_for_one=*/false);
      if (block->residency == Residency::evicting) return;
    }
    if (!block || block->device != dev.ordinal || block->residency != Residency::evicted) {
      dev.evicted_for_room.pop_back();
      continue;
    }
    if (room(dev) < block->range_bytes + spare) return;
    ScopedContext scope(driver_, dev.context);
    Block* keep[] = {block};
    if (scope.status() != CUDA_SUCCESS ||
        prefetch(*block, dev.prefetch_stream, keep, PrefetchReason::planned,
                 /*may_evict=*/false) != CUDA_SUCCESS)
      return;
    dev.evicted_for_room.pop_back();
    ++stats_.prefetches_ahead;
    block->last_tick = ++tick_;  // wanted soon: the last to go under pressure
  }
}

uint64_t Allocator::room(const Device& dev) const noexcept {
  return dev.budget_bytes - std::min(dev.device_bytes, dev.budget_bytes) + dev.free_mapped_bytes +
         dev.page_pool.size() * dev.granularity;
}

// Note [Evicting ahead]
// Without a plan, an allocation that finds no room evicts then, and the new
// buffer's first use waits on the device for the victims' copies out (Note
// [Reactive evictions in flight]): at the step's peak, one such wait after
// another. So each allocation that leaves less than a sixteenth of the
// budget free, counting pages on their way out, starts evicting the least
// recently used buffers until that much is free or on its way: their copies
// run while the device computes, and the next allocations find their pages
// there, copied. The extra bytes moved are about that sixteenth at each peak
// (ResNet-50 under its 1x peak: 20.1 to 19.2 ms a step at 1x, 350 to 346 at
// 4x, 125 to 126 at 2x). Victims ahead of need are at most a quarter of the
// budget, so a small budget of a few big buffers does not lose one of them
// for a sixteenth (victims no bigger than the sixteenth left ResNet-50 at 4x
// under its 1x peak only small buffers that came back on demand: 361 ms a
// step against 346). It starts once something had to be evicted for room, so
// a workload that fits moves nothing (ResNet-50 under 110% of its peak: with
// 130 MiB free at the peak, a reserve kept from the start moved 98 MiB each
// way an iteration). Where a plan moves buffers, it makes the room.
void Allocator::evict_ahead(Device& dev, Block* just) noexcept {
  if (!dev.overflowed || dev.planned || just->small) return;
  const uint64_t reserve = dev.budget_bytes / 16;
  uint64_t free = room(dev);
  for (const Block* block : dev.evicting)
    free += block->pages.size() * dev.granularity;
  if (free >= reserve) return;
  Block* keep[] = {just};
  if (evict_for(dev, reserve - free, keep, /*largest=*/dev.budget_bytes / 4) == CUDA_SUCCESS)
    ++stats_.evictions_ahead;
}

// Note [A step that fits]
// Evicting ahead (Note [Evicting ahead]) starts once something had to be
// evicted for room, and that may be only a first step's start-up work. So
// each device also watches what its live buffers would take on the device
// were they all resident (their pages, and the small pool's slabs) over
// each step of the workload (Note [Placed as a step ago]): once a
// whole step needed no more than the budget, nothing is evicted ahead
// until something must be evicted for room again. The transformer snapshot
// at 101-105% of its peak, whose warm-up overflowed once, moved 56-113 MB
// each way every step for nothing before (190, 199 and 85 VMM calls a step
// at 101, 102 and 105%). A step that does not fit (ResNet-50 at its 1x
// peak, whose pages need 5% more than the budget, or at 2x) keeps evicting
// ahead. Cycles of live bytes (Note [Prefetching ahead]) are no measure for
// this: the tail of a backward pass over the budget rises and falls below
// it several times a step.
void Allocator::count_step(Device& dev, const Block& block) noexcept {
  if (block.small || block.range_bytes > dev.budget_bytes) return;  // not in the arena's steps
  dev.live_large_bytes += block.range_bytes;
  dev.step_need_high = std::max(dev.step_need_high, dev.live_large_bytes + dev.slab_bytes);
  const uint64_t period = dev.steps.period();
  if (period == 0) {
    dev.step_allocations = 0;
    return;
  }
  if (++dev.step_allocations < period) return;
  if (dev.step_need_high <= dev.budget_bytes) dev.overflowed = false;
  dev.step_allocations = 0;
  dev.step_need_high = dev.live_large_bytes + dev.slab_bytes;
}

// Note [Host copies by best fit]
// Host memory for evicted bytes is pinned once and reused: creating it
// pins pages (about 250 us a MiB on an H200), and a training loop evicts
// the same buffers every iteration. Two things keep the pinned total at
// what is evicted at once. An eviction first takes back the copies whose
// prefetch has landed (they wait in `host_releases` for the copy in to
// finish), not only at the next prefetch: evictions come in runs between
// prefetches, and a run used to pin copies afresh beside free ones (on
// ResNet-50's V100 trace at 1600 MiB, 2.66 GB pinned for 1.33 GB evicted,
// and a fourth iteration 2.8x the others). And a cached copy serves any
// range it holds, up to twice its size (the range maps the copy's front,
// cuMemMap with a size below the handle's), not only one of its own size.

// A host copy for `block` (Note [Eviction keeps the address mapped]); the
// block is then evicting.
CUresult Allocator::take_host_copy(Device& dev, Block& block) noexcept {
  CUresult r = CUDA_SUCCESS;
  collect_host_releases(dev, false);
  if (dev.host_vmm) {
    // Note [Host copies by best fit]: the smallest cached copy that holds
    // the range, if it is at most twice its size; its front is mapped.
    auto cached = dev.host_cache.end();
    for (auto it = dev.host_cache.begin(); it != dev.host_cache.end(); ++it)
      if (it->size_bytes >= block.range_bytes && it->size_bytes / 2 <= block.range_bytes &&
          (cached == dev.host_cache.end() || it->size_bytes < cached->size_bytes))
        cached = it;
    if (cached != dev.host_cache.end()) {
      block.host = *cached;
      *cached = dev.host_cache.back();
      dev.host_cache.pop_back();
    } else {
      CUmemAllocationProp prop{};
      prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
      prop.location = dev.host_location;
      HostCopy copy;
      copy.size_bytes = block.range_bytes;
      r = calls_.cuMemCreate(&copy.handle, copy.size_bytes, &prop);
      if (r != CUDA_SUCCESS) return host_exhausted(dev, r);
      MappedRange window(calls_, dev);
      if ((r = window.reserve(copy.size_bytes)) != CUDA_SUCCESS ||
          (r = window.map(copy.handle)) != CUDA_SUCCESS) {
        window.undo();
        (void)calls_.cuMemRelease(copy.handle);
        return host_exhausted(dev, r);
      }
      copy.window = window.commit();
      block.host = copy;
    }
    stats_.host_bytes += block.host.size_bytes;
  } else {
    if (!dev.stash) {
      std::string error;
      dev.stash = HostStash::create(driver_, dev.context, error);
      if (!dev.stash) {
        log::warn("cannot make the pinned host stash: {}", error);
        return host_exhausted(dev, CUDA_ERROR_OUT_OF_MEMORY);
      }
    }
    block.stash = dev.stash->allocate(block.size_bytes);
    if (!block.stash) return host_exhausted(dev, CUDA_ERROR_OUT_OF_MEMORY);
    stats_.host_bytes += block.size_bytes;
  }
  stats_.peak_host_bytes = std::max(stats_.peak_host_bytes, stats_.host_bytes);
  block.residency = Residency::evicting;
  return CUDA_SUCCESS;
}

CUresult Allocator::host_exhausted(Device& dev, CUresult r) noexcept {
  if (r != CUDA_ERROR_OUT_OF_MEMORY) return r;
  static log::Limited limit(5);
  if (limit.allow())
    log::warn(
        "host memory exhausted: device {} budget {} bytes, device memory in use {}, "
        "host memory holding evicted buffers {}",
        dev.ordinal, dev.budget_bytes, dev.device_bytes, stats_.host_bytes);
  return r;
}

// Gives `block`'s host copy back at once (nothing reads it) and leaves the
// block resident.
void Allocator::release_host_copy(Device& dev, Block& block) noexcept {
  give_host_copy_back(dev, block.stash, block.size_bytes, block.host);
  block.stash = nullptr;
  block.host = {};
  block.residency = Residency::resident;
}

// Hands `block`'s host copy to the releases, to go back once `after` is
// done (collect_host_releases); false, with nothing changed, when it cannot
// be queued.
bool Allocator::release_host_copy_after(Device& dev, Block& block, const EventRef& after) noexcept {
  try {
    dev.host_releases.push_back(
        {block.stash, block.stash ? block.size_bytes : 0, block.host, after});
  } catch (...) {
    return false;
  }
  block.stash = nullptr;
  block.host = {};
  return true;
}

// A host copy whose copy's fate is unknown: kept out of reuse, and counted
// as lost; the block is resident (its pages never left).
void Allocator::lose_host_copy(Device& dev, Block& block) noexcept {
  dev.lost_host_bytes += block.stash ? block.size_bytes : block.host.size_bytes;
  block.stash = nullptr;
  block.host = {};
  block.residency = Residency::resident;
}

// Maps `block`'s host copy at its range; false when it cannot.
bool Allocator::map_host_copy(Device& dev, Block& block) noexcept {
  MappedRange range(calls_, dev, block.base, block.range_bytes);
  if (range.map(block.host.handle) != CUDA_SUCCESS) return false;
  range.commit();
  return true;
}

// The eviction copy of `block` is done: its pages come back; with host
// memory mapping, the range moves onto the host copy. False: the range
// could not be unmapped, and the block stays resident, or, where some of
// its pages went to another use, evicting (its bytes are in the host copy).
bool Allocator::land_eviction(Device& dev, Block& block, EvictReason reason,
                              uint64_t copied_ns) noexcept {
  if (calls_.cuMemUnmap(block.base, block.range_bytes) != CUDA_SUCCESS) {
    if (block.donated) return false;
    block.evict_copy.reset();
    release_host_copy(dev, block);  // still mapped, bytes still there
    return false;
  }
  give_pages(dev, block.pages);
  // Without the mapping the bytes are still in the host copy: the range
  // stays unmapped until the next use brings them back.
  if (block.host.handle) block.range_on_host = map_host_copy(dev, block);
  block.last_use.reset();
  block.before.reset();
  for (EventRef& wait : block.waits.events)
    wait.reset();
  block.evict_copy.reset();
  if (!block.donated) count_eviction(block, reason);
  block.donated = false;
  block.residency = Residency::evicted;
  // The bytes asked for; the rest of the range is not the buffer's.
  if (observer_)
    observer_->evicted(block.base, block.size_bytes, reason, block.evict_queued_ns, copied_ns);
  return true;
}

// An eviction counts once its buffer's pages leave: when it lands, or when
// it first gives pages to another use.
void Allocator::count_eviction(const Block& block, EvictReason reason) noexcept {
  ++stats_.evictions;
  if (reason == EvictReason::plan) ++stats_.evictions_planned;
  stats_.bytes_to_host += block.size_bytes;
}

// Evicts `victims` in three phases; each leaves every victim where its
// bytes are valid if it fails. The copies stay in flight: the victims join
// the evictions in flight (Note [Reactive evictions in flight]).
CUresult Allocator::evict(Device& dev, std::span<Block*> victims) noexcept {
  // 1. A host copy for each victim, or for none.
  size_t ready = 0;
  CUresult r = CUDA_SUCCESS;
  try {
    dev.evicting.reserve(dev.evicting.size() + victims.size());
  } catch (...) {
    r = CUDA_ERROR_OUT_OF_MEMORY;
  }
  for (; r == CUDA_SUCCESS && ready < victims.size(); ++ready)
    if ((r = take_host_copy(dev, *victims[ready])) != CUDA_SUCCESS) break;
  // 2. The copies out, each after its buffer's last use, then one event
  // after them all.
  size_t queued = 0;
  for (; r == CUDA_SUCCESS && queued < victims.size(); ++queued)
    if ((r = queue_copy_out(dev, *victims[queued])) != CUDA_SUCCESS) break;
  if (r != CUDA_SUCCESS) {
    if (queued > 0) (void)calls_.cuStreamSynchronize(dev.evict_stream);
    abandon_evictions(dev, victims.first(ready), queued);
    return r;
  }
  if (EventRef copied = record_event(dev, dev.evict_stream)) {
    for (Block* block : victims) {
      block->evict_copy = copied;
      block->evict_reason = EvictReason::budget;
      dev.evicting.push_back(block);  // reserved above
    }
    return CUDA_SUCCESS;
  }
  // 3. Without an event nothing tells when the copies are done: the host
  // waits for them and they land now.
  if ((r = calls_.cuStreamSynchronize(dev.evict_stream)) != CUDA_SUCCESS) {
    for (Block* block : victims)
      lose_host_copy(dev, *block);  // the copies' fate is unknown
    return r;
  }
  const uint64_t copied_ns = observer_ ? observer_->clock_ns() : 0;
  size_t evicted = 0;
  for (Block* block : victims)
    evicted += land_eviction(dev, *block, EvictReason::budget, copied_ns) ? 1 : 0;
  return evicted == 0 ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

// Queues `block`'s copy to its host copy on the eviction stream, after its
// last use and whatever it waits for.
CUresult Allocator::queue_copy_out(Device& dev, Block& block) noexcept {
  for (const UsePoint* point : {&block.last_use, &block.before})
    if (CUresult r = order_after(dev, *point, dev.evict_stream); r != CUDA_SUCCESS) return r;
  for (const EventRef* event : {&block.waits.events[0], &block.waits.events[1]}) {
    if (event->known_done()) continue;
    if (CUresult r = calls_.cuStreamWaitEvent(dev.evict_stream, event->event()); r != CUDA_SUCCESS)
      return r;
  }
  if (observer_) block.evict_queued_ns = observer_->clock_ns();
  return block.stash ? driver_.cuMemcpyDtoHAsync_v2(block.stash, block.base, block.size_bytes,
                                                    dev.evict_stream)
                     : driver_.cuMemcpyDtoDAsync_v2(block.host.window, block.base, block.size_bytes,
                                                    dev.evict_stream);
}

// Phase 1 or 2 failed: nothing moved, and every victim in `ready` (with a
// host copy) stays resident with its bytes. The first `queued` copies may still
// be reading them, so their next uses wait for the eviction stream, and
// their host copies go back only after it.
void Allocator::abandon_evictions(Device& dev, std::span<Block*> ready, size_t queued) noexcept {
  EventRef drained = queued > 0 ? record_event(dev, dev.evict_stream) : EventRef();
  for (size_t i = 0; i < ready.size(); ++i) {
    Block& block = *ready[i];
    if (i >= queued) {
      release_host_copy(dev, block);
      continue;
    }
    if (!drained) {
      // No event either: the host copy cannot be known to be free; keep it.
      lose_host_copy(dev, block);
      continue;
    }
    block.waits.events[0] = drained;
    block.waits.events[1].reset();
    if (!release_host_copy_after(dev, block, drained)) {
      // Not queued: wait for the copies, then nothing reads it.
      drained.synchronize();
      release_host_copy(dev, block);
    }
    block.residency = Residency::resident;
  }
}

// Brings `block` back for a use on `stream`: pages mapped at its range, the
// copy queued on the prefetch stream, `stream` made to wait for it.
CUresult Allocator::prefetch(Block& block, CUstream stream, std::span<Block* const> keep,
                             PrefetchReason reason, bool may_evict) noexcept {
  Device& dev = *devices_[static_cast<size_t>(block.device)];
  ScopedContext scope(driver_, dev.context);
  if (scope.status() != CUDA_SUCCESS) return scope.status();
  // It could never fit: nothing is evicted for it (Note [Buffers bigger than the budget]).
  if (block.range_bytes > dev.budget_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
  collect_host_releases(dev, false);
  // What may still reach the pages: the copy in waits for it. Until the
  // copy is queued, every exit gives them back as `pages` leaves.
  TakenPages pages(*this, dev);
  // A prefetch never waits for room: its caller holds pins, or is a plan
  // that lets the use fetch the buffer instead (Note [Waiting for room]).
  CUresult r = take_pages(dev, static_cast<size_t>(block.range_bytes / dev.granularity), pages,
                          keep, /*may_wait=*/nullptr, may_evict);
  if (r != CUDA_SUCCESS) return r;
  const PagesAfter& donor = pages.after();
  if ((donor.donor &&
       (r = calls_.cuStreamWaitEvent(dev.prefetch_stream, donor.donor.event())) != CUDA_SUCCESS) ||
      (r = order_after(dev, donor.uses, dev.prefetch_stream)) != CUDA_SUCCESS)
    return r;
  try {
    dev.host_releases.reserve(dev.host_releases.size() + 1);
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (block.range_on_host) {
    // Unseen kernels may have used the host mapping; seen ones are waited for.
    synchronize_point(dev, block.last_use);
    if ((r = calls_.cuMemUnmap(block.base, block.range_bytes)) != CUDA_SUCCESS) return r;
    block.range_on_host = false;
  }
  // On failure the range goes back onto the host copy, where it was.
  MappedRange range(calls_, dev, block.base, block.range_bytes);
  auto back_to_host = [&]() {
    range.undo();
    pages.give_back();
    if (block.host.handle) block.range_on_host = map_host_copy(dev, block);
  };
  if ((r = range.map(pages.pages())) != CUDA_SUCCESS) {
    back_to_host();
    return r;
  }
  void* timing = observer_ ? observer_->copy_begin(dev.prefetch_stream) : nullptr;
  r = block.stash ? driver_.cuMemcpyHtoDAsync_v2(block.base, block.stash, block.size_bytes,
                                                 dev.prefetch_stream)
                  : driver_.cuMemcpyDtoDAsync_v2(block.base, block.host.window, block.size_bytes,
                                                 dev.prefetch_stream);
  const uint64_t bytes = block.size_bytes;  // the rest of the range is not the buffer's
  EventRef copied = r == CUDA_SUCCESS ? record_event(dev, dev.prefetch_stream) : EventRef();
  // Reported while the copy is just queued, so that what times it follows it
  // on the stream; and only when it counts (Note [Residency]).
  if (observer_) {
    if (copied)
      observer_->prefetched(block.base, bytes, reason, dev.prefetch_stream, timing);
    else
      observer_->copy_abandoned(timing);
  }
  if (!copied) {
    // The bytes are still only in the host copy: undo the mapping.
    if (r == CUDA_SUCCESS) (void)calls_.cuStreamSynchronize(dev.prefetch_stream);
    back_to_host();
    return r == CUDA_SUCCESS ? CUDA_ERROR_OUT_OF_MEMORY : r;
  }
  if (stream != dev.prefetch_stream) {
    if ((r = calls_.cuStreamWaitEvent(stream, copied.event())) != CUDA_SUCCESS) {
      // Safe either way: wait here rather than undo a queued copy.
      copied.synchronize();
    }
  }
  range.commit();
  prefetch_queued(dev, block, pages.keep(), std::move(copied), reason);
  return CUDA_SUCCESS;
}

// The copy back is queued and `copied` follows it: the pages are the
// block's, the host copy goes back once the copy is done, and the block's
// next use waits for it.
void Allocator::prefetch_queued(Device& dev, Block& block, std::vector<PageHandle> pages,
                                EventRef copied, PrefetchReason reason) noexcept {
  block.pages = std::move(pages);
  stats_.bytes_to_device += block.size_bytes;
  ++stats_.prefetches;
  if (reason == PrefetchReason::on_demand) ++stats_.prefetches_on_demand;
  (void)release_host_copy_after(dev, block, copied);  // room reserved by prefetch()
  block.waits.events[0] = std::move(copied);
  block.waits.events[1].reset();
  block.residency = Residency::prefetching;
}

}  // namespace cuswap
