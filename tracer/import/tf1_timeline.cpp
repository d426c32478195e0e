// TensorFlow 1 timeline JSON (timeline.py's Chrome trace, show_memory=True)
// into the Trace model.
//
// What is read: `X` ops (args.name, args.op, args.input*), per-device pids
// from the `M` process names, tensor objects `N`/`O`/`D` with the
// TensorDescription text in the `O` snapshot, and the `C` counters, whose
// maximum per allocator is the source's own peak (timeline.py synthesises
// them from requested bytes and derived lifetimes; they are not measured).
// Dataflow `s`/`t` events are redundant with the inputs and ignored.
//
// Note [GPU timelines]
// A GPU capture has several lanes per device: the executor's
// ("/job:…/device:GPU:0"), which shows when each op was enqueued on the
// host; one per CUDA stream ("/device:GPU:0/stream:N"), which shows when its
// kernels and copies ran on the device, often hundreds of milliseconds
// later; and two aggregates that repeat the stream lanes event for event
// ("stream:all", "memcpy"). The aggregates are dropped. A kernel names its
// op (args.name), so each executor op takes the device time of its kernels
// (from the first kernel's start to the last one's end, on the stream of the
// first) and the kernels are not ops of their own; an op without kernels
// keeps its host time, and a kernel of no executor op stays an op of its
// stream. Host-device copies (MEMCPYHtoD/DtoH) are ops on copy streams,
// marked as copies. Tensor objects are created and deleted on the executor's
// clock, so a tensor touched by an op on the device's clock lives from its
// producer's first kernel to the end of its last consumer's last kernel.
//
// Tensor identity: timeline.py keys its tensors by name, so a name produced
// several times (loops) gives several `N`/`O` pairs but one `D`, for the last
// of them. Earlier instances end at the last use of that name before the
// next instance (or their producer's end); a note counts them.
//
// Reading the events is in tf1_timeline_events.cpp; this file joins the
// kernels, builds the ops and the tensors, and reports the allocators.
#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "tracer/import/builder.h"
#include "tracer/import/json_importers.h"
#include "tracer/import/tf1_timeline.h"
#include "tracer/import/tf_common.h"

namespace cuswap::trace::import {
namespace {

using tf1::Device;
using tf1::Lane;
using tf1::RawOp;
using tf1::RawTensor;
using tf1::TimelineEvents;
using tf1::tensor_key;

std::string_view node_of(std::string_view key) { return key.substr(0, key.rfind(':')); }

const Device* device_of(const TimelineEvents& events, int64_t pid) {
  const auto it = events.devices.find(pid);
  return it == events.devices.end() ? nullptr : &it->second;
}

// Where an executor op's kernels ran: from the first one's start to the
// last one's end, on the stream of the first.
struct DeviceTime {
  int64_t start_ns = INT64_MAX, end_ns = INT64_MIN;
  uint32_t stream = 0;
};

// Which raw ops stay ops, and the device time of the executor ops that
// kernels joined (Note [GPU timelines]).
struct KernelJoin {
  std::vector<DeviceTime> device_time;  // by raw op
  std::vector<bool> keep;               // by raw op: not a joined kernel nor an aggregate event
  uint64_t aggregate_events = 0, joined_kernels = 0, copies = 0;
};

// The GPU executor ops by (ordinal, node name), each list in start order.
using Runs = std::map<std::pair<int, std::string_view>, std::vector<size_t>>;

Runs executor_runs(const TimelineEvents& events) {
  const std::vector<RawOp>& raw_ops = events.raw_ops;
  Runs runs;
  for (size_t r = 0; r < raw_ops.size(); ++r) {
    const Device* d = device_of(events, raw_ops[r].pid);
    if (d && d->gpu && d->lane == Lane::executor)
      runs[{d->ordinal, raw_ops[r].op.name}].push_back(r);
  }
  for (auto& [key, list] : runs)
    std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) {
      return raw_ops[a].op.start_ns < raw_ops[b].op.start_ns;
    });
  return runs;
}

// One event of a stream or aggregate lane: aggregate events are dropped,
// copies stay ops, and a kernel joins its executor op where it has one.
void join_kernel(size_t r, const Device& d, const Runs& runs, TimelineEvents& events,
                 KernelJoin& join) {
  if (d.lane == Lane::aggregate) {
    join.keep[r] = false;
    ++join.aggregate_events;
    return;
  }
  Op& op = events.raw_ops[r].op;
  op.stream = d.stream;
  if (op.type.starts_with("MEMCPYHtoD") || op.type.starts_with("MEMCPYDtoH") ||
      op.type.starts_with("MEMCPYPtoP")) {
    op.is_copy = true;
    ++join.copies;
    return;
  }
  const auto it = runs.find({d.ordinal, op.name});
  if (it == runs.end()) return;  // a kernel of no executor op: kept on its stream
  size_t run = it->second.front();
  for (size_t candidate : it->second) {
    if (events.raw_ops[candidate].op.start_ns > op.start_ns) break;
    run = candidate;
  }
  DeviceTime& t = join.device_time[run];
  if (op.start_ns < t.start_ns) t.stream = d.stream;
  t.start_ns = std::min(t.start_ns, op.start_ns);
  t.end_ns = std::max(t.end_ns, op.start_ns + op.duration_ns);
  join.keep[r] = false;
  ++join.joined_kernels;
}

// Note [GPU timelines]: kernels join their executor op by node name.
// A kernel belongs to the latest run of its node on the same device that
// the executor started before the kernel started.
KernelJoin join_kernels(TimelineEvents& events) {
  const Runs runs = executor_runs(events);
  KernelJoin join;
  join.device_time.resize(events.raw_ops.size());
  join.keep.assign(events.raw_ops.size(), true);
  for (size_t r = 0; r < events.raw_ops.size(); ++r) {
    const Device* d = device_of(events, events.raw_ops[r].pid);
    if (!d || !d->gpu || d->lane == Lane::executor) continue;
    join_kernel(r, *d, runs, events, join);
  }
  return join;
}

// The ops as added, by op index, with what tensors join them by.
struct TimelineOps {
  std::vector<int64_t> host_start_ns, end_ns;
  std::vector<std::string> node;
  std::vector<std::vector<std::string>> inputs;  // tensor keys
  std::vector<bool> on_device_clock;
  // Producers by node name, consumers by tensor key, each in time order.
  std::unordered_map<std::string_view, std::vector<uint32_t>> by_node;
  std::unordered_map<std::string_view, std::vector<uint32_t>> by_input;
};

// The ops, in source order; an executor op with kernels takes their
// device time, and its host time stays for joining tensors. GPU ops are on
// their ordinal and CPU ops on the host, unless there is no GPU at all, when
// the CPU stands in for the device.
void add_ops(TimelineEvents& events, const KernelJoin& join, TraceBuilder& builder,
             TimelineOps& ops) {
  bool any_gpu_device = false;
  for (const auto& [pid, d] : events.devices) any_gpu_device |= d.gpu;
  for (size_t r = 0; r < events.raw_ops.size(); ++r) {
    if (!join.keep[r]) continue;
    RawOp& raw = events.raw_ops[r];
    const Device* d = device_of(events, raw.pid);
    Op op = std::move(raw.op);
    op.device = d ? (d->gpu ? d->ordinal : (any_gpu_device ? -1 : 0)) : (any_gpu_device ? -1 : 0);
    if (d && d->lane == Lane::stream) op.stream = d->stream;
    ops.host_start_ns.push_back(op.start_ns);
    const DeviceTime& t = join.device_time[r];
    ops.on_device_clock.push_back(t.end_ns != INT64_MIN || (d && d->lane == Lane::stream));
    if (t.end_ns != INT64_MIN) {
      op.start_ns = t.start_ns;
      op.duration_ns = t.end_ns - t.start_ns;
      op.stream = t.stream;
    }
    ops.end_ns.push_back(op.start_ns + op.duration_ns);
    ops.node.push_back(op.name);
    ops.inputs.push_back(std::move(raw.inputs));
    builder.add_op(std::move(op));
  }
}

void index_ops(TimelineOps& ops) {
  for (uint32_t op = 0; op < ops.node.size(); ++op) {
    ops.by_node[ops.node[op]].push_back(op);
    for (const std::string& in : ops.inputs[op]) ops.by_input[in].push_back(op);
  }
  auto by_start = [&](uint32_t a, uint32_t b) {
    return ops.host_start_ns[a] < ops.host_start_ns[b];
  };
  for (auto& [k, v] : ops.by_node) std::stable_sort(v.begin(), v.end(), by_start);
  for (auto& [k, v] : ops.by_input) std::stable_sort(v.begin(), v.end(), by_start);
}

// Each tensor object into a Tensor, with the producer, accesses and
// lifetime that the file's header describes.
class TimelineTensors {
 public:
  TimelineTensors(const TimelineEvents& events, const TimelineOps& ops,
                  const AllocatorSpaces& spaces, TraceBuilder& builder);

  void add(size_t index);

  uint64_t undescribed = 0;
  uint64_t derived_frees = 0, device_lifetimes = 0;

 private:
  int64_t join_ops(Tensor& t, const RawTensor& raw, const std::string& key,
                   int64_t window_end) const;
  void set_free(Tensor& t, const RawTensor& raw, bool last_instance, int64_t last_use_ns);

  const TimelineEvents& events_;
  const TimelineOps& ops_;
  const AllocatorSpaces& spaces_;
  TraceBuilder& builder_;
  // Instances of one name, in creation order, for the consumer windows.
  std::unordered_map<std::string, std::vector<size_t>> instances_;
  std::vector<size_t> instance_index_;  // by tensor: its place among its name's instances
};

TimelineTensors::TimelineTensors(const TimelineEvents& events, const TimelineOps& ops,
                                 const AllocatorSpaces& spaces, TraceBuilder& builder)
    : events_(events), ops_(ops), spaces_(spaces), builder_(builder) {
  instance_index_.resize(events.tensors.size());
  for (size_t t = 0; t < events.tensors.size(); ++t) {
    std::vector<size_t>& list = instances_[events.tensors[t].name];
    instance_index_[t] = list.size();
    list.push_back(t);
  }
}

void TimelineTensors::add(size_t index) {
  const RawTensor& raw = events_.tensors[index];
  const std::string& name = raw.name;
  const std::vector<size_t>& list = instances_.at(name);
  const size_t n = instance_index_[index];
  const std::string key = tensor_key(name);
  // Tensors without an allocation description (forwarded or
  // reference outputs) are kept with size 0: they allocate nothing.
  if (!raw.described || !raw.description.has_allocation) ++undescribed;
  Tensor t;
  t.name = key;
  // The plain CPU allocator does not track sizes: allocated_bytes is 0.
  t.size_bytes = raw.description.allocated_bytes ? raw.description.allocated_bytes
                                                 : raw.description.requested_bytes;
  t.requested_bytes = raw.description.requested_bytes;
  t.allocator = raw.description.allocator_name;
  t.space = spaces_.space(t.allocator);
  t.device = spaces_.device(t.allocator);
  t.address = raw.description.ptr;
  t.alloc_ns = raw.alloc_ns;
  const int64_t window_end =
      n + 1 < list.size() ? events_.tensors[list[n + 1]].alloc_ns : INT64_MAX;
  const int64_t last_use_ns = join_ops(t, raw, key, window_end);
  set_free(t, raw, n + 1 == list.size(), last_use_ns);
  builder_.add_tensor(std::move(t));
}

// The producer and the consumers in this instance's window; returns the
// end of the last of them (or the creation time).
int64_t TimelineTensors::join_ops(Tensor& t, const RawTensor& raw, const std::string& key,
                                  int64_t window_end) const {
  int64_t last_use_ns = raw.alloc_ns;
  if (const auto it = ops_.by_node.find(node_of(key)); it != ops_.by_node.end()) {
    // The producer started when the tensor was created (same timestamp).
    for (uint32_t op : it->second) {
      if (ops_.host_start_ns[op] > raw.alloc_ns) break;
      t.producer = op;
    }
    if (t.producer != kNoOp) last_use_ns = std::max(last_use_ns, ops_.end_ns[t.producer]);
  }
  if (const auto it = ops_.by_input.find(key); it != ops_.by_input.end()) {
    for (uint32_t op : it->second) {
      const int64_t start = ops_.host_start_ns[op];
      if (start < raw.alloc_ns) continue;
      if (start >= window_end) break;
      t.accesses.push_back(op);
      last_use_ns = std::max(last_use_ns, ops_.end_ns[op]);
    }
  }
  return last_use_ns;
}

void TimelineTensors::set_free(Tensor& t, const RawTensor& raw, bool last_instance,
                               int64_t last_use_ns) {
  // On a GPU the tensor lives from its producer's first kernel to the
  // end of its last consumer's last kernel; the executor's D is a host time.
  bool device_lifetime = t.producer != kNoOp && ops_.on_device_clock[t.producer];
  for (uint32_t op : t.accesses) device_lifetime |= ops_.on_device_clock[op];
  if (device_lifetime) {
    if (t.producer != kNoOp && ops_.on_device_clock[t.producer])
      t.alloc_ns = builder_.op(t.producer).start_ns;
    t.free_ns = std::max(last_use_ns, t.alloc_ns);
    ++device_lifetimes;
  } else if (last_instance && events_.deletes.count(raw.name)) {
    t.free_ns = std::max(events_.deletes.at(raw.name), raw.alloc_ns);
  } else {
    t.free_ns = last_use_ns;
    ++derived_frees;
  }
}

void report_allocators(const TimelineEvents& events, const AllocatorSpaces& spaces,
                       TraceBuilder& builder, Trace& out) {
  for (const auto& [name, peak] : events.counter_peaks)
    builder.report_allocator(name, spaces.space(name), spaces.device(name), peak);
  for (const Tensor& t : out.tensors)
    builder.report_allocator(t.allocator, t.space, t.device, std::nullopt);
  if (const auto it = events.counter_peaks.find(spaces.device_allocator());
      it != events.counter_peaks.end())
    out.reported_peak_device_bytes = it->second;
}

void add_notes(const KernelJoin& join, const TimelineTensors& tensors, TraceBuilder& builder) {
  if (join.aggregate_events)
    builder.note(fmt::format("{} events of the aggregate lanes (stream:all, memcpy) dropped: they "
                             "repeat the stream lanes", join.aggregate_events));
  if (join.joined_kernels)
    builder.note(fmt::format("{} kernels joined to their executor ops: those ops take their "
                             "kernels' device time", join.joined_kernels));
  if (join.copies)
    builder.note(fmt::format("{} host-device copies on copy streams", join.copies));
  if (tensors.device_lifetimes)
    builder.note(fmt::format("{} tensors live on the device's clock, from their producer's first "
                             "kernel to their last consumer's last kernel",
                             tensors.device_lifetimes));
  if (tensors.undescribed)
    builder.note(fmt::format("{} tensor objects without an allocation description (size 0)",
                             tensors.undescribed));
  if (tensors.derived_frees)
    builder.note(fmt::format("{} tensors end at their last use: the timeline deletes only the "
                             "last tensor of each name", tensors.derived_frees));
  builder.note("the allocator peaks are timeline.py's counters, summed from requested bytes");
}

}  // namespace

bool import_tf1_timeline(simdjson::dom::array events, const JsonPath& path,
                         const JsonErrors& errors, Trace& out) {
  out.format = TraceFormat::tf1_timeline;
  TraceBuilder builder(out);
  TimelineEvents read;
  if (!tf1::read_timeline_events(events, path, errors, read)) return false;

  const KernelJoin join = join_kernels(read);
  TimelineOps ops;
  add_ops(read, join, builder, ops);
  index_ops(ops);

  AllocatorSpaces spaces;
  for (const RawTensor& t : read.tensors)
    if (t.described && t.description.has_allocation)
      spaces.count(t.description.allocator_name,
                   std::max(t.description.allocated_bytes, t.description.requested_bytes));
  for (const auto& [name, peak] : read.counter_peaks) spaces.count(name, 0);
  spaces.decide(builder);

  TimelineTensors tensors(read, ops, spaces, builder);
  for (size_t index = 0; index < read.tensors.size(); ++index) tensors.add(index);

  report_allocators(read, spaces, builder, out);
  // One timeline is one step.
  if (!out.ops.empty()) {
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (size_t op = 0; op < out.ops.size(); ++op) {
      first = std::min(first, out.ops[op].start_ns);
      last = std::max(last, ops.end_ns[op]);
    }
    builder.add_iteration(first, last + 1);
  }
  add_notes(join, tensors, builder);
  builder.finish();
  return true;
}

}  // namespace cuswap::trace::import
