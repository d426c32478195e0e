// Handlers: initialisation, allocation, free, the application's own
// virtual-memory calls (recorded, not managed), memory reporting.
#include "hooks/handlers.h"

#include <cstring>

namespace cuswap::hooks {

using trace::AllocKind;
using trace::FreeKind;
using trace::VmmOp;

CUresult handle_cuInit(Entry& entry, Real_cuInit real, unsigned int Flags) noexcept {
  CUresult r = real(Flags);
  if (r == CUDA_SUCCESS) open_recorder(*entry.active());
  return r;
}

// With a budget, allocations come from the swapping allocator; frees of
// its buffers go back to it, anything else to the driver.
CUresult handle_cuMemAlloc(Entry& entry, Real_cuMemAlloc_v2 real, CUdeviceptr* dptr,
                           size_t bytesize) noexcept {
  Runtime& rt = *entry.active();
  CUresult r = rt.allocator ? rt.allocator->allocate(bytesize, dptr) : real(dptr, bytesize);
  if (r == CUDA_SUCCESS) note_alloc(rt, *dptr, bytesize, 0, AllocKind::linear);
  return r;
}

CUresult handle_cuMemAllocPitch(Entry& entry, Real_cuMemAllocPitch_v2 real, CUdeviceptr* dptr,
                                size_t* pPitch, size_t WidthInBytes, size_t Height,
                                unsigned int ElementSizeBytes) noexcept {
  Runtime& rt = *entry.active();
  CUresult r = CUDA_SUCCESS;
  if (rt.allocator) {
    // Rows aligned as the driver aligns them for cuMemAllocPitch.
    constexpr size_t kPitchAlignment = 512;
    if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
      return CUDA_ERROR_INVALID_VALUE;
    const size_t pitch = (WidthInBytes + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
    r = rt.allocator->allocate(pitch * Height, dptr);
    if (r == CUDA_SUCCESS) *pPitch = pitch;
  } else {
    r = real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
  }
  if (r == CUDA_SUCCESS) note_alloc(rt, *dptr, *pPitch * Height, 0, AllocKind::pitch);
  return r;
}

CUresult handle_cuMemAllocAsync(Entry& entry, Real_cuMemAllocAsync real, CUdeviceptr* dptr,
                                size_t bytesize, CUstream hStream) noexcept {
  Runtime& rt = *entry.active();
  CUresult r =
      rt.allocator ? rt.allocator->allocate(bytesize, dptr) : real(dptr, bytesize, hStream);
  if (r == CUDA_SUCCESS)
    note_alloc(rt, *dptr, bytesize, entry.stream_value(hStream), AllocKind::async);
  return r;
}

// Allocations from any pool come from the allocator too: the pool's own
// properties (IPC export, location) are not honoured under a budget.
CUresult handle_cuMemAllocFromPoolAsync(Entry& entry, Real_cuMemAllocFromPoolAsync real,
                                        CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                        CUstream hStream) noexcept {
  Runtime& rt = *entry.active();
  CUresult r =
      rt.allocator ? rt.allocator->allocate(bytesize, dptr) : real(dptr, bytesize, pool, hStream);
  if (r == CUDA_SUCCESS)
    note_alloc(rt, *dptr, bytesize, entry.stream_value(hStream), AllocKind::pool_async);
  return r;
}

CUresult handle_cuMemFree(Entry& entry, Real_cuMemFree_v2 real, CUdeviceptr dptr) noexcept {
  Runtime& rt = *entry.active();
  auto buffer = begin_free(rt, dptr);
  CUresult r = rt.allocator && rt.allocator->owns(dptr) ? rt.allocator->free(dptr, nullptr, false)
                                                        : real(dptr);
  finish_free(rt, buffer, r, 0, FreeKind::sync);
  return r;
}

CUresult handle_cuMemFreeAsync(Entry& entry, Real_cuMemFreeAsync real, CUdeviceptr dptr,
                               CUstream hStream) noexcept {
  Runtime& rt = *entry.active();
  auto buffer = begin_free(rt, dptr);
  CUresult r = rt.allocator && rt.allocator->owns(dptr)
                   ? rt.allocator->free(dptr, entry.stream_handle(hStream), true)
                   : real(dptr, hStream);
  finish_free(rt, buffer, r, entry.stream_value(hStream), FreeKind::async);
  return r;
}

CUresult handle_cuMemCreate(Entry& entry, Real_cuMemCreate real,
                            CUmemGenericAllocationHandle* handle, size_t size,
                            const CUmemAllocationProp* prop, unsigned long long flags) noexcept {
  CUresult r = real(handle, size, prop, flags);
  // Memory cuswap caches (freed ranges, pooled pages) goes back to the
  // driver, once, when the application's own allocation finds none.
  Runtime& rt = *entry.active();
  if (r == CUDA_ERROR_OUT_OF_MEMORY && rt.allocator && prop &&
      prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
      rt.allocator->release_cached(prop->location.id) > 0)
    r = real(handle, size, prop, flags);
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

// With a budget, memory is reported as the budget sees it: TensorFlow and
// others size themselves from these.
// Note [Memory pools under a budget] (allocator/pools.cpp): the pools'
// figures are cuswap's; everything else is the driver's to keep.
CUresult handle_cuMemPoolGetAttribute(Entry& entry, Real_cuMemPoolGetAttribute real,
                                      CUmemoryPool pool, CUmemPool_attribute attr,
                                      void* value) noexcept {
  Runtime& rt = *entry.active();
  const bool figure =
      attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT || attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH ||
      attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT || attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH;
  // The driver checks the pool and the pointer.
  CUresult r = real(pool, attr, value);
  if (r != CUDA_SUCCESS || !figure || !rt.allocator) return r;
  Allocator::PoolFigures f;
  if (r = rt.allocator->pool_figures(f); r != CUDA_SUCCESS) return r;
  cuuint64_t answer = attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT ? f.reserved_bytes
                      : attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH  ? f.reserved_high
                      : attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT   ? f.used_bytes
                                                                   : f.used_high;
  std::memcpy(value, &answer, sizeof answer);
  return CUDA_SUCCESS;
}

CUresult handle_cuMemPoolSetAttribute(Entry& entry, Real_cuMemPoolSetAttribute real,
                                      CUmemoryPool pool, CUmemPool_attribute attr,
                                      void* value) noexcept {
  Runtime& rt = *entry.active();
  CUresult r = real(pool, attr, value);  // only 0 is valid for the high-water marks
  if (r != CUDA_SUCCESS || !rt.allocator) return r;
  if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH || attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH)
    return rt.allocator->reset_pool_high(attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
                                         attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH);
  return r;
}

CUresult handle_cuMemPoolTrimTo(Entry& entry, Real_cuMemPoolTrimTo real, CUmemoryPool pool,
                                size_t minBytesToKeep) noexcept {
  Runtime& rt = *entry.active();
  CUresult r = real(pool, minBytesToKeep);
  if (r != CUDA_SUCCESS || !rt.allocator) return r;
  return rt.allocator->trim(minBytesToKeep);
}

CUresult handle_cuMemGetInfo(Entry& entry, Real_cuMemGetInfo_v2 real, size_t* free,
                             size_t* total) noexcept {
  Runtime& rt = *entry.active();
  return rt.allocator ? rt.allocator->mem_get_info(free, total) : real(free, total);
}

CUresult handle_cuDeviceTotalMem(Entry& entry, Real_cuDeviceTotalMem_v2 real, size_t* bytes,
                                 CUdevice dev) noexcept {
  Runtime& rt = *entry.active();
  return rt.allocator ? rt.allocator->device_total_mem(dev, bytes) : real(bytes, dev);
}

}  // namespace cuswap::hooks
