// summarize(): one pass over the events in sequence order, keeping the live
// buffers in a map. Definitions are in trace_summary.h.
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

}  // namespace

TraceSummary summarize(const CstTrace& trace, size_t top) {
  TraceSummary s;
  s.header = trace.header;
  s.complete = trace.complete();
  s.stopped_at = trace.stopped_at;
  s.stopped_reason = trace.stopped_reason;
  s.end = trace.end;
  s.events = trace.events.size();

  std::unordered_set<uint32_t> threads;
  std::unordered_map<uint64_t, LiveBuffer> live;
  std::vector<BufferLifetime> lifetimes;
  std::unordered_map<uint32_t, uint64_t> launches_by_kernel;
  std::array<CopyTotals, 6> copies{};
  std::array<uint64_t, 4> vmm{};
  uint64_t live_bytes = 0;

  auto end_lifetime = [&](uint64_t id, uint64_t time_ns) {
    auto it = live.find(id);
    if (it == live.end()) return false;
    BufferLifetime& b = lifetimes[it->second.lifetime];
    b.free_time_ns = time_ns;
    live_bytes -= b.size_bytes;
    live.erase(it);
    return true;
  };

  for (const Event& e : trace.events) {
    threads.insert(e.thread);
    s.duration_ns = std::max(s.duration_ns, e.time_ns);
    IterationSummary* iteration = s.per_iteration.empty() ? nullptr : &s.per_iteration.back();
    switch (e.type()) {
      case EventType::alloc: {
        const auto& a = e.as<AllocEvent>();
        if (end_lifetime(a.buffer_id, e.time_ns)) ++s.reused_ids;
        live[a.buffer_id] = {lifetimes.size(), UINT64_MAX};
        lifetimes.push_back({a.buffer_id, a.size_bytes, a.device, e.time_ns, std::nullopt, 0});
        ++s.buffers;
        s.allocated_bytes += a.size_bytes;
        live_bytes += a.size_bytes;
        if (live_bytes > s.peak_bytes) {
          s.peak_bytes = live_bytes;
          s.peak_time_ns = e.time_ns;
        }
        if (iteration) {
          ++iteration->allocs;
          iteration->peak_bytes = std::max(iteration->peak_bytes, live_bytes);
        }
        break;
      }
      case EventType::free:
        if (!end_lifetime(e.as<FreeEvent>().buffer_id, e.time_ns)) ++s.unmatched_frees;
        if (iteration) ++iteration->frees;
        break;
      case EventType::launch: {
        const auto& l = e.as<LaunchEvent>();
        ++s.launches;
        ++launches_by_kernel[l.kernel_id];
        if (l.flags & kLaunchUnknownAccess) ++s.launches_unknown_access;
        if (l.flags & kLaunchGraph) ++s.graph_launches;
        if (l.flags & kLaunchBuffersTruncated) ++s.launches_truncated;
        for (uint64_t id : l.buffers) {
          auto it = live.find(id);
          if (it == live.end() || it->second.last_launch_seq == e.seq) continue;
          it->second.last_launch_seq = e.seq;  // a buffer listed twice counts once
          ++lifetimes[it->second.lifetime].launches;
        }
        if (iteration) ++iteration->launches;
        break;
      }
      case EventType::copy: {
        const auto& c = e.as<CopyEvent>();
        if (c.is_set) {
          ++s.sets;
          s.set_bytes += c.bytes;
        } else if (static_cast<size_t>(c.direction) < copies.size()) {
          CopyTotals& t = copies[static_cast<size_t>(c.direction)];
          ++t.copies;
          t.bytes += c.bytes;
        }
        break;
      }
      case EventType::vmm:
        if (static_cast<size_t>(e.as<VmmEvent>().op) < vmm.size())
          ++vmm[static_cast<size_t>(e.as<VmmEvent>().op)];
        break;
      case EventType::iteration:
        // Marks from different threads may be a few ns out of time order.
        if (iteration)
          iteration->duration_ns =
              e.time_ns > iteration->start_ns ? e.time_ns - iteration->start_ns : 0;
        s.per_iteration.push_back(
            {e.as<IterationEvent>().ordinal, e.time_ns, 0, 0, 0, 0, live_bytes});
        break;
      case EventType::timing: {
        const auto& t = e.as<TimingEvent>();
        // The reader checked that a present target is a launch or a prefetch.
        auto target = std::lower_bound(
            trace.events.begin(), trace.events.end(), t.target_seq,
            [](const Event& x, uint64_t seq) { return x.seq < seq; });
        if (target == trace.events.end() || target->seq != t.target_seq) break;
        if (target->type() == EventType::launch) {
          ++s.timed_launches;
          s.kernel_time_ns += t.duration_ns;
        } else {
          s.prefetch_copy_time_ns += t.duration_ns;
        }
        break;
      }
      case EventType::eviction: {
        const auto& v = e.as<EvictionEvent>();
        ++s.evictions;
        if (v.reason == EvictReason::plan) ++s.evictions_for_plan;
        s.bytes_to_host += v.bytes;
        s.eviction_time_ns += v.duration_ns;
        break;
      }
      case EventType::prefetch: {
        const auto& p = e.as<PrefetchEvent>();
        ++s.prefetches;
        if (p.reason == PrefetchReason::on_demand) ++s.prefetches_on_demand;
        if (p.reason == PrefetchReason::planned) ++s.prefetches_planned;
        if (p.reason == PrefetchReason::unseen_use) ++s.prefetches_unseen_use;
        s.bytes_to_device += p.bytes;
        break;
      }
      case EventType::wait:
        ++s.prefetch_waits;
        break;
      case EventType::iteration_stats:
        s.cuswap_iterations.push_back(e.as<IterationStatsEvent>());
        break;
    }
  }
  if (!s.per_iteration.empty()) {
    IterationSummary& last = s.per_iteration.back();
    last.duration_ns = s.duration_ns - last.start_ns;
  }
  s.iterations = s.per_iteration.size();
  s.threads = threads.size();
  s.live_at_end = live.size();
  s.live_bytes_at_end = live_bytes;

  for (size_t d = 0; d < copies.size(); ++d)
    if (copies[d].copies) {
      copies[d].direction = static_cast<CopyDirection>(d);
      s.copies.push_back(copies[d]);
    }
  for (size_t op = 0; op < vmm.size(); ++op)
    if (vmm[op]) s.vmm.emplace_back(static_cast<VmmOp>(op), vmm[op]);

  s.kernels = launches_by_kernel.size();
  for (const auto& [id, n] : launches_by_kernel)
    s.top_kernels.push_back({id, std::string(trace.kernel_name(id)), n});
  auto by_launches = [](const KernelLaunches& a, const KernelLaunches& b) {
    return a.launches != b.launches ? a.launches > b.launches : a.name < b.name;
  };
  const size_t kernels_kept = std::min(top, s.top_kernels.size());
  std::partial_sort(s.top_kernels.begin(), s.top_kernels.begin() + kernels_kept,
                    s.top_kernels.end(), by_launches);
  s.top_kernels.resize(kernels_kept);

  auto by_size = [](const BufferLifetime& a, const BufferLifetime& b) {
    if (a.size_bytes != b.size_bytes) return a.size_bytes > b.size_bytes;
    return a.alloc_time_ns != b.alloc_time_ns ? a.alloc_time_ns < b.alloc_time_ns
                                              : a.buffer_id < b.buffer_id;
  };
  const size_t buffers_kept = std::min(top, lifetimes.size());
  std::partial_sort(lifetimes.begin(), lifetimes.begin() + buffers_kept, lifetimes.end(), by_size);
  lifetimes.resize(buffers_kept);
  s.top_buffers = std::move(lifetimes);
  return s;
}

}  // namespace cuswap::trace
