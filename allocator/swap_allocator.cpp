// The swapping allocator's front: allocation, uses, the budget's view.
// Pages, ranges and events are in device_pages.cpp; moving bytes in
// eviction.cpp; giving memory back in release.cpp. Notes are in
// swap_allocator.h.
#include "allocator/swap_allocator.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "allocator/swap_internal.h"
#include "common/log.h"

namespace cuswap {

Allocator::Allocator(const Driver& driver, const AllocatorSettings& settings)
    : driver_(driver), calls_(driver, stats_), settings_(settings) {}

Allocator::~Allocator() {
  // A test is done (the shim's allocator lives as long as the process):
  // device memory goes back with the context; cuswap's own bookkeeping is
  // freed here, and the stash gives its pinned memory back.
  // Events go back to their pools as their holders go (Note [Shared
  // events]); the pools, destroyed last with their devices, destroy them.
  for (auto& [base, block] : blocks_)
    delete block;
}

CUresult Allocator::current_device(int& ordinal) noexcept {
  if (devices_.size() == 1 && devices_[0] && devices_[0]->initialised) {
    // One device in the process: no driver call on the fast path.
    ordinal = 0;
    return CUDA_SUCCESS;
  }
  CUdevice device = 0;
  CUresult r = driver_.cuCtxGetDevice(&device);
  if (r != CUDA_SUCCESS) return r;
  ordinal = static_cast<int>(device);
  return CUDA_SUCCESS;
}

CUresult Allocator::device(int ordinal, Device*& out) noexcept {
  if (ordinal < 0 || ordinal >= conf::kMaxDevices) return CUDA_ERROR_INVALID_DEVICE;
  try {
    if (devices_.size() <= static_cast<size_t>(ordinal)) {
      int count = 0;
      CUresult r = driver_.cuDeviceGetCount(&count);
      if (r != CUDA_SUCCESS) return r;
      devices_.resize(static_cast<size_t>(std::max(count, ordinal + 1)));
    }
    auto& slot = devices_[static_cast<size_t>(ordinal)];
    if (!slot) slot = std::make_unique<Device>();
    if (!slot->initialised) {
      CUresult r = init_device(*slot, ordinal);
      if (r != CUDA_SUCCESS) return r;
    }
    out = slot.get();
    return CUDA_SUCCESS;
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
}

CUresult Allocator::allocate(uint64_t size_bytes, CUdeviceptr* out) noexcept {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  if (size_bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  std::unique_lock lock(mu_);
  int ordinal = 0;
  if (CUresult r = current_device(ordinal); r != CUDA_SUCCESS) return r;
  Device* dev = nullptr;
  if (CUresult r = device(ordinal, dev); r != CUDA_SUCCESS) return r;
  ScopedContext scope(driver_, dev->context);
  if (scope.status() != CUDA_SUCCESS) return scope.status();
  Block* block = nullptr;
  CUresult r = size_bytes >= settings_.swap_min_bytes
                   ? allocate_large(*dev, size_bytes, &lock, block)
                   : allocate_small(*dev, size_bytes, &lock, block);
  if (r != CUDA_SUCCESS) {
    ++stats_.out_of_memory;
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      static log::Limited limit(5);
      if (limit.allow())
        log::warn(
            "out of memory: {} bytes on device {}: budget {}, device memory in use {}, "
            "host memory holding evicted buffers {}{}",
            size_bytes, ordinal, dev->budget_bytes, dev->device_bytes, stats_.host_bytes,
            size_bytes > dev->budget_bytes && !dev->host_vmm
                ? "; more than the budget, so only host memory mapped at the buffer could hold "
                  "it, and this driver has none"
                : "");
    }
    return r;
  }
  try {
    by_base_.insert(block->base, block);
    blocks_.emplace(block->base, block);
  } catch (...) {
    by_base_.erase(block->base);
    release_block(block, nullptr, false);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  block->last_tick = ++tick_;
  dev->used_bytes += block->size_bytes;
  dev->used_high = std::max(dev->used_high, dev->used_bytes);
  if (dev->used_falling && dev->used_bytes > dev->used_low + dev->budget_bytes / 8) {
    dev->used_falling = false;  // rising again (Note [Prefetching ahead])
    dev->used_peak = 0;
  }
  if (!dev->used_falling) dev->used_peak = std::max(dev->used_peak, dev->used_bytes);
  dev->reserved_high = std::max(dev->reserved_high, dev->device_bytes);
  count_step(*dev, *block);
  evict_ahead(*dev, block);
  *out = block->base;
  return CUDA_SUCCESS;
}

CUresult Allocator::allocate_large(Device& dev, uint64_t size_bytes, MayWait may_wait,
                                   Block*& out) noexcept {
  const uint64_t range_bytes = round_up(size_bytes, dev.granularity);
  auto block = std::make_unique<Block>();
  block->size_bytes = size_bytes;
  block->range_bytes = range_bytes;
  block->device = dev.ordinal;
  if (range_bytes > dev.budget_bytes) {
    CUresult r = allocate_on_host(dev, *block);
    if (r != CUDA_SUCCESS) return r;
    out = block.release();
    return CUDA_SUCCESS;
  }
  if (CUresult r = place_large(dev, *block, may_wait); r != CUDA_SUCCESS) return r;
  ++stats_.allocations_large;
  out = block.release();
  return CUDA_SUCCESS;
}

// Note [Buffers bigger than the budget]
// A buffer that could never be on the device within the budget (a
// framework's pool reserved whole, a huge embedding table) lives in host
// memory from the start: host-located memory mapped at its range, as an
// evicted buffer's is, which kernels reach over the link. Its uses run in
// place, slowly but correctly; it is never prefetched, so it never pushes
// the working set out. Without host memory mapping (the pinned stash), a
// kernel could not reach it: the allocation is refused at once, before
// anything is evicted for it.
CUresult Allocator::allocate_on_host(Device& dev, Block& block) noexcept {
  if (!dev.host_vmm) return CUDA_ERROR_OUT_OF_MEMORY;
  FreeRange space;
  CUresult r = claim_space(dev, block.range_bytes, space);
  if (r != CUDA_SUCCESS) return r;
  if ((r = take_host_copy(dev, block)) != CUDA_SUCCESS) {
    free_piece(dev, std::move(space));
    return r;
  }
  MappedRange range(calls_, dev, space.base, space.range_bytes);
  if ((r = range.map(block.host.handle)) != CUDA_SUCCESS) {
    range.undo();
    release_host_copy(dev, block);
    free_piece(dev, std::move(space));
    return r;
  }
  block.base = range.commit();
  block.range_on_host = true;
  block.residency = Residency::evicted;
  ++stats_.allocations_large;
  ++stats_.allocations_on_host;
  log::emit(log::LogLevel::info,
            "a buffer of {} bytes is more than device {}'s budget: it lives in host memory",
            block.size_bytes, dev.ordinal);
  return CUDA_SUCCESS;
}

bool Allocator::owns(uintptr_t base) noexcept {
  std::lock_guard lock(mu_);
  return by_base_.find(base) != nullptr;
}

CUresult Allocator::free(uintptr_t base, CUstream stream, bool stream_ordered) noexcept {
  std::lock_guard lock(mu_);
  Block* block = by_base_.find(base);
  if (!block) return CUDA_ERROR_INVALID_VALUE;
  by_base_.erase(base);
  blocks_.erase(base);
  Device& dev = *devices_[static_cast<size_t>(block->device)];
  dev.used_bytes -= block->size_bytes;
  if (!block->small && block->range_bytes <= dev.budget_bytes)
    dev.live_large_bytes -= block->range_bytes;
  release_block(block, stream, stream_ordered);
  prefetch_ahead(dev);
  return CUDA_SUCCESS;
}

CUresult Allocator::prepare(CUstream stream, const UseBuffers& use) noexcept {
  std::unique_lock lock(mu_);
  if (blocks_.empty()) return CUDA_SUCCESS;
  Block* named[256];
  size_t count = 0;
  for (size_t i = 0; i < use.bases.size() && count < std::size(named); ++i) {
    if (Block* block = by_base_.find(use.bases[i])) named[count++] = block;
  }
  std::span<Block* const> keep(named, count);
  for (;;) {
    // With this use's pins held nothing below waits for room (Note
    // [Waiting for room]): make_resident is given no lock to wait with.
    for (Block* block : keep)
      ++block->pins;
    CUresult r = make_resident(stream, use, keep);
    if (r == CUDA_SUCCESS) {
      ++active_uses_;
      return CUDA_SUCCESS;
    }
    for (Block* block : keep)
      --block->pins;
    if (r != CUDA_ERROR_OUT_OF_MEMORY || !wait_for_others(lock)) return r;
  }
}

// Note [Waiting for room]: a use that finds no room while other uses are
// prepared and not yet finished is not out of memory: their pins go once
// they finish, and a finish needs no memory, so it always comes. But a
// prepare must not wait holding pins of its own: threads that each pinned
// part of what they need would wait for each other, and every one would
// fail though each use fits by itself. So a prepare never waits for room
// inside (it passes no lock down); it lets its pins go, so that the others can
// take their pages, waits for the next finish and starts again. With no use
// in flight nothing is pinned but its own, so it is out of memory. It counts
// finishes, not wake-ups: several prepares that lose the race for the same
// pages again and again must not use up their patience among themselves
// while the use they wait for is a long one (a copy to pageable memory
// holds its pins until the bytes have arrived). Only kNoFinishFor without
// any finish ends the wait. An allocation holds no pins and waits inside
// take_pages (wait_for_room), after giving back the pages it took so far,
// for the same reason.
bool Allocator::wait_for_others(std::unique_lock<std::mutex>& lock) noexcept {
  constexpr auto kNoFinishFor = std::chrono::seconds(10);
  if (active_uses_ == 0) return false;
  ++stats_.waits_for_room;
  const uint64_t seen = finishes_;
  ++waiting_;
  const bool finished = finished_.wait_for(lock, kNoFinishFor, [&] { return finishes_ != seen; });
  --waiting_;
  return finished;
}

CUresult Allocator::make_resident(CUstream stream, const UseBuffers& use,
                                  std::span<Block* const> keep) noexcept {
  if (use.unknown) {
    // It may touch anything: in stash mode every buffer must be on the
    // device and stay there (Note [Eviction keeps the address mapped]).
    for (auto& [base, block] : blocks_) {
      Device& dev = *devices_[static_cast<size_t>(block->device)];
      if (block->evict_copy) cancel_eviction(dev, *block, stream);
      if (block->residency == Residency::evicting) return CUDA_ERROR_UNKNOWN;  // cannot land
      // One on its way back (planned, or fetched ahead) is read after its copy.
      if (block->residency == Residency::prefetching)
        for (EventRef& wait : block->waits.events)
          if (wait && !wait.done())
            if (CUresult r = calls_.cuStreamWaitEvent(stream, wait.event()); r != CUDA_SUCCESS)
              return r;
      if (dev.host_vmm || block->small) continue;
      mark_escaped(*block);
      if (block->residency == Residency::evicted) {
        ++stats_.evicted_accesses;
        if (CUresult r = prefetch(*block, stream, keep, PrefetchReason::unseen_use);
            r != CUDA_SUCCESS)
          return r;
      }
    }
  }
  for (Block* block : keep) {
    block->last_tick = ++tick_;
    if (!block->before.empty()) {
      // The first use of reused memory: after its previous owner's work.
      if (CUresult r =
              order_after(*devices_[static_cast<size_t>(block->device)], block->before, stream);
          r != CUDA_SUCCESS)
        return r;
      block->before.reset();
    }
    if (use.escapes) mark_escaped(*block);
    if (block->evict_copy)
      cancel_eviction(*devices_[static_cast<size_t>(block->device)], *block, stream);
    if (block->residency == Residency::evicting) return CUDA_ERROR_UNKNOWN;  // cannot land
    if (block->residency == Residency::evicted) {
      ++stats_.evicted_accesses;
      if (block->range_on_host &&
          block->range_bytes > devices_[static_cast<size_t>(block->device)]->budget_bytes) {
        ++stats_.uses_on_host;  // Note [Buffers bigger than the budget]
      } else if (CUresult r = prefetch(*block, stream, keep, PrefetchReason::on_demand);
                 r != CUDA_SUCCESS) {
        return r;
      }
    }
    bool waited = false;
    for (EventRef& wait : block->waits.events) {
      if (!wait || wait.done()) continue;
      if (CUresult r = calls_.cuStreamWaitEvent(stream, wait.event()); r != CUDA_SUCCESS) return r;
      waited = true;
    }
    if (waited && observer_ && block->residency == Residency::prefetching)
      observer_->waited(block->base, stream);
    if (block->residency == Residency::prefetching && !block->waits.events[0] &&
        !block->waits.events[1])
      block->residency = Residency::resident;
  }
  return CUDA_SUCCESS;
}

void Allocator::finish(CUstream stream, const UseBuffers& use, CUresult result) noexcept {
  std::lock_guard lock(mu_);
  if (blocks_.empty() && active_uses_ == 0) return;
  // The use is queued: it is counted, and its stream's entry and its
  // buffers know it (Note [Lazy use events]). Nothing is recorded but a
  // stream's marks once the budget is short (Note [Marks behind the host]).
  bool counted = false;
  Device* dev = nullptr;
  if (result == CUDA_SUCCESS) {
    ++use_seq_;
    int ordinal = 0;
    if (current_device(ordinal) == CUDA_SUCCESS && device(ordinal, dev) == CUDA_SUCCESS) {
      if (StreamUses* uses = stream_uses(*dev, stream)) {
        uses->last_seq = use_seq_;
        counted = true;
        if (dev->overflowed && use_seq_ >= uses->mark_due) mark(*dev, *uses);
      }
    }
    // A use no point can name is waited for, so that older points hold.
    if (!counted) (void)calls_.cuStreamSynchronize(stream);
  }
  for (size_t i = 0; i < use.bases.size(); ++i) {
    Block* block = by_base_.find(use.bases[i]);
    if (!block) continue;
    if (block->pins > 0) --block->pins;
    if (!counted) continue;
    block->last_use.add(stream, use_seq_);
    // A buffer of another device (peer access): that device knows the stream too.
    Device& owner = *devices_[static_cast<size_t>(block->device)];
    if (&owner != dev)
      if (StreamUses* uses = stream_uses(owner, stream)) uses->last_seq = use_seq_;
  }
  if (active_uses_ > 0) --active_uses_;
  ++finishes_;
  if (waiting_ > 0) finished_.notify_all();
}

// Called with mu_ held, through `may_wait`, when no room can be made: waits
// for a prepared use to finish, if there is one. False: nothing to wait for.
bool Allocator::wait_for_room(MayWait may_wait) noexcept {
  if (!can_wait_for_room(may_wait)) return false;
  ++waiting_;
  finished_.wait(*may_wait);
  --waiting_;
  return true;
}

void Allocator::note_host_words(const void* host, uint64_t size_bytes) noexcept {
  // Pointer tables are small; bulk data is not scanned.
  constexpr uint64_t kMaxScannedBytes = 4096;
  if (!host || size_bytes < 8 || size_bytes > kMaxScannedBytes) return;
  std::lock_guard lock(mu_);
  if (blocks_.empty()) return;
  bool any_stash = false;
  for (auto& dev : devices_)
    if (dev && dev->initialised && !dev->host_vmm) any_stash = true;
  if (!any_stash) return;
  const uintptr_t lowest = blocks_.begin()->first;
  const uintptr_t highest =
      std::prev(blocks_.end())->first + std::prev(blocks_.end())->second->range_bytes;
  const auto* bytes = static_cast<const unsigned char*>(host);
  for (uint64_t offset = 0; offset + 8 <= size_bytes; offset += 8) {
    uintptr_t word = 0;
    std::memcpy(&word, bytes + offset, sizeof word);
    if (word < lowest || word >= highest) continue;
    auto it = blocks_.upper_bound(word);
    if (it == blocks_.begin()) continue;
    --it;
    if (word - it->first < it->second->range_bytes && !it->second->small) mark_escaped(*it->second);
  }
}

void Allocator::mark_escaped(Block& block) noexcept {
  if (block.escaped) return;
  block.escaped = true;
  ++stats_.escaped_buffers;
  // Its range may now be reached by uses nobody sees: pages it gave away
  // must leave it first (Note [Reactive evictions in flight]).
  if (block.evict_copy && block.donated)
    cancel_eviction(*devices_[static_cast<size_t>(block.device)], block, nullptr);
}

CUresult Allocator::mem_get_info(size_t* free_bytes, size_t* total_bytes) noexcept {
  if (!free_bytes || !total_bytes) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  int ordinal = 0;
  if (CUresult r = current_device(ordinal); r != CUDA_SUCCESS) return r;
  Device* dev = nullptr;
  if (CUresult r = device(ordinal, dev); r != CUDA_SUCCESS) return r;
  size_t real_free = 0, real_total = 0;
  if (CUresult r = driver_.cuMemGetInfo_v2(&real_free, &real_total); r != CUDA_SUCCESS) return r;
  // Memory cuswap holds but would give back without evicting anything.
  const uint64_t reclaimable = dev->page_pool.size() * dev->granularity + dev->free_mapped_bytes;
  const uint64_t in_use = dev->device_bytes - reclaimable;
  const uint64_t budget_free = dev->budget_bytes > in_use ? dev->budget_bytes - in_use : 0;
  *free_bytes = static_cast<size_t>(std::min<uint64_t>(budget_free, real_free + reclaimable));
  *total_bytes = static_cast<size_t>(dev->budget_bytes);
  return CUDA_SUCCESS;
}

CUresult Allocator::device_total_mem(CUdevice device_handle, size_t* bytes) noexcept {
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  size_t total = 0;
  if (CUresult r = driver_.cuDeviceTotalMem_v2(&total, device_handle); r != CUDA_SUCCESS) return r;
  *bytes = static_cast<size_t>(std::min<uint64_t>(
      total, settings_.budget_bytes.get(static_cast<int>(device_handle), total)));
  return CUDA_SUCCESS;
}

void Allocator::set_observer(SwapObserver* observer) noexcept {
  std::lock_guard lock(mu_);
  observer_ = observer;
}

SwapStats Allocator::stats() noexcept {
  std::lock_guard lock(mu_);
  return stats_;
}

Residency Allocator::residency(uintptr_t base) noexcept {
  std::lock_guard lock(mu_);
  const Block* block = by_base_.find(base);
  return block ? block->residency : Residency::resident;
}

}  // namespace cuswap
