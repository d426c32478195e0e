// `cuswap inspect --json`: the TraceSummary as one JSON object. Keys are
// snake_case with units in their names; times are nanoseconds since the
// recorder opened, sizes are bytes. Documented in docs/trace-format.md
// ("Inspecting a trace").
#include <fmt/format.h>

#include "cli/inspect.h"
#include "cli/json_writer.h"

namespace cuswap::cli {
namespace {

void header(JsonWriter& j, const trace::TraceSummary& s, std::string_view file) {
  j.field("file", file);
  j.field("format", "cst");
  j.field("format_version", fmt::format("{}.{}", s.header.format_major, s.header.format_minor));
  j.field("cuswap_version", s.header.cuswap_version);
  j.field("configuration", s.header.configuration);
  j.field("pid", s.header.pid);
  j.field("start_unix_ns", s.header.start_unix_ns);
  j.key("devices");
  j.begin_array();
  for (const trace::DeviceInfo& d : s.header.devices) {
    j.begin_object();
    j.field("ordinal", d.ordinal);
    j.field("name", d.name);
    j.field("total_bytes", d.total_bytes);
    j.end_object();
  }
  j.end_array();
  j.field("complete", s.complete);
  if (!s.complete) {
    j.field("stopped_at", s.stopped_at);
    j.field("stopped_reason", s.stopped_reason);
  }
}

void buffers(JsonWriter& j, const trace::TraceSummary& s) {
  j.field("buffers", s.buffers);
  j.field("allocated_bytes", s.allocated_bytes);
  j.field("peak_bytes", s.peak_bytes);
  j.field("peak_time_ns", s.peak_time_ns);
  j.key("live_at_end");
  j.begin_object();
  j.field("buffers", s.live_at_end);
  j.field("bytes", s.live_bytes_at_end);
  j.end_object();
  j.field("unmatched_frees", s.unmatched_frees);
  j.field("reused_ids", s.reused_ids);
  j.key("top_buffers");
  j.begin_array();
  for (const trace::BufferLifetime& b : s.top_buffers) {
    j.begin_object();
    j.field("id", b.buffer_id);
    j.field("size_bytes", b.size_bytes);
    j.field("device", b.device);
    j.field("alloc_time_ns", b.alloc_time_ns);
    j.field("free_time_ns", b.free_time_ns);
    j.field("live_at_end", !b.free_time_ns.has_value());
    j.field("launches", b.launches);
    j.end_object();
  }
  j.end_array();
}

void launches(JsonWriter& j, const trace::TraceSummary& s) {
  j.field("launches", s.launches);
  j.field("kernels", s.kernels);
  j.field("launches_unknown_access", s.launches_unknown_access);
  j.field("graph_launches", s.graph_launches);
  j.field("launches_truncated", s.launches_truncated);
  j.key("top_kernels");
  j.begin_array();
  for (const trace::KernelLaunches& k : s.top_kernels) {
    j.begin_object();
    j.field("id", uint64_t{k.kernel_id});
    j.field("name", k.name);
    j.field("launches", k.launches);
    j.end_object();
  }
  j.end_array();
  j.field("iterations", s.iterations);
  j.key("per_iteration");
  j.begin_array();
  for (const trace::IterationSummary& it : s.per_iteration) {
    j.begin_object();
    j.field("ordinal", it.ordinal);
    j.field("start_ns", it.start_ns);
    j.field("duration_ns", it.duration_ns);
    j.field("launches", it.launches);
    j.field("allocs", it.allocs);
    j.field("frees", it.frees);
    j.field("peak_bytes", it.peak_bytes);
    j.end_object();
  }
  j.end_array();
}

void copies(JsonWriter& j, const trace::TraceSummary& s) {
  j.key("copies");
  j.begin_object();
  for (const trace::CopyTotals& c : s.copies) {
    j.key(trace::to_string(c.direction));
    j.begin_object();
    j.field("copies", c.copies);
    j.field("bytes", c.bytes);
    j.end_object();
  }
  j.end_object();
  j.key("sets");
  j.begin_object();
  j.field("count", s.sets);
  j.field("bytes", s.set_bytes);
  j.end_object();
  j.key("vmm");
  j.begin_object();
  for (const auto& [op, n] : s.vmm)
    j.field(trace::to_string(op), n);
  j.end_object();
}

// Format 2.x: device timings and cuswap's own copies (zeros for 1.x).
void swapping(JsonWriter& j, const trace::TraceSummary& s) {
  j.field("timed_launches", s.timed_launches);
  j.field("kernel_time_ns", s.kernel_time_ns);
  j.field("evictions", s.evictions);
  j.field("evictions_for_plan", s.evictions_for_plan);
  j.field("bytes_to_host", s.bytes_to_host);
  j.field("eviction_time_ns", s.eviction_time_ns);
  j.field("prefetches", s.prefetches);
  j.field("prefetches_on_demand", s.prefetches_on_demand);
  j.field("prefetches_planned", s.prefetches_planned);
  j.field("prefetches_unseen_use", s.prefetches_unseen_use);
  j.field("bytes_to_device", s.bytes_to_device);
  j.field("prefetch_copy_time_ns", s.prefetch_copy_time_ns);
  j.field("prefetch_waits", s.prefetch_waits);
  j.key("cuswap_iterations");
  j.begin_array();
  for (const trace::IterationStats& it : s.cuswap_iterations) {
    j.begin_object();
    j.field("iteration", it.iteration);
    j.field("prefetches_planned", it.prefetches_planned);
    j.field("prefetches_on_demand", it.prefetches_on_demand);
    j.field("late_prefetches", it.late_prefetches);
    j.field("late_ns", it.late_ns);
    j.field("evictions", it.evictions);
    j.field("bytes_to_host", it.bytes_to_host);
    j.field("bytes_to_device", it.bytes_to_device);
    j.field("followed", it.followed);
    j.end_object();
  }
  j.end_array();
}

void end_record(JsonWriter& j, const trace::TraceSummary& s) {
  j.key("end");
  if (!s.end) {
    j.null();
    return;
  }
  const trace::CstEnd& e = *s.end;
  j.begin_object();
  j.field("end_time_ns", e.end_time_ns);
  j.field("chunks", e.chunks);
  j.field("events", e.events);
  j.field("dropped_events", e.dropped_events);
  j.field("buffer_waits", e.buffer_waits);
  j.key("counters");
  j.begin_object();
  for (const trace::Counter& c : e.counters)
    j.field(c.name, c.value);
  j.end_object();
  j.end_object();
}

}  // namespace

std::string render_inspect_json(const trace::TraceSummary& s, std::string_view file) {
  JsonWriter j;
  j.begin_object();
  header(j, s, file);
  j.field("events", s.events);
  j.field("threads", s.threads);
  j.field("duration_ns", s.duration_ns);
  buffers(j, s);
  launches(j, s);
  copies(j, s);
  swapping(j, s);
  end_record(j, s);
  j.end_object();
  return j.finish();
}

}  // namespace cuswap::cli
