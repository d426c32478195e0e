// The hooks' runtime called directly, without LD_PRELOAD: a Runtime whose
// Driver table points at simcuda, configured from a CUSWAP_CONF string,
// driven the way the handlers drive it (allocate then note_alloc, begin_*
// before the driver call and end_* after, begin_free and finish_free
// around a free).
#include "runtime/runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "policy/plan.h"
#include "tests/simcuda/simcuda.h"
#include "tests/simcuda/testkit/testkit.h"
#include "tests/support/process.h"

std::shared_ptr<cuswap::Driver> load_simcuda_driver();  // tests/allocator/swap_driver.cpp

namespace {

using cuswap::hooks::Runtime;
using cuswap::testing::TempDir;
namespace hooks = cuswap::hooks;

#define ASSERT_CU(call) ASSERT_EQ((call), CUDA_SUCCESS) << #call
#define EXPECT_CU(call) EXPECT_EQ((call), CUDA_SUCCESS) << #call
constexpr uint64_t kMiB = uint64_t{1} << 20;

// This file is built with the driver's versioned names (runtime.h needs
// them), so the driver is called through the runtime's table, never by
// cuda.h's unversioned names (tests/simcuda/test/fixture.h uses those).
class RuntimeTest : public ::testing::Test {
 protected:
  // simcuda with `sim_conf`, a runtime configured with `cuswap_conf`.
  void start_runtime(const char* sim_conf, const char* cuswap_conf) {
    ASSERT_CU(simcuda_reset(sim_conf));
    const std::shared_ptr<cuswap::Driver> driver = load_simcuda_driver();
    ASSERT_NE(driver, nullptr);
    rt = std::make_unique<Runtime>();
    rt->driver = *driver;
    ASSERT_CU(rt->driver.cuInit(0));
    CUcontext ctx = nullptr;
    ASSERT_CU(rt->driver.cuDevicePrimaryCtxRetain(&ctx, 0));
    ASSERT_CU(rt->driver.cuCtxSetCurrent(ctx));
    ASSERT_CU(simcuda::testkit::load_kernels(k));
    cuswap::conf::Warner warner;
    const cuswap::conf::Options options = cuswap::conf::parse_options(cuswap_conf, warner);
    ASSERT_EQ(warner.count, 0) << cuswap_conf;
    hooks::configure(*rt, options);
  }
  void TearDown() override {
    if (rt && rt->allocator) {
      EXPECT_EQ(rt->allocator->check(), "");
    }
    rt.reset();
    EXPECT_CU(simcuda_reset(""));
  }

  simcuda_stats stats() {
    simcuda_stats s{};
    simcuda_get_stats(&s);
    return s;
  }

  CUdeviceptr driver_alloc(uint64_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_CU(rt->driver.cuMemAlloc_v2(&p, bytes));
    return p;
  }

  // An allocation as handle_memory.cpp makes it under a budget.
  CUdeviceptr allocate(uint64_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_CU(rt->allocator->allocate(bytes, &p));
    hooks::note_alloc(*rt, p, bytes, 0, cuswap::trace::AllocKind::linear);
    return p;
  }

  // A kernel launch as handle_launch.cpp makes it: what it touches is found
  // from its parameters and made resident before the launch, and recorded
  // as its buffers' last use after.
  CUresult launch(CUfunction function, CUstream stream, void** params, hooks::Use& use) {
    if (CUresult r = hooks::begin_launch(*rt, function, stream, params, nullptr, use);
        r != CUDA_SUCCESS)
      return r;
    const CUresult r =
        rt->driver.cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr);
    hooks::end_launch(*rt, stream, reinterpret_cast<uint64_t>(stream), use, r);
    return r;
  }
  CUresult fill_words(CUstream s, CUdeviceptr dst, uint64_t bytes, uint32_t seed) {
    uint64_t ns = 20000;
    void* params[] = {&dst, &bytes, &seed, &ns};
    hooks::Use use;
    return launch(k.fill_words, s, params, use);
  }
  CUresult check_words(CUstream s, CUdeviceptr src, uint64_t bytes, uint32_t seed,
                       CUdeviceptr counter) {
    uint64_t ns = 20000;
    void* params[] = {&src, &bytes, &seed, &counter, &ns};
    hooks::Use use;
    return launch(k.check_words, s, params, use);
  }

  // A memset as handle_copy.cpp makes it: its buffer's memory may still be
  // another buffer's eviction copy's source until the device gets there.
  CUresult zero(CUdeviceptr dst, uint64_t bytes) {
    hooks::Use use;
    if (CUresult r = hooks::begin_copy(*rt, nullptr, dst, 0, nullptr, bytes, use);
        r != CUDA_SUCCESS)
      return r;
    const CUresult r = rt->driver.cuMemsetD8_v2(dst, 0, bytes);
    hooks::end_copy(*rt, nullptr, use, r);
    return r;
  }

  // A copy as handle_copy.cpp makes it.
  CUresult copy_to_host(void* host, CUdeviceptr src, uint64_t bytes) {
    hooks::Use use;
    if (CUresult r = hooks::begin_copy(*rt, nullptr, 0, src, nullptr, bytes, use);
        r != CUDA_SUCCESS)
      return r;
    const CUresult r = rt->driver.cuMemcpyDtoH_v2(host, src, bytes);
    hooks::end_copy(*rt, nullptr, use, r);
    return r;
  }

  std::unique_ptr<Runtime> rt;
  simcuda::testkit::Kernels k;
};

TEST_F(RuntimeTest, WithoutABudgetOrARecordingNothingIsTracked) {
  start_runtime("", "");
  EXPECT_EQ(rt->allocator, nullptr);
  EXPECT_EQ(rt->follow, nullptr);
  EXPECT_FALSE(hooks::tracking(*rt));
  const CUdeviceptr p = driver_alloc(kMiB);
  hooks::note_alloc(*rt, p, kMiB, 0, cuswap::trace::AllocKind::linear);
  EXPECT_EQ(rt->buffers.size(), 0u);
  // A launch is passed on with nothing looked up.
  uint64_t bytes = kMiB, ns = 1000;
  uint32_t seed = 3;
  CUdeviceptr dst = p;
  void* params[] = {&dst, &bytes, &seed, &ns};
  hooks::Use use;
  EXPECT_CU(launch(k.fill_words, nullptr, params, use));
  EXPECT_EQ(use.touched.count, 0u);
  EXPECT_CU(rt->driver.cuMemFree_v2(p));
}

TEST_F(RuntimeTest, ABudgetBringsTheAllocatorAndPassThroughBringsNothing) {
  start_runtime("", "budget:8MiB");
  ASSERT_NE(rt->allocator, nullptr);
  EXPECT_NE(rt->follow, nullptr);
  EXPECT_FALSE(rt->passthrough.load());
  EXPECT_TRUE(hooks::tracking(*rt));
  rt.reset();

  start_runtime("", "budget:8MiB,passthrough:true");
  EXPECT_EQ(rt->allocator, nullptr);
  EXPECT_TRUE(rt->passthrough.load());
}

TEST_F(RuntimeTest, APlanWithoutABudgetLendsItsOwn) {
  const TempDir dir;
  cuswap::policy::Plan plan;
  plan.planner = "cuswap";
  plan.budget_bytes = 6 * kMiB;
  const std::string path = dir.path("run.plan.json");
  std::ofstream(path) << cuswap::policy::write_plan_json(plan);
  const std::string conf = "plan:" + path;
  start_runtime("", conf.c_str());
  ASSERT_NE(rt->allocator, nullptr);
  EXPECT_EQ(rt->options.budget_bytes.all, 6 * kMiB);
  size_t free_bytes = 0, total_bytes = 0;
  EXPECT_CU(rt->allocator->mem_get_info(&free_bytes, &total_bytes));
  EXPECT_EQ(total_bytes, 6 * kMiB);
}

TEST_F(RuntimeTest, APlanThatCannotBeReadWithoutABudgetSaysSoAndIsNotFollowed) {
  testing::internal::CaptureStderr();
  start_runtime("", "plan:/nonexistent/run.plan.json");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(rt->allocator, nullptr);
  EXPECT_NE(err.find("/nonexistent/run.plan.json"), std::string::npos) << err;
  EXPECT_NE(err.find("not following it, and no budget is set"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

// Three 2 MiB buffers on a budget of two pages: each launch names its
// buffer through its parameters, so the runtime makes it resident, and the
// third evicts the first; every word reads back as written.
TEST_F(RuntimeTest, LaunchesFoundThroughTheirParametersSwapWithEveryWordIntact) {
  start_runtime("", "budget:6MiB,swap_min:64KiB");
  const uint64_t bytes = 2 * kMiB;
  std::vector<CUdeviceptr> buffers;
  for (uint32_t i = 0; i < 3; ++i) {
    buffers.push_back(allocate(bytes));
    ASSERT_CU(fill_words(nullptr, buffers.back(), bytes, 100 + i));
  }
  const CUdeviceptr counter = allocate(8);
  ASSERT_CU(zero(counter, 8));
  for (int round = 0; round < 2; ++round)
    for (uint32_t i = 0; i < 3; ++i)
      ASSERT_CU(check_words(nullptr, buffers[i], bytes, 100 + i, counter));
  uint64_t wrong = ~uint64_t{0};
  ASSERT_CU(copy_to_host(&wrong, counter, 8));
  EXPECT_EQ(wrong, 0u);
  const cuswap::SwapStats swap = rt->allocator->stats();
  EXPECT_GE(swap.evictions, 3u);
  EXPECT_GE(swap.prefetches, 3u);
  EXPECT_LE(swap.peak_device_bytes, 6 * kMiB);
  EXPECT_EQ(stats().hazards, 0u);
}

TEST_F(RuntimeTest, ALaunchNamesEveryBufferItsParametersPointAtOnce) {
  start_runtime("", "budget:16MiB");
  const CUdeviceptr a = allocate(kMiB), counter = allocate(8);
  uint64_t bytes = kMiB, ns = 1000;
  uint32_t seed = 7;
  CUdeviceptr src = a + 64, mismatches = counter;  // an interior pointer names its buffer
  void* params[] = {&src, &bytes, &seed, &mismatches, &ns};
  hooks::Use use;
  ASSERT_EQ(hooks::begin_launch(*rt, k.check_words, nullptr, params, nullptr, use), CUDA_SUCCESS);
  ASSERT_EQ(use.touched.count, 2u);
  EXPECT_EQ(use.touched.bases[0], a);
  EXPECT_EQ(use.touched.bases[1], counter);
  EXPECT_FALSE(use.touched.unknown);
  hooks::end_launch(*rt, nullptr, 0, use, CUDA_ERROR_INVALID_VALUE);  // as if refused
  // A graph launch touches what cuswap cannot name.
  hooks::Use graph;
  ASSERT_EQ(hooks::begin_launch(*rt, nullptr, nullptr, nullptr, nullptr, graph), CUDA_SUCCESS);
  EXPECT_TRUE(graph.touched.unknown);
  EXPECT_NE(graph.flags & cuswap::trace::kLaunchUnknownAccess, 0);
  hooks::end_launch(*rt, nullptr, 0, graph, CUDA_SUCCESS);
}

// Note [Copies stay within their buffer]
TEST_F(RuntimeTest, ACopyPastABuffersEndIsRefusedAndOneThatFitsIsMade) {
  start_runtime("", "budget:16MiB");
  const CUdeviceptr p = allocate(kMiB);
  std::vector<char> host(kMiB + 8);
  hooks::Use over;
  EXPECT_EQ(hooks::begin_copy(*rt, nullptr, p, 0, host.data(), kMiB + 1, over),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(over.touched.count, 0u);  // nothing was prepared
  hooks::Use late;
  EXPECT_EQ(hooks::begin_copy(*rt, nullptr, 0, p + 8, nullptr, kMiB, late),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(copy_to_host(host.data(), p + 8, kMiB - 8), CUDA_SUCCESS);
  EXPECT_EQ(copy_to_host(host.data(), p, kMiB), CUDA_SUCCESS);
  // Not cuswap's: left to the driver.
  const CUdeviceptr own = driver_alloc(kMiB);
  hooks::Use theirs;
  EXPECT_EQ(hooks::begin_copy(*rt, nullptr, own, 0, host.data(), kMiB + 1, theirs), CUDA_SUCCESS);
  EXPECT_EQ(theirs.touched.count, 0u);
  EXPECT_CU(rt->driver.cuMemFree_v2(own));
}

TEST_F(RuntimeTest, AFreeTheDriverRefusesKeepsTheBufferTracked) {
  start_runtime("", "budget:16MiB");
  const CUdeviceptr p = allocate(kMiB);
  std::optional<cuswap::BufferRef> gone = hooks::begin_free(*rt, p);
  ASSERT_TRUE(gone);
  EXPECT_FALSE(rt->buffers.find(p));  // another thread may be given the address now
  hooks::finish_free(*rt, gone, CUDA_ERROR_INVALID_VALUE, 0, cuswap::trace::FreeKind::sync);
  ASSERT_TRUE(rt->buffers.find(p));
  EXPECT_EQ(rt->buffers.find(p)->id, gone->id);

  gone = hooks::begin_free(*rt, p);
  ASSERT_TRUE(gone);
  const CUresult r = rt->allocator->free(p, nullptr, false);
  hooks::finish_free(*rt, gone, r, 0, cuswap::trace::FreeKind::sync);
  EXPECT_CU(r);
  EXPECT_FALSE(rt->buffers.find(p));
  EXPECT_EQ(rt->buffers.size(), 0u);
}

TEST_F(RuntimeTest, TheCountersAtExitNameEveryCallAndTheAllocatorsStats) {
  start_runtime("", "budget:16MiB");
  rt->calls.count(static_cast<size_t>(hooks::HookId::cuMemAlloc_v2));
  rt->calls.count(static_cast<size_t>(hooks::HookId::cuMemAlloc_v2));
  rt->calls.count(static_cast<size_t>(hooks::HookId::cuLaunchKernel));
  (void)allocate(4096);  // below swap_min: from a slab
  const std::vector<cuswap::trace::Counter> counters = hooks::exit_counters(*rt);
  auto value = [&](std::string_view name) -> std::optional<uint64_t> {
    for (const auto& c : counters)
      if (c.name == name) return c.value;
    return std::nullopt;
  };
  EXPECT_EQ(value("cuMemAlloc_v2"), 2u);
  EXPECT_EQ(value("cuLaunchKernel"), 1u);
  EXPECT_EQ(value("cuMemFree_v2"), std::nullopt);  // calls never made are left out
  EXPECT_EQ(value("live_buffers_at_exit"), 1u);
  EXPECT_EQ(value("allocations_small"), 1u);
  EXPECT_EQ(value("out_of_memory"), 0u);
}

TEST_F(RuntimeTest, PassThroughIsLatchedOnceWithOneLine) {
  start_runtime("", "budget:16MiB");
  testing::internal::CaptureStderr();
  rt->latch_passthrough("testing");
  rt->latch_passthrough("testing again");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(rt->passthrough.load());
  EXPECT_NE(err.find("internal failure (testing)"), std::string::npos) << err;
  EXPECT_EQ(err.find("testing again"), std::string::npos) << err;
}

}  // namespace
