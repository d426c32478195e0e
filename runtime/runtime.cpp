// The runtime once started: what CUSWAP_CONF sets up, what the hooks
// record, and the counters at exit. The tests call it directly, with a
// Driver table pointed at simcuda; hooks/entry.cpp starts the process's one.
#include "runtime/runtime.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/log.h"
#include "policy/plan.h"

#ifndef CUSWAP_VERSION
#error "CUSWAP_VERSION must be defined by the build"
#endif

namespace cuswap::hooks {

const char* const kHookNames[kHookCount] = {
#define CUSWAP_HOOK_NAME(name, params, args, handler) #name,
    CUSWAP_DRIVER_HOOKED(CUSWAP_HOOK_NAME)
#undef CUSWAP_HOOK_NAME
};

namespace {

constexpr bool ends_with(const char* text, const char* suffix) {
  size_t n = 0, m = 0;
  while (text[n])
    ++n;
  while (suffix[m])
    ++m;
  if (m > n) return false;
  for (size_t i = 0; i < m; ++i)
    if (text[n - m + i] != suffix[i]) return false;
  return true;
}

trace::Recorder* recorder_of(Runtime& rt) noexcept {
  return rt.recorder.load(std::memory_order_acquire);
}

bool has_budget(const conf::Options& options) {
  if (options.budget_bytes.all) return true;
  for (const auto& device : options.budget_bytes.device)
    if (device) return true;
  return false;
}

}  // namespace

const bool kHookPerThread[kHookCount] = {
#define CUSWAP_HOOK_PER_THREAD(name, params, args, handler) \
  ends_with(#name, "_ptsz") || ends_with(#name, "_ptds"),
    CUSWAP_DRIVER_HOOKED(CUSWAP_HOOK_PER_THREAD)
#undef CUSWAP_HOOK_PER_THREAD
};

void configure(Runtime& rt, conf::Options options) {
  rt.passthrough.store(options.passthrough);
  std::string plan_error;
  if (!options.passthrough && !has_budget(options) && !options.plan_path.empty()) {
    // A plan without a budget: the plan's own (checked again at cuInit).
    policy::Plan plan;
    if (policy::read_plan_file(options.plan_path.c_str(), plan, plan_error) &&
        plan.budget_bytes > 0)
      options.budget_bytes.all = plan.budget_bytes;
  }
  rt.options = options;
  if (log::enabled(log::LogLevel::info)) {
    // What is in effect, once, as a string CUSWAP_CONF would read back.
    char described[2048];
    conf::describe(options, described);
    log::info("configuration in effect: {}",
              std::string_view(described, strnlen(described, sizeof described)));
  }
  if (!options.passthrough && has_budget(options)) {
    AllocatorSettings settings;
    settings.budget_bytes = options.budget_bytes;
    settings.swap_min_bytes = options.swap_min_bytes;
    rt.allocator = std::make_unique<Allocator>(rt.driver, settings);
    rt.follow = std::make_unique<PlanFollow>(rt.driver, *rt.allocator, options);
  } else if (!options.plan_path.empty() && !options.passthrough) {
    if (plan_error.empty())
      log::error("{}: key budget_bytes: no budget set and none in the plan; not following it",
                 options.plan_path.view());
    else
      log::error("{}; not following it, and no budget is set", plan_error);
  }
}

std::vector<trace::Counter> exit_counters(Runtime& rt) {
  std::vector<trace::Counter> counters;
  for (size_t i = 0; i < kHookCount; ++i)
    if (uint64_t n = rt.calls.total(i)) counters.push_back({kHookNames[i], n});
  DeviceTimer* timer = rt.timer.load(std::memory_order_acquire);
  if (timer) timer->drain();
#define CUSWAP_RUNTIME_COUNTER(name, description, value) counters.push_back({#name, value});
  CUSWAP_RUNTIME_COUNTERS(CUSWAP_RUNTIME_COUNTER)
#undef CUSWAP_RUNTIME_COUNTER
  if (rt.allocator) {
    const SwapStats swap = rt.allocator->stats();
#define CUSWAP_SWAP_STAT_COUNTER(name, description) counters.push_back({#name, swap.name});
    CUSWAP_SWAP_STATS(CUSWAP_SWAP_STAT_COUNTER)
#undef CUSWAP_SWAP_STAT_COUNTER
  }
  return counters;
}

void close_out(Runtime& rt) noexcept {
  try {
    const std::vector<trace::Counter> counters = exit_counters(rt);
    if (rt.options.stats) {
      for (const trace::Counter& c : counters)
        log::report("stats: {} = {}", c.name, c.value);
      if (rt.follow) log::write_report_line("stats: plan " + rt.follow->stats_json());
    }
    if (trace::Recorder* r = recorder_of(rt)) r->close(counters);
  } catch (...) {
    // Exiting: nothing more to do.
  }
}

void Runtime::latch_passthrough(const char* why) noexcept {
  if (!passthrough.exchange(true))
    log::error("internal failure ({}); passing every call through from now on", why);
}

// ---------------------------------------------------------------------------
// What the hooks record.

namespace {

int current_device(Runtime& rt) noexcept {
  CUdevice device = -1;
  if (!rt.driver.cuCtxGetDevice || rt.driver.cuCtxGetDevice(&device) != CUDA_SUCCESS) return -1;
  return device;
}

uint64_t buffer_at(Runtime& rt, uintptr_t address) noexcept {
  auto hit = rt.buffers.find(address);
  return hit ? hit->id : trace::kNoBuffer;
}

log::Limited g_overlap_warnings{5};

}  // namespace

// The buffer table is kept while anything needs it: the recorder names
// buffers, the allocator needs to know what a launch touches.
bool tracking(Runtime& rt) noexcept {
  return rt.allocator || recorder_of(rt);
}

void note_alloc(Runtime& rt, uintptr_t address, uint64_t size_bytes, uint64_t stream,
                trace::AllocKind kind) noexcept {
  if (!tracking(rt)) return;
  try {
    uint64_t id = rt.next_buffer_id.fetch_add(1, std::memory_order_relaxed);
    BufferRef buffer{id, address, size_bytes};
    if (!rt.buffers.insert(buffer)) {
      // Memory freed behind cuswap's back (a context destroyed, a reset)
      // leaves stale entries where the driver now hands out new memory.
      rt.buffers.erase_overlapping(address, size_bytes);
      if (!rt.buffers.insert(buffer) && g_overlap_warnings.allow())
        log::warn("allocation at {:#x} (+{}) overlaps buffers cuswap still tracks", address,
                  size_bytes);
    }
    if (trace::Recorder* r = recorder_of(rt))
      r->record_alloc(id, address, size_bytes, stream, current_device(rt), kind);
    if (rt.follow) rt.follow->on_alloc(id, address, size_bytes);
  } catch (...) {
    rt.latch_passthrough("recording an allocation");
  }
}

std::optional<BufferRef> begin_free(Runtime& rt, uintptr_t address) noexcept {
  if (!tracking(rt)) return std::nullopt;
  try {
    return rt.buffers.erase(address);
  } catch (...) {
    rt.latch_passthrough("recording a free");
    return std::nullopt;
  }
}

void finish_free(Runtime& rt, const std::optional<BufferRef>& buffer, CUresult result,
                 uint64_t stream, trace::FreeKind kind) noexcept {
  if (!buffer) return;
  try {
    if (result != CUDA_SUCCESS) {
      rt.buffers.insert(*buffer);  // still live
      return;
    }
    if (trace::Recorder* r = recorder_of(rt)) r->record_free(buffer->id, stream, kind);
    if (rt.follow) rt.follow->on_free(buffer->id);
  } catch (...) {
    rt.latch_passthrough("recording a free");
  }
}

namespace {

// Each launch resolves at most this many earlier timings: two keep up with
// the launches (each adds one) and catch up after a prefetch added another.
constexpr size_t kTimingsPerLaunch = 2;

}  // namespace

CUresult begin_launch(Runtime& rt, CUfunction function, CUstream stream, void** kernel_params,
                      void** extra, Use& use) noexcept {
  if (!tracking(rt)) return CUDA_SUCCESS;
  if (function) {
    use.kernel = &rt.kernels.get(function);
    scan_launch(*use.kernel, kernel_params, extra, rt.buffers, use.touched);
  } else {
    use.touched.unknown = true;  // a graph
  }
  if (use.touched.unknown) use.flags |= trace::kLaunchUnknownAccess;
  if (rt.allocator) {
    UseBuffers buffers;
    buffers.bases = {use.touched.bases, use.touched.count};
    buffers.unknown = use.touched.unknown;
    buffers.escapes = use.kernel && use.kernel->nccl;
    if (rt.follow) rt.follow->before_launch(use.kernel, stream, use.touched);
    CUresult r = rt.allocator->prepare(stream, buffers);
    if (r != CUDA_SUCCESS) {
      if (rt.follow) rt.follow->after_launch(stream, r);
      return r;
    }
    if (rt.follow) rt.follow->launch_prepared(stream);
  }
  // After prepare(): a wait for a prefetch is not the kernel's time.
  if (DeviceTimer* timer = rt.timer.load(std::memory_order_acquire))
    use.timing = timer->start(stream);
  return CUDA_SUCCESS;
}

void end_launch(Runtime& rt, CUstream stream, uint64_t stream_value, const Use& use,
                CUresult result) noexcept {
  if (rt.allocator) rt.allocator->finish(stream, {{use.touched.bases, use.touched.count}}, result);
  if (rt.follow) rt.follow->after_launch(stream, result);
  DeviceTimer* timer = rt.timer.load(std::memory_order_acquire);
  trace::Recorder* r = recorder_of(rt);
  if (result != CUDA_SUCCESS || !r) {
    if (timer) timer->abandon(use.timing);
    return;
  }
  uint32_t kernel_id = 0;
  if (use.kernel) {
    kernel_id = use.kernel->trace_id.load(std::memory_order_relaxed);
    if (!kernel_id) {
      kernel_id = r->kernel_id(use.kernel->name.empty() ? std::string_view("(unnamed kernel)")
                                                        : std::string_view(use.kernel->name));
      use.kernel->trace_id.store(kernel_id, std::memory_order_relaxed);
    }
  } else {
    kernel_id = r->kernel_id("(graph)");
  }
  const uint64_t seq = r->record_launch(kernel_id, stream_value, current_device(rt),
                                        {use.touched.ids, use.touched.count}, use.flags);
  if (timer) {
    timer->finish(use.timing, stream, seq);
    timer->poll(kTimingsPerLaunch);
  }
}

void poll_timings(Runtime& rt) noexcept {
  if (DeviceTimer* timer = rt.timer.load(std::memory_order_acquire))
    timer->poll(DeviceTimer::kMaxPairs);
}

// Note [Copies stay within their buffer]
// Under a budget a buffer's range is rounded up to whole pages, and its
// neighbours are cuswap's, so the driver would accept a copy or set that
// runs past the buffer's end: the application's bug would pass unseen, and
// could overwrite the bytes of another buffer sharing a slab. So one that
// does is refused with the driver's error for it. For 2-D and 3-D copies
// `bytes` is width x height (x depth) from the first byte, which is never
// more than the extent they touch, so a copy that fits is never refused.
CUresult begin_copy(Runtime& rt, CUstream stream, uintptr_t dst, uintptr_t src,
                    const void* host_source, uint64_t bytes, Use& use) noexcept {
  if (!rt.allocator) return CUDA_SUCCESS;
  for (uintptr_t address : {dst, src}) {
    if (!address) continue;
    if (auto hit = rt.buffers.find(address)) {
      if (bytes > hit->size_bytes - (address - hit->base)) return CUDA_ERROR_INVALID_VALUE;
      use.touched.add(hit->id, hit->base);
    }
  }
  if (host_source) rt.allocator->note_host_words(host_source, bytes);
  if (use.touched.count == 0) return CUDA_SUCCESS;
  return rt.allocator->prepare(stream, {{use.touched.bases, use.touched.count}});
}

void end_copy(Runtime& rt, CUstream stream, const Use& use, CUresult result) noexcept {
  if (rt.allocator && use.touched.count)
    rt.allocator->finish(stream, {{use.touched.bases, use.touched.count}}, result);
}

void note_copy(Runtime& rt, uintptr_t dst, uintptr_t src, uint64_t bytes,
               trace::CopyDirection direction, uint64_t stream, bool is_set) noexcept {
  trace::Recorder* r = recorder_of(rt);
  if (!r) return;
  uint64_t dst_id = dst ? buffer_at(rt, dst) : trace::kNoBuffer;
  uint64_t src_id = src ? buffer_at(rt, src) : trace::kNoBuffer;
  if (direction == trace::CopyDirection::unknown) {
    using D = trace::CopyDirection;
    direction = dst_id && src_id ? D::device_to_device
                : dst_id         ? D::host_to_device
                : src_id         ? D::device_to_host
                                 : D::unknown;
  }
  r->record_copy(dst_id, src_id, bytes, direction, stream, is_set);
}

void note_vmm(Runtime& rt, trace::VmmOp op, uintptr_t address, uint64_t size_bytes,
              uint64_t handle) noexcept {
  if (trace::Recorder* r = recorder_of(rt)) r->record_vmm(op, address, size_bytes, handle);
}

namespace {

void load_plan(Runtime& rt) noexcept {
  if (!rt.follow || rt.options.plan_path.empty() || rt.plan_loaded.exchange(true)) return;
  std::string error;
  // The runtime keeps its iterations and stats; it only has no plan.
  if (!rt.follow->load_plan(rt.options.plan_path.c_str(), error))
    log::error("{}; not following it, evicting only when memory runs out", error);
}

}  // namespace

void open_recorder(Runtime& rt) noexcept {
  load_plan(rt);
  if (rt.options.record_path.empty() || rt.passthrough.load() || rt.recorder_opened.exchange(true))
    return;
  try {
    trace::RecorderOptions options;
    options.path = rt.options.record_path.c_str();
    options.cuswap_version = CUSWAP_VERSION;
    char described[2048];
    size_t needed = conf::describe(rt.options, described);
    options.configuration.assign(described, std::min(needed, sizeof described));
    int count = 0;
    if (rt.driver.cuDeviceGetCount && rt.driver.cuDeviceGetCount(&count) == CUDA_SUCCESS) {
      for (int ordinal = 0; ordinal < count; ++ordinal) {
        trace::DeviceInfo info;
        info.ordinal = ordinal;
        CUdevice device = 0;
        char name[256] = {};
        size_t total = 0;
        if (rt.driver.cuDeviceGet(&device, ordinal) == CUDA_SUCCESS) {
          if (rt.driver.cuDeviceGetName(name, sizeof name, device) == CUDA_SUCCESS)
            info.name = name;
          if (rt.driver.cuDeviceTotalMem_v2(&total, device) == CUDA_SUCCESS)
            info.total_bytes = total;
        }
        options.devices.push_back(std::move(info));
      }
    }
    std::string error;
    std::unique_ptr<trace::Recorder> recorder = trace::Recorder::open(options, error);
    if (!recorder) {
      log::warn("{}; recording is off", error);
      return;
    }
    trace::Recorder* opened = recorder.release();
    DeviceTimer* timer = nullptr;
    if (rt.options.record_timing) timer = new DeviceTimer(rt.driver, *opened);
    if (rt.allocator) {
      rt.swap_recording = new SwapRecording(*opened, rt.buffers, timer);
      rt.allocator->set_observer(rt.swap_recording);
    }
    if (rt.follow) rt.follow->set_recorder(opened);
    rt.timer.store(timer, std::memory_order_release);
    rt.recorder.store(opened, std::memory_order_release);
  } catch (...) {
    rt.latch_passthrough("opening the recorder");
  }
}

}  // namespace cuswap::hooks
