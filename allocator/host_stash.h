// The pinned host stash: where evicted buffers' bytes live when the driver
// lacks host-located virtual memory. One private jemalloc arena (Note [A
// private jemalloc] in allocator/jemalloc.cmake) whose extents come from
// cuMemHostAlloc(CU_MEMHOSTALLOC_PORTABLE), so any context's copy engines can
// use them at full speed and asynchronously.
//
// Invariants: every byte handed out lies inside one cuMemHostAlloc
// allocation (the arena never merges extents across two of them); memory
// obtained from the driver stays with the arena until the stash is destroyed
// (Note [Pinned memory is kept]); the process's malloc is never involved in
// the stash's memory, and the stash never replaces the process's malloc.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "allocator/driver.h"

namespace cuswap {

// Pinned host memory for evicted buffers' bytes: one private jemalloc arena
// whose extents come from cuMemHostAlloc(CU_MEMHOSTALLOC_PORTABLE), so any
// context's copy engines can use them. Thread-safe. Memory obtained from the
// driver is kept and reused by the arena (never returned to the driver
// before the stash is destroyed): Note [Pinned memory is kept].
class HostStash {
 public:
  // `context` is made current (push/pop through `driver`) around each
  // cuMemHostAlloc, since the extent hook may run on any thread. Returns
  // nullptr and sets `error` (one line) if the arena cannot be created.
  static std::unique_ptr<HostStash> create(const Driver& driver, CUcontext context,
                                           std::string& error) noexcept;
  // Destroys the arena (every allocation still live with it) and returns
  // every cuMemHostAlloc allocation to the driver: only while `context` is
  // alive. A stash meant to last until the process exits is best never
  // destroyed.
  ~HostStash();
  HostStash(const HostStash&) = delete;
  HostStash& operator=(const HostStash&) = delete;

  // `bytes` of pinned host memory, 256-byte aligned at least (0 counts as
  // 1); nullptr when the driver has no more pinned memory (the caller reports
  // OUT_OF_MEMORY).
  void* allocate(size_t bytes) noexcept;
  void release(void* p) noexcept;          // p from allocate(), or nullptr
  uint64_t pinned_bytes() const noexcept;  // obtained from cuMemHostAlloc so far
  uint64_t live_bytes() const noexcept;    // handed out and not released (usable sizes)

  struct Arena;  // the arena, its hooks and the driver's allocations (host_stash.cpp)

 private:
  explicit HostStash(std::unique_ptr<Arena> arena) noexcept;
  std::unique_ptr<Arena> arena_;
};

}  // namespace cuswap
