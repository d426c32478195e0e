// TensorFlow 1 StepStats (RunMetadata.step_stats, serialized) into the Trace
// model; a whole RunMetadata is accepted too.
//
// What is read: per device, NodeExecStats as ops (node_name, the op type
// from timeline_label "name = Type(inputs)", all_start and all_end_rel in
// nanoseconds where recorded, else microseconds; thread_id as the lane),
// outputs with their AllocationDescription as tensors, the timeline_label
// inputs as the tensors' consumers, and memory[] per allocator:
// allocator_bytes_in_use (the allocator's own count after each op, weights
// included: its maximum is the allocator's peak, the reported figure),
// peak_bytes (one op's own peak) and allocation_records (this step's
// allocations and frees, replayed for their live peak); the last two are
// given in a note.
//
// Lifetimes: StepStats does not say when an output is freed; a tensor ends
// at the end of its last consumer (or of its producer), as timeline.py
// assumes, counting only the consumers that run before the producer makes
// the next instance of the same output (a while loop's next iteration).
// Dropped: referenced_tensor, memory_stats, scheduled times.
#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "proto/step_stats.pb.h"
#include "tracer/import/builder.h"
#include "tracer/import/proto_importers.h"
#include "tracer/import/proto_wire.h"
#include "tracer/import/tf_common.h"

namespace cuswap::trace::import {
namespace {

namespace pb = cuswap::import::tf;

// "[…] name = Type(in, in:1, ^ctrl)" -> type and data inputs ("node:i").
void parse_label(std::string_view label, std::string& type, std::vector<std::string>& inputs) {
  if (!label.empty() && label[0] == '[') {
    const size_t close = label.find("] ");
    if (close != std::string_view::npos) label.remove_prefix(close + 2);
  }
  const size_t eq = label.find(" = ");
  if (eq == std::string_view::npos) return;
  std::string_view rest = label.substr(eq + 3);
  const size_t open = rest.find('(');
  if (open == std::string_view::npos || rest.back() != ')') return;
  type = rest.substr(0, open);
  std::string_view args = rest.substr(open + 1, rest.size() - open - 2);
  while (!args.empty()) {
    size_t comma = args.find(", ");
    std::string_view arg = args.substr(0, comma);
    args = comma == std::string_view::npos ? std::string_view() : args.substr(comma + 2);
    if (arg.empty() || arg[0] == '^') continue;
    arg = arg.substr(0, arg.find(' '));  // "tensor @device" in _Recv labels
    const size_t colon = arg.rfind(':');
    const bool has_index = colon != std::string_view::npos && colon + 1 < arg.size() &&
                           arg.find_first_not_of("0123456789", colon + 1) == std::string_view::npos;
    inputs.push_back(has_index ? std::string(arg) : std::string(arg) + ":0");
  }
}

struct DeviceName {
  bool gpu = false;
  int ordinal = 0;
};

DeviceName parse_device(std::string_view device) {
  std::string low(device);
  for (char& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  DeviceName d;
  d.gpu = low.find("gpu:") != std::string::npos;
  if (d.gpu) d.ordinal = device_ordinal(low.substr(0, low.find("/stream:")));
  return d;
}

// An output with an allocation: a tensor once every op is known.
struct Output {
  uint32_t op;
  std::string key;  // "node:i"
  pb::AllocationDescription description;
};

// One of an allocator's allocation_records: +bytes allocated, -bytes freed.
struct Record {
  int64_t time_ns;
  int64_t bytes;
};

// What the nodes say, read in one walk over every device's NodeExecStats.
struct StepRead {
  std::vector<Output> outputs;
  std::vector<int64_t> op_end_ns;  // by op index
  std::unordered_map<std::string, std::vector<uint32_t>> consumers;  // by "node:i"
  std::map<std::string, uint64_t> peaks;    // allocator_bytes_in_use, by allocator
  std::map<std::string, int64_t> op_peaks;  // peak_bytes, by allocator
  std::map<std::string, std::vector<Record>> records;  // by allocator
  int64_t first_ns = INT64_MAX, last_ns = INT64_MIN;
};

// The message, or an error naming where protobuf gave up.
bool parse_message(std::string_view bytes, std::string_view name, bool run_metadata,
                   pb::StepStats& step_stats, pb::RunMetadata& metadata, std::string& error) {
  const bool ok = run_metadata ? metadata.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))
                               : step_stats.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  if (ok) return true;
  const char* const what = run_metadata ? "RunMetadata" : "StepStats";
  const WireError wire = find_nested_wire_error(
      bytes, run_metadata ? *pb::RunMetadata::descriptor() : *pb::StepStats::descriptor());
  error = wire.found ? fmt::format("{}: offset {}: expected {} (in a {} message)", name,
                                   wire.offset, wire.expected, what)
                     : fmt::format("{}: offset 0: expected a {} message (protobuf could not "
                                   "decode a nested field)", name, what);
  return false;
}

// The allocator figures of one node: allocator_bytes_in_use is the
// allocator's own count after the op (weights included); peak_bytes is the
// op's own peak.
void read_memory(const pb::NodeExecStats& node, StepRead& read) {
  for (const pb::AllocatorMemoryUsed& m : node.memory()) {
    uint64_t& peak = read.peaks[m.allocator_name()];
    peak = std::max<uint64_t>(
        peak, static_cast<uint64_t>(std::max<int64_t>(m.allocator_bytes_in_use(), 0)));
    int64_t& op_peak = read.op_peaks[m.allocator_name()];
    op_peak = std::max(op_peak, m.peak_bytes());
    for (const pb::AllocationRecord& r : m.allocation_records())
      read.records[m.allocator_name()].push_back({micros_to_ns(r.alloc_micros()), r.alloc_bytes()});
  }
}

// One node as an op, its outputs with an allocation, and its memory figures.
void read_node(const pb::NodeExecStats& node, int device, TraceBuilder& builder, StepRead& read) {
  Op op;
  op.name = node.node_name();
  op.type = op.name;
  std::vector<std::string> inputs;
  parse_label(node.timeline_label(), op.type, inputs);
  op.start_ns = node.all_start_nanos() ? std::clamp<int64_t>(node.all_start_nanos(), -(INT64_MAX / 4), INT64_MAX / 4)
                                       : micros_to_ns(node.all_start_micros());
  op.duration_ns = std::max<int64_t>(
      0, node.all_end_rel_nanos() ? std::min<int64_t>(node.all_end_rel_nanos(), INT64_MAX / 4)
                                  : micros_to_ns(node.all_end_rel_micros()));
  op.device = device;
  op.stream = node.thread_id();
  read.first_ns = std::min(read.first_ns, op.start_ns);
  read.last_ns = std::max(read.last_ns, op.start_ns + op.duration_ns);
  const int64_t end_ns = op.start_ns + op.duration_ns;
  const std::string node_name = op.name;
  const uint32_t index = builder.add_op(std::move(op));
  read.op_end_ns.push_back(end_ns);
  for (std::string& in : inputs) read.consumers[std::move(in)].push_back(index);
  for (int i = 0; i < node.output_size(); ++i) {
    const pb::NodeOutput& o = node.output(i);
    if (!o.has_tensor_description() || !o.tensor_description().has_allocation_description())
      continue;
    read.outputs.push_back({index, fmt::format("{}:{}", node_name, i),
                            o.tensor_description().allocation_description()});
  }
  read_memory(node, read);
}

// Every device's nodes. GPU ops are on their ordinal and CPU ops on the
// host, unless there is no GPU at all, when the CPU stands in for the device.
void read_devices(const pb::StepStats& stats, TraceBuilder& builder, StepRead& read) {
  bool any_gpu_device = false;
  for (const pb::DeviceStepStats& dev : stats.dev_stats()) any_gpu_device |= parse_device(dev.device()).gpu;
  for (const pb::DeviceStepStats& dev : stats.dev_stats()) {
    const DeviceName device = parse_device(dev.device());
    for (const pb::NodeExecStats& node : dev.node_stats())
      read_node(node, device.gpu ? device.ordinal : (any_gpu_device ? -1 : 0), builder, read);
  }
}

// Each output as a tensor from its producer's start to the end of its last
// consumer (the file's header says which consumers count).
void add_tensors(StepRead& read, const AllocatorSpaces& spaces, TraceBuilder& builder) {
  for (auto& [key, list] : read.consumers)
    std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      return builder.op(a).start_ns < builder.op(b).start_ns;
    });
  // A node run many times (a while loop's body) makes one instance of each
  // output per run: an instance's consumers are the runs of its consumers
  // before the next instance is made (the same iteration's dataflow), as
  // for TF1 timelines.
  std::unordered_map<std::string_view, std::vector<int64_t>> instance_starts;
  for (const Output& o : read.outputs) instance_starts[o.key].push_back(builder.op(o.op).start_ns);
  for (auto& [key, starts] : instance_starts) std::sort(starts.begin(), starts.end());
  for (const Output& o : read.outputs) {
    Tensor t;
    t.name = o.key;
    const auto allocated = static_cast<uint64_t>(std::max<int64_t>(o.description.allocated_bytes(), 0));
    const auto requested = static_cast<uint64_t>(std::max<int64_t>(o.description.requested_bytes(), 0));
    t.size_bytes = allocated ? allocated : requested;
    t.requested_bytes = requested;
    t.allocator = o.description.allocator_name();
    t.space = spaces.space(t.allocator);
    t.device = spaces.device(t.allocator);
    t.address = o.description.ptr();
    t.alloc_ns = builder.op(o.op).start_ns;
    t.producer = o.op;
    int64_t last_use = read.op_end_ns[o.op];
    const std::vector<int64_t>& starts = instance_starts[o.key];
    const auto next = std::upper_bound(starts.begin(), starts.end(), t.alloc_ns);
    const int64_t window_end_ns = next == starts.end() ? INT64_MAX : *next;
    if (const auto it = read.consumers.find(o.key); it != read.consumers.end())
      for (uint32_t c : it->second) {
        const int64_t start = builder.op(c).start_ns;
        if (start < t.alloc_ns || start >= window_end_ns) continue;
        t.accesses.push_back(c);
        last_use = std::max(last_use, read.op_end_ns[c]);
      }
    t.free_ns = last_use;
    builder.add_tensor(std::move(t));
  }
}

// The allocators' own peaks, the reported one, and a note per allocator on
// its allocation records (replayed for their live peak) and op peaks.
void report_allocators(StepRead& read, const AllocatorSpaces& spaces, TraceBuilder& builder,
                       Trace& out) {
  for (const auto& [allocator, peak] : read.peaks)
    builder.report_allocator(allocator, spaces.space(allocator), spaces.device(allocator), peak);
  for (const Tensor& t : out.tensors)
    builder.report_allocator(t.allocator, t.space, t.device, std::nullopt);
  if (const auto it = read.peaks.find(spaces.device_allocator()); it != read.peaks.end())
    out.reported_peak_device_bytes = it->second;
  for (auto& [allocator, list] : read.records) {
    std::stable_sort(list.begin(), list.end(), [](const Record& a, const Record& b) {
      return a.time_ns != b.time_ns ? a.time_ns < b.time_ns : a.bytes < b.bytes;
    });
    int64_t live = 0, peak = 0;
    for (const Record& r : list) {
      live += r.bytes;
      peak = std::max(peak, live);
    }
    builder.note(fmt::format("{}: {} allocation records, {} bytes at most live among them; "
                             "the largest peak of one op is {} bytes",
                             allocator, list.size(), peak, read.op_peaks[allocator]));
  }
}

}  // namespace

bool import_step_stats(std::string_view bytes, std::string_view name, bool run_metadata,
                       Trace& out, std::string& error) {
  pb::StepStats step_stats;
  pb::RunMetadata metadata;
  if (!parse_message(bytes, name, run_metadata, step_stats, metadata, error)) return false;
  const pb::StepStats& stats = run_metadata ? metadata.step_stats() : step_stats;
  out.format = TraceFormat::tf1_step_stats;
  TraceBuilder builder(out);

  StepRead read;
  read_devices(stats, builder, read);

  AllocatorSpaces spaces;
  for (const Output& o : read.outputs)
    spaces.count(o.description.allocator_name(),
                 static_cast<uint64_t>(std::max<int64_t>(
                     std::max(o.description.allocated_bytes(), o.description.requested_bytes()), 0)));
  for (const auto& [allocator, peak] : read.peaks) spaces.count(allocator, 0);
  spaces.decide(builder);

  add_tensors(read, spaces, builder);
  report_allocators(read, spaces, builder, out);
  // One StepStats is one step.
  if (read.first_ns <= read.last_ns) builder.add_iteration(read.first_ns, read.last_ns + 1);
  builder.note("tensors end at the end of their last consumer: StepStats records no frees");
  builder.finish();
  return true;
}

}  // namespace cuswap::trace::import
