// `cuswap inspect`: options, then read -> summarise -> render.
#include "cli/inspect.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/input_limit.h"
#include "tracer/cst_format.h"
#include "tracer/cst_reader.h"
#include "tracer/import/import.h"

namespace cuswap::cli {

namespace {

// A `.cst` starts with its magic; anything else goes through the importers.
bool is_cst_file(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (!file) return true;  // the .cst reader reports the error as before
  uint8_t magic[trace::cst::kMagic.size()] = {};
  const size_t got = std::fread(magic, 1, sizeof magic, file);
  std::fclose(file);
  return got < 2 ||
         (got == sizeof magic &&
          std::memcmp(magic, trace::cst::kMagic.data(), sizeof magic) == 0) ||
         (got < sizeof magic && std::memcmp(magic, trace::cst::kMagic.data(), got) == 0);
}

Status run_inspect_imported(const InspectOptions& options, std::FILE* out) {
  trace::ImportOptions import;
  import.allow_incomplete = options.partial;
  import.progress = isatty(fileno(stderr)) == 1;
  trace::Trace trace;
  std::string error;
  if (!apply_max_input(options.max_input, import, error) ||
      !trace::import_trace(options.file, import, trace, error))
    return failure(kExitBadInput, error);
  return write_result(out, options.json ? render_trace_json(trace, options.file)
                                        : render_trace_text(trace, options.file));
}

}  // namespace

Status run_inspect(const InspectOptions& options, std::FILE* out) {
  if (!is_cst_file(options.file)) return run_inspect_imported(options, out);
  trace::CstTrace trace;
  std::string error;
  // Note [Bounded input]: a .cst is read whole, so its size is checked first.
  trace::ImportOptions limit;
  if (!apply_max_input(options.max_input, limit, error)) return failure(kExitBadInput, error);
  struct stat st {};
  if (::stat(options.file.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<uint64_t>(st.st_size) > limit.max_input_bytes)
    return failure(
        kExitBadInput,
        fmt::format("{}: offset {}: expected at most {} bytes, the file has {} (the "
                    "input limit: --max-input SIZE raises it)",
                    options.file, limit.max_input_bytes, limit.max_input_bytes, st.st_size));
  trace::ReadOptions read;
  read.allow_incomplete = options.partial;
  if (!trace::read_cst_file(options.file, read, trace, error)) return failure(kExitBadInput, error);
  const trace::TraceSummary summary = trace::summarize(trace, options.top);
  return write_result(out, options.json ? render_inspect_json(summary, options.file)
                                        : render_inspect_text(summary, options.file));
}

Command add_inspect(CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* sub = app.add_subcommand("inspect", "Show what is in a trace.");
  sub->footer(
      "Reads .cst, TensorFlow 1 timeline or StepStats, TensorFlow 2 xplane.pb or "
      "memory_profile.json, PyTorch profiler trace or memory snapshot (gzip or not; the format "
      "is detected from the content). Exit codes: 0 ok, 1 the output cannot be written, 2 bad "
      "usage or input (an unreadable, truncated or corrupt file: one line on stderr naming the "
      "file and the byte offset).");
  sub->add_option("file", options->file, "The trace file")->required();
  sub->add_flag("--json", options->json, "Print one JSON object instead of text");
  sub->add_flag("--partial", options->partial,
                "Read a trace whose recording never finished (the process died): what is "
                "there, and where it stops");
  sub->add_option("--top", options->top, "Rows in the top kernels and top buffers tables")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1000000}));
  add_max_input_option(sub, options->max_input);
  return {sub, [options] { return run_inspect(*options, stdout); }};
}

}  // namespace cuswap::cli
