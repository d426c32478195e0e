// Where large buffers live: each device's address arena (Note [The address
// arena]).
//
// Note [The address arena]
// A free changes no mapping. Each device reserves address space in large
// chunks (twice its budget, or the buffer where that is bigger) and places
// every large buffer in one, on whole pages, so that each buffer still owns
// its pages and moves on its own (Note [Stable addresses]). A freed
// buffer's range stays mapped to its pages as a free piece, which keeps the
// point of its last owners' uses (Note [Lazy use events]); free pieces next
// to each other in one chunk join, mapped with mapped and address space
// with address space. An allocation takes, in this order:
//  0. the range a like allocation took a step earlier, if it is free and
//     mapped (Note [Placed as a step ago]);
//  1. the smallest mapped free piece that holds it, split on a page: no
//     driver call; its first use waits, on the device, for the piece's
//     last owners' uses on other streams;
//  2. the biggest mapped free piece with enough address space beside it:
//     only the missing pages are mapped there (a map per page, one
//     set-access for them);
//  3. the smallest piece of address space that holds it, mapped whole;
//  4. address space of a new chunk.
// Pages for 2-4 come from the pool, then new ones within the budget, then
// from mapped free pieces (reclaim_free): the tail of the biggest, those
// whose last uses are known done first. They are mapped at the new place at
// once, the new owner's first use waiting on the device for the old
// owners'; the old place stays mapped, for a kernel still queued there must
// not fault, and is unmapped later, once its uses are done, when the arena
// next needs address space (retire_done): the host never waits to make
// room. An evicted buffer keeps its address (its host copy mapped there,
// or nothing); once it is freed that address space goes back to the arena
// the same way. So in the steady state of a repeating workload, where best
// fit with splitting and joining settles into the workload's layout, an
// allocation makes no driver call at all.
#include <algorithm>

#include "allocator/swap_internal.h"

namespace cuswap {
namespace {

using FreeRange = Allocator::FreeRange;
using Device = Allocator::Device;
using FreeIt = std::map<uintptr_t, FreeRange>::iterator;

uintptr_t chunk_of(const Device& dev, uintptr_t address) {
  auto it = dev.chunks.upper_bound(address);
  return it == dev.chunks.begin() ? 0 : std::prev(it)->first;
}

// Whether `right` starts where `left` ends, in one chunk.
bool adjacent(const Device& dev, const FreeRange& left, const FreeRange& right) {
  return left.base + left.range_bytes == right.base &&
         chunk_of(dev, left.base) == chunk_of(dev, right.base);
}

// Whether they can be one free piece: adjacent and of one kind (the copies
// each still owes become one event, Note [Joined events]).
bool joinable(const Device& dev, const FreeRange& left, const FreeRange& right) {
  return adjacent(dev, left, right) && left.mapped() == right.mapped();
}

// Takes a free piece out of the arena's lists.
FreeRange unlist(Device& dev, FreeIt it) noexcept {
  FreeRange piece = std::move(it->second);
  dev.free_ranges.erase(it);
  dev.free_by_size[piece.mapped()].erase({piece.range_bytes, piece.base});
  if (piece.mapped()) dev.free_mapped_bytes -= piece.range_bytes;
  return piece;
}

// Cuts `piece` to its first `bytes`; the rest, from the same owners, goes
// to `rest`. False, with nothing changed, when there is no memory for it.
bool split(FreeRange& piece, uint64_t bytes, uint64_t granularity, FreeRange& rest) noexcept {
  rest = {};
  rest.base = piece.base + bytes;
  rest.range_bytes = piece.range_bytes - bytes;
  if (piece.mapped()) {
    const auto keep = static_cast<std::ptrdiff_t>(bytes / granularity);
    try {
      rest.pages.assign(piece.pages.begin() + keep, piece.pages.end());
    } catch (...) {
      return false;
    }
    piece.pages.resize(static_cast<size_t>(keep));
  }
  piece.range_bytes = bytes;
  rest.after = piece.after;
  rest.pending = piece.pending;
  return true;
}

}  // namespace

// `right` (which follows it) into `left`; left.pages has room for right's.
void Allocator::join(Device& dev, FreeRange& left, FreeRange&& right) noexcept {
  left.range_bytes += right.range_bytes;
  left.pages.insert(left.pages.end(), right.pages.begin(), right.pages.end());
  left.after.merge(right.after);
  left.pending = join_events(dev, std::move(left.pending), std::move(right.pending));
}

void Allocator::free_piece(Device& dev, FreeRange piece) noexcept {
  if (piece.range_bytes == 0) return;
  try {
    auto next = dev.free_ranges.lower_bound(piece.base);
    if (next != dev.free_ranges.end() && joinable(dev, piece, next->second)) {
      piece.pages.reserve(piece.pages.size() + next->second.pages.size());
      join(dev, piece, unlist(dev, next));
    }
    next = dev.free_ranges.lower_bound(piece.base);
    if (next != dev.free_ranges.begin()) {
      auto prev = std::prev(next);
      if (joinable(dev, prev->second, piece)) {
        prev->second.pages.reserve(prev->second.pages.size() + piece.pages.size());
        FreeRange left = unlist(dev, prev);
        join(dev, left, std::move(piece));
        piece = std::move(left);
      }
    }
    auto& by_size = dev.free_by_size[piece.mapped()];
    auto listed = by_size.emplace(piece.range_bytes, piece.base).first;
    try {
      const bool mapped = piece.mapped();
      const uint64_t bytes = piece.range_bytes;
      dev.free_ranges.emplace(piece.base, std::move(piece));
      if (mapped) dev.free_mapped_bytes += bytes;
      return;
    } catch (...) {
      by_size.erase(listed);
      throw;
    }
  } catch (...) {
    // Out of memory for the lists: the piece stays as it is, unused.
    dev.lost_device_bytes += piece.pages.size() * dev.granularity;
  }
}

CUresult Allocator::claim_space(Device& dev, uint64_t bytes, FreeRange& out) noexcept {
  auto& space = dev.free_by_size[0];
  auto fit = space.lower_bound({bytes, 0});
  if (fit == space.end() && !dev.retiring.empty()) {
    retire_done(dev, /*wait=*/false);
    fit = space.lower_bound({bytes, 0});
  }
  if (fit == space.end()) {
    // A new chunk: twice the budget leaves room for what is evicted.
    const uint64_t chunk_bytes = std::max(round_up(2 * dev.budget_bytes, dev.granularity), bytes);
    CUdeviceptr base = 0;
    CUresult r = calls_.cuMemAddressReserve(&base, chunk_bytes, dev.granularity);
    if (r != CUDA_SUCCESS) return r;
    try {
      dev.chunks.emplace(base, chunk_bytes);
    } catch (...) {
      (void)calls_.cuMemAddressFree(base, chunk_bytes);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    stats_.arena_bytes += chunk_bytes;
    FreeRange chunk;
    chunk.base = base;
    chunk.range_bytes = chunk_bytes;
    free_piece(dev, std::move(chunk));
    fit = space.lower_bound({bytes, 0});
    if (fit == space.end()) return CUDA_ERROR_OUT_OF_MEMORY;  // the lists had no room
  }
  out = unlist(dev, dev.free_ranges.find(fit->second));
  FreeRange rest;
  if (out.range_bytes > bytes && split(out, bytes, dev.granularity, rest))
    free_piece(dev, std::move(rest));
  return CUDA_SUCCESS;
}

// Step 2 of Note [The address arena]: the most mapped free piece with
// enough address space just before or after it. On success `head` is the
// piece and `space` the address space to map (none found: both empty);
// false, with both given back, when there was no memory to split them.
bool Allocator::grow_beside(Device& dev, uint64_t bytes, FreeRange& head, FreeRange& space,
                            bool& space_first) noexcept {
  const uint64_t g = dev.granularity;
  auto& mapped = dev.free_by_size[1];
  for (auto it = mapped.rbegin(); it != mapped.rend(); ++it) {
    auto at = dev.free_ranges.find(it->second);
    const FreeRange& piece = at->second;
    auto next = std::next(at);
    if (next != dev.free_ranges.end() && !next->second.mapped() &&
        adjacent(dev, piece, next->second) &&
        piece.range_bytes + next->second.range_bytes >= bytes) {
      const uint64_t need = bytes - piece.range_bytes;
      head = unlist(dev, at);
      space = unlist(dev, next);  // `at` and `next` are gone now
      FreeRange rest;
      if (space.range_bytes > need && !split(space, need, g, rest)) break;
      free_piece(dev, std::move(rest));
      return true;
    }
    if (at != dev.free_ranges.begin()) {
      auto prev = std::prev(at);
      if (!prev->second.mapped() && adjacent(dev, prev->second, piece) &&
          prev->second.range_bytes + piece.range_bytes >= bytes) {
        const uint64_t need = bytes - piece.range_bytes;
        head = unlist(dev, at);
        space = unlist(dev, prev);
        FreeRange front;
        if (space.range_bytes > need) {
          if (!split(space, space.range_bytes - need, g, front)) break;
          std::swap(space, front);  // the part next to the mapped piece is the one used
        }
        free_piece(dev, std::move(front));
        space_first = true;
        return true;
      }
    }
  }
  if (!head.range_bytes) return true;  // none beside any piece
  free_piece(dev, std::move(space));
  free_piece(dev, std::move(head));
  space = {};
  head = {};
  return false;
}

// Gives `block` the range of its size at `base` in `piece`, a mapped free
// piece taken off the lists, what is before and after it going back free:
// no driver call; its first use waits for the piece's last owners (step 1
// of Note [The address arena]). False, with the piece back as it was, when
// there was no memory to split it.
bool Allocator::take_mapped(Device& dev, FreeRange piece, uintptr_t base, Block& block) noexcept {
  const uint64_t g = dev.granularity, bytes = block.range_bytes;
  FreeRange front, back;
  if (piece.base < base) {
    if (!split(piece, base - piece.base, g, back)) {
      free_piece(dev, std::move(piece));
      return false;
    }
    front = std::move(piece);
    piece = std::move(back);
    back = {};
  }
  if (piece.range_bytes > bytes && !split(piece, bytes, g, back)) {
    free_piece(dev, std::move(front));
    free_piece(dev, std::move(piece));
    return false;
  }
  free_piece(dev, std::move(front));
  free_piece(dev, std::move(back));
  block.base = piece.base;
  block.pages = std::move(piece.pages);
  block.before = piece.after;
  block.waits.events[0] = std::move(piece.pending);
  ++stats_.reused_ranges;
  return true;
}

// Note [Placed as a step ago]
// Best fit alone does not settle on a training step's layout where some
// buffers live from one step into the next: what is free when an
// allocation comes differs from step to step, so it lands elsewhere, and
// now and then a large one finds no mapped free piece that holds it,
// though enough pages are free in smaller ones, and pages move (the
// transformer snapshot at its peak: a 74-page buffer, 75 VMM calls, in 7
// of 36 steps). So each device finds the step as the period with which the
// sizes of its large allocations repeat (Note [Iteration detection]),
// remembers where each went over the last four steps, and places an
// allocation where the one a step earlier went, else two, three or four
// steps earlier (a buffer that outlives a step alternates between places),
// if that range is free and mapped now, split from its piece; only then by
// best fit. A step that repeats the last one's placements makes no driver
// call. The snapshot at its peak: no VMM call after its eighth step of 40.
constexpr uint64_t kStepsBack = 4;

CUresult Allocator::place_large(Device& dev, Block& block, MayWait may_wait) noexcept {
  const uint64_t at = dev.placements++;
  const uint64_t period = learn_step(dev, block.range_bytes);
  bool placed = false;
  for (uint64_t back = 1; period && back <= kStepsBack && back * period <= at && !placed; ++back)
    placed = place_as_before(dev, block, at - back * period);
  CUresult r = placed ? CUDA_SUCCESS : place_anew(dev, block, may_wait);
  remember_place(dev, at, block.range_bytes, r == CUDA_SUCCESS ? block.base : 0, period);
  return r;
}

uint64_t Allocator::learn_step(Device& dev, uint64_t bytes) noexcept {
  try {
    dev.steps.on_launch(bytes);
    return dev.steps.period();
  } catch (...) {
    dev.steps = {};  // no memory for its history: look again from here
    return 0;
  }
}

bool Allocator::place_as_before(Device& dev, Block& block, uint64_t earlier) noexcept {
  if (earlier < dev.placed_first || earlier - dev.placed_first >= dev.placed.size()) return false;
  const Placed& was = dev.placed[earlier - dev.placed_first];
  const uint64_t bytes = block.range_bytes;
  if (was.bytes != bytes || !was.base) return false;
  auto at = dev.free_ranges.upper_bound(was.base);
  if (at == dev.free_ranges.begin()) return false;
  --at;
  if (!at->second.mapped() || was.base + bytes > at->second.base + at->second.range_bytes)
    return false;
  return take_mapped(dev, unlist(dev, at), was.base, block);
}

void Allocator::remember_place(Device& dev, uint64_t at, uint64_t bytes, uintptr_t base,
                               uint64_t period) noexcept {
  // Placements up to kStepsBack steps back are read: keep those, or as
  // many as the longest step the detector finds.
  const uint64_t keep = period ? kStepsBack * period : IterationDetector::kAnchorPatience;
  try {
    if (dev.placed.empty()) dev.placed_first = at;
    dev.placed.push_back({bytes, base});
  } catch (...) {
    dev.placed.clear();
    return;
  }
  while (dev.placed.size() > keep) {
    dev.placed.pop_front();
    ++dev.placed_first;
  }
}

CUresult Allocator::place_anew(Device& dev, Block& block, MayWait may_wait) noexcept {
  const uint64_t bytes = block.range_bytes;
  const uint64_t g = dev.granularity;
  // 1. Mapped memory that holds it.
  auto& mapped = dev.free_by_size[1];
  if (auto fit = mapped.lower_bound({bytes, 0}); fit != mapped.end()) {
    const uintptr_t base = fit->second;
    return take_mapped(dev, unlist(dev, dev.free_ranges.find(base)), base, block)
               ? CUDA_SUCCESS
               : CUDA_ERROR_OUT_OF_MEMORY;
  }
  // 2. Mapped memory with address space beside it.
  FreeRange head, space;
  bool space_first = false;  // the new pages go before the mapped ones
  if (!grow_beside(dev, bytes, head, space, space_first)) return CUDA_ERROR_OUT_OF_MEMORY;
  // 3, 4. Address space alone.
  if (!space.range_bytes) {
    if (CUresult r = claim_space(dev, bytes, space); r != CUDA_SUCCESS) return r;
  }
  // The new pages' first use waits for what they owe (Note [Planned moves]).
  TakenPages fresh(*this, dev);
  CUresult r = take_pages(dev, static_cast<size_t>(space.range_bytes / g), fresh, {}, may_wait,
                          /*may_evict=*/true);
  if (r == CUDA_SUCCESS) {
    try {
      block.pages.reserve(head.pages.size() + fresh.pages().size());
    } catch (...) {
      r = CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  MappedRange range(calls_, dev, space.base, space.range_bytes);
  if (r == CUDA_SUCCESS) r = range.map(fresh.pages());
  if (r != CUDA_SUCCESS) {
    range.undo();
    free_piece(dev, std::move(space));
    free_piece(dev, std::move(head));
    return r;  // the pages go back as `fresh` leaves
  }
  range.commit();
  block.base = space_first || !head.range_bytes ? space.base : head.base;
  std::vector<PageHandle> added = fresh.keep();
  for (const auto* part :
       space_first ? std::array{&added, &head.pages} : std::array{&head.pages, &added})
    block.pages.insert(block.pages.end(), part->begin(), part->end());  // reserved above
  block.before = std::move(head.after);
  block.before.merge(fresh.after().uses);
  block.waits.events[0] = std::move(fresh.after().donor);
  block.waits.events[1] = std::move(head.pending);
  if (head.range_bytes) ++stats_.grown_ranges;
  return CUDA_SUCCESS;
}

bool Allocator::reclaim_free(Device& dev, size_t count, std::vector<PageHandle>& out,
                             PagesAfter* after) noexcept {
  const uint64_t g = dev.granularity;
  bool took = false;
  // First pass: pieces whose last uses are known done; then any.
  for (int pass = 0; pass < 2; ++pass) {
    while (count > 0 && out.size() < out.capacity()) {
      auto& by_size = dev.free_by_size[1];
      auto pick = dev.free_ranges.end();
      for (auto it = by_size.rbegin(); it != by_size.rend(); ++it) {
        auto at = dev.free_ranges.find(it->second);
        const FreeRange& piece = at->second;
        if (pass == 0 &&
            (!piece.pending.known_done() || !point_done(dev, piece.after, /*ask=*/false)))
          continue;
        pick = at;
        break;
      }
      if (pick == dev.free_ranges.end()) break;
      FreeRange piece = unlist(dev, pick);
      const size_t n = piece.pages.size();
      const size_t k = std::min({count, n, out.capacity() - out.size()});
      Retiring gone;
      gone.base = piece.base + (n - k) * g;
      gone.bytes = k * g;
      gone.after = piece.after;
      gone.pending = piece.pending;
      out.insert(out.end(), piece.pages.end() - static_cast<std::ptrdiff_t>(k), piece.pages.end());
      piece.pages.resize(n - k);
      piece.range_bytes = (n - k) * g;
      free_piece(dev, std::move(piece));
      count -= k;
      took = true;
      stats_.reclaimed_pages += k;
      if (after) {
        // The new owner waits on the device; the old place is unmapped later.
        after->uses.merge(gone.after);
        if (!gone.pending.known_done())
          after->donor = join_events(dev, std::move(after->donor), gone.pending);
        retire(dev, std::move(gone));
      } else {
        // Pages that go back to the driver: their old place goes first.
        synchronize_point(dev, gone.after);
        gone.pending.synchronize();
        gone.after.reset();
        gone.pending.reset();
        unmap_retired(dev, gone);
      }
    }
  }
  return took;
}

void Allocator::retire(Device& dev, Retiring piece) noexcept {
  try {
    dev.retiring.push_back(std::move(piece));
  } catch (...) {
    synchronize_point(dev, piece.after);
    piece.pending.synchronize();
    unmap_retired(dev, piece);
  }
}

void Allocator::retire_done(Device& dev, bool wait) noexcept {
  auto& pieces = dev.retiring;
  for (size_t i = 0; i < pieces.size();) {
    Retiring& piece = pieces[i];
    if (wait) {
      synchronize_point(dev, piece.after);
      piece.pending.synchronize();
    }
    if (!piece.pending.done() || !point_done(dev, piece.after, /*ask=*/true)) {
      ++i;
      continue;
    }
    Retiring done = std::move(piece);
    if (i + 1 != pieces.size()) piece = std::move(pieces.back());
    pieces.pop_back();
    unmap_retired(dev, done);
  }
}

void Allocator::unmap_retired(Device& dev, Retiring& piece) noexcept {
  if (calls_.cuMemUnmap(piece.base, piece.bytes) != CUDA_SUCCESS) {
    // Still mapped: the address space stays out of use, and so does a host
    // copy mapped there.
    if (piece.host.handle) dev.lost_host_bytes += piece.host.size_bytes;
    return;
  }
  if (piece.host.handle) give_host_copy_back(dev, nullptr, 0, piece.host);
  FreeRange space;
  space.base = piece.base;
  space.range_bytes = piece.bytes;
  free_piece(dev, std::move(space));
}

}  // namespace cuswap
