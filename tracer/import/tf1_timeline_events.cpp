// The TF1 timeline's Chrome-trace events into raw records (tf1_timeline.h):
// one reader per event phase. What each phase holds is in tf1_timeline.cpp's
// header; this file only reads, and every error names the JSON pointer of
// the first value that is not as expected.
#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <fmt/format.h>

#include "tracer/import/json_importers.h"
#include "tracer/import/tf1_timeline.h"

namespace cuswap::trace::import::tf1 {
namespace {

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

// Reads one event at a time into `out`; `last_by_object` joins an `O`
// snapshot to the latest `N` of its object id.
class EventReader {
 public:
  EventReader(const JsonErrors& json_errors, TimelineEvents& events)
      : errors_(json_errors), out_(events) {}

  bool event(simdjson::dom::element e, const JsonPath& ep);

 private:
  bool process_name(simdjson::dom::object ev, const JsonPath& ep, int64_t pid);  // M
  bool op_event(simdjson::dom::object ev, const JsonPath& ep, int64_t pid);      // X
  bool op_args(simdjson::dom::element args_e, const JsonPath& ep, Op& op,
               std::vector<std::string>& inputs);
  bool tensor_created(simdjson::dom::object ev, const JsonPath& ep, int64_t pid);  // N
  bool tensor_snapshot(simdjson::dom::object ev, const JsonPath& ep);              // O
  bool tensor_deleted(simdjson::dom::object ev, const JsonPath& ep);               // D
  bool counters(simdjson::dom::object ev, const JsonPath& ep);                     // C

  const JsonErrors& errors_;
  TimelineEvents& out_;
  std::unordered_map<uint64_t, size_t> last_by_object_;  // object id -> tensors index
};

bool EventReader::event(simdjson::dom::element e, const JsonPath& ep) {
  simdjson::dom::object ev;
  if (!errors_.object(e, ep, ev)) return false;
  simdjson::dom::element field;
  std::string_view ph;
  if (!errors_.member(ev, "ph", ep, field) || !errors_.string(field, ep.at("ph"), ph)) return false;
  if (ph.size() != 1) return errors_.fail(ep.at("ph"), "a one-letter event phase");
  int64_t pid = 0;
  if (ph != "C" && ph != "s" && ph != "t" && ph != "f") {
    if (!errors_.member(ev, "pid", ep, field) || !errors_.int64(field, ep.at("pid"), pid))
      return false;
  }
  switch (ph[0]) {
    case 'M': return process_name(ev, ep, pid);
    case 'X': return op_event(ev, ep, pid);
    case 'N': return tensor_created(ev, ep, pid);
    case 'O': return tensor_snapshot(ev, ep);
    case 'D': return tensor_deleted(ev, ep);
    case 'C': return counters(ev, ep);
    default: return true;  // flows, metadata of other kinds, instant events
  }
}

// The process names say which device and lane each pid is.
bool EventReader::process_name(simdjson::dom::object ev, const JsonPath& ep, int64_t pid) {
  simdjson::dom::element field;
  std::string_view what;
  if (!errors_.member(ev, "name", ep, field) || !errors_.string(field, ep.at("name"), what))
    return false;
  if (what != "process_name") return true;
  simdjson::dom::element args, name;
  std::string_view process;
  if (ev.at_key("args").get(args) != simdjson::SUCCESS || !find_member(args, "name", name))
    return errors_.fail(ep.at("args"), "an object with the key \"name\"");
  if (!errors_.string(name, ep.at("args").at("name"), process)) return false;
  out_.devices[pid] = parse_device(process);
  return true;
}

bool EventReader::op_event(simdjson::dom::object ev, const JsonPath& ep, int64_t pid) {
  simdjson::dom::element field;
  std::string_view category;
  if (ev.at_key("cat").get(field) == simdjson::SUCCESS &&
      !errors_.string(field, ep.at("cat"), category))
    return false;
  if (!category.empty() && category != "Op") return true;
  Op op;
  int64_t dur_ns = 0;
  if (!errors_.member(ev, "ts", ep, field) ||
      !trace_time_ns(field, ep.at("ts"), errors_, op.start_ns))
    return false;
  if (ev.at_key("dur").get(field) == simdjson::SUCCESS &&
      !trace_time_ns(field, ep.at("dur"), errors_, dur_ns))
    return false;
  op.duration_ns = std::max<int64_t>(dur_ns, 0);
  std::string_view type;
  if (!errors_.member(ev, "name", ep, field) || !errors_.string(field, ep.at("name"), type))
    return false;
  op.type = type;
  int64_t tid = 0;
  if (ev.at_key("tid").get(field) == simdjson::SUCCESS && !errors_.int64(field, ep.at("tid"), tid))
    return false;
  op.stream = static_cast<uint32_t>(tid);
  std::vector<std::string> inputs;
  op.name = op.type;
  if (ev.at_key("args").get(field) == simdjson::SUCCESS && !op_args(field, ep, op, inputs))
    return false;
  out_.raw_ops.push_back({std::move(op), pid, std::move(inputs)});
  return true;
}

// args.name is the node, args.op its type, args.input* its data inputs
// ("^" marks a control input).
bool EventReader::op_args(simdjson::dom::element args_e, const JsonPath& ep, Op& op,
                          std::vector<std::string>& inputs) {
  simdjson::dom::object args;
  if (!errors_.object(args_e, ep.at("args"), args)) return false;
  for (auto [key, value] : args) {
    std::string_view s;
    if (key == "name") {
      if (!errors_.string(value, ep.at("args").at("name"), s)) return false;
      op.name = s;
    } else if (key == "op") {
      if (!errors_.string(value, ep.at("args").at("op"), s)) return false;
      op.type = s;
    } else if (key.starts_with("input")) {
      if (!errors_.string(value, ep.at("args").at(key), s)) return false;
      if (!s.empty() && s[0] != '^') inputs.push_back(tensor_key(s.substr(0, s.find(' '))));
    }
  }
  return true;
}

bool EventReader::tensor_created(simdjson::dom::object ev, const JsonPath& ep, int64_t pid) {
  simdjson::dom::element field;
  RawTensor t;
  std::string_view name;
  if (!errors_.member(ev, "name", ep, field) || !errors_.string(field, ep.at("name"), name) ||
      !errors_.member(ev, "ts", ep, field) ||
      !trace_time_ns(field, ep.at("ts"), errors_, t.alloc_ns) ||
      !errors_.member(ev, "id", ep, field) || !errors_.uint64(field, ep.at("id"), t.object_id))
    return false;
  t.name = name;
  t.pid = pid;
  last_by_object_[t.object_id] = out_.tensors.size();
  out_.tensors.push_back(std::move(t));
  return true;
}

// The snapshot describes the latest tensor created with its id and name.
bool EventReader::tensor_snapshot(simdjson::dom::object ev, const JsonPath& ep) {
  simdjson::dom::element field;
  uint64_t id = 0;
  std::string_view name;
  if (!errors_.member(ev, "id", ep, field) || !errors_.uint64(field, ep.at("id"), id) ||
      !errors_.member(ev, "name", ep, field) || !errors_.string(field, ep.at("name"), name))
    return false;
  const auto it = last_by_object_.find(id);
  if (it == last_by_object_.end() || out_.tensors[it->second].name != name)
    return errors_.fail(ep.at("id"), "the id of a tensor created by an earlier \"N\" event");
  simdjson::dom::element desc;
  // Each link of a JsonPath must outlive the ones built on it.
  const JsonPath args_path = ep.at("args");
  const JsonPath snapshot_path = args_path.at("snapshot");
  const JsonPath dp = snapshot_path.at("tensor_description");
  if (ev.at_pointer("/args/snapshot/tensor_description").get(desc) != simdjson::SUCCESS)
    return errors_.fail(ep.at("args"), "/snapshot/tensor_description in the args");
  std::string_view text;
  if (!errors_.string(desc, dp, text)) return false;
  RawTensor& t = out_.tensors[it->second];
  size_t offset = 0;
  std::string what;
  if (!parse_tensor_description(text, t.description, offset, what))
    return errors_.fail(dp, fmt::format("a TensorDescription in text format: at character "
                                        "{}, {}", offset, what));
  t.described = true;
  return true;
}

bool EventReader::tensor_deleted(simdjson::dom::object ev, const JsonPath& ep) {
  simdjson::dom::element field;
  std::string_view name;
  int64_t ts = 0;
  if (!errors_.member(ev, "name", ep, field) || !errors_.string(field, ep.at("name"), name) ||
      !errors_.member(ev, "ts", ep, field) || !trace_time_ns(field, ep.at("ts"), errors_, ts))
    return false;
  out_.deletes[std::string(name)] = ts;
  return true;
}

// Each counter's maximum is the source's own peak for that allocator.
bool EventReader::counters(simdjson::dom::object ev, const JsonPath& ep) {
  simdjson::dom::element field;
  std::string_view name;
  simdjson::dom::object args;
  if (!errors_.member(ev, "name", ep, field) || !errors_.string(field, ep.at("name"), name) ||
      !errors_.member(ev, "args", ep, field) || !errors_.object(field, ep.at("args"), args))
    return false;
  for (auto [key, value] : args) {
    uint64_t bytes = 0;
    double as_double = 0;
    if (!errors_.number(value, ep.at("args").at(key), as_double)) return false;
    bytes = as_double > 0 ? static_cast<uint64_t>(std::min(as_double, 1.8e19)) : 0;
    uint64_t& peak = out_.counter_peaks[std::string(key)];
    peak = std::max(peak, bytes);
  }
  return true;
}

}  // namespace

std::string tensor_key(std::string_view name) {
  const size_t colon = name.rfind(':');
  if (colon != std::string_view::npos && colon + 1 < name.size() &&
      name.find_first_not_of("0123456789", colon + 1) == std::string_view::npos)
    return std::string(name);
  return std::string(name) + ":0";
}

bool read_timeline_events(simdjson::dom::array events, const JsonPath& path,
                          const JsonErrors& errors, TimelineEvents& out) {
  EventReader reader(errors, out);
  size_t i = 0;
  for (simdjson::dom::element e : events)
    if (!reader.event(e, path.at(i++))) return false;
  return true;
}

}  // namespace cuswap::trace::import::tf1
