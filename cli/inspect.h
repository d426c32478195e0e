// `cuswap inspect FILE`: what is in a trace. A `.cst` recording is summarised
// (TraceSummary, tracer/trace_summary.h); every other format is imported
// (tracer/import/import.h) and rendered from the Trace model. Either is
// text or one JSON object.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

#include "cli/status.h"
#include "tracer/trace.h"
#include "tracer/trace_summary.h"

namespace cuswap::cli {

struct InspectOptions {
  std::string file;
  bool json = false;
  bool partial = false;   // read a trace whose recording never finished
  size_t top = 10;        // rows in the top-kernel and top-buffer tables
  std::string max_input;  // --max-input SIZE, "" for the default
};

// Reads, summarises and prints to `out`.
Status run_inspect(const InspectOptions& options, std::FILE* out);

std::string render_inspect_text(const trace::TraceSummary& summary, std::string_view file);
std::string render_inspect_json(const trace::TraceSummary& summary, std::string_view file);

// Every other format, from the Trace model (inspect_trace.cpp).
std::string render_trace_text(const trace::Trace& trace, std::string_view file);
std::string render_trace_json(const trace::Trace& trace, std::string_view file);

}  // namespace cuswap::cli
