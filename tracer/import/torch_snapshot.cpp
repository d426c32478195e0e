// PyTorch CUDA memory snapshot (torch.cuda.memory._snapshot(), converted
// from pickle to JSON) into the Trace model.
//
// What is read: device_traces[device] entries (action alloc,
// free_requested, free_completed; addr, size, time_us where the build
// records it, frames[0].name as the tensor's name) and segments[].blocks
// still active at snapshot time. An allocation ends at its free_completed
// (the memory is reusable only then). Blocks active at the snapshot that no
// trace entry allocated were allocated before the history began: they are
// persistent tensors. Frees without an allocation are tensors allocated
// before the history, persistent until their free.
//
// Dropped: segment_* actions (the caching allocator's reservations), oom and
// snapshot markers, streams, all frames but the first. The snapshot names no
// ops, so the trace has none; without time_us the entry index stands for the
// time (1 µs apart) and a note says so. The reported peak is the largest
// running sum of allocations less completed frees in the history.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "tracer/import/builder.h"
#include "tracer/import/json_importers.h"

namespace cuswap::trace::import {
namespace {

// What the snapshot says, across its devices.
struct SnapshotRead {
  SnapshotRead(const JsonErrors& json_errors, TraceBuilder& trace_builder, Trace& trace)
      : errors(json_errors), builder(trace_builder), out(trace) {}

  const JsonErrors& errors;
  TraceBuilder& builder;
  Trace& out;
  bool synthetic_times = false;
  uint64_t unpaired_frees = 0, awaiting = 0, before_history = 0;
  std::map<int, std::set<uint64_t>> allocated_in_trace;  // device -> addresses live at the end
  std::set<int> devices;
  // The snapshot's own accounting: the running sum of allocations and
  // completed frees in its history.
  int64_t reported_peak = 0;
  std::map<int, int64_t> device_peaks;
};

// One device's history as it is replayed.
struct DeviceHistory {
  explicit DeviceHistory(int ordinal) : device(ordinal) {}

  int device;
  std::unordered_map<uint64_t, size_t> live;  // addr -> tensor index
  int64_t live_bytes = 0;
  std::unordered_map<uint64_t, size_t> requested;  // frees requested, not yet completed
};

// One trace entry's fields; addr and size only for allocations and frees.
struct Entry {
  simdjson::dom::object object;
  std::string_view action;
  uint64_t addr = 0, size = 0;
  int64_t time_ns = 0;
};

// The entry's name is its first frame's, where it has one.
void name_from_frames(simdjson::dom::object entry, Tensor& t) {
  simdjson::dom::element frames, first, name;
  simdjson::dom::array frame_list;
  std::string_view frame_name;
  if (entry.at_key("frames").get(frames) == simdjson::SUCCESS &&
      frames.get_array().get(frame_list) == simdjson::SUCCESS &&
      frame_list.at(0).get(first) == simdjson::SUCCESS && find_member(first, "name", name) &&
      name.get_string().get(frame_name) == simdjson::SUCCESS)
    t.name = frame_name;
}

// Without time_us the entry's index stands for its time, 1 us apart.
bool read_entry(simdjson::dom::element entry_e, const JsonPath& ep, size_t index, Entry& e,
                SnapshotRead& r) {
  simdjson::dom::element field;
  if (!r.errors.object(entry_e, ep, e.object) || !r.errors.member(e.object, "action", ep, field) ||
      !r.errors.string(field, ep.at("action"), e.action))
    return false;
  if (e.action == "alloc" || e.action == "free_completed" || e.action == "free_requested") {
    if (!r.errors.member(e.object, "addr", ep, field) ||
        !r.errors.uint64(field, ep.at("addr"), e.addr) ||
        !r.errors.member(e.object, "size", ep, field) ||
        !r.errors.uint64(field, ep.at("size"), e.size))
      return false;
  }
  if (e.object.at_key("time_us").get(field) == simdjson::SUCCESS) {
    if (!trace_time_ns(field, ep.at("time_us"), r.errors, e.time_ns)) return false;
  } else {
    r.synthetic_times = true;
    e.time_ns = micros_to_ns(static_cast<int64_t>(index));
  }
  return true;
}

// The block an entry names, on its device.
Tensor entry_tensor(const Entry& e, int device) {
  Tensor t;
  t.size_bytes = e.size;
  t.requested_bytes = e.size;
  t.allocator = fmt::format("cuda:{}", device);
  t.device = device;
  t.address = e.addr;
  return t;
}

void add_allocation(const Entry& e, DeviceHistory& h, SnapshotRead& r) {
  Tensor t = entry_tensor(e, h.device);
  t.alloc_ns = e.time_ns;
  name_from_frames(e.object, t);
  h.live[e.addr] = r.out.tensors.size();
  r.builder.add_tensor(std::move(t));
  h.live_bytes += static_cast<int64_t>(std::min<uint64_t>(e.size, INT64_MAX / 4));
  r.reported_peak = std::max(r.reported_peak, h.live_bytes);
  int64_t& device_peak = r.device_peaks[h.device];
  device_peak = std::max(device_peak, h.live_bytes);
}

// A completed free ends the live allocation at its address; without one,
// the memory was allocated before the history, persistent until now.
void complete_free(const Entry& e, DeviceHistory& h, SnapshotRead& r) {
  h.requested.erase(e.addr);
  h.live_bytes -= static_cast<int64_t>(std::min<uint64_t>(e.size, INT64_MAX / 4));
  const auto it = h.live.find(e.addr);
  if (it != h.live.end()) {
    r.out.tensors[it->second].free_ns = e.time_ns;
    h.live.erase(it);
    return;
  }
  ++r.unpaired_frees;
  Tensor t = entry_tensor(e, h.device);
  t.persistent = true;
  t.free_ns = e.time_ns;
  r.builder.add_tensor(std::move(t));
}

// One device's trace entries, replayed in order.
bool read_device(simdjson::dom::element per_device, const JsonPath& dp, int device,
                 SnapshotRead& r) {
  simdjson::dom::array entries;
  if (!r.errors.array(per_device, dp, entries)) return false;
  DeviceHistory h(device);
  size_t i = 0;
  for (simdjson::dom::element entry_e : entries) {
    Entry e;
    if (!read_entry(entry_e, dp.at(i), i, e, r)) return false;
    ++i;
    if (e.action == "alloc")
      add_allocation(e, h, r);
    else if (e.action == "free_requested")
      h.requested[e.addr] = 1;
    else if (e.action == "free_completed")
      complete_free(e, h, r);
  }
  r.awaiting += h.requested.size();
  for (const auto& [addr, index] : h.live) r.allocated_in_trace[device].insert(addr);
  r.devices.insert(device);
  return true;
}

// One block of a segment: an active block no trace entry allocated was
// allocated before the history began, a persistent tensor.
bool read_block(simdjson::dom::element block_e, const JsonPath& bp, int64_t device,
                SnapshotRead& r) {
  simdjson::dom::element field;
  simdjson::dom::object block;
  std::string_view state;
  uint64_t addr = 0, size = 0, requested = 0;
  if (!r.errors.object(block_e, bp, block) || !r.errors.member(block, "state", bp, field) ||
      !r.errors.string(field, bp.at("state"), state) ||
      !r.errors.member(block, "size", bp, field) || !r.errors.uint64(field, bp.at("size"), size))
    return false;
  if (block.at_key("address").get(field) == simdjson::SUCCESS &&
      !r.errors.uint64(field, bp.at("address"), addr))
    return false;
  if (block.at_key("requested_size").get(field) == simdjson::SUCCESS &&
      !r.errors.uint64(field, bp.at("requested_size"), requested))
    return false;
  if (!state.starts_with("active")) return true;
  const int d = static_cast<int>(device);
  r.devices.insert(d);
  if (r.allocated_in_trace[d].count(addr)) return true;
  ++r.before_history;
  Tensor t;
  t.size_bytes = size;
  t.requested_bytes = requested ? requested : size;
  t.allocator = fmt::format("cuda:{}", d);
  t.device = d;
  t.address = addr;
  t.persistent = true;
  r.builder.add_tensor(std::move(t));
  return true;
}

bool read_segment(simdjson::dom::element seg_e, const JsonPath& gp, SnapshotRead& r) {
  simdjson::dom::element field;
  simdjson::dom::object seg;
  simdjson::dom::array blocks;
  int64_t device = 0;
  if (!r.errors.object(seg_e, gp, seg)) return false;
  if (seg.at_key("device").get(field) == simdjson::SUCCESS &&
      !r.errors.int64(field, gp.at("device"), device))
    return false;
  if (device < 0 || device > 65535) return r.errors.fail(gp.at("device"), "a device ordinal");
  if (!r.errors.member(seg, "blocks", gp, field) || !r.errors.array(field, gp.at("blocks"), blocks))
    return false;
  size_t b = 0;
  const JsonPath blocks_path = gp.at("blocks");
  for (simdjson::dom::element block_e : blocks)
    if (!read_block(block_e, blocks_path.at(b++), device, r)) return false;
  return true;
}

// The allocators (one per device), the reported peak and the notes.
void report(SnapshotRead& r, bool have_traces) {
  for (int d : r.devices) {
    const auto peak = r.device_peaks.find(d);
    r.builder.report_allocator(fmt::format("cuda:{}", d), MemorySpace::device, d,
                               peak == r.device_peaks.end()
                                   ? std::nullopt
                                   : std::optional<uint64_t>(static_cast<uint64_t>(peak->second)));
  }
  if (have_traces) r.out.reported_peak_device_bytes = static_cast<uint64_t>(r.reported_peak);
  r.builder.note("a memory snapshot names no ops: the trace has tensors only");
  if (r.synthetic_times)
    r.builder.note("entries without time_us: each entry is placed 1 us after the one before");
  if (r.before_history)
    r.builder.note(fmt::format("{} blocks active at the snapshot were allocated before the "
                               "history began (persistent)",
                               r.before_history));
  if (r.unpaired_frees)
    r.builder.note(
        fmt::format("{} frees of memory allocated before the history", r.unpaired_frees));
  if (r.awaiting)
    r.builder.note(
        fmt::format("{} frees requested but not completed by the snapshot", r.awaiting));
}

}  // namespace

bool import_torch_snapshot(simdjson::dom::object root, const JsonErrors& errors, Trace& out) {
  out.format = TraceFormat::torch_snapshot;
  TraceBuilder builder(out);
  SnapshotRead read(errors, builder, out);
  const JsonPath top;
  simdjson::dom::element field;

  simdjson::dom::array traces;
  const bool have_traces = root.at_key("device_traces").get(field) == simdjson::SUCCESS;
  if (have_traces) {
    const JsonPath tp = top.at("device_traces");
    if (!errors.array(field, tp, traces)) return false;
    int device = 0;
    for (simdjson::dom::element per_device : traces) {
      if (!read_device(per_device, tp.at(static_cast<size_t>(device)), device, read)) return false;
      ++device;
    }
  }

  if (root.at_key("segments").get(field) == simdjson::SUCCESS) {
    const JsonPath sp = top.at("segments");
    simdjson::dom::array segments;
    if (!errors.array(field, sp, segments)) return false;
    size_t s = 0;
    for (simdjson::dom::element seg_e : segments)
      if (!read_segment(seg_e, sp.at(s++), read)) return false;
  }

  report(read, have_traces);
  builder.finish();
  return true;
}

}  // namespace cuswap::trace::import
