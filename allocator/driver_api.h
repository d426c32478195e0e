// Every driver entry point cuswap knows, with its exact versioned name and
// the prototype of the installed cuda.h (checked wherever the list is
// expanded against a declaration). One list, expanded into the Driver table
// (allocator/driver.h), the hooks' exports, the cuGetProcAddress lookup and
// the per-hook counters (hooks/).
//
//   CUSWAP_DRIVER_HOOKED(X): X(name, (params), (args), handler)
//     functions libcuswap.so exports and intercepts; `handler` names the
//     hooks/ function that serves it (twins such as `_ptsz` share one).
//   CUSWAP_DRIVER_USED(X): X(name, (params), (args))
//     functions cuswap calls but does not intercept.
//
// Names are the real exported symbols (cuMemAlloc_v2, cuLaunchKernel_ptsz):
// code expanding the list includes cuda.h with __CUDA_API_VERSION_INTERNAL,
// so no name here is a macro for another.
#pragma once

#include <cuda.h>

// clang-format off
#define CUSWAP_DRIVER_HOOKED(X) \
  X(cuInit, (unsigned int Flags), (Flags), cuInit) \
  X(cuGetProcAddress, (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags), (symbol, pfn, cudaVersion, flags), cuGetProcAddress) \
  X(cuGetProcAddress_v2, (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus), (symbol, pfn, cudaVersion, flags, symbolStatus), cuGetProcAddress_v2) \
  X(cuMemAlloc_v2, (CUdeviceptr *dptr, size_t bytesize), (dptr, bytesize), cuMemAlloc) \
  X(cuMemAllocPitch_v2, (CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height, unsigned int ElementSizeBytes), (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes), cuMemAllocPitch) \
  X(cuMemAllocAsync, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream), (dptr, bytesize, hStream), cuMemAllocAsync) \
  X(cuMemAllocAsync_ptsz, (CUdeviceptr *dptr, size_t bytesize, CUstream hStream), (dptr, bytesize, hStream), cuMemAllocAsync) \
  X(cuMemAllocFromPoolAsync, (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream), (dptr, bytesize, pool, hStream), cuMemAllocFromPoolAsync) \
  X(cuMemAllocFromPoolAsync_ptsz, (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream), (dptr, bytesize, pool, hStream), cuMemAllocFromPoolAsync) \
  X(cuMemFree_v2, (CUdeviceptr dptr), (dptr), cuMemFree) \
  X(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream), cuMemFreeAsync) \
  X(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream), cuMemFreeAsync) \
  X(cuMemCreate, (CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop, unsigned long long flags), (handle, size, prop, flags), cuMemCreate) \
  X(cuMemMap, (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags), (ptr, size, offset, handle, flags), cuMemMap) \
  X(cuMemUnmap, (CUdeviceptr ptr, size_t size), (ptr, size), cuMemUnmap) \
  X(cuMemRelease, (CUmemGenericAllocationHandle handle), (handle), cuMemRelease) \
  X(cuLaunchKernel, (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra), (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams, extra), cuLaunchKernel) \
  X(cuLaunchKernel_ptsz, (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra), (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams, extra), cuLaunchKernel) \
  X(cuLaunchKernelEx, (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra), (config, f, kernelParams, extra), cuLaunchKernelEx) \
  X(cuLaunchKernelEx_ptsz, (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra), (config, f, kernelParams, extra), cuLaunchKernelEx) \
  X(cuLaunchCooperativeKernel, (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams), (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams), cuLaunchCooperativeKernel) \
  X(cuLaunchCooperativeKernel_ptsz, (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream, void **kernelParams), (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams), cuLaunchCooperativeKernel) \
  X(cuGraphLaunch, (CUgraphExec hGraph, CUstream hStream), (hGraph, hStream), cuGraphLaunch) \
  X(cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream), cuGraphLaunch) \
  X(cuMemcpy, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount), (dst, src, ByteCount), cuMemcpy) \
  X(cuMemcpy_ptds, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount), (dst, src, ByteCount), cuMemcpy) \
  X(cuMemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream), (dst, src, ByteCount, hStream), cuMemcpyAsync) \
  X(cuMemcpyAsync_ptsz, (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream), (dst, src, ByteCount, hStream), cuMemcpyAsync) \
  X(cuMemcpyHtoD_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount), (dstDevice, srcHost, ByteCount), cuMemcpyHtoD) \
  X(cuMemcpyHtoD_v2_ptds, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount), (dstDevice, srcHost, ByteCount), cuMemcpyHtoD) \
  X(cuMemcpyDtoH_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount), (dstHost, srcDevice, ByteCount), cuMemcpyDtoH) \
  X(cuMemcpyDtoH_v2_ptds, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount), (dstHost, srcDevice, ByteCount), cuMemcpyDtoH) \
  X(cuMemcpyDtoD_v2, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount), (dstDevice, srcDevice, ByteCount), cuMemcpyDtoD) \
  X(cuMemcpyDtoD_v2_ptds, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount), (dstDevice, srcDevice, ByteCount), cuMemcpyDtoD) \
  X(cuMemcpyHtoDAsync_v2, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream), (dstDevice, srcHost, ByteCount, hStream), cuMemcpyHtoDAsync) \
  X(cuMemcpyHtoDAsync_v2_ptsz, (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream), (dstDevice, srcHost, ByteCount, hStream), cuMemcpyHtoDAsync) \
  X(cuMemcpyDtoHAsync_v2, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream), (dstHost, srcDevice, ByteCount, hStream), cuMemcpyDtoHAsync) \
  X(cuMemcpyDtoHAsync_v2_ptsz, (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream), (dstHost, srcDevice, ByteCount, hStream), cuMemcpyDtoHAsync) \
  X(cuMemcpyDtoDAsync_v2, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream), (dstDevice, srcDevice, ByteCount, hStream), cuMemcpyDtoDAsync) \
  X(cuMemcpyDtoDAsync_v2_ptsz, (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream), (dstDevice, srcDevice, ByteCount, hStream), cuMemcpyDtoDAsync) \
  X(cuMemcpyDtoA_v2, (CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount), (dstArray, dstOffset, srcDevice, ByteCount), cuMemcpyDtoA) \
  X(cuMemcpyDtoA_v2_ptds, (CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount), (dstArray, dstOffset, srcDevice, ByteCount), cuMemcpyDtoA) \
  X(cuMemcpyAtoD_v2, (CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount), (dstDevice, srcArray, srcOffset, ByteCount), cuMemcpyAtoD) \
  X(cuMemcpyAtoD_v2_ptds, (CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount), (dstDevice, srcArray, srcOffset, ByteCount), cuMemcpyAtoD) \
  X(cuMemcpy2D_v2, (const CUDA_MEMCPY2D *pCopy), (pCopy), cuMemcpy2D) \
  X(cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *pCopy), (pCopy), cuMemcpy2D) \
  X(cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *pCopy), (pCopy), cuMemcpy2D) \
  X(cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D *pCopy), (pCopy), cuMemcpy2D) \
  X(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *pCopy, CUstream hStream), (pCopy, hStream), cuMemcpy2DAsync) \
  X(cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D *pCopy, CUstream hStream), (pCopy, hStream), cuMemcpy2DAsync) \
  X(cuMemcpy3D_v2, (const CUDA_MEMCPY3D *pCopy), (pCopy), cuMemcpy3D) \
  X(cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *pCopy), (pCopy), cuMemcpy3D) \
  X(cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *pCopy, CUstream hStream), (pCopy, hStream), cuMemcpy3DAsync) \
  X(cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D *pCopy, CUstream hStream), (pCopy, hStream), cuMemcpy3DAsync) \
  X(cuMemcpyPeer, (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount), (dstDevice, dstContext, srcDevice, srcContext, ByteCount), cuMemcpyPeer) \
  X(cuMemcpyPeer_ptds, (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount), (dstDevice, dstContext, srcDevice, srcContext, ByteCount), cuMemcpyPeer) \
  X(cuMemcpyPeerAsync, (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount, CUstream hStream), (dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream), cuMemcpyPeerAsync) \
  X(cuMemcpyPeerAsync_ptsz, (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount, CUstream hStream), (dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream), cuMemcpyPeerAsync) \
  X(cuMemcpy3DPeer, (const CUDA_MEMCPY3D_PEER *pCopy), (pCopy), cuMemcpy3DPeer) \
  X(cuMemcpy3DPeer_ptds, (const CUDA_MEMCPY3D_PEER *pCopy), (pCopy), cuMemcpy3DPeer) \
  X(cuMemcpy3DPeerAsync, (const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream), (pCopy, hStream), cuMemcpy3DPeerAsync) \
  X(cuMemcpy3DPeerAsync_ptsz, (const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream), (pCopy, hStream), cuMemcpy3DPeerAsync) \
  X(cuMemsetD8_v2, (CUdeviceptr dstDevice, unsigned char uc, size_t N), (dstDevice, uc, N), cuMemsetD8) \
  X(cuMemsetD8_v2_ptds, (CUdeviceptr dstDevice, unsigned char uc, size_t N), (dstDevice, uc, N), cuMemsetD8) \
  X(cuMemsetD16_v2, (CUdeviceptr dstDevice, unsigned short us, size_t N), (dstDevice, us, N), cuMemsetD16) \
  X(cuMemsetD16_v2_ptds, (CUdeviceptr dstDevice, unsigned short us, size_t N), (dstDevice, us, N), cuMemsetD16) \
  X(cuMemsetD32_v2, (CUdeviceptr dstDevice, unsigned int ui, size_t N), (dstDevice, ui, N), cuMemsetD32) \
  X(cuMemsetD32_v2_ptds, (CUdeviceptr dstDevice, unsigned int ui, size_t N), (dstDevice, ui, N), cuMemsetD32) \
  X(cuMemsetD8Async, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream), (dstDevice, uc, N, hStream), cuMemsetD8Async) \
  X(cuMemsetD8Async_ptsz, (CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream), (dstDevice, uc, N, hStream), cuMemsetD8Async) \
  X(cuMemsetD16Async, (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream), (dstDevice, us, N, hStream), cuMemsetD16Async) \
  X(cuMemsetD16Async_ptsz, (CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream), (dstDevice, us, N, hStream), cuMemsetD16Async) \
  X(cuMemsetD32Async, (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream), (dstDevice, ui, N, hStream), cuMemsetD32Async) \
  X(cuMemsetD32Async_ptsz, (CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream), (dstDevice, ui, N, hStream), cuMemsetD32Async) \
  X(cuMemsetD2D8_v2, (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height), (dstDevice, dstPitch, uc, Width, Height), cuMemsetD2D8) \
  X(cuMemsetD2D8_v2_ptds, (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height), (dstDevice, dstPitch, uc, Width, Height), cuMemsetD2D8) \
  X(cuMemsetD2D16_v2, (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height), (dstDevice, dstPitch, us, Width, Height), cuMemsetD2D16) \
  X(cuMemsetD2D16_v2_ptds, (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height), (dstDevice, dstPitch, us, Width, Height), cuMemsetD2D16) \
  X(cuMemsetD2D32_v2, (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height), (dstDevice, dstPitch, ui, Width, Height), cuMemsetD2D32) \
  X(cuMemsetD2D32_v2_ptds, (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height), (dstDevice, dstPitch, ui, Width, Height), cuMemsetD2D32) \
  X(cuMemsetD2D8Async, (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height, CUstream hStream), (dstDevice, dstPitch, uc, Width, Height, hStream), cuMemsetD2D8Async) \
  X(cuMemsetD2D8Async_ptsz, (CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height, CUstream hStream), (dstDevice, dstPitch, uc, Width, Height, hStream), cuMemsetD2D8Async) \
  X(cuMemsetD2D16Async, (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height, CUstream hStream), (dstDevice, dstPitch, us, Width, Height, hStream), cuMemsetD2D16Async) \
  X(cuMemsetD2D16Async_ptsz, (CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height, CUstream hStream), (dstDevice, dstPitch, us, Width, Height, hStream), cuMemsetD2D16Async) \
  X(cuMemsetD2D32Async, (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height, CUstream hStream), (dstDevice, dstPitch, ui, Width, Height, hStream), cuMemsetD2D32Async) \
  X(cuMemsetD2D32Async_ptsz, (CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height, CUstream hStream), (dstDevice, dstPitch, ui, Width, Height, hStream), cuMemsetD2D32Async) \
  X(cuMemGetInfo_v2, (size_t *free, size_t *total), (free, total), cuMemGetInfo) \
  X(cuDeviceTotalMem_v2, (size_t *bytes, CUdevice dev), (bytes, dev), cuDeviceTotalMem) \
  X(cuMemPoolGetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value), (pool, attr, value), cuMemPoolGetAttribute) \
  X(cuMemPoolSetAttribute, (CUmemoryPool pool, CUmemPool_attribute attr, void *value), (pool, attr, value), cuMemPoolSetAttribute) \
  X(cuMemPoolTrimTo, (CUmemoryPool pool, size_t minBytesToKeep), (pool, minBytesToKeep), cuMemPoolTrimTo)

#define CUSWAP_DRIVER_USED(X) \
X(cuDriverGetVersion, (int *driverVersion), (driverVersion)) \
  X(cuDeviceGet, (CUdevice *device, int ordinal), (device, ordinal)) \
  X(cuDeviceGetCount, (int *count), (count)) \
  X(cuDeviceGetName, (char *name, int len, CUdevice dev), (name, len, dev)) \
  X(cuDeviceGetAttribute, (int *pi, CUdevice_attribute attrib, CUdevice dev), (pi, attrib, dev)) \
  X(cuCtxGetCurrent, (CUcontext *pctx), (pctx)) \
  X(cuCtxSetCurrent, (CUcontext ctx), (ctx)) \
  X(cuCtxGetDevice, (CUdevice *device), (device)) \
  X(cuCtxPushCurrent_v2, (CUcontext ctx), (ctx)) \
  X(cuCtxPopCurrent_v2, (CUcontext *pctx), (pctx)) \
  X(cuDevicePrimaryCtxRetain, (CUcontext *pctx, CUdevice dev), (pctx, dev)) \
  X(cuDevicePrimaryCtxRelease_v2, (CUdevice dev), (dev)) \
  X(cuStreamCreate, (CUstream *phStream, unsigned int Flags), (phStream, Flags)) \
  X(cuStreamDestroy_v2, (CUstream hStream), (hStream)) \
  X(cuStreamSynchronize, (CUstream hStream), (hStream)) \
  X(cuStreamQuery, (CUstream hStream), (hStream)) \
  X(cuStreamWaitEvent, (CUstream hStream, CUevent hEvent, unsigned int Flags), (hStream, hEvent, Flags)) \
  X(cuStreamGetCtx, (CUstream hStream, CUcontext *pctx), (hStream, pctx)) \
  X(cuStreamGetDevice, (CUstream hStream, CUdevice *device), (hStream, device)) \
  X(cuEventCreate, (CUevent *phEvent, unsigned int Flags), (phEvent, Flags)) \
  X(cuEventDestroy_v2, (CUevent hEvent), (hEvent)) \
  X(cuEventRecord, (CUevent hEvent, CUstream hStream), (hEvent, hStream)) \
  X(cuEventQuery, (CUevent hEvent), (hEvent)) \
  X(cuEventSynchronize, (CUevent hEvent), (hEvent)) \
  X(cuEventElapsedTime, (float *pMilliseconds, CUevent hStart, CUevent hEnd), (pMilliseconds, hStart, hEnd)) \
  X(cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags), (pp, bytesize, Flags)) \
  X(cuMemFreeHost, (void *p), (p)) \
  X(cuMemAddressReserve, (CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags), (ptr, size, alignment, addr, flags)) \
  X(cuMemAddressFree, (CUdeviceptr ptr, size_t size), (ptr, size)) \
  X(cuMemSetAccess, (CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count), (ptr, size, desc, count)) \
  X(cuMemGetAllocationGranularity, (size_t *granularity, const CUmemAllocationProp *prop, CUmemAllocationGranularity_flags option), (granularity, prop, option)) \
  X(cuPointerGetAttribute, (void *data, CUpointer_attribute attribute, CUdeviceptr ptr), (data, attribute, ptr)) \
  X(cuMemGetAddressRange_v2, (CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr), (pbase, psize, dptr)) \
  X(cuFuncGetParamInfo, (CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize), (func, paramIndex, paramOffset, paramSize)) \
  X(cuFuncGetName, (const char **name, CUfunction hfunc), (name, hfunc)) \
  X(cuGetErrorName, (CUresult error, const char **pStr), (error, pStr)) \
  X(cuGetErrorString, (CUresult error, const char **pStr), (error, pStr))
// clang-format on
