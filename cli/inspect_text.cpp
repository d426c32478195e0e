// `cuswap inspect`: the TraceSummary as text for a person. Exact byte
// counts stand next to the human-readable sizes, so the numbers can be
// grepped and compared with the JSON output.
#include <fmt/format.h>

#include <iterator>

#include "allocator/swap_stats.h"
#include "cli/inspect.h"

namespace cuswap::cli {
namespace {

using Out = std::back_insert_iterator<std::string>;

std::string human_bytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, kUnits[unit]);
}

std::string seconds(uint64_t ns) {
  return fmt::format("{:.6f} s", static_cast<double>(ns) / 1e9);
}

void header(Out out, const trace::TraceSummary& s, std::string_view file) {
  fmt::format_to(out, "{}: {} cuswap trace, format {}.{}, written by cuswap {}\n", file,
                 s.complete ? "complete" : "INCOMPLETE", s.header.format_major,
                 s.header.format_minor,
                 s.header.cuswap_version.empty() ? "?" : s.header.cuswap_version);
  if (!s.complete)
    fmt::format_to(out, "  the recording did not finish: offset {}: {}\n", s.stopped_at,
                   s.stopped_reason);
  fmt::format_to(out, "  configuration: {}\n",
                 s.header.configuration.empty() ? "(defaults)" : s.header.configuration);
  for (const trace::DeviceInfo& d : s.header.devices)
    fmt::format_to(out, "  device {}: {}, {} ({} bytes)\n", d.ordinal, d.name,
                   human_bytes(d.total_bytes), d.total_bytes);
  fmt::format_to(out, "  events: {} from {} thread{} over {}, pid {}\n", s.events, s.threads,
                 s.threads == 1 ? "" : "s", seconds(s.duration_ns), s.header.pid);
}

void overview(Out out, const trace::TraceSummary& s) {
  fmt::format_to(out, "\nbuffers: {} allocated, {} bytes in all ({})\n", s.buffers,
                 s.allocated_bytes, human_bytes(s.allocated_bytes));
  fmt::format_to(out, "peak live: {} bytes ({}) at {}\n", s.peak_bytes, human_bytes(s.peak_bytes),
                 seconds(s.peak_time_ns));
  fmt::format_to(out, "live at end: {} buffers, {} bytes ({})\n", s.live_at_end,
                 s.live_bytes_at_end, human_bytes(s.live_bytes_at_end));
  if (s.unmatched_frees || s.reused_ids)
    fmt::format_to(out, "anomalies: {} frees of buffers not live, {} ids allocated while live\n",
                   s.unmatched_frees, s.reused_ids);
  fmt::format_to(out, "launches: {} of {} kernels ({} with unknown access, {} graph", s.launches,
                 s.kernels, s.launches_unknown_access, s.graph_launches);
  if (s.launches_truncated)
    fmt::format_to(out, ", {} with their buffer list cut", s.launches_truncated);
  fmt::format_to(out, ")\niterations: {}\n", s.iterations);
}

void top_kernels(Out out, const trace::TraceSummary& s) {
  if (s.top_kernels.empty()) return;
  fmt::format_to(out, "\ntop kernels by launches:\n  {:>10}  {}\n", "launches", "kernel");
  for (const trace::KernelLaunches& k : s.top_kernels)
    fmt::format_to(out, "  {:>10}  {}\n", k.launches, k.name.empty() ? "(unnamed)" : k.name);
}

void top_buffers(Out out, const trace::TraceSummary& s) {
  if (s.top_buffers.empty()) return;
  fmt::format_to(out, "\ntop buffers by size:\n  {:>8}  {:>14}  {:>10}  {:>16}  {:>16}  {:>8}\n",
                 "buffer", "bytes", "size", "allocated", "freed", "launches");
  for (const trace::BufferLifetime& b : s.top_buffers)
    fmt::format_to(out, "  {:>8}  {:>14}  {:>10}  {:>16}  {:>16}  {:>8}\n", b.buffer_id,
                   b.size_bytes, human_bytes(b.size_bytes), seconds(b.alloc_time_ns),
                   b.free_time_ns ? seconds(*b.free_time_ns) : "live at end", b.launches);
}

void iterations(Out out, const trace::TraceSummary& s) {
  if (s.per_iteration.empty()) return;
  fmt::format_to(out, "\niterations:\n  {:>9}  {:>16}  {:>16}  {:>8}  {:>6}  {:>6}  {:>14}\n",
                 "iteration", "start", "duration", "launches", "allocs", "frees", "peak bytes");
  for (const trace::IterationSummary& it : s.per_iteration)
    fmt::format_to(out, "  {:>9}  {:>16}  {:>16}  {:>8}  {:>6}  {:>6}  {:>14}\n", it.ordinal,
                   seconds(it.start_ns), seconds(it.duration_ns), it.launches, it.allocs, it.frees,
                   it.peak_bytes);
}

void copies(Out out, const trace::TraceSummary& s) {
  if (s.copies.empty() && !s.sets && s.vmm.empty()) return;
  fmt::format_to(out, "\ncopies:\n  {:<18}  {:>8}  {:>14}\n", "direction", "copies", "bytes");
  for (const trace::CopyTotals& c : s.copies)
    fmt::format_to(out, "  {:<18}  {:>8}  {:>14}  {}\n", trace::to_string(c.direction), c.copies,
                   c.bytes, human_bytes(c.bytes));
  if (s.sets)
    fmt::format_to(out, "  {:<18}  {:>8}  {:>14}  {}\n", "set (memset)", s.sets, s.set_bytes,
                   human_bytes(s.set_bytes));
  if (!s.vmm.empty()) {
    fmt::format_to(out, "vmm calls:");
    for (const auto& [op, n] : s.vmm)
      fmt::format_to(out, " {} {}", trace::to_string(op), n);
    fmt::format_to(out, "\n");
  }
}

void swapping(Out out, const trace::TraceSummary& s) {
  if (s.header.format_major >= 2) {
    if (s.timed_launches)
      fmt::format_to(out, "\nkernel time: {} over {} timed launches of {}\n",
                     seconds(s.kernel_time_ns), s.timed_launches, s.launches);
    else if (s.launches)
      fmt::format_to(out, "\nkernel time: unknown (no launch was timed)\n");
  }
  if (!s.evictions && !s.prefetches && !s.prefetch_waits) return;
  fmt::format_to(out, "\nswapping by cuswap:\n");
  fmt::format_to(out, "  evictions   {:>8}  {:>14} bytes  {}  ({} for a plan; copies took {})\n",
                 s.evictions, s.bytes_to_host, human_bytes(s.bytes_to_host), s.evictions_for_plan,
                 seconds(s.eviction_time_ns));
  fmt::format_to(out,
                 "  prefetches  {:>8}  {:>14} bytes  {}  ({} on demand, {} planned, {} for unseen "
                 "uses; copies took {} on the device)\n",
                 s.prefetches, s.bytes_to_device, human_bytes(s.bytes_to_device),
                 s.prefetches_on_demand, s.prefetches_planned, s.prefetches_unseen_use,
                 seconds(s.prefetch_copy_time_ns));
  fmt::format_to(out, "  uses that waited for a prefetch  {}\n", s.prefetch_waits);
  if (s.cuswap_iterations.empty()) return;
  fmt::format_to(
      out,
      "\ncuswap's iterations:\n  {:>9}  {:>8}  {:>9}  {:>5}  {:>12}  {:>9}  {:>10}  {:>10}  {}\n",
      "iteration", "planned", "on demand", "late", "waited", "evictions", "to host", "to device",
      "plan");
  for (const trace::IterationStats& it : s.cuswap_iterations)
    fmt::format_to(out, "  {:>9}  {:>8}  {:>9}  {:>5}  {:>12}  {:>9}  {:>10}  {:>10}  {}\n",
                   it.iteration, it.prefetches_planned, it.prefetches_on_demand, it.late_prefetches,
                   seconds(it.late_ns), it.evictions, human_bytes(it.bytes_to_host),
                   human_bytes(it.bytes_to_device), it.followed ? "followed" : "-");
}

void end_record(Out out, const trace::TraceSummary& s) {
  if (!s.end) return;
  const trace::CstEnd& e = *s.end;
  fmt::format_to(out, "\nrecorder: {} chunks, {} dropped events, {} buffer waits, closed at {}\n",
                 e.chunks, e.dropped_events, e.buffer_waits, seconds(e.end_time_ns));
  if (e.counters.empty()) return;
  fmt::format_to(out, "counters:\n");
  for (const trace::Counter& c : e.counters) {
    const std::string_view description = swap_stat_description(c.name);
    if (description.empty())
      fmt::format_to(out, "  {:<40}  {}\n", c.name, c.value);
    else
      fmt::format_to(out, "  {:<40}  {:<12}  {}\n", c.name, c.value, description);
  }
}

}  // namespace

std::string render_inspect_text(const trace::TraceSummary& s, std::string_view file) {
  std::string text;
  Out out(text);
  header(out, s, file);
  overview(out, s);
  top_kernels(out, s);
  top_buffers(out, s);
  iterations(out, s);
  copies(out, s);
  swapping(out, s);
  end_record(out, s);
  return text;
}

}  // namespace cuswap::cli
