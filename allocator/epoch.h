// Epoch-based reclamation for data read without locks (the buffer table's
// runs): readers announce themselves in a guard, one writer at a time
// unlinks objects and retires them, and a retired object is freed only once
// no reader can still hold it.
//
// Invariants:
// - A reader calls Guard::enter() before loading any protected pointer, and
//   loads those pointers seq_cst. An object so loaded is not freed before
//   the guard ends. enter() and the guard's end are lock-free, allocate
//   nothing and make no system call (a thread's first enter() claims a
//   reader slot without allocating; Note [Reader slots] in epoch.cpp).
// - The writer unlinks an object with a seq_cst store (a pointer that was
//   null, which unlinks nothing, may be stored release) and then retires it.
//   retire(), reclaim_if_due() and reclaim() are writer-only: the caller
//   serialises them (the buffer table holds its mutex). The writer never
//   waits for readers; a reader that stays inside a guard only delays frees.
// - A retired object's RetireLink belongs to the domain until the object
//   is freed, so readers that may still hold the object must not read it.
//
// Note [Reclaiming by epoch]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A domain has an epoch (starting at 1) and one reader slot per registered
// thread (Note [Reader slots]). A guard's enter() stores the epoch it read
// into its thread's slot (seq_cst) before any protected load (seq_cst), and
// the guard's end stores 0 (release). The writer unlinks an object with a
// seq_cst store and retires it tagged with the epoch current at that
// moment. Every kRetireBatch retirements it tries to advance the epoch from
// E to E + 1, which it may only do if every slot reads 0 or E; it then frees
// the objects retired at E - 1 or earlier, i.e. after two advances.
//
// Why that is safe: a reader holding object p announced e before loading p,
// and both advances that free p came after p was unlinked. If either
// advance's check missed the announcement, the check preceded it in the
// seq_cst order, so the reader's load came after the unlink and could not
// return p. So both checks saw it, which needs e == R and e == R + 1 for p's
// retire epoch R: a contradiction. A reader that read a stale epoch only
// holds advances back. A check that sees the slot's later store (0 or a
// newer announcement) synchronises with it, which orders the reader's reads
// before the free.
//
// The announcement is one seq_cst store to the thread's own slot, on its own
// cache line: no reader writes a line another reader writes. A guard
// announces lazily, on its first enter(), so a reader that finds nothing to
// protect (the buffer table's empty slots) pays nothing.
//
// Note [Nested guards]
// ~~~~~~~~~~~~~~~~~~~~
// One thread may hold several entered guards of one domain at once: a
// BufferTable::Reader around a launch and a find() inside it, or two Readers
// of one table. They share the thread's slot, which counts them
// (ReaderSlot::depth, read and written by that thread only).
// The first to enter announces, and the slot is cleared when the last one
// ends, in whatever order they end. Every guard after the first is covered
// by the first one's announcement: a long announcement is a stale epoch,
// which the argument above allows. Threads without a slot count each guard
// in the shared counters, which nest by themselves.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cuswap {

// Where a retired object waits for its free: bytes inside the object that
// only the writer touches, never a reader that may still hold the object.
struct RetireLink {
  RetireLink* next = nullptr;
  uint64_t epoch = 0;
};

namespace epoch_detail {

inline constexpr int32_t kUnclaimed = -1;  // the thread has not entered yet
inline constexpr int32_t kNoIndex = -2;    // counts itself in the shared counters

// The calling thread's reader index in every domain, or one of the above
// (Note [Reader slots]). Initial-exec, so that reading it neither allocates
// nor calls, even in a shared library.
[[gnu::tls_model("initial-exec")]] extern constinit thread_local int32_t t_reader_index;

// The calling thread's first enter(): claims an index, or kNoIndex.
int32_t claim_reader_index() noexcept;

}  // namespace epoch_detail

class EpochDomain {
 public:
  // Threads beyond this many at once read through two shared counters.
  static constexpr uint32_t kMaxReaderThreads = 256;
  // Retirements between reclaim attempts in reclaim_if_due().
  static constexpr uint32_t kRetireBatch = 64;

  // Frees a retired object, given its link. Called by the writer (from
  // reclaim_if_due() or reclaim()) and by the destructor.
  using FreeFunction = void (*)(RetireLink* retired) noexcept;

  explicit EpochDomain(FreeFunction free_retired) noexcept;
  // Frees everything still retired: no guard of this domain may be left.
  ~EpochDomain();
  EpochDomain(const EpochDomain&) = delete;
  EpochDomain& operator=(const EpochDomain&) = delete;

  // A reader's protection, from its first enter() to its end. It lives on
  // one thread's stack: entered and destroyed on the thread that made it.
  // Guards nest (Note [Nested guards]).
  class Guard {
   public:
    // Announces nothing yet. A guard for a null domain must not be entered.
    explicit Guard(EpochDomain* domain) noexcept : domain_(domain) {}
    ~Guard() {
      if (entered_) domain_->exit(*this);
    }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

    // Before the first protected load; later calls cost a branch.
    void enter() noexcept {
      if (entered_) return;
      entered_ = true;
      domain_->enter(*this);
    }
    bool entered() const noexcept { return entered_; }

   private:
    friend class EpochDomain;

    EpochDomain* domain_;
    bool entered_ = false;
    int32_t index_ = epoch_detail::kNoIndex;  // the thread's slot, if >= 0
    uint32_t parity_ = 0;                     // otherwise its shared counter
  };

  // Writer only, after the object's last unlinking store.
  void retire(RetireLink* retired) noexcept;

  // Writer only, after each change: every kRetireBatch retirements, reclaim().
  void reclaim_if_due() noexcept {
    if (retired_since_attempt_ < kRetireBatch) return;
    reclaim();
  }

  // Writer only: tries two advances and frees what they allow. With no
  // guard entered anywhere, that is everything retired so far.
  void reclaim() noexcept;

 private:
  // Two lines: Intel's adjacent-line prefetcher makes neighbours share.
  static constexpr size_t kFalseSharingBytes = 128;

  struct alignas(kFalseSharingBytes) ReaderSlot {
    std::atomic<uint64_t> epoch{0};  // 0: the thread has no guard entered here
    uint32_t depth = 0;              // its entered guards; only that thread's
  };

  void enter(Guard& guard) noexcept;
  void exit(const Guard& guard) noexcept;
  bool try_advance() noexcept;
  void free_retired_before(uint64_t epoch) noexcept;

  alignas(kFalseSharingBytes) std::atomic<uint64_t> epoch_{1};
  alignas(kFalseSharingBytes) std::atomic<uint64_t> shared_readers_[2]{};
  ReaderSlot slots_[kMaxReaderThreads];
  // Writer-only.
  alignas(kFalseSharingBytes) RetireLink* retired_head_ = nullptr;
  RetireLink* retired_tail_ = nullptr;
  uint32_t retired_since_attempt_ = 0;
  FreeFunction free_function_;
};

// Inline: this is the launch path's cost (Note [Reclaiming by epoch]).
inline void EpochDomain::enter(Guard& guard) noexcept {
  int32_t index = epoch_detail::t_reader_index;
  if (index == epoch_detail::kUnclaimed) [[unlikely]] {
    index = epoch_detail::claim_reader_index();
  }
  guard.index_ = index;
  if (index >= 0) [[likely]] {
    ReaderSlot& slot = slots_[index];
    if (slot.depth++ == 0) {
      slot.epoch.store(epoch_.load(std::memory_order_acquire), std::memory_order_seq_cst);
    }
  } else {
    guard.parity_ = static_cast<uint32_t>(epoch_.load(std::memory_order_acquire) & 1);
    shared_readers_[guard.parity_].fetch_add(1, std::memory_order_seq_cst);
  }
}

inline void EpochDomain::exit(const Guard& guard) noexcept {
  if (guard.index_ >= 0) {
    ReaderSlot& slot = slots_[guard.index_];
    if (--slot.depth == 0) slot.epoch.store(0, std::memory_order_release);
  } else {
    shared_readers_[guard.parity_].fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace cuswap
