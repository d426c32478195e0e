// The JSON importers, each over a document already parsed by import_json
// (json_detect.cpp), which also decided the format.
#pragma once

#include <simdjson.h>

#include "tracer/import/import.h"
#include "tracer/import/json_util.h"

namespace cuswap::trace::import {

// Chrome-trace events: `events` is the traceEvents array at `path`.
[[nodiscard]] bool import_tf1_timeline(simdjson::dom::array events, const JsonPath& path,
                                       const JsonErrors& errors, Trace& out);
[[nodiscard]] bool import_torch_profiler(simdjson::dom::array events, const JsonPath& path,
                                         const JsonErrors& errors, Trace& out);
// Whole documents.
[[nodiscard]] bool import_tf2_memory_profile(simdjson::dom::object root, const JsonErrors& errors,
                                             Trace& out);
[[nodiscard]] bool import_torch_snapshot(simdjson::dom::object root, const JsonErrors& errors,
                                         Trace& out);

// A Chrome-trace time (microseconds, integer or not) in nanoseconds.
[[nodiscard]] bool trace_time_ns(simdjson::dom::element e, const JsonPath& p,
                                 const JsonErrors& errors, int64_t& out_ns);

}  // namespace cuswap::trace::import
