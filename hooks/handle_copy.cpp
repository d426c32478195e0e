// Handlers: copies and sets. They name their buffers directly: each side
// that is device memory is looked up in the buffer table. 2-D and 3-D
// copies record the address of their first byte on each side.
#include <utility>

#include "hooks/handlers.h"

namespace cuswap::hooks {
namespace {

using D = trace::CopyDirection;

// One side of a 2-D/3-D copy descriptor: the address of its first byte if
// it is device (or unified) memory, 0 for host memory and arrays.
struct Side {
  uintptr_t device_address = 0;
  bool device = false;
};

Side side(CUmemorytype type, CUdeviceptr device, size_t x, size_t y, size_t z, size_t pitch,
          size_t height) {
  if (type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED) return {};
  return {device + z * pitch * height + y * pitch + x, type == CU_MEMORYTYPE_DEVICE};
}

D direction_of(const Side& dst, const Side& src, CUmemorytype dst_type, CUmemorytype src_type) {
  if (dst_type == CU_MEMORYTYPE_UNIFIED || src_type == CU_MEMORYTYPE_UNIFIED) return D::unknown;
  bool d = dst.device || dst_type == CU_MEMORYTYPE_ARRAY;
  bool s = src.device || src_type == CU_MEMORYTYPE_ARRAY;
  return d && s ? D::device_to_device
         : d    ? D::host_to_device
         : s    ? D::device_to_host
                : D::host_to_host;
}

// The device addresses of a 2-D/3-D copy's two sides (0 for host memory
// and arrays).
std::pair<uintptr_t, uintptr_t> device_sides(const CUDA_MEMCPY2D* p) {
  return {side(p->dstMemoryType, p->dstDevice, p->dstXInBytes, p->dstY, 0, p->dstPitch, 0)
              .device_address,
          side(p->srcMemoryType, p->srcDevice, p->srcXInBytes, p->srcY, 0, p->srcPitch, 0)
              .device_address};
}

template <typename Copy3D>
std::pair<uintptr_t, uintptr_t> device_sides(const Copy3D* p) {
  return {side(p->dstMemoryType, p->dstDevice, p->dstXInBytes, p->dstY, p->dstZ, p->dstPitch,
               p->dstHeight)
              .device_address,
          side(p->srcMemoryType, p->srcDevice, p->srcXInBytes, p->srcY, p->srcZ, p->srcPitch,
               p->srcHeight)
              .device_address};
}

void note_2d(Entry& entry, const CUDA_MEMCPY2D* p, CUstream stream) {
  Side dst = side(p->dstMemoryType, p->dstDevice, p->dstXInBytes, p->dstY, 0, p->dstPitch, 0);
  Side src = side(p->srcMemoryType, p->srcDevice, p->srcXInBytes, p->srcY, 0, p->srcPitch, 0);
  note_copy(*entry.active(), dst.device_address, src.device_address, p->WidthInBytes * p->Height,
            direction_of(dst, src, p->dstMemoryType, p->srcMemoryType), entry.stream_value(stream),
            false);
}

void note_3d(Entry& entry, const CUDA_MEMCPY3D* p, CUstream stream) {
  Side dst = side(p->dstMemoryType, p->dstDevice, p->dstXInBytes, p->dstY, p->dstZ, p->dstPitch,
                  p->dstHeight);
  Side src = side(p->srcMemoryType, p->srcDevice, p->srcXInBytes, p->srcY, p->srcZ, p->srcPitch,
                  p->srcHeight);
  note_copy(*entry.active(), dst.device_address, src.device_address,
            p->WidthInBytes * p->Height * p->Depth,
            direction_of(dst, src, p->dstMemoryType, p->srcMemoryType), entry.stream_value(stream),
            false);
}

void note_3d_peer(Entry& entry, const CUDA_MEMCPY3D_PEER* p, CUstream stream) {
  Side dst = side(p->dstMemoryType, p->dstDevice, p->dstXInBytes, p->dstY, p->dstZ, p->dstPitch,
                  p->dstHeight);
  Side src = side(p->srcMemoryType, p->srcDevice, p->srcXInBytes, p->srcY, p->srcZ, p->srcPitch,
                  p->srcHeight);
  D direction = p->dstContext != p->srcContext
                    ? D::peer
                    : direction_of(dst, src, p->dstMemoryType, p->srcMemoryType);
  note_copy(*entry.active(), dst.device_address, src.device_address,
            p->WidthInBytes * p->Height * p->Depth, direction, entry.stream_value(stream), false);
}

void note_linear(Entry& entry, uintptr_t dst, uintptr_t src, size_t bytes, D direction,
                 CUstream stream) {
  note_copy(*entry.active(), dst, src, bytes, direction, entry.stream_value(stream), false);
}

void note_set(Entry& entry, CUdeviceptr dst, size_t bytes, CUstream stream) {
  note_copy(*entry.active(), dst, 0, bytes, D::device_to_device, entry.stream_value(stream), true);
}

// Makes the copy's device buffers resident before the call (the host side
// of a host-to-device copy is scanned for pointers), records its use after.
template <typename Call>
CUresult copy(Entry& entry, CUstream stream, uintptr_t dst, uintptr_t src, const void* host_source,
              uint64_t bytes, Call&& call) noexcept {
  Runtime& rt = *entry.active();
  const CUstream handle = entry.stream_handle(stream);
  Use use;
  if (CUresult r = begin_copy(rt, handle, dst, src, host_source, bytes, use); r != CUDA_SUCCESS)
    return r;
  CUresult r = call();
  end_copy(rt, handle, use, r);
  return r;
}

uintptr_t host(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

}  // namespace

// ---------------------------------------------------------------------------
// 1-D copies

CUresult handle_cuMemcpy(Entry& entry, Real_cuMemcpy real, CUdeviceptr dst, CUdeviceptr src,
                         size_t ByteCount) noexcept {
  CUresult r =
      copy(entry, nullptr, dst, src, nullptr, ByteCount, [&] { return real(dst, src, ByteCount); });
  if (r == CUDA_SUCCESS) note_linear(entry, dst, src, ByteCount, D::unknown, nullptr);
  return r;
}

CUresult handle_cuMemcpyAsync(Entry& entry, Real_cuMemcpyAsync real, CUdeviceptr dst,
                              CUdeviceptr src, size_t ByteCount, CUstream hStream) noexcept {
  CUresult r = copy(entry, hStream, dst, src, nullptr, ByteCount,
                    [&] { return real(dst, src, ByteCount, hStream); });
  if (r == CUDA_SUCCESS) note_linear(entry, dst, src, ByteCount, D::unknown, hStream);
  return r;
}

CUresult handle_cuMemcpyHtoD(Entry& entry, Real_cuMemcpyHtoD_v2 real, CUdeviceptr dstDevice,
                             const void* srcHost, size_t ByteCount) noexcept {
  CUresult r = copy(entry, nullptr, dstDevice, 0, srcHost, ByteCount,
                    [&] { return real(dstDevice, srcHost, ByteCount); });
  if (r == CUDA_SUCCESS)
    note_linear(entry, dstDevice, host(srcHost), ByteCount, D::host_to_device, nullptr);
  return r;
}

CUresult handle_cuMemcpyDtoH(Entry& entry, Real_cuMemcpyDtoH_v2 real, void* dstHost,
                             CUdeviceptr srcDevice, size_t ByteCount) noexcept {
  CUresult r = copy(entry, nullptr, 0, srcDevice, nullptr, ByteCount,
                    [&] { return real(dstHost, srcDevice, ByteCount); });
  if (r == CUDA_SUCCESS)
    note_linear(entry, host(dstHost), srcDevice, ByteCount, D::device_to_host, nullptr);
  return r;
}

CUresult handle_cuMemcpyDtoD(Entry& entry, Real_cuMemcpyDtoD_v2 real, CUdeviceptr dstDevice,
                             CUdeviceptr srcDevice, size_t ByteCount) noexcept {
  CUresult r = copy(entry, nullptr, dstDevice, srcDevice, nullptr, ByteCount,
                    [&] { return real(dstDevice, srcDevice, ByteCount); });
  if (r == CUDA_SUCCESS)
    note_linear(entry, dstDevice, srcDevice, ByteCount, D::device_to_device, nullptr);
  return r;
}

CUresult handle_cuMemcpyHtoDAsync(Entry& entry, Real_cuMemcpyHtoDAsync_v2 real,
                                  CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                  CUstream hStream) noexcept {
  CUresult r = copy(entry, hStream, dstDevice, 0, srcHost, ByteCount,
                    [&] { return real(dstDevice, srcHost, ByteCount, hStream); });
  if (r == CUDA_SUCCESS)
    note_linear(entry, dstDevice, host(srcHost), ByteCount, D::host_to_device, hStream);
  return r;
}

CUresult handle_cuMemcpyDtoHAsync(Entry& entry, Real_cuMemcpyDtoHAsync_v2 real, void* dstHost,
                                  CUdeviceptr srcDevice, size_t ByteCount,
                                  CUstream hStream) noexcept {
  CUresult r = copy(entry, hStream, 0, srcDevice, nullptr, ByteCount,
                    [&] { return real(dstHost, srcDevice, ByteCount, hStream); });
  if (r == CUDA_SUCCESS)
    note_linear(entry, host(dstHost), srcDevice, ByteCount, D::device_to_host, hStream);
  return r;
}

CUresult handle_cuMemcpyDtoDAsync(Entry& entry, Real_cuMemcpyDtoDAsync_v2 real,
                                  CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                  CUstream hStream) noexcept {
  CUresult r = copy(entry, hStream, dstDevice, srcDevice, nullptr, ByteCount,
                    [&] { return real(dstDevice, srcDevice, ByteCount, hStream); });
  if (r == CUDA_SUCCESS)
    note_linear(entry, dstDevice, srcDevice, ByteCount, D::device_to_device, hStream);
  return r;
}

CUresult handle_cuMemcpyDtoA(Entry& entry, Real_cuMemcpyDtoA_v2 real, CUarray dstArray,
                             size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount) noexcept {
  CUresult r = copy(entry, nullptr, 0, srcDevice, nullptr, ByteCount,
                    [&] { return real(dstArray, dstOffset, srcDevice, ByteCount); });
  if (r == CUDA_SUCCESS) note_linear(entry, 0, srcDevice, ByteCount, D::device_to_device, nullptr);
  return r;
}

CUresult handle_cuMemcpyAtoD(Entry& entry, Real_cuMemcpyAtoD_v2 real, CUdeviceptr dstDevice,
                             CUarray srcArray, size_t srcOffset, size_t ByteCount) noexcept {
  CUresult r = copy(entry, nullptr, dstDevice, 0, nullptr, ByteCount,
                    [&] { return real(dstDevice, srcArray, srcOffset, ByteCount); });
  if (r == CUDA_SUCCESS) note_linear(entry, dstDevice, 0, ByteCount, D::device_to_device, nullptr);
  return r;
}

CUresult handle_cuMemcpyPeer(Entry& entry, Real_cuMemcpyPeer real, CUdeviceptr dstDevice,
                             CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                             size_t ByteCount) noexcept {
  CUresult r = copy(entry, nullptr, dstDevice, srcDevice, nullptr, ByteCount,
                    [&] { return real(dstDevice, dstContext, srcDevice, srcContext, ByteCount); });
  if (r == CUDA_SUCCESS)
    note_linear(entry, dstDevice, srcDevice, ByteCount,
                dstContext != srcContext ? D::peer : D::device_to_device, nullptr);
  return r;
}

CUresult handle_cuMemcpyPeerAsync(Entry& entry, Real_cuMemcpyPeerAsync real, CUdeviceptr dstDevice,
                                  CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                                  size_t ByteCount, CUstream hStream) noexcept {
  CUresult r = copy(entry, hStream, dstDevice, srcDevice, nullptr, ByteCount, [&] {
    return real(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream);
  });
  if (r == CUDA_SUCCESS)
    note_linear(entry, dstDevice, srcDevice, ByteCount,
                dstContext != srcContext ? D::peer : D::device_to_device, hStream);
  return r;
}

// ---------------------------------------------------------------------------
// 2-D and 3-D copies

CUresult handle_cuMemcpy2D(Entry& entry, Real_cuMemcpy2D_v2 real,
                           const CUDA_MEMCPY2D* pCopy) noexcept {
  if (!pCopy) return real(pCopy);
  auto [dst, src] = device_sides(pCopy);
  CUresult r = copy(entry, nullptr, dst, src, nullptr, 0, [&] { return real(pCopy); });
  if (r == CUDA_SUCCESS) note_2d(entry, pCopy, nullptr);
  return r;
}

CUresult handle_cuMemcpy2DAsync(Entry& entry, Real_cuMemcpy2DAsync_v2 real,
                                const CUDA_MEMCPY2D* pCopy, CUstream hStream) noexcept {
  if (!pCopy) return real(pCopy, hStream);
  auto [dst, src] = device_sides(pCopy);
  CUresult r = copy(entry, hStream, dst, src, nullptr, 0, [&] { return real(pCopy, hStream); });
  if (r == CUDA_SUCCESS) note_2d(entry, pCopy, hStream);
  return r;
}

CUresult handle_cuMemcpy3D(Entry& entry, Real_cuMemcpy3D_v2 real,
                           const CUDA_MEMCPY3D* pCopy) noexcept {
  if (!pCopy) return real(pCopy);
  auto [dst, src] = device_sides(pCopy);
  CUresult r = copy(entry, nullptr, dst, src, nullptr, 0, [&] { return real(pCopy); });
  if (r == CUDA_SUCCESS) note_3d(entry, pCopy, nullptr);
  return r;
}

CUresult handle_cuMemcpy3DAsync(Entry& entry, Real_cuMemcpy3DAsync_v2 real,
                                const CUDA_MEMCPY3D* pCopy, CUstream hStream) noexcept {
  if (!pCopy) return real(pCopy, hStream);
  auto [dst, src] = device_sides(pCopy);
  CUresult r = copy(entry, hStream, dst, src, nullptr, 0, [&] { return real(pCopy, hStream); });
  if (r == CUDA_SUCCESS) note_3d(entry, pCopy, hStream);
  return r;
}

CUresult handle_cuMemcpy3DPeer(Entry& entry, Real_cuMemcpy3DPeer real,
                               const CUDA_MEMCPY3D_PEER* pCopy) noexcept {
  if (!pCopy) return real(pCopy);
  auto [dst, src] = device_sides(pCopy);
  CUresult r = copy(entry, nullptr, dst, src, nullptr, 0, [&] { return real(pCopy); });
  if (r == CUDA_SUCCESS) note_3d_peer(entry, pCopy, nullptr);
  return r;
}

CUresult handle_cuMemcpy3DPeerAsync(Entry& entry, Real_cuMemcpy3DPeerAsync real,
                                    const CUDA_MEMCPY3D_PEER* pCopy, CUstream hStream) noexcept {
  if (!pCopy) return real(pCopy, hStream);
  auto [dst, src] = device_sides(pCopy);
  CUresult r = copy(entry, hStream, dst, src, nullptr, 0, [&] { return real(pCopy, hStream); });
  if (r == CUDA_SUCCESS) note_3d_peer(entry, pCopy, hStream);
  return r;
}

// ---------------------------------------------------------------------------
// Sets: the bytes written are elements x element size.

CUresult handle_cuMemsetD8(Entry& entry, Real_cuMemsetD8_v2 real, CUdeviceptr dstDevice,
                           unsigned char uc, size_t N) noexcept {
  CUresult r =
      copy(entry, nullptr, dstDevice, 0, nullptr, N, [&] { return real(dstDevice, uc, N); });
  if (r == CUDA_SUCCESS) note_set(entry, dstDevice, N, nullptr);
  return r;
}

CUresult handle_cuMemsetD16(Entry& entry, Real_cuMemsetD16_v2 real, CUdeviceptr dstDevice,
                            unsigned short us, size_t N) noexcept {
  CUresult r =
      copy(entry, nullptr, dstDevice, 0, nullptr, N * 2, [&] { return real(dstDevice, us, N); });
  if (r == CUDA_SUCCESS) note_set(entry, dstDevice, N * 2, nullptr);
  return r;
}

CUresult handle_cuMemsetD32(Entry& entry, Real_cuMemsetD32_v2 real, CUdeviceptr dstDevice,
                            unsigned int ui, size_t N) noexcept {
  CUresult r =
      copy(entry, nullptr, dstDevice, 0, nullptr, N * 4, [&] { return real(dstDevice, ui, N); });
  if (r == CUDA_SUCCESS) note_set(entry, dstDevice, N * 4, nullptr);
  return r;
}

CUresult handle_cuMemsetD8Async(Entry& entry, Real_cuMemsetD8Async real, CUdeviceptr dstDevice,
                                unsigned char uc, size_t N, CUstream hStream) noexcept {
  CUresult r = copy(entry, hStream, dstDevice, 0, nullptr, N,
                    [&] { return real(dstDevice, uc, N, hStream); });
  if (r == CUDA_SUCCESS) note_set(entry, dstDevice, N, hStream);
  return r;
}

CUresult handle_cuMemsetD16Async(Entry& entry, Real_cuMemsetD16Async real, CUdeviceptr dstDevice,
                                 unsigned short us, size_t N, CUstream hStream) noexcept {
  CUresult r = copy(entry, hStream, dstDevice, 0, nullptr, N * 2,
                    [&] { return real(dstDevice, us, N, hStream); });
  if (r == CUDA_SUCCESS) note_set(entry, dstDevice, N * 2, hStream);
  return r;
}

CUresult handle_cuMemsetD32Async(Entry& entry, Real_cuMemsetD32Async real, CUdeviceptr dstDevice,
                                 unsigned int ui, size_t N, CUstream hStream) noexcept {
  CUresult r = copy(entry, hStream, dstDevice, 0, nullptr, N * 4,
                    [&] { return real(dstDevice, ui, N, hStream); });
  if (r == CUDA_SUCCESS) note_set(entry, dstDevice, N * 4, hStream);
  return r;
}

CUresult handle_cuMemsetD2D8(Entry& entry, Real_cuMemsetD2D8_v2 real, CUdeviceptr dstDevice,
                             size_t dstPitch, unsigned char uc, size_t Width,
                             size_t Height) noexcept {
  CUresult r = copy(entry, nullptr, dstDevice, 0, nullptr, Width * Height,
                    [&] { return real(dstDevice, dstPitch, uc, Width, Height); });
  if (r == CUDA_SUCCESS) note_set(entry, dstDevice, Width * Height, nullptr);
  return r;
}

CUresult handle_cuMemsetD2D16(Entry& entry, Real_cuMemsetD2D16_v2 real, CUdeviceptr dstDevice,
                              size_t dstPitch, unsigned short us, size_t Width,
                              size_t Height) noexcept {
  CUresult r = copy(entry, nullptr, dstDevice, 0, nullptr, Width * Height * 2,
                    [&] { return real(dstDevice, dstPitch, us, Width, Height); });
  if (r == CUDA_SUCCESS) note_set(entry, dstDevice, Width * Height * 2, nullptr);
  return r;
}

CUresult handle_cuMemsetD2D32(Entry& entry, Real_cuMemsetD2D32_v2 real, CUdeviceptr dstDevice,
                              size_t dstPitch, unsigned int ui, size_t Width,
                              size_t Height) noexcept {
  CUresult r = copy(entry, nullptr, dstDevice, 0, nullptr, Width * Height * 4,
                    [&] { return real(dstDevice, dstPitch, ui, Width, Height); });
  if (r == CUDA_SUCCESS) note_set(entry, dstDevice, Width * Height * 4, nullptr);
  return r;
}

CUresult handle_cuMemsetD2D8Async(Entry& entry, Real_cuMemsetD2D8Async real, CUdeviceptr dstDevice,
                                  size_t dstPitch, unsigned char uc, size_t Width, size_t Height,
                                  CUstream hStream) noexcept {
  CUresult r = copy(entry, hStream, dstDevice, 0, nullptr, Width * Height,
                    [&] { return real(dstDevice, dstPitch, uc, Width, Height, hStream); });
  if (r == CUDA_SUCCESS) note_set(entry, dstDevice, Width * Height, hStream);
  return r;
}

CUresult handle_cuMemsetD2D16Async(Entry& entry, Real_cuMemsetD2D16Async real,
                                   CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
                                   size_t Width, size_t Height, CUstream hStream) noexcept {
  CUresult r = copy(entry, hStream, dstDevice, 0, nullptr, Width * Height * 2,
                    [&] { return real(dstDevice, dstPitch, us, Width, Height, hStream); });
  if (r == CUDA_SUCCESS) note_set(entry, dstDevice, Width * Height * 2, hStream);
  return r;
}

CUresult handle_cuMemsetD2D32Async(Entry& entry, Real_cuMemsetD2D32Async real,
                                   CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                   size_t Width, size_t Height, CUstream hStream) noexcept {
  CUresult r = copy(entry, hStream, dstDevice, 0, nullptr, Width * Height * 4,
                    [&] { return real(dstDevice, dstPitch, ui, Width, Height, hStream); });
  if (r == CUDA_SUCCESS) note_set(entry, dstDevice, Width * Height * 4, hStream);
  return r;
}

}  // namespace cuswap::hooks
