// A shared library holding the pinned host stash, and with it the private
// jemalloc, for malloc_test: whatever links the stash must leave the
// process's malloc alone, and its own malloc and operator new must reach the
// process's. The functions below are what malloc_check calls across the
// library boundary.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "allocator/host_stash.h"

#define PROBE_API extern "C" __attribute__((visibility("default")))

// The library's own malloc, free, operator new and delete: they must be the
// process's, so that memory crosses the boundary in both directions.
PROBE_API void* malloc_probe_malloc(size_t bytes) {
  return std::malloc(bytes);
}
PROBE_API void malloc_probe_free(void* p) {
  std::free(p);
}
PROBE_API void* malloc_probe_new(size_t bytes) {
  return ::operator new(bytes);
}
PROBE_API void malloc_probe_delete(void* p) {
  ::operator delete(p);
}

// A stash on the driver found as libcuda.so.1: 0 when 3 MiB of pinned memory
// were allocated, written, read back and released.
PROBE_API int malloc_probe_stash() {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) return 1;
  cuswap::Driver driver;
  if (driver.load(handle, dlsym) == 0) return 2;
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (driver.cuInit(0) != CUDA_SUCCESS || driver.cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      driver.cuDevicePrimaryCtxRetain(&context, device) != CUDA_SUCCESS)
    return 3;
  std::string error;
  auto stash = cuswap::HostStash::create(driver, context, error);
  if (!stash) return 4;
  constexpr size_t kBytes = 3u << 20;
  auto* p = static_cast<unsigned char*>(stash->allocate(kBytes));
  if (!p) return 5;
  std::memset(p, 0xa5, kBytes);
  for (size_t i = 0; i < kBytes; i += 4093)
    if (p[i] != 0xa5) return 6;
  bool accounted = stash->live_bytes() >= kBytes && stash->pinned_bytes() >= kBytes;
  stash->release(p);
  stash.reset();
  return accounted ? 0 : 7;
}
