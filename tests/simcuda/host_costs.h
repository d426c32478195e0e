// simcuda: what a driver call costs the thread that makes it.
//
// Note [Host costs]: a GPU charges host time for more than launches. The
// virtual-memory calls block their caller for 1 to 70 µs each, the driver's
// own cuMemAlloc maps pages and cuMemFree waits for the device, pinning host
// memory runs at a few GB/s, and every record, wait, query and synchronize
// is a call into the driver. An allocator that makes those calls on a
// framework's hot path is slow on a GPU; a model that charged nothing for
// them called it fast (a ResNet-50 that trained at 5-7% of stock speed on an
// H200 replayed here within 15% of its bound). So each call below moves the
// calling thread's clock on by its cost (Note [Host time is per thread],
// sim.h): a cost per call, and for calls whose cost grows with size a cost
// per 2 MiB page, in fractions of a page for smaller sizes.
//
// The defaults are the H200's medians where the GPU check measured them
// (docs/gpu-check.md: driver 580, CUDA 13.0, PCIe 5), and otherwise the
// published figure named beside each; `host_costs:false` charges only
// launches and unanswered queries, as simcuda did before (for tests that
// count virtual time by hand). Each is a SIMCUDA_CONF key of its own.
#pragma once

// X(key, default in µs, what it charges, where the default comes from)
#define SIMCUDA_HOST_COSTS(X)                                                                     \
  X(launch_latency_us, 4, "every call that enqueues a kernel, copy or set",                       \
    "typical cuLaunchKernel host time; the H200 profile showed 9.4 us per launch with PyTorch's " \
    "own overhead")                                                                               \
  X(query_cost_us, 1, "a cuEventQuery or cuStreamQuery", "estimate, to be replaced by the probe") \
  X(event_record_us, 2, "a cuEventRecord", "estimate, to be replaced by the probe")               \
  X(stream_wait_us, 2, "a cuStreamWaitEvent", "estimate, to be replaced by the probe")            \
  X(sync_us, 3, "a stream, event or context synchronize, beside the wait itself",                 \
    "estimate, to be replaced by the probe")                                                      \
  X(mem_create_us, 11, "a cuMemCreate", "H200: 9-14 us at 2 and at 64 MiB")                       \
  X(mem_map_us, 1, "a cuMemMap", "H200: 1 us at 2 and at 64 MiB")                                 \
  X(mem_set_access_us, 24.5, "a cuMemSetAccess", "H200: 22-29 us at 2 MiB")                       \
  X(mem_set_access_page_us, 0.5, "a cuMemSetAccess, per page", "H200: 35-45 us at 64 MiB")        \
  X(mem_unmap_us, 16.8, "a cuMemUnmap", "H200: 15-19 us at 2 MiB")                                \
  X(mem_unmap_page_us, 0.2, "a cuMemUnmap, per page", "H200: 21-26 us at 64 MiB")                 \
  X(mem_release_us, 10.8, "a cuMemRelease", "H200: 10-14 us at 2 MiB")                            \
  X(mem_release_page_us, 1.2, "a cuMemRelease, per page", "H200: 28-70 us at 64 MiB")             \
  X(address_reserve_us, 10, "a cuMemAddressReserve",                                              \
    "kvcached (A100): 19 us for an 8 GB reservation; smaller ones taken as cheaper")              \
  X(address_free_us, 10, "a cuMemAddressFree", "taken as a reservation's cost")                   \
  X(mem_alloc_us, 10, "a cuMemAlloc", "estimate for the call itself")                             \
  X(mem_alloc_page_us, 30, "a cuMemAlloc, per page",                                              \
    "vortex-data/vortex PR#7831: 1 GiB allocated and freed through a pool that keeps nothing, "   \
    "31.2 ms, about 61 us a page for the pair")                                                   \
  X(mem_free_us, 10, "a cuMemFree, beside its wait for the device", "as cuMemAlloc")              \
  X(mem_free_page_us, 30, "a cuMemFree, per page", "as cuMemAlloc")                               \
  X(alloc_async_us, 1, "a cuMemAllocAsync from a pool that keeps its memory",                     \
    "vortex-data/vortex PR#7831: 1.37 us for an allocation and free once the pool keeps memory")  \
  X(free_async_us, 1, "a cuMemFreeAsync", "as cuMemAllocAsync")                                   \
  X(host_alloc_us, 10, "a cuMemHostAlloc or host-located cuMemCreate",                            \
    "kekzl/imp#1653: 9.5 us median for small pinned allocations")                                 \
  X(host_alloc_page_us, 500, "pinning host memory, per page",                                     \
    "about 4 GB/s: rapidsai/dask-cuda PR#98 about 5 GB/s, dask-cuda#106 32 MB in 11.6 ms, "       \
    "kekzl/imp#1653 512 MiB in 503 ms")                                                           \
  X(host_free_us, 10, "a cuMemFreeHost or a host-located cuMemRelease", "as cuMemHostAlloc")      \
  X(host_free_page_us, 450, "unpinning host memory, per page",                                    \
    "kekzl/imp#1653: 512 MiB released in 115 ms")

namespace simcuda {

struct HostCosts {
#define SIMCUDA_HOST_COST_FIELD(key, default_us, what, source) double key = default_us;
  SIMCUDA_HOST_COSTS(SIMCUDA_HOST_COST_FIELD)
#undef SIMCUDA_HOST_COST_FIELD
};

}  // namespace simcuda
