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

bool import_torch_snapshot(simdjson::dom::object root, const JsonErrors& errors, Trace& out) {
  out.format = TraceFormat::torch_snapshot;
  TraceBuilder builder(out);
  const JsonPath top;
  simdjson::dom::element field;
  bool synthetic_times = false;
  uint64_t unpaired_frees = 0, awaiting = 0;
  std::map<int, std::set<uint64_t>> allocated_in_trace;  // device -> addresses live at the end
  std::set<int> devices;
  // The snapshot's own accounting: the running sum of allocations and
  // completed frees in its history.
  int64_t reported_peak = 0;
  std::map<int, int64_t> device_peaks;

  simdjson::dom::array traces;
  const bool have_traces = root.at_key("device_traces").get(field) == simdjson::SUCCESS;
  if (have_traces) {
    const JsonPath tp = top.at("device_traces");
    if (!errors.array(field, tp, traces)) return false;
    int device = 0;
    for (simdjson::dom::element per_device : traces) {
      const JsonPath dp = tp.at(static_cast<size_t>(device));
      simdjson::dom::array entries;
      if (!errors.array(per_device, dp, entries)) return false;
      std::unordered_map<uint64_t, size_t> live;  // addr -> tensor index
      int64_t live_bytes = 0;
      std::unordered_map<uint64_t, size_t> requested;
      size_t i = 0;
      for (simdjson::dom::element entry_e : entries) {
        const JsonPath ep = dp.at(i);
        simdjson::dom::object entry;
        std::string_view action;
        uint64_t addr = 0, size = 0;
        if (!errors.object(entry_e, ep, entry) || !errors.member(entry, "action", ep, field) ||
            !errors.string(field, ep.at("action"), action))
          return false;
        const bool is_alloc = action == "alloc";
        const bool is_free = action == "free_completed" || action == "free_requested";
        if (is_alloc || is_free) {
          if (!errors.member(entry, "addr", ep, field) || !errors.uint64(field, ep.at("addr"), addr) ||
              !errors.member(entry, "size", ep, field) || !errors.uint64(field, ep.at("size"), size))
            return false;
        }
        int64_t time_ns = 0;
        if (entry.at_key("time_us").get(field) == simdjson::SUCCESS) {
          if (!trace_time_ns(field, ep.at("time_us"), errors, time_ns)) return false;
        } else {
          synthetic_times = true;
          time_ns = micros_to_ns(static_cast<int64_t>(i));
        }
        ++i;
        if (is_alloc) {
          Tensor t;
          t.size_bytes = size;
          t.requested_bytes = size;
          t.allocator = fmt::format("cuda:{}", device);
          t.device = device;
          t.address = addr;
          t.alloc_ns = time_ns;
          simdjson::dom::element frames, first, name;
          simdjson::dom::array frame_list;
          std::string_view frame_name;
          if (entry.at_key("frames").get(frames) == simdjson::SUCCESS &&
              frames.get_array().get(frame_list) == simdjson::SUCCESS &&
              frame_list.at(0).get(first) == simdjson::SUCCESS && find_member(first, "name", name) &&
              name.get_string().get(frame_name) == simdjson::SUCCESS)
            t.name = frame_name;
          live[addr] = out.tensors.size();
          builder.add_tensor(std::move(t));
          live_bytes += static_cast<int64_t>(std::min<uint64_t>(size, INT64_MAX / 4));
          reported_peak = std::max(reported_peak, live_bytes);
          int64_t& device_peak = device_peaks[device];
          device_peak = std::max(device_peak, live_bytes);
        } else if (action == "free_requested") {
          requested[addr] = 1;
        } else if (action == "free_completed") {
          requested.erase(addr);
          live_bytes -= static_cast<int64_t>(std::min<uint64_t>(size, INT64_MAX / 4));
          const auto it = live.find(addr);
          if (it != live.end()) {
            out.tensors[it->second].free_ns = time_ns;
            live.erase(it);
          } else {
            ++unpaired_frees;
            Tensor t;
            t.size_bytes = size;
            t.requested_bytes = size;
            t.allocator = fmt::format("cuda:{}", device);
            t.device = device;
            t.address = addr;
            t.persistent = true;
            t.free_ns = time_ns;
            builder.add_tensor(std::move(t));
          }
        }
      }
      awaiting += requested.size();
      for (const auto& [addr, index] : live) allocated_in_trace[device].insert(addr);
      devices.insert(device);
      ++device;
    }
  }

  uint64_t before_history = 0;
  if (root.at_key("segments").get(field) == simdjson::SUCCESS) {
    const JsonPath sp = top.at("segments");
    simdjson::dom::array segments;
    if (!errors.array(field, sp, segments)) return false;
    size_t s = 0;
    for (simdjson::dom::element seg_e : segments) {
      const JsonPath gp = sp.at(s++);
      simdjson::dom::object seg;
      simdjson::dom::array blocks;
      int64_t device = 0;
      if (!errors.object(seg_e, gp, seg)) return false;
      if (seg.at_key("device").get(field) == simdjson::SUCCESS &&
          !errors.int64(field, gp.at("device"), device))
        return false;
      if (device < 0 || device > 65535) return errors.fail(gp.at("device"), "a device ordinal");
      if (!errors.member(seg, "blocks", gp, field) || !errors.array(field, gp.at("blocks"), blocks))
        return false;
      size_t b = 0;
      const JsonPath blocks_path = gp.at("blocks");
      for (simdjson::dom::element block_e : blocks) {
        const JsonPath bp = blocks_path.at(b++);
        simdjson::dom::object block;
        std::string_view state;
        uint64_t addr = 0, size = 0, requested = 0;
        if (!errors.object(block_e, bp, block) || !errors.member(block, "state", bp, field) ||
            !errors.string(field, bp.at("state"), state) ||
            !errors.member(block, "size", bp, field) || !errors.uint64(field, bp.at("size"), size))
          return false;
        if (block.at_key("address").get(field) == simdjson::SUCCESS &&
            !errors.uint64(field, bp.at("address"), addr))
          return false;
        if (block.at_key("requested_size").get(field) == simdjson::SUCCESS &&
            !errors.uint64(field, bp.at("requested_size"), requested))
          return false;
        if (!state.starts_with("active")) continue;
        const int d = static_cast<int>(device);
        devices.insert(d);
        if (allocated_in_trace[d].count(addr)) continue;
        ++before_history;
        Tensor t;
        t.size_bytes = size;
        t.requested_bytes = requested ? requested : size;
        t.allocator = fmt::format("cuda:{}", d);
        t.device = d;
        t.address = addr;
        t.persistent = true;
        builder.add_tensor(std::move(t));
      }
    }
  }

  for (int d : devices) {
    const auto peak = device_peaks.find(d);
    builder.report_allocator(fmt::format("cuda:{}", d), MemorySpace::device, d,
                             peak == device_peaks.end()
                                 ? std::nullopt
                                 : std::optional<uint64_t>(static_cast<uint64_t>(peak->second)));
  }
  if (have_traces) out.reported_peak_device_bytes = static_cast<uint64_t>(reported_peak);
  builder.note("a memory snapshot names no ops: the trace has tensors only");
  if (synthetic_times)
    builder.note("entries without time_us: each entry is placed 1 us after the one before");
  if (before_history)
    builder.note(fmt::format("{} blocks active at the snapshot were allocated before the "
                             "history began (persistent)", before_history));
  if (unpaired_frees)
    builder.note(fmt::format("{} frees of memory allocated before the history", unpaired_frees));
  if (awaiting)
    builder.note(fmt::format("{} frees requested but not completed by the snapshot", awaiting));
  builder.finish();
  return true;
}

}  // namespace cuswap::trace::import
