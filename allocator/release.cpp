// Giving a buffer's memory back: a free, stream-ordered or synchronous,
// and a free of a buffer whose eviction is still in flight. The memory
// becomes free pieces of the arena (Note [The address arena]) or small
// slots; nothing waits on the host.
#include <bit>
#include <memory>

#include "allocator/swap_internal.h"

namespace cuswap {

// Note [A synchronous free]: cuMemFree returns only once the device is
// idle, and programs count on it: PyTorch without its caching allocator
// frees a tensor as soon as the host lets go of it, while kernels that read
// it are still queued. Some of those may be uses the allocator never saw (a
// library's kernel that reaches the buffer through pointers in device
// memory), so the buffer's last seen use is not enough: taken with only
// that, its range was unmapped under a queued kernel, which faulted (seen
// on an H200, PyTorch's ResNet-50 under `cuswap run`). Without making the
// host wait, the freed memory keeps the point of every stream's work queued
// before the free (Note [Lazy use events]): a next owner whose first use is
// on another stream waits, on the device, for the work of every stream but
// its own, and the range is unmapped only once all of it is done.

// Note [A wait at the free]
// A buffer fetched back into pages that another buffer's copy out was
// still reading owes two copies, and it may be freed before either has
// ended on the device: the host runs ahead. One passes to the next owner,
// the host waits for the other. The buffer's uses waited for both on the
// device, so this wait never leaves the device idle: the host stays ahead
// by the work queued between the buffer's use and its free. What it does is
// hold the host near the copies, and reactive eviction needs that: a free
// fetches back the buffer last evicted (Note [Prefetching ahead]) only
// once its copy out has landed, and with the host far ahead it has not.
// ResNet-50 V100 under its 1x peak, reactive, takes two such waits a step
// at 1x, five at 2x, ten at 4x. Joined on the device instead (Note [Joined
// events]), 1x took no host wait at the same 16.83 ms, but 2x took 132.0 ms
// a step against 124.5, one buffer a step fetched on demand; passing over
// a last evicted still in flight to fetch older ones, 125.2 ms at 2x and
// 352.1 against 340.8 at 4x; waiting at the free that wants it back for
// its copy out, 124.5 at 2x and 364.0 at 4x.

// Gives a buffer's memory back for reuse (Note [Stream-ordered reuse]).
void Allocator::release_block(Block* block, CUstream stream, bool ordered) noexcept {
  std::unique_ptr<Block> owned(block);
  Device& dev = *devices_[static_cast<size_t>(block->device)];
  ScopedContext scope(driver_, dev.context);
  // The copy of an eviction still reads the range: the next owner waits
  // for it (Note [Planned moves]); one that gave pages away is let go below.
  if (block->evict_copy && !block->donated) cancel_eviction(dev, *block, nullptr);
  // What the next owner must wait for: its uses, a previous owner's it
  // never used, and the free's place in its stream, or for a synchronous
  // free every stream's work queued before it (Note [A synchronous free]).
  UsePoint after = block->last_use;
  after.merge(block->before);
  if (!ordered) {
    after.merge(UsePoint::every_stream(use_seq_));
  } else if (stream_uses(dev, stream)) {
    after.add(stream, use_seq_);
  } else {
    synchronize_point(dev, after);  // the free's stream cannot be named: wait now
    after.reset();
  }
  block->last_use.reset();
  block->before.reset();
  if (block->evict_copy) {
    release_donor(dev, *block, std::move(after));  // its copy follows what it waits for
    return;
  }
  // Copies the buffer still owes (a prefetch copy, an eviction's) pass on
  // to the next owner; a second one is waited for here (Note [A wait at
  // the free]).
  EventRef pending;
  for (EventRef& wait : block->waits.events) {
    if (wait.done()) continue;
    if (!pending) {
      pending = std::move(wait);
      continue;
    }
    wait.synchronize();
    wait.reset();
  }
  if (block->small) {
    free_small(dev, block->base, {block->range_bytes, std::move(after), std::move(pending)});
    return;
  }
  if (block->residency == Residency::evicted) {
    // Its bytes are dead: the host copy goes back and the address space to
    // the arena; where the host copy is mapped at it, both once the uses
    // that may reach it there are done (Note [Buffers bigger than the
    // budget]).
    if (block->range_on_host) {
      Retiring mapped;
      mapped.base = block->base;
      mapped.bytes = block->range_bytes;
      mapped.after = std::move(after);
      mapped.pending = std::move(pending);
      mapped.host = block->host;
      retire(dev, std::move(mapped));
      retire_done(dev, /*wait=*/false);  // at once if they are done
      return;
    }
    give_host_copy_back(dev, block->stash, block->size_bytes, block->host);
    FreeRange space;
    space.base = block->base;
    space.range_bytes = block->range_bytes;
    free_piece(dev, std::move(space));
    return;
  }
  // A free changes no mapping (Note [The address arena]).
  FreeRange range;
  range.base = block->base;
  range.range_bytes = block->range_bytes;
  range.pages = std::move(block->pages);
  range.after = std::move(after);
  range.pending = std::move(pending);
  free_piece(dev, std::move(range));
}

// An evicting buffer that gave pages to another use, freed before its copy
// ended: the bytes are dead, but the copy still reads the range. Nobody
// waits on the host: the pages it kept (mapped from its base, the donated
// ones were taken from its end) become a free piece whose next owner waits
// for the copy, the rest of the range is unmapped once the copy is done,
// and the host copy goes back then.
void Allocator::release_donor(Device& dev, Block& block, UsePoint after) noexcept {
  leave_flight(dev, block);
  EventRef copy = std::move(block.evict_copy);
  if (observer_)
    observer_->evicted(block.base, block.size_bytes, block.evict_reason, block.evict_queued_ns,
                       observer_->clock_ns());
  if (!release_host_copy_after(dev, block, copy)) {
    copy.synchronize();
    release_host_copy(dev, block);
  }
  const uint64_t kept = block.pages.size() * dev.granularity;
  Retiring rest;
  rest.base = block.base + kept;
  rest.bytes = block.range_bytes - kept;
  rest.after = after;
  rest.pending = copy;
  if (kept > 0) {
    FreeRange piece;
    piece.base = block.base;
    piece.range_bytes = kept;
    piece.pages = std::move(block.pages);
    piece.after = std::move(after);
    piece.pending = std::move(copy);
    free_piece(dev, std::move(piece));
  }
  retire(dev, std::move(rest));
}

}  // namespace cuswap
