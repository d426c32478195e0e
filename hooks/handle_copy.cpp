// Handlers: copies and sets. They name their buffers directly: each side
// that is device memory is looked up in the buffer table. 2-D and 3-D
// copies record the address of their first byte on each side.
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

// What one copy or set touches, from its arguments: each side's device
// address (0: host memory or an array) and host pointer (for the trace),
// a host source to scan for pointers, the bytes it moves, the bytes from
// each device side's first byte that must lie within its buffer (0 for
// 2-D and 3-D copies, whose rows are pitched), and the trace's direction.
struct Shape {
  uintptr_t dst = 0, src = 0;
  const void* host_dst = nullptr;
  const void* host_src = nullptr;
  uint64_t bytes = 0;
  uint64_t checked_bytes = 0;
  D direction = D::unknown;
  bool set = false;
};

uintptr_t host(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

Shape linear(uintptr_t dst, uintptr_t src, uint64_t bytes, D direction) {
  return {dst, src, nullptr, nullptr, bytes, bytes, direction, false};
}
Shape to_device(CUdeviceptr dst, const void* src, uint64_t bytes) {
  return {dst, 0, nullptr, src, bytes, bytes, D::host_to_device, false};
}
Shape to_host(void* dst, CUdeviceptr src, uint64_t bytes) {
  return {0, src, dst, nullptr, bytes, bytes, D::device_to_host, false};
}
Shape set(CUdeviceptr dst, uint64_t bytes) {
  return {dst, 0, nullptr, nullptr, bytes, bytes, D::device_to_device, true};
}
D between(CUcontext dst, CUcontext src) {
  return dst != src ? D::peer : D::device_to_device;
}

Shape shape_of(const CUDA_MEMCPY2D* p) {
  Side dst = side(p->dstMemoryType, p->dstDevice, p->dstXInBytes, p->dstY, 0, p->dstPitch, 0);
  Side src = side(p->srcMemoryType, p->srcDevice, p->srcXInBytes, p->srcY, 0, p->srcPitch, 0);
  return {dst.device_address,
          src.device_address,
          nullptr,
          nullptr,
          p->WidthInBytes * p->Height,
          0,
          direction_of(dst, src, p->dstMemoryType, p->srcMemoryType),
          false};
}

template <typename Copy3D>
Shape shape_of_3d(const Copy3D* p, bool peer) {
  Side dst = side(p->dstMemoryType, p->dstDevice, p->dstXInBytes, p->dstY, p->dstZ, p->dstPitch,
                  p->dstHeight);
  Side src = side(p->srcMemoryType, p->srcDevice, p->srcXInBytes, p->srcY, p->srcZ, p->srcPitch,
                  p->srcHeight);
  return {dst.device_address,
          src.device_address,
          nullptr,
          nullptr,
          p->WidthInBytes * p->Height * p->Depth,
          0,
          peer ? D::peer : direction_of(dst, src, p->dstMemoryType, p->srcMemoryType),
          false};
}

Shape shape_of(const CUDA_MEMCPY3D* p) {
  return shape_of_3d(p, false);
}
Shape shape_of(const CUDA_MEMCPY3D_PEER* p) {
  return shape_of_3d(p, p->dstContext != p->srcContext);
}

// The one path of every copy and set: the device sides made resident and
// checked (a host source scanned for pointers) before the call, the use
// recorded after it, and a copy that happened noted in the trace.
template <typename Real, typename... Args>
CUresult through(Entry& entry, CUstream stream, const Shape& shape, Real real,
                 Args... args) noexcept {
  Runtime& rt = *entry.active();
  const CUstream handle = entry.stream_handle(stream);
  Use use;
  if (CUresult r =
          begin_copy(rt, handle, shape.dst, shape.src, shape.host_src, shape.checked_bytes, use);
      r != CUDA_SUCCESS)
    return r;
  const CUresult r = real(args...);
  end_copy(rt, handle, use, r);
  if (r == CUDA_SUCCESS)
    note_copy(rt, shape.dst ? shape.dst : host(shape.host_dst),
              shape.src ? shape.src : host(shape.host_src), shape.bytes, shape.direction,
              entry.stream_value(stream), shape.set);
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------
// 1-D copies

CUresult handle_cuMemcpy(Entry& entry, Real_cuMemcpy real, CUdeviceptr dst, CUdeviceptr src,
                         size_t ByteCount) noexcept {
  return through(entry, nullptr, linear(dst, src, ByteCount, D::unknown), real, dst, src,
                 ByteCount);
}

CUresult handle_cuMemcpyAsync(Entry& entry, Real_cuMemcpyAsync real, CUdeviceptr dst,
                              CUdeviceptr src, size_t ByteCount, CUstream hStream) noexcept {
  return through(entry, hStream, linear(dst, src, ByteCount, D::unknown), real, dst, src, ByteCount,
                 hStream);
}

CUresult handle_cuMemcpyHtoD(Entry& entry, Real_cuMemcpyHtoD_v2 real, CUdeviceptr dstDevice,
                             const void* srcHost, size_t ByteCount) noexcept {
  return through(entry, nullptr, to_device(dstDevice, srcHost, ByteCount), real, dstDevice, srcHost,
                 ByteCount);
}

CUresult handle_cuMemcpyDtoH(Entry& entry, Real_cuMemcpyDtoH_v2 real, void* dstHost,
                             CUdeviceptr srcDevice, size_t ByteCount) noexcept {
  return through(entry, nullptr, to_host(dstHost, srcDevice, ByteCount), real, dstHost, srcDevice,
                 ByteCount);
}

CUresult handle_cuMemcpyDtoD(Entry& entry, Real_cuMemcpyDtoD_v2 real, CUdeviceptr dstDevice,
                             CUdeviceptr srcDevice, size_t ByteCount) noexcept {
  return through(entry, nullptr, linear(dstDevice, srcDevice, ByteCount, D::device_to_device), real,
                 dstDevice, srcDevice, ByteCount);
}

CUresult handle_cuMemcpyHtoDAsync(Entry& entry, Real_cuMemcpyHtoDAsync_v2 real,
                                  CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                                  CUstream hStream) noexcept {
  return through(entry, hStream, to_device(dstDevice, srcHost, ByteCount), real, dstDevice, srcHost,
                 ByteCount, hStream);
}

CUresult handle_cuMemcpyDtoHAsync(Entry& entry, Real_cuMemcpyDtoHAsync_v2 real, void* dstHost,
                                  CUdeviceptr srcDevice, size_t ByteCount,
                                  CUstream hStream) noexcept {
  return through(entry, hStream, to_host(dstHost, srcDevice, ByteCount), real, dstHost, srcDevice,
                 ByteCount, hStream);
}

CUresult handle_cuMemcpyDtoDAsync(Entry& entry, Real_cuMemcpyDtoDAsync_v2 real,
                                  CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                  CUstream hStream) noexcept {
  return through(entry, hStream, linear(dstDevice, srcDevice, ByteCount, D::device_to_device), real,
                 dstDevice, srcDevice, ByteCount, hStream);
}

CUresult handle_cuMemcpyDtoA(Entry& entry, Real_cuMemcpyDtoA_v2 real, CUarray dstArray,
                             size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount) noexcept {
  return through(entry, nullptr, linear(0, srcDevice, ByteCount, D::device_to_device), real,
                 dstArray, dstOffset, srcDevice, ByteCount);
}

CUresult handle_cuMemcpyAtoD(Entry& entry, Real_cuMemcpyAtoD_v2 real, CUdeviceptr dstDevice,
                             CUarray srcArray, size_t srcOffset, size_t ByteCount) noexcept {
  return through(entry, nullptr, linear(dstDevice, 0, ByteCount, D::device_to_device), real,
                 dstDevice, srcArray, srcOffset, ByteCount);
}

CUresult handle_cuMemcpyPeer(Entry& entry, Real_cuMemcpyPeer real, CUdeviceptr dstDevice,
                             CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                             size_t ByteCount) noexcept {
  return through(entry, nullptr,
                 linear(dstDevice, srcDevice, ByteCount, between(dstContext, srcContext)), real,
                 dstDevice, dstContext, srcDevice, srcContext, ByteCount);
}

CUresult handle_cuMemcpyPeerAsync(Entry& entry, Real_cuMemcpyPeerAsync real, CUdeviceptr dstDevice,
                                  CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                                  size_t ByteCount, CUstream hStream) noexcept {
  return through(entry, hStream,
                 linear(dstDevice, srcDevice, ByteCount, between(dstContext, srcContext)), real,
                 dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream);
}

// ---------------------------------------------------------------------------
// 2-D and 3-D copies: a null descriptor goes straight to the driver, which
// says what is wrong with it.

CUresult handle_cuMemcpy2D(Entry& entry, Real_cuMemcpy2D_v2 real,
                           const CUDA_MEMCPY2D* pCopy) noexcept {
  return pCopy ? through(entry, nullptr, shape_of(pCopy), real, pCopy) : real(pCopy);
}

CUresult handle_cuMemcpy2DAsync(Entry& entry, Real_cuMemcpy2DAsync_v2 real,
                                const CUDA_MEMCPY2D* pCopy, CUstream hStream) noexcept {
  return pCopy ? through(entry, hStream, shape_of(pCopy), real, pCopy, hStream)
               : real(pCopy, hStream);
}

CUresult handle_cuMemcpy3D(Entry& entry, Real_cuMemcpy3D_v2 real,
                           const CUDA_MEMCPY3D* pCopy) noexcept {
  return pCopy ? through(entry, nullptr, shape_of(pCopy), real, pCopy) : real(pCopy);
}

CUresult handle_cuMemcpy3DAsync(Entry& entry, Real_cuMemcpy3DAsync_v2 real,
                                const CUDA_MEMCPY3D* pCopy, CUstream hStream) noexcept {
  return pCopy ? through(entry, hStream, shape_of(pCopy), real, pCopy, hStream)
               : real(pCopy, hStream);
}

CUresult handle_cuMemcpy3DPeer(Entry& entry, Real_cuMemcpy3DPeer real,
                               const CUDA_MEMCPY3D_PEER* pCopy) noexcept {
  return pCopy ? through(entry, nullptr, shape_of(pCopy), real, pCopy) : real(pCopy);
}

CUresult handle_cuMemcpy3DPeerAsync(Entry& entry, Real_cuMemcpy3DPeerAsync real,
                                    const CUDA_MEMCPY3D_PEER* pCopy, CUstream hStream) noexcept {
  return pCopy ? through(entry, hStream, shape_of(pCopy), real, pCopy, hStream)
               : real(pCopy, hStream);
}

// ---------------------------------------------------------------------------
// Sets: the bytes written are elements x element size.

CUresult handle_cuMemsetD8(Entry& entry, Real_cuMemsetD8_v2 real, CUdeviceptr dstDevice,
                           unsigned char uc, size_t N) noexcept {
  return through(entry, nullptr, set(dstDevice, N), real, dstDevice, uc, N);
}

CUresult handle_cuMemsetD16(Entry& entry, Real_cuMemsetD16_v2 real, CUdeviceptr dstDevice,
                            unsigned short us, size_t N) noexcept {
  return through(entry, nullptr, set(dstDevice, N * 2), real, dstDevice, us, N);
}

CUresult handle_cuMemsetD32(Entry& entry, Real_cuMemsetD32_v2 real, CUdeviceptr dstDevice,
                            unsigned int ui, size_t N) noexcept {
  return through(entry, nullptr, set(dstDevice, N * 4), real, dstDevice, ui, N);
}

CUresult handle_cuMemsetD8Async(Entry& entry, Real_cuMemsetD8Async real, CUdeviceptr dstDevice,
                                unsigned char uc, size_t N, CUstream hStream) noexcept {
  return through(entry, hStream, set(dstDevice, N), real, dstDevice, uc, N, hStream);
}

CUresult handle_cuMemsetD16Async(Entry& entry, Real_cuMemsetD16Async real, CUdeviceptr dstDevice,
                                 unsigned short us, size_t N, CUstream hStream) noexcept {
  return through(entry, hStream, set(dstDevice, N * 2), real, dstDevice, us, N, hStream);
}

CUresult handle_cuMemsetD32Async(Entry& entry, Real_cuMemsetD32Async real, CUdeviceptr dstDevice,
                                 unsigned int ui, size_t N, CUstream hStream) noexcept {
  return through(entry, hStream, set(dstDevice, N * 4), real, dstDevice, ui, N, hStream);
}

CUresult handle_cuMemsetD2D8(Entry& entry, Real_cuMemsetD2D8_v2 real, CUdeviceptr dstDevice,
                             size_t dstPitch, unsigned char uc, size_t Width,
                             size_t Height) noexcept {
  return through(entry, nullptr, set(dstDevice, Width * Height), real, dstDevice, dstPitch, uc,
                 Width, Height);
}

CUresult handle_cuMemsetD2D16(Entry& entry, Real_cuMemsetD2D16_v2 real, CUdeviceptr dstDevice,
                              size_t dstPitch, unsigned short us, size_t Width,
                              size_t Height) noexcept {
  return through(entry, nullptr, set(dstDevice, Width * Height * 2), real, dstDevice, dstPitch, us,
                 Width, Height);
}

CUresult handle_cuMemsetD2D32(Entry& entry, Real_cuMemsetD2D32_v2 real, CUdeviceptr dstDevice,
                              size_t dstPitch, unsigned int ui, size_t Width,
                              size_t Height) noexcept {
  return through(entry, nullptr, set(dstDevice, Width * Height * 4), real, dstDevice, dstPitch, ui,
                 Width, Height);
}

CUresult handle_cuMemsetD2D8Async(Entry& entry, Real_cuMemsetD2D8Async real, CUdeviceptr dstDevice,
                                  size_t dstPitch, unsigned char uc, size_t Width, size_t Height,
                                  CUstream hStream) noexcept {
  return through(entry, hStream, set(dstDevice, Width * Height), real, dstDevice, dstPitch, uc,
                 Width, Height, hStream);
}

CUresult handle_cuMemsetD2D16Async(Entry& entry, Real_cuMemsetD2D16Async real,
                                   CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
                                   size_t Width, size_t Height, CUstream hStream) noexcept {
  return through(entry, hStream, set(dstDevice, Width * Height * 2), real, dstDevice, dstPitch, us,
                 Width, Height, hStream);
}

CUresult handle_cuMemsetD2D32Async(Entry& entry, Real_cuMemsetD2D32Async real,
                                   CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                   size_t Width, size_t Height, CUstream hStream) noexcept {
  return through(entry, hStream, set(dstDevice, Width * Height * 4), real, dstDevice, dstPitch, ui,
                 Width, Height, hStream);
}

}  // namespace cuswap::hooks
