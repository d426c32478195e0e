// DeviceClock: host times of a profiler's memory events onto the device's
// clock, through the kernels' launches.
//
// Note [Device time of memory events]
// A framework's allocator runs on the host: a tensor is allocated before the
// kernels that write it are launched and freed once the host drops it, while
// the kernels run later on the device, often much later. On the device, the
// memory is taken when the first kernel launched after the allocation starts
// and given back when every kernel launched before the free has ended (the
// allocators are stream-ordered). Kernels are tied to their launches by the
// correlation id that the profiler gives the runtime call and the kernel.
//
// Invariants: alloc_ns and free_ns are monotonic in host_ns; a device with
// no launches tied to kernels maps every time to itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "tracer/trace.h"

namespace cuswap::trace::import {

class DeviceClock {
 public:
  // The runtime call (cudaLaunchKernel, cuLaunchKernel, cudaMemcpyAsync …)
  // with its correlation id, at its host time.
  void add_launch(uint64_t correlation, int64_t host_ns) { launch_host_ns_[correlation] = host_ns; }
  // The work it put on the device, on the device's clock.
  void add_work(uint64_t correlation, int device, int64_t start_ns, int64_t end_ns) {
    work_[correlation] = {device, start_ns, end_ns};
  }
  // Call once everything is added.
  void finish();

  bool mapped() const { return !by_device_.empty(); }
  bool mapped(int device) const { return by_device_.count(device) != 0; }

  // The earliest start of work launched at or after host_ns; after the last
  // launch, the end of the device's work (or host_ns when later).
  int64_t alloc_ns(int device, int64_t host_ns) const;
  // The latest end of work launched before host_ns; before the first
  // launch, host_ns.
  int64_t free_ns(int device, int64_t host_ns) const;

  // A tensor's lifetime onto its device's clock (a persistent tensor keeps
  // its start); false, and nothing changed, where that device has no clock.
  bool to_device_clock(Tensor& t) const;

 private:
  struct Work {
    int device;
    int64_t start_ns, end_ns;
  };
  struct Launch {
    int64_t host_ns;
    int64_t start_ns, end_ns;
  };
  struct Lane {
    std::vector<Launch> launches;     // by host time
    std::vector<int64_t> min_start;   // suffix minimum of starts, one past the end
    std::vector<int64_t> max_end;     // prefix maximum of ends, one before the start
    size_t first_at_or_after(int64_t host_ns) const;
  };
  std::unordered_map<uint64_t, int64_t> launch_host_ns_;
  std::unordered_map<uint64_t, Work> work_;
  std::map<int, Lane> by_device_;
};

// The device with the most compute ops (copies left out), whose clock
// places the steps; -1 where no op is on a device.
int busiest_device(const std::vector<Op>& ops);

}  // namespace cuswap::trace::import
