// What the driver's memory pools answer under a budget (swap_allocator.h).
//
// Note [Memory pools under a budget]
// Under a budget every stream-ordered allocation comes from this allocator,
// whichever pool it names (cuMemAllocAsync, cuMemAllocFromPoolAsync), so
// the driver's pools hold nothing, and what they would say of themselves is
// wrong. A framework reads them: TensorFlow's cuda_malloc_async allocator
// sets the default pool's release threshold, reads it back, and logs the
// reserved and used figures when an allocation fails. So, for every pool
// of the current context's device, as one pool:
// - CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: the device memory cuswap holds
//   (device_bytes: buffers' pages, slabs, and what it caches for reuse);
// - CU_MEMPOOL_ATTR_USED_MEM_CURRENT: the bytes of live allocations, evicted
//   ones included (they are still the program's);
// - the two high-water marks, which setting to 0 starts again from now, as
//   the driver's do;
// - cuMemPoolTrimTo gives cached memory back to the driver: freed ranges
//   kept mapped for reuse (once their last use is done) and pooled pages,
//   until at most minBytesToKeep is held or nothing cached is left. Memory
//   that buffers hold stays: the driver does not trim allocations either.
//   The same release runs when the application's own cuMemCreate finds no
//   memory (release_cached), and the call is made once more.
// The release threshold and the reuse flags are the driver's to keep (the
// hooks pass them on), so they read back as set. The threshold does not
// make cuswap give memory back at synchronisations: what it caches is
// within the budget already, and trimming is explicit.
#include <algorithm>
#include <mutex>

#include "allocator/swap_allocator.h"
#include "allocator/swap_internal.h"

namespace cuswap {

CUresult Allocator::pool_figures(PoolFigures& out) noexcept {
  std::lock_guard lock(mu_);
  int ordinal = 0;
  if (CUresult r = current_device(ordinal); r != CUDA_SUCCESS) return r;
  Device* dev = nullptr;
  if (CUresult r = device(ordinal, dev); r != CUDA_SUCCESS) return r;
  dev->reserved_high = std::max(dev->reserved_high, dev->device_bytes);
  out = {dev->device_bytes, dev->reserved_high, dev->used_bytes, dev->used_high};
  return CUDA_SUCCESS;
}

CUresult Allocator::reset_pool_high(bool reserved, bool used) noexcept {
  std::lock_guard lock(mu_);
  int ordinal = 0;
  if (CUresult r = current_device(ordinal); r != CUDA_SUCCESS) return r;
  Device* dev = nullptr;
  if (CUresult r = device(ordinal, dev); r != CUDA_SUCCESS) return r;
  if (reserved) dev->reserved_high = dev->device_bytes;
  if (used) dev->used_high = dev->used_bytes;
  return CUDA_SUCCESS;
}

CUresult Allocator::trim(uint64_t keep_bytes) noexcept {
  std::lock_guard lock(mu_);
  int ordinal = 0;
  if (CUresult r = current_device(ordinal); r != CUDA_SUCCESS) return r;
  Device* dev = nullptr;
  if (CUresult r = device(ordinal, dev); r != CUDA_SUCCESS) return r;
  return trim_device(*dev, keep_bytes);
}

uint64_t Allocator::release_cached(int ordinal) noexcept {
  std::lock_guard lock(mu_);
  const auto i = static_cast<size_t>(ordinal);
  if (ordinal < 0 || i >= devices_.size() || !devices_[i] || !devices_[i]->initialised) return 0;
  Device& dev = *devices_[i];
  const uint64_t before = dev.device_bytes;
  (void)trim_device(dev, 0);
  return before - dev.device_bytes;
}

CUresult Allocator::trim_device(Device& dev, uint64_t keep_bytes) noexcept {
  ScopedContext scope(driver_, dev.context);
  if (scope.status() != CUDA_SUCCESS) return scope.status();
  retire_done(dev, /*wait=*/true);
  while (dev.device_bytes > keep_bytes) {
    if (dev.page_pool.empty()) {
      // Pages of free ranges, their old places unmapped first.
      std::vector<PageHandle> pages;
      try {
        pages.reserve(static_cast<size_t>(dev.free_mapped_bytes / dev.granularity));
      } catch (...) {
        return CUDA_ERROR_OUT_OF_MEMORY;
      }
      if (!reclaim_free(dev, pages.capacity(), pages, nullptr)) break;
      give_pages(dev, pages);
      continue;
    }
    if (CUresult r = calls_.cuMemRelease(dev.page_pool.back()); r != CUDA_SUCCESS) return r;
    dev.page_pool.pop_back();
    dev.device_bytes -= dev.granularity;
    stats_.device_bytes -= dev.granularity;
  }
  return CUDA_SUCCESS;
}

}  // namespace cuswap
