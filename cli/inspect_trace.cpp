// `cuswap inspect` for the imported formats (TensorFlow, PyTorch): one Trace
// (tracer/trace.h) rendered as text or as one JSON object. `.cst` files keep
// their own, richer rendering (inspect_text.cpp, inspect_json.cpp).
//
// peak_bytes is device memory as the SOURCE accounts it: its own figure
// (reported_peak_device_bytes) where it has one, else the peak of live
// device tensors. Host allocators are listed beside the device ones, never
// added to the peak.
#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "cli/inspect.h"
#include "cli/json_writer.h"

namespace cuswap::cli {
namespace {

struct Figures {
  uint64_t device_tensors = 0, host_tensors = 0;
  uint64_t device_bytes = 0, host_bytes = 0;
  uint64_t persistent = 0, live_at_end = 0;
  trace::LivePeak live_peak;
  uint64_t peak_bytes = 0;
  bool peak_reported = false;
  int64_t duration_ns = 0;
};

Figures figures(const trace::Trace& t) {
  Figures f;
  for (const trace::Tensor& x : t.tensors) {
    if (x.space == trace::MemorySpace::device) {
      ++f.device_tensors;
      f.device_bytes += x.size_bytes;
    } else {
      ++f.host_tensors;
      f.host_bytes += x.size_bytes;
    }
    f.persistent += x.persistent;
    f.live_at_end += !x.free_ns.has_value();
    f.duration_ns = std::max(f.duration_ns, x.free_ns.value_or(x.alloc_ns));
  }
  for (const trace::Op& op : t.ops) f.duration_ns = std::max(f.duration_ns, op.start_ns + op.duration_ns);
  f.live_peak = trace::device_live_peak(t);
  f.peak_reported = t.reported_peak_device_bytes.has_value();
  f.peak_bytes = f.peak_reported ? *t.reported_peak_device_bytes : f.live_peak.bytes;
  return f;
}

std::string_view space_name(trace::MemorySpace s) {
  return s == trace::MemorySpace::device ? "device" : "host";
}

}  // namespace

std::string render_trace_json(const trace::Trace& t, std::string_view file) {
  const Figures f = figures(t);
  JsonWriter j;
  j.begin_object();
  j.field("file", file);
  j.field("format", trace::format_name(t.format));
  j.field("sampled", t.sampled);
  j.field("buffers", static_cast<uint64_t>(t.tensors.size()));
  j.field("device_buffers", f.device_tensors);
  j.field("host_buffers", f.host_tensors);
  j.field("device_allocated_bytes", f.device_bytes);
  j.field("host_allocated_bytes", f.host_bytes);
  j.field("persistent_buffers", f.persistent);
  j.field("live_at_end", f.live_at_end);
  j.field("peak_bytes", f.peak_bytes);
  j.field("peak_source", f.peak_reported ? "reported" : "live tensors");
  j.field("device_live_peak_bytes", f.live_peak.bytes);
  j.field("device_live_peak_time_ns", static_cast<uint64_t>(std::max<int64_t>(f.live_peak.time_ns, 0)));
  j.field("launches", static_cast<uint64_t>(t.ops.size()));
  j.field("iterations", static_cast<uint64_t>(t.iterations.size()));
  j.field("duration_ns", static_cast<uint64_t>(std::max<int64_t>(f.duration_ns, 0)));
  j.key("allocators");
  j.begin_array();
  for (const trace::AllocatorReport& a : t.allocators) {
    j.begin_object();
    j.field("name", a.allocator);
    j.field("space", space_name(a.space));
    j.field("device", a.device);
    j.field("peak_bytes", a.peak_bytes);
    j.end_object();
  }
  j.end_array();
  j.key("notes");
  j.begin_array();
  for (const std::string& n : t.notes) j.value(n);
  j.end_array();
  j.end_object();
  return j.finish();
}

std::string render_trace_text(const trace::Trace& t, std::string_view file) {
  const Figures f = figures(t);
  std::string text;
  auto out = std::back_inserter(text);
  fmt::format_to(out, "{}: {} trace{}\n", file, trace::format_name(t.format),
                 t.sampled ? " (SAMPLED: only part of the events are in the file)" : "");
  fmt::format_to(out, "  ops: {}, iterations: {}, over {:.6f} s\n", t.ops.size(),
                 t.iterations.size(), static_cast<double>(f.duration_ns) / 1e9);
  fmt::format_to(out, "buffers: {} ({} device, {} bytes; {} host, {} bytes)\n", t.tensors.size(),
                 f.device_tensors, f.device_bytes, f.host_tensors, f.host_bytes);
  fmt::format_to(out, "  persistent: {}, live at the end: {}\n", f.persistent, f.live_at_end);
  fmt::format_to(out, "device peak: {} bytes ({})\n", f.peak_bytes,
                 f.peak_reported ? "as the source reports it" : "live device tensors");
  if (f.peak_reported)
    fmt::format_to(out, "  live device tensors peak: {} bytes at {} ns\n", f.live_peak.bytes,
                   f.live_peak.time_ns);
  fmt::format_to(out, "allocators:\n");
  for (const trace::AllocatorReport& a : t.allocators)
    fmt::format_to(out, "  {:<28} {:<6} device {:<3} peak {}\n", a.allocator, space_name(a.space),
                   a.device, a.peak_bytes ? fmt::format("{} bytes", *a.peak_bytes) : "-");
  if (!t.notes.empty()) {
    fmt::format_to(out, "notes:\n");
    for (const std::string& n : t.notes) fmt::format_to(out, "  {}\n", n);
  }
  return text;
}

}  // namespace cuswap::cli
