// Eight threads, each with its own streams, allocating, launching, copying
// and freeing at once. Prints the number of each kind of call made, which
// the test compares with the trace.
#include <cuda.h>

#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "tests/simcuda/testkit/testkit.h"

namespace {

constexpr int kThreads = 8, kRounds = 40, kStreams = 3;
std::atomic<int> failures{0};

void expect(CUresult r) {
  if (r != CUDA_SUCCESS) failures.fetch_add(1);
}

void worker(CUcontext ctx, const simcuda::testkit::Kernels& k, int id) {
  expect(cuCtxSetCurrent(ctx));
  CUstream streams[kStreams];
  for (CUstream& s : streams)
    expect(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  std::vector<unsigned char> host(64 * 1024);
  for (int round = 0; round < kRounds; ++round) {
    CUstream s = streams[round % kStreams];
    CUdeviceptr a = 0, b = 0;
    expect(cuMemAlloc(&a, host.size()));
    expect(cuMemAllocAsync(&b, host.size(), s));
    // Each thread and round its own words, so that bytes from another
    // thread's buffer, or at a wrong offset, show.
    const auto seed = static_cast<uint32_t>(1000 * id + round);
    expect(simcuda::testkit::launch_fill_words(k, s, a, host.size(), seed));
    expect(simcuda::testkit::launch_copy(k, s, b, a, host.size()));
    expect(cuMemcpyDtoHAsync(host.data(), b, host.size(), s));
    expect(cuStreamSynchronize(s));
    if (simcuda::testkit::pattern_mismatches(host.data(), host.size(), seed) != 0)
      failures.fetch_add(1);
    expect(cuMemFreeAsync(b, s));
    expect(cuStreamSynchronize(s));
    expect(cuMemFree(a));
  }
  for (CUstream s : streams)
    expect(cuStreamDestroy(s));
}

}  // namespace

int main() {
  CUcontext ctx = nullptr;
  simcuda::testkit::Kernels k;
  expect(cuInit(0));
  expect(cuDevicePrimaryCtxRetain(&ctx, 0));
  expect(cuCtxSetCurrent(ctx));
  expect(simcuda::testkit::load_kernels(k));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back(worker, ctx, std::cref(k), i + 1);
  for (std::thread& t : threads)
    t.join();
  int n = kThreads * kRounds;
  std::printf("allocs %d frees %d launches %d copies %d failures %d\n", 2 * n, 2 * n, 2 * n, n,
              failures.load());
  return failures.load() == 0 ? 0 : 1;
}
