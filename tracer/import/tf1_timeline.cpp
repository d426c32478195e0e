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
#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "tracer/import/builder.h"
#include "tracer/import/json_importers.h"
#include "tracer/import/tf_common.h"

namespace cuswap::trace::import {
namespace {

struct RawTensor {
  std::string name;  // as the object is named: "node" or "node:i"
  int64_t alloc_ns = 0;
  int64_t pid = 0;
  uint64_t object_id = 0;
  bool described = false;
  TensorDescriptionText description;
  std::optional<int64_t> delete_ns;
};

// What a pid's events are (Note [GPU timelines]).
enum class Lane : uint8_t {
  executor,   // "/job:…/device:GPU:0", "/job:…/cpu:0": ops as the executor ran them
  stream,     // "/device:GPU:0/stream:N": kernels and copies as the device ran them
  aggregate,  // "/device:GPU:0/stream:all", "/device:GPU:0/memcpy": repeats of stream lanes
};

struct Device {
  std::string name;  // "/job:…/device:GPU:0"
  bool gpu = false;
  int ordinal = 0;
  Lane lane = Lane::executor;
  uint32_t stream = 0;  // "/device:GPU:0/stream:N"
};

// An X event, kept until every pid is known.
struct RawOp {
  Op op;
  int64_t pid = 0;
  std::vector<std::string> inputs;
};

Device parse_device(std::string_view process_name) {
  Device d;
  std::string_view n = process_name;
  for (std::string_view suffix : {" Compute", " Tensors"})
    if (n.ends_with(suffix)) n.remove_suffix(suffix.size());
  d.name = n;
  std::string low(n);
  for (char& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  d.gpu = low.find("gpu:") != std::string::npos;
  d.ordinal = d.gpu ? device_ordinal(low.substr(0, low.find("/stream:"))) : 0;
  if (const size_t at = low.find("/stream:"); at != std::string::npos) {
    const std::string rest = low.substr(at + 8);
    if (rest == "all") {
      d.lane = Lane::aggregate;
    } else {
      d.lane = Lane::stream;
      d.stream = static_cast<uint32_t>(std::strtoul(rest.c_str(), nullptr, 10));
    }
  } else if (d.gpu && low.ends_with("/memcpy")) {
    d.lane = Lane::aggregate;
  }
  return d;
}

// "node" and "node:0" name the same tensor.
std::string tensor_key(std::string_view name) {
  const size_t colon = name.rfind(':');
  if (colon != std::string_view::npos && colon + 1 < name.size() &&
      name.find_first_not_of("0123456789", colon + 1) == std::string_view::npos)
    return std::string(name);
  return std::string(name) + ":0";
}

std::string_view node_of(std::string_view key) { return key.substr(0, key.rfind(':')); }

}  // namespace

bool import_tf1_timeline(simdjson::dom::array events, const JsonPath& path,
                         const JsonErrors& errors, Trace& out) {
  out.format = TraceFormat::tf1_timeline;
  TraceBuilder builder(out);
  std::unordered_map<int64_t, Device> devices;  // by pid
  std::vector<RawOp> raw_ops;
  std::vector<RawTensor> tensors;
  std::unordered_map<uint64_t, size_t> last_by_object;  // object id -> tensors index
  std::unordered_map<std::string, int64_t> deletes;     // name -> D time
  std::map<std::string, uint64_t> counter_peaks;

  size_t i = 0;
  for (simdjson::dom::element e : events) {
    const JsonPath ep = path.at(i++);
    simdjson::dom::object ev;
    if (!errors.object(e, ep, ev)) return false;
    simdjson::dom::element field;
    std::string_view ph;
    if (!errors.member(ev, "ph", ep, field) || !errors.string(field, ep.at("ph"), ph)) return false;
    if (ph.size() != 1) return errors.fail(ep.at("ph"), "a one-letter event phase");
    int64_t pid = 0;
    if (ph != "C" && ph != "s" && ph != "t" && ph != "f") {
      if (!errors.member(ev, "pid", ep, field) || !errors.int64(field, ep.at("pid"), pid))
        return false;
    }
    switch (ph[0]) {
      case 'M': {
        std::string_view what;
        if (!errors.member(ev, "name", ep, field) || !errors.string(field, ep.at("name"), what))
          return false;
        if (what != "process_name") break;
        simdjson::dom::element args, name;
        std::string_view process;
        if (ev.at_key("args").get(args) != simdjson::SUCCESS || !find_member(args, "name", name))
          return errors.fail(ep.at("args"), "an object with the key \"name\"");
        if (!errors.string(name, ep.at("args").at("name"), process)) return false;
        devices[pid] = parse_device(process);
        break;
      }
      case 'X': {
        std::string_view category;
        if (ev.at_key("cat").get(field) == simdjson::SUCCESS &&
            !errors.string(field, ep.at("cat"), category))
          return false;
        if (!category.empty() && category != "Op") break;
        Op op;
        int64_t dur_ns = 0;
        if (!errors.member(ev, "ts", ep, field) || !trace_time_ns(field, ep.at("ts"), errors, op.start_ns))
          return false;
        if (ev.at_key("dur").get(field) == simdjson::SUCCESS &&
            !trace_time_ns(field, ep.at("dur"), errors, dur_ns))
          return false;
        op.duration_ns = std::max<int64_t>(dur_ns, 0);
        std::string_view type;
        if (!errors.member(ev, "name", ep, field) || !errors.string(field, ep.at("name"), type))
          return false;
        op.type = type;
        int64_t tid = 0;
        if (ev.at_key("tid").get(field) == simdjson::SUCCESS && !errors.int64(field, ep.at("tid"), tid))
          return false;
        op.stream = static_cast<uint32_t>(tid);
        std::vector<std::string> inputs;
        simdjson::dom::object args;
        op.name = op.type;
        if (ev.at_key("args").get(field) == simdjson::SUCCESS) {
          if (!errors.object(field, ep.at("args"), args)) return false;
          for (auto [key, value] : args) {
            std::string_view s;
            if (key == "name") {
              if (!errors.string(value, ep.at("args").at("name"), s)) return false;
              op.name = s;
            } else if (key == "op") {
              if (!errors.string(value, ep.at("args").at("op"), s)) return false;
              op.type = s;
            } else if (key.starts_with("input")) {
              if (!errors.string(value, ep.at("args").at(key), s)) return false;
              if (!s.empty() && s[0] != '^') inputs.push_back(tensor_key(s.substr(0, s.find(' '))));
            }
          }
        }
        raw_ops.push_back({std::move(op), pid, std::move(inputs)});
        break;
      }
      case 'N': {
        RawTensor t;
        std::string_view name;
        if (!errors.member(ev, "name", ep, field) || !errors.string(field, ep.at("name"), name) ||
            !errors.member(ev, "ts", ep, field) || !trace_time_ns(field, ep.at("ts"), errors, t.alloc_ns) ||
            !errors.member(ev, "id", ep, field) || !errors.uint64(field, ep.at("id"), t.object_id))
          return false;
        t.name = name;
        t.pid = pid;
        last_by_object[t.object_id] = tensors.size();
        tensors.push_back(std::move(t));
        break;
      }
      case 'O': {
        uint64_t id = 0;
        std::string_view name;
        if (!errors.member(ev, "id", ep, field) || !errors.uint64(field, ep.at("id"), id) ||
            !errors.member(ev, "name", ep, field) || !errors.string(field, ep.at("name"), name))
          return false;
        const auto it = last_by_object.find(id);
        if (it == last_by_object.end() || tensors[it->second].name != name)
          return errors.fail(ep.at("id"), "the id of a tensor created by an earlier \"N\" event");
        simdjson::dom::element desc;
        // Each link of a JsonPath must outlive the ones built on it.
        const JsonPath args_path = ep.at("args");
        const JsonPath snapshot_path = args_path.at("snapshot");
        const JsonPath dp = snapshot_path.at("tensor_description");
        if (ev.at_pointer("/args/snapshot/tensor_description").get(desc) != simdjson::SUCCESS)
          return errors.fail(ep.at("args"), "/snapshot/tensor_description in the args");
        std::string_view text;
        if (!errors.string(desc, dp, text)) return false;
        RawTensor& t = tensors[it->second];
        size_t offset = 0;
        std::string what;
        if (!parse_tensor_description(text, t.description, offset, what))
          return errors.fail(dp, fmt::format("a TensorDescription in text format: at character "
                                             "{}, {}", offset, what));
        t.described = true;
        break;
      }
      case 'D': {
        std::string_view name;
        int64_t ts = 0;
        if (!errors.member(ev, "name", ep, field) || !errors.string(field, ep.at("name"), name) ||
            !errors.member(ev, "ts", ep, field) || !trace_time_ns(field, ep.at("ts"), errors, ts))
          return false;
        deletes[std::string(name)] = ts;
        break;
      }
      case 'C': {
        std::string_view name;
        simdjson::dom::object args;
        if (!errors.member(ev, "name", ep, field) || !errors.string(field, ep.at("name"), name) ||
            !errors.member(ev, "args", ep, field) || !errors.object(field, ep.at("args"), args))
          return false;
        for (auto [key, value] : args) {
          uint64_t bytes = 0;
          double as_double = 0;
          if (!errors.number(value, ep.at("args").at(key), as_double)) return false;
          bytes = as_double > 0 ? static_cast<uint64_t>(std::min(as_double, 1.8e19)) : 0;
          uint64_t& peak = counter_peaks[std::string(key)];
          peak = std::max(peak, bytes);
        }
        break;
      }
      default: break;  // flows, metadata of other kinds, instant events
    }
  }

  // Devices: GPU ops are on their ordinal and CPU ops on the host, unless
  // there is no GPU at all, when the CPU stands in for the device.
  bool any_gpu_device = false;
  for (const auto& [pid, d] : devices) any_gpu_device |= d.gpu;
  const auto device_of = [&](int64_t pid) -> const Device* {
    const auto it = devices.find(pid);
    return it == devices.end() ? nullptr : &it->second;
  };

  // Note [GPU timelines]: kernels join their executor op by node name.
  // A kernel belongs to the latest run of its node on the same device that
  // the executor started before the kernel started.
  std::map<std::pair<int, std::string_view>, std::vector<size_t>> runs;  // executor ops
  for (size_t r = 0; r < raw_ops.size(); ++r) {
    const Device* d = device_of(raw_ops[r].pid);
    if (d && d->gpu && d->lane == Lane::executor)
      runs[{d->ordinal, raw_ops[r].op.name}].push_back(r);
  }
  for (auto& [key, list] : runs)
    std::stable_sort(list.begin(), list.end(), [&](size_t a, size_t b) {
      return raw_ops[a].op.start_ns < raw_ops[b].op.start_ns;
    });
  struct DeviceTime {
    int64_t start_ns = INT64_MAX, end_ns = INT64_MIN;
    uint32_t stream = 0;
  };
  std::vector<DeviceTime> device_time(raw_ops.size());
  std::vector<bool> keep(raw_ops.size(), true);
  uint64_t aggregate_events = 0, joined_kernels = 0, copies = 0;
  for (size_t r = 0; r < raw_ops.size(); ++r) {
    const Device* d = device_of(raw_ops[r].pid);
    if (!d || !d->gpu || d->lane == Lane::executor) continue;
    if (d->lane == Lane::aggregate) {
      keep[r] = false;
      ++aggregate_events;
      continue;
    }
    Op& op = raw_ops[r].op;
    op.stream = d->stream;
    if (op.type.starts_with("MEMCPYHtoD") || op.type.starts_with("MEMCPYDtoH") ||
        op.type.starts_with("MEMCPYPtoP")) {
      op.is_copy = true;
      ++copies;
      continue;
    }
    const auto it = runs.find({d->ordinal, op.name});
    if (it == runs.end()) continue;  // a kernel of no executor op: kept on its stream
    size_t run = it->second.front();
    for (size_t candidate : it->second) {
      if (raw_ops[candidate].op.start_ns > op.start_ns) break;
      run = candidate;
    }
    DeviceTime& t = device_time[run];
    if (op.start_ns < t.start_ns) t.stream = d->stream;
    t.start_ns = std::min(t.start_ns, op.start_ns);
    t.end_ns = std::max(t.end_ns, op.start_ns + op.duration_ns);
    keep[r] = false;
    ++joined_kernels;
  }

  // The ops, in source order; an executor op with kernels takes their
  // device time, and its host time stays for joining tensors.
  std::vector<int64_t> op_host_start_ns, op_end_ns;
  std::vector<std::string> op_node;
  std::vector<std::vector<std::string>> op_inputs;
  std::vector<bool> on_device_clock;
  for (size_t r = 0; r < raw_ops.size(); ++r) {
    if (!keep[r]) continue;
    RawOp& raw = raw_ops[r];
    const Device* d = device_of(raw.pid);
    Op op = std::move(raw.op);
    op.device = d ? (d->gpu ? d->ordinal : (any_gpu_device ? -1 : 0)) : (any_gpu_device ? -1 : 0);
    if (d && d->lane == Lane::stream) op.stream = d->stream;
    op_host_start_ns.push_back(op.start_ns);
    const DeviceTime& t = device_time[r];
    on_device_clock.push_back(t.end_ns != INT64_MIN || (d && d->lane == Lane::stream));
    if (t.end_ns != INT64_MIN) {
      op.start_ns = t.start_ns;
      op.duration_ns = t.end_ns - t.start_ns;
      op.stream = t.stream;
    }
    op_end_ns.push_back(op.start_ns + op.duration_ns);
    op_node.push_back(op.name);
    op_inputs.push_back(std::move(raw.inputs));
    builder.add_op(std::move(op));
  }
  // Producers by node name, consumers by tensor key, each in time order.
  std::unordered_map<std::string_view, std::vector<uint32_t>> by_node;
  std::unordered_map<std::string_view, std::vector<uint32_t>> by_input;
  for (uint32_t op = 0; op < op_node.size(); ++op) {
    by_node[op_node[op]].push_back(op);
    for (const std::string& in : op_inputs[op]) by_input[in].push_back(op);
  }
  auto by_start = [&](uint32_t a, uint32_t b) { return op_host_start_ns[a] < op_host_start_ns[b]; };
  for (auto& [k, v] : by_node) std::stable_sort(v.begin(), v.end(), by_start);
  for (auto& [k, v] : by_input) std::stable_sort(v.begin(), v.end(), by_start);

  // Instances of one name, in creation order, for the consumer windows.
  std::unordered_map<std::string, std::vector<size_t>> instances;
  std::vector<size_t> instance_index(tensors.size());
  for (size_t t = 0; t < tensors.size(); ++t) {
    std::vector<size_t>& list = instances[tensors[t].name];
    instance_index[t] = list.size();
    list.push_back(t);
  }

  AllocatorSpaces spaces;
  for (const RawTensor& t : tensors)
    if (t.described && t.description.has_allocation)
      spaces.count(t.description.allocator_name,
                   std::max(t.description.allocated_bytes, t.description.requested_bytes));
  for (const auto& [name, peak] : counter_peaks) spaces.count(name, 0);
  spaces.decide(builder);

  uint64_t undescribed = 0;
  uint64_t derived_frees = 0, device_lifetimes = 0;
  for (size_t index = 0; index < tensors.size(); ++index) {
    const RawTensor& raw = tensors[index];
    const std::string& name = raw.name;
    const std::vector<size_t>& list = instances[name];
    const size_t n = instance_index[index];
    const std::string key = tensor_key(name);
    const std::string_view node = node_of(key);
    {
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
      t.space = spaces.space(t.allocator);
      t.device = spaces.device(t.allocator);
      t.address = raw.description.ptr;
      t.alloc_ns = raw.alloc_ns;
      const int64_t window_end =
          n + 1 < list.size() ? tensors[list[n + 1]].alloc_ns : INT64_MAX;
      int64_t last_use_ns = raw.alloc_ns;
      if (const auto it = by_node.find(node); it != by_node.end()) {
        // The producer started when the tensor was created (same timestamp).
        for (uint32_t op : it->second) {
          if (op_host_start_ns[op] > raw.alloc_ns) break;
          t.producer = op;
        }
        if (t.producer != kNoOp) last_use_ns = std::max(last_use_ns, op_end_ns[t.producer]);
      }
      if (const auto it = by_input.find(key); it != by_input.end()) {
        for (uint32_t op : it->second) {
          const int64_t start = op_host_start_ns[op];
          if (start < raw.alloc_ns) continue;
          if (start >= window_end) break;
          t.accesses.push_back(op);
          last_use_ns = std::max(last_use_ns, op_end_ns[op]);
        }
      }
      // On a GPU the tensor lives from its producer's first kernel to the
      // end of its last consumer's last kernel; the executor's D is a host time.
      bool device_lifetime = t.producer != kNoOp && on_device_clock[t.producer];
      for (uint32_t op : t.accesses) device_lifetime |= on_device_clock[op];
      if (device_lifetime) {
        if (t.producer != kNoOp && on_device_clock[t.producer])
          t.alloc_ns = builder.op(t.producer).start_ns;
        t.free_ns = std::max(last_use_ns, t.alloc_ns);
        ++device_lifetimes;
      } else if (n + 1 == list.size() && deletes.count(name)) {
        t.free_ns = std::max(deletes[name], raw.alloc_ns);
      } else {
        t.free_ns = last_use_ns;
        ++derived_frees;
      }
      builder.add_tensor(std::move(t));
    }
  }

  for (const auto& [name, peak] : counter_peaks)
    builder.report_allocator(name, spaces.space(name), spaces.device(name), peak);
  for (const Tensor& t : out.tensors)
    builder.report_allocator(t.allocator, t.space, t.device, std::nullopt);
  if (const auto it = counter_peaks.find(spaces.device_allocator()); it != counter_peaks.end())
    out.reported_peak_device_bytes = it->second;

  // One timeline is one step.
  if (!out.ops.empty()) {
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (size_t op = 0; op < out.ops.size(); ++op) {
      first = std::min(first, out.ops[op].start_ns);
      last = std::max(last, op_end_ns[op]);
    }
    builder.add_iteration(first, last + 1);
  }
  if (aggregate_events)
    builder.note(fmt::format("{} events of the aggregate lanes (stream:all, memcpy) dropped: they "
                             "repeat the stream lanes", aggregate_events));
  if (joined_kernels)
    builder.note(fmt::format("{} kernels joined to their executor ops: those ops take their "
                             "kernels' device time", joined_kernels));
  if (copies)
    builder.note(fmt::format("{} host-device copies on copy streams", copies));
  if (device_lifetimes)
    builder.note(fmt::format("{} tensors live on the device's clock, from their producer's first "
                             "kernel to their last consumer's last kernel", device_lifetimes));
  if (undescribed)
    builder.note(fmt::format("{} tensor objects without an allocation description (size 0)",
                             undescribed));
  if (derived_frees)
    builder.note(fmt::format("{} tensors end at their last use: the timeline deletes only the "
                             "last tensor of each name", derived_frees));
  builder.note("the allocator peaks are timeline.py's counters, summed from requested bytes");
  builder.finish();
  return true;
}

}  // namespace cuswap::trace::import
