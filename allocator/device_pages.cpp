// The allocator's memory: each device's set-up, its page pool under the
// budget, mapping, the cache of freed ranges, shared events, and host copies
// waiting to be given back.
//
// Budget accounting: device_bytes counts every page cuswap created on the
// device (mapped at a buffer, in a slab, in a cached free range or in the
// pool); a page is created only while device_bytes stays within the budget.
#include <algorithm>
#include <new>

#include "allocator/swap_internal.h"
#include "common/log.h"

namespace cuswap {

ScopedContext::ScopedContext(const Driver& driver, CUcontext context) noexcept : driver_(driver) {
  CUcontext current = nullptr;
  status_ = driver_.cuCtxGetCurrent(&current);
  if (status_ != CUDA_SUCCESS || current == context || !context) return;
  status_ = driver_.cuCtxPushCurrent_v2(context);
  pushed_ = status_ == CUDA_SUCCESS;
}

ScopedContext::~ScopedContext() {
  if (!pushed_) return;
  CUcontext popped = nullptr;
  (void)driver_.cuCtxPopCurrent_v2(&popped);
}

CUresult Allocator::init_device(Device& dev, int ordinal) noexcept {
  dev.events.calls = &calls_;
  CUresult r = driver_.cuDeviceGet(&dev.cu_device, ordinal);
  if (r != CUDA_SUCCESS) return r;
  // Work is done in the context current at the device's first allocation
  // (the framework's); one device, one context.
  if ((r = driver_.cuCtxGetCurrent(&dev.context)) != CUDA_SUCCESS) return r;
  if (!dev.context) return CUDA_ERROR_INVALID_CONTEXT;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, ordinal};
  size_t granularity = 0;
  r = driver_.cuMemGetAllocationGranularity(&granularity, &prop,
                                            CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
  if (r != CUDA_SUCCESS) return r;
  dev.granularity = std::max<uint64_t>(granularity, 1);
  size_t total = 0;
  if ((r = driver_.cuDeviceTotalMem_v2(&total, dev.cu_device)) != CUDA_SUCCESS) return r;
  dev.total_bytes = total;
  dev.budget_bytes = std::min<uint64_t>(total, settings_.budget_bytes.get(ordinal, total));
  // Host-located virtual memory (Note [Eviction keeps the address mapped]).
  int host_vmm = 0;
  if (driver_.cuDeviceGetAttribute(
          &host_vmm, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
          dev.cu_device) != CUDA_SUCCESS)
    host_vmm = 0;
  dev.host_vmm = host_vmm != 0;
  if (dev.host_vmm) {
    int numa_id = -1;
    if (driver_.cuDeviceGetAttribute(&numa_id, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, dev.cu_device) ==
            CUDA_SUCCESS &&
        numa_id >= 0)
      dev.host_location = {CU_MEM_LOCATION_TYPE_HOST_NUMA, numa_id};
    else
      dev.host_location = {CU_MEM_LOCATION_TYPE_HOST, 0};
  }
  if ((r = driver_.cuStreamCreate(&dev.evict_stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
    return r;
  if ((r = driver_.cuStreamCreate(&dev.prefetch_stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
    (void)driver_.cuStreamDestroy_v2(dev.evict_stream);
    dev.evict_stream = nullptr;
    return r;
  }
  // Without it, two events are one by the host waiting for one of them.
  if (driver_.cuStreamCreate(&dev.join_stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
    dev.join_stream = nullptr;
  dev.ordinal = ordinal;
  dev.initialised = true;
  // Settings that leave the allocator useless say so once, here, where the
  // page size is known.
  if (dev.budget_bytes < dev.granularity)
    log::warn(
        "budget of {} bytes on device {} is below one page ({} bytes), the least cuswap maps: "
        "every allocation will be refused",
        dev.budget_bytes, ordinal, dev.granularity);
  else if (settings_.swap_min_bytes > dev.budget_bytes)
    log::warn(
        "swap_min of {} bytes is above the budget of {} bytes on device {}: no buffer can be "
        "evicted, so nothing beyond the budget fits",
        settings_.swap_min_bytes, dev.budget_bytes, ordinal);
  log::emit(log::LogLevel::info,
            "device {}: budget {} of {} bytes, pages of {} bytes, evicting to {}", ordinal,
            dev.budget_bytes, dev.total_bytes, dev.granularity,
            dev.host_vmm ? "host memory mapped at the buffer's range" : "the pinned host stash");
  return CUDA_SUCCESS;
}

CUresult Allocator::take_pages(Device& dev, size_t count, TakenPages& taken,
                               std::span<Block* const> keep, MayWait may_wait,
                               bool may_evict) noexcept {
  std::vector<PageHandle>& out = taken.pages();
  PagesAfter& after = taken.after();
  try {
    out.reserve(count);
  } catch (...) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  CUresult r = CUDA_SUCCESS;
  while (out.size() < count) {
    if (!dev.page_pool.empty()) {
      out.push_back(dev.page_pool.back());
      dev.page_pool.pop_back();
      continue;
    }
    if (dev.device_bytes + dev.granularity <= dev.budget_bytes) {
      CUmemAllocationProp prop{};
      prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
      prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, dev.ordinal};
      PageHandle page = 0;
      r = calls_.cuMemCreate(&page, dev.granularity, &prop);
      if (r == CUDA_SUCCESS) {
        out.push_back(page);
        dev.device_bytes += dev.granularity;
        stats_.device_bytes += dev.granularity;
        stats_.peak_device_bytes = std::max(stats_.peak_device_bytes, stats_.device_bytes);
        continue;
      }
      if (r != CUDA_ERROR_OUT_OF_MEMORY) break;
      // The device is fuller than the budget says (another process): make
      // room anyway and try again.
      ++stats_.driver_retries;
    }
    if (reclaim_free(dev, count - out.size(), out, &after)) continue;
    // Evictions in flight first (Note [Planned moves]): their pages once
    // their copies are done, with no wait by the host: the use is ordered
    // after them.
    if (!dev.evicting.empty()) {
      if (donate_pages(dev, count - out.size(), out, after)) continue;
      if (land_evictions(dev, true)) continue;
    }
    if (!may_evict) {
      r = CUDA_ERROR_OUT_OF_MEMORY;
      break;
    }
    dev.overflowed = true;  // Note [Evicting ahead]
    r = evict_for(dev, (count - out.size()) * dev.granularity, keep);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && can_wait_for_room(may_wait)) {
      // What it took goes back before it waits: the uses it waits for may
      // need those pages, and no page is held outside the allocator's
      // lists while the lock is free (Note [What always holds between
      // operations]).
      taken.give_back();
      if (wait_for_room(may_wait)) {
        r = CUDA_SUCCESS;
        continue;
      }
    }
    if (r != CUDA_SUCCESS) break;
    // Otherwise the evictions are queued: their pages are donated next.
  }
  if (out.size() == count) return CUDA_SUCCESS;
  taken.give_back();
  return r == CUDA_SUCCESS ? CUDA_ERROR_OUT_OF_MEMORY : r;
}

void Allocator::TakenPages::give_back() noexcept {
  if (pages_.empty()) return;  // kept, or none taken: nothing owes anything
  allocator_.give_donated(dev_, pages_, after_);
}

void Allocator::give_pages(Device& dev, std::vector<PageHandle>& pages) noexcept {
  for (PageHandle page : pages) {
    try {
      dev.page_pool.push_back(page);
    } catch (...) {
      if (calls_.cuMemRelease(page) == CUDA_SUCCESS) {
        dev.device_bytes -= dev.granularity;
        stats_.device_bytes -= dev.granularity;
      } else {
        dev.lost_device_bytes += dev.granularity;
      }
    }
  }
  pages.clear();
}

MappedRange::MappedRange(DriverCalls& calls, const Allocator::Device& dev) noexcept
    : calls_(calls), dev_(dev) {}

MappedRange::MappedRange(DriverCalls& calls, const Allocator::Device& dev, uintptr_t base,
                         uint64_t bytes) noexcept
    : calls_(calls), dev_(dev), base_(base), bytes_(bytes) {}

CUresult MappedRange::reserve(uint64_t bytes) noexcept {
  CUdeviceptr base = 0;
  CUresult r = calls_.cuMemAddressReserve(&base, bytes, dev_.granularity);
  if (r != CUDA_SUCCESS) return r;
  base_ = base;
  bytes_ = bytes;
  owned_ = true;
  return CUDA_SUCCESS;
}

CUresult MappedRange::map(std::span<const PageHandle> pages) noexcept {
  for (PageHandle page : pages) {
    if (CUresult r = calls_.cuMemMap(base_ + mapped_, dev_.granularity, page); r != CUDA_SUCCESS)
      return r;
    mapped_ += dev_.granularity;
  }
  return enable();
}

CUresult MappedRange::map(PageHandle whole) noexcept {
  if (CUresult r = calls_.cuMemMap(base_, bytes_, whole); r != CUDA_SUCCESS) return r;
  mapped_ = bytes_;
  return enable();
}

CUresult MappedRange::enable() noexcept {
  CUmemAccessDesc access{};
  access.location = {CU_MEM_LOCATION_TYPE_DEVICE, dev_.ordinal};
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return calls_.cuMemSetAccess(base_, mapped_, &access);
}

uintptr_t MappedRange::commit() noexcept {
  mapped_ = 0;
  owned_ = false;
  return base_;
}

void MappedRange::undo() noexcept {
  if (mapped_ > 0) (void)calls_.cuMemUnmap(base_, mapped_);
  mapped_ = 0;
  if (owned_) (void)calls_.cuMemAddressFree(base_, bytes_);
  owned_ = false;
}

EventRef Allocator::record_event(Device& dev, CUstream stream) noexcept {
  SharedEvent* shared = nullptr;
  if (!dev.events.free.empty()) {
    shared = dev.events.free.back();
    dev.events.free.pop_back();
  } else {
    CUevent event = nullptr;
    if (driver_.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return {};
    shared = new (std::nothrow) SharedEvent{event, &dev.events, 0, false};
    if (!shared) {
      (void)driver_.cuEventDestroy_v2(event);
      return {};
    }
  }
  shared->refs = 1;
  shared->done = false;
  EventRef ref = EventRef::adopt(shared);
  if (calls_.cuEventRecord(shared->event, stream) != CUDA_SUCCESS) return {};
  return ref;
}

// Note [Joined events]
// A piece of memory passes one event to its next owner: the copy it still
// owes. Pieces owe two where free pieces whose copies both still run lie
// side by side, or pages are reclaimed from two of them; the host would
// wait for one, or the pieces would stay apart (and the arena map afresh
// what it could have joined). The device joins them instead: a stream of
// the allocator's own waits for both and records an event after them.
// Nothing else is queued on that stream, so the wait holds up no copy and
// no kernel, and it costs three calls that return at once. Only where the
// driver refuses one does the host wait (counted as any host wait). On
// ResNet-50 at 4x its batch under its 1x peak, reactive, it takes host
// waits from 20 to 7 an iteration and VMM calls from 12076 to 10629. A
// buffer freed while it owes two copies still has the host wait for one
// (Note [A wait at the free]).
EventRef Allocator::join_events(Device& dev, EventRef first, EventRef second) noexcept {
  if (second.done()) return first;
  if (first.done()) return second;
  if (dev.join_stream && calls_.cuStreamWaitEvent(dev.join_stream, first.event()) == CUDA_SUCCESS &&
      calls_.cuStreamWaitEvent(dev.join_stream, second.event()) == CUDA_SUCCESS)
    if (EventRef both = record_event(dev, dev.join_stream)) return both;
  second.synchronize();
  return first;
}

void EventRef::reset() noexcept {
  Allocator::SharedEvent* e = std::exchange(event_, nullptr);
  if (!e || --e->refs > 0) return;
  try {
    e->pool->free.push_back(e);
    return;
  } catch (...) {
    // Not kept: destroyed below.
  }
  (void)e->pool->calls->driver().cuEventDestroy_v2(e->event);
  delete e;
}

bool EventRef::done() noexcept {
  if (!event_) return true;
  if (!event_->done) {
    if (event_->pool->calls->cuEventQuery(event_->event) != CUDA_SUCCESS) return false;
    event_->done = true;
  }
  reset();
  return true;
}

// Asks first: the host waits (and the wait is counted) only for work that
// is not done.
void EventRef::synchronize() noexcept {
  if (!event_ || event_->done) return;
  DriverCalls& calls = *event_->pool->calls;
  if (calls.cuEventQuery(event_->event) == CUDA_SUCCESS ||
      calls.cuEventSynchronize(event_->event) == CUDA_SUCCESS)
    event_->done = true;
}

EventPool::~EventPool() {
  for (Allocator::SharedEvent* event : free) {
    (void)calls->driver().cuEventDestroy_v2(event->event);
    delete event;
  }
}

// A host copy nothing reads any more, kept for the next eviction of that
// size; one that cannot be kept is let go.
void Allocator::cache_host_copy(Device& dev, const HostCopy& copy) noexcept {
  try {
    dev.host_cache.push_back(copy);
  } catch (...) {
    (void)calls_.cuMemUnmap(copy.window, copy.size_bytes);
    (void)calls_.cuMemAddressFree(copy.window, copy.size_bytes);
    (void)calls_.cuMemRelease(copy.handle);
  }
}

// The one way a host copy nothing reads any more goes back: a block of
// the stash to the stash, a host allocation to the cache.
void Allocator::give_host_copy_back(Device& dev, void* stash, uint64_t stash_bytes,
                                    const HostCopy& host) noexcept {
  if (stash) {
    stats_.host_bytes -= stash_bytes;
    dev.stash->release(stash);
  }
  if (host.handle) {
    stats_.host_bytes -= host.size_bytes;
    cache_host_copy(dev, host);
  }
}

// Host copies whose prefetch copy is done go back to the stash or cache.
void Allocator::collect_host_releases(Device& dev, bool wait) noexcept {
  auto& releases = dev.host_releases;
  for (size_t i = 0; i < releases.size();) {
    HostRelease& release = releases[i];
    if (wait) release.after.synchronize();
    if (!release.after.done()) {
      ++i;
      continue;
    }
    give_host_copy_back(dev, release.stash, release.stash_bytes, release.host);
    releases[i] = std::move(releases.back());
    releases.pop_back();
  }
}

}  // namespace cuswap
