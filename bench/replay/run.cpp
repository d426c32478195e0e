// One replay in this process (bench/replay/run.h).
#include "bench/replay/run.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/replay/driver.h"
#include "bench/replay/pattern.h"
#include "bench/replay/sim_kernels.h"

namespace cuswap::bench {

namespace {

constexpr uint32_t kBeforeFirst = UINT32_MAX;  // the iteration of what setup writes

// The GPU kernels (kernels.cu, built by nvcc when the toolkit has it) lie
// beside the executable; simcuda takes any image.
std::string kernel_image(const Driver& d, std::string& error) {
  if (d.simulated()) return "cuswap replay kernels (simcuda host functions)";
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string dir = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string();
  dir = dir.substr(0, dir.rfind('/') + 1);
  const std::string path = dir + "cuswap_replay_kernels.fatbin";
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = fmt::format("{}: cannot read the GPU kernels (built only where nvcc is found)", path);
    return "";
  }
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Bytes the driver charges for an allocation (simcuda's rounding, close to
// a GPU's): 512-byte units under 1 MiB, 2 MiB pages above.
uint64_t charged_bytes(uint64_t size) {
  const uint64_t unit = size < (1ull << 20) ? 512 : (2ull << 20);
  return (size + unit - 1) / unit * unit;
}

// Note [Replay host time]: a framework's host thread spends time on every op
// besides its driver calls (PyTorch's dispatcher and autograd: about 10 µs
// an op on an H200), and that time decides how far the host runs ahead of
// the device, so how much of an allocator's host cost a step hides. With
// --host-op-us the replay spends it after each op's launches: on simcuda by
// moving its thread's virtual clock on, on a GPU by spinning.
void spend_host_time(const Driver& d, double us) {
  if (us <= 0) return;
  const auto ns = static_cast<uint64_t>(us * 1000.0 + 0.5);
  if (d.simcuda_host_clock_ns && d.simcuda_host_clock_join) {
    d.simcuda_host_clock_join(d.simcuda_host_clock_ns() + ns);
    return;
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (std::chrono::steady_clock::now() < until) {
  }
}

// A counter from cuswap_stats_json's object, 0 when absent.
double stats_counter(const char* json, const char* key) {
  if (!json) return 0;
  const std::string quoted = fmt::format("\"{}\"", key);
  const char* at = std::strstr(json, quoted.c_str());
  if (!at) return 0;
  at = std::strchr(at + quoted.size(), ':');
  return at ? std::strtod(at + 1, nullptr) : 0;
}

// Counters read from cuswap_stats_json, each the sum of its keys.
constexpr size_t kCounters = 5;
constexpr const char* kCounterKeys[kCounters][7] = {
    {"prefetches_on_demand"},
    {"prefetches"},
    {"evictions"},
    {"vmm_creates", "vmm_releases", "vmm_maps", "vmm_unmaps", "vmm_set_access", "vmm_reserves",
     "vmm_address_frees"},
    {"host_waits"},
};

class Replay {
 public:
  Replay(const policy::Workload& w, const Schedule& s, const RunOptions& o, RunResult& r)
      : w_(w), s_(s), o_(o), r_(r), ptr_(w.tensors.size(), 0), seed_(w.tensors.size(), 0) {}

  void run() {
    std::string error;
    if (!open_driver(d_, error)) return fail(error);
    r_.cuswap = d_.cuswap_iteration_begin != nullptr;
    r_.cuswap_stats = d_.cuswap_stats_json != nullptr;
    r_.virtual_time = d_.simulated();
    if (o_.alloc_path == AllocPath::pluggable && !d_.cuswap_torch_alloc)
      return fail("--alloc-path pluggable: cuswap_torch_alloc not found (it needs cuswap)");
    if (!start()) return;
    if (!setup()) return;
    simcuda_stats first{}, last{};
    double first_counters[kCounters] = {}, last_counters[kCounters] = {};
    const uint32_t from = steady_from(o_.iterations);
    // Each iteration ends waiting for the device (a framework reads its loss
    // there): that wait, and no other of the replay's own, is in host_syncs.
    if (!check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize")) return;
    for (uint32_t it = 0; it < o_.iterations; ++it) {
      simcuda_stats before = stats();
      const auto wall0 = std::chrono::steady_clock::now();
      pending_bytes_ = 0;
      if (d_.cuswap_iteration_begin) d_.cuswap_iteration_begin();
      if (!iteration(it)) return;
      if (!check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize")) return;
      pending_bytes_ = 0;
      simcuda_stats after = stats();
      const auto wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::steady_clock::now() - wall0)
                               .count();
      r_.iteration_ns.push_back(
          d_.simulated() ? static_cast<int64_t>(after.virtual_ns - before.virtual_ns) : wall_ns);
      r_.vmm_calls_each.push_back(static_cast<int64_t>(after.vmm_calls - before.vmm_calls));
      const char* json = d_.cuswap_stats_json ? d_.cuswap_stats_json() : nullptr;
      for (size_t c = 0; c < kCounters; ++c) {
        last_counters[c] = 0;
        for (const char* key : kCounterKeys[c])
          if (key) last_counters[c] += stats_counter(json, key);
      }
      // Note [Replay steady state iterations]
      if (it == 0 && from == 0) first = before;
      if (from > 0 && it + 1 == from) {
        first = after;
        std::copy(std::begin(last_counters), std::end(last_counters), first_counters);
      }
      last = after;
    }
    const double steady = o_.iterations - from;
    r_.h2d_bytes =
        static_cast<uint64_t>(static_cast<double>(last.h2d_bytes - first.h2d_bytes) / steady);
    r_.d2h_bytes =
        static_cast<uint64_t>(static_cast<double>(last.d2h_bytes - first.d2h_bytes) / steady);
    r_.stall_ns =
        static_cast<uint64_t>(static_cast<double>(last.stall_ns - first.stall_ns) / steady);
    r_.host_wait_ns =
        static_cast<uint64_t>(static_cast<double>(last.host_wait_ns - first.host_wait_ns) / steady);
    r_.prefetches_on_demand = (last_counters[0] - first_counters[0]) / steady;
    r_.prefetches = (last_counters[1] - first_counters[1]) / steady;
    r_.evictions = (last_counters[2] - first_counters[2]) / steady;
    r_.cuswap_vmm_calls = (last_counters[3] - first_counters[3]) / steady;
    r_.cuswap_host_waits = (last_counters[4] - first_counters[4]) / steady;
    r_.vmm_calls = static_cast<double>(last.vmm_calls - first.vmm_calls) / steady;
    r_.host_syncs = static_cast<double>(last.host_syncs - first.host_syncs) / steady;
    r_.completed = r_.error.empty();
  }

  // What is known even after a failure.
  void finish() {
    if (!d_.cuStreamSynchronize || !stream_) return;
    uint64_t mismatches = 0;
    if (d_.cuStreamSynchronize(stream_) == CUDA_SUCCESS &&
        d_.cuMemcpyDtoH(&mismatches, counter_, sizeof mismatches) == CUDA_SUCCESS)
      r_.integrity_errors = mismatches;
    simcuda_stats end = stats();
    r_.hazards = end.hazards;
    r_.peak_device_bytes = end.peak_device_bytes;
  }

 private:
  void fail(const std::string& error) {
    if (r_.error.empty()) r_.error = error;
  }
  bool check(CUresult r, const char* what) {
    if (r == CUDA_SUCCESS) return true;
    fail(fmt::format("{} failed: {}", what, d_.error_name(r)));
    return false;
  }
  simcuda_stats stats() const {
    simcuda_stats s{};
    if (d_.simcuda_get_stats) d_.simcuda_get_stats(&s);
    return s;
  }

  bool start() {
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    if (!check(d_.cuInit(0), "cuInit") || !check(d_.cuDeviceGet(&dev, o_.device), "cuDeviceGet") ||
        !check(d_.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
        !check(d_.cuCtxSetCurrent(ctx), "cuCtxSetCurrent"))
      return false;
    if (d_.simulated() && !check(register_sim_kernels(d_), "simcuda_register_kernel")) return false;
    std::string error;
    const std::string image = kernel_image(d_, error);
    if (image.empty()) {
      fail(error);
      return false;
    }
    CUmodule module = nullptr;
    if (!check(d_.cuModuleLoadData(&module, image.data()), "cuModuleLoadData")) return false;
    for (uint32_t slots : kVariantSlots) {
      const std::string name = variant_name(slots);
      if (!check(d_.cuModuleGetFunction(&kernels_[index_of(slots)], module, name.c_str()),
                 "cuModuleGetFunction"))
        return false;
    }
    if (!check(d_.cuModuleGetFunction(&init_, module, kInitKernel), "cuModuleGetFunction"))
      return false;
    if (!check(d_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate")) return false;
    // The counter first: rank 0 of what is live at every mark (Note [Replay
    // runtime identities]).
    if (!check(d_.cuMemAlloc(&counter_, sizeof(uint64_t)), "cuMemAlloc of the counter") ||
        !check(d_.cuMemsetD8(counter_, 0, sizeof(uint64_t)), "cuMemsetD8") ||
        !check(d_.cuCtxSynchronize(), "cuCtxSynchronize"))
      return false;
    size_t free_bytes = 0, total_bytes = 0;
    if (!check(d_.cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo")) return false;
    free_at_start_ = free_bytes;
    return true;
  }

  static size_t index_of(uint32_t slots) {
    for (size_t i = 0; i < std::size(kVariantSlots); ++i)
      if (kVariantSlots[i] == slots) return i;
    return 0;
  }

  // On the plain driver a stream-ordered free returns its memory when the
  // stream reaches it, which depends on how fast the CPU stand-in runs; so
  // an allocation that might need that memory waits for the stream first,
  // decided from the replay's own count: the same calls on every machine.
  // Under cuswap the shim does its own accounting.
  bool allocate(uint32_t t, const std::string& where) {
    const uint64_t size = w_.tensors[t].size_bytes;
    const uint64_t charged = charged_bytes(size);
    if (!r_.cuswap && pending_bytes_ > 0 &&
        used_bytes_ + pending_bytes_ + charged > free_at_start_) {
      if (!check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize")) return false;
      pending_bytes_ = 0;
    }
    CUdeviceptr p = 0;
    CUresult r = CUDA_SUCCESS;
    switch (o_.alloc_path) {  // Note [Replay allocation paths]
      case AllocPath::stream:
        r = d_.cuMemAllocAsync(&p, size, stream_);
        break;
      case AllocPath::sync:
        r = d_.cuMemAlloc(&p, size);
        break;
      case AllocPath::pluggable:
        p = reinterpret_cast<CUdeviceptr>(
            d_.cuswap_torch_alloc(static_cast<ssize_t>(size), o_.device, stream_));
        r = p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;  // PyTorch sees a null as out of memory
        break;
    }
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      fail(fmt::format("out of memory {} allocating {} bytes", where, size));
      return false;
    }
    if (r != CUDA_SUCCESS) {
      fail(fmt::format("cuMemAlloc {} ({} bytes) failed: {}", where, size, d_.error_name(r)));
      return false;
    }
    ptr_[t] = p;
    used_bytes_ += charged;
    return true;
  }

  bool release(uint32_t t) {
    const uint64_t size = w_.tensors[t].size_bytes;
    switch (o_.alloc_path) {  // Note [Replay allocation paths]
      case AllocPath::stream:
        if (!check(d_.cuMemFreeAsync(ptr_[t], stream_), "cuMemFreeAsync")) return false;
        break;
      case AllocPath::sync:
        if (!check(d_.cuMemFree(ptr_[t]), "cuMemFree")) return false;
        break;
      case AllocPath::pluggable:
        d_.cuswap_torch_free(reinterpret_cast<void*>(ptr_[t]), size, o_.device, stream_);
        break;
    }
    ptr_[t] = 0;
    const uint64_t charged = charged_bytes(size);
    used_bytes_ -= charged;
    if (o_.alloc_path == AllocPath::stream) pending_bytes_ += charged;
    return true;
  }

  // One launch of `f` with `slots` slots over tensors[i] (write flags per tensor).
  CUresult launch(CUfunction f, uint32_t slots, const std::vector<uint32_t>& tensors,
                  const std::vector<uint8_t>& writes, uint64_t duration_ns) {
    std::vector<uint64_t> words(2 + 3 * slots, 0);
    words[0] = counter_;
    words[1] = duration_ns;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const uint32_t t = tensors[i];
      words[2 + i] = ptr_[t];
      words[2 + slots + i] = w_.tensors[t].size_bytes;
      words[2 + 2 * slots + i] = seed_[t] | (writes[i] ? CUSWAP_REPLAY_WRITE : 0);
    }
    std::vector<void*> params(words.size());
    for (size_t i = 0; i < words.size(); ++i)
      params[i] = &words[i];
    return d_.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream_, params.data(), nullptr);
  }

  // Writes resident tensors outside an iteration (the init kernel).
  bool write_all(const std::vector<uint32_t>& tensors, uint32_t iteration) {
    for (size_t i = 0; i < tensors.size(); i += kMaxSlots) {
      const size_t count = std::min<size_t>(kMaxSlots, tensors.size() - i);
      std::vector<uint32_t> chunk(tensors.begin() + static_cast<ptrdiff_t>(i),
                                  tensors.begin() + static_cast<ptrdiff_t>(i + count));
      for (uint32_t t : chunk)
        seed_[t] = cuswap_replay_seed(t, iteration);
      if (!check(launch(init_, kMaxSlots, chunk, std::vector<uint8_t>(count, 1), 0),
                 "cuLaunchKernel (writing resident tensors)"))
        return false;
    }
    return true;
  }

  bool setup() {
    for (uint32_t t : s_.setup)
      if (!allocate(t, fmt::format("before the first iteration (tensor {})", w_.tensors[t].name)))
        return false;
    return write_all(s_.setup, kBeforeFirst);
  }

  std::string at_op(uint32_t op) const { return fmt::format("at op {} ({})", op, w_.ops[op].name); }

  bool iteration(uint32_t it) {
    const auto n = static_cast<uint32_t>(w_.ops.size());
    for (uint32_t op = 0; op < n; ++op) {
      for (uint32_t t : s_.allocs[op]) {
        if (!allocate(t, at_op(op))) return false;
        seed_[t] = cuswap_replay_seed(t, it);
      }
      for (uint32_t l = s_.first_launch[op]; l <= s_.last_launch[op]; ++l) {
        const Launch& launch_ = s_.launches[l];
        const CUresult r = launch(kernels_[index_of(launch_.slots)], launch_.slots, launch_.tensors,
                                  launch_.writes,
                                  static_cast<uint64_t>(std::max<int64_t>(0, launch_.duration_ns)));
        if (r != CUDA_SUCCESS) {
          uint64_t op_bytes = 0;
          for (uint32_t t : launch_.tensors)
            op_bytes += w_.tensors[t].size_bytes;
          fail(fmt::format("launch {} failed: {} (its {} buffers {} bytes; {} bytes live)",
                           at_op(op), d_.error_name(r), launch_.tensors.size(), op_bytes,
                           used_bytes_));
          return false;
        }
      }
      spend_host_time(d_, o_.host_op_us);
      for (uint32_t t : s_.frees[op])
        if (!release(t)) return false;
    }
    // Note [Replay steady state]: tails become heads, the rest goes or comes.
    for (uint32_t t : s_.end_frees)
      if (!release(t)) return false;
    for (uint32_t t = 0; t < w_.tensors.size(); ++t)
      if (s_.becomes[t] != kNone && ptr_[t]) {
        ptr_[s_.becomes[t]] = ptr_[t];
        seed_[s_.becomes[t]] = seed_[t];
        ptr_[t] = 0;
      }
    for (uint32_t t : s_.end_reallocs)
      if (!allocate(t,
                    fmt::format("at the end of iteration {} (tensor {})", it, w_.tensors[t].name)))
        return false;
    return write_all(s_.end_reallocs, it);
  }

  const policy::Workload& w_;
  const Schedule& s_;
  const RunOptions& o_;
  RunResult& r_;
  Driver d_;
  CUstream stream_ = nullptr;
  CUfunction kernels_[std::size(kVariantSlots)] = {};
  CUfunction init_ = nullptr;
  CUdeviceptr counter_ = 0;
  std::vector<CUdeviceptr> ptr_;
  std::vector<uint64_t> seed_;
  uint64_t free_at_start_ = 0, used_bytes_ = 0, pending_bytes_ = 0;
};

}  // namespace

const char* alloc_path_name(AllocPath path) {
  switch (path) {
    case AllocPath::stream:
      return "stream";
    case AllocPath::sync:
      return "sync";
    case AllocPath::pluggable:
      return "pluggable";
  }
  return "stream";
}

bool parse_alloc_path(const std::string& text, AllocPath& out) {
  for (AllocPath path : {AllocPath::stream, AllocPath::sync, AllocPath::pluggable})
    if (text == alloc_path_name(path)) {
      out = path;
      return true;
    }
  return false;
}

uint32_t steady_from(uint32_t iterations) {
  return iterations > 1 ? std::max<uint32_t>(1, iterations / 2) : 0;
}

RunResult run_replay(const policy::Workload& workload, const Schedule& schedule,
                     const RunOptions& options) {
  RunResult result;
  Replay replay(workload, schedule, options, result);
  replay.run();
  replay.finish();
  return result;
}

namespace {

// A list as "1,2,3", or "-" when empty (one word on a result line).
std::string format_list(const std::vector<int64_t>& values) {
  return values.empty() ? "-" : fmt::format("{}", fmt::join(values, ","));
}

std::vector<int64_t> parse_list(const std::string& text) {
  std::vector<int64_t> out;
  std::istringstream list(text);
  for (std::string v; std::getline(list, v, ',');)
    if (v != "-") out.push_back(std::strtoll(v.c_str(), nullptr, 10));
  return out;
}

}  // namespace

std::string format_result(const RunResult& r) {
  std::string error = r.error;
  std::replace(error.begin(), error.end(), '\n', ' ');
  return fmt::format(
      "completed {}\nvirtual_time {}\niteration_ns {}\nh2d_bytes {}\nd2h_bytes {}\n"
      "integrity_errors {}\nhazards {}\npeak_device_bytes {}\ncuswap {}\ncuswap_stats {}\n"
      "prefetches_on_demand {}\nprefetches {}\nevictions {}\nstall_ns {}\nhost_wait_ns {}\n"
      "vmm_calls {}\nhost_syncs {}\ncuswap_vmm_calls {}\ncuswap_host_waits {}\n"
      "vmm_calls_each {}\nerror {}\n",
      r.completed ? 1 : 0, r.virtual_time ? 1 : 0, format_list(r.iteration_ns), r.h2d_bytes,
      r.d2h_bytes, r.integrity_errors, r.hazards, r.peak_device_bytes, r.cuswap ? 1 : 0,
      r.cuswap_stats ? 1 : 0, r.prefetches_on_demand, r.prefetches, r.evictions, r.stall_ns,
      r.host_wait_ns, r.vmm_calls, r.host_syncs, r.cuswap_vmm_calls, r.cuswap_host_waits,
      format_list(r.vmm_calls_each), error);
}

bool parse_result(const std::string& text, RunResult& r) {
  std::istringstream in(text);
  std::string line;
  bool seen = false;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    const std::string key = line.substr(0, space), value = line.substr(space + 1);
    const auto u64 = [&] { return std::strtoull(value.c_str(), nullptr, 10); };
    if (key == "completed") {
      r.completed = value == "1";
      seen = true;
    } else if (key == "virtual_time")
      r.virtual_time = value == "1";
    else if (key == "iteration_ns")
      r.iteration_ns = parse_list(value);
    else if (key == "vmm_calls_each")
      r.vmm_calls_each = parse_list(value);
    else if (key == "h2d_bytes")
      r.h2d_bytes = u64();
    else if (key == "d2h_bytes")
      r.d2h_bytes = u64();
    else if (key == "integrity_errors")
      r.integrity_errors = u64();
    else if (key == "hazards")
      r.hazards = u64();
    else if (key == "peak_device_bytes")
      r.peak_device_bytes = u64();
    else if (key == "stall_ns")
      r.stall_ns = u64();
    else if (key == "host_wait_ns")
      r.host_wait_ns = u64();
    else if (key == "cuswap")
      r.cuswap = value == "1";
    else if (key == "cuswap_stats")
      r.cuswap_stats = value == "1";
    else if (key == "prefetches_on_demand")
      r.prefetches_on_demand = std::strtod(value.c_str(), nullptr);
    else if (key == "prefetches")
      r.prefetches = std::strtod(value.c_str(), nullptr);
    else if (key == "evictions")
      r.evictions = std::strtod(value.c_str(), nullptr);
    else if (key == "vmm_calls")
      r.vmm_calls = std::strtod(value.c_str(), nullptr);
    else if (key == "host_syncs")
      r.host_syncs = std::strtod(value.c_str(), nullptr);
    else if (key == "cuswap_vmm_calls")
      r.cuswap_vmm_calls = std::strtod(value.c_str(), nullptr);
    else if (key == "cuswap_host_waits")
      r.cuswap_host_waits = std::strtod(value.c_str(), nullptr);
    else if (key == "error")
      r.error = value;
  }
  return seen;
}

}  // namespace cuswap::bench
