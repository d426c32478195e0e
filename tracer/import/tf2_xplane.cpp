// TensorFlow 2 profiler XSpace (xplane.pb) into the Trace model.
//
// What is read:
// - MemoryAllocation / MemoryDeallocation events on the host plane, with
//   their stats (allocator_name, addr, requested_bytes, allocation_bytes,
//   bytes_allocated, peak_bytes_in_use, tf_op, region_type, data_type,
//   shape). Allocations and frees pair by (allocator, address) in time
//   order. The maximum bytes_allocated of the device allocator is the
//   reported peak (peak_bytes_in_use covers the allocator's whole life, the
//   warm-up included, and is given in a note).
// - TensorFlow op events on the host plane ("node:Type" TraceMe names) as
//   host ops, and kernels on device planes ("/device:GPU:N", stream lines)
//   as device ops. A tensor's producer is the op named by its tf_op that
//   encloses the allocation (or the latest such op before it). Host events
//   with a correlation_id are the launches of device events; through them
//   device tensors and steps move onto the device's clock (Note [Device
//   time of memory events], device_clock.h). Host-device copies are ops
//   marked as copies.
// - Events with a step_num stat (tf.profiler.experimental.Trace(step_num=))
//   as iterations; without them the whole profile is one iteration.
// Dropped: every other TraceMe (executor, eager and Python events), derived
// device lines (Steps, TensorFlow Ops, XLA Ops, Name Scope), plane stats.
#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "tracer/import/builder.h"
#include "tracer/import/device_clock.h"
#include "tracer/import/proto_importers.h"
#include "tracer/import/proto_wire.h"
#include "tracer/import/tf_common.h"
#include "proto/xplane.pb.h"

namespace cuswap::trace::import {
namespace {

namespace pb = cuswap::import::xprof;

struct Stats {
  std::map<std::string_view, const pb::XStat*> by_name;
  const pb::XPlane* plane = nullptr;
  const std::unordered_map<int64_t, std::string_view>* names = nullptr;

  const pb::XStat* find(std::string_view name) const {
    const auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : it->second;
  }
  std::optional<int64_t> integer(std::string_view name) const {
    const pb::XStat* s = find(name);
    if (!s) return std::nullopt;
    switch (s->value_case()) {
      case pb::XStat::kInt64Value: return s->int64_value();
      case pb::XStat::kUint64Value: return static_cast<int64_t>(s->uint64_value());
      case pb::XStat::kDoubleValue: {
        const double d = s->double_value();
        if (!(d > -9.2e18 && d < 9.2e18)) return std::nullopt;  // NaN or out of range
        return static_cast<int64_t>(d);
      }
      default: return std::nullopt;
    }
  }
  std::string_view text(std::string_view name) const {
    const pb::XStat* s = find(name);
    if (!s) return {};
    if (s->value_case() == pb::XStat::kStrValue) return s->str_value();
    if (s->value_case() == pb::XStat::kRefValue) {
      const auto it = names->find(static_cast<int64_t>(s->ref_value()));
      return it == names->end() ? std::string_view() : it->second;
    }
    return {};
  }
};

// TraceMe names of TensorFlow ops: "node:Type", the node without ':' or
// spaces, Type an identifier.
bool is_op_event(std::string_view name, std::string_view& node, std::string_view& type) {
  const size_t colon = name.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= name.size()) return false;
  for (char c : name.substr(0, colon))
    if (std::isspace(static_cast<unsigned char>(c))) return false;
  type = name.substr(colon + 1);
  const char first = type[0];
  if (!(std::isalpha(static_cast<unsigned char>(first)) || first == '_')) return false;
  for (char c : type)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  node = name.substr(0, colon);
  return true;
}

// Copies between host and device, which run on a copy engine.
bool is_host_device_copy(std::string_view name) {
  return name.starts_with("MemcpyH2D") || name.starts_with("MemcpyD2H") ||
         name.starts_with("MemcpyHtoD") || name.starts_with("MemcpyDtoH") ||
         name.starts_with("MemcpyP2P");
}

struct MemoryEvent {
  int64_t time_ns;
  bool alloc;
  std::string allocator;
  uint64_t addr;
  uint64_t requested, allocation;
  std::optional<int64_t> bytes_allocated, peak_in_use;
  std::string tf_op;
  size_t order;
};

}  // namespace

bool import_xspace(std::string_view bytes, std::string_view name, Trace& out,
                   std::string& error) {
  pb::XSpace space;
  if (!space.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    const WireError wire = find_nested_wire_error(bytes, *pb::XSpace::descriptor());
    error = wire.found ? fmt::format("{}: offset {}: expected {} (in an XSpace message)", name,
                                     wire.offset, wire.expected)
                       : fmt::format("{}: offset 0: expected an XSpace message (protobuf could "
                                     "not decode a nested field)", name);
    return false;
  }
  out.format = TraceFormat::tf2_xplane;
  TraceBuilder builder(out);

  bool any_gpu_plane = false;
  for (const pb::XPlane& plane : space.planes())
    any_gpu_plane |= plane.name().starts_with("/device:GPU:");

  std::vector<MemoryEvent> memory;
  std::unordered_map<std::string, std::vector<uint32_t>> ops_by_node;
  std::vector<int64_t> op_end_ns;
  struct Step {
    int64_t start_ns, end_ns;
  };
  std::vector<Step> steps;
  int64_t first_ns = INT64_MAX, last_ns = INT64_MIN;  // host ops
  int64_t device_first_ns = INT64_MAX, device_last_ns = INT64_MIN;
  DeviceClock clock;

  for (const pb::XPlane& plane : space.planes()) {
    const bool host = plane.name().starts_with("/host:");
    const bool gpu = plane.name().starts_with("/device:GPU:");
    if (!host && !gpu) continue;
    const int ordinal = gpu ? device_ordinal(plane.name()) : 0;
    std::unordered_map<int64_t, std::string_view> stat_names;
    for (const auto& [id, m] : plane.stat_metadata()) stat_names[id] = m.name();
    std::unordered_map<int64_t, std::string_view> event_names;
    for (const auto& [id, m] : plane.event_metadata()) event_names[id] = m.name();

    for (const pb::XLine& line : plane.lines()) {
      if (gpu) {  // kernels on stream lines only, not the derived lines
        const std::string_view ln = line.name();
        if (!ln.starts_with("Stream")) continue;
      }
      const int64_t line_ns = std::clamp<int64_t>(line.timestamp_ns(), 0, INT64_MAX / 4);
      for (const pb::XEvent& event : line.events()) {
        const auto en = event_names.find(event.metadata_id());
        const std::string_view event_name = en == event_names.end() ? std::string_view() : en->second;
        const int64_t offset_ns = event.data_case() == pb::XEvent::kOffsetPs
                                      ? picos_to_ns(static_cast<uint64_t>(std::max<int64_t>(event.offset_ps(), 0)))
                                      : 0;
        const int64_t start_ns = std::min(line_ns + offset_ns, INT64_MAX / 4);
        const int64_t duration_ns = picos_to_ns(static_cast<uint64_t>(std::max<int64_t>(event.duration_ps(), 0)));
        Stats stats;
        stats.names = &stat_names;
        for (const pb::XStat& s : event.stats()) {
          const auto sn = stat_names.find(s.metadata_id());
          if (sn != stat_names.end()) stats.by_name[sn->second] = &s;
        }
        const std::optional<int64_t> correlation = stats.integer("correlation_id");
        if (gpu) {
          Op op;
          op.name = event_name;
          op.type = op.name;
          op.device = ordinal;
          op.stream = static_cast<uint32_t>(line.id());
          op.start_ns = start_ns;
          op.duration_ns = duration_ns;
          op.is_copy = is_host_device_copy(event_name);
          if (correlation)
            clock.add_work(static_cast<uint64_t>(*correlation), ordinal, start_ns,
                           start_ns + duration_ns);
          device_first_ns = std::min(device_first_ns, start_ns);
          device_last_ns = std::max(device_last_ns, start_ns + duration_ns);
          builder.add_op(std::move(op));
          op_end_ns.push_back(start_ns + duration_ns);
          continue;
        }
        // The host side of a kernel launch or copy (CUPTI's API callback).
        if (correlation) {
          clock.add_launch(static_cast<uint64_t>(*correlation), start_ns);
          continue;
        }
        if (event_name == "MemoryAllocation" || event_name == "MemoryDeallocation") {
          MemoryEvent m;
          m.time_ns = start_ns;
          m.alloc = event_name == "MemoryAllocation";
          m.allocator = stats.text("allocator_name");
          m.addr = static_cast<uint64_t>(stats.integer("addr").value_or(0));
          m.requested = static_cast<uint64_t>(std::max<int64_t>(stats.integer("requested_bytes").value_or(0), 0));
          m.allocation = static_cast<uint64_t>(std::max<int64_t>(stats.integer("allocation_bytes").value_or(0), 0));
          m.bytes_allocated = stats.integer("bytes_allocated");
          m.peak_in_use = stats.integer("peak_bytes_in_use");
          m.tf_op = stats.text("tf_op");
          m.order = memory.size();
          memory.push_back(std::move(m));
          continue;
        }
        if (stats.find("step_num")) {
          steps.push_back({start_ns, start_ns + duration_ns});
          continue;
        }
        std::string_view node, type;
        if (!is_op_event(event_name, node, type)) continue;
        Op op;
        op.name = node;
        op.type = type;
        op.device = any_gpu_plane ? -1 : 0;
        op.stream = static_cast<uint32_t>(static_cast<uint64_t>(line.id()));
        op.start_ns = start_ns;
        op.duration_ns = duration_ns;
        first_ns = std::min(first_ns, start_ns);
        last_ns = std::max(last_ns, start_ns + duration_ns);
        const uint32_t index = builder.add_op(std::move(op));
        op_end_ns.push_back(start_ns + duration_ns);
        ops_by_node[std::string(node)].push_back(index);
      }
    }
  }
  // Host lines are walked in file order; op searches need start order.
  for (auto& [node, list] : ops_by_node)
    std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      return builder.op(a).start_ns < builder.op(b).start_ns;
    });

  std::stable_sort(memory.begin(), memory.end(), [](const MemoryEvent& a, const MemoryEvent& b) {
    return a.time_ns < b.time_ns;
  });
  AllocatorSpaces spaces;
  std::map<std::string, std::optional<uint64_t>> peaks;
  std::map<std::string, int64_t> lifetime_peaks;
  std::map<std::pair<std::string, uint64_t>, size_t> live;
  uint64_t unpaired_frees = 0;
  std::map<std::string, uint64_t> before_profile;  // bytes held before the first event
  for (const MemoryEvent& m : memory) {
    if (m.bytes_allocated && !before_profile.count(m.allocator)) {
      // bytes_allocated counts the event itself (BFCAllocator::AddTraceMe).
      const auto size = static_cast<int64_t>(m.allocation ? m.allocation : m.requested);
      before_profile[m.allocator] =
          static_cast<uint64_t>(std::max<int64_t>(*m.bytes_allocated - (m.alloc ? size : -size), 0));
    }
    std::optional<uint64_t>& peak = peaks[m.allocator];
    if (m.bytes_allocated && *m.bytes_allocated >= 0)
      peak = std::max(peak.value_or(0), static_cast<uint64_t>(*m.bytes_allocated));
    if (m.peak_in_use) lifetime_peaks[m.allocator] = std::max(lifetime_peaks[m.allocator], *m.peak_in_use);
    const uint64_t size = m.allocation ? m.allocation : m.requested;
    if (m.alloc) {
      Tensor t;
      t.name = m.tf_op;
      t.size_bytes = size;
      t.requested_bytes = m.requested ? m.requested : size;
      t.allocator = m.allocator;
      t.address = m.addr;
      t.alloc_ns = m.time_ns;
      // The producer: the op named by tf_op running at that time.
      const std::string_view node = std::string_view(m.tf_op).substr(0, m.tf_op.rfind(':'));
      if (const auto it = ops_by_node.find(std::string(node)); it != ops_by_node.end()) {
        for (uint32_t op : it->second) {
          if (builder.op(op).start_ns > m.time_ns) break;
          t.producer = op;
        }
        if (t.producer == kNoOp && !it->second.empty()) t.producer = it->second.front();
      }
      spaces.count(m.allocator, size);
      live[{m.allocator, m.addr}] = out.tensors.size();
      builder.add_tensor(std::move(t));
      continue;
    }
    const auto it = live.find({m.allocator, m.addr});
    if (it != live.end()) {
      out.tensors[it->second].free_ns = m.time_ns;
      live.erase(it);
      continue;
    }
    ++unpaired_frees;
    Tensor t;
    t.name = m.tf_op;
    t.size_bytes = size;
    t.requested_bytes = m.requested ? m.requested : size;
    t.allocator = m.allocator;
    t.address = m.addr;
    t.persistent = true;
    t.free_ns = m.time_ns;
    spaces.count(m.allocator, size);
    builder.add_tensor(std::move(t));
  }
  // Memory held before the profile and not freed in it (weights, optimizer
  // state): what bytes_allocated says was there beyond what the profile's
  // own frees account for, as one persistent tensor per allocator.
  uint64_t never_freed_bytes = 0;
  for (const auto& [allocator, held_bytes] : before_profile) {
    never_freed_bytes += builder.add_held_before(allocator, 0, held_bytes,
                                                 "(allocated before the profile)");
    spaces.count(allocator, 0);
  }
  if (never_freed_bytes)
    builder.note(fmt::format("{} bytes allocated before the profile and not freed in it (by "
                             "bytes_allocated): one persistent tensor per allocator",
                             never_freed_bytes));
  spaces.decide(builder);
  for (Tensor& t : out.tensors) {
    t.space = spaces.space(t.allocator);
    t.device = spaces.device(t.allocator);
  }
  // Device tensors onto the device's clock (Note [Device time of memory
  // events]): the BFC allocator hands memory out when the op is enqueued.
  clock.finish();
  bool moved = false;
  for (Tensor& t : out.tensors)
    if (t.space == MemorySpace::device) moved |= clock.to_device_clock(t);
  // The device with the most kernels: its clock places the steps.
  const int step_device = busiest_device(out.ops);
  const bool step_clock = step_device >= 0 && clock.mapped(step_device);
  if (moved)
    builder.note("device tensors and steps on the device's clock, through the kernels' "
                 "launches (correlation_id)");
  for (const auto& [allocator, peak] : peaks)
    builder.report_allocator(allocator, spaces.space(allocator), spaces.device(allocator), peak);
  if (const auto it = peaks.find(spaces.device_allocator()); it != peaks.end() && it->second)
    out.reported_peak_device_bytes = *it->second;
  for (const auto& [allocator, peak] : lifetime_peaks)
    builder.note(fmt::format("{}: peak_bytes_in_use {} over the allocator's life (warm-up "
                             "included)", allocator, peak));

  if (!steps.empty()) {
    for (const Step& s : steps) {
      if (step_clock)
        builder.add_iteration(clock.alloc_ns(step_device, s.start_ns),
                              clock.free_ns(step_device, s.end_ns));
      else
        builder.add_iteration(s.start_ns, s.end_ns);
    }
  } else if (first_ns <= last_ns || device_first_ns <= device_last_ns) {
    builder.add_iteration(std::min(first_ns, device_first_ns),
                          std::max(last_ns, device_last_ns) + 1);
    builder.note("no step_num events: the whole profile is one iteration");
  }
  if (unpaired_frees)
    builder.note(fmt::format("{} frees of memory allocated before the profile: those tensors "
                             "are persistent until their free", unpaired_frees));
  builder.finish();
  return true;
}

}  // namespace cuswap::trace::import
