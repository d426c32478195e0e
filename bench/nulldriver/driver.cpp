// nulldriver: the functions that must answer something. Allocations are
// addresses handed out by a bump pointer, with no memory behind them; kernels
// have four 8-byte parameters. `nulldriver_cuLaunchKernel` is the launch
// without any interposer in front of it, for the benchmark's baseline.
#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "allocator/driver_api.h"

namespace {
std::atomic<CUdeviceptr> g_next{0x7f0000000000ull};
}

extern "C" {

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  *count = 1;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int) {
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice) {
  std::strncpy(name, "nulldriver", static_cast<size_t>(len));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t* bytes, CUdevice) {
  *bytes = size_t{80} << 30;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  *dptr = g_next.fetch_add((bytesize + 511) / 512 * 512);
  return CUDA_SUCCESS;
}

// Enough of a context, streams, events and virtual memory for cuswap's
// allocator to own buffers under a budget (hook_bench's budget mode):
// handles are counters, address space a second bump pointer.
CUresult CUDAAPI cuCtxGetCurrent(CUcontext* context) {
  *context = reinterpret_cast<CUcontext>(0x10);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned) {
  static std::atomic<uintptr_t> next{0x100};
  *stream = reinterpret_cast<CUstream>(next.fetch_add(1));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent* event, unsigned) {
  static std::atomic<uintptr_t> next{0x1000};
  *event = reinterpret_cast<CUevent>(next.fetch_add(1));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp*,
                                               CUmemAllocationGranularity_flags) {
  *granularity = size_t{2} << 20;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t,
                             const CUmemAllocationProp*, unsigned long long) {
  static std::atomic<CUmemGenericAllocationHandle> next{1};
  *handle = next.fetch_add(1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t, CUdeviceptr,
                                     unsigned long long) {
  static std::atomic<CUdeviceptr> next{0x200000000000ull};
  constexpr size_t kPage = size_t{2} << 20;
  *ptr = next.fetch_add((size + kPage - 1) / kPage * kPage);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  *free_bytes = *total_bytes = size_t{80} << 30;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetParamInfo(CUfunction, size_t index, size_t* offset, size_t* size) {
  if (index >= 4) return CUDA_ERROR_INVALID_VALUE;
  *offset = index * 8;
  *size = 8;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetName(const char** name, CUfunction) {
  *name = "null_kernel";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult, const char** text) {
  *text = "CUDA_ERROR";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int, cuuint64_t,
                                     CUdriverProcAddressQueryResult* status) {
  *pfn = dlsym(RTLD_DEFAULT, symbol);
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                unsigned, unsigned, CUstream, void**, void**) {
  return CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult nulldriver_cuLaunchKernel(
    CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
    unsigned shared, CUstream stream, void** params, void** extra)
    __attribute__((alias("cuLaunchKernel")));

}  // extern "C"
