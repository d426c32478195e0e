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

struct Step {
  int64_t start_ns, end_ns;
};

// The names a plane's events and stats refer to by id.
struct PlaneNames {
  std::unordered_map<int64_t, std::string_view> stats;
  std::unordered_map<int64_t, std::string_view> events;
};

// What the planes say, read in one walk over their lines.
struct XSpaceRead {
  bool any_gpu_plane = false;
  std::vector<MemoryEvent> memory;
  std::unordered_map<std::string, std::vector<uint32_t>> ops_by_node;  // host ops
  std::vector<int64_t> op_end_ns;                                      // by op index
  std::vector<Step> steps;
  int64_t first_ns = INT64_MAX, last_ns = INT64_MIN;  // host ops
  int64_t device_first_ns = INT64_MAX, device_last_ns = INT64_MIN;
  DeviceClock clock;
};

// An event as its line places it, with its stats by name.
struct EventView {
  std::string_view name;
  int64_t start_ns = 0, duration_ns = 0;
  Stats stats;
};

bool parse_xspace(std::string_view bytes, std::string_view name, pb::XSpace& space,
                  std::string& error) {
  if (space.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return true;
  const WireError wire = find_nested_wire_error(bytes, *pb::XSpace::descriptor());
  error = wire.found ? fmt::format("{}: offset {}: expected {} (in an XSpace message)", name,
                                   wire.offset, wire.expected)
                     : fmt::format("{}: offset 0: expected an XSpace message (protobuf could "
                                   "not decode a nested field)", name);
  return false;
}

EventView view_event(const pb::XEvent& event, int64_t line_ns, const PlaneNames& names) {
  EventView v;
  const auto en = names.events.find(event.metadata_id());
  v.name = en == names.events.end() ? std::string_view() : en->second;
  const int64_t offset_ns =
      event.data_case() == pb::XEvent::kOffsetPs
          ? picos_to_ns(static_cast<uint64_t>(std::max<int64_t>(event.offset_ps(), 0)))
          : 0;
  v.start_ns = std::min(line_ns + offset_ns, INT64_MAX / 4);
  v.duration_ns = picos_to_ns(static_cast<uint64_t>(std::max<int64_t>(event.duration_ps(), 0)));
  v.stats.names = &names.stats;
  for (const pb::XStat& s : event.stats()) {
    const auto sn = names.stats.find(s.metadata_id());
    if (sn != names.stats.end()) v.stats.by_name[sn->second] = &s;
  }
  return v;
}

// A kernel or copy on a device plane's stream line, on the device's clock.
void add_device_op(const EventView& ev, int ordinal, const pb::XLine& line, TraceBuilder& builder,
                   XSpaceRead& read) {
  const std::optional<int64_t> correlation = ev.stats.integer("correlation_id");
  Op op;
  op.name = ev.name;
  op.type = op.name;
  op.device = ordinal;
  op.stream = static_cast<uint32_t>(line.id());
  op.start_ns = ev.start_ns;
  op.duration_ns = ev.duration_ns;
  op.is_copy = is_host_device_copy(ev.name);
  if (correlation)
    read.clock.add_work(static_cast<uint64_t>(*correlation), ordinal, ev.start_ns,
                        ev.start_ns + ev.duration_ns);
  read.device_first_ns = std::min(read.device_first_ns, ev.start_ns);
  read.device_last_ns = std::max(read.device_last_ns, ev.start_ns + ev.duration_ns);
  builder.add_op(std::move(op));
  read.op_end_ns.push_back(ev.start_ns + ev.duration_ns);
}

MemoryEvent memory_event(const EventView& ev, size_t order) {
  const Stats& stats = ev.stats;
  MemoryEvent m;
  m.time_ns = ev.start_ns;
  m.alloc = ev.name == "MemoryAllocation";
  m.allocator = stats.text("allocator_name");
  m.addr = static_cast<uint64_t>(stats.integer("addr").value_or(0));
  m.requested =
      static_cast<uint64_t>(std::max<int64_t>(stats.integer("requested_bytes").value_or(0), 0));
  m.allocation =
      static_cast<uint64_t>(std::max<int64_t>(stats.integer("allocation_bytes").value_or(0), 0));
  m.bytes_allocated = stats.integer("bytes_allocated");
  m.peak_in_use = stats.integer("peak_bytes_in_use");
  m.tf_op = stats.text("tf_op");
  m.order = order;
  return m;
}

// A host-plane event: a launch's host side, a memory event, a step, or a
// TensorFlow op (anything else is dropped).
void read_host_event(const EventView& ev, const pb::XLine& line, TraceBuilder& builder,
                     XSpaceRead& read) {
  // The host side of a kernel launch or copy (CUPTI's API callback).
  if (const std::optional<int64_t> correlation = ev.stats.integer("correlation_id")) {
    read.clock.add_launch(static_cast<uint64_t>(*correlation), ev.start_ns);
    return;
  }
  if (ev.name == "MemoryAllocation" || ev.name == "MemoryDeallocation") {
    read.memory.push_back(memory_event(ev, read.memory.size()));
    return;
  }
  if (ev.stats.find("step_num")) {
    read.steps.push_back({ev.start_ns, ev.start_ns + ev.duration_ns});
    return;
  }
  std::string_view node, type;
  if (!is_op_event(ev.name, node, type)) return;
  Op op;
  op.name = node;
  op.type = type;
  op.device = read.any_gpu_plane ? -1 : 0;
  op.stream = static_cast<uint32_t>(static_cast<uint64_t>(line.id()));
  op.start_ns = ev.start_ns;
  op.duration_ns = ev.duration_ns;
  read.first_ns = std::min(read.first_ns, ev.start_ns);
  read.last_ns = std::max(read.last_ns, ev.start_ns + ev.duration_ns);
  const uint32_t index = builder.add_op(std::move(op));
  read.op_end_ns.push_back(ev.start_ns + ev.duration_ns);
  read.ops_by_node[std::string(node)].push_back(index);
}

// The host plane and the GPU planes; other planes are dropped.
void read_plane(const pb::XPlane& plane, TraceBuilder& builder, XSpaceRead& read) {
  const bool host = plane.name().starts_with("/host:");
  const bool gpu = plane.name().starts_with("/device:GPU:");
  if (!host && !gpu) return;
  const int ordinal = gpu ? device_ordinal(plane.name()) : 0;
  PlaneNames names;
  for (const auto& [id, m] : plane.stat_metadata()) names.stats[id] = m.name();
  for (const auto& [id, m] : plane.event_metadata()) names.events[id] = m.name();

  for (const pb::XLine& line : plane.lines()) {
    if (gpu) {  // kernels on stream lines only, not the derived lines
      const std::string_view ln = line.name();
      if (!ln.starts_with("Stream")) continue;
    }
    const int64_t line_ns = std::clamp<int64_t>(line.timestamp_ns(), 0, INT64_MAX / 4);
    for (const pb::XEvent& event : line.events()) {
      const EventView ev = view_event(event, line_ns, names);
      if (gpu)
        add_device_op(ev, ordinal, line, builder, read);
      else
        read_host_event(ev, line, builder, read);
    }
  }
}

// Memory events paired into tensors, with the allocators' figures.
struct MemoryPairing {
  AllocatorSpaces spaces;
  std::map<std::string, std::optional<uint64_t>> peaks;  // the largest bytes_allocated
  std::map<std::string, int64_t> lifetime_peaks;         // peak_bytes_in_use
  std::map<std::pair<std::string, uint64_t>, size_t> live;  // (allocator, addr) -> tensor
  uint64_t unpaired_frees = 0;
  std::map<std::string, uint64_t> before_profile;  // bytes held before the first event
};

void count_figures(const MemoryEvent& m, MemoryPairing& p) {
  if (m.bytes_allocated && !p.before_profile.count(m.allocator)) {
    // bytes_allocated counts the event itself (BFCAllocator::AddTraceMe).
    const auto size = static_cast<int64_t>(m.allocation ? m.allocation : m.requested);
    p.before_profile[m.allocator] =
        static_cast<uint64_t>(std::max<int64_t>(*m.bytes_allocated - (m.alloc ? size : -size), 0));
  }
  std::optional<uint64_t>& peak = p.peaks[m.allocator];
  if (m.bytes_allocated && *m.bytes_allocated >= 0)
    peak = std::max(peak.value_or(0), static_cast<uint64_t>(*m.bytes_allocated));
  if (m.peak_in_use)
    p.lifetime_peaks[m.allocator] = std::max(p.lifetime_peaks[m.allocator], *m.peak_in_use);
}

// The producer: the op named by tf_op running at that time (or the latest
// before it, or else its first run).
uint32_t producer_of(const MemoryEvent& m, const XSpaceRead& read, TraceBuilder& builder) {
  uint32_t producer = kNoOp;
  const std::string_view node = std::string_view(m.tf_op).substr(0, m.tf_op.rfind(':'));
  if (const auto it = read.ops_by_node.find(std::string(node)); it != read.ops_by_node.end()) {
    for (uint32_t op : it->second) {
      if (builder.op(op).start_ns > m.time_ns) break;
      producer = op;
    }
    if (producer == kNoOp && !it->second.empty()) producer = it->second.front();
  }
  return producer;
}

// Allocations and frees pair by (allocator, address) in time order; a free
// of memory allocated before the profile is a persistent tensor.
void pair_event(const MemoryEvent& m, const XSpaceRead& read, TraceBuilder& builder, Trace& out,
                MemoryPairing& p) {
  count_figures(m, p);
  const uint64_t size = m.allocation ? m.allocation : m.requested;
  if (!m.alloc) {
    const auto it = p.live.find({m.allocator, m.addr});
    if (it != p.live.end()) {
      out.tensors[it->second].free_ns = m.time_ns;
      p.live.erase(it);
      return;
    }
    ++p.unpaired_frees;
  }
  Tensor t;
  t.name = m.tf_op;
  t.size_bytes = size;
  t.requested_bytes = m.requested ? m.requested : size;
  t.allocator = m.allocator;
  t.address = m.addr;
  if (m.alloc) {
    t.alloc_ns = m.time_ns;
    t.producer = producer_of(m, read, builder);
    p.live[{m.allocator, m.addr}] = out.tensors.size();
  } else {
    t.persistent = true;
    t.free_ns = m.time_ns;
  }
  p.spaces.count(m.allocator, size);
  builder.add_tensor(std::move(t));
}

// Memory held before the profile and not freed in it (weights, optimizer
// state): what bytes_allocated says was there beyond what the profile's
// own frees account for, as one persistent tensor per allocator.
void add_held_before(MemoryPairing& p, TraceBuilder& builder) {
  uint64_t never_freed_bytes = 0;
  for (const auto& [allocator, held_bytes] : p.before_profile) {
    never_freed_bytes += builder.add_held_before(allocator, 0, held_bytes,
                                                 "(allocated before the profile)");
    p.spaces.count(allocator, 0);
  }
  if (never_freed_bytes)
    builder.note(fmt::format("{} bytes allocated before the profile and not freed in it (by "
                             "bytes_allocated): one persistent tensor per allocator",
                             never_freed_bytes));
}

void report_allocators(const MemoryPairing& p, TraceBuilder& builder, Trace& out) {
  for (const auto& [allocator, peak] : p.peaks)
    builder.report_allocator(allocator, p.spaces.space(allocator), p.spaces.device(allocator),
                             peak);
  if (const auto it = p.peaks.find(p.spaces.device_allocator()); it != p.peaks.end() && it->second)
    out.reported_peak_device_bytes = *it->second;
  for (const auto& [allocator, peak] : p.lifetime_peaks)
    builder.note(fmt::format("{}: peak_bytes_in_use {} over the allocator's life (warm-up "
                             "included)", allocator, peak));
}

// Steps as iterations, on the clock of the device with the most kernels
// where it has one; without steps, the whole profile is one iteration.
void add_iterations(const XSpaceRead& read, int step_device, bool step_clock,
                    TraceBuilder& builder) {
  if (!read.steps.empty()) {
    for (const Step& s : read.steps) {
      if (step_clock)
        builder.add_iteration(read.clock.alloc_ns(step_device, s.start_ns),
                              read.clock.free_ns(step_device, s.end_ns));
      else
        builder.add_iteration(s.start_ns, s.end_ns);
    }
  } else if (read.first_ns <= read.last_ns || read.device_first_ns <= read.device_last_ns) {
    builder.add_iteration(std::min(read.first_ns, read.device_first_ns),
                          std::max(read.last_ns, read.device_last_ns) + 1);
    builder.note("no step_num events: the whole profile is one iteration");
  }
}

}  // namespace

bool import_xspace(std::string_view bytes, std::string_view name, Trace& out,
                   std::string& error) {
  pb::XSpace space;
  if (!parse_xspace(bytes, name, space, error)) return false;
  out.format = TraceFormat::tf2_xplane;
  TraceBuilder builder(out);

  XSpaceRead read;
  for (const pb::XPlane& plane : space.planes())
    read.any_gpu_plane |= plane.name().starts_with("/device:GPU:");
  for (const pb::XPlane& plane : space.planes()) read_plane(plane, builder, read);
  // Host lines are walked in file order; op searches need start order.
  for (auto& [node, list] : read.ops_by_node)
    std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      return builder.op(a).start_ns < builder.op(b).start_ns;
    });

  std::stable_sort(read.memory.begin(), read.memory.end(),
                   [](const MemoryEvent& a, const MemoryEvent& b) {
                     return a.time_ns < b.time_ns;
                   });
  MemoryPairing pairing;
  for (const MemoryEvent& m : read.memory) pair_event(m, read, builder, out, pairing);
  add_held_before(pairing, builder);
  pairing.spaces.decide(builder);
  for (Tensor& t : out.tensors) {
    t.space = pairing.spaces.space(t.allocator);
    t.device = pairing.spaces.device(t.allocator);
  }

  // Device tensors onto the device's clock (Note [Device time of memory
  // events]): the BFC allocator hands memory out when the op is enqueued.
  read.clock.finish();
  bool moved = false;
  for (Tensor& t : out.tensors)
    if (t.space == MemorySpace::device) moved |= read.clock.to_device_clock(t);
  // The device with the most kernels: its clock places the steps.
  const int step_device = busiest_device(out.ops);
  const bool step_clock = step_device >= 0 && read.clock.mapped(step_device);
  if (moved)
    builder.note("device tensors and steps on the device's clock, through the kernels' "
                 "launches (correlation_id)");
  report_allocators(pairing, builder, out);
  add_iterations(read, step_device, step_clock, builder);
  if (pairing.unpaired_frees)
    builder.note(fmt::format("{} frees of memory allocated before the profile: those tensors "
                             "are persistent until their free", pairing.unpaired_frees));
  builder.finish();
  return true;
}

}  // namespace cuswap::trace::import
