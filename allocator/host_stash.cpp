// The pinned host stash (host_stash.h): a private jemalloc arena whose
// extent hooks take memory from cuMemHostAlloc.
//
// Invariants: the hooks only ever see extents of this arena, all of them
// inside one of `Arena::chunks` (the driver's allocations); the arena's own
// metadata comes from jemalloc's default mmap hooks, not from pinned memory;
// no hook calls back into jemalloc; `chunks_mu` is a leaf lock, taken inside
// jemalloc's locks and never around a call into jemalloc or the driver.
// Fork: jemalloc's own handlers (registered when the first stash initialises
// the private copy) keep its locks usable in a child; `chunks_mu` is not
// handled, and need not be: a forked child cannot use the driver, so it
// never allocates from a stash.
#include "allocator/host_stash.h"

#include <cuswap_jemalloc/jemalloc_private.h>
#include <fmt/format.h>
#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>
#include <type_traits>
#include <vector>

// The private jemalloc's configuration (Note [A private jemalloc] in
// allocator/jemalloc.cmake): its options come from this string alone.
//   tcache:false, background_thread:false — no per-thread caches and no
//     threads of its own inside someone else's process; every call names the
//     arena and MALLOCX_TCACHE_NONE anyway.
//   narenas:1 — the automatic arenas are never used; keep one.
//   retain:true — extents the hooks refuse to unmap are kept for reuse.
//   dirty_decay_ms:-1, muzzy_decay_ms:-1 — pinned pages are never purged
//     (the hooks opt out), so decay would only move extents between lists.
extern "C" {
const char* je_cuswap_malloc_conf =
    "tcache:false,background_thread:false,narenas:1,retain:true,"
    "dirty_decay_ms:-1,muzzy_decay_ms:-1";

// jemalloc's other configuration sources, MALLOC_CONF and /etc/malloc.conf,
// belong to the process's own jemalloc: the private copy finds neither.
__attribute__((visibility("hidden"))) char* je_cuswap_secure_getenv(const char*) {
  return nullptr;
}
__attribute__((visibility("hidden"))) ssize_t je_cuswap_readlink(const char*, char*, size_t) {
  errno = ENOENT;
  return -1;
}
}

namespace cuswap {

namespace {

// Note [Pinned memory is kept]
// The arena never hands memory back to the driver while the stash lives:
// its dalloc, decommit and purge hooks opt out, so jemalloc retains every
// extent and reuses it for later evictions. cuMemHostAlloc and cuMemFreeHost
// are slow (they pin and unpin pages, and cuMemFreeHost synchronises with the
// device), evictions come back every iteration of a training loop, and
// purging pinned pages with madvise would undo the pinning. The working set
// of a training job is steady, so what the stash obtained once it will need
// again. The cost is that the stash's footprint is its high-water mark plus
// what the growth policy (kChunkGrowLimitBytes) adds.
//
// Note [Chunks never merge]
// jemalloc coalesces free neighbouring extents. Two cuMemHostAlloc
// allocations may be adjacent in the address space, but an extent spanning
// both would be one buffer in two pinned allocations: the driver could not
// name it in one copy, and freeing either would cut it. So the merge hook
// allows a merge only when both extents lie in the same chunk (one
// cuMemHostAlloc allocation). Splits are always allowed: both halves stay in
// their chunk. (jemalloc 5.3 with retain already declines to coalesce into
// the first extent of each growth; the hook also covers what that leaves
// out, such as the exact-size extents asked for after a growth failed.)

// jemalloc grows a retaining arena by geometrically larger extents; with
// pinned memory a huge eviction would otherwise make every later growth at
// least as large. Capping the growth step keeps the slack pinned beyond what
// was asked for under this bound (a request larger than it still gets what
// it needs).
constexpr size_t kChunkGrowLimitBytes = size_t{64} << 20;
// Copies to and from the device want 256-byte alignment; jemalloc rounds the
// size up to a multiple of the alignment. Above that, its size classes (four
// per doubling) round a large request up by less than 25%: live_bytes()
// counts what was handed out, rounding included.
constexpr int kLgAlignment = 8;

struct Chunk {
  uintptr_t base;
  size_t size_bytes;
};

}  // namespace

// The hooks jemalloc calls carry a pointer to `hooks`; `owner` leads back.
struct HooksWithOwner {
  extent_hooks_t hooks;
  HostStash::Arena* owner;
};
static_assert(std::is_standard_layout_v<HooksWithOwner>);

struct HostStash::Arena {
  HooksWithOwner hooks{};
  Driver driver;
  CUcontext context = nullptr;
  unsigned index = 0;
  std::atomic<uint64_t> pinned_bytes{0};
  std::atomic<uint64_t> live_bytes{0};
  std::mutex chunks_mu;
  std::vector<Chunk> chunks;  // sorted by base; guarded by chunks_mu

  static Arena& of(extent_hooks_t* hooks) noexcept {
    return *reinterpret_cast<HooksWithOwner*>(hooks)->owner;
  }

  void* driver_alloc(size_t bytes) noexcept {
    if (driver.cuCtxPushCurrent_v2(context) != CUDA_SUCCESS) return nullptr;
    void* p = nullptr;
    CUresult result = driver.cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE);
    CUcontext popped = nullptr;
    (void)driver.cuCtxPopCurrent_v2(&popped);
    return result == CUDA_SUCCESS ? p : nullptr;
  }

  void driver_free_all() noexcept {
    if (chunks.empty() || driver.cuCtxPushCurrent_v2(context) != CUDA_SUCCESS) return;
    for (const Chunk& chunk : chunks)
      (void)driver.cuMemFreeHost(reinterpret_cast<void*>(chunk.base));
    CUcontext popped = nullptr;
    (void)driver.cuCtxPopCurrent_v2(&popped);
    chunks.clear();
  }

  bool record(void* p, size_t bytes) noexcept {
    Chunk chunk{reinterpret_cast<uintptr_t>(p), bytes};
    std::lock_guard lock(chunks_mu);
    try {
      auto at = std::upper_bound(chunks.begin(), chunks.end(), chunk.base,
                                 [](uintptr_t base, const Chunk& c) { return base < c.base; });
      chunks.insert(at, chunk);
    } catch (const std::bad_alloc&) {
      return false;
    }
    pinned_bytes.fetch_add(bytes, std::memory_order_relaxed);
    return true;
  }

  // A fresh chunk holding `size` bytes at a multiple of `alignment`.
  // cuMemHostAlloc returns page-aligned memory; a larger alignment costs a
  // padded allocation.
  void* obtain(size_t size, size_t alignment) noexcept {
    void* p = driver_alloc(size);
    if (!p) return nullptr;
    size_t chunk_bytes = size;
    uintptr_t extent = reinterpret_cast<uintptr_t>(p);
    if (extent % alignment != 0) {
      (void)release_to_driver(p);
      if (size > SIZE_MAX - alignment) return nullptr;
      chunk_bytes = size + alignment;
      p = driver_alloc(chunk_bytes);
      if (!p) return nullptr;
      extent = (reinterpret_cast<uintptr_t>(p) + alignment - 1) & ~(uintptr_t{alignment} - 1);
    }
    if (!record(p, chunk_bytes)) {
      (void)release_to_driver(p);
      return nullptr;
    }
    return reinterpret_cast<void*>(extent);
  }

  bool release_to_driver(void* p) noexcept {
    if (driver.cuCtxPushCurrent_v2(context) != CUDA_SUCCESS) return false;
    CUresult result = driver.cuMemFreeHost(p);
    CUcontext popped = nullptr;
    (void)driver.cuCtxPopCurrent_v2(&popped);
    return result == CUDA_SUCCESS;
  }

  bool same_chunk(uintptr_t a, uintptr_t b_end) noexcept {
    std::lock_guard lock(chunks_mu);
    auto after = std::upper_bound(chunks.begin(), chunks.end(), a,
                                  [](uintptr_t base, const Chunk& c) { return base < c.base; });
    if (after == chunks.begin()) return false;
    const Chunk& chunk = *(after - 1);
    return a >= chunk.base && b_end <= chunk.base + chunk.size_bytes;
  }
};

namespace {

// Extent hooks (jemalloc's extent_hooks_t). Returning true is jemalloc's
// "refused"; a NULL hook refuses always.
void* hook_alloc(extent_hooks_t* hooks, void* new_addr, size_t size, size_t alignment, bool* zero,
                 bool* commit, unsigned /*arena_index*/) {
  // An extent at a chosen address (in-place growth) cannot be had from the
  // driver.
  if (new_addr != nullptr) return nullptr;
  void* p = HostStash::Arena::of(hooks).obtain(size, alignment);
  if (!p) return nullptr;
  if (*zero) std::memset(p, 0, size);
  *commit = true;  // pinned memory is always backed
  return p;
}

// Pinned memory is always committed (decommit is refused), so there is never
// anything to commit.
bool hook_commit(extent_hooks_t*, void*, size_t, size_t, size_t, unsigned) {
  return false;
}

bool hook_split(extent_hooks_t*, void*, size_t, size_t, size_t, bool, unsigned) {
  return false;  // both halves stay in their chunk (Note [Chunks never merge])
}

bool hook_merge(extent_hooks_t* hooks, void* addr_a, size_t size_a, void* addr_b, size_t size_b,
                bool, unsigned) {
  uintptr_t a = reinterpret_cast<uintptr_t>(addr_a);
  uintptr_t b = reinterpret_cast<uintptr_t>(addr_b);
  uintptr_t low = std::min(a, b);
  uintptr_t high_end = std::max(a + size_a, b + size_b);
  return !HostStash::Arena::of(hooks).same_chunk(low, high_end);
}

constexpr extent_hooks_t kHooks = {
    hook_alloc,
    nullptr,  // dalloc: Note [Pinned memory is kept]
    nullptr,  // destroy: the chunks are returned whole, after the arena is gone
    hook_commit,
    nullptr,  // decommit
    nullptr,  // purge_lazy
    nullptr,  // purge_forced
    hook_split,  hook_merge,
};

// jemalloc's arena_config_t, the argument of experimental.arenas_create_ext
// (jemalloc 5.3): metadata_use_hooks = false keeps the arena's metadata in
// ordinary memory instead of 2 MiB-aligned pinned blocks.
struct ArenaConfig {
  extent_hooks_t* extent_hooks;
  bool metadata_use_hooks;
};

int arena_ctl(unsigned index, const char* leaf, void* value, size_t value_bytes) noexcept {
  char name[64];
  auto end = fmt::format_to_n(name, sizeof name - 1, "arena.{}.{}", index, leaf);
  *end.out = '\0';
  return je_cuswap_mallctl(name, nullptr, nullptr, value, value_bytes);
}

}  // namespace

HostStash::HostStash(std::unique_ptr<Arena> arena) noexcept : arena_(std::move(arena)) {}

std::unique_ptr<HostStash> HostStash::create(const Driver& driver, CUcontext context,
                                             std::string& error) noexcept {
  try {
    if (!driver.cuMemHostAlloc || !driver.cuMemFreeHost || !driver.cuCtxPushCurrent_v2 ||
        !driver.cuCtxPopCurrent_v2) {
      error = "host stash: the driver lacks cuMemHostAlloc, cuMemFreeHost or the context stack";
      return nullptr;
    }
    auto arena = std::make_unique<Arena>();
    arena->driver = driver;
    arena->context = context;
    arena->hooks.hooks = kHooks;
    arena->hooks.owner = arena.get();

    unsigned index = 0;
    size_t index_bytes = sizeof index;
    ArenaConfig config{&arena->hooks.hooks, false};
    int rc = je_cuswap_mallctl("experimental.arenas_create_ext", &index, &index_bytes, &config,
                               sizeof config);
    if (rc != 0) {
      // Another jemalloc than 5.3: the arena's metadata goes to pinned
      // memory too, which costs memory but changes nothing else.
      extent_hooks_t* hooks = &arena->hooks.hooks;
      index_bytes = sizeof index;
      rc = je_cuswap_mallctl("arenas.create", &index, &index_bytes, &hooks, sizeof hooks);
    }
    if (rc != 0) {
      error = fmt::format("host stash: jemalloc could not create an arena: {}", std::strerror(rc));
      return nullptr;
    }
    arena->index = index;
    size_t grow_limit_bytes = kChunkGrowLimitBytes;
    if (int limit_rc =
            arena_ctl(index, "retain_grow_limit", &grow_limit_bytes, sizeof grow_limit_bytes);
        limit_rc != 0) {
      error = fmt::format("host stash: jemalloc refused arena.{}.retain_grow_limit: {}", index,
                          std::strerror(limit_rc));
      (void)arena_ctl(index, "destroy", nullptr, 0);
      return nullptr;
    }
    return std::unique_ptr<HostStash>(new HostStash(std::move(arena)));
  } catch (const std::bad_alloc&) {
    error = "host stash: out of memory creating the arena";
    return nullptr;
  }
}

HostStash::~HostStash() {
  // jemalloc hands every retained extent to the (NULL) destroy hook and
  // forgets the arena; the chunks are then the stash's alone. If it cannot,
  // the arena may still reach the hooks: leave both alive.
  if (arena_ctl(arena_->index, "destroy", nullptr, 0) != 0) {
    (void)arena_.release();
    return;
  }
  arena_->driver_free_all();
}

void* HostStash::allocate(size_t bytes) noexcept {
  const int flags =
      MALLOCX_ARENA(arena_->index) | MALLOCX_TCACHE_NONE | MALLOCX_LG_ALIGN(kLgAlignment);
  void* p = je_cuswap_mallocx(bytes == 0 ? 1 : bytes, flags);
  if (p) arena_->live_bytes.fetch_add(je_cuswap_sallocx(p, 0), std::memory_order_relaxed);
  return p;
}

void HostStash::release(void* p) noexcept {
  if (!p) return;
  arena_->live_bytes.fetch_sub(je_cuswap_sallocx(p, 0), std::memory_order_relaxed);
  je_cuswap_dallocx(p, MALLOCX_TCACHE_NONE);
}

uint64_t HostStash::pinned_bytes() const noexcept {
  return arena_->pinned_bytes.load(std::memory_order_relaxed);
}

uint64_t HostStash::live_bytes() const noexcept {
  return arena_->live_bytes.load(std::memory_order_relaxed);
}

}  // namespace cuswap
