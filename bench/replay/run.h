// One replay in this process: the schedule (bench/replay/schedule.h) through
// the driver for a number of iterations, with whatever libcuda.so.1 and
// LD_PRELOAD the environment gives. What the parent process reads back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/replay/schedule.h"
#include "policy/workload.h"

namespace cuswap::bench {

// Note [Replay allocation paths]: how the replay allocates and frees, as
// the frameworks do.
// - stream: cuMemAllocAsync and cuMemFreeAsync on the compute stream, as
//   TensorFlow's cuda_malloc_async allocator does; with no cuswap it is the
//   driver's stream-ordered pool, which like PyTorch's caching allocator
//   keeps its memory and makes no VMM call in its steady state: the
//   reference for stock speed.
// - sync: cuMemAlloc, and cuMemFree after the op that last uses the buffer,
//   with no wait of its own: PyTorch without its caching allocator
//   (PYTORCH_NO_CUDA_MEMORY_CACHING=1, what `cuswap run` sets). With no
//   cuswap every free waits for the device, as cudaFree does.
// - pluggable: cuswap_torch_alloc(size, device, stream) and
//   cuswap_torch_free(ptr, size, device, stream), as PyTorch's pluggable
//   allocator calls them; needs cuswap.
enum class AllocPath : uint8_t { stream, sync, pluggable };
const char* alloc_path_name(AllocPath path);
[[nodiscard]] bool parse_alloc_path(const std::string& text, AllocPath& out);

struct RunResult {
  bool completed = false;
  std::string error;                      // "" when completed
  std::vector<int64_t> iteration_ns;      // per finished iteration (virtual ns on simcuda)
  bool virtual_time = false;              // simcuda's clock, or the wall clock
  uint64_t h2d_bytes = 0, d2h_bytes = 0;  // per steady-state iteration
  // Per steady-state iteration on simcuda: compute time held back by waits
  // on other streams (copies), and host time spent waiting.
  uint64_t stall_ns = 0, host_wait_ns = 0;
  uint64_t integrity_errors = 0;
  uint64_t hazards = 0;
  uint64_t peak_device_bytes = 0;
  bool cuswap = false;        // libcuswap.so was loaded (cuswap_iteration_begin found)
  bool cuswap_stats = false;  // cuswap_stats_json found
  // Per steady-state iteration, from cuswap_stats_json.
  double prefetches_on_demand = 0, prefetches = 0, evictions = 0;
  // Per steady-state iteration: simcuda's count of VMM calls and of calls
  // that made the host wait for the device; cuswap's own count of its VMM
  // calls and host waits (Note [Counted driver calls]), on any driver.
  double vmm_calls = 0, host_syncs = 0;
  // simcuda's count of VMM calls in each finished iteration, the first
  // ones too: a steady state shows as a run of zeros, bursts as bursts.
  std::vector<int64_t> vmm_calls_each;
  double cuswap_vmm_calls = 0, cuswap_host_waits = 0;
};

// Note [Replay steady state iterations]
// The steady state is the second half of the iterations (never the first,
// unless it is the only one): the first holds start-up work, and online
// planning records one iteration and takes over after the plan is made, a
// few iterations in. Figures per iteration are over these.
uint32_t steady_from(uint32_t iterations);

struct RunOptions {
  uint32_t iterations = 6;
  int device = 0;
  AllocPath alloc_path = AllocPath::stream;  // Note [Replay allocation paths]
  // Host time the framework spends on each op besides its driver calls
  // (Note [Replay host time]).
  double host_op_us = 0;
};

RunResult run_replay(const policy::Workload& workload, const Schedule& schedule,
                     const RunOptions& options);

// The result as `key value` lines (the child's stdout), and back.
std::string format_result(const RunResult& r);
[[nodiscard]] bool parse_result(const std::string& text, RunResult& out);

}  // namespace cuswap::bench
