// The swapping allocator driven directly, without LD_PRELOAD: its Driver
// table points at simcuda, and the test does what the hooks do around each
// launch and copy (prepare before, finish after).
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "allocator/swap_allocator.h"
#include "tests/simcuda/test/fixture.h"

// The Driver table filled from the simcuda this process is linked to
// (swap_driver.cpp, built with the driver's versioned names).
std::shared_ptr<cuswap::Driver> load_simcuda_driver();

class SwapTest : public SimTest {
 protected:
  // Starts simcuda with `sim_conf` and an allocator with `settings`.
  void start_swap(const char* sim_conf, cuswap::AllocatorSettings settings) {
    start(sim_conf);
    driver = load_simcuda_driver();
    ASSERT_NE(driver, nullptr);
    allocator = std::make_unique<cuswap::Allocator>(*driver, settings);
  }
  void TearDown() override {
    allocator.reset();
    SimTest::TearDown();
  }

  static cuswap::AllocatorSettings budget(uint64_t bytes) {
    cuswap::AllocatorSettings s;
    s.budget_bytes.all = bytes;
    return s;
  }

  // The allocator agrees with itself (Note [What always holds between
  // operations]); run after every step.
  void expect_consistent(const char* after) {
    const std::string broken = allocator->check();
    EXPECT_EQ(broken, "") << "after " << after;
  }

  CUdeviceptr swap_alloc(uint64_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_CU(allocator->allocate(bytes, &p));
    expect_consistent("an allocation");
    return p;
  }
  CUresult swap_free(CUdeviceptr p, CUstream stream = nullptr, bool ordered = false) {
    const CUresult r = allocator->free(p, stream, ordered);
    expect_consistent("a free");
    return r;
  }

  // A launch or copy as the hooks make it: the allocator prepares the
  // buffers, the call is made, the allocator records the use.
  template <typename Call>
  CUresult use(CUstream stream, std::vector<uintptr_t> bases, Call&& call) {
    cuswap::UseBuffers buffers;
    buffers.bases = bases;
    if (CUresult r = allocator->prepare(stream, buffers); r != CUDA_SUCCESS) {
      expect_consistent("a failed prepare");
      return r;
    }
    CUresult r = call();
    allocator->finish(stream, buffers, r);
    expect_consistent("a use");
    return r;
  }
  CUresult fill(CUstream s, CUdeviceptr p, uint64_t bytes, uint32_t value) {
    return use(s, {p}, [&] { return simcuda::testkit::launch_fill(k, s, p, bytes, value, 20000); });
  }
  CUresult check(CUstream s, CUdeviceptr p, uint64_t bytes, uint32_t value, CUdeviceptr counter) {
    return use(s, {p, counter}, [&] {
      return simcuda::testkit::launch_check(k, s, p, bytes, value, counter, 20000);
    });
  }
  // Each 8-byte word its own value, from `seed` and its index
  // (simcuda::testkit::word_pattern): bytes at a wrong offset show.
  CUresult fill_words(CUstream s, CUdeviceptr p, uint64_t bytes, uint32_t seed) {
    return use(s, {p},
               [&] { return simcuda::testkit::launch_fill_words(k, s, p, bytes, seed, 20000); });
  }
  CUresult check_words(CUstream s, CUdeviceptr p, uint64_t bytes, uint32_t seed,
                       CUdeviceptr counter) {
    return use(s, {p, counter}, [&] {
      return simcuda::testkit::launch_check_words(k, s, p, bytes, seed, counter, 20000);
    });
  }
  CUresult read(CUstream s, void* host, CUdeviceptr p, uint64_t bytes) {
    return use(s, {p}, [&] { return cuMemcpyDtoHAsync(host, p, bytes, s); });
  }
  uint64_t read_counter(CUdeviceptr counter) {
    uint64_t value = 0;
    EXPECT_CU(use(nullptr, {counter}, [&] { return cuMemcpyDtoH(&value, counter, 8); }));
    return value;
  }
  // Words of buffers that are not what fill_words(bytes, seed) wrote, all
  // of them together (a count on the device, checked after a synchronize).
  struct Words {
    CUdeviceptr p;
    uint64_t bytes;
    uint32_t seed;
  };
  uint64_t wrong_words(CUstream s, std::initializer_list<Words> buffers) {
    CUdeviceptr counter = swap_alloc(8);
    EXPECT_CU(use(s, {counter}, [&] { return cuMemsetD8Async(counter, 0, 8, s); }));
    for (const Words& w : buffers)
      EXPECT_CU(check_words(s, w.p, w.bytes, w.seed, counter));
    EXPECT_CU(cuCtxSynchronize());
    return read_counter(counter);
  }

  std::shared_ptr<cuswap::Driver> driver;
  std::unique_ptr<cuswap::Allocator> allocator;
};
