#include "runtime/counters.h"

#include <new>

namespace cuswap::hooks {

__attribute__((
    tls_model("initial-exec"))) thread_local CallCounters::Block* CallCounters::tl_block_ = nullptr;

// Gives the thread's block back when the thread exits. Registered on the
// slow path only, so the fast path reads a plain initial-exec pointer.
struct CallCounters::Owner {
  Block* block = nullptr;
  ~Owner() {
    if (block) block->in_use.store(false, std::memory_order_release);
    tl_block_ = nullptr;  // a call during the rest of the exit counts in `shared_`
  }
};

uint64_t CallCounters::total(size_t index) const noexcept {
  uint64_t sum = shared_.calls[index].load(std::memory_order_relaxed);
  for (Block* b = blocks_.load(std::memory_order_acquire); b; b = b->next)
    sum += b->calls[index].load(std::memory_order_relaxed);
  return sum;
}

CallCounters::Block* CallCounters::claim() noexcept {
  static thread_local Owner owner;
  if (owner.block) return &shared_;  // exiting: the block was given back
  Block* block = nullptr;
  for (Block* b = blocks_.load(std::memory_order_acquire); b && !block; b = b->next) {
    bool free = false;
    if (b->in_use.compare_exchange_strong(free, true, std::memory_order_acq_rel)) block = b;
  }
  if (!block) {
    block = new (std::nothrow) Block();
    if (!block) return &shared_;  // counted with atomics instead
    block->in_use.store(true, std::memory_order_relaxed);
    block->next = blocks_.load(std::memory_order_relaxed);
    while (!blocks_.compare_exchange_weak(block->next, block, std::memory_order_acq_rel)) {
    }
  }
  owner.block = block;
  tl_block_ = block;
  return block;
}

}  // namespace cuswap::hooks
