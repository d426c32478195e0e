// simcuda: copies and sets.
//
// Every copy and set is an op on a stream; the synchronous forms enqueue on
// the NULL stream (or the calling thread's per-thread stream for `_ptds`)
// and wait. Device-side ranges must lie inside one known allocation or
// reservation (else CUDA_ERROR_INVALID_VALUE); the synchronous forms also
// require them to be mapped and accessible now, so a synchronous copy into
// unmapped memory returns an error instead of faulting. An asynchronous one
// that finds its range unmapped when it runs faults like a kernel (Note
// [Guarded op bodies]).
//
// Engines: host-to-device and host-to-host copies use the H2D engine,
// device-to-host and peer copies the D2H engine, device-to-device copies and
// sets the compute engine at d2d_gbps. A device-to-device copy to or from
// host-located memory (a VMM mapping of a host handle) is a copy over the
// link: device-to-host or host-to-device. Arrays are not supported.
#include <cstring>

#include "tests/simcuda/sim.h"

namespace simcuda {
namespace {

using Direction = Op::Direction;

// Bytes spanned by a strided access: the last row of the last slice ends
// the range.
size_t span(size_t width, size_t height, size_t depth, size_t pitch, size_t slice) {
  if (width == 0 || height == 0 || depth == 0) return 0;
  return (depth - 1) * slice + (height - 1) * pitch + width;
}

bool device_range(uintptr_t address, size_t bytes) {
  Region* region = find_region(address);
  return region && region->kind != Region::Kind::host &&
         bytes <= region->base + region->size - address;
}

// Records a range for hazard tracking when it is memory simcuda knows
// (device memory or pinned host memory).
void add_tracked(Op& op, uintptr_t address, size_t bytes, int mode) {
  if (bytes && known_range(address, bytes)) op.ranges.push_back({address, address + bytes, mode});
}

// Whether `address` lies in a mapping of a host-located handle: device
// pointers to host memory, which copies reach over the link.
bool host_located(uintptr_t address) {
  Region* region = find_region(address);
  if (!region || region->kind != Region::Kind::reservation) return false;
  auto it = region->mappings.upper_bound(address);
  if (it == region->mappings.begin()) return false;
  --it;
  const Mapping& m = it->second;
  return address < m.start + m.size && m.handle && m.handle->host_located;
}

// A device-to-device copy with a side in host-located memory crosses the
// link: it is a copy to or from the host, on that direction's engine.
Direction over_link(Direction d, uintptr_t dst, uintptr_t src) {
  if (d != Direction::d2d) return d;
  const bool dst_host = host_located(dst), src_host = host_located(src);
  return dst_host && src_host ? Direction::h2h
         : dst_host           ? Direction::d2h
         : src_host           ? Direction::h2d
                              : d;
}

bool dst_on_device(Direction d) {
  return d == Direction::h2d || d == Direction::d2d || d == Direction::peer;
}
bool src_on_device(Direction d) {
  return d == Direction::d2h || d == Direction::d2d || d == Direction::peer;
}

// Validates, enqueues and (for synchronous calls) waits for one copy.
CUresult submit_copy(CUstream hStream, DefaultStream ds, bool sync, Direction direction,
                     const Strided& st) {
  State& s = state();
  std::unique_lock lock(s.mu);
  Stream* stream = nullptr;
  if (CUresult r = resolve_stream(hStream, ds, stream); r != CUDA_SUCCESS) return r;
  if (stream->ctx->sticky != CUDA_SUCCESS) return stream->ctx->sticky;
  if (st.width == 0 || st.height == 0 || st.depth == 0) return CUDA_SUCCESS;
  size_t dst_bytes = span(st.width, st.height, st.depth, st.dst_pitch, st.dst_slice);
  size_t src_bytes = span(st.width, st.height, st.depth, st.src_pitch, st.src_slice);
  bool dst_dev = dst_on_device(direction), src_dev = src_on_device(direction);
  if (!st.dst || !st.src) return CUDA_ERROR_INVALID_VALUE;
  if (dst_dev && !device_range(st.dst, dst_bytes)) return CUDA_ERROR_INVALID_VALUE;
  if (src_dev && !device_range(st.src, src_bytes)) return CUDA_ERROR_INVALID_VALUE;
  if (sync && ((dst_dev && !accessible(st.dst, dst_bytes, SIMCUDA_WRITE)) ||
               (src_dev && !accessible(st.src, src_bytes, SIMCUDA_READ))))
    return CUDA_ERROR_INVALID_VALUE;
  auto op = std::make_shared<Op>();
  op->kind = OpKind::copy;
  op->direction = over_link(direction, st.dst, st.src);
  op->strided = st;
  op->copy_bytes = st.width * st.height * st.depth;
  add_tracked(*op, st.src, src_bytes, SIMCUDA_READ);
  add_tracked(*op, st.dst, dst_bytes, SIMCUDA_WRITE);
  CompletionPtr done = nullptr;
  Context* ctx = stream->ctx;
  enqueue(lock, stream, op);
  done = op->completion;
  if (!sync) return CUDA_SUCCESS;
  count_host_sync();
  host_wait(lock, done);
  return ctx->sticky;
}

Strided linear(uintptr_t dst, uintptr_t src, size_t bytes) {
  Strided st;
  st.dst = dst;
  st.src = src;
  st.width = bytes;
  return st;
}

Direction infer(uintptr_t dst, uintptr_t src) {
  bool d = is_device_address(dst), s = is_device_address(src);
  return d && s ? Direction::d2d : d ? Direction::h2d : s ? Direction::d2h : Direction::h2h;
}

CUresult copy_unified(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream hStream,
                      DefaultStream ds, bool sync) {
  Direction direction;
  {
    std::lock_guard lock(state().mu);
    direction = infer(dst, src);
  }
  return submit_copy(hStream, ds, sync, direction, linear(dst, src, bytes));
}

CUresult copy_peer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                   size_t bytes, CUstream hStream, DefaultStream ds, bool sync) {
  {
    std::lock_guard lock(state().mu);
    auto& contexts = state().contexts;
    if (!contexts.count(dst_ctx) || !contexts.count(src_ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  }
  Direction direction = dst_ctx->device != src_ctx->device ? Direction::peer : Direction::d2d;
  return submit_copy(hStream, ds, sync, direction, linear(dst, src, bytes));
}

// One side of a 2-D or 3-D copy descriptor.
struct Side {
  CUmemorytype type;
  const void* host;
  CUdeviceptr device;
  CUarray array;
  size_t x, y, z, pitch, height;
};

CUresult side_address(const Side& side, uintptr_t& address, bool& on_device) {
  if (side.type == CU_MEMORYTYPE_ARRAY || side.array) return CUDA_ERROR_NOT_SUPPORTED;
  uintptr_t base;
  if (side.type == CU_MEMORYTYPE_HOST) {
    base = reinterpret_cast<uintptr_t>(side.host);
    on_device = false;
  } else if (side.type == CU_MEMORYTYPE_DEVICE) {
    base = side.device;
    on_device = true;
  } else if (side.type == CU_MEMORYTYPE_UNIFIED) {
    base = side.device;
    std::lock_guard lock(state().mu);
    on_device = is_device_address(base);
  } else {
    return CUDA_ERROR_INVALID_VALUE;
  }
  address = base + side.z * side.pitch * side.height + side.y * side.pitch + side.x;
  return CUDA_SUCCESS;
}

CUresult copy_3d(const Side& src, const Side& dst, size_t width, size_t height, size_t depth,
                 CUstream hStream, DefaultStream ds, bool sync) {
  if (height > 1 && (src.pitch < width || dst.pitch < width)) return CUDA_ERROR_INVALID_VALUE;
  if (depth > 1 && (src.height < height || dst.height < height)) return CUDA_ERROR_INVALID_VALUE;
  Strided st;
  bool dst_dev = false, src_dev = false;
  if (CUresult r = side_address(dst, st.dst, dst_dev); r != CUDA_SUCCESS) return r;
  if (CUresult r = side_address(src, st.src, src_dev); r != CUDA_SUCCESS) return r;
  st.width = width;
  st.height = height;
  st.depth = depth;
  st.dst_pitch = height > 1 ? dst.pitch : width;
  st.src_pitch = height > 1 ? src.pitch : width;
  st.dst_slice = dst.pitch * dst.height;
  st.src_slice = src.pitch * src.height;
  Direction direction = dst_dev && src_dev ? Direction::d2d
                        : dst_dev          ? Direction::h2d
                        : src_dev          ? Direction::d2h
                                           : Direction::h2h;
  return submit_copy(hStream, ds, sync, direction, st);
}

CUresult copy_2d(const CUDA_MEMCPY2D* p, CUstream hStream, DefaultStream ds, bool sync) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  Side src{p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcXInBytes,
           p->srcY,          0,          p->srcPitch,  p->Height};
  Side dst{p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstXInBytes,
           p->dstY,          0,          p->dstPitch,  p->Height};
  return copy_3d(src, dst, p->WidthInBytes, p->Height, 1, hStream, ds, sync);
}

CUresult copy_3d(const CUDA_MEMCPY3D* p, CUstream hStream, DefaultStream ds, bool sync) {
  if (!p || p->srcLOD || p->dstLOD || p->reserved0 || p->reserved1) return CUDA_ERROR_INVALID_VALUE;
  Side src{p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcXInBytes,
           p->srcY,          p->srcZ,    p->srcPitch,  p->srcHeight};
  Side dst{p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstXInBytes,
           p->dstY,          p->dstZ,    p->dstPitch,  p->dstHeight};
  return copy_3d(src, dst, p->WidthInBytes, p->Height, p->Depth, hStream, ds, sync);
}

// Sets `height` rows of `width` elements of `element_bytes` each.
CUresult submit_set(CUdeviceptr dst, size_t pitch, uint32_t value, unsigned element_bytes,
                    size_t width, size_t height, CUstream hStream, DefaultStream ds, bool sync) {
  if (dst % element_bytes != 0) return CUDA_ERROR_INVALID_VALUE;
  if (height > 1 && pitch < width * element_bytes) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::unique_lock lock(s.mu);
  Stream* stream = nullptr;
  if (CUresult r = resolve_stream(hStream, ds, stream); r != CUDA_SUCCESS) return r;
  if (stream->ctx->sticky != CUDA_SUCCESS) return stream->ctx->sticky;
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  Strided st;
  st.dst = dst;
  st.width = width * element_bytes;
  st.height = height;
  st.dst_pitch = height > 1 ? pitch : st.width;
  st.value = value;
  st.element_bytes = element_bytes;
  size_t bytes = span(st.width, height, 1, st.dst_pitch, 0);
  if (!device_range(dst, bytes)) return CUDA_ERROR_INVALID_VALUE;
  if (sync && !accessible(dst, bytes, SIMCUDA_WRITE)) return CUDA_ERROR_INVALID_VALUE;
  auto op = std::make_shared<Op>();
  op->kind = OpKind::set;
  op->direction = Direction::d2d;
  op->strided = st;
  op->copy_bytes = st.width * height;
  add_tracked(*op, dst, bytes, SIMCUDA_WRITE);
  Context* ctx = stream->ctx;
  enqueue(lock, stream, op);
  if (!sync) return CUDA_SUCCESS;
  count_host_sync();
  host_wait(lock, op->completion);
  return ctx->sticky;
}

}  // namespace

void execute_copy(const Op& op) {
  const Strided& st = op.strided;
  for (size_t z = 0; z < st.depth; ++z)
    for (size_t y = 0; y < st.height; ++y)
      std::memmove(reinterpret_cast<void*>(st.dst + z * st.dst_slice + y * st.dst_pitch),
                   reinterpret_cast<const void*>(st.src + z * st.src_slice + y * st.src_pitch),
                   st.width);
}

void execute_set(const Op& op) {
  const Strided& st = op.strided;
  for (size_t y = 0; y < st.height; ++y) {
    auto* row = reinterpret_cast<unsigned char*>(st.dst + y * st.dst_pitch);
    size_t n = st.width / st.element_bytes;
    if (st.element_bytes == 1) {
      std::memset(row, static_cast<int>(st.value & 0xff), n);
    } else if (st.element_bytes == 2) {
      auto v = static_cast<uint16_t>(st.value);
      for (size_t i = 0; i < n; ++i)
        std::memcpy(row + i * 2, &v, 2);
    } else {
      for (size_t i = 0; i < n; ++i)
        std::memcpy(row + i * 4, &st.value, 4);
    }
  }
}

}  // namespace simcuda

using namespace simcuda;
using Direction = Op::Direction;

// Each synchronous form has a `_ptds` twin and each asynchronous one a
// `_ptsz` twin, which differ only in what stream 0 means.

extern "C" {

// ---------------------------------------------------------------------------
// 1-D copies

CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  SIM_ENTER();
  return submit_copy(nullptr, DefaultStream::legacy, true, Direction::h2d,
                     linear(dstDevice, reinterpret_cast<uintptr_t>(srcHost), ByteCount));
}

CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost,
                                      size_t ByteCount) {
  SIM_ENTER();
  return submit_copy(nullptr, DefaultStream::per_thread, true, Direction::h2d,
                     linear(dstDevice, reinterpret_cast<uintptr_t>(srcHost), ByteCount));
}

CUresult CUDAAPI cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  SIM_ENTER();
  return submit_copy(nullptr, DefaultStream::legacy, true, Direction::d2h,
                     linear(reinterpret_cast<uintptr_t>(dstHost), srcDevice, ByteCount));
}

CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  SIM_ENTER();
  return submit_copy(nullptr, DefaultStream::per_thread, true, Direction::d2h,
                     linear(reinterpret_cast<uintptr_t>(dstHost), srcDevice, ByteCount));
}

CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  SIM_ENTER();
  return submit_copy(nullptr, DefaultStream::legacy, true, Direction::d2d,
                     linear(dstDevice, srcDevice, ByteCount));
}

CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                      size_t ByteCount) {
  SIM_ENTER();
  return submit_copy(nullptr, DefaultStream::per_thread, true, Direction::d2d,
                     linear(dstDevice, srcDevice, ByteCount));
}

CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                      CUstream hStream) {
  SIM_ENTER();
  return submit_copy(hStream, DefaultStream::legacy, false, Direction::h2d,
                     linear(dstDevice, reinterpret_cast<uintptr_t>(srcHost), ByteCount));
}

CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void* srcHost,
                                           size_t ByteCount, CUstream hStream) {
  SIM_ENTER();
  return submit_copy(hStream, DefaultStream::per_thread, false, Direction::h2d,
                     linear(dstDevice, reinterpret_cast<uintptr_t>(srcHost), ByteCount));
}

CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                      CUstream hStream) {
  SIM_ENTER();
  return submit_copy(hStream, DefaultStream::legacy, false, Direction::d2h,
                     linear(reinterpret_cast<uintptr_t>(dstHost), srcDevice, ByteCount));
}

CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                           CUstream hStream) {
  SIM_ENTER();
  return submit_copy(hStream, DefaultStream::per_thread, false, Direction::d2h,
                     linear(reinterpret_cast<uintptr_t>(dstHost), srcDevice, ByteCount));
}

CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                      size_t ByteCount, CUstream hStream) {
  SIM_ENTER();
  return submit_copy(hStream, DefaultStream::legacy, false, Direction::d2d,
                     linear(dstDevice, srcDevice, ByteCount));
}

CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                           size_t ByteCount, CUstream hStream) {
  SIM_ENTER();
  return submit_copy(hStream, DefaultStream::per_thread, false, Direction::d2d,
                     linear(dstDevice, srcDevice, ByteCount));
}

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  SIM_ENTER();
  return copy_unified(dst, src, ByteCount, nullptr, DefaultStream::legacy, true);
}

CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  SIM_ENTER();
  return copy_unified(dst, src, ByteCount, nullptr, DefaultStream::per_thread, true);
}

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                               CUstream hStream) {
  SIM_ENTER();
  return copy_unified(dst, src, ByteCount, hStream, DefaultStream::legacy, false);
}

CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                    CUstream hStream) {
  SIM_ENTER();
  return copy_unified(dst, src, ByteCount, hStream, DefaultStream::per_thread, false);
}

CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                              CUcontext srcContext, size_t ByteCount) {
  SIM_ENTER();
  return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, nullptr,
                   DefaultStream::legacy, true);
}

CUresult CUDAAPI cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext,
                                   CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount) {
  SIM_ENTER();
  return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, nullptr,
                   DefaultStream::per_thread, true);
}

CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
                                   CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount,
                                   CUstream hStream) {
  SIM_ENTER();
  return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream,
                   DefaultStream::legacy, false);
}

CUresult CUDAAPI cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext,
                                        CUdeviceptr srcDevice, CUcontext srcContext,
                                        size_t ByteCount, CUstream hStream) {
  SIM_ENTER();
  return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream,
                   DefaultStream::per_thread, false);
}

// ---------------------------------------------------------------------------
// 2-D and 3-D copies

CUresult CUDAAPI cuMemcpy2D_v2(const CUDA_MEMCPY2D* pCopy) {
  SIM_ENTER();
  return copy_2d(pCopy, nullptr, DefaultStream::legacy, true);
}

CUresult CUDAAPI cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* pCopy) {
  SIM_ENTER();
  return copy_2d(pCopy, nullptr, DefaultStream::per_thread, true);
}

CUresult CUDAAPI cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D* pCopy) {
  SIM_ENTER();
  return copy_2d(pCopy, nullptr, DefaultStream::legacy, true);
}

CUresult CUDAAPI cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D* pCopy) {
  SIM_ENTER();
  return copy_2d(pCopy, nullptr, DefaultStream::per_thread, true);
}

CUresult CUDAAPI cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  SIM_ENTER();
  return copy_2d(pCopy, hStream, DefaultStream::legacy, false);
}

CUresult CUDAAPI cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* pCopy, CUstream hStream) {
  SIM_ENTER();
  return copy_2d(pCopy, hStream, DefaultStream::per_thread, false);
}

CUresult CUDAAPI cuMemcpy3D_v2(const CUDA_MEMCPY3D* pCopy) {
  SIM_ENTER();
  return copy_3d(pCopy, nullptr, DefaultStream::legacy, true);
}

CUresult CUDAAPI cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D* pCopy) {
  SIM_ENTER();
  return copy_3d(pCopy, nullptr, DefaultStream::per_thread, true);
}

CUresult CUDAAPI cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
  SIM_ENTER();
  return copy_3d(pCopy, hStream, DefaultStream::legacy, false);
}

CUresult CUDAAPI cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D* pCopy, CUstream hStream) {
  SIM_ENTER();
  return copy_3d(pCopy, hStream, DefaultStream::per_thread, false);
}

// ---------------------------------------------------------------------------
// Sets

CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  SIM_ENTER();
  return submit_set(dstDevice, 0, uc, 1, N, 1, nullptr, DefaultStream::legacy, true);
}

CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N) {
  SIM_ENTER();
  return submit_set(dstDevice, 0, uc, 1, N, 1, nullptr, DefaultStream::per_thread, true);
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                 CUstream hStream) {
  SIM_ENTER();
  return submit_set(dstDevice, 0, uc, 1, N, 1, hStream, DefaultStream::legacy, false);
}

CUresult CUDAAPI cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                      CUstream hStream) {
  SIM_ENTER();
  return submit_set(dstDevice, 0, uc, 1, N, 1, hStream, DefaultStream::per_thread, false);
}

CUresult CUDAAPI cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                 size_t Width, size_t Height) {
  SIM_ENTER();
  return submit_set(dstDevice, dstPitch, uc, 1, Width, Height, nullptr, DefaultStream::legacy,
                    true);
}

CUresult CUDAAPI cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                      size_t Width, size_t Height) {
  SIM_ENTER();
  return submit_set(dstDevice, dstPitch, uc, 1, Width, Height, nullptr, DefaultStream::per_thread,
                    true);
}

CUresult CUDAAPI cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                   size_t Width, size_t Height, CUstream hStream) {
  SIM_ENTER();
  return submit_set(dstDevice, dstPitch, uc, 1, Width, Height, hStream, DefaultStream::legacy,
                    false);
}

CUresult CUDAAPI cuMemsetD2D8Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                        size_t Width, size_t Height, CUstream hStream) {
  SIM_ENTER();
  return submit_set(dstDevice, dstPitch, uc, 1, Width, Height, hStream, DefaultStream::per_thread,
                    false);
}

CUresult CUDAAPI cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N) {
  SIM_ENTER();
  return submit_set(dstDevice, 0, us, 2, N, 1, nullptr, DefaultStream::legacy, true);
}

CUresult CUDAAPI cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us, size_t N) {
  SIM_ENTER();
  return submit_set(dstDevice, 0, us, 2, N, 1, nullptr, DefaultStream::per_thread, true);
}

CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N,
                                  CUstream hStream) {
  SIM_ENTER();
  return submit_set(dstDevice, 0, us, 2, N, 1, hStream, DefaultStream::legacy, false);
}

CUresult CUDAAPI cuMemsetD16Async_ptsz(CUdeviceptr dstDevice, unsigned short us, size_t N,
                                       CUstream hStream) {
  SIM_ENTER();
  return submit_set(dstDevice, 0, us, 2, N, 1, hStream, DefaultStream::per_thread, false);
}

CUresult CUDAAPI cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
                                  size_t Width, size_t Height) {
  SIM_ENTER();
  return submit_set(dstDevice, dstPitch, us, 2, Width, Height, nullptr, DefaultStream::legacy,
                    true);
}

CUresult CUDAAPI cuMemsetD2D16_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
                                       size_t Width, size_t Height) {
  SIM_ENTER();
  return submit_set(dstDevice, dstPitch, us, 2, Width, Height, nullptr, DefaultStream::per_thread,
                    true);
}

CUresult CUDAAPI cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
                                    size_t Width, size_t Height, CUstream hStream) {
  SIM_ENTER();
  return submit_set(dstDevice, dstPitch, us, 2, Width, Height, hStream, DefaultStream::legacy,
                    false);
}

CUresult CUDAAPI cuMemsetD2D16Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
                                         size_t Width, size_t Height, CUstream hStream) {
  SIM_ENTER();
  return submit_set(dstDevice, dstPitch, us, 2, Width, Height, hStream, DefaultStream::per_thread,
                    false);
}

CUresult CUDAAPI cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  SIM_ENTER();
  return submit_set(dstDevice, 0, ui, 4, N, 1, nullptr, DefaultStream::legacy, true);
}

CUresult CUDAAPI cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N) {
  SIM_ENTER();
  return submit_set(dstDevice, 0, ui, 4, N, 1, nullptr, DefaultStream::per_thread, true);
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                  CUstream hStream) {
  SIM_ENTER();
  return submit_set(dstDevice, 0, ui, 4, N, 1, hStream, DefaultStream::legacy, false);
}

CUresult CUDAAPI cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                       CUstream hStream) {
  SIM_ENTER();
  return submit_set(dstDevice, 0, ui, 4, N, 1, hStream, DefaultStream::per_thread, false);
}

CUresult CUDAAPI cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                  size_t Width, size_t Height) {
  SIM_ENTER();
  return submit_set(dstDevice, dstPitch, ui, 4, Width, Height, nullptr, DefaultStream::legacy,
                    true);
}

CUresult CUDAAPI cuMemsetD2D32_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                       size_t Width, size_t Height) {
  SIM_ENTER();
  return submit_set(dstDevice, dstPitch, ui, 4, Width, Height, nullptr, DefaultStream::per_thread,
                    true);
}

CUresult CUDAAPI cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                    size_t Width, size_t Height, CUstream hStream) {
  SIM_ENTER();
  return submit_set(dstDevice, dstPitch, ui, 4, Width, Height, hStream, DefaultStream::legacy,
                    false);
}

CUresult CUDAAPI cuMemsetD2D32Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                         size_t Width, size_t Height, CUstream hStream) {
  SIM_ENTER();
  return submit_set(dstDevice, dstPitch, ui, 4, Width, Height, hStream, DefaultStream::per_thread,
                    false);
}

}  // extern "C"
