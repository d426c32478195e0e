// Handlers: initialisation, allocation, free, the application's own
// virtual-memory calls (recorded, not managed), memory reporting.
#include "hooks/handlers.h"

namespace cuswap::hooks {

using trace::AllocKind;
using trace::FreeKind;
using trace::VmmOp;

CUresult handle_cuInit(Entry& entry, Real_cuInit real, unsigned int Flags) noexcept {
  CUresult r = real(Flags);
  if (r == CUDA_SUCCESS) open_recorder(*entry.active());
  return r;
}

CUresult handle_cuMemAlloc(Entry& entry, Real_cuMemAlloc_v2 real, CUdeviceptr* dptr,
                           size_t bytesize) noexcept {
  CUresult r = real(dptr, bytesize);
  if (r == CUDA_SUCCESS) note_alloc(*entry.active(), *dptr, bytesize, 0, AllocKind::linear);
  return r;
}

CUresult handle_cuMemAllocPitch(Entry& entry, Real_cuMemAllocPitch_v2 real, CUdeviceptr* dptr,
                                size_t* pPitch, size_t WidthInBytes, size_t Height,
                                unsigned int ElementSizeBytes) noexcept {
  CUresult r = real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
  if (r == CUDA_SUCCESS) note_alloc(*entry.active(), *dptr, *pPitch * Height, 0, AllocKind::pitch);
  return r;
}

CUresult handle_cuMemAllocAsync(Entry& entry, Real_cuMemAllocAsync real, CUdeviceptr* dptr,
                                size_t bytesize, CUstream hStream) noexcept {
  CUresult r = real(dptr, bytesize, hStream);
  if (r == CUDA_SUCCESS)
    note_alloc(*entry.active(), *dptr, bytesize, entry.stream_value(hStream), AllocKind::async);
  return r;
}

CUresult handle_cuMemAllocFromPoolAsync(Entry& entry, Real_cuMemAllocFromPoolAsync real,
                                        CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                        CUstream hStream) noexcept {
  CUresult r = real(dptr, bytesize, pool, hStream);
  if (r == CUDA_SUCCESS)
    note_alloc(*entry.active(), *dptr, bytesize, entry.stream_value(hStream),
               AllocKind::pool_async);
  return r;
}

CUresult handle_cuMemFree(Entry& entry, Real_cuMemFree_v2 real, CUdeviceptr dptr) noexcept {
  auto buffer = begin_free(*entry.active(), dptr);
  CUresult r = real(dptr);
  finish_free(*entry.active(), buffer, r, 0, FreeKind::sync);
  return r;
}

CUresult handle_cuMemFreeAsync(Entry& entry, Real_cuMemFreeAsync real, CUdeviceptr dptr,
                               CUstream hStream) noexcept {
  auto buffer = begin_free(*entry.active(), dptr);
  CUresult r = real(dptr, hStream);
  finish_free(*entry.active(), buffer, r, entry.stream_value(hStream), FreeKind::async);
  return r;
}

CUresult handle_cuMemCreate(Entry& entry, Real_cuMemCreate real,
                            CUmemGenericAllocationHandle* handle, size_t size,
                            const CUmemAllocationProp* prop, unsigned long long flags) noexcept {
  CUresult r = real(handle, size, prop, flags);
  if (r == CUDA_SUCCESS) note_vmm(*entry.active(), VmmOp::create, 0, size, *handle);
  return r;
}

CUresult handle_cuMemMap(Entry& entry, Real_cuMemMap real, CUdeviceptr ptr, size_t size,
                         size_t offset, CUmemGenericAllocationHandle handle,
                         unsigned long long flags) noexcept {
  CUresult r = real(ptr, size, offset, handle, flags);
  if (r == CUDA_SUCCESS) note_vmm(*entry.active(), VmmOp::map, ptr, size, handle);
  return r;
}

CUresult handle_cuMemUnmap(Entry& entry, Real_cuMemUnmap real, CUdeviceptr ptr,
                           size_t size) noexcept {
  CUresult r = real(ptr, size);
  if (r == CUDA_SUCCESS) note_vmm(*entry.active(), VmmOp::unmap, ptr, size, 0);
  return r;
}

CUresult handle_cuMemRelease(Entry& entry, Real_cuMemRelease real,
                             CUmemGenericAllocationHandle handle) noexcept {
  CUresult r = real(handle);
  if (r == CUDA_SUCCESS) note_vmm(*entry.active(), VmmOp::release, 0, 0, handle);
  return r;
}

// Reporting passes through until the allocator enforces a budget.
CUresult handle_cuMemGetInfo(Entry&, Real_cuMemGetInfo_v2 real, size_t* free,
                             size_t* total) noexcept {
  return real(free, total);
}

CUresult handle_cuDeviceTotalMem(Entry&, Real_cuDeviceTotalMem_v2 real, size_t* bytes,
                                 CUdevice dev) noexcept {
  return real(bytes, dev);
}

}  // namespace cuswap::hooks
