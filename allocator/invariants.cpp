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
//   sizes; live_large_bytes the sum of its large ones' ranges, those on the
//   host from the start aside (Note [A step that fits]); slab_bytes its
//   slabs'.
// - Events: each shared event's count of references equals the number of
//   places that hold it (buffers, free ranges, free small slots, host
//   copies waiting); pooled events are held by nobody.
// - Buffers do not overlap.
// An allocation waiting for room gives the pages it took back before it
// waits (take_pages), so the check holds then too.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>

#include "allocator/swap_internal.h"

namespace cuswap {
namespace {

using Block = Allocator::Block;
using Device = Allocator::Device;
using SharedEvent = Allocator::SharedEvent;

// What check() found wrong, a line each, and what it counts on the way.
struct Findings {
  std::string out;
  std::unordered_map<const SharedEvent*, uint32_t> held;  // event → places holding it
  uint64_t host_bytes = 0;
  uint64_t pins = 0;

  template <typename... Args>
  void fail(fmt::format_string<Args...> format, Args&&... args) {
    out += fmt::format(format, std::forward<Args>(args)...);
    out += '\n';
  }
  void hold(const EventRef& ref) {
    if (ref) ++held[ref.get()];
  }
};

// A large buffer's residency against its pages, host copy and eviction copy.
void check_residency(Findings& f, const Device& dev, const Block& block, const std::string& name) {
  const bool has_stash = block.stash != nullptr, has_host = block.host.handle != 0;
  const size_t all_pages = static_cast<size_t>(block.range_bytes / dev.granularity);
  if (block.range_bytes % dev.granularity != 0)
    f.fail("{}: its range of {} bytes is not whole pages", name, block.range_bytes);
  const bool in_flight =
      std::find(dev.evicting.begin(), dev.evicting.end(), &block) != dev.evicting.end();
  if (in_flight != static_cast<bool>(block.evict_copy))
    f.fail("{}: eviction copy {} but {} the evictions in flight", name,
           block.evict_copy ? "set" : "unset", in_flight ? "in" : "not in");
  switch (block.residency) {
    case Residency::resident:
    case Residency::prefetching:
      if (block.pages.size() != all_pages)
        f.fail("{}: {} with {} of {} pages", name,
               block.residency == Residency::resident ? "resident" : "prefetching",
               block.pages.size(), all_pages);
      if (has_stash || has_host || block.range_on_host)
        f.fail("{}: on the device and still holding a host copy", name);
      if (block.evict_copy) f.fail("{}: not evicting, with an eviction copy", name);
      break;
    case Residency::evicting:
      if (!block.evict_copy) f.fail("{}: evicting without its copy", name);
      if (has_stash == has_host) f.fail("{}: evicting without one host copy", name);
      if (!block.donated && block.pages.size() != all_pages)
        f.fail("{}: evicting with {} of {} pages and none given away", name, block.pages.size(),
               all_pages);
      if (block.pins) f.fail("{}: evicting while pinned", name);
      break;
    case Residency::evicted:
      if (!block.pages.empty())
        f.fail("{}: evicted, still holding {} pages", name, block.pages.size());
      if (has_stash == has_host) f.fail("{}: evicted without one host copy", name);
      if (block.range_on_host && !has_host)
        f.fail("{}: its range is on the host without a host copy", name);
      if (block.evict_copy) f.fail("{}: evicted, with an eviction copy", name);
      if (block.pins && !(block.range_on_host && block.range_bytes > dev.budget_bytes))
        f.fail("{}: evicted while pinned", name);
      break;
  }
}

void check_block(Findings& f, const Device& dev, const Block& block) {
  const std::string name = fmt::format("buffer {:#x} ({} bytes)", block.base, block.size_bytes);
  f.hold(block.waits.events[0]);
  f.hold(block.waits.events[1]);
  f.hold(block.evict_copy);
  f.pins += block.pins;
  const bool has_stash = block.stash != nullptr, has_host = block.host.handle != 0;
  if (has_stash) f.host_bytes += block.size_bytes;
  if (has_host) f.host_bytes += block.host.size_bytes;
  if (has_stash && dev.host_vmm) f.fail("{}: a stash block with host mapping", name);
  if (has_host && !dev.host_vmm) f.fail("{}: a host allocation without host mapping", name);
  if (!block.small) {
    check_residency(f, dev, block, name);
  } else if (block.residency != Residency::resident || !block.pages.empty() || has_stash ||
             has_host) {
    f.fail("{}: a small buffer that moved", name);
  }
}

// The arena's free pieces: inside its chunks, apart from each other and
// from the buffers, listed by size as by base, the mapped ones whole pages
// (Note [The address arena]).
void check_arena(Findings& f, const Device& dev, const std::map<uintptr_t, Block*>& blocks) {
  uint64_t mapped_bytes = 0, end_of_previous = 0;
  size_t listed[2] = {0, 0};
  for (const auto& [base, range] : dev.free_ranges) {
    const std::string name = fmt::format("free range {:#x} ({} bytes)", base, range.range_bytes);
    if (base != range.base) f.fail("{}: filed under {:#x}", name, range.base);
    if (base < end_of_previous) f.fail("{}: overlaps the free range before it", name);
    end_of_previous = base + range.range_bytes;
    auto chunk = dev.chunks.upper_bound(base);
    if (chunk == dev.chunks.begin() ||
        base + range.range_bytes > std::prev(chunk)->first + std::prev(chunk)->second)
      f.fail("{}: not inside one chunk of the arena", name);
    if (range.mapped() && range.pages.size() * dev.granularity != range.range_bytes)
      f.fail("{}: {} pages mapped", name, range.pages.size());
    if (!dev.free_by_size[range.mapped()].count({range.range_bytes, base}))
      f.fail("{}: not listed by size", name);
    ++listed[range.mapped()];
    if (range.mapped()) mapped_bytes += range.range_bytes;
    auto owner = blocks.upper_bound(base + range.range_bytes - 1);
    if (owner != blocks.begin()) {
      const Block& block = *std::prev(owner)->second;
      if (block.base + block.range_bytes > base)
        f.fail("{}: overlaps buffer {:#x}", name, block.base);
    }
  }
  for (size_t mapped = 0; mapped < 2; ++mapped)
    if (listed[mapped] != dev.free_by_size[mapped].size())
      f.fail("device {}: {} free ranges listed by size, {} by base", dev.ordinal,
             dev.free_by_size[mapped].size(), listed[mapped]);
  if (mapped_bytes != dev.free_mapped_bytes)
    f.fail("device {}: free_mapped_bytes {}, its free ranges add up to {}", dev.ordinal,
           dev.free_mapped_bytes, mapped_bytes);
}

// The small pool's free pieces: inside one slab, apart from each other and
// from the buffers, not next to each other in a slab (they join), listed by
// size as by base (Note [The small pool]).
void check_small_pool(Findings& f, const Device& dev, const std::map<uintptr_t, Block*>& blocks) {
  uint64_t end_of_previous = 0;
  uintptr_t previous_slab = 0;
  for (const auto& [base, piece] : dev.small_free) {
    const std::string name = fmt::format("free small piece {:#x} ({} bytes)", base, piece.bytes);
    f.hold(piece.pending);
    if (base < end_of_previous) f.fail("{}: overlaps the piece before it", name);
    auto slab = dev.slabs.upper_bound(base);
    const bool in_slab = slab != dev.slabs.begin() &&
                         base + piece.bytes <= std::prev(slab)->first + std::prev(slab)->second;
    if (!in_slab) f.fail("{}: not inside one slab", name);
    if (in_slab && base == end_of_previous && std::prev(slab)->first == previous_slab)
      f.fail("{}: not joined with the piece before it", name);
    if (!dev.small_by_size.count({piece.bytes, base})) f.fail("{}: not listed by size", name);
    auto owner = blocks.upper_bound(base + piece.bytes - 1);
    if (owner != blocks.begin()) {
      const Block& block = *std::prev(owner)->second;
      if (block.base + block.range_bytes > base)
        f.fail("{}: overlaps buffer {:#x}", name, block.base);
    }
    end_of_previous = base + piece.bytes;
    previous_slab = in_slab ? std::prev(slab)->first : 0;
  }
  if (dev.small_by_size.size() != dev.small_free.size())
    f.fail("device {}: {} free small pieces listed by size, {} by base", dev.ordinal,
           dev.small_by_size.size(), dev.small_free.size());
}

// A device's pages against device_bytes and the budget, its used bytes,
// and the events and host copies its lists hold.
void check_device(Findings& f, const Device& dev, const std::map<uintptr_t, Block*>& blocks) {
  uint64_t pages = dev.page_pool.size(), used = 0, large = 0;
  for (const auto& [base, block] : blocks) {
    if (block->device != dev.ordinal) continue;
    pages += block->pages.size();
    used += block->size_bytes;
    if (!block->small && block->range_bytes <= dev.budget_bytes) large += block->range_bytes;
  }
  check_arena(f, dev, blocks);
  for (const auto& [base, range] : dev.free_ranges) {
    pages += range.pages.size();
    f.hold(range.pending);
  }
  for (const Retiring& piece : dev.retiring) {
    f.hold(piece.pending);
    if (piece.host.handle) f.host_bytes += piece.host.size_bytes;
  }
  for (const StreamUses& uses : dev.streams) {
    f.hold(uses.cover);
    for (const UseMark& mark : uses.marks)
      f.hold(mark.event);
  }
  uint64_t slab_bytes = 0;
  for (const auto& [base, bytes] : dev.slabs)
    slab_bytes += bytes;
  check_small_pool(f, dev, blocks);
  for (const HostRelease& release : dev.host_releases) {
    f.hold(release.after);
    f.host_bytes += release.stash_bytes + (release.host.handle ? release.host.size_bytes : 0);
  }
  f.host_bytes += dev.lost_host_bytes;
  for (const Block* block : dev.evicting)
    if (block->residency != Residency::evicting)
      f.fail("buffer {:#x}: in the evictions in flight, not evicting", block->base);
  const uint64_t accounted = pages * dev.granularity + slab_bytes + dev.lost_device_bytes;
  if (accounted != dev.device_bytes)
    f.fail("device {}: {} bytes of pages counted, {} found ({} pages, slabs {}, lost {})",
           dev.ordinal, dev.device_bytes, accounted, pages, slab_bytes, dev.lost_device_bytes);
  if (dev.device_bytes > dev.budget_bytes)
    f.fail("device {}: {} bytes of pages over the budget of {}", dev.ordinal, dev.device_bytes,
           dev.budget_bytes);
  if (used != dev.used_bytes)
    f.fail("device {}: used_bytes {}, its buffers add up to {}", dev.ordinal, dev.used_bytes, used);
  if (large != dev.live_large_bytes || slab_bytes != dev.slab_bytes)
    f.fail(
        "device {}: live_large_bytes {} and slab_bytes {}, its buffers and slabs add up to {} "
        "and {}",
        dev.ordinal, dev.live_large_bytes, dev.slab_bytes, large, slab_bytes);
  for (const SharedEvent* event : dev.events.free)
    if (event->refs != 0 || f.held.count(event))
      f.fail("device {}: a pooled event still held ({} references)", dev.ordinal, event->refs);
}

}  // namespace

std::string Allocator::check() noexcept {
  try {
    std::lock_guard lock(mu_);
    Findings f;
    uintptr_t end_of_previous = 0;
    for (const auto& [base, block] : blocks_) {
      if (base != block->base) f.fail("buffer {:#x}: filed under {:#x}", block->base, base);
      if (by_base_.find(base) != block) f.fail("buffer {:#x}: not found by its base", base);
      if (base < end_of_previous) f.fail("buffer {:#x}: overlaps the buffer before it", base);
      end_of_previous = base + block->range_bytes;
      const auto d = static_cast<size_t>(block->device);
      if (d >= devices_.size() || !devices_[d] || !devices_[d]->initialised)
        f.fail("buffer {:#x}: on device {}, which is not set up", base, block->device);
      else
        check_block(f, *devices_[d], *block);
    }
    if (by_base_.size() != blocks_.size())
      f.fail("{} buffers by base, {} by address", by_base_.size(), blocks_.size());
    if (active_uses_ == 0 && f.pins != 0) f.fail("{} pins held with no use in flight", f.pins);
    uint64_t device_bytes = 0;
    for (const auto& dev : devices_) {
      if (!dev || !dev->initialised) continue;
      device_bytes += dev->device_bytes;
      check_device(f, *dev, blocks_);
    }
    if (device_bytes != stats_.device_bytes)
      f.fail("stats: device_bytes {}, the devices add up to {}", stats_.device_bytes, device_bytes);
    if (f.host_bytes != stats_.host_bytes)
      f.fail("stats: host_bytes {}, the host copies add up to {}", stats_.host_bytes, f.host_bytes);
    for (const auto& [event, holders] : f.held) {
      if (event->refs == holders) continue;
      int ordinal = -1;
      for (const auto& dev : devices_)
        if (dev && &dev->events == event->pool) ordinal = dev->ordinal;
      f.fail("an event on device {} has {} references and {} holders", ordinal, event->refs,
             holders);
    }
    return f.out;
  } catch (...) {
    return "the check ran out of memory\n";
  }
}

}  // namespace cuswap
