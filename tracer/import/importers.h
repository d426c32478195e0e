// The importers behind import_trace, one per format, each over bytes already
// inflated; import.cpp detects the format and dispatches. Each fills `out`
// through a TraceBuilder (builder.h) and returns false with one line in
// `error` on bad input, never throwing.
#pragma once

#include <string>
#include <string_view>

#include "tracer/import/import.h"

namespace cuswap::trace::import {

// What the JSON sniffing in import.cpp decided; the importers re-parse.
[[nodiscard]] bool import_cst(std::string_view bytes, std::string_view name,
                              const ImportOptions& options, Trace& out, std::string& error);
[[nodiscard]] bool import_json(std::string_view bytes, std::string_view name,
                               const ImportOptions& options, Trace& out, std::string& error);
[[nodiscard]] bool import_proto(std::string_view bytes, std::string_view name,
                                const ImportOptions& options, Trace& out, std::string& error);

// Inflates gzip (one or more members) to at most max_out_bytes; false + one
// line on a broken stream or past the limit (`limit_hint` ends that line).
[[nodiscard]] bool gunzip(std::string_view bytes, std::string_view name, uint64_t max_out_bytes,
                          std::string_view limit_hint, std::string& out, std::string& error);

}  // namespace cuswap::trace::import
