// The allocator's driver calls that cost host time on a GPU, counted.
//
// Note [Counted driver calls]: on a GPU the virtual-memory calls block the
// calling thread for 1 to 70 µs each, and a synchronize blocks it until the
// device gets there; the allocator runs on the framework's thread, so
// either one slows training wherever it happens on the hot path. Every such
// call the allocator makes goes through here and is counted by kind in its
// stats (swap_stats.h), with the wall-clock time of the waits, so that a run
// on a GPU says where its host time went as simcuda's counters do in a
// replay. Calls are made with Allocator::mu_ held, which guards the stats.
#pragma once

#include <cuda.h>

#include "allocator/swap_stats.h"

namespace cuswap {

struct Driver;  // allocator/driver.h, kept out of this header (swap_allocator.h includes it)

class DriverCalls {
 public:
  DriverCalls(const Driver& driver, SwapStats& stats) noexcept : driver_(driver), stats_(stats) {}

  const Driver& driver() const noexcept { return driver_; }

  CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                       const CUmemAllocationProp* prop) noexcept;
  CUresult cuMemRelease(CUmemGenericAllocationHandle handle) noexcept;
  CUresult cuMemMap(CUdeviceptr ptr, size_t size, CUmemGenericAllocationHandle handle) noexcept;
  CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) noexcept;
  CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc) noexcept;
  CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment) noexcept;
  CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) noexcept;
  CUresult cuEventRecord(CUevent event, CUstream stream) noexcept;
  CUresult cuEventQuery(CUevent event) noexcept;
  CUresult cuStreamWaitEvent(CUstream stream, CUevent event) noexcept;
  // Host waits: counted and timed.
  CUresult cuStreamSynchronize(CUstream stream) noexcept;
  CUresult cuEventSynchronize(CUevent event) noexcept;

 private:
  const Driver& driver_;
  SwapStats& stats_;
};

}  // namespace cuswap
