// The allocator's invariants, checked on demand (Allocator::check).
//
// Note [What always holds between operations]
// Whenever no call is inside the allocator (mu_ free, no allocation
// waiting for room), what the allocator holds agrees with itself:
// - Pages: every page created on a device is in exactly one place, a
//   buffer's mapping, a cached free range, a slab or the pool, or was lost
//   to a failed driver call; their bytes are device_bytes, which stays
//   within the budget. stats' device_bytes is the sum over devices.
// - Residency (large buffers): resident and prefetching buffers have all
//   their pages and no host copy; an evicting one has its host copy and its
//   eviction copy's event, and is in its device's list of evictions in
//   flight; an evicted one has no pages and one host copy (the stash's in
//   stash mode, a host allocation with host memory mapping), and its range
//   is on the host only with the latter. Small buffers are resident, with
//   no pages and no host copy of their own.
// - Pins: a pinned buffer is never evicting, and evicted only when it
//   lives on the host (Note [Buffers bigger than the budget]); with no use
//   in flight nothing is pinned.
// - Host bytes: stats' host_bytes is the sum of the host copies buffers
//   hold, those waiting to be given back, and those lost.
// - Used bytes: each device's used_bytes is the sum of its live buffers'
//   sizes.
// - Events: each shared event's count of references equals the number of
//   places that hold it (buffers, free ranges, free small slots, host
//   copies waiting); pooled events are held by nobody.
// - Buffers do not overlap.
// An allocation waiting for room gives the pages it took back before it
// waits (take_pages), so the check holds then too.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "allocator/swap_internal.h"

namespace cuswap {

std::string Allocator::check() noexcept {
  try {
    std::lock_guard lock(mu_);
    std::string out;
    auto fail = [&](const std::string& what) {
      out += what;
      out += '\n';
    };
    std::unordered_map<const SharedEvent*, uint32_t> held;
    auto hold = [&](const SharedEvent* event) {
      if (event) ++held[event];
    };
    uint64_t host_bytes = 0;
    uint64_t pinned = 0;
    uintptr_t end_of_previous = 0;
    for (const auto& [base, block] : blocks_) {
      const std::string name = fmt::format("buffer {:#x} ({} bytes)", base, block->size_bytes);
      if (base != block->base) fail(fmt::format("{}: filed under {:#x}", name, base));
      if (base < end_of_previous) fail(fmt::format("{}: overlaps the buffer before it", name));
      end_of_previous = base + block->range_bytes;
      const size_t d = static_cast<size_t>(block->device);
      if (d >= devices_.size() || !devices_[d] || !devices_[d]->initialised) {
        fail(fmt::format("{}: on device {}, which is not set up", name, block->device));
        continue;
      }
      const Device& dev = *devices_[d];
      hold(block->last_use);
      hold(block->waits.events[0]);
      hold(block->waits.events[1]);
      hold(block->evict_copy);
      pinned += block->pins;
      const bool has_stash = block->stash != nullptr, has_host = block->host.handle != 0;
      if (has_stash) host_bytes += block->size_bytes;
      if (has_host) host_bytes += block->host.size_bytes;
      if (has_stash && dev.host_vmm) fail(fmt::format("{}: a stash block with host mapping", name));
      if (has_host && !dev.host_vmm)
        fail(fmt::format("{}: a host allocation without host mapping", name));
      if (block->small) {
        if (block->residency != Residency::resident || !block->pages.empty() || has_stash ||
            has_host)
          fail(fmt::format("{}: a small buffer that moved", name));
        continue;
      }
      const size_t all_pages = static_cast<size_t>(block->range_bytes / dev.granularity);
      if (block->range_bytes % dev.granularity != 0)
        fail(fmt::format("{}: its range of {} bytes is not whole pages", name, block->range_bytes));
      const bool in_flight =
          std::find(dev.evicting.begin(), dev.evicting.end(), block) != dev.evicting.end();
      if (in_flight != (block->evict_copy != nullptr))
        fail(fmt::format("{}: eviction copy {} but {} the evictions in flight", name,
                         block->evict_copy ? "set" : "unset", in_flight ? "in" : "not in"));
      switch (block->residency) {
        case Residency::resident:
        case Residency::prefetching:
          if (block->pages.size() != all_pages)
            fail(fmt::format("{}: {} with {} of {} pages", name,
                             block->residency == Residency::resident ? "resident" : "prefetching",
                             block->pages.size(), all_pages));
          if (has_stash || has_host || block->range_on_host)
            fail(fmt::format("{}: on the device and still holding a host copy", name));
          if (block->evict_copy) fail(fmt::format("{}: not evicting, with an eviction copy", name));
          break;
        case Residency::evicting:
          if (!block->evict_copy) fail(fmt::format("{}: evicting without its copy", name));
          if (has_stash == has_host) fail(fmt::format("{}: evicting without one host copy", name));
          if (!block->donated && block->pages.size() != all_pages)
            fail(fmt::format("{}: evicting with {} of {} pages and none given away", name,
                             block->pages.size(), all_pages));
          if (block->pins) fail(fmt::format("{}: evicting while pinned", name));
          break;
        case Residency::evicted:
          if (!block->pages.empty())
            fail(fmt::format("{}: evicted, still holding {} pages", name, block->pages.size()));
          if (has_stash == has_host) fail(fmt::format("{}: evicted without one host copy", name));
          if (block->range_on_host && !has_host)
            fail(fmt::format("{}: its range is on the host without a host copy", name));
          if (block->evict_copy) fail(fmt::format("{}: evicted, with an eviction copy", name));
          if (block->pins && !(block->range_on_host && block->range_bytes > dev.budget_bytes))
            fail(fmt::format("{}: evicted while pinned", name));
          break;
      }
    }
    if (active_uses_ == 0 && pinned != 0)
      fail(fmt::format("{} pins held with no use in flight", pinned));
    uint64_t stats_device_bytes = 0;
    for (const auto& owned : devices_) {
      if (!owned || !owned->initialised) continue;
      const Device& dev = *owned;
      stats_device_bytes += dev.device_bytes;
      uint64_t pages = dev.page_pool.size(), used = 0;
      for (const auto& [base, block] : blocks_) {
        if (block->device != dev.ordinal) continue;
        pages += block->pages.size();
        used += block->size_bytes;
      }
      for (const FreeRange& range : dev.free_ranges) {
        pages += range.pages.size();
        hold(range.after);
        hold(range.pending);
      }
      uint64_t slab_bytes = 0;
      for (const auto& [base, bytes] : dev.slabs)
        slab_bytes += bytes;
      for (const auto& slots : dev.small_free)
        for (const SmallFree& slot : slots) {
          hold(slot.after);
          hold(slot.pending);
        }
      for (const HostRelease& release : dev.host_releases) {
        hold(release.after);
        host_bytes += release.stash_bytes + (release.host.handle ? release.host.size_bytes : 0);
      }
      host_bytes += dev.lost_host_bytes;
      for (const Block* block : dev.evicting)
        if (block->residency != Residency::evicting)
          fail(fmt::format("buffer {:#x}: in the evictions in flight, not evicting", block->base));
      const uint64_t accounted = pages * dev.granularity + slab_bytes + dev.lost_device_bytes;
      if (accounted != dev.device_bytes)
        fail(fmt::format(
            "device {}: {} bytes of pages counted, {} found ({} pages, slabs {}, lost {})",
            dev.ordinal, dev.device_bytes, accounted, pages, slab_bytes, dev.lost_device_bytes));
      if (dev.device_bytes > dev.budget_bytes)
        fail(fmt::format("device {}: {} bytes of pages over the budget of {}", dev.ordinal,
                         dev.device_bytes, dev.budget_bytes));
      if (used != dev.used_bytes)
        fail(fmt::format("device {}: used_bytes {}, its buffers add up to {}", dev.ordinal,
                         dev.used_bytes, used));
      for (const SharedEvent* event : dev.event_pool)
        if (event->refs != 0 || held.count(event))
          fail(fmt::format("device {}: a pooled event still held ({} references)", dev.ordinal,
                           event->refs));
    }
    if (stats_device_bytes != stats_.device_bytes)
      fail(fmt::format("stats: device_bytes {}, the devices add up to {}", stats_.device_bytes,
                       stats_device_bytes));
    if (host_bytes != stats_.host_bytes)
      fail(fmt::format("stats: host_bytes {}, the host copies add up to {}", stats_.host_bytes,
                       host_bytes));
    for (const auto& [event, holders] : held)
      if (event->refs != holders)
        fail(fmt::format("an event on device {} has {} references and {} holders", event->device,
                         event->refs, holders));
    return out;
  } catch (...) {
    return "the check ran out of memory\n";
  }
}

}  // namespace cuswap
