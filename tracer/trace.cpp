// Trace helpers: names, the invariant check and the live-bytes sweep.
#include "tracer/trace.h"

#include <algorithm>

#include <fmt/format.h>

namespace cuswap::trace {

std::string_view format_name(TraceFormat format) {
  switch (format) {
    case TraceFormat::cst: return "cst";
    case TraceFormat::tf1_timeline: return "tf1-timeline";
    case TraceFormat::tf1_step_stats: return "tf1-step-stats";
    case TraceFormat::tf2_xplane: return "tf2-xplane";
    case TraceFormat::tf2_memory_profile: return "tf2-memory-profile";
    case TraceFormat::torch_profiler: return "torch-profiler";
    case TraceFormat::torch_snapshot: return "torch-snapshot";
  }
  return "unknown";
}

std::string validate(const Trace& trace) {
  for (size_t i = 0; i < trace.ops.size(); ++i) {
    const Op& op = trace.ops[i];
    if (op.start_ns < 0) return fmt::format("op {} ({}) starts before the trace", i, op.name);
    if (op.duration_ns < 0) return fmt::format("op {} ({}) has a negative duration", i, op.name);
    if (i > 0 && op.start_ns < trace.ops[i - 1].start_ns)
      return fmt::format("op {} ({}) is out of start-time order", i, op.name);
  }
  for (size_t i = 0; i < trace.tensors.size(); ++i) {
    const Tensor& t = trace.tensors[i];
    if (i > 0 && t.alloc_ns < trace.tensors[i - 1].alloc_ns)
      return fmt::format("tensor {} ({}) is out of allocation-time order", i, t.name);
    if (t.free_ns && *t.free_ns < t.alloc_ns)
      return fmt::format("tensor {} ({}) is freed before it is allocated", i, t.name);
    if (t.producer != kNoOp && t.producer >= trace.ops.size())
      return fmt::format("tensor {} ({}) names producer op {} of {}", i, t.name, t.producer,
                         trace.ops.size());
    for (size_t a = 0; a < t.accesses.size(); ++a) {
      if (t.accesses[a] >= trace.ops.size())
        return fmt::format("tensor {} ({}) names op {} of {}", i, t.name, t.accesses[a],
                           trace.ops.size());
      if (a > 0 && trace.ops[t.accesses[a]].start_ns < trace.ops[t.accesses[a - 1]].start_ns)
        return fmt::format("tensor {} ({}) has accesses out of time order", i, t.name);
    }
  }
  for (size_t i = 0; i < trace.iterations.size(); ++i) {
    const Iteration& it = trace.iterations[i];
    if (it.end_ns < it.start_ns || it.end_op < it.first_op || it.end_op > trace.ops.size())
      return fmt::format("iteration {} is malformed", i);
    if (i > 0 && (it.start_ns < trace.iterations[i - 1].end_ns ||
                  it.first_op < trace.iterations[i - 1].end_op))
      return fmt::format("iteration {} overlaps the one before", i);
  }
  return {};
}

LivePeak device_live_peak(const Trace& trace) {
  // Each device on its own: the peak is the highest of theirs.
  std::vector<int> devices;
  for (const Tensor& t : trace.tensors)
    if (t.space == MemorySpace::device &&
        std::find(devices.begin(), devices.end(), t.device) == devices.end())
      devices.push_back(t.device);
  LivePeak best;
  for (int device : devices) {
    const LivePeak p = device_live_peak(trace, device);
    if (p.bytes > best.bytes) best = p;
  }
  return best;
}

LivePeak device_live_peak(const Trace& trace, int device) {
  struct Change {
    int64_t time_ns;
    int64_t delta;
  };
  std::vector<Change> changes;
  changes.reserve(trace.tensors.size() * 2);
  for (const Tensor& t : trace.tensors) {
    if (t.space != MemorySpace::device || t.device != device) continue;
    const auto size = static_cast<int64_t>(t.size_bytes);
    changes.push_back({t.persistent ? 0 : t.alloc_ns, size});
    if (t.free_ns) changes.push_back({*t.free_ns, -size});
  }
  // Frees first at one instant: a buffer freed and another allocated at the
  // same time never coexist.
  std::sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
    return a.time_ns != b.time_ns ? a.time_ns < b.time_ns : a.delta < b.delta;
  });
  LivePeak peak;
  int64_t live = 0;
  for (const Change& c : changes) {
    live += c.delta;
    if (live > static_cast<int64_t>(peak.bytes)) {
      peak.bytes = static_cast<uint64_t>(live);
      peak.time_ns = c.time_ns;
    }
  }
  return peak;
}

}  // namespace cuswap::trace
