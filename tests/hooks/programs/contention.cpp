// Threads competing for a tight budget: eight threads, each with its own
// stream, twenty rounds each of two 256 KiB buffers (each its own page with
// swap_min below their size), a kernel filling the first, one copying it
// into the second (reading both), a kernel checking the second, and both
// freed. Every launch fits by itself on a budget of three pages; they only
// compete. Prints the failed calls and the bytes the checks found wrong.
#include <cuda.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "tests/simcuda/testkit/testkit.h"

namespace {

constexpr int kThreads = 8, kRounds = 20;
constexpr uint64_t kBytes = 256 * 1024;
std::atomic<int> failures{0};

void expect(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  if (failures.fetch_add(1) < 5)
    std::printf("failed: %s: %s\n", what, simcuda::testkit::error_name(r));
}

std::atomic<uint64_t> mismatched{0};

void worker(CUcontext ctx, const simcuda::testkit::Kernels& k, int id) {
  using namespace simcuda::testkit;
  expect(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  CUstream s = nullptr;
  expect(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUdeviceptr counter = 0;  // this thread's: the checks of two threads would race on one
  expect(cuMemAlloc(&counter, 8), "cuMemAlloc");
  expect(cuMemsetD8Async(counter, 0, 8, s), "cuMemsetD8Async");
  for (int round = 0; round < kRounds; ++round) {
    const auto seed = static_cast<uint32_t>(0x10000 * id + round + 1);  // its own words
    CUdeviceptr a = 0, b = 0;
    expect(cuMemAlloc(&a, kBytes), "cuMemAlloc");
    expect(cuMemAlloc(&b, kBytes), "cuMemAlloc");
    if (a && b) {
      expect(launch_fill_words(k, s, a, kBytes, seed), "fill");
      expect(launch_copy(k, s, b, a, kBytes), "copy");
      expect(launch_check_words(k, s, b, kBytes, seed, counter), "check");
      expect(cuStreamSynchronize(s), "cuStreamSynchronize");
    }
    if (a) expect(cuMemFree(a), "cuMemFree");
    if (b) expect(cuMemFree(b), "cuMemFree");
  }
  uint64_t wrong = 0;
  expect(cuMemcpyDtoHAsync(&wrong, counter, 8, s), "cuMemcpyDtoHAsync");
  expect(cuStreamSynchronize(s), "cuStreamSynchronize");
  mismatched += wrong;
  expect(cuMemFree(counter), "cuMemFree");
  expect(cuStreamDestroy(s), "cuStreamDestroy");
}

}  // namespace

int main() {
  using namespace simcuda::testkit;
  CUcontext ctx = nullptr;
  Kernels k;
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS || load_kernels(k) != CUDA_SUCCESS) {
    std::puts("setup failed");
    return 1;
  }
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id)
    threads.emplace_back(worker, ctx, std::cref(k), id);
  for (std::thread& t : threads)
    t.join();
  simcuda_stats stats{};
  simcuda_get_stats(&stats);
  std::printf("failed calls %d\n", failures.load());
  std::printf("wrong bytes seen by kernels %llu\n",
              static_cast<unsigned long long>(mismatched.load()));
  std::printf("hazards %llu\n", static_cast<unsigned long long>(stats.hazards));
  std::printf("peak device MiB %llu\n",
              static_cast<unsigned long long>(stats.peak_device_bytes >> 20));
  return 0;
}
