// Fuzz target for the trace importers. Built as a libFuzzer binary with
// clang (import_fuzz), and linked with ../fuzz_replay_main.cpp into plain
// programs that ctest runs, one per format, over that format's seed corpus
// (corpus/<format>/, cut from the captured fixtures by scripts/make_import_corpus.py) and
// its prefixes and bit flips, with any compiler.
//
// The importer must never crash; an error must be one line that starts with
// the name and names an offset or a JSON pointer (malformed_test.cpp checks
// the wording); whatever imports must keep the Trace invariants.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tracer/import/import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cuswap::trace;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (const bool partial : {false, true}) {
    ImportOptions options;
    options.allow_incomplete = partial;
    Trace trace;
    std::string error;
    if (import_trace_bytes(bytes, "fuzz.trace", options, trace, error)) {
      if (!validate(trace).empty()) std::abort();
      (void)device_live_peak(trace);
    } else if (error.rfind("fuzz.trace: ", 0) != 0 || error.find('\n') != std::string::npos ||
               (error.find(": offset ") == std::string::npos &&
                error.rfind("fuzz.trace: /", 0) != 0)) {
      std::abort();
    }
  }
  return 0;
}
