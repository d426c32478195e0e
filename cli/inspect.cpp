// `cuswap inspect`: options, then read -> summarise -> render.
#include "cli/inspect.h"

#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "tracer/cst_reader.h"

namespace cuswap::cli {

int run_inspect(const InspectOptions& options, std::FILE* out, std::FILE* err) {
  trace::CstTrace trace;
  std::string error;
  trace::ReadOptions read;
  read.allow_incomplete = options.partial;
  if (!trace::read_cst_file(options.file, read, trace, error)) {
    fmt::print(err, "cuswap: error: {}\n", error);
    return kExitBadInput;
  }
  const trace::TraceSummary summary = trace::summarize(trace, options.top);
  const std::string text = options.json ? render_inspect_json(summary, options.file)
                                        : render_inspect_text(summary, options.file);
  if (std::fwrite(text.data(), 1, text.size(), out) != text.size() || std::fflush(out) != 0) {
    fmt::print(err, "cuswap: error: cannot write the output: {}\n", std::strerror(errno));
    return kExitFailed;
  }
  return kExitOk;
}

Command add_inspect(CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* sub = app.add_subcommand("inspect", "Show what is in a trace (.cst).");
  sub->footer(
      "Exit codes: 0 ok, 1 failed, 2 bad usage or input (an unreadable, truncated or corrupt "
      "file: one line on stderr naming the file and the byte offset).");
  sub->add_option("file", options->file, "The trace file (.cst)")->required();
  sub->add_flag("--json", options->json, "Print one JSON object instead of text");
  sub->add_flag("--partial", options->partial,
                "Read a trace whose recording never finished (the process died): what is "
                "there, and where it stops");
  sub->add_option("--top", options->top, "Rows in the top kernels and top buffers tables")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1000000}));
  return {sub, [options] { return run_inspect(*options, stdout, stderr); }};
}

}  // namespace cuswap::cli
