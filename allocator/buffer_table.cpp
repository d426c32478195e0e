// The buffer table (allocator/buffer_table.h): two radix tiers of immutable
// runs, read without locks, written under one mutex, and reclaimed by epochs
// (allocator/epoch.h).
//
// Invariants, beyond the header's:
// - A granule slot is null or points to a published run: one or more
//   BufferRefs, sorted by base and disjoint, each overlapping that granule.
//   A published run is never written again; it is replaced, copy-on-write.
// - A run taken out of a slot is retired to the table's EpochDomain, which
//   frees it once no reader can still hold it (Note [Reclaiming by epoch]).
//   Radix nodes live as long as the table.
// - Only the writer, holding `mutex`, stores to slots and radix nodes and
//   retires runs. Leaf::occupied and a run's RetireLink are writer-only;
//   readers never read them.
// - Every live buffer lies below kAddressLimit, so an address at or above it
//   is in no buffer.
//
// Note [Buffer table tiers]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// A buffer under 2 MiB lives in the fine tier, whose granules are 64 KiB; a
// larger one in the coarse tier, whose granules are 2 MiB. Each tier is a
// three-level radix tree over granule numbers (root inline, middle nodes and
// leaves allocated on first use and never freed) whose leaf slots point to a
// run: the buffers of that tier overlapping the granule. find() reads the
// fine slot and then the coarse one, searches each run for the last buffer
// starting at or below the address, and checks that it reaches the address.
//
// Why two tiers: allocators pack small buffers densely (512 B - 64 KiB, up to
// 128 of them in a 64 KiB granule), so fine granules keep runs short and
// their copy-on-write cheap; a buffer of tens of GiB spans thousands of
// granules, so coarse granules keep its insert and erase at one store per
// 2 MiB. A coarse granule overlaps at most two buffers of 2 MiB or more.
//
// A granule a buffer covers completely can hold no other buffer, so all of
// a buffer's fully covered granules share one single-entry run; only the
// partly covered first and last granules get a merged copy. Inserting or
// erasing therefore allocates at most three runs, whatever the size, and
// costs one slot store per granule. Whether a single-entry run is shared is
// a matter of geometry (its entry covers the granule), which is how erase
// and the destructor retire or free a shared run exactly once.
//
// Addresses of 2^48 and up are refused by insert() and found in nothing:
// user space is below 2^47 on x86-64 and below 2^48 on aarch64 (52- and
// 57-bit layouts hand out higher addresses only to mmap calls asking for
// them). Covering more would cost find() a radix level or a larger root.
//
// Note [Reading the table]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A lookup enters its epoch guard only once a slot on its path holds a run:
// radix nodes are never freed, so reaching a slot needs no protection, and
// most words of kernel parameters are not pointers at all. It then loads the
// slot again, seq_cst, and searches the run it got
// (Note [Reclaiming by epoch]). find() pays the guard's announcement, one
// seq_cst store, per call that gets that far.
//
// Note [Batched lookups]
// ~~~~~~~~~~~~~~~~~~~~~~
// The launch path looks up every 8-byte word of every kernel parameter, 4 to
// 40 a launch, and several of them hit. A BufferTable::Reader keeps one guard
// for all of them: the first lookup that reaches a run announces, and the
// rest of the launch's lookups reuse the announcement. Holding it for the
// whole scope is safe however long (a stale epoch only holds advances back),
// but delays frees, which is why a Reader is meant to span one launch.
// Guards nest (Note [Nested guards]), so a find() or another Reader inside a
// Reader, and insert() or erase() on the same thread, need nothing special:
// the writer never waits for readers, so a writer with its own guard
// entered cannot wait for itself.
#include "allocator/buffer_table.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <new>
#include <type_traits>
#include <utility>

#include "allocator/epoch.h"

namespace cuswap {
namespace {

constexpr unsigned kAddressBits = 48;
constexpr uintptr_t kAddressLimit = uintptr_t{1} << kAddressBits;
constexpr unsigned kFineGranuleShift = 16;    // 64 KiB
constexpr unsigned kCoarseGranuleShift = 21;  // 2 MiB
constexpr uint64_t kLargeBufferBytes = uint64_t{1} << kCoarseGranuleShift;

// ---------------------------------------------------------------------------
// Runs: immutable sorted arrays of BufferRefs.

// Runs stay short (Note [Buffer table tiers]); up to this many are scanned.
constexpr uint32_t kLinearSearchEntries = 16;

struct alignas(uint64_t) Run {
  // Writer-only, and first, so that the domain's link converts back to its
  // run. Readers still searching a retired run read only what follows.
  RetireLink retire_link;
  uint32_t count;  // >= 1
  // Followed by uintptr_t bases[count], a dense copy of the bases to search,
  // then BufferRef refs[count] sorted by base.

  static size_t bytes(uint32_t count) {
    return sizeof(Run) + size_t{count} * (sizeof(uintptr_t) + sizeof(BufferRef));
  }
  const uintptr_t* bases() const { return reinterpret_cast<const uintptr_t*>(this + 1); }
  uintptr_t* bases() { return reinterpret_cast<uintptr_t*>(this + 1); }
  const BufferRef* begin() const { return reinterpret_cast<const BufferRef*>(bases() + count); }
  BufferRef* begin() { return reinterpret_cast<BufferRef*>(bases() + count); }
  const BufferRef* end() const { return begin() + count; }
  BufferRef* end() { return begin() + count; }

  // Entries are sorted and disjoint, so only the last one starting at or
  // below `address` can contain it. A short run is scanned: its loads are
  // independent and overlap their cache misses, where halving waits for each.
  const BufferRef* find(uintptr_t address) const noexcept {
    const uintptr_t* base = bases();
    uint32_t index = 0;
    if (count <= kLinearSearchEntries) {
      for (uint32_t i = 1; i < count; ++i) {
        index += base[i] <= address ? 1 : 0;
      }
    } else {
      const uintptr_t* first = base;
      for (uint32_t length = count; length > 1;) {
        const uint32_t half = length / 2;
        if (first[half] <= address) first += half;
        length -= half;
      }
      index = static_cast<uint32_t>(first - base);
    }
    const BufferRef& ref = begin()[index];
    return ref.contains(address) ? &ref : nullptr;
  }

  // Disjoint sorted entries end in order too, so the last one starting
  // before `end_address` is the only candidate.
  const BufferRef* overlapping(uintptr_t base, uintptr_t end_address) const noexcept {
    const uintptr_t* after = std::lower_bound(bases(), bases() + count, end_address);
    if (after == bases()) return nullptr;
    const BufferRef& candidate = begin()[after - bases() - 1];
    return candidate.base + candidate.size_bytes > base ? &candidate : nullptr;
  }
};
static_assert(sizeof(Run) % alignof(uintptr_t) == 0, "bases follow the header aligned");
static_assert(std::is_standard_layout_v<Run> && offsetof(Run, retire_link) == 0,
              "a run's address is its link's");

Run* allocate_run(uint32_t count) noexcept {
  void* memory = std::malloc(Run::bytes(count));
  if (memory == nullptr) return nullptr;
  return new (memory) Run{RetireLink{}, count};
}

void free_run(Run* run) noexcept {
  std::free(run);
}

// The table's EpochDomain::FreeFunction.
void free_retired_run(RetireLink* retired) noexcept {
  free_run(reinterpret_cast<Run*>(retired));
}

// Fills in the bases once the entries are in place.
Run* with_bases(Run* run) noexcept {
  std::transform(run->begin(), run->end(), run->bases(),
                 [](const BufferRef& ref) { return ref.base; });
  return run;
}

// `old` (may be null) with `added` merged in; null if out of memory.
Run* run_with(const Run* old, const BufferRef& added) noexcept {
  const uint32_t old_count = old == nullptr ? 0 : old->count;
  Run* run = allocate_run(old_count + 1);
  if (run == nullptr) return nullptr;
  BufferRef* out = run->begin();
  if (old != nullptr) {
    const BufferRef* split = std::partition_point(
        old->begin(), old->end(), [&](const BufferRef& ref) { return ref.base < added.base; });
    out = std::uninitialized_copy(old->begin(), split, out);
    new (out++) BufferRef(added);
    std::uninitialized_copy(split, old->end(), out);
  } else {
    new (out) BufferRef(added);
  }
  return with_bases(run);
}

// `old` (two or more entries) without the entry at `base`; null if out of
// memory.
Run* run_without(const Run* old, uintptr_t base) noexcept {
  Run* run = allocate_run(old->count - 1);
  if (run == nullptr) return nullptr;
  std::remove_copy_if(old->begin(), old->end(), run->begin(),
                      [&](const BufferRef& ref) { return ref.base == base; });
  return with_bases(run);
}

// ---------------------------------------------------------------------------
// One tier (Note [Buffer table tiers]).

using Slot = std::atomic<Run*>;

template <unsigned kGranuleShift, unsigned kRootBits, unsigned kMidBits, unsigned kLeafBits>
class RadixTier {
  static_assert(kGranuleShift + kRootBits + kMidBits + kLeafBits == kAddressBits);
  static constexpr uint64_t kLeafSlots = uint64_t{1} << kLeafBits;
  static constexpr uint64_t kMidSlots = uint64_t{1} << kMidBits;
  static constexpr uint64_t kRootSlots = uint64_t{1} << kRootBits;

  struct Leaf {
    Slot slots[kLeafSlots]{};
    uint32_t occupied = 0;  // non-null slots; writer-only
  };
  struct Mid {
    std::atomic<Leaf*> leaves[kMidSlots]{};
  };

 public:
  RadixTier() = default;
  RadixTier(const RadixTier&) = delete;
  RadixTier& operator=(const RadixTier&) = delete;

  ~RadixTier() {
    for (uint64_t root_index = 0; root_index < kRootSlots; ++root_index) {
      Mid* mid = root_[root_index].load(std::memory_order_relaxed);
      if (mid == nullptr) continue;
      for (uint64_t mid_index = 0; mid_index < kMidSlots; ++mid_index) {
        Leaf* leaf = mid->leaves[mid_index].load(std::memory_order_relaxed);
        if (leaf == nullptr) continue;
        const uint64_t first_granule = ((root_index << kMidBits) | mid_index) << kLeafBits;
        for (uint64_t i = 0; i < kLeafSlots; ++i) {
          Run* run = leaf->slots[i].load(std::memory_order_relaxed);
          if (run != nullptr && !is_shared_elsewhere(run, first_granule + i)) free_run(run);
        }
        delete leaf;
      }
      delete mid;
    }
  }

  // The slot of the granule holding `address` (< kAddressLimit), or null if
  // its leaf was never made. Safe without protection: nodes are never freed.
  const Slot* slot_for(uintptr_t address) const noexcept {
    const Leaf* leaf = find_leaf(address >> kGranuleShift);
    return leaf == nullptr ? nullptr : &leaf->slots[(address >> kGranuleShift) % kLeafSlots];
  }

  // Writer only: the live buffer of this tier containing `address`.
  const BufferRef* find_locked(uintptr_t address) const noexcept {
    const Slot* slot = slot_for(address);
    const Run* run = slot == nullptr ? nullptr : slot->load(std::memory_order_relaxed);
    return run == nullptr ? nullptr : run->find(address);
  }

  // Writer only: a buffer of this tier overlapping [base, end_address), if
  // any. Leaves with nothing in them are skipped whole, which keeps the check
  // for a buffer of many GiB against the fine tier short.
  const BufferRef* overlapping(uintptr_t base, uintptr_t end_address) const noexcept {
    const uint64_t last = (end_address - 1) >> kGranuleShift;
    for (uint64_t granule = base >> kGranuleShift; granule <= last;) {
      const uint64_t leaf_last = std::min(last, granule | (kLeafSlots - 1));
      const Leaf* leaf = find_leaf(granule);
      if (leaf != nullptr && leaf->occupied != 0) {
        for (; granule <= leaf_last; ++granule) {
          const Run* run = leaf->slots[granule % kLeafSlots].load(std::memory_order_relaxed);
          if (run == nullptr) continue;
          if (const BufferRef* hit = run->overlapping(base, end_address)) return hit;
        }
      }
      granule = leaf_last + 1;
    }
    return nullptr;
  }

  // Writer only. Everything that can fail happens before the first slot
  // store, so a failed insert changes nothing a reader can see.
  [[nodiscard]] bool insert(const BufferRef& buffer, EpochDomain& epochs) noexcept {
    const Span span = span_of(buffer);
    for (uint64_t granule = span.first; granule <= span.last;
         granule = (granule | (kLeafSlots - 1)) + 1) {
      if (leaf_or_create(granule) == nullptr) return false;
    }
    Run* head = span.head_partial ? run_with(load_locked(span.first), buffer) : nullptr;
    Run* tail = span.tail_partial ? run_with(load_locked(span.last), buffer) : nullptr;
    Run* shared = span.any_covered() ? run_with(nullptr, buffer) : nullptr;
    if ((span.head_partial && head == nullptr) || (span.tail_partial && tail == nullptr) ||
        (span.any_covered() && shared == nullptr)) {
      free_run(head);
      free_run(tail);
      free_run(shared);
      return false;
    }
    for (uint64_t granule = span.first; granule <= span.last; ++granule) {
      Leaf* leaf = find_leaf(granule);
      Slot& slot = leaf->slots[granule % kLeafSlots];
      Run* fresh = shared;
      if (granule == span.first && span.head_partial) fresh = head;
      if (granule == span.last && span.tail_partial) fresh = tail;
      Run* old = slot.load(std::memory_order_relaxed);
      if (old == nullptr) {
        slot.store(fresh, std::memory_order_release);  // publishes, unlinks nothing
        ++leaf->occupied;
      } else {
        slot.store(fresh, std::memory_order_seq_cst);
        epochs.retire(&old->retire_link);
      }
    }
    return true;
  }

  // Writer only; `buffer` is a live buffer of this tier. Fails (changing
  // nothing) only when out of memory for a partial granule's new run.
  [[nodiscard]] bool erase(const BufferRef& buffer, EpochDomain& epochs) noexcept {
    const Span span = span_of(buffer);
    Run* head = nullptr;
    Run* tail = nullptr;
    if (!without(span.head_partial, span.first, buffer.base, &head) ||
        !without(span.tail_partial, span.last, buffer.base, &tail)) {
      free_run(head);
      return false;
    }
    Run* shared = nullptr;
    for (uint64_t granule = span.first; granule <= span.last; ++granule) {
      Leaf* leaf = find_leaf(granule);
      Slot& slot = leaf->slots[granule % kLeafSlots];
      Run* fresh = nullptr;
      if (granule == span.first && span.head_partial) fresh = head;
      if (granule == span.last && span.tail_partial) fresh = tail;
      Run* old = slot.load(std::memory_order_relaxed);
      slot.store(fresh, std::memory_order_seq_cst);
      if (fresh == nullptr) --leaf->occupied;
      if (span.covers(granule)) {
        shared = old;  // the same run in every covered granule
      } else {
        epochs.retire(&old->retire_link);
      }
    }
    if (shared != nullptr) epochs.retire(&shared->retire_link);
    return true;
  }

 private:
  // The granules a buffer overlaps, and which of its end granules it covers
  // only in part (those hold a merged run; the others share one).
  struct Span {
    uint64_t first, last;
    uintptr_t base, end_address;
    bool head_partial, tail_partial;

    bool covers(uint64_t granule) const {
      return (granule << kGranuleShift) >= base && ((granule + 1) << kGranuleShift) <= end_address;
    }
    bool any_covered() const {
      return last - first + 1 > uint64_t{head_partial} + uint64_t{tail_partial};
    }
  };

  static Span span_of(const BufferRef& buffer) {
    Span span{};
    span.base = buffer.base;
    span.end_address = buffer.base + buffer.size_bytes;
    span.first = span.base >> kGranuleShift;
    span.last = (span.end_address - 1) >> kGranuleShift;
    span.head_partial = !span.covers(span.first);
    span.tail_partial = span.last != span.first && !span.covers(span.last);
    return span;
  }

  // A single-entry run in a granule its entry covers is that buffer's
  // shared run, visited again up to its last covered granule, which frees it.
  static bool is_shared_elsewhere(const Run* run, uint64_t granule) {
    if (run->count != 1) return false;
    const Span span = span_of(*run->begin());
    if (!span.covers(granule)) return false;
    const uint64_t last_covered = span.tail_partial ? span.last - 1 : span.last;
    return granule != last_covered;
  }

  // The partial granule's run without `base` into *out (null if it was the
  // only entry). False if out of memory.
  bool without(bool partial, uint64_t granule, uintptr_t base, Run** out) const noexcept {
    if (!partial) return true;
    const Run* old = load_locked(granule);
    if (old->count == 1) return true;
    *out = run_without(old, base);
    return *out != nullptr;
  }

  const Leaf* find_leaf(uint64_t granule) const noexcept {
    const Mid* mid = root_[granule >> (kMidBits + kLeafBits)].load(std::memory_order_acquire);
    if (mid == nullptr) return nullptr;
    return mid->leaves[(granule >> kLeafBits) % kMidSlots].load(std::memory_order_acquire);
  }
  Leaf* find_leaf(uint64_t granule) noexcept {
    return const_cast<Leaf*>(std::as_const(*this).find_leaf(granule));
  }

  Run* load_locked(uint64_t granule) const noexcept {
    return find_leaf(granule)->slots[granule % kLeafSlots].load(std::memory_order_relaxed);
  }

  Leaf* leaf_or_create(uint64_t granule) noexcept {
    std::atomic<Mid*>& mid_slot = root_[granule >> (kMidBits + kLeafBits)];
    Mid* mid = mid_slot.load(std::memory_order_relaxed);
    if (mid == nullptr) {
      mid = new (std::nothrow) Mid();
      if (mid == nullptr) return nullptr;
      mid_slot.store(mid, std::memory_order_release);
    }
    std::atomic<Leaf*>& leaf_slot = mid->leaves[(granule >> kLeafBits) % kMidSlots];
    Leaf* leaf = leaf_slot.load(std::memory_order_relaxed);
    if (leaf == nullptr) {
      leaf = new (std::nothrow) Leaf();
      if (leaf == nullptr) return nullptr;
      leaf_slot.store(leaf, std::memory_order_release);
    }
    return leaf;
  }

  std::atomic<Mid*> root_[kRootSlots]{};
};

// Fine: 2^32 granules of 64 KiB; 32 KiB root, 16 KiB middle nodes, 4 KiB
// leaves (32 MiB each). Coarse: 2^27 granules of 2 MiB; 4 KiB nodes, leaves
// of 1 GiB.
using FineTier = RadixTier<kFineGranuleShift, 12, 11, 9>;
using CoarseTier = RadixTier<kCoarseGranuleShift, 9, 9, 9>;

bool is_large(const BufferRef& buffer) {
  return buffer.size_bytes >= kLargeBufferBytes;
}

// A slot seen empty before the guard is entered was empty at that moment,
// which is an answer; a non-empty one is loaded again inside the guard
// (Note [Reading the table]).
const BufferRef* search(const Slot* slot, uintptr_t address, EpochDomain::Guard& guard) noexcept {
  if (slot == nullptr || slot->load(std::memory_order_relaxed) == nullptr) return nullptr;
  guard.enter();
  const Run* run = slot->load(std::memory_order_seq_cst);
  return run == nullptr ? nullptr : run->find(address);
}

}  // namespace

struct BufferTable::Impl {
  EpochDomain epochs{&free_retired_run};
  FineTier fine;
  CoarseTier coarse;
  std::mutex mutex;  // writers; readers never take it
  std::atomic<size_t> live_buffers{0};

  // The live buffer containing `address` (< kAddressLimit), copied out
  // before `guard` ends.
  std::optional<BufferRef> find(uintptr_t address, EpochDomain::Guard& guard) const noexcept {
    if (const BufferRef* hit = search(fine.slot_for(address), address, guard)) return *hit;
    if (const BufferRef* hit = search(coarse.slot_for(address), address, guard)) return *hit;
    return std::nullopt;
  }
};

// Out of memory here leaves impl_ null: a table that refuses every insert,
// rather than an exception through the shim.
BufferTable::BufferTable() : impl_(new (std::nothrow) Impl()) {}

BufferTable::~BufferTable() = default;

bool BufferTable::insert(const BufferRef& buffer) {
  if (impl_ == nullptr || buffer.id == 0 || buffer.size_bytes == 0) return false;
  if (buffer.base >= kAddressLimit || buffer.size_bytes > kAddressLimit - buffer.base) {
    return false;  // outside the index (Note [Buffer table tiers])
  }
  Impl& table = *impl_;
  const uintptr_t end_address = buffer.base + buffer.size_bytes;
  const std::lock_guard lock(table.mutex);
  if (table.fine.overlapping(buffer.base, end_address) ||
      table.coarse.overlapping(buffer.base, end_address)) {
    return false;
  }
  const bool inserted = is_large(buffer) ? table.coarse.insert(buffer, table.epochs)
                                         : table.fine.insert(buffer, table.epochs);
  if (!inserted) return false;
  table.live_buffers.store(table.live_buffers.load(std::memory_order_relaxed) + 1,
                           std::memory_order_relaxed);
  table.epochs.reclaim_if_due();
  return true;
}

std::optional<BufferRef> BufferTable::erase(uintptr_t base) {
  if (impl_ == nullptr || base >= kAddressLimit) return std::nullopt;
  Impl& table = *impl_;
  const std::lock_guard lock(table.mutex);
  // Buffers are disjoint, so at most one tier has one containing `base`.
  const BufferRef* found = table.fine.find_locked(base);
  if (found == nullptr) found = table.coarse.find_locked(base);
  if (found == nullptr || found->base != base) return std::nullopt;
  const BufferRef buffer = *found;  // its run is about to be retired
  const bool erased = is_large(buffer) ? table.coarse.erase(buffer, table.epochs)
                                       : table.fine.erase(buffer, table.epochs);
  if (!erased) return std::nullopt;
  table.live_buffers.store(table.live_buffers.load(std::memory_order_relaxed) - 1,
                           std::memory_order_relaxed);
  table.epochs.reclaim_if_due();
  return buffer;
}

size_t BufferTable::erase_overlapping(uintptr_t base, uint64_t size_bytes) {
  if (impl_ == nullptr || size_bytes == 0 || base >= kAddressLimit) return 0;
  Impl& table = *impl_;
  const uintptr_t end_address =
      size_bytes > kAddressLimit - base ? kAddressLimit : base + size_bytes;
  const std::lock_guard lock(table.mutex);
  size_t erased = 0;
  for (;;) {
    const BufferRef* hit = table.fine.overlapping(base, end_address);
    if (hit == nullptr) hit = table.coarse.overlapping(base, end_address);
    if (hit == nullptr) break;
    const BufferRef buffer = *hit;  // its run is about to be retired
    const bool done = is_large(buffer) ? table.coarse.erase(buffer, table.epochs)
                                       : table.fine.erase(buffer, table.epochs);
    if (!done) break;  // out of memory for a replacement run: the rest stays
    table.live_buffers.store(table.live_buffers.load(std::memory_order_relaxed) - 1,
                             std::memory_order_relaxed);
    ++erased;
  }
  table.epochs.reclaim_if_due();
  return erased;
}

std::optional<BufferRef> BufferTable::find(uintptr_t address) const noexcept {
  if (address >= kAddressLimit || impl_ == nullptr) return std::nullopt;
  EpochDomain::Guard guard(&impl_->epochs);
  return impl_->find(address, guard);
}

size_t BufferTable::size() const noexcept {
  return impl_ == nullptr ? 0 : impl_->live_buffers.load(std::memory_order_relaxed);
}

BufferTable::Reader::Reader(const BufferTable& table) noexcept
    : impl_(table.impl_.get()), guard_(impl_ == nullptr ? nullptr : &impl_->epochs) {}

BufferTable::Reader::~Reader() = default;

std::optional<BufferRef> BufferTable::Reader::find(uintptr_t address) const noexcept {
  if (address >= kAddressLimit || impl_ == nullptr) return std::nullopt;
  return impl_->find(address, guard_);
}

}  // namespace cuswap
