// Uses the device's default memory pool as TensorFlow's cuda_malloc_async
// allocator does: sets its release threshold and reads it back, allocates
// eight 32 MiB buffers from it on one stream (cuMemAllocFromPoolAsync) on a
// 64 MiB simcuda device, writes and checks each, frees them on the stream,
// and reads the pool's reserved and used figures at each step; then resets
// the high-water marks and trims the pool. Prints one line per figure, in
// MiB, with the device memory simcuda has in use.
#include <cuda.h>

#include <cstdio>
#include <vector>

#include "tests/simcuda/testkit/testkit.h"

namespace {

CUmemoryPool pool = nullptr;

unsigned long long mib(cuuint64_t bytes) {
  return static_cast<unsigned long long>(bytes >> 20);
}

void figures(const char* when) {
  cuuint64_t reserved = 0, reserved_high = 0, used = 0, used_high = 0;
  cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved);
  cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &reserved_high);
  cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
  cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &used_high);
  simcuda_stats stats{};
  simcuda_get_stats(&stats);
  std::printf("%s: reserved %llu high %llu, used %llu high %llu, simcuda in use %llu\n", when,
              mib(reserved), mib(reserved_high), mib(used), mib(used_high),
              mib(stats.device_bytes_in_use));
}

}  // namespace

int main() {
  using namespace simcuda::testkit;
  constexpr size_t kBytes = size_t{32} << 20;
  constexpr int kBuffers = 8;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  Kernels k;
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS || load_kernels(k) != CUDA_SUCCESS ||
      cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
      cuDeviceGetDefaultMemPool(&pool, 0) != CUDA_SUCCESS) {
    std::puts("setup failed");
    return 1;
  }
  cuuint64_t threshold = cuuint64_t{48} << 20, read_back = 0;
  cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
  cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &read_back);
  std::printf("release threshold %llu\n", mib(read_back));
  CUdeviceptr counter = 0;
  if (cuMemAlloc(&counter, 8) != CUDA_SUCCESS || cuMemsetD8(counter, 0, 8) != CUDA_SUCCESS) {
    std::puts("counter failed");
    return 1;
  }
  int failures = 0;
  std::vector<CUdeviceptr> buffers;
  for (int i = 0; i < kBuffers; ++i) {
    CUdeviceptr p = 0;
    if (CUresult r = cuMemAllocFromPoolAsync(&p, kBytes, pool, stream); r != CUDA_SUCCESS) {
      std::printf("allocation %d: %s\n", i, error_name(r));
      break;
    }
    buffers.push_back(p);
    failures += launch_fill_words(k, stream, p, kBytes, 0x40 + i, 1000) != CUDA_SUCCESS;
  }
  std::printf("allocated %zu of %d\n", buffers.size(), kBuffers);
  figures("allocated");
  for (size_t i = 0; i < buffers.size(); ++i)
    failures += launch_check_words(k, stream, buffers[i], kBytes, 0x40 + static_cast<uint32_t>(i),
                                   counter, 1000) != CUDA_SUCCESS;
  for (CUdeviceptr p : buffers)
    failures += cuMemFreeAsync(p, stream) != CUDA_SUCCESS;
  failures += cuStreamSynchronize(stream) != CUDA_SUCCESS;
  figures("freed");
  cuuint64_t zero = 0, five = 5;
  failures += cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero) != CUDA_SUCCESS;
  failures += cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero) != CUDA_SUCCESS;
  std::printf("a high-water mark set to 5: %s\n",
              error_name(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &five)));
  figures("reset");
  failures += cuMemPoolTrimTo(pool, 0) != CUDA_SUCCESS;
  figures("trimmed");
  uint64_t mismatched = 0;
  failures += cuMemcpyDtoH(&mismatched, counter, 8) != CUDA_SUCCESS;
  simcuda_stats stats{};
  simcuda_get_stats(&stats);
  std::printf("wrong bytes seen by kernels %llu\n", static_cast<unsigned long long>(mismatched));
  std::printf("failures %d\n", failures);
  std::printf("hazards %llu\n", static_cast<unsigned long long>(stats.hazards));
  return 0;
}
