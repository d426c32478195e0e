// simcuda: cuGetProcAddress and error names.
//
// The lookup table lists, for every driver function simcuda implements, each
// ABI version the toolkit's cudaTypedefs.h knows (PFN_<name>_v<version>,
// with its _ptsz/_ptds flavour) and the function of that exact ABI, or
// nullptr where simcuda does not implement that version. A request gets the
// highest version not above the requested one; when that version is not
// implemented the answer is CUDA_ERROR_NOT_FOUND rather than a function of
// another ABI. tests/simcuda/proc_address_test.cpp checks the table against
// the installed cudaTypedefs.h.
//
// Error names are generated at build time from the installed cuda.h.
#include <cstring>
#include <string>
#include <string_view>

#include "tests/simcuda/sim.h"

extern "C" {
CUresult CUDAAPI cuGetErrorName(CUresult error, const char** pStr);
CUresult CUDAAPI cuGetErrorString(CUresult error, const char** pStr);
}

namespace simcuda {
namespace {

enum class Flavor : uint8_t { legacy, per_thread };

struct Entry {
  const char* base;
  int version;
  Flavor flavor;
  void* fn;
};

template <typename F>
constexpr Entry entry(const char* base, int version, Flavor flavor, F* fn) {
  return {base, version, flavor, reinterpret_cast<void*>(fn)};
}

// clang-format off
#define E(base, version, flavor, fn) entry(base, version, flavor, fn)
const Entry kTable[] = {
    E("cuCtxCreate", 11040, Flavor::legacy, &cuCtxCreate_v3),
    E("cuCtxCreate", 12050, Flavor::legacy, &cuCtxCreate_v4),
    {"cuCtxCreate", 2000, Flavor::legacy, nullptr},
    E("cuCtxCreate", 3020, Flavor::legacy, &cuCtxCreate_v2),
    {"cuCtxDestroy", 2000, Flavor::legacy, nullptr},
    E("cuCtxDestroy", 4000, Flavor::legacy, &cuCtxDestroy_v2),
    E("cuCtxGetCurrent", 4000, Flavor::legacy, &cuCtxGetCurrent),
    {"cuCtxGetDevice", 13000, Flavor::legacy, nullptr},
    E("cuCtxGetDevice", 2000, Flavor::legacy, &cuCtxGetDevice),
    {"cuCtxPopCurrent", 2000, Flavor::legacy, nullptr},
    E("cuCtxPopCurrent", 4000, Flavor::legacy, &cuCtxPopCurrent_v2),
    {"cuCtxPushCurrent", 2000, Flavor::legacy, nullptr},
    E("cuCtxPushCurrent", 4000, Flavor::legacy, &cuCtxPushCurrent_v2),
    E("cuCtxSetCurrent", 4000, Flavor::legacy, &cuCtxSetCurrent),
    {"cuCtxSynchronize", 13000, Flavor::legacy, nullptr},
    E("cuCtxSynchronize", 2000, Flavor::legacy, &cuCtxSynchronize),
    E("cuDeviceGet", 2000, Flavor::legacy, &cuDeviceGet),
    E("cuDeviceGetAttribute", 2000, Flavor::legacy, &cuDeviceGetAttribute),
    E("cuDeviceGetCount", 2000, Flavor::legacy, &cuDeviceGetCount),
    E("cuDeviceGetDefaultMemPool", 11020, Flavor::legacy, &cuDeviceGetDefaultMemPool),
    E("cuDeviceGetMemPool", 11020, Flavor::legacy, &cuDeviceGetMemPool),
    E("cuDeviceGetName", 2000, Flavor::legacy, &cuDeviceGetName),
    E("cuDevicePrimaryCtxGetState", 7000, Flavor::legacy, &cuDevicePrimaryCtxGetState),
    E("cuDevicePrimaryCtxRelease", 11000, Flavor::legacy, &cuDevicePrimaryCtxRelease_v2),
    {"cuDevicePrimaryCtxRelease", 7000, Flavor::legacy, nullptr},
    E("cuDevicePrimaryCtxReset", 11000, Flavor::legacy, &cuDevicePrimaryCtxReset_v2),
    {"cuDevicePrimaryCtxReset", 7000, Flavor::legacy, nullptr},
    E("cuDevicePrimaryCtxRetain", 7000, Flavor::legacy, &cuDevicePrimaryCtxRetain),
    {"cuDeviceTotalMem", 2000, Flavor::legacy, nullptr},
    E("cuDeviceTotalMem", 3020, Flavor::legacy, &cuDeviceTotalMem_v2),
    E("cuDriverGetVersion", 2020, Flavor::legacy, &cuDriverGetVersion),
    E("cuEventCreate", 2000, Flavor::legacy, &cuEventCreate),
    {"cuEventDestroy", 2000, Flavor::legacy, nullptr},
    E("cuEventDestroy", 4000, Flavor::legacy, &cuEventDestroy_v2),
    E("cuEventElapsedTime", 12080, Flavor::legacy, &cuEventElapsedTime_v2),
    E("cuEventElapsedTime", 2000, Flavor::legacy, &cuEventElapsedTime),
    E("cuEventQuery", 2000, Flavor::legacy, &cuEventQuery),
    E("cuEventRecord", 2000, Flavor::legacy, &cuEventRecord),
    E("cuEventRecord", 7000, Flavor::per_thread, &cuEventRecord_ptsz),
    E("cuEventRecordWithFlags", 11010, Flavor::legacy, &cuEventRecordWithFlags),
    E("cuEventRecordWithFlags", 11010, Flavor::per_thread, &cuEventRecordWithFlags_ptsz),
    E("cuEventSynchronize", 2000, Flavor::legacy, &cuEventSynchronize),
    E("cuFuncGetName", 12030, Flavor::legacy, &cuFuncGetName),
    E("cuFuncGetParamInfo", 12040, Flavor::legacy, &cuFuncGetParamInfo),
    E("cuGetErrorName", 6000, Flavor::legacy, &cuGetErrorName),
    E("cuGetErrorString", 6000, Flavor::legacy, &cuGetErrorString),
    E("cuGetExportTable", 3000, Flavor::legacy, &cuGetExportTable),
    E("cuGetProcAddress", 11030, Flavor::legacy, &cuGetProcAddress),
    E("cuGetProcAddress", 12000, Flavor::legacy, &cuGetProcAddress_v2),
    E("cuInit", 2000, Flavor::legacy, &cuInit),
    E("cuLaunchCooperativeKernel", 9000, Flavor::legacy, &cuLaunchCooperativeKernel),
    E("cuLaunchCooperativeKernel", 9000, Flavor::per_thread, &cuLaunchCooperativeKernel_ptsz),
    E("cuLaunchKernel", 4000, Flavor::legacy, &cuLaunchKernel),
    E("cuLaunchKernel", 7000, Flavor::per_thread, &cuLaunchKernel_ptsz),
    E("cuLaunchKernelEx", 11060, Flavor::legacy, &cuLaunchKernelEx),
    E("cuLaunchKernelEx", 11060, Flavor::per_thread, &cuLaunchKernelEx_ptsz),
    E("cuMemAddressFree", 10020, Flavor::legacy, &cuMemAddressFree),
    E("cuMemAddressReserve", 10020, Flavor::legacy, &cuMemAddressReserve),
    {"cuMemAlloc", 2000, Flavor::legacy, nullptr},
    E("cuMemAlloc", 3020, Flavor::legacy, &cuMemAlloc_v2),
    E("cuMemAllocAsync", 11020, Flavor::legacy, &cuMemAllocAsync),
    E("cuMemAllocAsync", 11020, Flavor::per_thread, &cuMemAllocAsync_ptsz),
    E("cuMemAllocFromPoolAsync", 11020, Flavor::legacy, &cuMemAllocFromPoolAsync),
    E("cuMemAllocFromPoolAsync", 11020, Flavor::per_thread, &cuMemAllocFromPoolAsync_ptsz),
    {"cuMemAllocHost", 2000, Flavor::legacy, nullptr},
    E("cuMemAllocHost", 3020, Flavor::legacy, &cuMemAllocHost_v2),
    {"cuMemAllocPitch", 2000, Flavor::legacy, nullptr},
    E("cuMemAllocPitch", 3020, Flavor::legacy, &cuMemAllocPitch_v2),
    E("cuMemCreate", 10020, Flavor::legacy, &cuMemCreate),
    {"cuMemFree", 2000, Flavor::legacy, nullptr},
    E("cuMemFree", 3020, Flavor::legacy, &cuMemFree_v2),
    E("cuMemFreeAsync", 11020, Flavor::legacy, &cuMemFreeAsync),
    E("cuMemFreeAsync", 11020, Flavor::per_thread, &cuMemFreeAsync_ptsz),
    E("cuMemFreeHost", 2000, Flavor::legacy, &cuMemFreeHost),
    E("cuMemGetAccess", 10020, Flavor::legacy, &cuMemGetAccess),
    {"cuMemGetAddressRange", 2000, Flavor::legacy, nullptr},
    E("cuMemGetAddressRange", 3020, Flavor::legacy, &cuMemGetAddressRange_v2),
    E("cuMemGetAllocationGranularity", 10020, Flavor::legacy, &cuMemGetAllocationGranularity),
    {"cuMemGetInfo", 2000, Flavor::legacy, nullptr},
    E("cuMemGetInfo", 3020, Flavor::legacy, &cuMemGetInfo_v2),
    E("cuMemHostAlloc", 2020, Flavor::legacy, &cuMemHostAlloc),
    E("cuMemMap", 10020, Flavor::legacy, &cuMemMap),
    E("cuMemPoolGetAttribute", 11020, Flavor::legacy, &cuMemPoolGetAttribute),
    E("cuMemPoolSetAttribute", 11020, Flavor::legacy, &cuMemPoolSetAttribute),
    E("cuMemPoolTrimTo", 11020, Flavor::legacy, &cuMemPoolTrimTo),
    E("cuMemRelease", 10020, Flavor::legacy, &cuMemRelease),
    E("cuMemSetAccess", 10020, Flavor::legacy, &cuMemSetAccess),
    E("cuMemUnmap", 10020, Flavor::legacy, &cuMemUnmap),
    E("cuMemcpy", 4000, Flavor::legacy, &cuMemcpy),
    E("cuMemcpy", 7000, Flavor::per_thread, &cuMemcpy_ptds),
    {"cuMemcpy2D", 2000, Flavor::legacy, nullptr},
    E("cuMemcpy2D", 3020, Flavor::legacy, &cuMemcpy2D_v2),
    E("cuMemcpy2D", 7000, Flavor::per_thread, &cuMemcpy2D_v2_ptds),
    {"cuMemcpy2DAsync", 2000, Flavor::legacy, nullptr},
    E("cuMemcpy2DAsync", 3020, Flavor::legacy, &cuMemcpy2DAsync_v2),
    E("cuMemcpy2DAsync", 7000, Flavor::per_thread, &cuMemcpy2DAsync_v2_ptsz),
    {"cuMemcpy2DUnaligned", 2000, Flavor::legacy, nullptr},
    E("cuMemcpy2DUnaligned", 3020, Flavor::legacy, &cuMemcpy2DUnaligned_v2),
    E("cuMemcpy2DUnaligned", 7000, Flavor::per_thread, &cuMemcpy2DUnaligned_v2_ptds),
    {"cuMemcpy3D", 2000, Flavor::legacy, nullptr},
    E("cuMemcpy3D", 3020, Flavor::legacy, &cuMemcpy3D_v2),
    E("cuMemcpy3D", 7000, Flavor::per_thread, &cuMemcpy3D_v2_ptds),
    {"cuMemcpy3DAsync", 2000, Flavor::legacy, nullptr},
    E("cuMemcpy3DAsync", 3020, Flavor::legacy, &cuMemcpy3DAsync_v2),
    E("cuMemcpy3DAsync", 7000, Flavor::per_thread, &cuMemcpy3DAsync_v2_ptsz),
    E("cuMemcpyAsync", 4000, Flavor::legacy, &cuMemcpyAsync),
    E("cuMemcpyAsync", 7000, Flavor::per_thread, &cuMemcpyAsync_ptsz),
    {"cuMemcpyDtoD", 2000, Flavor::legacy, nullptr},
    E("cuMemcpyDtoD", 3020, Flavor::legacy, &cuMemcpyDtoD_v2),
    E("cuMemcpyDtoD", 7000, Flavor::per_thread, &cuMemcpyDtoD_v2_ptds),
    {"cuMemcpyDtoDAsync", 3000, Flavor::legacy, nullptr},
    E("cuMemcpyDtoDAsync", 3020, Flavor::legacy, &cuMemcpyDtoDAsync_v2),
    E("cuMemcpyDtoDAsync", 7000, Flavor::per_thread, &cuMemcpyDtoDAsync_v2_ptsz),
    {"cuMemcpyDtoH", 2000, Flavor::legacy, nullptr},
    E("cuMemcpyDtoH", 3020, Flavor::legacy, &cuMemcpyDtoH_v2),
    E("cuMemcpyDtoH", 7000, Flavor::per_thread, &cuMemcpyDtoH_v2_ptds),
    {"cuMemcpyDtoHAsync", 2000, Flavor::legacy, nullptr},
    E("cuMemcpyDtoHAsync", 3020, Flavor::legacy, &cuMemcpyDtoHAsync_v2),
    E("cuMemcpyDtoHAsync", 7000, Flavor::per_thread, &cuMemcpyDtoHAsync_v2_ptsz),
    {"cuMemcpyHtoD", 2000, Flavor::legacy, nullptr},
    E("cuMemcpyHtoD", 3020, Flavor::legacy, &cuMemcpyHtoD_v2),
    E("cuMemcpyHtoD", 7000, Flavor::per_thread, &cuMemcpyHtoD_v2_ptds),
    {"cuMemcpyHtoDAsync", 2000, Flavor::legacy, nullptr},
    E("cuMemcpyHtoDAsync", 3020, Flavor::legacy, &cuMemcpyHtoDAsync_v2),
    E("cuMemcpyHtoDAsync", 7000, Flavor::per_thread, &cuMemcpyHtoDAsync_v2_ptsz),
    E("cuMemcpyPeer", 4000, Flavor::legacy, &cuMemcpyPeer),
    E("cuMemcpyPeer", 7000, Flavor::per_thread, &cuMemcpyPeer_ptds),
    E("cuMemcpyPeerAsync", 4000, Flavor::legacy, &cuMemcpyPeerAsync),
    E("cuMemcpyPeerAsync", 7000, Flavor::per_thread, &cuMemcpyPeerAsync_ptsz),
    {"cuMemsetD16", 2000, Flavor::legacy, nullptr},
    E("cuMemsetD16", 3020, Flavor::legacy, &cuMemsetD16_v2),
    E("cuMemsetD16", 7000, Flavor::per_thread, &cuMemsetD16_v2_ptds),
    E("cuMemsetD16Async", 3020, Flavor::legacy, &cuMemsetD16Async),
    E("cuMemsetD16Async", 7000, Flavor::per_thread, &cuMemsetD16Async_ptsz),
    {"cuMemsetD2D16", 2000, Flavor::legacy, nullptr},
    E("cuMemsetD2D16", 3020, Flavor::legacy, &cuMemsetD2D16_v2),
    E("cuMemsetD2D16", 7000, Flavor::per_thread, &cuMemsetD2D16_v2_ptds),
    E("cuMemsetD2D16Async", 3020, Flavor::legacy, &cuMemsetD2D16Async),
    E("cuMemsetD2D16Async", 7000, Flavor::per_thread, &cuMemsetD2D16Async_ptsz),
    {"cuMemsetD2D32", 2000, Flavor::legacy, nullptr},
    E("cuMemsetD2D32", 3020, Flavor::legacy, &cuMemsetD2D32_v2),
    E("cuMemsetD2D32", 7000, Flavor::per_thread, &cuMemsetD2D32_v2_ptds),
    E("cuMemsetD2D32Async", 3020, Flavor::legacy, &cuMemsetD2D32Async),
    E("cuMemsetD2D32Async", 7000, Flavor::per_thread, &cuMemsetD2D32Async_ptsz),
    {"cuMemsetD2D8", 2000, Flavor::legacy, nullptr},
    E("cuMemsetD2D8", 3020, Flavor::legacy, &cuMemsetD2D8_v2),
    E("cuMemsetD2D8", 7000, Flavor::per_thread, &cuMemsetD2D8_v2_ptds),
    E("cuMemsetD2D8Async", 3020, Flavor::legacy, &cuMemsetD2D8Async),
    E("cuMemsetD2D8Async", 7000, Flavor::per_thread, &cuMemsetD2D8Async_ptsz),
    {"cuMemsetD32", 2000, Flavor::legacy, nullptr},
    E("cuMemsetD32", 3020, Flavor::legacy, &cuMemsetD32_v2),
    E("cuMemsetD32", 7000, Flavor::per_thread, &cuMemsetD32_v2_ptds),
    E("cuMemsetD32Async", 3020, Flavor::legacy, &cuMemsetD32Async),
    E("cuMemsetD32Async", 7000, Flavor::per_thread, &cuMemsetD32Async_ptsz),
    {"cuMemsetD8", 2000, Flavor::legacy, nullptr},
    E("cuMemsetD8", 3020, Flavor::legacy, &cuMemsetD8_v2),
    E("cuMemsetD8", 7000, Flavor::per_thread, &cuMemsetD8_v2_ptds),
    E("cuMemsetD8Async", 3020, Flavor::legacy, &cuMemsetD8Async),
    E("cuMemsetD8Async", 7000, Flavor::per_thread, &cuMemsetD8Async_ptsz),
    E("cuModuleGetFunction", 2000, Flavor::legacy, &cuModuleGetFunction),
    E("cuModuleLoadData", 2000, Flavor::legacy, &cuModuleLoadData),
    E("cuModuleUnload", 2000, Flavor::legacy, &cuModuleUnload),
    E("cuPointerGetAttribute", 4000, Flavor::legacy, &cuPointerGetAttribute),
    E("cuStreamCreate", 2000, Flavor::legacy, &cuStreamCreate),
    E("cuStreamCreateWithPriority", 5050, Flavor::legacy, &cuStreamCreateWithPriority),
    {"cuStreamDestroy", 2000, Flavor::legacy, nullptr},
    E("cuStreamDestroy", 4000, Flavor::legacy, &cuStreamDestroy_v2),
    {"cuStreamGetCtx", 12050, Flavor::legacy, nullptr},
    {"cuStreamGetCtx", 12050, Flavor::per_thread, nullptr},
    E("cuStreamGetCtx", 9020, Flavor::legacy, &cuStreamGetCtx),
    E("cuStreamGetCtx", 9020, Flavor::per_thread, &cuStreamGetCtx_ptsz),
    E("cuStreamGetDevice", 12080, Flavor::legacy, &cuStreamGetDevice),
    E("cuStreamGetDevice", 12080, Flavor::per_thread, &cuStreamGetDevice_ptsz),
    E("cuStreamGetFlags", 5050, Flavor::legacy, &cuStreamGetFlags),
    E("cuStreamGetFlags", 7000, Flavor::per_thread, &cuStreamGetFlags_ptsz),
    E("cuStreamQuery", 2000, Flavor::legacy, &cuStreamQuery),
    E("cuStreamQuery", 7000, Flavor::per_thread, &cuStreamQuery_ptsz),
    E("cuStreamSynchronize", 2000, Flavor::legacy, &cuStreamSynchronize),
    E("cuStreamSynchronize", 7000, Flavor::per_thread, &cuStreamSynchronize_ptsz),
    E("cuStreamWaitEvent", 3020, Flavor::legacy, &cuStreamWaitEvent),
    E("cuStreamWaitEvent", 7000, Flavor::per_thread, &cuStreamWaitEvent_ptsz),
};
#undef E
// clang-format on

struct ErrorName {
  CUresult code;
  const char* name;
};

#define SIMCUDA_ERROR(name) {name, #name},
const ErrorName kErrors[] = {
#include "error_names.inc"
};
#undef SIMCUDA_ERROR

const char* error_name(CUresult code) {
  for (const ErrorName& e : kErrors)
    if (e.code == code) return e.name;
  return nullptr;
}

// Descriptions for the errors a test is most likely to print; the others
// read as their names do.
const char* known_description(CUresult code) {
  switch (code) {
    case CUDA_SUCCESS:
      return "no error";
    case CUDA_ERROR_INVALID_VALUE:
      return "invalid argument";
    case CUDA_ERROR_OUT_OF_MEMORY:
      return "out of memory";
    case CUDA_ERROR_NOT_INITIALIZED:
      return "initialization error";
    case CUDA_ERROR_INVALID_CONTEXT:
      return "invalid device context";
    case CUDA_ERROR_INVALID_DEVICE:
      return "invalid device ordinal";
    case CUDA_ERROR_INVALID_HANDLE:
      return "invalid resource handle";
    case CUDA_ERROR_NOT_FOUND:
      return "named symbol not found";
    case CUDA_ERROR_NOT_READY:
      return "device not ready";
    case CUDA_ERROR_ILLEGAL_ADDRESS:
      return "an illegal memory access was encountered";
    case CUDA_ERROR_NOT_SUPPORTED:
      return "operation not supported";
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
      return "too many resources requested for launch";
    case CUDA_ERROR_UNKNOWN:
      return "unknown error";
    default:
      return nullptr;
  }
}

// "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED" -> "peer access unsupported", built
// once per code into a table that lives as long as the process.
const char* derived_description(CUresult code, const char* name) {
  static std::mutex mu;
  static auto* texts = new std::map<int, std::string>();
  std::lock_guard lock(mu);
  auto [it, inserted] = texts->try_emplace(static_cast<int>(code));
  if (inserted) {
    std::string_view n(name);
    if (n.starts_with("CUDA_ERROR_")) n.remove_prefix(11);
    for (char ch : n)
      it->second.push_back(ch == '_' ? ' ' : static_cast<char>(std::tolower(ch)));
  }
  return it->second.c_str();
}

CUresult lookup(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
  if (pfn) *pfn = nullptr;
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  if (flags & ~static_cast<cuuint64_t>(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                                       CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
    return CUDA_ERROR_INVALID_VALUE;
  bool per_thread = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  const Entry* best_plain = nullptr;
  const Entry* best_thread = nullptr;
  bool known = false;
  for (const Entry& e : kTable) {
    if (std::strcmp(e.base, symbol) != 0) continue;
    known = true;
    if (e.version > cuda_version) continue;
    const Entry*& best = e.flavor == Flavor::per_thread ? best_thread : best_plain;
    if (!best || e.version > best->version) best = &e;
  }
  // A per-thread request falls back to the plain function where the symbol
  // has no per-thread flavour at that version.
  const Entry* chosen = per_thread && best_thread ? best_thread : best_plain;
  if (!chosen || !chosen->fn) {
    if (status)
      *status = known && !chosen ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                                 : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = chosen->fn;
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace simcuda

using namespace simcuda;

extern "C" {

CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion,
                                     cuuint64_t flags,
                                     CUdriverProcAddressQueryResult* symbolStatus) {
  if (CUresult r = enter_uninitialised(__func__); r != CUDA_SUCCESS) return r;
  return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                  cuuint64_t flags) {
  if (CUresult r = enter_uninitialised(__func__); r != CUDA_SUCCESS) return r;
  return lookup(symbol, pfn, cudaVersion, flags, nullptr);
}

// The runtime asks for private tables here; simcuda has none, so the runtime
// API does not work over it (only the driver API does).
CUresult CUDAAPI cuGetExportTable(const void** ppExportTable, const CUuuid* pExportTableId) {
  if (CUresult r = enter_uninitialised(__func__); r != CUDA_SUCCESS) return r;
  if (!ppExportTable || !pExportTableId) return CUDA_ERROR_INVALID_VALUE;
  *ppExportTable = nullptr;
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char** pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  *pStr = error_name(error);
  return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  const char* name = error_name(error);
  if (!name) {
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  const char* text = known_description(error);
  *pStr = text ? text : derived_description(error, name);
  return CUDA_SUCCESS;
}

// For tests of the table itself.
SIMCUDA_API size_t simcuda_proc_table(const char** bases, int* versions, int* per_thread,
                                      int* implemented, size_t capacity) {
  size_t n = sizeof(kTable) / sizeof(kTable[0]);
  for (size_t i = 0; i < n && i < capacity; ++i) {
    bases[i] = kTable[i].base;
    versions[i] = kTable[i].version;
    per_thread[i] = kTable[i].flavor == Flavor::per_thread;
    implemented[i] = kTable[i].fn != nullptr;
  }
  return n;
}

}  // extern "C"
