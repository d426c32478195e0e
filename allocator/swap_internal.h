// The allocator's private types, shared by swap_allocator.cpp (allocation,
// free, uses), device_pages.cpp (pages, ranges, slabs, events) and
// eviction.cpp (moving bytes). Everything here is guarded by Allocator::mu_.
#pragma once

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "allocator/driver_calls.h"
#include "allocator/host_stash.h"
#include "allocator/swap_allocator.h"
#include "common/iteration_detector.h"

namespace cuswap {

using PageHandle = CUmemGenericAllocationHandle;

struct EventPool;

// Note [Shared events]: an event recorded for a decision (a copy's end, a
// stream's cover of its uses: Note [Lazy use events]) is shared by every
// place that must wait for it: buffers, copies ordered after it, freed
// memory. An EventRef is one counted reference to it: copying retains,
// reset() or the destructor releases, and the last release returns the
// event to its device's pool, where record_event() takes it again, so that
// recording allocates nothing once the pool is warm. The invariant checker
// counts each event's references against the places that hold it.
struct Allocator::SharedEvent {
  CUevent event = nullptr;
  EventPool* pool = nullptr;
  uint32_t refs = 0;
  bool done = false;  // cuEventQuery said so once: it stays done
};

class EventRef {
 public:
  EventRef() = default;
  // Takes over a reference already counted (record_event()'s).
  static EventRef adopt(Allocator::SharedEvent* event) noexcept {
    EventRef ref;
    ref.event_ = event;
    return ref;
  }
  EventRef(const EventRef& other) noexcept : event_(other.event_) {
    if (event_) ++event_->refs;
  }
  EventRef(EventRef&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  EventRef& operator=(EventRef other) noexcept {
    std::swap(event_, other.event_);
    return *this;
  }
  ~EventRef() { reset(); }

  void reset() noexcept;
  explicit operator bool() const noexcept { return event_ != nullptr; }
  Allocator::SharedEvent* get() const noexcept { return event_; }
  CUevent event() const noexcept { return event_->event; }
  // Whether cuEventQuery has said it completed (no driver call).
  bool known_done() const noexcept { return !event_ || event_->done; }
  // True when there is no event or it has completed; a completed one is
  // let go.
  bool done() noexcept;
  // Blocks the host until it has completed (nothing when there is none);
  // kept, and known done if the driver says so.
  void synchronize() noexcept;

 private:
  Allocator::SharedEvent* event_ = nullptr;
};

// A device's free events (Note [Shared events]). Declared first in Device,
// so that it is destroyed after everything holding an EventRef.
struct EventPool {
  EventPool() = default;
  ~EventPool();
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;
  DriverCalls* calls = nullptr;
  std::vector<Allocator::SharedEvent*> free;
};

// Up to two events a piece of memory must wait for before its next use.
struct Waits {
  EventRef events[2];
};

// Note [Lazy use events]: recording an event after every launch would cost
// the framework's thread a driver call per launch (about as much as the
// launch) for an answer rarely asked: when a buffer's uses are done. So a
// use only notes its stream and its number in the allocator's count of
// uses, and a piece of memory keeps a UsePoint: the work queued on these
// streams (or on every stream) up to that number. An event is recorded
// only when a decision needs one (an eviction's copy must follow the last
// use, memory freed on one stream is taken by a use on another, a range is
// unmapped), on the stream that did the work, at that moment: stream order
// puts it after every use the point names. Each stream keeps its latest
// such event with the count it was recorded at, which answers every later
// question about earlier uses, and the count below which its uses are
// known done. On the point's own stream no event is needed at all. Uses are
// counted in finish(), after the driver call, so an event recorded when the
// count is n follows every use numbered n or less.
struct UsePoint {
  uint64_t seq = 0;  // uses up to this number
  std::array<CUstream, 2> streams{};
  uint8_t count = 0;
  bool all_streams = false;  // every stream's (a synchronous free: the device idles)

  bool empty() const noexcept { return count == 0 && !all_streams; }
  void reset() noexcept { *this = UsePoint{}; }
  // Widens the point to `stream`'s work up to `at`; a third stream makes it
  // every stream's.
  void add(CUstream stream, uint64_t at) noexcept {
    seq = std::max(seq, at);
    if (all_streams) return;
    for (uint8_t i = 0; i < count; ++i)
      if (streams[i] == stream) return;
    if (count < streams.size()) {
      streams[count++] = stream;
    } else {
      all_streams = true;
      count = 0;
    }
  }
  void merge(const UsePoint& other) noexcept {
    if (other.empty()) return;
    if (other.all_streams) {
      seq = std::max(seq, other.seq);
      all_streams = true;
      count = 0;
      return;
    }
    for (uint8_t i = 0; i < other.count; ++i)
      add(other.streams[i], other.seq);
  }
  static UsePoint every_stream(uint64_t at) noexcept {
    UsePoint p;
    p.seq = at;
    p.all_streams = true;
    return p;
  }
};

// Note [Marks behind the host]
// A stream's cover is recorded when a decision asks, so it follows every
// use queued by then, and the host runs ahead of the device: an eviction's
// copy ordered after it starts only once the device has caught up with the
// host, though the victim's last use (the least recently used buffer's) ran
// long before, and the use that takes the victim's pages, queued just after,
// waits for the whole copy (ResNet-50 under its 1x peak, without a plan: two
// stalls of 1.3 ms a step, the host 2.5 ms ahead). So once something has
// been evicted for room, a stream also records an event every kMarkEvery of
// the allocator's uses, and keeps the last kMarks of them: an old use is
// covered by the earliest mark after it, which the device has often passed,
// and the copy starts at once. That is an event record every kMarkEvery
// launches, and only while the budget is short.
struct UseMark {
  EventRef event;  // recorded on the stream when the count was seq
  uint64_t seq = 0;
};
inline constexpr uint64_t kMarkEvery = 32;
inline constexpr size_t kMarks = 8;

// One stream's uses on a device (Note [Lazy use events]).
struct StreamUses {
  CUstream stream = nullptr;
  uint64_t first_seq = 0, last_seq = 0;  // its first and latest use
  EventRef cover;                        // recorded on it when the count was cover_seq
  uint64_t cover_seq = 0;
  uint64_t done_below = 0;            // its uses numbered below this are known done
  std::array<UseMark, kMarks> marks;  // Note [Marks behind the host], oldest overwritten
  uint8_t next_mark = 0;
  uint64_t mark_due = 0;  // the count at which the next mark is recorded
};

// Where an evicted buffer's bytes are kept in host-located virtual memory:
// the physical allocation and a window (a range of its own where it stays
// mapped, the source and destination of the copies).
struct HostCopy {
  PageHandle handle = 0;
  uintptr_t window = 0;
  uint64_t size_bytes = 0;
};

struct Allocator::Block {
  uintptr_t base = 0;
  uint64_t size_bytes = 0;   // what the application asked for
  uint64_t range_bytes = 0;  // large: whole pages reserved; small: the size class
  int device = 0;
  bool small = false;
  Residency residency = Residency::resident;
  std::vector<PageHandle> pages;  // large: device pages mapped at base unless evicted
  UsePoint last_use;              // its uses (Note [Lazy use events])
  UsePoint before;                // its memory's previous owner's, until its first use
  Waits waits;  // a use waits for these first (a prefetch copy, an eviction's copy)
  uint64_t last_tick = 0;
  uint32_t pins = 0;  // uses prepared and not yet finished (Note [Pinned uses])
  bool escaped = false;
  // The host copy while evicted (one of the two, by mode).
  void* stash = nullptr;
  HostCopy host;
  bool range_on_host = false;    // host.handle is mapped at base
  uint64_t evict_queued_ns = 0;  // the observer's clock when its eviction copy was queued
  // An eviction's copy while it runs (Note [Planned moves]); the block is
  // evicting, its pages still mapped unless given away.
  EventRef evict_copy;
  EvictReason evict_reason = EvictReason::plan;
  bool donated = false;  // some of its pages went to another use before the copy ended
};

// A piece of a device's address arena that no buffer holds (Note [The
// address arena]): mapped to pages kept for reuse, or address space only.
struct Allocator::FreeRange {
  uintptr_t base = 0;
  uint64_t range_bytes = 0;
  std::vector<PageHandle> pages;  // mapped from base, a page each; empty: address space only
  UsePoint after;                 // the last owners' uses (Note [Stream-ordered reuse])
  EventRef pending;               // a prefetch copy still in flight at the free
  bool mapped() const noexcept { return !pages.empty(); }
};

// Where a large allocation went (Note [Placed as a step ago]); base 0: it
// failed.
struct Placed {
  uint64_t bytes = 0;
  uintptr_t base = 0;
};

// Address space still mapped where its last owners' uses may run, its
// pages (or host copy) gone to another use: unmapped once they are done.
struct Retiring {
  uintptr_t base = 0;
  uint64_t bytes = 0;
  UsePoint after;
  EventRef pending;
  HostCopy host;  // a host copy mapped there, given back once unmapped
};

// What a use of pages taken from elsewhere waits for first, on the device
// (Note [Planned moves], Note [The address arena]).
struct PagesAfter {
  EventRef donor;  // the copy of the last evicting buffer that gave pages
  UsePoint uses;   // the uses of the freed ranges the pages were taken from
};

// Pages taken for one use and what that use must wait for first. Until
// keep() hands them to their owner they are the taker's alone; whatever was
// not kept goes back to the pool when it is destroyed, the host first
// waiting for what the pages still owe (give_donated), so a failure path
// undoes a take by leaving its scope.
class Allocator::TakenPages {
 public:
  TakenPages(Allocator& allocator, Device& dev) noexcept : allocator_(allocator), dev_(dev) {}
  ~TakenPages() { give_back(); }
  TakenPages(const TakenPages&) = delete;
  TakenPages& operator=(const TakenPages&) = delete;

  std::vector<PageHandle>& pages() noexcept { return pages_; }
  PagesAfter& after() noexcept { return after_; }
  // The pages, now their owner's; after() still says what its use waits for.
  std::vector<PageHandle> keep() noexcept { return std::exchange(pages_, {}); }
  // Back to the pool now (a caller about to wait holds no page).
  void give_back() noexcept;

 private:
  Allocator& allocator_;
  Device& dev_;
  std::vector<PageHandle> pages_;
  PagesAfter after_;
};

// A free piece of a slab (Note [The small pool]).
struct SmallPiece {
  uint64_t bytes = 0;
  UsePoint after;    // its last owners' uses
  EventRef pending;  // a copy its pages still owe
};

// A host copy to give back once the prefetch copy reading it is done.
struct HostRelease {
  void* stash = nullptr;
  uint64_t stash_bytes = 0;
  HostCopy host;
  EventRef after;
};

// Note [The small pool]; policy/workload.h's kRuntimeSmallBytes charges the same.
inline constexpr uint64_t kSmallGranule = 512;

struct Allocator::Device {
  EventPool events;  // first: destroyed last
  int ordinal = -1;
  bool initialised = false;
  CUdevice cu_device = 0;
  CUcontext context = nullptr;
  uint64_t granularity = 0;
  uint64_t budget_bytes = 0;
  uint64_t total_bytes = 0;
  bool host_vmm = false;  // evict to host-located memory mapped at the range
  CUmemLocation host_location{};
  CUstream evict_stream = nullptr;
  CUstream prefetch_stream = nullptr;
  CUstream join_stream = nullptr;    // waits and records only (Note [Joined events])
  std::unique_ptr<HostStash> stash;  // when !host_vmm, created on first eviction

  uint64_t device_bytes = 0;  // pages created (pooled, mapped) and slabs
  // What its memory pools answer (Note [Memory pools under a budget]).
  uint64_t used_bytes = 0;     // live allocations, resident or not
  uint64_t used_high = 0;      // since the start, or the last reset
  uint64_t reserved_high = 0;  // of device_bytes, sampled at allocations and queries
  std::vector<PageHandle> page_pool;
  // The address arena (Note [The address arena]): reserved chunks by base,
  // their free pieces by base and by (size, base), mapped and not, and
  // pieces waiting to be unmapped.
  std::map<uintptr_t, uint64_t> chunks;
  std::map<uintptr_t, FreeRange> free_ranges;
  std::array<std::set<std::pair<uint64_t, uintptr_t>>, 2> free_by_size;  // [mapped]
  uint64_t free_mapped_bytes = 0;
  std::vector<Retiring> retiring;
  // Note [Placed as a step ago]: the step, as the period of the sizes of
  // large allocations; where each went, from placed_first on.
  IterationDetector steps;
  uint64_t placements = 0;  // large allocations in the arena, ever
  std::deque<Placed> placed;
  uint64_t placed_first = 0;
  // The small pool (Note [The small pool]): free pieces of slabs by base
  // and by (size, base).
  std::map<uintptr_t, SmallPiece> small_free;
  std::set<std::pair<uint64_t, uintptr_t>> small_by_size;
  std::vector<HostCopy> host_cache;  // host copies kept for reuse
  std::vector<HostRelease> host_releases;
  std::vector<StreamUses> streams;          // Note [Lazy use events]
  std::vector<Allocator::Block*> evicting;  // evictions in flight, oldest first
  // Bases of buffers evicted for room, last evicted last (Note [Prefetching
  // ahead]); a base may have been fetched back or freed since.
  std::vector<uintptr_t> evicted_for_room;
  // The watch of Note [Prefetching ahead]: live bytes rising to a peak, or
  // falling from it to a low.
  bool used_falling = false;
  bool planned = false;     // a plan moves buffers here: it fetches them back, not the watch
  bool overflowed = false;  // something was evicted for room (Note [Evicting ahead])
  // Note [A step that fits]: what the live buffers would take resident
  // (large ones' pages and the slabs), and its high over the current step.
  uint64_t live_large_bytes = 0, slab_bytes = 0;
  uint64_t step_need_high = 0;
  uint64_t step_allocations = 0;  // large ones, since the step began
  uint64_t used_peak = 0, used_low = 0;
  std::map<uintptr_t, uint64_t> slabs;  // ranges by base, never released
  // Memory a failed driver call left where cuswap cannot reuse it: device
  // pages still counted in device_bytes, host copies still in host_bytes.
  uint64_t lost_device_bytes = 0;
  uint64_t lost_host_bytes = 0;
};

// Makes a device's context current for the scope, if it is not already.
class ScopedContext {
 public:
  ScopedContext(const Driver& driver, CUcontext context) noexcept;
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
  CUresult status() const noexcept { return status_; }

 private:
  const Driver& driver_;
  bool pushed_ = false;
  CUresult status_ = CUDA_SUCCESS;
};

// Note [Mapping a range]: a range is set up in one order, reserve → map →
// set access, and a step that fails undoes the ones before it, in reverse.
// MappedRange is that ladder: each step returns the driver's result, and
// the destructor undoes what was done unless commit() was called. Given
// an existing range (the buffer's own, whose address never changes), only
// its mappings are undone.
class MappedRange {
 public:
  // A new range, reserved by reserve().
  MappedRange(DriverCalls& calls, const Allocator::Device& dev) noexcept;
  // The reserved range [base, base + bytes), kept whatever happens.
  MappedRange(DriverCalls& calls, const Allocator::Device& dev, uintptr_t base,
              uint64_t bytes) noexcept;
  ~MappedRange() { undo(); }
  MappedRange(const MappedRange&) = delete;
  MappedRange& operator=(const MappedRange&) = delete;

  [[nodiscard]] CUresult reserve(uint64_t bytes) noexcept;
  // One device page per granularity unit, or one allocation over the
  // whole range; then read and write access for the device.
  [[nodiscard]] CUresult map(std::span<const PageHandle> pages) noexcept;
  [[nodiscard]] CUresult map(PageHandle whole) noexcept;
  // Keeps what was done; the range's base.
  uintptr_t commit() noexcept;
  // Undoes what was done now (before the destructor would).
  void undo() noexcept;

 private:
  [[nodiscard]] CUresult enable() noexcept;
  DriverCalls& calls_;
  const Allocator::Device& dev_;
  uintptr_t base_ = 0;
  uint64_t bytes_ = 0;
  bool owned_ = false;   // reserve() made it: undo frees it
  uint64_t mapped_ = 0;  // bytes from base_ mapped so far
};

inline uint64_t round_up(uint64_t value, uint64_t unit) {
  return (value + unit - 1) / unit * unit;
}

}  // namespace cuswap
