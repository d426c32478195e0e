// TraceBuilder::finish: the sorting and remapping behind the invariants of
// tracer/trace.h (see builder.h).
#include "tracer/import/builder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace cuswap::trace::import {

void TraceBuilder::report_allocator(const std::string& name, MemorySpace space, int device,
                                    std::optional<uint64_t> peak_bytes) {
  for (AllocatorReport& r : trace_.allocators) {
    if (r.allocator != name) continue;
    if (peak_bytes) r.peak_bytes = std::max(r.peak_bytes.value_or(0), *peak_bytes);
    return;
  }
  trace_.allocators.push_back({name, space, device, peak_bytes});
}

void TraceBuilder::finish() {
  std::vector<Op>& ops = trace_.ops;
  std::vector<Tensor>& tensors = trace_.tensors;

  // The origin: the earliest thing that happened.
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const Op& op : ops) origin = std::min(origin, op.start_ns);
  for (const Tensor& t : tensors)
    if (!t.persistent) origin = std::min(origin, t.alloc_ns);
  for (const Span& s : spans_) origin = std::min(origin, s.start_ns);
  if (origin == std::numeric_limits<int64_t>::max()) origin = 0;
  for (Op& op : ops) op.start_ns -= origin;
  for (Tensor& t : tensors) {
    t.alloc_ns = t.persistent ? 0 : t.alloc_ns - origin;
    if (t.free_ns) *t.free_ns = std::max(*t.free_ns - origin, t.alloc_ns);
  }
  for (Span& s : spans_) {
    s.start_ns -= origin;
    s.end_ns = std::max(s.end_ns - origin, s.start_ns);
  }

  // Ops by start time, stable; old index -> new index.
  std::vector<uint32_t> order(ops.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return ops[a].start_ns < ops[b].start_ns; });
  std::vector<uint32_t> new_index(ops.size());
  std::vector<Op> sorted;
  sorted.reserve(ops.size());
  for (uint32_t i = 0; i < order.size(); ++i) {
    new_index[order[i]] = i;
    sorted.push_back(std::move(ops[order[i]]));
  }
  ops = std::move(sorted);

  for (Tensor& t : tensors) {
    for (uint32_t& a : t.accesses) a = a < new_index.size() ? new_index[a] : kNoOp;
    std::erase(t.accesses, kNoOp);
    if (t.producer != kNoOp) {
      t.producer = t.producer < new_index.size() ? new_index[t.producer] : kNoOp;
      if (t.producer != kNoOp) t.accesses.push_back(t.producer);
    }
    // Sorted positions are in start-time order already.
    std::sort(t.accesses.begin(), t.accesses.end());
    t.accesses.erase(std::unique(t.accesses.begin(), t.accesses.end()), t.accesses.end());
  }
  std::stable_sort(tensors.begin(), tensors.end(),
                   [](const Tensor& a, const Tensor& b) { return a.alloc_ns < b.alloc_ns; });

  // Iterations: sorted, clipped so they do not overlap, then op ranges.
  std::sort(spans_.begin(), spans_.end(),
            [](const Span& a, const Span& b) { return a.start_ns < b.start_ns; });
  trace_.iterations.clear();
  int64_t previous_end = std::numeric_limits<int64_t>::min();
  for (const Span& s : spans_) {
    Iteration it;
    it.start_ns = std::max(s.start_ns, previous_end);
    it.end_ns = std::max(s.end_ns, it.start_ns);
    previous_end = it.end_ns;
    const auto first = std::lower_bound(
        ops.begin(), ops.end(), it.start_ns,
        [](const Op& op, int64_t time) { return op.start_ns < time; });
    const auto end = std::lower_bound(
        first, ops.end(), it.end_ns, [](const Op& op, int64_t time) { return op.start_ns < time; });
    it.first_op = static_cast<uint32_t>(first - ops.begin());
    it.end_op = static_cast<uint32_t>(end - ops.begin());
    const auto index = static_cast<uint32_t>(trace_.iterations.size());
    for (auto op = first; op != end; ++op) op->iteration = index;
    trace_.iterations.push_back(it);
  }
  for (Tensor& t : tensors) {
    t.iteration = kNoIteration;
    if (t.persistent) continue;
    const auto it = std::upper_bound(
        trace_.iterations.begin(), trace_.iterations.end(), t.alloc_ns,
        [](int64_t time, const Iteration& i) { return time < i.start_ns; });
    if (it == trace_.iterations.begin()) continue;
    const Iteration& holder = *(it - 1);
    if (t.alloc_ns < holder.end_ns)
      t.iteration = static_cast<uint32_t>(it - 1 - trace_.iterations.begin());
  }
}

// Every time is kept within +-INT64_MAX/4 so that sums of a start and a
// duration, and differences from the origin, cannot overflow.
int64_t micros_to_ns(double micros) {
  constexpr int64_t kLimit = std::numeric_limits<int64_t>::max() / 4;
  const double ns = micros * 1000.0;
  if (!(ns == ns)) return 0;  // NaN
  if (ns >= static_cast<double>(kLimit)) return kLimit;
  if (ns <= -static_cast<double>(kLimit)) return -kLimit;
  return static_cast<int64_t>(std::llround(ns));
}

int64_t micros_to_ns(int64_t micros) {
  constexpr int64_t kLimit = std::numeric_limits<int64_t>::max() / 4 / 1000;
  return std::clamp(micros, -kLimit, kLimit) * 1000;
}

int64_t picos_to_ns(uint64_t picos) {
  return static_cast<int64_t>(std::min<uint64_t>(picos / 1000, std::numeric_limits<int64_t>::max() / 4));
}

uint64_t TraceBuilder::add_held_before(const std::string& allocator, int device,
                                       uint64_t held_bytes, std::string name) {
  uint64_t freed = 0;
  for (const Tensor& t : trace_.tensors)
    if (t.persistent && t.allocator == allocator) freed += t.size_bytes;
  if (held_bytes <= freed) return 0;
  Tensor t;
  t.name = std::move(name);
  t.size_bytes = held_bytes - freed;
  t.requested_bytes = t.size_bytes;
  t.allocator = allocator;
  t.device = device;
  t.persistent = true;
  const uint64_t size = t.size_bytes;
  trace_.tensors.push_back(std::move(t));
  return size;
}

}  // namespace cuswap::trace::import
