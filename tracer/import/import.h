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

// Note [Bounded input]: a trace is untrusted input. What is read from a
// file (a regular file, a pipe or a device alike) and what gzip inflates to
// are capped by max_input_bytes; gzip may also inflate to at most
// max_inflation_ratio times its own size (above a floor of
// inflation_floor_bytes), which stops a small bomb long before the cap; and
// the first bytes must start a format cuswap reads, so a stream of zeros or
// noise is refused at offset 0 without reading on.
inline constexpr uint64_t kDefaultMaxInputBytes = uint64_t{2} << 30;  // 2 GiB
inline constexpr uint64_t kInflationFloorBytes = uint64_t{128} << 20;

struct ImportOptions {
  bool allow_incomplete = false;  // .cst whose recording never finished
  bool progress = false;          // progress on stderr (set by the CLI when stderr is a terminal)
  uint64_t max_input_bytes = kDefaultMaxInputBytes;  // read or inflated (Note [Bounded input])
  uint32_t max_inflation_ratio = 200;                // 0: no ratio limit
  uint64_t inflation_floor_bytes = kInflationFloorBytes;  // the ratio applies above it
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
