// A small CUDA workload for the interposition tests: allocate, launch, copy,
// set, free, a few calls that must fail, and the application's own virtual
// memory calls. Every driver call goes through a table of function pointers,
// so the same workload runs whether the program found the driver by direct
// link, dlopen + dlsym, or cuGetProcAddress. It prints a transcript of every
// call's result and of the outputs that do not depend on addresses; with and
// without cuswap the transcripts must be identical.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "tests/simcuda/testkit/testkit.h"

namespace workload {

// X(name as cuda.h spells it, exported symbol, pointer type)
#define WORKLOAD_FUNCTIONS(X)                                                                      \
  X(cuInit, "cuInit", CUresult (*)(unsigned))                                                      \
  X(cuDeviceGet, "cuDeviceGet", CUresult (*)(CUdevice*, int))                                      \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult (*)(CUcontext*, CUdevice))      \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult (*)(CUcontext))                                   \
  X(cuMemGetInfo, "cuMemGetInfo_v2", CUresult (*)(size_t*, size_t*))                               \
  X(cuMemAlloc, "cuMemAlloc_v2", CUresult (*)(CUdeviceptr*, size_t))                               \
  X(cuMemAllocPitch, "cuMemAllocPitch_v2",                                                         \
    CUresult (*)(CUdeviceptr*, size_t*, size_t, size_t, unsigned))                                 \
  X(cuMemAllocAsync, "cuMemAllocAsync", CUresult (*)(CUdeviceptr*, size_t, CUstream))              \
  X(cuMemFree, "cuMemFree_v2", CUresult (*)(CUdeviceptr))                                          \
  X(cuMemFreeAsync, "cuMemFreeAsync", CUresult (*)(CUdeviceptr, CUstream))                         \
  X(cuStreamCreate, "cuStreamCreate", CUresult (*)(CUstream*, unsigned))                           \
  X(cuStreamSynchronize, "cuStreamSynchronize", CUresult (*)(CUstream))                            \
  X(cuModuleLoadData, "cuModuleLoadData", CUresult (*)(CUmodule*, const void*))                    \
  X(cuModuleGetFunction, "cuModuleGetFunction", CUresult (*)(CUfunction*, CUmodule, const char*))  \
  X(cuLaunchKernel, "cuLaunchKernel",                                                              \
    CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, \
                 CUstream, void**, void**))                                                        \
  X(cuLaunchKernelEx, "cuLaunchKernelEx",                                                          \
    CUresult (*)(const CUlaunchConfig*, CUfunction, void**, void**))                               \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", CUresult (*)(CUdeviceptr, const void*, size_t))               \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", CUresult (*)(void*, CUdeviceptr, size_t))                     \
  X(cuMemcpyDtoD, "cuMemcpyDtoD_v2", CUresult (*)(CUdeviceptr, CUdeviceptr, size_t))               \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", CUresult (*)(void*, CUdeviceptr, size_t, CUstream)) \
  X(cuMemcpy2D, "cuMemcpy2D_v2", CUresult (*)(const CUDA_MEMCPY2D*))                               \
  X(cuMemsetD8Async, "cuMemsetD8Async",                                                            \
    CUresult (*)(CUdeviceptr, unsigned char, size_t, CUstream))                                    \
  X(cuMemsetD32, "cuMemsetD32_v2", CUresult (*)(CUdeviceptr, unsigned, size_t))                    \
  X(cuMemAddressReserve, "cuMemAddressReserve",                                                    \
    CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long))                   \
  X(cuMemCreate, "cuMemCreate",                                                                    \
    CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,                \
                 unsigned long long))                                                              \
  X(cuMemMap, "cuMemMap",                                                                          \
    CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long))   \
  X(cuMemSetAccess, "cuMemSetAccess",                                                              \
    CUresult (*)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t))                             \
  X(cuMemUnmap, "cuMemUnmap", CUresult (*)(CUdeviceptr, size_t))                                   \
  X(cuMemRelease, "cuMemRelease", CUresult (*)(CUmemGenericAllocationHandle))                      \
  X(cuMemAddressFree, "cuMemAddressFree", CUresult (*)(CUdeviceptr, size_t))                       \
  X(cuGetErrorName, "cuGetErrorName", CUresult (*)(CUresult, const char**))

template <typename T>
using Same = T;  // lets a function pointer type stand before a name

struct Api {
#define WORKLOAD_MEMBER(name, exported, type) Same<type> name = nullptr;
  WORKLOAD_FUNCTIONS(WORKLOAD_MEMBER)
#undef WORKLOAD_MEMBER
  void (*iteration_begin)() = nullptr;  // cuswap_iteration_begin, when cuswap is loaded
};

// Fills `api` through `lookup(base_name, exported_name)`; names the first
// missing one.
template <typename Lookup>
bool fill(Api& api, Lookup lookup) {
#define WORKLOAD_FILL(name, exported, type)                   \
  api.name = reinterpret_cast<type>(lookup(#name, exported)); \
  if (!api.name) {                                            \
    std::fprintf(stderr, "workload: %s not found\n", #name);  \
    return false;                                             \
  }
  WORKLOAD_FUNCTIONS(WORKLOAD_FILL)
#undef WORKLOAD_FILL
  return true;
}

// Fills `api` with the symbols the program is linked against (direct link).
#define WORKLOAD_DIRECT(name, exported, type) api.name = &name;

// Runs the workload; returns the process exit code (0: every check passed).
int run(const Api& api, bool per_thread_stream = false);

}  // namespace workload
