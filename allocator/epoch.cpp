// Epoch-based reclamation (allocator/epoch.h): the process-wide registry of
// reader indices, and a domain's writer side, advancing and freeing.
//
// Note [Reader slots]
// ~~~~~~~~~~~~~~~~~~~
// A thread's first enter() claims an index in a process-wide registry (a
// CAS over a fixed array; no allocation) and remembers it in an
// initial-exec thread_local, which needs no allocation even in a shared
// library. Each domain has a slot per index. A pthread key destructor gives
// the index back when the thread exits. glibc keeps the first 32 keys inline
// in the thread descriptor and allocates for later ones, so the key is made
// when the library loads, and if it still comes out above 31 nobody claims
// indices. A thread without an index (the key is unusable, all
// kMaxReaderThreads are taken, or its destructor already ran) counts itself
// in one of two shared counters chosen by the epoch's parity instead; an
// advance from E needs the counter of the other parity at zero. The argument
// of Note [Reclaiming by epoch] holds with parity in place of the epoch.
// After fork() the child keeps the indices of threads it does not have; they
// only cost slots.
#include "allocator/epoch.h"

#include <pthread.h>

#include <new>

namespace cuswap {

namespace epoch_detail {
constinit thread_local int32_t t_reader_index = kUnclaimed;
}  // namespace epoch_detail

namespace {

using epoch_detail::kNoIndex;
using epoch_detail::t_reader_index;

constexpr uint32_t kMaxReaderThreads = EpochDomain::kMaxReaderThreads;

// Process-wide, never destroyed, so that threads still running during
// static destruction keep working.
class ReaderRegistry {
 public:
  ReaderRegistry() noexcept {
#if defined(__GLIBC__)
    constexpr pthread_key_t kInlineKeys = 32;  // glibc's PTHREAD_KEY_2NDLEVEL_SIZE
#else
    constexpr pthread_key_t kInlineKeys = ~pthread_key_t{0};
#endif
    usable_ = pthread_key_create(&key_, &on_thread_exit) == 0 && key_ < kInlineKeys;
  }

  // The calling thread's new index, or kNoIndex. Runs once per thread.
  int32_t claim() noexcept {
    if (!usable_) return kNoIndex;
    for (uint32_t index = 0; index < kMaxReaderThreads; ++index) {
      bool expected = false;
      if (claimed_[index].load(std::memory_order_relaxed) ||
          !claimed_[index].compare_exchange_strong(expected, true, std::memory_order_acquire)) {
        continue;
      }
      // Raised before the thread's first announcement, which a writer that
      // misses the raise can therefore ignore (the argument of Note
      // [Reclaiming by epoch], with the high-water mark as the flag).
      uint32_t high = high_water_.load(std::memory_order_relaxed);
      while (high < index + 1 && !high_water_.compare_exchange_weak(high, index + 1)) {
      }
      if (pthread_setspecific(key_, reinterpret_cast<void*>(uintptr_t{index} + 1)) != 0) {
        claimed_[index].store(false, std::memory_order_release);
        return kNoIndex;
      }
      return static_cast<int32_t>(index);
    }
    return kNoIndex;
  }

  // Indices below this may be claimed; slots above it are all idle.
  uint32_t high_water() const noexcept {
    return high_water_.load();
  }

 private:
  static void on_thread_exit(void* value) noexcept;

  std::atomic<bool> claimed_[kMaxReaderThreads]{};
  std::atomic<uint32_t> high_water_{0};
  pthread_key_t key_{};
  bool usable_ = false;
};

ReaderRegistry& registry() noexcept {
  alignas(ReaderRegistry) static unsigned char storage[sizeof(ReaderRegistry)];
  static ReaderRegistry* const instance = new (storage) ReaderRegistry();
  return *instance;
}

void ReaderRegistry::on_thread_exit(void* value) noexcept {
  // A guard entered from a later key destructor must not use the slot that
  // another thread may claim from now on. Its own guards have all ended:
  // they live on its stack.
  t_reader_index = kNoIndex;
  const uintptr_t index = reinterpret_cast<uintptr_t>(value) - 1;
  registry().claimed_[index].store(false, std::memory_order_release);
}

// Make the key while the library loads, when few keys exist (glibc inlines
// only 32 per thread; Note [Reader slots]).
[[maybe_unused]] const bool g_registry_at_load = (registry(), true);

}  // namespace

int32_t epoch_detail::claim_reader_index() noexcept {
  t_reader_index = registry().claim();
  return t_reader_index;
}

EpochDomain::EpochDomain(FreeFunction free_retired) noexcept : free_function_(free_retired) {
  registry();
}

// No guard is left, so nothing retired can still be held.
EpochDomain::~EpochDomain() {
  free_retired_before(~uint64_t{0});
}

void EpochDomain::retire(RetireLink* retired) noexcept {
  retired->next = nullptr;
  retired->epoch = epoch_.load(std::memory_order_relaxed);
  (retired_tail_ == nullptr ? retired_head_ : retired_tail_->next) = retired;
  retired_tail_ = retired;
  ++retired_since_attempt_;
}

// Two advances in a row free everything retired so far when no guard is
// entered.
void EpochDomain::reclaim() noexcept {
  retired_since_attempt_ = 0;
  for (int advances = 0; advances < 2 && try_advance(); ++advances) {
  }
  free_retired_before(epoch_.load(std::memory_order_relaxed));
}

bool EpochDomain::try_advance() noexcept {
  const uint64_t epoch = epoch_.load(std::memory_order_relaxed);
  const uint32_t readers = registry().high_water();
  for (uint32_t index = 0; index < readers; ++index) {
    const uint64_t announced = slots_[index].epoch.load(std::memory_order_seq_cst);
    if (announced != 0 && announced != epoch) return false;
  }
  if (shared_readers_[(epoch + 1) & 1].load(std::memory_order_seq_cst) != 0) return false;
  epoch_.store(epoch + 1, std::memory_order_seq_cst);
  return true;
}

// Frees what was retired two or more advances before `epoch`; retire epochs
// never decrease along the list.
void EpochDomain::free_retired_before(uint64_t epoch) noexcept {
  while (retired_head_ != nullptr && retired_head_->epoch + 2 <= epoch) {
    RetireLink* next = retired_head_->next;
    free_function_(retired_head_);
    retired_head_ = next;
  }
  if (retired_head_ == nullptr) retired_tail_ = nullptr;
}

}  // namespace cuswap
