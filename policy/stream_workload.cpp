// A workload from a trace that has allocations and frees but no ops: a
// PyTorch memory snapshot.
//
// Note [Workloads from an allocation stream]
// A memory snapshot (torch.cuda.memory._snapshot) keeps the allocator's
// history: every allocation and free in order, with sizes and times, and
// nothing of the kernels between them. Its workload is made of that stream:
// an op per event, an allocation an op that writes the new buffer, a free
// an op that reads the buffer for the last time, after which it goes. Each
// op lasts until the next event (the host's clock: the snapshot has no
// other), so the stream replays as the framework issued it, and any user's
// snapshot becomes a benchmark of an allocator under a budget. Buffers that
// were live before the window are resident at its start; those never freed
// in the history (weights, optimizer state) have no use in it: the
// snapshot does not say when they are read.
//
// Iterations, where the history holds several: the stream of (kind, size)
// keys repeats with the step's period P. The period taken is the one whose
// repetition covers most of the history, running to its end (a snapshot is
// taken at any point of a step, and start-up work does not repeat): at
// least two whole periods, each key equal to the one P before it; among
// equal covers, the shortest P. A layer's pattern repeats too, but only
// over a part of the step, so it covers less. A step starts where the
// buffers live between steps are fewest (as the loss point needs no
// names, the boundary needs none): of the P phases, the one with the
// fewest live bytes; the window is the middle whole step of the cover.
// Without a period, the whole history is one window.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "policy/workload.h"

namespace cuswap::policy {
namespace {

struct Event {
  int64_t time_ns = 0;
  uint32_t tensor = 0;  // index in the trace
  bool alloc = false;
};

constexpr size_t kMinPeriod = 8;

// The longest run, ending at the last event, of keys equal to the one
// `period` before them.
size_t suffix_repeats(const std::vector<uint64_t>& keys, size_t period) {
  size_t run = 0;
  for (size_t i = keys.size(); i-- > period && keys[i] == keys[i - period];)
    ++run;
  return run;
}

// [first, end) of the window in events, by the repeating pattern.
std::pair<size_t, size_t> choose_window(const trace::Trace& trace, const std::vector<Event>& events,
                                        std::vector<std::string>& notes) {
  const size_t n = events.size();
  std::vector<uint64_t> keys(n);
  for (size_t i = 0; i < n; ++i)
    keys[i] = trace.tensors[events[i].tensor].size_bytes * 2 + (events[i].alloc ? 1 : 0);
  size_t best_period = 0, best_cover = 0;
  for (size_t period = kMinPeriod; 2 * period <= n; ++period) {
    const size_t run = suffix_repeats(keys, period);
    if (run < period) continue;
    const size_t cover = run + period;
    if (cover > best_cover) best_cover = cover, best_period = period;
  }
  if (best_period == 0) {
    notes.push_back(fmt::format(
        "no step repeats in the {} allocations and frees: the whole history is one window", n));
    return {0, n};
  }
  const size_t start = n - best_cover;
  // Live bytes after each event, and the phase where they are lowest.
  std::vector<int64_t> live(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const auto bytes = static_cast<int64_t>(trace.tensors[events[i].tensor].size_bytes);
    live[i + 1] = live[i] + (events[i].alloc ? bytes : -bytes);
  }
  size_t phase = 0;
  int64_t lowest = INT64_MAX;
  for (size_t k = 0; k < best_period; ++k) {
    if (live[start + k] < lowest) lowest = live[start + k], phase = k;
  }
  const size_t whole = (n - start - phase) / best_period;
  const size_t first = start + phase + (whole / 2) * best_period;
  notes.push_back(fmt::format(
      "steps of {} allocations and frees repeat over {} of {}: step {} of {} is the window",
      best_period, best_cover, n, whole / 2, whole));
  return {first, std::min(n, first + best_period)};
}

}  // namespace

bool build_stream_workload(const trace::Trace& trace, int device, Workload& out,
                           std::string& error) {
  std::vector<Event> events;
  for (uint32_t t = 0; t < trace.tensors.size(); ++t) {
    const trace::Tensor& tensor = trace.tensors[t];
    if (tensor.space != trace::MemorySpace::device || tensor.device != device ||
        tensor.size_bytes == 0)
      continue;
    if (!tensor.persistent) events.push_back({tensor.alloc_ns, t, true});
    if (tensor.free_ns) events.push_back({*tensor.free_ns, t, false});
  }
  if (events.empty()) {
    error = fmt::format("{}: the trace has no ops, and no allocations on device {} to make them of",
                        trace.source, device);
    return false;
  }
  // In time order; at one instant frees first (trace.h's reading of live bytes).
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.time_ns != b.time_ns) return a.time_ns < b.time_ns;
    return !a.alloc && b.alloc;
  });
  const auto [first, end] = choose_window(trace, events, out.notes);
  out.notes.push_back(
      "ops made of the allocation stream: an allocation writes its buffer, a free reads it last "
      "(Note [Workloads from an allocation stream])");

  std::map<std::string, uint32_t> ordinals;
  // Per trace tensor: its alloc and free ops in the window, if there.
  std::vector<uint32_t> alloc_op(trace.tensors.size(), trace::kNoOp),
      free_op(trace.tensors.size(), trace::kNoOp);
  for (size_t i = first; i < end; ++i) {
    const Event& e = events[i];
    WorkOp op;
    op.trace_index = trace::kNoOp;
    op.name = e.alloc ? "alloc" : "free";
    op.type = e.alloc ? "allocation" : "free";
    op.ordinal = ordinals[op.name]++;
    op.duration_ns = i + 1 < events.size() ? events[i + 1].time_ns - e.time_ns : 0;
    const auto index = static_cast<uint32_t>(out.ops.size());
    (e.alloc ? alloc_op : free_op)[e.tensor] = index;
    out.ops.push_back(std::move(op));
  }
  const auto n = static_cast<uint32_t>(out.ops.size());
  const int64_t window_start = events[first].time_ns;
  uint32_t resident_ordinal = 0, alloc_ordinal = 0;
  // Allocated in the window, in allocation order; then those live at its start.
  std::vector<uint32_t> order;
  for (size_t i = first; i < end; ++i)
    if (events[i].alloc) order.push_back(events[i].tensor);
  for (uint32_t t = 0; t < trace.tensors.size(); ++t) {
    const trace::Tensor& tensor = trace.tensors[t];
    if (tensor.space != trace::MemorySpace::device || tensor.device != device ||
        tensor.size_bytes == 0 || alloc_op[t] != trace::kNoOp)
      continue;
    const bool before = tensor.persistent || tensor.alloc_ns < window_start;
    const bool gone =
        tensor.free_ns && free_op[t] == trace::kNoOp && *tensor.free_ns <= window_start;
    if (before && !gone) order.push_back(t);
  }
  for (uint32_t t : order) {
    const trace::Tensor& tensor = trace.tensors[t];
    WorkTensor w;
    w.trace_index = t;
    w.name = tensor.name;
    w.size_bytes = tensor.size_bytes;
    if (alloc_op[t] != trace::kNoOp) {
      w.alloc_op = w.producer = alloc_op[t];
      w.ordinal = alloc_ordinal++;
      w.uses.push_back(alloc_op[t]);
    } else {
      w.alloc_op = kResidentAtStart;
      w.ordinal = resident_ordinal++;
    }
    w.free_op = free_op[t] != trace::kNoOp ? free_op[t] : n;
    if (free_op[t] != trace::kNoOp) w.uses.push_back(free_op[t]);
    out.tensors.push_back(std::move(w));
  }
  // Tensors in trace order, as build_workload keeps them.
  std::stable_sort(
      out.tensors.begin(), out.tensors.end(),
      [](const WorkTensor& a, const WorkTensor& b) { return a.trace_index < b.trace_index; });
  out.index();
  return true;
}

}  // namespace cuswap::policy
