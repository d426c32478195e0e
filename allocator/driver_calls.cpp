// Counted driver calls (Note [Counted driver calls], driver_calls.h).
#include "allocator/driver_calls.h"

#include <chrono>

#include "allocator/driver.h"

namespace cuswap {
namespace {

template <typename Call>
CUresult waited(SwapStats& stats, Call&& call) noexcept {
  const auto start = std::chrono::steady_clock::now();
  const CUresult r = call();
  ++stats.host_waits;
  stats.host_wait_us += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                  std::chrono::steady_clock::now() - start)
                                                  .count());
  return r;
}

}  // namespace

CUresult DriverCalls::cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                  const CUmemAllocationProp* prop) noexcept {
  ++stats_.vmm_creates;
  return driver_.cuMemCreate(handle, size, prop, 0);
}

CUresult DriverCalls::cuMemRelease(CUmemGenericAllocationHandle handle) noexcept {
  ++stats_.vmm_releases;
  return driver_.cuMemRelease(handle);
}

CUresult DriverCalls::cuMemMap(CUdeviceptr ptr, size_t size,
                               CUmemGenericAllocationHandle handle) noexcept {
  ++stats_.vmm_maps;
  return driver_.cuMemMap(ptr, size, 0, handle, 0);
}

CUresult DriverCalls::cuMemUnmap(CUdeviceptr ptr, size_t size) noexcept {
  ++stats_.vmm_unmaps;
  return driver_.cuMemUnmap(ptr, size);
}

CUresult DriverCalls::cuMemSetAccess(CUdeviceptr ptr, size_t size,
                                     const CUmemAccessDesc* desc) noexcept {
  ++stats_.vmm_set_access;
  return driver_.cuMemSetAccess(ptr, size, desc, 1);
}

CUresult DriverCalls::cuMemAddressReserve(CUdeviceptr* ptr, size_t size,
                                          size_t alignment) noexcept {
  ++stats_.vmm_reserves;
  return driver_.cuMemAddressReserve(ptr, size, alignment, 0, 0);
}

CUresult DriverCalls::cuMemAddressFree(CUdeviceptr ptr, size_t size) noexcept {
  ++stats_.vmm_address_frees;
  return driver_.cuMemAddressFree(ptr, size);
}

CUresult DriverCalls::cuEventRecord(CUevent event, CUstream stream) noexcept {
  ++stats_.event_records;
  return driver_.cuEventRecord(event, stream);
}

CUresult DriverCalls::cuEventQuery(CUevent event) noexcept {
  ++stats_.event_queries;
  return driver_.cuEventQuery(event);
}

CUresult DriverCalls::cuStreamWaitEvent(CUstream stream, CUevent event) noexcept {
  ++stats_.stream_waits;
  return driver_.cuStreamWaitEvent(stream, event, 0);
}

CUresult DriverCalls::cuStreamSynchronize(CUstream stream) noexcept {
  return waited(stats_, [&] { return driver_.cuStreamSynchronize(stream); });
}

CUresult DriverCalls::cuEventSynchronize(CUevent event) noexcept {
  return waited(stats_, [&] { return driver_.cuEventSynchronize(event); });
}

}  // namespace cuswap
