// TensorFlow 2 memory_profile.json (the profiler plugin's memory_profile
// tool: protobuf JSON, lowerCamelCase keys, int64 values as strings) into the
// Trace model.
//
// The file is SAMPLED: the converter keeps at most 1000 snapshots per
// allocator (sampledTimelineSnapshots, or in older versions the
// memoryProfileSnapshots chosen by low free memory), so allocations and
// frees are missing and lifetimes are approximate. trace.sampled is set and
// a note says so; the allocator's own peak (profileSummary.peakStats) is
// exact and is the reported peak.
//
// What is read per snapshot: timeOffsetPs, activityMetadata (memoryActivity,
// requestedBytes, allocationBytes, address, tfOpName, stepId). The profile
// has no op events: tfOpName only names the tensors, and the trace has no
// ops. The file is one iteration (stepId numbers executor runs, several per
// training step).
#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "tracer/import/builder.h"
#include "tracer/import/json_importers.h"
#include "tracer/import/tf_common.h"

namespace cuswap::trace::import {
namespace {

bool opt_u64(simdjson::dom::object o, std::string_view key, const JsonPath& p,
             const JsonErrors& errors, uint64_t& out) {
  simdjson::dom::element e;
  if (o.at_key(key).get(e) != simdjson::SUCCESS) return true;
  return errors.uint64(e, p.at(key), out, true);
}

bool opt_i64(simdjson::dom::object o, std::string_view key, const JsonPath& p,
             const JsonErrors& errors, int64_t& out) {
  simdjson::dom::element e;
  if (o.at_key(key).get(e) != simdjson::SUCCESS) return true;
  return errors.int64(e, p.at(key), out, true);
}

bool opt_string(simdjson::dom::object o, std::string_view key, const JsonPath& p,
                const JsonErrors& errors, std::string_view& out) {
  simdjson::dom::element e;
  if (o.at_key(key).get(e) != simdjson::SUCCESS) return true;
  return errors.string(e, p.at(key), out);
}

}  // namespace

bool import_tf2_memory_profile(simdjson::dom::object root, const JsonErrors& errors, Trace& out) {
  out.format = TraceFormat::tf2_memory_profile;
  out.sampled = true;
  TraceBuilder builder(out);
  const JsonPath top;
  const JsonPath ap = top.at("memoryProfilePerAllocator");
  simdjson::dom::element field;
  simdjson::dom::object allocators;
  if (!errors.member(root, "memoryProfilePerAllocator", top, field) ||
      !errors.object(field, ap, allocators))
    return false;

  AllocatorSpaces spaces;
  std::map<std::string, std::optional<uint64_t>> peaks;
  std::map<int64_t, std::pair<int64_t, int64_t>> steps;  // step -> [first, last] time
  uint64_t snapshots_read = 0, unpaired_frees = 0;

  for (auto [allocator_key, per_allocator] : allocators) {
    const std::string allocator(allocator_key);
    const JsonPath pp = ap.at(allocator_key);
    simdjson::dom::object profile;
    if (!errors.object(per_allocator, pp, profile)) return false;

    // The allocator's own peak.
    simdjson::dom::element summary_e;
    if (profile.at_key("profileSummary").get(summary_e) == simdjson::SUCCESS) {
      const JsonPath sp = pp.at("profileSummary");
      simdjson::dom::object summary, peak_stats;
      if (!errors.object(summary_e, sp, summary)) return false;
      uint64_t lifetime = 0, heap = 0, in_use = 0;
      if (!opt_u64(summary, "peakBytesUsageLifetime", sp, errors, lifetime)) return false;
      simdjson::dom::element ps;
      if (summary.at_key("peakStats").get(ps) == simdjson::SUCCESS) {
        if (!errors.object(ps, sp.at("peakStats"), peak_stats) ||
            !opt_u64(peak_stats, "heapAllocatedBytes", sp.at("peakStats"), errors, heap) ||
            !opt_u64(peak_stats, "peakBytesInUse", sp.at("peakStats"), errors, in_use))
          return false;
      }
      peaks[allocator] = heap ? heap : std::max(lifetime, in_use);
    } else {
      peaks[allocator] = std::nullopt;
    }

    // The time-ordered sample when there is one, else the peak snapshots.
    std::string_view list_key = "sampledTimelineSnapshots";
    simdjson::dom::element list_e;
    simdjson::dom::array list;
    if (profile.at_key(list_key).get(list_e) != simdjson::SUCCESS ||
        list_e.get_array().get(list) != simdjson::SUCCESS || list.size() == 0) {
      list_key = "memoryProfileSnapshots";
      if (profile.at_key(list_key).get(list_e) != simdjson::SUCCESS) continue;
    }
    const JsonPath lp = pp.at(list_key);
    if (!errors.array(list_e, lp, list)) return false;

    std::unordered_map<uint64_t, size_t> live;  // address -> tensor index
    size_t i = 0;
    for (simdjson::dom::element snap_e : list) {
      const JsonPath np = lp.at(i++);
      simdjson::dom::object snap, activity;
      int64_t time_ps = 0;
      if (!errors.object(snap_e, np, snap) || !errors.member(snap, "timeOffsetPs", np, field) ||
          !errors.int64(field, np.at("timeOffsetPs"), time_ps, true) ||
          !errors.member(snap, "activityMetadata", np, field) ||
          !errors.object(field, np.at("activityMetadata"), activity))
        return false;
      const JsonPath mp = np.at("activityMetadata");
      std::string_view kind, op_name;
      uint64_t requested = 0, allocated = 0, address = 0;
      int64_t step = 0;
      if (!errors.member(activity, "memoryActivity", mp, field) ||
          !errors.string(field, mp.at("memoryActivity"), kind) ||
          !opt_u64(activity, "requestedBytes", mp, errors, requested) ||
          !opt_u64(activity, "allocationBytes", mp, errors, allocated) ||
          !opt_u64(activity, "address", mp, errors, address) ||
          !opt_i64(activity, "stepId", mp, errors, step) ||
          !opt_string(activity, "tfOpName", mp, errors, op_name))
        return false;
      const int64_t time_ns = time_ps / 1000;
      ++snapshots_read;
      auto& span = steps.try_emplace(step, time_ns, time_ns).first->second;
      span.first = std::min(span.first, time_ns);
      span.second = std::max(span.second, time_ns);
      if (kind == "ALLOCATION") {
        Tensor t;
        t.name = std::string(op_name);
        t.size_bytes = allocated ? allocated : requested;
        t.requested_bytes = requested ? requested : t.size_bytes;
        t.allocator = allocator;
        t.address = address;
        t.alloc_ns = time_ns;
        spaces.count(allocator, t.size_bytes);
        live[address] = out.tensors.size();
        builder.add_tensor(std::move(t));
      } else if (kind == "DEALLOCATION") {
        const auto it = live.find(address);
        if (it != live.end()) {
          out.tensors[it->second].free_ns = time_ns;
          live.erase(it);
        } else {
          ++unpaired_frees;
          Tensor t;
          t.name = std::string(op_name);
          t.size_bytes = allocated ? allocated : requested;
          t.requested_bytes = requested ? requested : t.size_bytes;
          t.allocator = allocator;
          t.address = address;
          t.persistent = true;
          t.free_ns = time_ns;
          builder.add_tensor(std::move(t));
        }
      } else {
        return errors.fail(mp.at("memoryActivity"), "\"ALLOCATION\" or \"DEALLOCATION\"");
      }
    }
    spaces.count(allocator, 0);
  }
  for (const auto& [name, peak] : peaks) spaces.count(name, 0);
  spaces.decide(builder);
  for (Tensor& t : out.tensors) {
    t.space = spaces.space(t.allocator);
    t.device = spaces.device(t.allocator);
  }
  for (const auto& [name, peak] : peaks)
    builder.report_allocator(name, spaces.space(name), spaces.device(name), peak);
  if (const auto it = peaks.find(spaces.device_allocator()); it != peaks.end() && it->second)
    out.reported_peak_device_bytes = *it->second;
  // stepId is the executor's run id, several per training step (one per
  // function call); the file is one profiling session, one iteration.
  if (!steps.empty()) {
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (const auto& [step, span] : steps) {
      first = std::min(first, span.first);
      last = std::max(last, span.second);
    }
    builder.add_iteration(first, last + 1);
  }

  builder.note(fmt::format("sampled: the memory profile keeps at most 1000 snapshots per "
                           "allocator; {} were read, lifetimes are approximate",
                           snapshots_read));
  if (unpaired_frees)
    builder.note(fmt::format("{} frees without their allocation in the sample", unpaired_frees));
  builder.finish();
  return true;
}

}  // namespace cuswap::trace::import
