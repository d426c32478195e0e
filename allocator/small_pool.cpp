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

// `from` joins `into`: the bytes, and what each owed (Note [Joined events]).
void Allocator::absorb(Device& dev, SmallPiece& into, SmallPiece&& from) noexcept {
  into.bytes += from.bytes;
  into.after.merge(from.after);
  into.pending = join_events(dev, std::move(into.pending), std::move(from.pending));
}

// A piece's entry in the size list, moved to its new (size, base): the node
// is reused, so nothing is allocated.
void Allocator::relist_small(Device& dev, std::pair<uint64_t, uintptr_t> was,
                             std::pair<uint64_t, uintptr_t> now) noexcept {
  auto node = dev.small_by_size.extract(was);
  node.value() = now;
  dev.small_by_size.insert(std::move(node));
}

// Joins reuse a neighbour's entries, and a buffer freed next to the rest of
// the piece it was cut from joins it, so a repeating workload allocates no
// list entry on the small pool's alloc and free.
void Allocator::free_small(Device& dev, uintptr_t base, SmallPiece piece) noexcept {
  const uintptr_t slab = slab_of(dev, base);
  auto next = dev.small_free.lower_bound(base);
  const bool join_next = next != dev.small_free.end() && next->first == base + piece.bytes &&
                         slab_of(dev, next->first) == slab;
  auto prev = next == dev.small_free.begin() ? dev.small_free.end() : std::prev(next);
  const bool join_prev = prev != dev.small_free.end() && prev->first + prev->second.bytes == base &&
                         slab_of(dev, prev->first) == slab;
  if (join_prev) {
    const std::pair<uint64_t, uintptr_t> was{prev->second.bytes, prev->first};
    absorb(dev, prev->second, std::move(piece));
    if (join_next) {
      dev.small_by_size.erase({next->second.bytes, next->first});
      absorb(dev, prev->second, std::move(next->second));
      dev.small_free.erase(next);
    }
    relist_small(dev, was, {prev->second.bytes, prev->first});
    return;
  }
  if (join_next) {
    // The piece takes the next one's entries, keyed at its own base.
    const std::pair<uint64_t, uintptr_t> was{next->second.bytes, next->first};
    auto node = dev.small_free.extract(next);
    absorb(dev, piece, std::move(node.mapped()));
    node.key() = base;
    node.mapped() = std::move(piece);
    relist_small(dev, was, {node.mapped().bytes, base});
    dev.small_free.insert(std::move(node));
    return;
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
  dev.slab_bytes += slab_bytes;
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
  auto node = dev.small_free.extract(base);
  SmallPiece& piece = node.mapped();
  block->before = piece.after;
  if (piece.bytes > bytes) {
    // The rest keeps the piece's entries, its owners' uses and its copy; its
    // neighbours are the new buffer and a buffer or a slab's end.
    block->waits.events[0] = piece.pending;
    relist_small(dev, *fit, {piece.bytes - bytes, base + bytes});
    piece.bytes -= bytes;
    node.key() = base + bytes;
    dev.small_free.insert(std::move(node));
  } else {
    block->waits.events[0] = std::move(piece.pending);
    dev.small_by_size.erase(fit);
  }
  block->base = base;
  block->size_bytes = size_bytes;
  block->range_bytes = bytes;
  block->device = dev.ordinal;
  block->small = true;
  ++stats_.allocations_small;
  out = block.release();
  return CUDA_SUCCESS;
}

}  // namespace cuswap
