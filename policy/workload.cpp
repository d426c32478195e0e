// Trace -> Workload: pick the device and the iteration, serialise the ops on
// one compute engine, and turn every tensor's times into op indices.
//
// Note [Which iteration]
// The first iteration of a run warms up (allocator growth, autotuning) and
// the last one may be cut short by the capture, so with several iterations
// the window is the middle one (index size/2: the second of two). A trace
// without iteration marks is cut where its ops repeat (Note [Steps without
// marks]), else it is one window. Which one was used is a note.
//
// Note [Idle time]
// A GPU capture's compute engine is not busy from the first kernel to the
// last: it waits for the host to launch the next kernel, for an input copy,
// for a synchronisation. That wait is part of the iteration, so each op
// keeps the idle time before it, and the simulator waits it out too: the
// infinite-memory iteration takes the captured span of the window. Overlap
// is counted once: an op's own time is what it adds to the device's busy
// time, whatever lane or stream it ran on.
//
// Note [The loss point]
// A training step's live memory grows through the forward pass (feature
// maps kept for the backward pass) and falls through the backward pass, so
// the first op at which live bytes reach their peak separates the two. The
// definition needs no op names, so it holds for every source; for a trace of
// inference or of a single layer it still names a split point.
#include "policy/workload.h"

#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "policy/step_finder.h"

namespace cuswap::policy {

void Workload::index() {
  const size_t n = ops.size();
  allocs_at.assign(n, {});
  uses_at.assign(n, {});
  frees_after.assign(n, {});
  for (uint32_t t = 0; t < tensors.size(); ++t) {
    const WorkTensor& tensor = tensors[t];
    if (!tensor.resident_at_start() && tensor.alloc_op < n) allocs_at[tensor.alloc_op].push_back(t);
    for (uint32_t u : tensor.uses)
      uses_at[u].push_back(t);
    if (tensor.free_op < n) frees_after[tensor.free_op].push_back(t);
  }
}

namespace {

// The device with the most bytes of device tensors, or -1 where there are none.
int busiest_device(const trace::Trace& trace) {
  std::map<int, uint64_t> bytes;
  for (const trace::Tensor& t : trace.tensors)
    if (t.space == trace::MemorySpace::device) bytes[t.device] += t.size_bytes;
  int best = -1;
  uint64_t best_bytes = 0;
  for (const auto& [device, total] : bytes)
    if (best == -1 || total > best_bytes) best = device, best_bytes = total;
  return best;
}

// A trace with allocations and no ops: a memory snapshot (Note [Workloads
// from an allocation stream]); a sampled profile has too few of its
// allocations to be made one of.
bool build_from_allocations(const trace::Trace& trace, const WorkloadOptions& options, int busiest,
                            Workload& out, std::string& error) {
  if (busiest < 0 || trace.sampled) {
    error = fmt::format("{}: the trace has no ops to plan{}", trace.source,
                        trace.sampled ? ", and only a sample of its allocations" : "");
    return false;
  }
  if (options.iteration > 0) {
    error = fmt::format("{}: iteration {} asked for, the trace has no ops to count them by",
                        trace.source, options.iteration);
    return false;
  }
  out.device = options.device >= 0 ? options.device : busiest;
  return build_stream_workload(trace, out.device, out, error);
}

// The device asked for, else the busiest; a trace with no device tensors
// at all is a CPU capture, whose host tensors stand in for device memory.
void choose_device(const WorkloadOptions& options, int busiest, Workload& out) {
  if (options.device >= -1) {
    out.device = options.device;
  } else if (busiest >= 0) {
    out.device = busiest;
  } else {
    out.device = -1;
  }
  out.host_as_device = busiest < 0;
  if (out.host_as_device)
    out.notes.push_back(
        "no device tensors: host tensors stand in for device memory "
        "(a CPU capture)");
}

// Whether a trace tensor lives in the memory the workload plans.
bool in_space(const Workload& out, const trace::Tensor& t) {
  if (out.host_as_device) return t.space == trace::MemorySpace::host;
  return t.space == trace::MemorySpace::device && t.device == out.device;
}

// The trace's ops [first_op, end_op) and its times [start_ns, end_ns) that
// the workload covers: one iteration, or the whole trace.
struct Window {
  uint32_t first_op = 0;
  uint32_t end_op = 0;
  int64_t start_ns = INT64_MIN;
  int64_t end_ns = INT64_MAX;
};

// The window to plan (Note [Which iteration]), and a note of which it is:
// the trace's iterations, or where it marks none those found from its
// repeating ops (Note [Steps without marks]).
bool choose_window(const trace::Trace& trace, const WorkloadOptions& options, Workload& out,
                   Window& window, std::string& error) {
  window.end_op = static_cast<uint32_t>(trace.ops.size());
  const bool marked = !trace.iterations.empty();
  const std::vector<trace::Iteration> found =
      marked ? std::vector<trace::Iteration>{} : find_steps(trace, out.device);
  const std::vector<trace::Iteration>& steps = marked ? trace.iterations : found;
  if (!steps.empty()) {
    size_t chosen = steps.size() / 2;
    if (options.iteration >= 0) {
      if (static_cast<size_t>(options.iteration) >= steps.size()) {
        error = fmt::format("{}: iteration {} asked for, the trace has {}{}", trace.source,
                            options.iteration, steps.size(),
                            marked ? "" : " (found from its repeating ops)");
        return false;
      }
      chosen = static_cast<size_t>(options.iteration);
    }
    const trace::Iteration& it = steps[chosen];
    window = Window{it.first_op, it.end_op, it.start_ns, it.end_ns};
    out.iteration = static_cast<uint32_t>(chosen);
    if (marked)
      out.notes.push_back(fmt::format("iteration {} of {} planned", chosen, steps.size()));
    else
      out.notes.push_back(fmt::format(
          "iteration {} of {} planned (ops {} to {}): the trace marks none; its steps are found "
          "where its ops repeat (Note [Steps without marks])",
          chosen, steps.size(), it.first_op, it.end_op - 1));
  } else if (options.iteration > 0) {
    error = fmt::format("{}: iteration {} asked for, the trace marks none", trace.source,
                        options.iteration);
    return false;
  }
  return true;
}

// Where the workload's ops sit in the trace and in captured time, which
// turns a tensor's times into op indices.
struct OpTimes {
  std::vector<uint32_t> window_index;       // per trace op: its workload op, or kNoOp
  std::vector<int64_t> starts_ns, ends_ns;  // per workload op, as captured

  // The op during which (or just before which) a time falls.
  uint32_t op_at(int64_t time_ns) const {
    const auto n = static_cast<uint32_t>(starts_ns.size());
    auto j = static_cast<int64_t>(std::upper_bound(starts_ns.begin(), starts_ns.end(), time_ns) -
                                  starts_ns.begin()) -
             1;
    if (j < 0) return 0;
    if (time_ns >= ends_ns[static_cast<size_t>(j)] && static_cast<uint32_t>(j) + 1 < n) ++j;
    return static_cast<uint32_t>(j);
  }
  // The last op that starts before a time.
  int64_t last_before(int64_t time_ns) const {
    return static_cast<int64_t>(std::lower_bound(starts_ns.begin(), starts_ns.end(), time_ns) -
                                starts_ns.begin()) -
           1;
  }
};

// The window's ops, serialised on one compute engine (Note [Idle time]):
// those of the device where it has any in the window, else all.
OpTimes add_ops(const trace::Trace& trace, const Window& window, Workload& out) {
  bool device_has_ops = false;
  if (!out.host_as_device)
    for (uint32_t i = window.first_op; i < window.end_op; ++i)
      device_has_ops |= trace.ops[i].device == out.device;
  OpTimes times;
  times.window_index.assign(trace.ops.size(), trace::kNoOp);
  std::map<std::string_view, uint32_t> ordinals;
  int64_t engine_end_ns = INT64_MIN;  // the end of the device's busy time so far
  for (uint32_t i = window.first_op; i < window.end_op; ++i) {
    const trace::Op& op = trace.ops[i];
    if (device_has_ops && op.device != out.device) continue;
    if (op.is_copy) continue;
    const int64_t end_ns = op.start_ns + op.duration_ns;
    const int64_t own_ns = std::max<int64_t>(0, end_ns - std::max(op.start_ns, engine_end_ns));
    const int64_t idle_ns =
        engine_end_ns == INT64_MIN ? 0 : std::max<int64_t>(0, op.start_ns - engine_end_ns);
    engine_end_ns = std::max(engine_end_ns, end_ns);
    times.window_index[i] = static_cast<uint32_t>(out.ops.size());
    WorkOp w;
    w.trace_index = i;
    w.name = op.name;
    w.type = op.type;
    w.ordinal = ordinals[op.name]++;
    w.duration_ns = own_ns;
    w.idle_ns = idle_ns;
    out.ops.push_back(std::move(w));
    times.starts_ns.push_back(op.start_ns);
    times.ends_ns.push_back(end_ns);
  }
  return times;
}

// The tensors live during the window, every time an op index.
void add_tensors(const trace::Trace& trace, const Window& window, const OpTimes& times,
                 Workload& out) {
  const auto n = static_cast<uint32_t>(out.ops.size());
  uint32_t resident_ordinal = 0, alloc_ordinal = 0;
  for (uint32_t ti = 0; ti < trace.tensors.size(); ++ti) {
    const trace::Tensor& t = trace.tensors[ti];
    if (!in_space(out, t) || t.size_bytes == 0) continue;
    const bool before = t.persistent || t.alloc_ns < window.start_ns;
    if (!before && t.alloc_ns >= window.end_ns) continue;
    if (t.free_ns && *t.free_ns <= window.start_ns && !t.persistent) continue;
    WorkTensor w;
    w.trace_index = ti;
    w.name = t.name;
    w.size_bytes = t.size_bytes;
    if (t.producer != trace::kNoOp) w.producer = times.window_index[t.producer];
    if (before) {
      w.alloc_op = kResidentAtStart;
      w.ordinal = resident_ordinal++;
    } else {
      w.alloc_op = w.producer != trace::kNoOp ? w.producer : times.op_at(t.alloc_ns);
      w.ordinal = alloc_ordinal++;
    }
    const uint32_t floor_op = w.resident_at_start() ? 0 : w.alloc_op;
    if (!t.free_ns || *t.free_ns >= window.end_ns) {
      w.free_op = n;
    } else {
      w.free_op = static_cast<uint32_t>(std::max<int64_t>(times.last_before(*t.free_ns), floor_op));
    }
    size_t touched = 0;  // accesses other than the producer
    for (uint32_t a : t.accesses) {
      const uint32_t k = times.window_index[a];
      if (k == trace::kNoOp) continue;
      w.uses.push_back(k);
      if (a != t.producer) ++touched;
    }
    if (!w.resident_at_start()) w.uses.push_back(w.alloc_op);
    if (touched == 0 && w.free_op < n) w.uses.push_back(w.free_op);
    std::sort(w.uses.begin(), w.uses.end());
    w.uses.erase(std::unique(w.uses.begin(), w.uses.end()), w.uses.end());
    // Keep the invariant alloc_op <= uses <= free_op where the source's
    // times and accesses disagree slightly.
    std::erase_if(w.uses, [&](uint32_t u) { return u < floor_op; });
    if (!w.uses.empty() && w.uses.back() > w.free_op) w.free_op = std::min(w.uses.back(), n);
    out.tensors.push_back(std::move(w));
  }
}

}  // namespace

bool build_workload(const trace::Trace& trace, const WorkloadOptions& options, Workload& out,
                    std::string& error) {
  out = Workload{};
  out.source = trace.source;
  const int busiest = busiest_device(trace);
  if (trace.ops.empty()) return build_from_allocations(trace, options, busiest, out, error);
  choose_device(options, busiest, out);
  Window window;
  if (!choose_window(trace, options, out, window, error)) return false;
  const OpTimes times = add_ops(trace, window, out);
  if (out.ops.empty()) {
    error = fmt::format("{}: no ops in the chosen window", trace.source);
    return false;
  }
  add_tensors(trace, window, times, out);
  out.index();
  return true;
}

uint64_t charged_bytes(uint64_t size_bytes, uint64_t swap_min_bytes) {
  const uint64_t unit = size_bytes >= swap_min_bytes ? kRuntimePageBytes : kRuntimeSmallBytes;
  return (std::max<uint64_t>(size_bytes, 1) + unit - 1) / unit * unit;
}

Workload with_charged_sizes(const Workload& workload, uint64_t swap_min_bytes) {
  Workload out = workload;
  for (WorkTensor& t : out.tensors) {
    t.slab = t.size_bytes < swap_min_bytes;
    t.size_bytes = charged_bytes(t.size_bytes, swap_min_bytes);
  }
  return out;
}

std::vector<uint64_t> live_bytes_per_op(const Workload& workload) {
  return live_bytes_per_op(workload, {});
}

std::vector<uint64_t> live_bytes_per_op(const Workload& workload,
                                        const std::vector<uint8_t>& parked) {
  const size_t n = workload.ops.size();
  std::vector<int64_t> delta(n + 1, 0);
  for (size_t x = 0; x < workload.tensors.size(); ++x) {
    if (x < parked.size() && parked[x]) continue;
    const WorkTensor& t = workload.tensors[x];
    const uint32_t from = t.resident_at_start() ? 0 : t.alloc_op;
    const auto size = static_cast<int64_t>(t.size_bytes);
    delta[from] += size;
    if (t.free_op < n) delta[t.free_op + 1] -= size;
  }
  std::vector<uint64_t> live(n, 0);
  int64_t running = 0;
  for (size_t k = 0; k < n; ++k) {
    running += delta[k];
    live[k] = static_cast<uint64_t>(running);
  }
  return live;
}

uint32_t loss_point(const Workload& workload) {
  const std::vector<uint64_t> live = live_bytes_per_op(workload);
  return static_cast<uint32_t>(std::max_element(live.begin(), live.end()) - live.begin());
}

}  // namespace cuswap::policy
