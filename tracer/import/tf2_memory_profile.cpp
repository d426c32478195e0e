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

// The import's state across allocators.
struct ProfileRead {
  ProfileRead(const JsonErrors& json_errors, TraceBuilder& trace_builder, Trace& trace)
      : errors(json_errors), builder(trace_builder), out(trace) {}

  const JsonErrors& errors;
  TraceBuilder& builder;
  Trace& out;
  AllocatorSpaces spaces;
  std::map<std::string, std::optional<uint64_t>> peaks;
  std::map<int64_t, std::pair<int64_t, int64_t>> steps;  // step -> [first, last] time
  uint64_t snapshots_read = 0, unpaired_frees = 0;
};

// The allocator's own peak (profileSummary), none where it has no summary.
bool read_peak(simdjson::dom::object profile, const JsonPath& pp, const JsonErrors& errors,
               std::optional<uint64_t>& peak) {
  simdjson::dom::element summary_e;
  if (profile.at_key("profileSummary").get(summary_e) != simdjson::SUCCESS) {
    peak = std::nullopt;
    return true;
  }
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
  peak = heap ? heap : std::max(lifetime, in_use);
  return true;
}

// One snapshot's memory activity, as a tensor's start or end.
struct Activity {
  std::string_view kind, op_name;
  uint64_t requested = 0, allocated = 0, address = 0;
  int64_t step = 0;
  int64_t time_ns = 0;
};

bool read_activity(simdjson::dom::element snap_e, const JsonPath& np, const JsonErrors& errors,
                   Activity& a) {
  simdjson::dom::element field;
  simdjson::dom::object snap, activity;
  int64_t time_ps = 0;
  if (!errors.object(snap_e, np, snap) || !errors.member(snap, "timeOffsetPs", np, field) ||
      !errors.int64(field, np.at("timeOffsetPs"), time_ps, true) ||
      !errors.member(snap, "activityMetadata", np, field) ||
      !errors.object(field, np.at("activityMetadata"), activity))
    return false;
  const JsonPath mp = np.at("activityMetadata");
  if (!errors.member(activity, "memoryActivity", mp, field) ||
      !errors.string(field, mp.at("memoryActivity"), a.kind) ||
      !opt_u64(activity, "requestedBytes", mp, errors, a.requested) ||
      !opt_u64(activity, "allocationBytes", mp, errors, a.allocated) ||
      !opt_u64(activity, "address", mp, errors, a.address) ||
      !opt_i64(activity, "stepId", mp, errors, a.step) ||
      !opt_string(activity, "tfOpName", mp, errors, a.op_name))
    return false;
  a.time_ns = time_ps / 1000;
  return true;
}

// The tensor a snapshot starts or ends.
Tensor snapshot_tensor(const Activity& a, const std::string& allocator) {
  Tensor t;
  t.name = std::string(a.op_name);
  t.size_bytes = a.allocated ? a.allocated : a.requested;
  t.requested_bytes = a.requested ? a.requested : t.size_bytes;
  t.allocator = allocator;
  t.address = a.address;
  return t;
}

// One snapshot: an allocation starts a tensor; a deallocation ends the live
// one at its address, or, where the sample lacks its allocation, is a
// persistent tensor until then.
bool read_snapshot(simdjson::dom::element snap_e, const JsonPath& np, const std::string& allocator,
                   std::unordered_map<uint64_t, size_t>& live, ProfileRead& r) {
  Activity a;
  if (!read_activity(snap_e, np, r.errors, a)) return false;
  ++r.snapshots_read;
  auto& span = r.steps.try_emplace(a.step, a.time_ns, a.time_ns).first->second;
  span.first = std::min(span.first, a.time_ns);
  span.second = std::max(span.second, a.time_ns);
  if (a.kind == "ALLOCATION") {
    Tensor t = snapshot_tensor(a, allocator);
    t.alloc_ns = a.time_ns;
    r.spaces.count(allocator, t.size_bytes);
    live[a.address] = r.out.tensors.size();
    r.builder.add_tensor(std::move(t));
  } else if (a.kind == "DEALLOCATION") {
    const auto it = live.find(a.address);
    if (it != live.end()) {
      r.out.tensors[it->second].free_ns = a.time_ns;
      live.erase(it);
    } else {
      ++r.unpaired_frees;
      Tensor t = snapshot_tensor(a, allocator);
      t.persistent = true;
      t.free_ns = a.time_ns;
      r.builder.add_tensor(std::move(t));
    }
  } else {
    const JsonPath mp = np.at("activityMetadata");
    return r.errors.fail(mp.at("memoryActivity"), "\"ALLOCATION\" or \"DEALLOCATION\"");
  }
  return true;
}

// One allocator: its peak, then its snapshots, the time-ordered sample when
// there is one, else the peak snapshots.
bool read_allocator(std::string_view allocator_key, simdjson::dom::element per_allocator,
                    const JsonPath& ap, ProfileRead& r) {
  const std::string allocator(allocator_key);
  const JsonPath pp = ap.at(allocator_key);
  simdjson::dom::object profile;
  if (!r.errors.object(per_allocator, pp, profile)) return false;
  if (!read_peak(profile, pp, r.errors, r.peaks[allocator])) return false;

  std::string_view list_key = "sampledTimelineSnapshots";
  simdjson::dom::element list_e;
  simdjson::dom::array list;
  if (profile.at_key(list_key).get(list_e) != simdjson::SUCCESS ||
      list_e.get_array().get(list) != simdjson::SUCCESS || list.size() == 0) {
    list_key = "memoryProfileSnapshots";
    if (profile.at_key(list_key).get(list_e) != simdjson::SUCCESS) return true;
  }
  const JsonPath lp = pp.at(list_key);
  if (!r.errors.array(list_e, lp, list)) return false;

  std::unordered_map<uint64_t, size_t> live;  // address -> tensor index
  size_t i = 0;
  for (simdjson::dom::element snap_e : list)
    if (!read_snapshot(snap_e, lp.at(i++), allocator, live, r)) return false;
  r.spaces.count(allocator, 0);
  return true;
}

// Spaces, the allocators' peaks, the one iteration and the notes.
void finish_profile(ProfileRead& r) {
  for (const auto& [name, peak] : r.peaks) r.spaces.count(name, 0);
  r.spaces.decide(r.builder);
  for (Tensor& t : r.out.tensors) {
    t.space = r.spaces.space(t.allocator);
    t.device = r.spaces.device(t.allocator);
  }
  for (const auto& [name, peak] : r.peaks)
    r.builder.report_allocator(name, r.spaces.space(name), r.spaces.device(name), peak);
  if (const auto it = r.peaks.find(r.spaces.device_allocator()); it != r.peaks.end() && it->second)
    r.out.reported_peak_device_bytes = *it->second;
  // stepId is the executor's run id, several per training step (one per
  // function call); the file is one profiling session, one iteration.
  if (!r.steps.empty()) {
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (const auto& [step, span] : r.steps) {
      first = std::min(first, span.first);
      last = std::max(last, span.second);
    }
    r.builder.add_iteration(first, last + 1);
  }

  r.builder.note(fmt::format("sampled: the memory profile keeps at most 1000 snapshots per "
                             "allocator; {} were read, lifetimes are approximate",
                             r.snapshots_read));
  if (r.unpaired_frees)
    r.builder.note(
        fmt::format("{} frees without their allocation in the sample", r.unpaired_frees));
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

  ProfileRead read(errors, builder, out);
  for (auto [allocator_key, per_allocator] : allocators)
    if (!read_allocator(allocator_key, per_allocator, ap, read)) return false;
  finish_profile(read);
  builder.finish();
  return true;
}

}  // namespace cuswap::trace::import
