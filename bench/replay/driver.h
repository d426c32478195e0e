// The driver entry points the replay uses, found at run time with dlopen:
// the replay links no libcuda, so one binary runs on simcuda (LD_LIBRARY_PATH),
// on a real GPU, and under cuswap (LD_PRELOAD, which answers dlsym with its
// hooks). simcuda's extras and cuswap's exports are looked up by name and may
// be absent.
#pragma once

#include <cuda.h>

#include <string>

#include "tests/simcuda/simcuda.h"

namespace cuswap::bench {

// X(name as cuda.h spells it); the symbol is what the name expands to
// (cuMemAlloc -> cuMemAlloc_v2), the prototype the header's.
#define CUSWAP_REPLAY_DRIVER(X)                                                              \
  X(cuInit)                                                                                  \
  X(cuGetErrorName)                                                                          \
  X(cuDeviceGet)                                                                             \
  X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuModuleLoadData) \
      X(cuModuleGetFunction) X(cuStreamCreate) X(cuStreamSynchronize) X(cuMemAlloc)          \
          X(cuMemAllocAsync) X(cuMemFree) X(cuMemFreeAsync) X(cuMemsetD8) X(cuMemcpyDtoH)    \
              X(cuLaunchKernel) X(cuCtxSynchronize) X(cuMemGetInfo)

struct Driver {
#define CUSWAP_REPLAY_MEMBER(name) decltype(&::name) name = nullptr;
  CUSWAP_REPLAY_DRIVER(CUSWAP_REPLAY_MEMBER)
#undef CUSWAP_REPLAY_MEMBER
  // simcuda's extras (null on a real driver).
  decltype(&::simcuda_register_kernel) simcuda_register_kernel = nullptr;
  decltype(&::simcuda_get_stats) simcuda_get_stats = nullptr;
  decltype(&::simcuda_access) simcuda_access = nullptr;
  decltype(&::simcuda_host_clock_ns) simcuda_host_clock_ns = nullptr;
  decltype(&::simcuda_host_clock_join) simcuda_host_clock_join = nullptr;
  // cuswap's exports (null without libcuswap.so): include/cuswap/cuswap.h.
  void (*cuswap_iteration_begin)() = nullptr;
  const char* (*cuswap_stats_json)() = nullptr;
  void* (*cuswap_torch_alloc)(ssize_t, int, CUstream) = nullptr;
  void (*cuswap_torch_free)(void*, size_t, int, CUstream) = nullptr;

  bool simulated() const {
    return simcuda_get_stats != nullptr;
  }
  const char* error_name(CUresult r) const;
};

// Opens libcuda.so.1 (the one LD_LIBRARY_PATH finds: simcuda's, or the
// system's) and resolves every entry point; false with one line in `error`.
[[nodiscard]] bool open_driver(Driver& out, std::string& error);

}  // namespace cuswap::bench
