// Calls libcuswap.so's PyTorch allocator ABI as PyTorch's
// CUDAPluggableAllocator does: dlopen the library named in argv[1], look up
// cuswap_torch_alloc and cuswap_torch_free, and take every block through
// them, on two streams, with the device's primary context current (as the
// CUDA runtime leaves it). Eight 32 MiB blocks on a 64 MiB simcuda device:
// each is filled by a kernel on its stream, then checked by a kernel and
// read back by a copy, then freed on its stream; then, after a
// synchronisation, eight more in the freed memory. Prints one line per
// figure.
#include <cuda.h>
#include <dlfcn.h>
#include <sys/types.h>

#include <cstdio>
#include <vector>

#include "tests/simcuda/testkit/testkit.h"

namespace {

using Alloc = void* (*)(ssize_t, int, CUstream);
using Free = void (*)(void*, size_t, int, CUstream);

}  // namespace

int main(int argc, char** argv) {
  using namespace simcuda::testkit;
  constexpr size_t kBytes = size_t{32} << 20;
  constexpr int kBlocks = 8;
  if (argc != 2) {
    std::puts("usage: torch_abi LIBCUSWAP");
    return 2;
  }
  CUcontext ctx = nullptr;
  Kernels k;
  CUstream streams[2] = {};
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS || load_kernels(k) != CUDA_SUCCESS ||
      cuStreamCreate(&streams[0], CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
      cuStreamCreate(&streams[1], CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    std::puts("setup failed");
    return 1;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  const auto alloc = lib ? reinterpret_cast<Alloc>(dlsym(lib, "cuswap_torch_alloc")) : nullptr;
  const auto free = lib ? reinterpret_cast<Free>(dlsym(lib, "cuswap_torch_free")) : nullptr;
  if (!alloc || !free) {
    std::printf("no allocator ABI in %s: %s\n", argv[1], dlerror());
    return 1;
  }
  CUdeviceptr counter = 0;
  if (cuMemAlloc(&counter, 8) != CUDA_SUCCESS || cuMemsetD8(counter, 0, 8) != CUDA_SUCCESS) {
    std::puts("counter failed");
    return 1;
  }
  std::printf("zero bytes %s\n", alloc(0, 0, streams[0]) == nullptr ? "null" : "not null");
  free(nullptr, 0, 0, streams[0]);
  int failures = 0;
  size_t wrong = 0;
  std::vector<unsigned char> host(kBytes);
  for (int round = 0; round < 2; ++round) {
    std::vector<void*> blocks;
    for (int i = 0; i < kBlocks; ++i) {
      CUstream s = streams[i % 2];
      void* p = alloc(static_cast<ssize_t>(kBytes), 0, s);
      if (p == nullptr) {
        std::printf("round %d: block %d: null\n", round, i);
        break;
      }
      blocks.push_back(p);
      const auto seed = static_cast<uint32_t>(0x40 + 8 * round + i);  // each block its own words
      failures += launch_fill_words(k, s, reinterpret_cast<CUdeviceptr>(p), kBytes, seed, 1000) !=
                  CUDA_SUCCESS;
    }
    std::printf("round %d: allocated %zu of %d\n", round, blocks.size(), kBlocks);
    for (size_t i = 0; i < blocks.size(); ++i) {
      CUstream s = streams[i % 2];
      const auto p = reinterpret_cast<CUdeviceptr>(blocks[i]);
      const auto seed = static_cast<uint32_t>(0x40 + 8 * round + i);
      failures += launch_check_words(k, s, p, kBytes, seed, counter, 1000) != CUDA_SUCCESS;
      failures += cuMemcpyDtoHAsync(host.data(), p, kBytes, s) != CUDA_SUCCESS;
      failures += cuStreamSynchronize(s) != CUDA_SUCCESS;
      wrong += pattern_mismatches(host.data(), kBytes, seed);
      free(blocks[i], kBytes, 0, s);
    }
    // A step ends synchronised (simcuda frees a stream-ordered free's
    // memory when the free has run, not in stream order).
    failures += cuCtxSynchronize() != CUDA_SUCCESS;
  }
  uint64_t mismatched = 0;
  failures += cuMemcpyDtoH(&mismatched, counter, 8) != CUDA_SUCCESS;
  failures += cuCtxSynchronize() != CUDA_SUCCESS;
  simcuda_stats stats{};
  simcuda_get_stats(&stats);
  std::printf("wrong bytes read back %zu\n", wrong);
  std::printf("wrong bytes seen by kernels %llu\n", static_cast<unsigned long long>(mismatched));
  std::printf("failures %d\n", failures);
  std::printf("hazards %llu\n", static_cast<unsigned long long>(stats.hazards));
  return 0;
}
