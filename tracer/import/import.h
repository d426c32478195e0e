// Reading captured training traces into the one Trace model (tracer/trace.h):
// cuswap's own `.cst` recordings, TensorFlow 1 timelines and StepStats,
// TensorFlow 2 xplane.pb and memory_profile.json, PyTorch profiler traces and
// memory snapshots. docs/trace-import.md says what each format gives.
//
// Invariants:
// - The format is detected from the content, never from the file name; gzip
//   is inflated transparently first.
// - Never throws, never crashes on any input: a failure is false with one
//   line in `error`, "FILE: offset N: expected …" (or a JSON pointer or key
//   in place of the offset where the parser gives no offset).
// - On success `out` keeps every invariant of validate().
#pragma once

#include <string>
#include <string_view>

#include "tracer/trace.h"

namespace cuswap::trace {

struct ImportOptions {
  bool allow_incomplete = false;  // .cst whose recording never finished
  bool progress = false;          // progress on stderr (set by the CLI when stderr is a terminal)
};

// Detects the format from content (gzip transparent), reads `path` into `out`.
// false + one-line `error` ("FILE: offset N: expected …") on bad input.
[[nodiscard]] bool import_trace(const std::string& path, const ImportOptions& options, Trace& out,
                                std::string& error);

// Same from memory (for fuzz targets and tests); `name` is used in errors.
[[nodiscard]] bool import_trace_bytes(std::string_view bytes, std::string_view name,
                                      const ImportOptions& options, Trace& out,
                                      std::string& error);

}  // namespace cuswap::trace
