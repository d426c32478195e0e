// The swapping allocator: device memory under a budget, with cold buffers
// evicted to host memory and brought back on use. The hooks route every
// allocation, free, launch, copy and set through it; tests drive it directly
// with a Driver table pointed at simcuda.
//
// The words (buffer, range, page, slab, residency, host copy, use) are
// defined once, in docs/architecture.md ("Glossary").
//
// Note [Stable addresses]: a framework may hold a device pointer for the
// life of the process, and kernels may store it in device memory. A large
// buffer therefore gets its own range of whole pages in the device's
// address arena, backed by pages mapped at it while resident; evicting and
// prefetching change the physical memory under the range, never the range.
//
// Note [Eviction keeps the address mapped]: with host-located virtual memory
// (CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED), an
// evicted buffer's range is remapped onto host-located memory that holds its
// bytes, so a kernel that reaches it through a pointer cuswap could not see
// still reads and writes the right bytes, over the bus. Without it, the
// range is left unmapped and only buffers whose every access cuswap sees are
// evicted: a buffer touched by a launch whose parameters cannot be read, a
// graph launch or an NCCL kernel, or whose address was copied to the device
// inside a small host buffer (a pointer table), is marked escaped and stays
// resident.
//
// Note [Residency]: resident → evicting → evicted → prefetching → resident.
// Evicting: the device-to-host copy is queued on the device's eviction
// stream after the buffer's last use; the allocation that needed the room
// takes the pages at once, its first use waiting on the device for the copy
// (Note [Reactive evictions in flight]), and the range is unmapped once the
// copy is done and room is next wanted. Prefetching: the
// pages are mapped back, the host-to-device copy is queued on the prefetch
// stream, and the stream of the use waits for the copy's event (the calling
// thread does not); the buffer is resident once that event has completed, and
// every use until then waits for it. Host copies are released once the
// prefetch copy is done. Every transition happens under the allocator's lock.
//
// Note [Stream-ordered reuse]: freed memory is reused without a driver call:
// a large buffer's range stays mapped as a free piece of the device's
// address arena (Note [The address arena], arena.cpp) and a small one's
// slot stays in its slab, each with the point of its last uses and of the
// free (Note [Lazy use events]; for a synchronous free, every stream's
// work queued before it: Note [A synchronous free], swap_allocator.cpp).
// The first use of a new buffer made from it waits for that point on its
// own stream, on the device; on the freeing stream it is in order already.
//
// Note [Pinned uses]: from prepare() to finish() a use's buffers are pinned,
// so that another thread cannot evict them between the prefetch and the
// launch that needs them. An allocation or prefetch that finds no room while
// other threads hold pins waits for a finish() (which needs no memory, so it
// always comes) and tries again; with no pins held elsewhere it fails with
// out-of-memory. A prepare that finds no room lets its own pins go before it
// waits (Note [Waiting for room], swap_allocator.cpp), so waiters never
// wait for each other.
//
// Lock order: Allocator::mu_ before the HostStash's own locks. The driver is
// called with mu_ held; the driver never calls back into cuswap (its calls go
// through the Driver table, never through the hooks).
#pragma once

#include <cuda.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "allocator/base_index.h"
#include "allocator/driver_calls.h"
#include "allocator/swap_observer.h"
#include "allocator/swap_stats.h"
#include "common/config.h"

namespace cuswap {

// allocator/driver.h; not included here, so that code built against cuda.h's
// ordinary (unversioned) names can use the allocator.
struct Driver;
class HostStash;
struct HostCopy;    // allocator/swap_internal.h
class EventRef;     // allocator/swap_internal.h
struct UsePoint;    // allocator/swap_internal.h
struct StreamUses;  // allocator/swap_internal.h
struct PagesAfter;  // allocator/swap_internal.h
struct Retiring;    // allocator/swap_internal.h
struct SmallPiece;  // allocator/swap_internal.h

// What the allocator needs to know, from CUSWAP_CONF.
struct AllocatorSettings {
  conf::PerDevice<uint64_t> budget_bytes;  // unset: the card's total memory
  uint64_t swap_min_bytes = uint64_t{1} << 20;
};

enum class Residency : uint8_t { resident, evicting, evicted, prefetching };

// The buffers one launch, copy or set touches, as the hooks found them.
struct UseBuffers {
  std::span<const uintptr_t> bases;  // buffer base addresses, no duplicates
  // The use may touch buffers cuswap cannot name (a graph launch, unreadable
  // parameters, too many buffers).
  bool unknown = false;
  // The buffers it names may lead it to others (an NCCL kernel).
  bool escapes = false;
};

class Allocator {
 public:
  Allocator(const Driver& driver, const AllocatorSettings& settings);
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  // Allocates `size_bytes` on the current context's device. Evicts cold
  // buffers when the budget would be exceeded. Whether the allocation is
  // stream-ordered matters at the free, which says where its uses end.
  [[nodiscard]] CUresult allocate(uint64_t size_bytes, CUdeviceptr* out) noexcept;
  // Whether `address` is the base of a buffer this allocator handed out.
  bool owns(uintptr_t base) noexcept;
  // Frees a buffer this allocator handed out (owns() was true).
  [[nodiscard]] CUresult free(uintptr_t base, CUstream stream, bool stream_ordered) noexcept;

  // Before a use on `stream`: makes every named buffer resident (prefetching
  // evicted ones) and makes `stream` wait for their copies. Addresses that
  // are not this allocator's are ignored. On failure nothing was launched and
  // the caller returns the error.
  [[nodiscard]] CUresult prepare(CUstream stream, const UseBuffers& use) noexcept;
  // After the driver call, whatever it returned, for every use prepare()
  // accepted: a queued use's completion becomes the named buffers' last use.
  // Between the two the buffers are pinned: nothing evicts them before the
  // use is queued (Note [Pinned uses]).
  void finish(CUstream stream, const UseBuffers& use, CUresult result) noexcept;

  // Planned moves (Note [Planned moves], allocator/planned_moves.cpp).
  // Starts copying the buffer at `base` out after its last use so far and
  // returns without waiting; CUDA_ERROR_NOT_READY when it cannot move now
  // (small, in use, escaped, not resident).
  [[nodiscard]] CUresult start_eviction(uintptr_t base) noexcept;
  // Starts bringing the evicted buffer at `base` back once `trigger` reaches
  // this point; its next use waits for the copy. `done` (may be null) is
  // recorded after the copy. CUDA_ERROR_NOT_READY: not evicted, or no room
  // without evicting something.
  [[nodiscard]] CUresult start_prefetch(uintptr_t base, CUstream trigger, CUevent done) noexcept;

  // A host buffer about to be copied to the device: in stash mode, words in
  // it that point into buffers mark those buffers escaped.
  void note_host_words(const void* host, uint64_t size_bytes) noexcept;

  // The budget's view of the device the current context is on.
  [[nodiscard]] CUresult mem_get_info(size_t* free_bytes, size_t* total_bytes) noexcept;
  [[nodiscard]] CUresult device_total_mem(CUdevice device, size_t* bytes) noexcept;

  // Memory pools (Note [Memory pools under a budget], allocator/pools.cpp):
  // what every pool of the current context's device answers, the reset of
  // its high-water marks (an attribute set to 0), and cuMemPoolTrimTo:
  // cached memory (freed ranges kept mapped, pooled pages) goes back to the
  // driver until at most `keep_bytes` are held or nothing cached is left.
  struct PoolFigures {
    uint64_t reserved_bytes = 0, reserved_high = 0, used_bytes = 0, used_high = 0;
  };
  [[nodiscard]] CUresult pool_figures(PoolFigures& out) noexcept;
  [[nodiscard]] CUresult reset_pool_high(bool reserved, bool used) noexcept;
  [[nodiscard]] CUresult trim(uint64_t keep_bytes) noexcept;
  // All that device `ordinal` caches goes back to the driver (an
  // application's own allocation found none); the bytes released.
  uint64_t release_cached(int ordinal) noexcept;

  // What does not agree with itself (Note [What always holds between
  // operations], allocator/invariants.cpp), a line each; empty when all
  // holds. The tests run it after every step.
  std::string check() noexcept;

  SwapStats stats() noexcept;
  Residency residency(uintptr_t base) noexcept;  // resident for addresses it does not own

  // Who hears of each eviction, prefetch and wait (nullptr: nobody). Set
  // before the first use; the observer outlives the allocator.
  void set_observer(SwapObserver* observer) noexcept;

  // The allocator's own types, defined in swap_internal.h.
  struct Device;
  struct Block;
  struct FreeRange;
  struct SharedEvent;
  class TakenPages;

 private:
  const Driver& driver_;
  SwapStats stats_;    // before calls_, which counts into it
  DriverCalls calls_;  // the calls that cost host time (Note [Counted driver calls])
  AllocatorSettings settings_;
  std::mutex mu_;
  std::condition_variable finished_;              // a finish() unpinned something
  uint64_t finishes_ = 0;                         // finish() calls, ever
  uint32_t waiting_ = 0;                          // threads waiting on finished_
  uint64_t active_uses_ = 0;                      // prepared and not yet finished
  std::vector<std::unique_ptr<Device>> devices_;  // by ordinal, created on first use
  std::map<uintptr_t, Block*> blocks_;            // live buffers by base, in address order
  BaseIndex<Block> by_base_;  // the same, for a use's lookups (Note [An index by base])
  uint64_t tick_ = 0;         // LRU clock: one per use
  uint64_t use_seq_ = 0;      // uses finished, ever (Note [Lazy use events])
  SwapObserver* observer_ = nullptr;

  // The caller's hold on mu_, handed down a path that may wait for room
  // with it released (Note [Waiting for room]); nullptr on a path that
  // must not wait (a prepare holding pins, a planned prefetch).
  using MayWait = std::unique_lock<std::mutex>*;

  // allocator/swap_allocator.cpp
  [[nodiscard]] CUresult current_device(int& ordinal) noexcept;
  [[nodiscard]] CUresult device(int ordinal, Device*& out) noexcept;
  [[nodiscard]] CUresult allocate_large(Device& dev, uint64_t size_bytes, MayWait may_wait,
                                        Block*& out) noexcept;
  [[nodiscard]] CUresult allocate_on_host(Device& dev, Block& block) noexcept;
  // allocator/small_pool.cpp (Note [The small pool])
  [[nodiscard]] CUresult allocate_small(Device& dev, uint64_t size_bytes, MayWait may_wait,
                                        Block*& out) noexcept;
  [[nodiscard]] CUresult add_slab(Device& dev, uint64_t bytes, MayWait may_wait) noexcept;
  // A free piece back to the small pool, joined with its free neighbours.
  void free_small(Device& dev, uintptr_t base, SmallPiece piece) noexcept;
  void absorb(Device& dev, SmallPiece& into, SmallPiece&& from) noexcept;
  void relist_small(Device& dev, std::pair<uint64_t, uintptr_t> was,
                    std::pair<uint64_t, uintptr_t> now) noexcept;
  void release_block(Block* block, CUstream stream, bool ordered) noexcept;
  void release_donor(Device& dev, Block& block, UsePoint after) noexcept;
  void prefetch_ahead(Device& dev) noexcept;
  void evict_ahead(Device& dev, Block* just) noexcept;
  void count_step(Device& dev, const Block& block) noexcept;
  // Pages an allocation could take without evicting: not yet created within
  // the budget, pooled, or in mapped free pieces.
  uint64_t room(const Device& dev) const noexcept;

  // allocator/device_pages.cpp
  [[nodiscard]] CUresult init_device(Device& dev, int ordinal) noexcept;
  // Cached memory back to the driver until `keep_bytes` are held (pools.cpp).
  [[nodiscard]] CUresult trim_device(Device& dev, uint64_t keep_bytes) noexcept;
  // `count` pages into `out`: pooled, new within the budget, reclaimed from
  // free ranges, donated by evictions in flight, else evicted for; a use of
  // them must first wait for `out.after()`. On failure `out` holds none.
  [[nodiscard]] CUresult take_pages(Device& dev, size_t count, TakenPages& out,
                                    std::span<Block* const> keep, MayWait may_wait,
                                    bool may_evict) noexcept;
  void give_pages(Device& dev, std::vector<CUmemGenericAllocationHandle>& pages) noexcept;

  // allocator/arena.cpp (Note [The address arena])
  // Places a large block (its range_bytes set) in the arena: base, pages,
  // and what its first use waits for.
  [[nodiscard]] CUresult place_large(Device& dev, Block& block, MayWait may_wait) noexcept;
  // Note [Placed as a step ago]: the step's length in large allocations
  // once known, counting this one (0 before); the range allocation
  // `earlier` took, if it is free and mapped now; where allocation `at`
  // went. Else best fit (place_anew).
  uint64_t learn_step(Device& dev, uint64_t bytes) noexcept;
  bool place_as_before(Device& dev, Block& block, uint64_t earlier) noexcept;
  bool take_mapped(Device& dev, FreeRange piece, uintptr_t base, Block& block) noexcept;
  void remember_place(Device& dev, uint64_t at, uint64_t bytes, uintptr_t base,
                      uint64_t period) noexcept;
  [[nodiscard]] CUresult place_anew(Device& dev, Block& block, MayWait may_wait) noexcept;
  [[nodiscard]] bool grow_beside(Device& dev, uint64_t bytes, FreeRange& head, FreeRange& space,
                                 bool& space_first) noexcept;
  // Unmapped address space of `bytes` from the arena.
  [[nodiscard]] CUresult claim_space(Device& dev, uint64_t bytes, FreeRange& out) noexcept;
  // A piece of the arena back to its free lists, joined with its neighbours.
  void free_piece(Device& dev, FreeRange piece) noexcept;
  void join(Device& dev, FreeRange& left, FreeRange&& right) noexcept;
  // Up to `count` pages of free ranges into `out` (room reserved); false
  // when there were none.
  bool reclaim_free(Device& dev, size_t count, std::vector<CUmemGenericAllocationHandle>& out,
                    PagesAfter* after) noexcept;
  // Address space to unmap once its uses are done; those done (or, with
  // `wait`, all) are unmapped now.
  void retire(Device& dev, Retiring piece) noexcept;
  void retire_done(Device& dev, bool wait) noexcept;
  void unmap_retired(Device& dev, Retiring& piece) noexcept;
  // Records an event on `stream` (Note [Shared events]); empty if it cannot.
  EventRef record_event(Device& dev, CUstream stream) noexcept;
  // One event for the two (Note [Joined events]).
  EventRef join_events(Device& dev, EventRef first, EventRef second) noexcept;
  void collect_host_releases(Device& dev, bool wait) noexcept;
  void cache_host_copy(Device& dev, const HostCopy& copy) noexcept;
  void give_host_copy_back(Device& dev, void* stash, uint64_t stash_bytes,
                           const HostCopy& host) noexcept;

  // allocator/use_points.cpp (Note [Lazy use events])
  // The stream's entry on `dev`, added on first sight; null when it cannot be.
  StreamUses* stream_uses(Device& dev, CUstream stream) noexcept;
  // An event on `uses.stream` after its uses numbered up to `seq`: the
  // earliest one kept (Note [Marks behind the host]), or one recorded now;
  // empty when none can be. `at` is the count it was recorded at.
  EventRef cover(Device& dev, StreamUses& uses, uint64_t seq, uint64_t* at = nullptr) noexcept;
  // Records a mark on `uses`' stream (Note [Marks behind the host]).
  void mark(Device& dev, StreamUses& uses) noexcept;
  // Makes `on` wait, on the device, for the work `point` names (none on
  // `on` itself, which is in order already).
  [[nodiscard]] CUresult order_after(Device& dev, const UsePoint& point, CUstream on) noexcept;
  // Whether that work is done: known already, or (`ask`) asked of the driver.
  bool point_done(Device& dev, const UsePoint& point, bool ask) noexcept;
  // Blocks the host until that work is done (a rare path, counted).
  void synchronize_point(Device& dev, const UsePoint& point) noexcept;

  // allocator/eviction.cpp
  // Victims are at most `largest` bytes.
  [[nodiscard]] CUresult evict_for(Device& dev, uint64_t bytes_needed, std::span<Block* const> keep,
                                   uint64_t largest = UINT64_MAX) noexcept;
  [[nodiscard]] CUresult evict(Device& dev, std::span<Block*> victims) noexcept;
  [[nodiscard]] CUresult queue_copy_out(Device& dev, Block& block) noexcept;
  void abandon_evictions(Device& dev, std::span<Block*> ready, size_t queued) noexcept;
  [[nodiscard]] CUresult prefetch(Block& block, CUstream stream, std::span<Block* const> keep,
                                  PrefetchReason reason, bool may_evict = true) noexcept;
  void prefetch_queued(Device& dev, Block& block, std::vector<CUmemGenericAllocationHandle> pages,
                       EventRef copied, PrefetchReason reason) noexcept;
  [[nodiscard]] CUresult take_host_copy(Device& dev, Block& block) noexcept;
  [[nodiscard]] CUresult host_exhausted(Device& dev, CUresult r) noexcept;
  void release_host_copy(Device& dev, Block& block) noexcept;
  bool release_host_copy_after(Device& dev, Block& block, const EventRef& after) noexcept;
  void lose_host_copy(Device& dev, Block& block) noexcept;
  bool map_host_copy(Device& dev, Block& block) noexcept;
  bool land_eviction(Device& dev, Block& block, EvictReason reason, uint64_t copied_ns) noexcept;
  void count_eviction(const Block& block, EvictReason reason) noexcept;

  // allocator/planned_moves.cpp
  bool land_evictions(Device& dev, bool wait_for_one) noexcept;
  bool donate_pages(Device& dev, size_t count, std::vector<CUmemGenericAllocationHandle>& out,
                    PagesAfter& after) noexcept;
  void give_donated(Device& dev, std::vector<CUmemGenericAllocationHandle>& pages,
                    PagesAfter& after) noexcept;
  void cancel_eviction(Device& dev, Block& block, CUstream stream) noexcept;
  // `block` out of the evictions in flight, if it is there.
  void leave_flight(Device& dev, Block& block) noexcept;
  [[nodiscard]] CUresult make_resident(CUstream stream, const UseBuffers& use,
                                       std::span<Block* const> keep) noexcept;
  void mark_escaped(Block& block) noexcept;
  bool can_wait_for_room(MayWait may_wait) const noexcept { return active_uses_ > 0 && may_wait; }
  bool wait_for_room(MayWait may_wait) noexcept;
  // See Note [Waiting for room]: false when no other use is in flight, or
  // when none finished for a long while; else waits for the next finish
  // with `lock` (mu_) released.
  bool wait_for_others(std::unique_lock<std::mutex>& lock) noexcept;
};

}  // namespace cuswap
