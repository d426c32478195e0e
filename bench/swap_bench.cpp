// The swapping allocator on simcuda: the alloc/free fast path (memory reused
// from cached ranges and slabs, no driver call) and the oversubscription
// scenario's moves and virtual time.
#include <benchmark/benchmark.h>
#include <cuda.h>

#include <memory>
#include <vector>

#include "allocator/swap_allocator.h"
#include "tests/simcuda/simcuda.h"
#include "tests/simcuda/testkit/testkit.h"

std::shared_ptr<cuswap::Driver> load_simcuda_driver();

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

struct Session {
  CUcontext ctx = nullptr;
  simcuda::testkit::Kernels kernels;
  std::shared_ptr<cuswap::Driver> driver;
  std::unique_ptr<cuswap::Allocator> allocator;

  explicit Session(const char* conf, uint64_t budget_bytes) {
    if (simcuda_reset(conf) != CUDA_SUCCESS || cuInit(0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
        simcuda::testkit::load_kernels(kernels) != CUDA_SUCCESS)
      return;
    driver = load_simcuda_driver();
    cuswap::AllocatorSettings settings;
    settings.budget_bytes.all = budget_bytes;
    if (driver) allocator = std::make_unique<cuswap::Allocator>(*driver, settings);
  }
  ~Session() {
    allocator.reset();
    (void)simcuda_reset("");
  }
};

void AllocFreeCached(benchmark::State& state) {
  Session s("memory:1GiB", 1024 * kMiB);
  if (!s.allocator) return state.SkipWithError("no simcuda");
  const auto bytes = static_cast<uint64_t>(state.range(0));
  CUdeviceptr p = 0;
  if (s.allocator->allocate(bytes, &p) != CUDA_SUCCESS ||
      s.allocator->free(p, nullptr, false) != CUDA_SUCCESS)
    return state.SkipWithError("allocation failed");
  for (auto _ : state) {
    (void)s.allocator->allocate(bytes, &p);
    benchmark::DoNotOptimize(p);
    (void)s.allocator->free(p, nullptr, false);
  }
}
BENCHMARK(AllocFreeCached)->Arg(4096)->Arg(4 * kMiB)->Arg(64 * kMiB);

// Eight 32 MiB buffers written and checked by kernels on a 64 MiB device:
// what moved and how long it took in virtual time.
void Oversubscription(benchmark::State& state) {
  const bool host_vmm = state.range(0) != 0;
  for (auto _ : state) {
    Session s(host_vmm ? "memory:64MiB,host_vmm:true" : "memory:64MiB,host_vmm:false", 64 * kMiB);
    if (!s.allocator) return state.SkipWithError("no simcuda");
    std::vector<CUdeviceptr> buffers(8);
    auto use = [&](std::vector<uintptr_t> bases, auto&& call) {
      cuswap::UseBuffers u;
      u.bases = bases;
      if (s.allocator->prepare(nullptr, u) != CUDA_SUCCESS) return;
      s.allocator->finish(nullptr, u, call());
    };
    for (size_t i = 0; i < buffers.size(); ++i) {
      (void)s.allocator->allocate(32 * kMiB, &buffers[i]);
      use({buffers[i]}, [&] {
        return simcuda::testkit::launch_fill(s.kernels, nullptr, buffers[i], 32 * kMiB, i, 1000000);
      });
    }
    for (int round = 0; round < 2; ++round)
      for (size_t i = 0; i < buffers.size(); ++i)
        use({buffers[i]}, [&] {
          return simcuda::testkit::launch_fill(s.kernels, nullptr, buffers[i], 32 * kMiB, i + 1,
                                               1000000);
        });
    (void)cuCtxSynchronize();
    simcuda_stats sim{};
    simcuda_get_stats(&sim);
    const cuswap::SwapStats swap = s.allocator->stats();
    state.counters["evictions"] = static_cast<double>(swap.evictions);
    state.counters["prefetches"] = static_cast<double>(swap.prefetches);
    state.counters["virtual_ms"] = static_cast<double>(sim.virtual_ns) / 1e6;
    state.counters["kernel_ms"] = 24.0;  // 24 kernels of 1 ms
    state.counters["peak_MiB"] = static_cast<double>(sim.peak_device_bytes / kMiB);
    state.counters["hazards"] = static_cast<double>(sim.hazards);
  }
}
BENCHMARK(Oversubscription)->Arg(0)->Arg(1)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
