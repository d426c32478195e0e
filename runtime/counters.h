// Per-hook call counters, kept per thread so that counting a call is a plain
// increment of a line only that thread writes, not a locked instruction on
// a line every thread fights over.
//
// A thread takes a block on its first counted call and gives it back when it
// exits; a later thread reuses it and goes on adding, so the sum over all
// blocks is the process's total. Blocks are never freed. (One instance per
// process: the thread's block pointer is a single thread-local.)
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cuswap::hooks {

class CallCounters {
 public:
  static constexpr size_t kMaxCounters = 128;

  void count(size_t index) noexcept {
    Block* block = tl_block_ ? tl_block_ : claim();
    auto& slot = block->calls[index];
    if (block == &shared_)
      slot.fetch_add(1, std::memory_order_relaxed);
    else  // only this thread writes the slot
      slot.store(slot.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  uint64_t total(size_t index) const noexcept;

 private:
  struct alignas(64) Block {
    std::atomic<uint64_t> calls[kMaxCounters] = {};
    std::atomic<bool> in_use{false};
    Block* next = nullptr;
  };
  struct Owner;

  Block* claim() noexcept;

  __attribute__((tls_model("initial-exec"))) static thread_local Block* tl_block_;
  std::atomic<Block*> blocks_{nullptr};
  Block shared_;
};

}  // namespace cuswap::hooks
