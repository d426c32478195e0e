// What the driver refuses, under cuswap too: on a 64 MiB simcuda device,
// copies and sets that run past the end of a 1 MiB buffer (by one byte, or
// a read that starts inside and ends outside), beside ones that fit; then
// the application's own cuMemCreate of 48 MiB after a freed 48 MiB buffer,
// whose memory cuswap has cached. Prints one line per call, with its result.
#include <cuda.h>

#include <cstdio>
#include <vector>

#include "tests/simcuda/testkit/testkit.h"

namespace {

void line(const char* what, CUresult r) {
  std::printf("%s: %s\n", what, simcuda::testkit::error_name(r));
}

}  // namespace

int main() {
  constexpr size_t kMiB = size_t{1} << 20;
  CUcontext ctx = nullptr;
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
    std::puts("setup failed");
    return 1;
  }
  CUdeviceptr a = 0;
  if (cuMemAlloc(&a, kMiB) != CUDA_SUCCESS) {
    std::puts("allocation failed");
    return 1;
  }
  std::vector<unsigned char> host(kMiB + 8, 0x5a);
  line("write 1 MiB", cuMemcpyHtoD(a, host.data(), kMiB));
  line("write 1 MiB + 1", cuMemcpyHtoD(a, host.data(), kMiB + 1));
  line("read 8 bytes at 1 MiB - 8", cuMemcpyDtoH(host.data(), a + kMiB - 8, 8));
  line("read 8 bytes at 1 MiB - 4", cuMemcpyDtoH(host.data(), a + kMiB - 4, 8));
  line("set 1 MiB + 1", cuMemsetD8(a, 0, kMiB + 1));
  line("set 1 MiB / 4 words", cuMemsetD32(a, 0, kMiB / 4));
  line("free", cuMemFree(a));

  CUdeviceptr b = 0;
  line("allocate 48 MiB", cuMemAlloc(&b, 48 * kMiB));
  line("free 48 MiB", cuMemFree(b));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  CUmemGenericAllocationHandle handle = 0;
  const CUresult created = cuMemCreate(&handle, 48 * kMiB, &prop, 0);
  line("own cuMemCreate of 48 MiB", created);
  if (created == CUDA_SUCCESS) line("own cuMemRelease", cuMemRelease(handle));
  return 0;
}
