// Where small buffers live: slabs they share (Note [The small pool]).
//
// Note [The small pool]
// A buffer smaller than swap_min never moves: it takes a piece of a slab,
// whole pages mapped once and kept. Every small buffer of a device shares
// its slabs, cut by best fit in units of 512 bytes (as the driver rounds
// such allocations) and joined again as they are freed, in the manner of
// the arena (Note [The address arena]): a free piece keeps its last
// owners' uses and the copy its pages still owe, a piece cut from it keeps
// both, and joined pieces keep what each kept (Note [Joined events]). So
// the slabs hold what the small buffers alive at once need. Slabs cut into
// slots of one power-of-two size each held more: a slot was up to twice
// its buffer, and a slab's slots served only their size, so a moment when
// many of one size lived left slabs the others could not use (ResNet-50
// at its step's peak: 22 MiB of slabs for 196 KB of small buffers, which
// put cuswap 24 MiB above the stock run, so that a budget the stock run
// just fits in made it move 231 MB a step).
#include "allocator/swap_internal.h"

namespace cuswap {
namespace {

uintptr_t slab_of(const Allocator::Device& dev, uintptr_t address) {
  auto it = dev.slabs.upper_bound(address);
  return it == dev.slabs.begin() ? 0 : std::prev(it)->first;
}

}  // namespace

void Allocator::free_small(Device& dev, uintptr_t base, SmallPiece piece) noexcept {
  const uintptr_t slab = slab_of(dev, base);
  auto next = dev.small_free.lower_bound(base);
  if (next != dev.small_free.end() && next->first == base + piece.bytes &&
      slab_of(dev, next->first) == slab) {
    dev.small_by_size.erase({next->second.bytes, next->first});
    piece.bytes += next->second.bytes;
    piece.after.merge(next->second.after);
    piece.pending = join_events(dev, std::move(piece.pending), std::move(next->second.pending));
    next = dev.small_free.erase(next);
  }
  if (next != dev.small_free.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.bytes == base && slab_of(dev, prev->first) == slab) {
      dev.small_by_size.erase({prev->second.bytes, prev->first});
      prev->second.bytes += piece.bytes;
      prev->second.after.merge(piece.after);
      prev->second.pending =
          join_events(dev, std::move(prev->second.pending), std::move(piece.pending));
      try {
        dev.small_by_size.emplace(prev->second.bytes, prev->first);
      } catch (...) {
        dev.small_free.erase(prev);  // lost: it stays mapped in its slab, unused
      }
      return;
    }
  }
  const uint64_t bytes = piece.bytes;
  try {
    auto placed = dev.small_free.emplace_hint(next, base, std::move(piece));
    try {
      dev.small_by_size.emplace(bytes, base);
    } catch (...) {
      dev.small_free.erase(placed);
    }
  } catch (...) {
    // Lost: it stays mapped in its slab, unused.
  }
}

// A new slab of at least `bytes`, all of it a free piece.
CUresult Allocator::add_slab(Device& dev, uint64_t bytes, MayWait may_wait) noexcept {
  const uint64_t slab_bytes = round_up(bytes, dev.granularity);
  TakenPages pages(*this, dev);  // the pieces' first uses wait for what they owe
  CUresult r = take_pages(dev, static_cast<size_t>(slab_bytes / dev.granularity), pages, {},
                          may_wait, /*may_evict=*/true);
  if (r != CUDA_SUCCESS) return r;
  MappedRange range(calls_, dev);
  if ((r = range.reserve(slab_bytes)) != CUDA_SUCCESS ||
      (r = range.map(pages.pages())) != CUDA_SUCCESS) {
    range.undo();
    return r;  // the pages go back as `pages` leaves
  }
  const uintptr_t base = range.commit();
  (void)pages.keep();  // the slab's for good: out of the pages that move, still in device_bytes
  try {
    dev.slabs.emplace(base, slab_bytes);
  } catch (...) {
    dev.lost_device_bytes += slab_bytes;  // the slab stays mapped, unused
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  free_small(dev, base, {slab_bytes, pages.after().uses, pages.after().donor});
  return CUDA_SUCCESS;
}

CUresult Allocator::allocate_small(Device& dev, uint64_t size_bytes, MayWait may_wait,
                                   Block*& out) noexcept {
  const uint64_t bytes = round_up(size_bytes, kSmallGranule);
  auto fit = dev.small_by_size.lower_bound({bytes, 0});
  if (fit == dev.small_by_size.end()) {
    if (CUresult r = add_slab(dev, bytes, may_wait); r != CUDA_SUCCESS) return r;
    fit = dev.small_by_size.lower_bound({bytes, 0});
    if (fit == dev.small_by_size.end()) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  auto block = std::make_unique<Block>();
  const uintptr_t base = fit->second;
  auto it = dev.small_free.find(base);
  SmallPiece piece = std::move(it->second);
  dev.small_by_size.erase(fit);
  dev.small_free.erase(it);
  if (piece.bytes > bytes)
    free_small(dev, base + bytes, {piece.bytes - bytes, piece.after, piece.pending});
  block->base = base;
  block->size_bytes = size_bytes;
  block->range_bytes = bytes;
  block->device = dev.ordinal;
  block->small = true;
  block->before = piece.after;
  block->waits.events[0] = std::move(piece.pending);
  ++stats_.allocations_small;
  out = block.release();
  return CUDA_SUCCESS;
}

}  // namespace cuswap
