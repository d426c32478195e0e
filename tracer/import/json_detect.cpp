// import_json: parse once with simdjson, decide the format from the keys and
// the events, and hand the document to its importer (json_importers.h).
//
// Chrome traces are told apart by their events: PyTorch writes `cpu_op`,
// `user_annotation`, kernel categories or `[memory]` instants (and a
// schemaVersion); TensorFlow 1 timelines write `Op` and `Tensor` categories
// and an "Allocators" process.
#include <fmt/format.h>

#include "tracer/import/builder.h"
#include "tracer/import/importers.h"
#include "tracer/import/json_importers.h"

namespace cuswap::trace::import {
namespace {

enum class ChromeKind { unknown, tf1, torch };

ChromeKind classify_chrome(simdjson::dom::array events) {
  for (simdjson::dom::element e : events) {
    simdjson::dom::element field;
    std::string_view s;
    if (find_member(e, "cat", field) && field.get_string().get(s) == simdjson::SUCCESS) {
      if (s == "Op" || s == "Tensor") return ChromeKind::tf1;
      if (s == "cpu_op" || s == "Operator" || s == "user_annotation" || s == "kernel" ||
          s == "Kernel" || s == "cpu_instant_event" || s == "gpu_memcpy" || s == "gpu_memset")
        return ChromeKind::torch;
    }
    if (find_member(e, "name", field) && field.get_string().get(s) == simdjson::SUCCESS) {
      if (s == "[memory]" || s.starts_with("ProfilerStep#")) return ChromeKind::torch;
      if (s == "process_name") {
        simdjson::dom::element args, name;
        std::string_view process;
        if (find_member(e, "args", args) && find_member(args, "name", name) &&
            name.get_string().get(process) == simdjson::SUCCESS && process == "Allocators")
          return ChromeKind::tf1;
      }
    }
  }
  return ChromeKind::unknown;
}

bool import_chrome(simdjson::dom::array events, const JsonPath& path, bool torch_hint,
                   const JsonErrors& errors, Trace& out) {
  switch (classify_chrome(events)) {
    case ChromeKind::tf1: return import_tf1_timeline(events, path, errors, out);
    case ChromeKind::torch: return import_torch_profiler(events, path, errors, out);
    case ChromeKind::unknown:
      if (torch_hint) return import_torch_profiler(events, path, errors, out);
      return errors.fail(path, "TensorFlow 1 ops (cat \"Op\") or PyTorch events (cpu_op, "
                               "[memory]) among the trace events");
  }
  return false;
}

}  // namespace

bool trace_time_ns(simdjson::dom::element e, const JsonPath& p, const JsonErrors& errors,
                   int64_t& out_ns) {
  if (e.type() == simdjson::dom::element_type::INT64) {
    out_ns = micros_to_ns(e.get_int64().value_unsafe());
    return true;
  }
  double micros = 0;
  if (!errors.number(e, p, micros)) return false;
  out_ns = micros_to_ns(micros);
  return true;
}

bool import_json(std::string_view bytes, std::string_view name, const ImportOptions&,
                 Trace& out, std::string& error) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (!parse_json(bytes, name, parser, root, error)) return false;
  const JsonErrors errors(name, error);
  const JsonPath top;
  simdjson::dom::array events;
  if (root.get_array().get(events) == simdjson::SUCCESS)  // the bare-array Chrome trace
    return import_chrome(events, top, false, errors, out);
  simdjson::dom::object object;
  if (!errors.object(root, top, object)) return false;
  simdjson::dom::element field;
  if (object.at_key("traceEvents").get(field) == simdjson::SUCCESS) {
    if (!errors.array(field, top.at("traceEvents"), events)) return false;
    const bool torch_hint = object.at_key("schemaVersion").error() == simdjson::SUCCESS ||
                            object.at_key("deviceProperties").error() == simdjson::SUCCESS;
    return import_chrome(events, top.at("traceEvents"), torch_hint, errors, out);
  }
  if (object.at_key("memoryProfilePerAllocator").error() == simdjson::SUCCESS)
    return import_tf2_memory_profile(object, errors, out);
  if (object.at_key("device_traces").error() == simdjson::SUCCESS ||
      object.at_key("segments").error() == simdjson::SUCCESS)
    return import_torch_snapshot(object, errors, out);
  return errors.fail(top, "a trace: an object with traceEvents (Chrome trace), "
                          "memoryProfilePerAllocator (TensorFlow 2 memory profile) or "
                          "segments/device_traces (PyTorch memory snapshot)");
}

}  // namespace cuswap::trace::import
