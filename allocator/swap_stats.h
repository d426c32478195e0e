// The swapping allocator's counters: one list, printed by one emitter
// (`stats:true` at exit), written into recorded traces, and described by
// `cuswap inspect` when it shows a trace's counters.
#pragma once

#include <cstdint>
#include <string_view>

namespace cuswap {

// X(name, description)
#define CUSWAP_SWAP_STATS(X)                                                                      \
  X(evictions, "buffers copied to host memory")                                                   \
  X(prefetches, "buffers copied back to the device")                                              \
  X(prefetches_on_demand, "prefetches a use had to wait for")                                     \
  X(prefetches_planned, "prefetches a plan started ahead of the use")                             \
  X(evictions_ahead, "allocations that started evicting ahead of need, without a plan")           \
  X(prefetches_ahead, "prefetches started ahead of the use without a plan, once live bytes fell") \
  X(evictions_planned, "evictions a plan started after a last use")                               \
  X(evictions_cancelled, "evictions called off before they landed")                               \
  X(bytes_to_host, "bytes copied device to host by evictions")                                    \
  X(bytes_to_device, "bytes copied host to device by prefetches")                                 \
  X(evicted_accesses, "uses that named an evicted buffer")                                        \
  X(escaped_buffers, "buffers marked escaped (never evicted without host memory mapping)")        \
  X(device_bytes, "device memory mapped now (pages and slabs, cached ones included)")             \
  X(peak_device_bytes, "highest device_bytes")                                                    \
  X(host_bytes, "host memory holding evicted bytes now")                                          \
  X(peak_host_bytes, "highest host_bytes")                                                        \
  X(allocations_large, "allocations given their own range")                                       \
  X(allocations_small, "allocations from slabs")                                                  \
  X(allocations_on_host, "buffers bigger than the budget, placed in host memory")                 \
  X(uses_on_host, "uses of such buffers, served from host memory in place")                       \
  X(reused_ranges, "large allocations served from freed ranges without a driver call")            \
  X(grown_ranges, "large allocations that mapped new pages beside a freed range")                 \
  X(reclaimed_pages, "pages of freed ranges moved to another place")                              \
  X(arena_bytes, "address space reserved for large buffers")                                      \
  X(driver_retries, "allocations retried after the device refused memory within the budget")      \
  X(waits_for_room, "times a use waited for other threads' uses to finish")                       \
  X(out_of_memory, "allocations refused")                                                         \
  X(vmm_creates, "cuMemCreate calls (Note [Counted driver calls])")                               \
  X(vmm_releases, "cuMemRelease calls")                                                           \
  X(vmm_maps, "cuMemMap calls")                                                                   \
  X(vmm_unmaps, "cuMemUnmap calls")                                                               \
  X(vmm_set_access, "cuMemSetAccess calls")                                                       \
  X(vmm_reserves, "cuMemAddressReserve calls")                                                    \
  X(vmm_address_frees, "cuMemAddressFree calls")                                                  \
  X(event_records, "cuEventRecord calls")                                                         \
  X(event_queries, "cuEventQuery calls")                                                          \
  X(stream_waits, "cuStreamWaitEvent calls")                                                      \
  X(host_waits, "stream and event synchronizes: the host waited for the device")                  \
  X(host_wait_us, "wall-clock time of those waits, microseconds")

struct SwapStats {
#define CUSWAP_SWAP_STAT_FIELD(name, description) uint64_t name = 0;
  CUSWAP_SWAP_STATS(CUSWAP_SWAP_STAT_FIELD)
#undef CUSWAP_SWAP_STAT_FIELD
};

// What the counter called `name` counts; empty for a name not in the list.
constexpr std::string_view swap_stat_description(std::string_view name) {
#define CUSWAP_SWAP_STAT_DESCRIPTION(stat, description) \
  if (name == #stat) return description;
  CUSWAP_SWAP_STATS(CUSWAP_SWAP_STAT_DESCRIPTION)
#undef CUSWAP_SWAP_STAT_DESCRIPTION
  return {};
}

}  // namespace cuswap
