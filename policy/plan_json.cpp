// Plan <-> JSON (docs/plan-format.md). Written with fmt, read with
// simdjson's DOM; every bad key is one line naming the file and the key.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <simdjson.h>

#include "policy/plan.h"
#include "tracer/json_quote.h"

namespace cuswap::policy {

using trace::json_string;

namespace {

std::string op_json(const OpRef& op) {
  return fmt::format(R"({{"name": {}, "ordinal": {}, "index": {}}})", json_string(op.name),
                     op.ordinal, op.index);
}

}  // namespace

std::string write_plan_json(const Plan& plan) {
  std::string out = "{\n";
  out += fmt::format("  \"version\": {},\n", plan.version);
  out += fmt::format("  \"planner\": {},\n", json_string(plan.planner));
  out += fmt::format("  \"mode\": {},\n", json_string(mode_name(plan.mode)));
  out += fmt::format("  \"source\": {},\n", json_string(plan.source));
  if (plan.iteration != trace::kNoIteration)
    out += fmt::format("  \"iteration\": {},\n", plan.iteration);
  out += fmt::format("  \"device\": {},\n", plan.device);
  out += fmt::format("  \"budget_bytes\": {},\n", plan.budget_bytes);
  out += fmt::format("  \"link\": {},\n", json_string(plan.link));
  out += fmt::format("  \"time_scale\": {},\n", plan.time_scale);
  if (plan.predicted)
    out += fmt::format(
        "  \"predicted\": {{\"peak_bytes\": {}, \"iteration_ns\": {}, \"infinite_memory_ns\": "
        "{}}},\n",
        plan.predicted->peak_bytes, plan.predicted->iteration_ns,
        plan.predicted->infinite_memory_ns);
  out += "  \"entries\": [";
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    const PlanEntry& e = plan.entries[i];
    out += i == 0 ? "\n" : ",\n";
    out += fmt::format(
        "    {{\"tensor\": {{\"resident_at_start\": {}, \"ordinal\": {}, \"size_bytes\": {}, "
        "\"device\": {}, \"name\": {}}},\n     \"evict_after\": {},\n     \"prefetch_at\": {},\n"
        "     \"next_use\": {},\n     \"group\": {}}}",
        e.tensor.resident_at_start, e.tensor.ordinal, e.tensor.size_bytes, e.tensor.device,
        json_string(e.tensor.name), e.leaves ? op_json(e.evict_after) : "null",
        e.returns ? op_json(e.prefetch_at) : "null", e.returns ? op_json(e.next_use) : "null",
        e.group);
  }
  out += plan.entries.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

namespace {

using simdjson::dom::element;
using simdjson::dom::object;

// Reads one key of an object with the type the format asks for; on failure
// leaves one line in `error` naming the file and the key path.
class Reader {
 public:
  Reader(std::string_view name, std::string& error) : name_(name), error_(error) {}

  bool fail(std::string_view path, std::string_view expected) {
    error_ = fmt::format("{}: key {}: expected {}", name_, path, expected);
    return false;
  }
  bool get(object obj, std::string_view key, std::string_view path, element& out,
           bool required = true) {
    if (obj[key].get(out) == simdjson::SUCCESS) return true;
    if (!required) return false;
    return fail(path, "a value (missing)");
  }
  bool u64(object obj, std::string_view key, std::string_view path, uint64_t& out) {
    element e;
    if (!get(obj, key, path, e)) return false;
    if (e.get_uint64().get(out) != simdjson::SUCCESS) return fail(path, "an unsigned integer");
    return true;
  }
  bool u32(object obj, std::string_view key, std::string_view path, uint32_t& out) {
    uint64_t v = 0;
    if (!u64(obj, key, path, v)) return false;
    if (v > UINT32_MAX) return fail(path, "an integer below 2^32");
    out = static_cast<uint32_t>(v);
    return true;
  }
  bool i64(object obj, std::string_view key, std::string_view path, int64_t& out) {
    element e;
    if (!get(obj, key, path, e)) return false;
    if (e.get_int64().get(out) != simdjson::SUCCESS) return fail(path, "an integer");
    return true;
  }
  bool str(object obj, std::string_view key, std::string_view path, std::string& out) {
    element e;
    if (!get(obj, key, path, e)) return false;
    std::string_view v;
    if (e.get_string().get(v) != simdjson::SUCCESS) return fail(path, "a string");
    out = v;
    return true;
  }
  bool obj(object parent, std::string_view key, std::string_view path, object& out) {
    element e;
    if (!get(parent, key, path, e)) return false;
    if (e.get_object().get(out) != simdjson::SUCCESS) return fail(path, "an object");
    return true;
  }
  bool op(object parent, std::string_view key, const std::string& prefix, OpRef& out) {
    const std::string path = prefix + "." + std::string(key);
    object o;
    return obj(parent, key, path, o) && str(o, "name", path + ".name", out.name) &&
           u32(o, "ordinal", path + ".ordinal", out.ordinal) &&
           u32(o, "index", path + ".index", out.index);
  }

 private:
  std::string_view name_;
  std::string& error_;
};

bool read_entry(Reader& r, element item, const std::string& path, PlanEntry& e) {
  object entry, tensor;
  if (item.get_object().get(entry) != simdjson::SUCCESS) return r.fail(path, "an object");
  if (!r.obj(entry, "tensor", path + ".tensor", tensor)) return false;
  element flag;
  if (!r.get(tensor, "resident_at_start", path + ".tensor.resident_at_start", flag)) return false;
  if (flag.get_bool().get(e.tensor.resident_at_start) != simdjson::SUCCESS)
    return r.fail(path + ".tensor.resident_at_start", "true or false");
  int64_t device = 0;
  if (!r.u32(tensor, "ordinal", path + ".tensor.ordinal", e.tensor.ordinal) ||
      !r.u64(tensor, "size_bytes", path + ".tensor.size_bytes", e.tensor.size_bytes) ||
      !r.i64(tensor, "device", path + ".tensor.device", device))
    return false;
  e.tensor.device = static_cast<int>(device);
  element name;
  if (r.get(tensor, "name", "", name, false)) {
    std::string_view v;
    if (name.get_string().get(v) != simdjson::SUCCESS)
      return r.fail(path + ".tensor.name", "a string");
    e.tensor.name = v;
  }
  // Note [Carried tensors]: null evict_after, or null prefetch_at and
  // next_use, for an entry with one side only.
  const auto is_null = [&](std::string_view key) {
    element v;
    return entry[key].get(v) == simdjson::SUCCESS && v.is_null();
  };
  e.leaves = !is_null("evict_after");
  e.returns = !(is_null("prefetch_at") && is_null("next_use"));
  return (!e.leaves || r.op(entry, "evict_after", path, e.evict_after)) &&
         (!e.returns || (r.op(entry, "prefetch_at", path, e.prefetch_at) &&
                         r.op(entry, "next_use", path, e.next_use))) &&
         r.u32(entry, "group", path + ".group", e.group);
}

}  // namespace

bool read_plan_json(std::string_view json, std::string_view name, Plan& out, std::string& error) {
  out = Plan{};
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(json);
  element doc;
  if (const auto err = parser.parse(padded).get(doc); err != simdjson::SUCCESS) {
    error = fmt::format("{}: not JSON: {}", name, simdjson::error_message(err));
    return false;
  }
  Reader r(name, error);
  object root;
  if (doc.get_object().get(root) != simdjson::SUCCESS) return r.fail("(top level)", "an object");
  uint64_t version = 0;
  if (!r.u64(root, "version", "version", version)) return false;
  if (version != kPlanVersion)
    return r.fail("version", fmt::format("{} (this cuswap reads plan version {})", kPlanVersion,
                                         kPlanVersion));
  out.version = static_cast<int>(version);
  std::string mode;
  int64_t device = 0;
  if (!r.str(root, "planner", "planner", out.planner) || !r.str(root, "mode", "mode", mode) ||
      !r.str(root, "source", "source", out.source) || !r.i64(root, "device", "device", device) ||
      !r.u64(root, "budget_bytes", "budget_bytes", out.budget_bytes) ||
      !r.str(root, "link", "link", out.link))
    return false;
  out.device = static_cast<int>(device);
  const std::optional<PlanMode> parsed_mode = parse_mode(mode);
  if (!parsed_mode) return r.fail("mode", "\"scheduled\", \"lru\" or \"ondemand\"");
  out.mode = *parsed_mode;
  element e;
  if (r.get(root, "iteration", "", e, false) &&
      !r.u32(root, "iteration", "iteration", out.iteration))
    return false;
  if (!r.get(root, "time_scale", "time_scale", e)) return false;
  if (e.get_double().get(out.time_scale) != simdjson::SUCCESS || !(out.time_scale > 0))
    return r.fail("time_scale", "a positive number");
  object predicted;
  if (r.get(root, "predicted", "", e, false)) {
    PlanPrediction p;
    if (!r.obj(root, "predicted", "predicted", predicted) ||
        !r.u64(predicted, "peak_bytes", "predicted.peak_bytes", p.peak_bytes) ||
        !r.i64(predicted, "iteration_ns", "predicted.iteration_ns", p.iteration_ns) ||
        !r.i64(predicted, "infinite_memory_ns", "predicted.infinite_memory_ns",
               p.infinite_memory_ns))
      return false;
    out.predicted = p;
  }
  simdjson::dom::array entries;
  if (!r.get(root, "entries", "entries", e)) return false;
  if (e.get_array().get(entries) != simdjson::SUCCESS) return r.fail("entries", "an array");
  size_t i = 0;
  for (element item : entries) {
    PlanEntry entry;
    if (!read_entry(r, item, fmt::format("entries[{}]", i), entry)) return false;
    out.entries.push_back(std::move(entry));
    ++i;
  }
  if (out.mode != PlanMode::scheduled && !out.entries.empty())
    return r.fail("entries", fmt::format("none for mode \"{}\"", mode));
  return true;
}

bool read_plan_file(const std::string& path, Plan& out, std::string& error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = fmt::format("{}: cannot open: {}", path, std::strerror(errno));
    return false;
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return read_plan_json(bytes.str(), path, out, error);
}

}  // namespace cuswap::policy
