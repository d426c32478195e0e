// The pinned host stash on simcuda: the bytes are pinned host memory from
// cuMemHostAlloc, each allocation lies inside one driver allocation and
// shares no byte with another, the accounting matches what the driver saw,
// memory is kept and reused, and driver failures come back as nullptr.
#include "allocator/host_stash.h"

#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <cuswap_jemalloc/jemalloc_private.h>

#include "tests/simcuda/simcuda.h"

namespace cuswap {
namespace {

#define ASSERT_CU(call) ASSERT_EQ((call), CUDA_SUCCESS) << #call

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * kKiB;

simcuda_stats sim_stats() {
  simcuda_stats s{};
  simcuda_get_stats(&s);
  return s;
}

// The Driver table pointed at simcuda, as the shim points it at libcuda.
Driver simcuda_driver() {
  Driver driver;
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(handle, nullptr) << dlerror();
  EXPECT_GT(driver.load(handle, dlsym), 0);
  return driver;
}

struct Block {
  unsigned char* p;
  size_t bytes;
  unsigned char pattern;
};

void fill(const Block& b) {
  for (size_t i = 0; i < b.bytes; ++i)
    b.p[i] = static_cast<unsigned char>(b.pattern + i * 31);
}

size_t damaged_bytes(const Block& b) {
  size_t bad = 0;
  for (size_t i = 0; i < b.bytes; ++i)
    bad += b.p[i] != static_cast<unsigned char>(b.pattern + i * 31);
  return bad;
}

// Blocks that overlap one another (sorted by address as a side effect).
size_t overlapping(std::vector<Block>& blocks) {
  std::sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) { return a.p < b.p; });
  size_t overlaps = 0;
  for (size_t i = 1; i < blocks.size(); ++i)
    overlaps += blocks[i - 1].p + blocks[i - 1].bytes > blocks[i].p;
  return overlaps;
}

class HostStashTest : public ::testing::Test {
 protected:
  void start(const char* conf = "") {
    ASSERT_CU(simcuda_reset(conf));
    ASSERT_CU(cuInit(0));
    ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    ASSERT_CU(cuCtxSetCurrent(ctx));
    driver = simcuda_driver();
  }
  void TearDown() override { EXPECT_EQ(simcuda_reset(""), CUDA_SUCCESS); }

  std::unique_ptr<HostStash> make_stash() {
    std::string error;
    auto stash = HostStash::create(driver, ctx, error);
    EXPECT_NE(stash, nullptr) << error;
    EXPECT_TRUE(error.empty()) << error;
    return stash;
  }

  // The block is pinned host memory, inside one cuMemHostAlloc allocation.
  void expect_pinned_host(const Block& b) {
    CUdeviceptr at = reinterpret_cast<CUdeviceptr>(b.p);
    unsigned type = 0;
    ASSERT_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, at));
    EXPECT_EQ(type, CU_MEMORYTYPE_HOST);
    CUdeviceptr start = 0;
    size_t size = 0;
    ASSERT_CU(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, at));
    ASSERT_CU(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, at));
    EXPECT_LE(at + b.bytes, start + size) << b.bytes << " bytes run past their pinned allocation";
  }

  CUcontext ctx = nullptr;
  Driver driver;
};

TEST_F(HostStashTest, CreatingPinsNothing) {
  start();
  auto stash = make_stash();
  ASSERT_NE(stash, nullptr);
  EXPECT_EQ(stash->pinned_bytes(), 0u);
  EXPECT_EQ(stash->live_bytes(), 0u);
  EXPECT_EQ(sim_stats().host_pinned_bytes, 0u) << "the arena's metadata went to pinned memory";
}

TEST_F(HostStashTest, ManySizesArePinnedAlignedDisjointAndKept) {
  start();
  auto stash = make_stash();
  ASSERT_NE(stash, nullptr);
  const std::vector<size_t> sizes = {0,         1,        7,    255,   256,          257,
                                     4095,      4096,     4097, 65537, 1 * kMiB + 3, 9 * kMiB,
                                     70 * kMiB, 3 * kKiB, 100};
  std::vector<Block> blocks;
  size_t requested = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    void* p = stash->allocate(sizes[i]);
    ASSERT_NE(p, nullptr) << sizes[i];
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u) << sizes[i];
    // allocate(0) still hands out one byte of its own.
    Block b{static_cast<unsigned char*>(p), std::max<size_t>(sizes[i], 1),
            static_cast<unsigned char>(i)};
    expect_pinned_host(b);
    fill(b);
    blocks.push_back(b);
    requested += b.bytes;
  }
  for (const Block& b : blocks)
    EXPECT_EQ(damaged_bytes(b), 0u) << b.bytes;

  // Usable sizes: at least what was asked, at most a size class (25%) and
  // the alignment above it.
  EXPECT_GE(stash->live_bytes(), requested);
  EXPECT_LE(stash->live_bytes(), requested + requested / 4 + blocks.size() * 256);
  // Everything pinned came from cuMemHostAlloc, as the driver counted it.
  const uint64_t pinned = stash->pinned_bytes();
  EXPECT_EQ(pinned, sim_stats().host_pinned_bytes);
  EXPECT_GE(pinned, stash->live_bytes());
  std::vector<Block> sorted = blocks;
  EXPECT_EQ(overlapping(sorted), 0u);

  for (const Block& b : blocks)
    stash->release(b.p);
  stash->release(nullptr);
  EXPECT_EQ(stash->live_bytes(), 0u);
  // Note [Pinned memory is kept]: nothing went back to the driver...
  EXPECT_EQ(stash->pinned_bytes(), pinned);
  EXPECT_EQ(sim_stats().host_pinned_bytes, pinned);
  // ...and the same requests again are served from it.
  for (size_t bytes : sizes) {
    void* p = stash->allocate(bytes);
    ASSERT_NE(p, nullptr);
    expect_pinned_host({static_cast<unsigned char*>(p), std::max<size_t>(bytes, 1), 0});
    stash->release(p);
  }
  EXPECT_EQ(stash->pinned_bytes(), pinned);
  EXPECT_EQ(sim_stats().host_pinned_bytes, pinned);

  // Destroying the stash returns every driver allocation.
  stash.reset();
  EXPECT_EQ(sim_stats().host_pinned_bytes, 0u);
}

// Threads without a current context allocate and release concurrently; each
// block keeps its bytes while the others churn, no two live blocks share a
// byte, and the threads' context stacks are left as they were.
TEST_F(HostStashTest, ThreadsShareTheArena) {
  start();
  auto stash = make_stash();
  ASSERT_NE(stash, nullptr);
  constexpr int kThreads = 4;
  constexpr int kRounds = 300;
  std::vector<std::vector<Block>> kept(kThreads);
  std::atomic<size_t> damaged{0}, failed{0}, context_changed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<uint64_t>(t) + 1);
      std::vector<Block> live;
      for (int round = 0; round < kRounds; ++round) {
        // Mostly small and medium blocks, now and then a few MiB.
        size_t bytes = round % 50 == 49 ? 1 * kMiB + rng() % (4 * kMiB) : 1 + rng() % (64 * kKiB);
        void* p = stash->allocate(bytes);
        if (!p) {
          ++failed;
          continue;
        }
        Block b{static_cast<unsigned char*>(p), bytes, static_cast<unsigned char>(t * 64 + round)};
        fill(b);
        live.push_back(b);
        if (rng() % 3 == 0) {
          size_t victim = rng() % live.size();
          damaged += damaged_bytes(live[victim]);
          stash->release(live[victim].p);
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(victim));
        }
      }
      CUcontext current = nullptr;
      if (cuCtxGetCurrent(&current) != CUDA_SUCCESS || current != nullptr) ++context_changed;
      kept[static_cast<size_t>(t)] = std::move(live);
    });
  }
  for (std::thread& thread : threads)
    thread.join();
  EXPECT_EQ(failed.load(), 0u);
  EXPECT_EQ(damaged.load(), 0u);
  EXPECT_EQ(context_changed.load(), 0u);

  std::vector<Block> all;
  size_t requested = 0;
  for (const auto& live : kept)
    for (const Block& b : live) {
      all.push_back(b);
      requested += b.bytes;
    }
  ASSERT_GT(all.size(), static_cast<size_t>(kThreads * kRounds / 2));
  EXPECT_EQ(overlapping(all), 0u);
  for (const Block& b : all) {
    EXPECT_EQ(damaged_bytes(b), 0u);
    expect_pinned_host(b);
  }
  EXPECT_GE(stash->live_bytes(), requested);
  EXPECT_EQ(stash->pinned_bytes(), sim_stats().host_pinned_bytes);
  for (const Block& b : all)
    stash->release(b.p);
  EXPECT_EQ(stash->live_bytes(), 0u);
}

// Note [Chunks never merge]: free extents of two driver allocations that
// happen to be neighbours in the address space are never joined, so a
// request larger than each but smaller than both together takes a new
// allocation instead of straddling the two.
TEST_F(HostStashTest, NoBlockStraddlesTwoDriverAllocations) {
  start();
  auto stash = make_stash();
  ASSERT_NE(stash, nullptr);
  for (size_t round = 1; round <= 6; ++round) {
    std::vector<Block> blocks;
    for (size_t mib : {round, 2 * round + 1, 3 * round + 2}) {
      void* p = stash->allocate(mib * kMiB);
      ASSERT_NE(p, nullptr);
      blocks.push_back({static_cast<unsigned char*>(p), mib * kMiB, 0});
    }
    for (const Block& b : blocks)
      stash->release(b.p);
    // Larger than any one of them, smaller than all three.
    size_t bytes = (6 * round + 3) * kMiB - kMiB / 2;
    void* p = stash->allocate(bytes);
    ASSERT_NE(p, nullptr);
    expect_pinned_host({static_cast<unsigned char*>(p), bytes, 0});
    stash->release(p);
  }
  EXPECT_EQ(stash->pinned_bytes(), sim_stats().host_pinned_bytes);
}

// The same, at the hooks themselves, reached the way jemalloc reaches them:
// the merge hook joins pieces of one driver allocation only; the hooks that
// would give pinned memory back (dalloc, decommit, purge) opt out.
TEST_F(HostStashTest, HooksKeepDriverAllocationsWholeAndApart) {
  start();
  auto stash = make_stash();
  ASSERT_NE(stash, nullptr);
  void* small = stash->allocate(3 * kMiB);
  void* large = stash->allocate(90 * kMiB);
  ASSERT_NE(small, nullptr);
  ASSERT_NE(large, nullptr);
  auto range_of = [](void* p) {
    CUdeviceptr start = 0;
    size_t size = 0;
    EXPECT_EQ(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                    reinterpret_cast<CUdeviceptr>(p)),
              CUDA_SUCCESS);
    EXPECT_EQ(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                    reinterpret_cast<CUdeviceptr>(p)),
              CUDA_SUCCESS);
    return std::pair{reinterpret_cast<unsigned char*>(start), size};
  };
  auto [a, a_bytes] = range_of(small);
  auto [b, b_bytes] = range_of(large);
  ASSERT_NE(a, b) << "90 MiB came from the same driver allocation as 3 MiB";

  unsigned index = 0;
  size_t index_bytes = sizeof index;
  ASSERT_EQ(je_cuswap_mallctl("arenas.lookup", &index, &index_bytes, &small, sizeof small), 0);
  extent_hooks_t* hooks = nullptr;
  size_t hooks_bytes = sizeof hooks;
  const std::string name = "arena." + std::to_string(index) + ".extent_hooks";
  ASSERT_EQ(je_cuswap_mallctl(name.c_str(), &hooks, &hooks_bytes, nullptr, 0), 0);
  ASSERT_NE(hooks, nullptr);

  constexpr size_t kPage = 4096;
  // Two pieces of one allocation: joined (false is jemalloc's "done").
  EXPECT_FALSE(hooks->merge(hooks, a, kPage, a + kPage, a_bytes - kPage, true, index));
  EXPECT_FALSE(hooks->split(hooks, a, a_bytes, kPage, a_bytes - kPage, true, index));
  // A piece and what lies past the allocation's end, or two allocations:
  // refused, whether or not they are neighbours.
  EXPECT_TRUE(hooks->merge(hooks, a, a_bytes, a + a_bytes, kPage, true, index));
  EXPECT_TRUE(hooks->merge(hooks, a, a_bytes, b, b_bytes, true, index));
  EXPECT_TRUE(hooks->merge(hooks, b, b_bytes, a, a_bytes, true, index));
  EXPECT_EQ(hooks->dalloc, nullptr);
  EXPECT_EQ(hooks->decommit, nullptr);
  EXPECT_EQ(hooks->purge_lazy, nullptr);
  EXPECT_EQ(hooks->purge_forced, nullptr);
  stash->release(small);
  stash->release(large);
}

TEST_F(HostStashTest, DriverOutOfPinnedMemoryIsNullptr) {
  start("fail:cuMemHostAlloc@1+");
  auto stash = make_stash();
  ASSERT_NE(stash, nullptr);
  for (size_t bytes : {size_t{1}, size_t{4096}, 3 * kMiB, 80 * kMiB})
    EXPECT_EQ(stash->allocate(bytes), nullptr) << bytes;
  EXPECT_GT(sim_stats().injected_failures, 0u);
  EXPECT_EQ(stash->pinned_bytes(), 0u);
  EXPECT_EQ(stash->live_bytes(), 0u);
  EXPECT_EQ(sim_stats().host_pinned_bytes, 0u);
}

// jemalloc does not remember a failed growth: once the driver has pinned
// memory again, the next allocation gets it.
CUresult(CUDAAPI* g_real_host_alloc)(void**, size_t, unsigned) = nullptr;
std::atomic<bool> g_refuse_host_alloc{false};
std::atomic<int> g_host_alloc_calls{0};
CUresult CUDAAPI flaky_host_alloc(void** pp, size_t bytes, unsigned flags) {
  ++g_host_alloc_calls;
  if (g_refuse_host_alloc) return CUDA_ERROR_OUT_OF_MEMORY;
  return g_real_host_alloc(pp, bytes, flags);
}

TEST_F(HostStashTest, RecoversWhenTheDriverHasMemoryAgain) {
  start();
  g_real_host_alloc = driver.cuMemHostAlloc;
  driver.cuMemHostAlloc = flaky_host_alloc;
  auto stash = make_stash();
  ASSERT_NE(stash, nullptr);

  g_refuse_host_alloc = true;
  EXPECT_EQ(stash->allocate(5 * kMiB), nullptr);
  EXPECT_EQ(stash->allocate(100), nullptr);
  EXPECT_GT(g_host_alloc_calls.load(), 0);
  EXPECT_EQ(stash->pinned_bytes(), 0u);

  g_refuse_host_alloc = false;
  void* small = stash->allocate(100);
  void* large = stash->allocate(5 * kMiB);
  ASSERT_NE(small, nullptr);
  ASSERT_NE(large, nullptr);
  std::memset(large, 0x5a, 5 * kMiB);
  expect_pinned_host({static_cast<unsigned char*>(large), 5 * kMiB, 0});
  EXPECT_EQ(stash->pinned_bytes(), sim_stats().host_pinned_bytes);
  EXPECT_GE(stash->pinned_bytes(), 5 * kMiB + 100);
  stash->release(small);
  stash->release(large);
}

TEST_F(HostStashTest, DriverWithoutHostAllocIsAnError) {
  start();
  driver.cuMemHostAlloc = nullptr;
  std::string error;
  EXPECT_EQ(HostStash::create(driver, ctx, error), nullptr);
  EXPECT_NE(error.find("cuMemHostAlloc"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

// Two stashes are two arenas: their memory is separate and each returns
// its own to the driver.
TEST_F(HostStashTest, StashesAreIndependent) {
  start();
  auto a = make_stash();
  auto b = make_stash();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  void* pa = a->allocate(3 * kMiB);
  void* pb = b->allocate(3 * kMiB);
  ASSERT_NE(pa, nullptr);
  ASSERT_NE(pb, nullptr);
  std::vector<Block> blocks = {{static_cast<unsigned char*>(pa), 3 * kMiB, 1},
                               {static_cast<unsigned char*>(pb), 3 * kMiB, 2}};
  EXPECT_EQ(overlapping(blocks), 0u);
  EXPECT_EQ(a->pinned_bytes() + b->pinned_bytes(), sim_stats().host_pinned_bytes);
  const uint64_t b_pinned = b->pinned_bytes();
  a.reset();
  EXPECT_EQ(sim_stats().host_pinned_bytes, b_pinned);
  std::memset(pb, 0x11, 3 * kMiB);  // b's memory is still there
  b->release(pb);
}

}  // namespace
}  // namespace cuswap
