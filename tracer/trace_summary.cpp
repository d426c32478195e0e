// summarize(): one pass over the events in sequence order, keeping the live
// buffers in a map. Definitions are in trace_summary.h.
//
// The pass is a Pass: one handler per event type updates the tallies, and
// finish() turns them into the summary's lists (copies by direction, vmm
// operations, the most launched kernels and the largest buffers).
#include "tracer/trace_summary.h"

#include <algorithm>
#include <array>
#include <unordered_map>
#include <unordered_set>

namespace cuswap::trace {
namespace {

struct LiveBuffer {
  size_t lifetime = 0;  // index into the lifetimes
  uint64_t last_launch_seq = UINT64_MAX;
};

class Pass {
 public:
  explicit Pass(const CstTrace& trace) : trace_(trace) {
    s_.header = trace.header;
    s_.complete = trace.complete();
    s_.stopped_at = trace.stopped_at;
    s_.stopped_reason = trace.stopped_reason;
    s_.end = trace.end;
    s_.events = trace.events.size();
  }

  void event(const Event& e);
  TraceSummary finish(size_t top);

 private:
  bool end_lifetime(uint64_t id, uint64_t time_ns);
  void alloc(const Event& e, IterationSummary* iteration);
  void launch(const Event& e, IterationSummary* iteration);
  void copy(const CopyEvent& c);
  void iteration_mark(const Event& e, IterationSummary* iteration);
  void timing(const TimingEvent& t);
  void eviction(const EvictionEvent& v);
  void prefetch(const PrefetchEvent& p);
  void top_kernels(size_t top);
  void top_buffers(size_t top);

  const CstTrace& trace_;
  TraceSummary s_;
  std::unordered_set<uint32_t> threads_;
  std::unordered_map<uint64_t, LiveBuffer> live_;
  std::vector<BufferLifetime> lifetimes_;
  std::unordered_map<uint32_t, uint64_t> launches_by_kernel_;
  std::array<CopyTotals, 6> copies_{};  // by CopyDirection
  std::array<uint64_t, 4> vmm_{};       // by VmmOp
  uint64_t live_bytes_ = 0;
};

bool Pass::end_lifetime(uint64_t id, uint64_t time_ns) {
  auto it = live_.find(id);
  if (it == live_.end()) return false;
  BufferLifetime& b = lifetimes_[it->second.lifetime];
  b.free_time_ns = time_ns;
  live_bytes_ -= b.size_bytes;
  live_.erase(it);
  return true;
}

void Pass::event(const Event& e) {
  threads_.insert(e.thread);
  s_.duration_ns = std::max(s_.duration_ns, e.time_ns);
  IterationSummary* iteration = s_.per_iteration.empty() ? nullptr : &s_.per_iteration.back();
  switch (e.type()) {
    case EventType::alloc:
      alloc(e, iteration);
      break;
    case EventType::free:
      if (!end_lifetime(e.as<FreeEvent>().buffer_id, e.time_ns)) ++s_.unmatched_frees;
      if (iteration) ++iteration->frees;
      break;
    case EventType::launch:
      launch(e, iteration);
      break;
    case EventType::copy:
      copy(e.as<CopyEvent>());
      break;
    case EventType::vmm:
      if (static_cast<size_t>(e.as<VmmEvent>().op) < vmm_.size())
        ++vmm_[static_cast<size_t>(e.as<VmmEvent>().op)];
      break;
    case EventType::iteration:
      iteration_mark(e, iteration);
      break;
    case EventType::timing:
      timing(e.as<TimingEvent>());
      break;
    case EventType::eviction:
      eviction(e.as<EvictionEvent>());
      break;
    case EventType::prefetch:
      prefetch(e.as<PrefetchEvent>());
      break;
    case EventType::wait:
      ++s_.prefetch_waits;
      break;
    case EventType::iteration_stats:
      s_.cuswap_iterations.push_back(e.as<IterationStatsEvent>());
      break;
  }
}

void Pass::alloc(const Event& e, IterationSummary* iteration) {
  const auto& a = e.as<AllocEvent>();
  if (end_lifetime(a.buffer_id, e.time_ns)) ++s_.reused_ids;
  live_[a.buffer_id] = {lifetimes_.size(), UINT64_MAX};
  lifetimes_.push_back({a.buffer_id, a.size_bytes, a.device, e.time_ns, std::nullopt, 0});
  ++s_.buffers;
  s_.allocated_bytes += a.size_bytes;
  live_bytes_ += a.size_bytes;
  if (live_bytes_ > s_.peak_bytes) {
    s_.peak_bytes = live_bytes_;
    s_.peak_time_ns = e.time_ns;
  }
  if (iteration) {
    ++iteration->allocs;
    iteration->peak_bytes = std::max(iteration->peak_bytes, live_bytes_);
  }
}

void Pass::launch(const Event& e, IterationSummary* iteration) {
  const auto& l = e.as<LaunchEvent>();
  ++s_.launches;
  ++launches_by_kernel_[l.kernel_id];
  if (l.flags & kLaunchUnknownAccess) ++s_.launches_unknown_access;
  if (l.flags & kLaunchGraph) ++s_.graph_launches;
  if (l.flags & kLaunchBuffersTruncated) ++s_.launches_truncated;
  for (uint64_t id : l.buffers) {
    auto it = live_.find(id);
    if (it == live_.end() || it->second.last_launch_seq == e.seq) continue;
    it->second.last_launch_seq = e.seq;  // a buffer listed twice counts once
    ++lifetimes_[it->second.lifetime].launches;
  }
  if (iteration) ++iteration->launches;
}

void Pass::copy(const CopyEvent& c) {
  if (c.is_set) {
    ++s_.sets;
    s_.set_bytes += c.bytes;
  } else if (static_cast<size_t>(c.direction) < copies_.size()) {
    CopyTotals& t = copies_[static_cast<size_t>(c.direction)];
    ++t.copies;
    t.bytes += c.bytes;
  }
}

// A mark ends the iteration before it and starts the next.
void Pass::iteration_mark(const Event& e, IterationSummary* iteration) {
  // Marks from different threads may be a few ns out of time order.
  if (iteration)
    iteration->duration_ns = e.time_ns > iteration->start_ns ? e.time_ns - iteration->start_ns : 0;
  s_.per_iteration.push_back({e.as<IterationEvent>().ordinal, e.time_ns, 0, 0, 0, 0, live_bytes_});
}

void Pass::timing(const TimingEvent& t) {
  // The reader checked that a present target is a launch or a prefetch.
  auto target = std::lower_bound(trace_.events.begin(), trace_.events.end(), t.target_seq,
                                 [](const Event& x, uint64_t seq) { return x.seq < seq; });
  if (target == trace_.events.end() || target->seq != t.target_seq) return;
  if (target->type() == EventType::launch) {
    ++s_.timed_launches;
    s_.kernel_time_ns += t.duration_ns;
  } else {
    s_.prefetch_copy_time_ns += t.duration_ns;
  }
}

void Pass::eviction(const EvictionEvent& v) {
  ++s_.evictions;
  if (v.reason == EvictReason::plan) ++s_.evictions_for_plan;
  s_.bytes_to_host += v.bytes;
  s_.eviction_time_ns += v.duration_ns;
}

void Pass::prefetch(const PrefetchEvent& p) {
  ++s_.prefetches;
  if (p.reason == PrefetchReason::on_demand) ++s_.prefetches_on_demand;
  if (p.reason == PrefetchReason::planned) ++s_.prefetches_planned;
  if (p.reason == PrefetchReason::unseen_use) ++s_.prefetches_unseen_use;
  s_.bytes_to_device += p.bytes;
}

TraceSummary Pass::finish(size_t top) {
  if (!s_.per_iteration.empty()) {
    IterationSummary& last = s_.per_iteration.back();
    last.duration_ns = s_.duration_ns - last.start_ns;
  }
  s_.iterations = s_.per_iteration.size();
  s_.threads = threads_.size();
  s_.live_at_end = live_.size();
  s_.live_bytes_at_end = live_bytes_;

  for (size_t d = 0; d < copies_.size(); ++d)
    if (copies_[d].copies) {
      copies_[d].direction = static_cast<CopyDirection>(d);
      s_.copies.push_back(copies_[d]);
    }
  for (size_t op = 0; op < vmm_.size(); ++op)
    if (vmm_[op]) s_.vmm.emplace_back(static_cast<VmmOp>(op), vmm_[op]);
  top_kernels(top);
  top_buffers(top);
  return std::move(s_);
}

void Pass::top_kernels(size_t top) {
  s_.kernels = launches_by_kernel_.size();
  for (const auto& [id, n] : launches_by_kernel_)
    s_.top_kernels.push_back({id, std::string(trace_.kernel_name(id)), n});
  auto by_launches = [](const KernelLaunches& a, const KernelLaunches& b) {
    return a.launches != b.launches ? a.launches > b.launches : a.name < b.name;
  };
  const size_t kernels_kept = std::min(top, s_.top_kernels.size());
  std::partial_sort(s_.top_kernels.begin(), s_.top_kernels.begin() + kernels_kept,
                    s_.top_kernels.end(), by_launches);
  s_.top_kernels.resize(kernels_kept);
}

void Pass::top_buffers(size_t top) {
  auto by_size = [](const BufferLifetime& a, const BufferLifetime& b) {
    if (a.size_bytes != b.size_bytes) return a.size_bytes > b.size_bytes;
    return a.alloc_time_ns != b.alloc_time_ns ? a.alloc_time_ns < b.alloc_time_ns
                                              : a.buffer_id < b.buffer_id;
  };
  const size_t buffers_kept = std::min(top, lifetimes_.size());
  std::partial_sort(lifetimes_.begin(), lifetimes_.begin() + buffers_kept, lifetimes_.end(),
                    by_size);
  lifetimes_.resize(buffers_kept);
  s_.top_buffers = std::move(lifetimes_);
}

}  // namespace

TraceSummary summarize(const CstTrace& trace, size_t top) {
  Pass pass(trace);
  for (const Event& e : trace.events) pass.event(e);
  return pass.finish(top);
}

}  // namespace cuswap::trace
