// Allocates more device memory than the device has, through the plain
// driver API, and checks every byte: eight 32 MiB buffers on a 64 MiB
// simcuda device. Without cuswap the third allocation fails; with a budget
// every buffer is allocated, written by a kernel and read back by a kernel
// and by a copy. Each 8-byte word of each buffer holds its own value
// (word_pattern), so bytes brought back to a wrong offset or into another
// buffer are counted. Prints one line per figure. An optional argument sets every
// kernel's virtual duration in ns (default 1000).
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tests/simcuda/testkit/testkit.h"

int main(int argc, char** argv) {
  using namespace simcuda::testkit;
  const uint64_t kernel_ns = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000;
  constexpr size_t kBytes = size_t{32} << 20;
  constexpr int kBuffers = 8;
  CUcontext ctx = nullptr;
  Kernels k;
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS || load_kernels(k) != CUDA_SUCCESS) {
    std::puts("setup failed");
    return 1;
  }
  size_t free_bytes = 0, total_bytes = 0;
  cuMemGetInfo(&free_bytes, &total_bytes);
  std::printf("total %zu MiB\n", total_bytes >> 20);
  CUdeviceptr counter = 0;
  if (cuMemAlloc(&counter, 8) != CUDA_SUCCESS || cuMemsetD8(counter, 0, 8) != CUDA_SUCCESS) {
    std::puts("counter failed");
    return 1;
  }
  std::vector<CUdeviceptr> buffers;
  for (int i = 0; i < kBuffers; ++i) {
    CUdeviceptr p = 0;
    CUresult r = cuMemAlloc(&p, kBytes);
    if (r != CUDA_SUCCESS) {
      std::printf("allocation %d: %s\n", i, error_name(r));
      break;
    }
    buffers.push_back(p);
    if (launch_fill_words(k, nullptr, p, kBytes, 0x40 + i, kernel_ns) != CUDA_SUCCESS)
      std::puts("fill failed");
  }
  std::printf("allocated %zu of %d\n", buffers.size(), kBuffers);
  int failures = 0;
  for (size_t i = 0; i < buffers.size(); ++i)
    failures += launch_check_words(k, nullptr, buffers[i], kBytes, static_cast<uint32_t>(0x40 + i),
                                   counter, kernel_ns) != CUDA_SUCCESS;
  std::vector<unsigned char> host(kBytes);
  size_t wrong = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    failures += cuMemcpyDtoH(host.data(), buffers[i], kBytes) != CUDA_SUCCESS;
    wrong += pattern_mismatches(host.data(), kBytes, static_cast<uint32_t>(0x40 + i));
  }
  uint64_t mismatched = 0;
  failures += cuMemcpyDtoH(&mismatched, counter, 8) != CUDA_SUCCESS;
  for (CUdeviceptr p : buffers)
    failures += cuMemFree(p) != CUDA_SUCCESS;
  failures += cuCtxSynchronize() != CUDA_SUCCESS;
  simcuda_stats stats{};
  simcuda_get_stats(&stats);
  std::printf("wrong bytes read back %zu\n", wrong);
  std::printf("wrong bytes seen by kernels %llu\n", static_cast<unsigned long long>(mismatched));
  std::printf("failures %d\n", failures);
  std::printf("hazards %llu\n", static_cast<unsigned long long>(stats.hazards));
  std::printf("peak device MiB %llu\n",
              static_cast<unsigned long long>(stats.peak_device_bytes >> 20));
  return 0;
}
